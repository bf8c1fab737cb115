//! What a batch of runs will cost, estimated before any of it starts, so a
//! scenario that would exhaust memory or run for hours is refused with the
//! numbers and the way out, instead of being killed by the kernel or left
//! running overnight.
//!
//! Events come from the mechanisms that bound a storm ([`super::storm`]):
//! per policy and tier, the attempts a request makes through the stretches
//! in which its attempts fail (faults, overload), up to its attempt cap,
//! retry window and budget, at the pace of its backoff plus what a failure
//! takes; multiplied down the `downstream` chain by each tier's `calls`
//! and its own policy, and capped by a `dispatcher`'s rate. Memory counts
//! the time series every run keeps until the report is written, the
//! per-client state of the parts the policy has (budget, breaker, rate
//! limiter, sized from their types), the requests and waiting attempts a
//! run may hold, and the calls a worker's attempt fans out to. The time
//! limit is a wall time at a measured event rate, so a batch estimated
//! "just under" it cannot run for hours. The README's troubleshooting
//! section gives the estimate's measured accuracy.

use super::storm::{mean_ns, storm, Storm};
use super::Job;
use crate::metrics::BinRow;
use crate::model::traffic::Profile;
use crate::policy::breaker::Breaker;
use crate::policy::budget::Budget;
use crate::policy::limiter::Adaptive;
use crate::policy::{LimiterSpec, Policy};
use crate::scenario::spec::{BackendKind, Mode, ScenarioSpec};

/// Above this much memory a batch is refused (without `--force`).
pub const MAX_BYTES: u64 = 8 << 30;
/// Events one thread processes per second, rounded down: the benchmarks
/// of `benches/README.md` measured 5 to 15 million on the shared 2-core
/// machine (the lowest with a million random timers pending).
pub const EVENTS_PER_THREAD_S: f64 = 5e6;
/// Above this many seconds of computing, at [`EVENTS_PER_THREAD_S`] on
/// every thread the batch can use, a batch is refused (without
/// `--force`): half an hour.
pub const MAX_WALL_S: f64 = 1800.0;
/// The events one thread processes in [`MAX_WALL_S`].
pub const MAX_EVENTS: u64 = (EVENTS_PER_THREAD_S * MAX_WALL_S) as u64;

/// Events per request (its arrival and its end) and per first attempt
/// (sent, served, answered), fitted to the shipped scenarios' and the
/// storm catalogue's `perf.json` (README, troubleshooting).
const EVENTS_PER_REQUEST: f64 = 1.0;
const EVENTS_PER_ATTEMPT: f64 = 3.0;
/// Events per retry: its timer, and its failure (most retries of a storm
/// fail at once, rejected or struck by the fault).
const EVENTS_PER_RETRY: f64 = 2.0;
/// Events per attempt of a call to a downstream tier (no network hops).
const EVENTS_PER_CALL: f64 = 1.5;
/// Bytes of one request slot, one waiting attempt and one pending event
/// (measured on the types, rounded up).
const REQUEST_BYTES: u64 = 64;
const JOB_BYTES: u64 = 16;
const EVENT_BYTES: u64 = 16;
/// Bytes per client of a closed loop or a burst, where every client holds
/// a request at once: its slot, its waiting attempt and its pending event,
/// with the room vectors leave when they double (measured: peak memory
/// grew by 188 bytes per client from 1 M to 4 M clients in a burst, by
/// 176 in a closed loop).
const LOOP_CLIENT_BYTES: u64 = 192;
/// Bytes of one call to a downstream tier held while the attempt above
/// waits for it: its request slot, its waiting attempt, its events and
/// the caller's hold, with the room vectors leave when they double.
const CALL_BYTES: u64 = 2 * (REQUEST_BYTES + JOB_BYTES + EVENT_BYTES);

