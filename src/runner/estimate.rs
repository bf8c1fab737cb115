//! What a batch of runs will cost, estimated before any of it starts, so a
//! scenario that would exhaust memory or run for hours is refused with the
//! numbers and the way out, instead of being killed by the kernel or left
//! running overnight.
//!
//! The estimate is deliberately rough — within a few times of the truth —
//! and errs high: memory counts the time series every run keeps until the
//! report is written, the per-client budget and breaker state of the runs
//! in progress at once, and the requests and waiting attempts a run may
//! hold; events count about five per attempt, with every request making
//! up to three attempts (fewer when its policy allows fewer): storms make
//! more, but a batch that is refused must be hopeless, not merely long.

use super::Job;
use crate::metrics::BinRow;
use crate::model::dist::Dist;
use crate::policy::BudgetScope;
use crate::scenario::spec::Mode;

/// Above this much memory a batch is refused (without `--force`).
pub const MAX_BYTES: u64 = 8 << 30;
/// Above this many events a batch is refused (without `--force`): hours
/// at the ten to twenty million events a second of two cores.
pub const MAX_EVENTS: u64 = 100_000_000_000;

/// Bytes of one request slot, one waiting attempt and one client's budget
/// and breaker (measured on the types, rounded up).
const REQUEST_BYTES: u64 = 64;
const JOB_BYTES: u64 = 16;
const CLIENT_STATE_BYTES: u64 = 320;

/// The estimated cost of a batch of runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Peak memory, bytes.
    pub bytes: u64,
    /// Events over all runs.
    pub events: u64,
    /// Time-series bins kept until the report is written.
    pub bins: u64,
}

impl Estimate {
    /// Whether the batch is above [`MAX_BYTES`] or [`MAX_EVENTS`].
    pub fn too_big(&self) -> bool {
        self.bytes > MAX_BYTES || self.events > MAX_EVENTS
    }

    /// What exceeds the limits, in words, with the way out.
    pub fn describe(&self) -> String {
        let mut over = Vec::new();
        if self.bytes > MAX_BYTES {
            over.push(format!(
                "about {:.1} GiB of memory ({} time-series bins kept; the limit is {} GiB)",
                self.bytes as f64 / (1u64 << 30) as f64,
                self.bins,
                MAX_BYTES >> 30
            ));
        }
        if self.events > MAX_EVENTS {
            over.push(format!(
                "about {:.1e} events (hours of computing; the limit is {:.0e} events)",
                self.events as f64, MAX_EVENTS as f64
            ));
        }
        format!(
            "this would need {}; use a coarser bin (--set bin=10s), fewer --replications, \
             a shorter duration, or --force to run it anyway",
            over.join(" and ")
        )
    }
}

/// Estimates `jobs`; `keep_bins` when every run's time series is kept
/// (`run`); `threads` runs are in progress at once.
pub fn estimate(jobs: &[Job<'_>], keep_bins: bool, threads: usize) -> Estimate {
    let mut total = Estimate::default();
    let mut per_run_peak = Vec::with_capacity(jobs.len());
    for job in jobs {
        let spec = job.scenario.spec();
        let policy = &job.scenario.policies()[job.policy];
        let t = &spec.traffic;
        let duration = spec.duration.secs();
        let bins = spec.duration.ns().div_ceil(spec.bin.ns().max(1));
        let requests = match t.mode {
            Mode::Open => t.rate.unwrap_or(0.0) * duration,
            Mode::Burst => t.clients as f64,
            // A client starts its next request once the previous one ends
            // and it has thought: one request per (think + service) time,
            // and no more than one a millisecond.
            Mode::Closed => {
                let mean = |d: &Option<crate::scenario::spec::DistSpec>| {
                    d.as_ref().map_or(0.0, |d| Dist::new(d).mean())
                };
                let cycle = (mean(&t.think_time) + mean(&spec.backend.service_time)) / 1e9;
                t.clients as f64 * duration / cycle.max(1e-3)
            }
        };
        let attempts = policy.max_attempts.map_or(3, |m| m.min(3)) as f64;
        total.events = total
            .events
            .saturating_add((requests * attempts * 5.0) as u64);
        if keep_bins {
            total.bins = total.bins.saturating_add(bins);
        }
        let gated = |scope: BudgetScope| scope != BudgetScope::Global;
        let per_client = policy.budget.as_ref().is_some_and(|b| gated(b.scope()))
            || policy.breaker.as_ref().is_some_and(|b| gated(b.scope));
        let clients = if per_client { t.clients as u64 } else { 1 };
        let open = match t.deadline {
            Some(d) if t.mode == Mode::Open => t.rate.unwrap_or(0.0) * d.secs(),
            _ => requests,
        }
        .min(requests);
        let waiting = spec
            .backend
            .queue_limit
            .unwrap_or(open as u64)
            .min(open as u64);
        per_run_peak
            .push(clients * CLIENT_STATE_BYTES + open as u64 * REQUEST_BYTES + waiting * JOB_BYTES);
    }
    per_run_peak.sort_unstable_by(|a, b| b.cmp(a));
    let running: u64 = per_run_peak.iter().take(threads.max(1)).sum();
    let row = std::mem::size_of::<BinRow>() as u64;
    total.bytes = running.saturating_add(total.bins.saturating_mul(row));
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::jobs_of;
    use crate::scenario::Scenario;

    fn scenario(bin: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "e", "duration": "1h", "bin": "{bin}",
                "traffic": {{"rate": 1000, "clients": 1000}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "policies": [{{"name": "p", "max_attempts": 3,
                  "backoff": {{"constant": {{"delay": "1s"}}}}}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn events_follow_requests_and_attempts() {
        let s = scenario("1s");
        let e = estimate(&jobs_of(&s, 2), true, 2);
        // 1000/s for an hour, 3 attempts, 5 events each, 2 replications.
        assert_eq!(e.events, 2 * 3_600_000 * 3 * 5);
        assert_eq!(e.bins, 2 * 3600);
        assert!(!e.too_big());
    }

    #[test]
    fn fine_bins_over_many_replications_are_too_big() {
        // 3.6 M bins per run × 1000 replications does not fit.
        let s = scenario("1ms");
        let e = estimate(&jobs_of(&s, 1000), true, 2);
        assert!(e.bytes > MAX_BYTES && e.too_big(), "{e:?}");
        // A sweep keeps no time series.
        assert!(estimate(&jobs_of(&s, 1000), false, 2).bytes < MAX_BYTES);
    }
}
