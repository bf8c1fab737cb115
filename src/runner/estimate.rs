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
//! up to three attempts (fewer when its policy allows fewer), except that a
//! request arriving during a fault may retry for as long as the fault
//! lasts (see [`attempts_per_request`]): storms make more, but a batch that
//! is refused must be hopeless, not merely long.

use super::Job;
use crate::metrics::BinRow;
use crate::model::dist::Dist;
use crate::model::traffic::Profile;
use crate::policy::{BudgetScope, Policy};
use crate::scenario::spec::{Mode, ScenarioSpec};

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
/// Bytes per client of a closed loop or a burst, where every client holds
/// a request at once: its slot, its waiting attempt and its pending event,
/// with the room vectors leave when they double (measured: peak memory
/// grew by 188 bytes per client from 1 M to 4 M clients in a burst, by
/// 176 in a closed loop).
const LOOP_CLIENT_BYTES: u64 = 192;

/// The estimated cost of a batch of runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Peak memory, bytes.
    pub bytes: u64,
    /// Events over all runs.
    pub events: u64,
    /// Time-series bins kept until the report is written.
    pub bins: u64,
    /// Scenarios estimated (the points of a sweep, the cells of a map).
    pub scenarios: u64,
    /// Replications of the most replicated run.
    pub replications: u32,
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
            let bins = if self.bins > 0 {
                format!("{} time-series bins kept; ", self.bins)
            } else {
                String::new()
            };
            over.push(format!(
                "about {:.1} GiB of memory ({bins}the limit is {} GiB)",
                self.bytes as f64 / (1u64 << 30) as f64,
                MAX_BYTES >> 30
            ));
        }
        if self.events > MAX_EVENTS {
            over.push(format!(
                "about {:.1e} events (hours of computing; the limit is {:.0e} events)",
                self.events as f64, MAX_EVENTS as f64
            ));
        }
        let row = std::mem::size_of::<BinRow>() as u64;
        let mut ways = Vec::new();
        if self.bytes > MAX_BYTES && self.bins.saturating_mul(row) > self.bytes / 2 {
            ways.push("a coarser bin (--set bin=10s)");
        }
        if self.scenarios > 1 {
            ways.push("fewer points (or split them with --shards)");
        }
        if self.replications > 1 {
            ways.push("fewer --replications");
        }
        ways.push("a shorter duration");
        format!(
            "this would need {}; use {}, or --force to run it anyway",
            over.join(" and "),
            ways.join(", ")
        )
    }
}

/// Attempts per request, on average over a run: up to three (fewer when
/// the policy allows fewer) for a request that arrives while the backend is
/// healthy. One that arrives during a fault may fail every attempt until
/// the fault ends, and then makes as many attempts as the policy's
/// schedule fits into what is left of the longest fault (or the request's
/// deadline, or its retry-duration limit, if shorter): few with a backoff
/// of seconds, but millions with microseconds and no attempt limit.
pub fn attempts_per_request(spec: &ScenarioSpec, policy: &Policy) -> f64 {
    let calm = policy.max_attempts.map_or(3, |m| m.min(3)) as f64;
    let end = spec.duration.ns();
    let (mut faulted, mut longest) = (0u64, 0u64);
    for (_, span) in spec.incident_spans() {
        faulted = faulted.saturating_add(span);
        longest = longest.max(span);
    }
    if faulted == 0 || end == 0 {
        return calm;
    }
    let limit = spec.retry_window(policy);
    // A request arriving at a uniform time in the fault has what is left
    // of it to retry through: the mean over eight arrival times.
    const ARRIVALS: u64 = 8;
    let storm = (0..ARRIVALS)
        .map(|k| {
            let left = (longest as f64 * (k as f64 + 0.5) / ARRIVALS as f64) as u64;
            spec.storm_attempts(policy, left.min(limit))
                .attempts
                .max(calm)
        })
        .sum::<f64>()
        / ARRIVALS as f64;
    let share = (faulted as f64 / end as f64).min(1.0);
    calm * (1.0 - share) + storm * share
}