/// Events the engine lets happen at one instant before it stops a run
/// whose simulated time no longer advances (the base of the model's stall
/// limit): a zero-time retry loop that a queue's burst lets run this long
/// at one instant is stopped, not bounded.
const STALL_EVENTS: f64 = 1e7;

/// Bytes of the process itself and of writing a report (its tables and
/// plots), whatever the runs: measured peak memory of small runs is 7 to
/// 8 MB without plots and 14 to 36 MB with them.
pub const BASE_BYTES: u64 = 16 << 20;

/// The estimated cost of a batch of runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    /// Peak memory, bytes.
    pub bytes: u64,
    /// Events over all runs (`u64::MAX` when unbounded).
    pub events: u64,
    /// Time-series bins kept until the report is written.
    pub bins: u64,
    /// Scenarios estimated (the points of a sweep, the cells of a map).
    pub scenarios: u64,
    /// Replications of the most replicated run.
    pub replications: u32,
    /// Runs in the batch.
    pub runs: u64,
    /// Threads the runs share.
    pub threads: u64,
    /// Why a run's events are not bounded at all, if they are not: the
    /// policy, the tier, what fails its attempts and what to change.
    pub unbounded: Option<String>,
}

impl Estimate {
    /// Seconds of computing the events take at [`EVENTS_PER_THREAD_S`] on
    /// every thread the batch can use (one per run at most).
    pub fn seconds(&self) -> f64 {
        let parallel = self.threads.clamp(1, self.runs.max(1)) as f64;
        self.events as f64 / (EVENTS_PER_THREAD_S * parallel)
    }

    /// Whether the batch is above [`MAX_BYTES`] or [`MAX_WALL_S`], or its
    /// events are unbounded.
    pub fn too_big(&self) -> bool {
        self.bytes > MAX_BYTES || self.seconds() > MAX_WALL_S || self.unbounded.is_some()
    }

    /// What the batch costs, in words: events, memory and time.
    pub fn summary(&self) -> String {
        let events = if self.unbounded.is_some() {
            "events without end".to_string()
        } else {
            format!("about {:.1e} events", self.events as f64)
        };
        let parallel = self.threads.clamp(1, self.runs.max(1));
        format!(
            "{events}, {:.0} MB, {} on {parallel} thread{} (at {:.0e} events/s each)",
            self.bytes as f64 / 1e6,
            if self.unbounded.is_some() {
                "no end".to_string()
            } else if self.seconds() < 1.0 {
                "under a second".to_string()
            } else {
                format!("about {}", hours(self.seconds()))
            },
            if parallel == 1 { "" } else { "s" },
            EVENTS_PER_THREAD_S,
        )
    }

    /// What exceeds the limits, in words, with the way out.
    pub fn describe(&self) -> String {
        let mut over = Vec::new();
        if let Some(why) = &self.unbounded {
            over.push(format!("events without end ({why})"));
        }
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
        if self.unbounded.is_none() && self.seconds() > MAX_WALL_S {
            let parallel = self.threads.clamp(1, self.runs.max(1));
            let on = if parallel == 1 {
                "on 1 thread".to_string()
            } else {
                format!("on each of {parallel} threads")
            };
            over.push(format!(
                "about {:.1e} events ({} of computing at {:.0e} events/s {on}; the limit is {} min)",
                self.events as f64,
                hours(self.seconds()),
                EVENTS_PER_THREAD_S,
                MAX_WALL_S / 60.0
            ));
        }
        let row = std::mem::size_of::<BinRow>() as u64;
        let mut ways = Vec::new();
        if self.bytes > MAX_BYTES && self.bins.saturating_mul(row) > self.bytes / 2 {
            ways.push("a coarser bin (--set bin=10s)");
        }
        if self.unbounded.is_none() {
            if self.scenarios > 1 {
                ways.push("fewer points (or split them with --shards)");
            }
            if self.replications > 1 {
                ways.push("fewer --replications");
            }
            ways.push("a shorter duration");
        }
        if self.unbounded.is_some() || self.seconds() > MAX_WALL_S {
            ways.push(
                "bounded retries (`max_attempts`, a longer backoff, a `deadline`, a retry budget)",
            );
        }
        format!(
            "this would need {}; use {}, or --force to run it anyway",
            over.join(" and "),
            ways.join(", ")
        )
    }
}

