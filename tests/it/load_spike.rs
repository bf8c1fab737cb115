//! A load spike without any fault (`scenarios/load-spike-collapse.json`,
//! shortened to run in seconds): 40 requests/s against a `concurrency`
//! backend (1 s + 10 ms per attempt in service), a 3 s attempt timeout and
//! 3 attempts; for 8 s the load doubles. Retrying at once keeps the server
//! collapsed long after the load is back; exponential backoff with full
//! jitter lets it recover. The spike is the run's incident: recovery is
//! measured from its end.

use retrysim::metrics::{BinRow, Recovery, RunResult};
use retrysim::policy::jitter::Jitter;
use retrysim::runner::run_all;
use retrysim::scenario::{load, Scenario};
use std::path::Path;

const NO_BACKOFF: usize = 0;
const FULL_JITTER: usize = 1;
/// Replications (independent random streams) per policy.
const SEEDS: u32 = 10;
/// The shortened run: the spike at 20–28 s, 150 s in all.
const SPIKE: (f64, f64) = (20.0, 28.0);
const END: f64 = 150.0;

/// The shipped scenario with the spike moved to 20–28 s and the run cut at
/// 150 s; `extra` adds `--set` overrides.
fn scenario(extra: &[&str]) -> Scenario {
    let mut sets: Vec<String> = [
        "duration=150s",
        "traffic.profile.0.at=20s",
        "traffic.profile.1.at=20.001s",
        "traffic.profile.2.at=27.999s",
        "traffic.profile.3.at=28s",
    ]
    .map(String::from)
    .into();
    sets.extend(extra.iter().map(|s| s.to_string()));
    load(Path::new("scenarios/load-spike-collapse.json"), &sets).unwrap()
}

fn runs(s: &Scenario) -> Vec<RunResult> {
    run_all(s, SEEDS, &|| {}).expect("runs")
}

fn of(runs: &[RunResult], policy: usize) -> Vec<&RunResult> {
    runs.iter().filter(|r| r.policy_index == policy).collect()
}

/// Mean of a column over the bins that start in `[from, to)` s.
fn mean(r: &RunResult, from: f64, to: f64, col: fn(&BinRow) -> f64) -> f64 {
    let bins: Vec<_> = r
        .bins()
        .iter()
        .filter(|b| b.t_s >= from && b.t_s < to)
        .collect();
    assert!(!bins.is_empty());
    bins.iter().map(|b| col(b)).sum::<f64>() / bins.len() as f64
}

#[test]
fn the_scenario_has_the_stated_numbers() {
    let s = scenario(&[]);
    let spec = s.spec();
    let t = &spec.traffic;
    assert_eq!(t.rate, Some(40.0));
    assert_eq!(t.attempt_timeout.unwrap().secs(), 3.0);
    let b = &spec.backend;
    let (base, per) = (b.base.unwrap().secs(), b.per_request.unwrap().secs());
    assert_eq!((base, per), (1.0, 0.010));
    assert!(spec.faults.is_empty(), "no outage, only the spike");
    // Steady state N = λ·(base + per·N): 66.7 in service, 1.67 s each, well
    // inside the timeout; past 200 in service an attempt outlasts it.
    let n = 40.0 * base / (1.0 - 40.0 * per);
    assert!((n - 66.67).abs() < 0.01 && base + per * n < 3.0);
    assert!((base + per * 200.0 - 3.0).abs() < 1e-9);
    // Collapsed, every request makes 3 attempts: more than the server can
    // ever finish (its throughput tends to 1 / per_request).
    assert!(3.0 * 40.0 > 1.0 / per);
    let p = s.policies();
    assert_eq!(p[NO_BACKOFF].max_attempts, Some(3));
    assert_eq!(p[FULL_JITTER].max_attempts, Some(3));
    assert!(matches!(p[FULL_JITTER].jitter, Jitter::Full));
}