/// Estimates `jobs`; `keep_bins` when every run's time series is kept
/// (`run`); `threads` runs are in progress at once.
pub fn estimate(jobs: &[Job<'_>], keep_bins: bool, threads: usize) -> Estimate {
    let mut e = Estimator::new(keep_bins, threads);
    e.add_jobs(jobs);
    e.finish()
}

/// An [`estimate`] built a batch of jobs at a time, so that a sweep of
/// many points is estimated without holding every point's scenario at
/// once.
#[derive(Debug)]
pub struct Estimator {
    keep_bins: bool,
    threads: usize,
    total: Estimate,
    /// The `threads` largest peaks of one run so far, smallest first.
    peaks: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
}

impl Estimator {
    /// Nothing estimated yet; `keep_bins` and `threads` as for [`estimate`].
    pub fn new(keep_bins: bool, threads: usize) -> Estimator {
        Estimator {
            keep_bins,
            threads: threads.max(1),
            total: Estimate::default(),
            peaks: std::collections::BinaryHeap::new(),
        }
    }

    /// Adds `jobs` (consecutive jobs of one scenario count it once).
    pub fn add_jobs(&mut self, jobs: &[Job<'_>]) {
        let mut last: Option<&crate::scenario::Scenario> = None;
        for job in jobs {
            if !last.is_some_and(|l| std::ptr::eq(l, job.scenario)) {
                self.total.scenarios += 1;
                last = Some(job.scenario);
            }
            self.add(job);
        }
    }

    /// Adds one run.
    fn add(&mut self, job: &Job<'_>) {
        let total = &mut self.total;
        total.replications = total.replications.max(job.replication.saturating_add(1));
        let spec = job.scenario.spec();
        let policy = &job.scenario.policies()[job.policy];
        let t = &spec.traffic;
        let duration = spec.duration.secs();
        let bins = spec.duration.ns().div_ceil(spec.bin.ns().max(1));
        let requests = match t.mode {
            Mode::Open => Profile::new(t.rate.unwrap_or(0.0), &t.profile).expected(duration),
            Mode::Burst => t.clients as f64,
            // A client starts its next request once the previous one ends
            // and it has thought: one request per (think + service + round
            // trip) time. A cycle of no time at all stops the clock, which
            // the run reports as such.
            Mode::Closed => {
                let mean = |d: &Option<crate::scenario::spec::DistSpec>| {
                    d.as_ref().map_or(0.0, |d| Dist::new(d).mean())
                };
                let cycle = (mean(&t.think_time)
                    + mean(&spec.backend.service_time)
                    + 2.0 * mean(&t.network_delay))
                    / 1e9;
                if cycle > 0.0 {
                    t.clients as f64 * duration / cycle
                } else {
                    t.clients as f64
                }
            }
        };
        let attempts = attempts_per_request(spec, policy);
        total.events = total
            .events
            .saturating_add((requests * attempts * 5.0) as u64);
        if self.keep_bins {
            total.bins = total.bins.saturating_add(bins);
        }
        let gated = |scope: BudgetScope| scope != BudgetScope::Global;
        let per_client = policy.budget.as_ref().is_some_and(|b| gated(b.scope()))
            || policy.breaker.as_ref().is_some_and(|b| gated(b.scope));
        let clients = if per_client { t.clients as u64 } else { 1 };
        // Requests open at once: each client of a closed loop or a burst
        // has one; open traffic, those of a deadline's span (or all).
        let open = match (t.mode, t.deadline) {
            (Mode::Closed | Mode::Burst, _) => t.clients as f64,
            (Mode::Open, Some(d)) => {
                let peak = t.profile.iter().map(|p| p.scale).fold(1.0, f64::max);
                t.rate.unwrap_or(0.0) * peak * d.secs()
            }
            (Mode::Open, None) => requests,
        }
        .min(requests);
        let waiting = spec
            .backend
            .queue_limit
            .unwrap_or(open as u64)
            .min(open as u64);
        let held = match t.mode {
            Mode::Closed | Mode::Burst => open as u64 * LOOP_CLIENT_BYTES,
            Mode::Open => open as u64 * REQUEST_BYTES + waiting * JOB_BYTES,
        };
        self.peaks
            .push(std::cmp::Reverse(clients * CLIENT_STATE_BYTES + held));
        if self.peaks.len() > self.threads {
            self.peaks.pop();
        }
    }

    /// The estimate of every job added.
    pub fn finish(self) -> Estimate {
        let mut total = self.total;
        let running: u64 = self.peaks.iter().map(|p| p.0).sum();
        let row = std::mem::size_of::<BinRow>() as u64;
        total.bytes = running.saturating_add(total.bins.saturating_mul(row));
        total
    }
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

    /// Scenarios added one at a time estimate as the whole batch does: the
    /// same events, bins and scenarios, and the memory of the `threads`
    /// largest runs in progress at once.
    #[test]
    fn an_estimate_built_in_pieces_is_the_estimate_of_the_whole() {
        let scenarios = [scenario("1s"), scenario("10s"), with(""), scenario("1m")];
        for threads in [1, 2, 3, 8] {
            let all: Vec<Job<'_>> = scenarios.iter().flat_map(|s| jobs_of(s, 2)).collect();
            let whole = estimate(&all, true, threads);
            let mut pieces = Estimator::new(true, threads);
            for s in &scenarios {
                pieces.add_jobs(&jobs_of(s, 2));
            }
            let pieces = pieces.finish();
            assert_eq!(pieces, whole, "{threads} threads");
            assert_eq!(whole.scenarios, 4);
        }
        // With a single thread, the memory is that of the largest run.
        let one = |s: &Scenario| estimate(&jobs_of(s, 1), false, 1).bytes;
        let largest = scenarios.iter().map(one).max().unwrap();
        assert_eq!(
            estimate(
                &scenarios
                    .iter()
                    .flat_map(|s| jobs_of(s, 1))
                    .collect::<Vec<_>>(),
                false,
                1
            )
            .bytes,
            largest
        );
    }

    fn with(extra: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "e", "duration": "60s", "bin": "1s",
                "traffic": {{"rate": 1000, "clients": 100 {extra}}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "faults": [{{"outage": {{"start": "10s", "duration": "6s"}}}}],
                "policies": [{{"name": "p", "max_attempts": 0,
                  "backoff": {{"constant": {{"delay": "1ms"}}}}}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn a_profile_scales_the_requests() {
        let flat = estimate(&jobs_of(&with(""), 1), false, 1);
        // Ten times the rate for the whole run.
        let scaled = with(r#", "profile": [{"at": "0s", "scale": 10}]"#);
        let e = estimate(&jobs_of(&scaled, 1), false, 1);
        assert_eq!(e.events, 10 * flat.events);
    }

    #[test]
    fn requests_in_a_fault_retry_as_the_schedule_allows() {
        // 1 ms apart without limit: a request arriving in the 6 s outage
        // has 3 s of it left on average, 3 000 attempts; a tenth of the run
        // is in the fault.
        let a = attempts_per_request(with("").spec(), &with("").policies()[0]);
        assert!((a - (0.9 * 3.0 + 0.1 * 3_000.0)).abs() < 2.0, "{a}");
        // A deadline of 100 ms cuts a request's retries to a hundred.
        let s = with(r#", "deadline": "100ms""#);
        let a = attempts_per_request(s.spec(), &s.policies()[0]);
        assert!((a - (0.9 * 3.0 + 0.1 * 100.0)).abs() < 2.0, "{a}");
    }

    #[test]
    fn a_pushback_honoured_exactly_sets_the_pace_of_a_storm() {
        // A 1 s backoff, but the backend asks for 1 ms and the policy waits
        // exactly that: the same 3 000 attempts as a 1 ms backoff.
        let s = Scenario::from_json(
            r#"{"name": "e", "duration": "60s", "bin": "1s",
                "traffic": {"rate": 1000, "clients": 100},
                "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}},
                            "retry_after": "1ms"},
                "faults": [{"outage": {"start": "10s", "duration": "6s"}}],
                "policies": [{"name": "p", "max_attempts": 0, "honor_retry_after": true,
                  "pushback": "exact", "backoff": {"constant": {"delay": "1s"}}}]}"#,
        )
        .unwrap();
        let a = attempts_per_request(s.spec(), &s.policies()[0]);
        assert!((a - (0.9 * 3.0 + 0.1 * 3_000.0)).abs() < 2.0, "{a}");
    }

    #[test]
    fn a_closed_loop_holds_one_request_per_client() {
        // 100 clients cycling every microsecond for a minute, one attempt
        // each: six billion requests, but never more than 100 open.
        let s = Scenario::from_json(
            r#"{"name": "c", "duration": "60s",
                "traffic": {"mode": "closed", "clients": 100,
                            "think_time": {"constant": {"value": "1us"}}},
                "backend": {"workers": 10, "service_time": {"constant": {"value": "0s"}}},
                "policies": [{"name": "once"}]}"#,
        )
        .unwrap();
        let e = estimate(&jobs_of(&s, 1), false, 1);
        assert_eq!(e.events, 100 * 60_000_000 * 5, "{e:?}");
        assert!(e.bytes < 1 << 20, "{e:?}");
        // A hundred million clients each hold a request: 18 GiB.
        for traffic in [
            r#""mode": "closed", "clients": 100000000, "think_time": {"constant": {"value": "1s"}}"#,
            r#""mode": "burst", "clients": 100000000"#,
        ] {
            let s = Scenario::from_json(&format!(
                r#"{{"name": "c", "duration": "60s", "traffic": {{{traffic}}},
                    "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                    "policies": [{{"name": "once"}}]}}"#
            ))
            .unwrap();
            let e = estimate(&jobs_of(&s, 1), false, 1);
            assert!(e.too_big() && e.bytes > 16 << 30, "{traffic}: {e:?}");
        }
    }

    #[test]
    fn the_way_out_fits_the_batch() {
        let s = scenario("1ms");
        let run = estimate(&jobs_of(&s, 1000), true, 2).describe();
        assert!(
            run.contains("coarser bin") && !run.contains("points"),
            "{run}"
        );
        let big = with(r#", "profile": [{"at": "0s", "scale": 1e6}]"#);
        let points = [&big, &big.clone()];
        let jobs: Vec<_> = points.iter().flat_map(|s| jobs_of(s, 1)).collect();
        let sweep = estimate(&jobs, false, 2).describe();
        assert!(
            sweep.contains("fewer points") && !sweep.contains("bin"),
            "{sweep}"
        );
        // Fewer replications are a way out only when there are several.
        assert!(run.contains("fewer --replications"), "{run}");
        assert!(!sweep.contains("replications"), "{sweep}");
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