/// Seconds in words: `42 s`, `12 min`, `3.5 h`, `2.0e3 h`.
fn hours(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 3.6e7 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.1e} h", s / 3600.0)
    }
}

/// Bytes of a policy's per-client state for `clients` clients: one
/// budget, breaker and rate limiter (with its queue's header) per
/// instance its scope needs, sized from the types a run allocates.
pub fn client_state_bytes(policy: &Policy, clients: u32) -> u64 {
    let each = |instances: u32, size: usize| u64::from(instances) * size as u64;
    let mut bytes = 0;
    if let Some(b) = &policy.budget {
        bytes += each(b.scope().instances(clients), std::mem::size_of::<Budget>());
    }
    if let Some(b) = &policy.breaker {
        bytes += each(b.scope.instances(clients), std::mem::size_of::<Breaker>());
    }
    if let Some(l) = &policy.rate_limiter {
        let LimiterSpec::AwsAdaptive(_) = l;
        // The limiter's state, its queue (a VecDeque header) and its
        // pending wake-up.
        let size = std::mem::size_of::<Adaptive>()
            + std::mem::size_of::<std::collections::VecDeque<(u32, u32)>>()
            + 24;
        bytes += each(l.scope().instances(clients), size);
    }
    bytes
}

/// New requests of a run of `spec`.
fn requests_of(spec: &ScenarioSpec) -> f64 {
    let t = &spec.traffic;
    let duration = spec.duration.secs();
    match t.mode {
        Mode::Open | Mode::Pool => {
            Profile::new(t.rate.unwrap_or(0.0), &t.profile).expected(duration)
        }
        Mode::Burst => t.clients as f64,
        // A client starts its next request once the previous one ends
        // and it has thought: one request per (think + service + round
        // trip) time. A cycle of no time at all stops the clock, which
        // the run reports as such.
        Mode::Closed => {
            let cycle = (mean_ns(t.think_time.as_ref())
                + mean_ns(spec.backend.service_time.as_ref())
                + 2.0 * mean_ns(t.network_delay.as_ref()))
                / 1e9;
            if cycle > 0.0 {
                t.clients as f64 * duration / cycle
            } else {
                t.clients as f64
            }
        }
    }
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
    /// The last scenario's (address, policy) and its events and peak, so
    /// that its replications are estimated once.
    last: Option<(usize, usize, u64, u64)>,
}

impl Estimator {
    /// Nothing estimated yet; `keep_bins` and `threads` as for [`estimate`].
    pub fn new(keep_bins: bool, threads: usize) -> Estimator {
        Estimator {
            keep_bins,
            threads: threads.max(1),
            total: Estimate::default(),
            peaks: std::collections::BinaryHeap::new(),
            last: None,
        }
    }