#[test]
fn the_spike_is_the_incident() {
    for r in runs(&scenario(&[])) {
        assert_eq!(r.summary().fault_start_s, Some(SPIKE.0));
        assert_eq!(r.summary().fault_end_s, Some(SPIKE.1));
        // Both policies see the same arrivals: the spike doubles the demand.
        let before = mean(&r, 5.0, SPIKE.0, |b| b.demand_rps);
        let during = mean(&r, SPIKE.0, SPIKE.1 - 3.0, |b| b.demand_rps);
        assert!((35.0..45.0).contains(&before), "{before}");
        assert!((70.0..90.0).contains(&during), "{during}");
    }
}

#[test]
fn retrying_at_once_stays_collapsed_and_backoff_with_full_jitter_recovers() {
    let all = runs(&scenario(&[]));
    let mut collapsed = 0;
    for r in of(&all, NO_BACKOFF) {
        // Healthy before the spike.
        let demand = mean(r, 5.0, SPIKE.0, |b| b.demand_rps);
        let goodput = mean(r, 5.0, SPIKE.0, |b| b.goodput_rps);
        assert!(goodput > 0.9 * demand, "before: {goodput} of {demand}");
        // Long after it: the load is back to 40/s but almost nothing
        // succeeds, every request makes its 3 attempts, and the attempts in
        // service keep piling up.
        let (from, to) = (SPIKE.1 + 40.0, END);
        let demand = mean(r, from, to, |b| b.demand_rps);
        let goodput = mean(r, from, to, |b| b.goodput_rps);
        let offered = mean(r, from, to, |b| b.offered_rps);
        let first = mean(r, from, from + 20.0, |b| b.queue_len_avg);
        let last = mean(r, to - 20.0, to, |b| b.queue_len_avg);
        if goodput < 0.1 * demand
            && offered > 2.5 * demand
            && last > first + 100.0
            && r.summary().recovery == Recovery::Degraded
        {
            collapsed += 1;
        }
    }
    assert!(
        collapsed >= 9,
        "no-backoff collapsed in {collapsed} of {SEEDS}"
    );

    let mut recovered = 0;
    for r in of(&all, FULL_JITTER) {
        let s = &r.summary();
        let (from, to) = (SPIKE.1 + 40.0, END);
        let demand = mean(r, from, to, |b| b.demand_rps);
        let goodput = mean(r, from, to, |b| b.goodput_rps);
        let in_service = mean(r, from, to, |b| b.queue_len_avg);
        if s.recovery == Recovery::Recovered
            && s.recovery_after_fault_s().is_some_and(|t| t <= 30.0)
            && goodput > 0.9 * demand
            && in_service < 100.0
        {
            recovered += 1;
        }
        // The backoff did not avoid the timeouts, only spread their retries.
        assert!(s.retries > 0);
    }
    assert!(
        recovered >= 9,
        "full-jitter recovered in {recovered} of {SEEDS}"
    );
}

#[test]
fn without_the_spike_nothing_times_out_and_littles_law_holds() {
    let all = runs(&scenario(&["traffic.profile=[]"]));
    let want = 40.0 * 1.0 / (1.0 - 40.0 * 0.010);
    for r in &all {
        let s = &r.summary();
        assert_eq!(s.fault_end_s, None, "no fault, no spike: no incident");
        assert_eq!(s.retries, 0, "nothing timed out");
        assert!(r.bins().iter().all(|b| b.queue_len_max < 200.0));
    }
    // Little's law over the 10 runs of each policy: N = λ·(base + per·N).
    for p in [NO_BACKOFF, FULL_JITTER] {
        let runs = of(&all, p);
        let n = runs
            .iter()
            .map(|r| mean(r, 20.0, END, |b| b.queue_len_avg))
            .sum::<f64>()
            / runs.len() as f64;
        assert!((n - want).abs() <= 0.05 * want, "N {n} vs {want}");
    }
}
