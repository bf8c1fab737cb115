//! The HotOS '21 metastability example (Bronson et al., "Metastable
//! Failures in Distributed Systems", HotOS 2021; see
//! `docs/stories-jitter-and-hotos.md`) on
//! `scenarios/hotos21-toy.json`, shortened to run in seconds: capacity
//! 300 QPS, one retry right after a 1 s timeout, a FIFO queue holding 2 s of
//! work, timeouts that do not cancel work, a 10 s stall.

use retrysim::metrics::RunResult;
use retrysim::runner::run_all;
use retrysim::scenario::{load, Scenario};
use std::path::Path;

const RETRY_ONCE: usize = 0;
const NO_RETRY: usize = 1;
const THROTTLED: usize = 2;

/// The toy at `rate` QPS, 110 s long with the stall at 15–25 s.
fn scenario(rate: u32) -> Scenario {
    let sets: Vec<String> = [
        format!("traffic.rate={rate}"),
        "duration=110s".into(),
        "faults.0.start=15s".into(),
    ]
    .into();
    load(Path::new("scenarios/hotos21-toy.json"), &sets).unwrap()
}

fn runs(rate: u32, reps: u32) -> Vec<RunResult> {
    run_all(&scenario(rate), reps, &|| {}).expect("runs")
}

/// Mean (demand, offered, goodput) per second over the bins in `[from, to)` s.
fn rates(r: &RunResult, from: f64, to: f64) -> (f64, f64, f64) {
    let bins: Vec<_> = r
        .bins()
        .iter()
        .filter(|b| b.t_s >= from && b.t_s < to)
        .collect();
    let n = bins.len() as f64;
    let mean =
        |f: fn(&retrysim::metrics::BinRow) -> f64| bins.iter().map(|b| f(b)).sum::<f64>() / n;
    (
        mean(|b| b.demand_rps),
        mean(|b| b.offered_rps),
        mean(|b| b.goodput_rps),
    )
}

#[test]
fn the_scenario_is_the_papers_toy() {
    let s = scenario(280);
    assert_eq!(s.policies()[RETRY_ONCE].max_attempts, Some(2));
    let b = &s.spec().backend;
    let capacity = b.workers.unwrap() as f64 / 0.1;
    assert_eq!(capacity, 300.0);
    // The queue holds more work than the client waits for.
    assert!(
        b.queue_limit.unwrap() as f64 / capacity > s.spec().traffic.attempt_timeout.unwrap().secs()
    );
}

#[test]
fn at_280_qps_one_retry_keeps_the_system_collapsed() {
    for r in runs(280, 3).iter().filter(|r| r.policy_index == RETRY_ONCE) {
        // Healthy before the trigger: the load is below capacity.
        let (demand, offered, goodput) = rates(r, 5.0, 15.0);
        assert!(
            goodput > 0.9 * demand && offered < 1.05 * demand,
            "before: {demand} {offered} {goodput}"
        );
        // Long after it: attempts about twice the load, goodput about zero.
        let (demand, offered, goodput) = rates(r, 40.0, 110.0);
        let amplification = offered / demand;
        assert!(
            (1.8..=2.1).contains(&amplification),
            "after: {amplification}"
        );
        assert!(goodput < 0.02 * demand, "after: goodput {goodput}");
        assert!(r.summary().metastable(), "replication {}", r.replication);
    }
}

#[test]
fn at_280_qps_breaking_the_loop_recovers() {
    for r in runs(280, 3) {
        if r.policy_index == NO_RETRY || r.policy_index == THROTTLED {
            assert!(!r.summary().metastable(), "{} {}", r.policy, r.replication);
            let (demand, _, goodput) = rates(&r, 90.0, 110.0);
            assert!(goodput > 0.9 * demand, "{}: {goodput}", r.policy);
        }
    }
}

#[test]
fn at_140_qps_one_retry_recovers() {
    for r in runs(140, 3).iter().filter(|r| r.policy_index == RETRY_ONCE) {
        assert!(!r.summary().metastable(), "replication {}", r.replication);
        let (demand, offered, goodput) = rates(r, 90.0, 110.0);
        assert!(goodput > 0.9 * demand && offered < 1.1 * demand);
    }
}

#[test]
fn the_threshold_is_near_capacity_over_one_plus_r() {
    // Capacity 300, R = 1: the threshold is 150 QPS. Well below it the
    // toy always recovers; well above it (but still below capacity, so
    // it was healthy before the trigger) it never does.
    let share = |rate: u32| {
        let rs: Vec<_> = runs(rate, 4)
            .into_iter()
            .filter(|r| r.policy_index == RETRY_ONCE)
            .collect();
        rs.iter().filter(|r| r.summary().metastable()).count() as f64 / rs.len() as f64
    };
    assert_eq!(share(120), 0.0);
    assert_eq!(share(180), 1.0);
}