    /// Adds `jobs` (consecutive jobs of one scenario count it once).
    pub fn add_jobs(&mut self, jobs: &[Job<'_>]) {
        // Scenarios of an earlier batch may be gone, their addresses reused.
        self.last = None;
        let mut last: Option<&crate::scenario::Scenario> = None;
        for job in jobs {
            if !last.is_some_and(|l| std::ptr::eq(l, job.scenario)) {
                self.total.scenarios += 1;
                last = Some(job.scenario);
            }
            self.add(job, 1);
        }
    }

    /// Adds `times` runs that each cost what `job` does (a search's runs
    /// of candidates like its start), without listing them.
    pub fn add_like(&mut self, job: &Job<'_>, times: u64) {
        if times == 0 {
            return;
        }
        self.last = None;
        self.total.scenarios += 1;
        self.add(job, times);
    }

    /// Adds `times` runs of `job`.
    fn add(&mut self, job: &Job<'_>, times: u64) {
        let total = &mut self.total;
        total.replications = total.replications.max(job.replication.saturating_add(1));
        total.runs = total.runs.saturating_add(times);
        let spec = job.scenario.spec();
        let key = (job.scenario as *const _ as usize, job.policy);
        let (events, peak) = match self.last {
            Some((a, p, events, peak)) if (a, p) == key => (events, peak),
            _ => {
                let (events, peak, unbounded) = run_cost(job);
                if total.unbounded.is_none() {
                    total.unbounded = unbounded;
                }
                self.last = Some((key.0, key.1, events, peak));
                (events, peak)
            }
        };
        total.events = total.events.saturating_add(events.saturating_mul(times));
        if self.keep_bins {
            let bins = spec.duration.ns().div_ceil(spec.bin.ns().max(1));
            total.bins = total.bins.saturating_add(bins.saturating_mul(times));
        }
        // As many at once as there are threads, each at the run's peak.
        for _ in 0..times.min(self.threads as u64) {
            self.peaks.push(std::cmp::Reverse(peak));
            if self.peaks.len() > self.threads {
                self.peaks.pop();
            }
        }
    }

    /// The estimate of every job added.
    pub fn finish(self) -> Estimate {
        let mut total = self.total;
        total.threads = self.threads as u64;
        let running: u64 = self.peaks.iter().map(|p| p.0).fold(0, u64::saturating_add);
        let row = std::mem::size_of::<BinRow>() as u64;
        total.bytes = running
            .saturating_add(total.bins.saturating_mul(row))
            .saturating_add(BASE_BYTES);
        total
    }
}

/// One run's events, its peak memory apart from its time series, and why
/// its events are unbounded if they are.
fn run_cost(job: &Job<'_>) -> (u64, u64, Option<String>) {
    let spec = job.scenario.spec();
    let requests = requests_of(spec);
    let st = storm(job.scenario, job.policy, requests);
    let (tiers, unbounded) = dispatched(spec, &st, requests);
    let events = run_events(spec, &st, &tiers, requests, unbounded.is_some());
    let peak = peak_bytes(job, requests);
    (events, peak, unbounded.map(|(_, why)| why))
}

/// The attempts per request reaching each tier in storm `st` (of a run of
/// `requests` requests), and why they are unbounded if they are (the
/// tier, and why), once the scenario's `dispatcher` has had its say: a
/// storm walks the policy alone, which the dispatcher's rate may cut.
fn dispatched(
    spec: &ScenarioSpec,
    st: &Storm,
    requests: f64,
) -> (Vec<f64>, Option<(usize, String)>) {
    let mut tiers = st.tiers.clone();
    let mut unbounded = st.unbounded.clone();
    // A dispatcher sends no more than its bucket allows, whatever the
    // policy: the top's attempts, and the calls they make, scale down.
    let Some(d) = &spec.dispatcher else {
        return (tiers, unbounded);
    };
    // Calm requests make one attempt; in the failing stretches the
    // dispatch rate bounds the retries.
    let most = requests * (1.0 - st.stormy)
        + d.max_dispatches_per_second * spec.duration.secs() * st.stormy
        + f64::from(d.max_burst_size);
    if requests > 0.0 && requests * st.factors[0] > most && most.is_finite() {
        // Tier t: the cut top × factors 1..=t.
        let mut reaching = most / requests;
        for (t, a) in tiers.iter_mut().enumerate() {
            if t > 0 {
                reaching *= st.factors[t];
            }
            *a = reaching;
        }
        // Past its burst, the bucket paces a zero-time loop at the
        // dispatch rate; within the burst the loop has every token at
        // one instant, and a burst that large stalls the run.
        let burst_events = f64::from(d.max_burst_size) * EVENTS_PER_RETRY;
        match unbounded.take() {
            Some((0, why)) if burst_events >= STALL_EVENTS => {
                unbounded = Some((
                    0,
                    format!(
                        "{why}; the queue's burst (dispatcher.max_burst_size {}) lets that \
                         many of them happen at one instant, so simulated time stops; or \
                         lower the burst",
                        d.max_burst_size
                    ),
                ));
            }
            Some((0, _)) => {}
            other => unbounded = other,
        }
    }
    (tiers, unbounded)
}

/// The events of a run of `requests` requests whose attempts per request
/// reach the tiers as `tiers` (those of storm `st`, after the
/// dispatcher), `u64::MAX` when `unbounded`: requests, attempts, retries
/// and the calls down the chain, each at its own count of events.
fn run_events(
    spec: &ScenarioSpec,
    st: &Storm,
    tiers: &[f64],
    requests: f64,
    unbounded: bool,
) -> u64 {
    let top = requests * tiers[0];
    // A tier's calls come from the attempts the tier above served, which
    // its capacity bounds over the run.
    let mut call_attempts = 0.0;
    let mut reaching = top;
    for (k, (tier, factor)) in tiers.iter().zip(&st.factors).enumerate().skip(1) {
        let served =
            capacity_of(spec, k - 1).map_or(reaching, |c| reaching.min(c * spec.duration.secs()));
        reaching = (requests * tier).min(served * factor);
        call_attempts += reaching;
    }
    let retries = (top - requests).max(0.0);
    let events = requests * (EVENTS_PER_REQUEST + EVENTS_PER_ATTEMPT)
        + retries * EVENTS_PER_RETRY
        + call_attempts * EVENTS_PER_CALL;
    if unbounded || !events.is_finite() {
        u64::MAX
    } else {
        events as u64
    }
}

/// Requests of a run of `spec` (of `requests` in all) open at once.
fn open_at_once(spec: &ScenarioSpec, requests: f64) -> f64 {
    let t = &spec.traffic;
    // Each client of a closed loop or a burst has one; open traffic,
    // those of a deadline's span (or all).
    match (t.mode, t.deadline) {
        (Mode::Closed | Mode::Burst, _) => t.clients as f64,
        (Mode::Open | Mode::Pool, Some(d)) => {
            let peak = t.profile.iter().map(|p| p.scale).fold(1.0, f64::max);
            t.rate.unwrap_or(0.0) * peak * d.secs()
        }
        (Mode::Open | Mode::Pool, None) => requests,
    }
    .min(requests)
}

/// Bytes of the calls to downstream tiers held at once when `open`
/// requests are open at the top.
fn calls_held_bytes(spec: &ScenarioSpec, open: f64) -> u64 {
    // Calls held below the attempts in service: only an attempt a worker
    // serves makes its `calls`, so each tier holds the calls of the
    // attempts the tier above serves at once.
    let mut held_above = open.max(1.0);
    let mut calls = 0.0;
    for (k, d) in spec.downstream.iter().enumerate() {
        let serving = serving_at_once(spec.tier_backend(k), held_above);
        held_above = serving * f64::from(d.calls);
        calls += held_above;
    }
    (calls * CALL_BYTES as f64) as u64
}

/// One run's peak memory apart from its time series, for a run of
/// `requests` requests: the per-client state of its policies, the
/// requests and waiting attempts it holds, and their calls below.
fn peak_bytes(job: &Job<'_>, requests: f64) -> u64 {
    let spec = job.scenario.spec();
    let policy = &job.scenario.policies()[job.policy];
    let t = &spec.traffic;
    let open = open_at_once(spec, requests);
    let waiting = spec
        .backend
        .queue_limit
        .unwrap_or(open as u64)
        .min(open as u64);
    let held = match t.mode {
        Mode::Closed | Mode::Burst => (open as u64).saturating_mul(LOOP_CLIENT_BYTES),
        Mode::Open | Mode::Pool => (open as u64)
            .saturating_mul(REQUEST_BYTES)
            .saturating_add(waiting.saturating_mul(JOB_BYTES)),
    };
    let calls = calls_held_bytes(spec, open);
    let clients = client_state_bytes(policy, t.clients)
        + job
            .scenario
            .tier_policies(job.policy)
            .iter()
            .map(|p| client_state_bytes(p, 1))
            .sum::<u64>();
    clients.saturating_add(held).saturating_add(calls)
}

/// Attempts tier backend `b` serves at once when `held` are waiting for
/// it: its workers, its concurrency limit, or all of them.
fn serving_at_once(b: &crate::scenario::spec::BackendSpec, held: f64) -> f64 {
    match b.kind {
        BackendKind::Queue => f64::from(b.workers.unwrap_or(1)),
        BackendKind::Concurrency => b.max_concurrency.map_or(held, f64::from),
        BackendKind::Contention => 1.0,
    }
    .min(held)
}

/// Tier `k`'s capacity without faults, attempts per second.
fn capacity_of(spec: &ScenarioSpec, k: usize) -> Option<f64> {
    let b = spec.tier_backend(k);
    b.capacity_rps(mean_ns(b.service_time.as_ref()))
}

/// The warning `check` gives for what `run` would refuse (one
/// replication): the estimate and the mechanism to change; `None` when it
/// runs.
pub fn warning(scenario: &crate::scenario::Scenario, threads: usize) -> Option<String> {
    let e = of_one_replication(scenario, threads);
    e.too_big()
        .then(|| format!("`run` refuses it: {}", e.describe()))
}

/// The estimate for one replication of every policy of `scenario`, as
/// `run` makes it before simulating.
pub fn of_one_replication(scenario: &crate::scenario::Scenario, threads: usize) -> Estimate {
    estimate(&super::jobs_of(scenario, 1), true, threads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::jobs_of;
    use crate::runner::storm::storm;
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
        // 1000/s for an hour, one attempt each (nothing fails), an event
        // for the request and three for the attempt, 2 replications.
        assert_eq!(e.events, 2 * 3_600_000 * 4);
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
        let ratio = e.events as f64 / flat.events as f64;
        assert!((ratio - 10.0).abs() < 1e-6, "{ratio}");
    }

    #[test]
    fn requests_in_a_fault_retry_as_the_schedule_allows() {
        // 1 ms apart without limit: a request arriving in the 6 s outage
        // has 3 s of it left on average, 3 000 attempts; a tenth of the run
        // is in the fault.
        let a = storm(&with(""), 0, 60_000.0).tiers[0];
        assert!((a - (0.9 + 0.1 * 3_000.0)).abs() < 2.0, "{a}");
        // A deadline of 100 ms cuts a request's retries to a hundred.
        let s = with(r#", "deadline": "100ms""#);
        let a = storm(&s, 0, 60_000.0).tiers[0];
        assert!((a - (0.9 + 0.1 * 100.0)).abs() < 2.0, "{a}");
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
        let a = storm(&s, 0, 60_000.0).tiers[0];
        assert!((a - (0.9 + 0.1 * 3_000.0)).abs() < 2.0, "{a}");
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
        assert_eq!(e.events, 100 * 60_000_000 * 4, "{e:?}");
        assert!(e.bytes < BASE_BYTES + (1 << 20), "{e:?}");
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

    /// The time a batch would take names its threads in the singular for
    /// one (a single run uses one thread, however many there are).
    #[test]
    fn the_time_names_one_thread_in_the_singular() {
        let big = with(r#", "profile": [{"at": "0s", "scale": 1e6}]"#);
        let one = estimate(&jobs_of(&big, 1), false, 4).describe();
        assert!(one.contains("events/s on 1 thread;"), "{one}");
        assert!(!one.contains("each of"), "{one}");
        let two = estimate(&jobs_of(&big, 2), false, 2).describe();
        assert!(two.contains("events/s on each of 2 threads;"), "{two}");
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
