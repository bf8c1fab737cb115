//! AWS's "Exponential Backoff and Jitter" experiment (Marc Brooker, AWS
//! Architecture Blog, 2015; see `docs/stories-jitter-and-hotos.md`) on
//! the `contention` backend, at sizes that run in seconds.

use retrysim::metrics::RunResult;
use retrysim::runner::run_all;
use retrysim::scenario::{load, Scenario};
use std::path::Path;

const POLICIES: [&str; 5] = [
    "no-backoff",
    "exponential",
    "full-jitter",
    "equal-jitter",
    "decorrelated",
];

fn scenario(clients: u32) -> Scenario {
    load(
        Path::new("scenarios/aws-jitter.json"),
        &[format!("traffic.clients={clients}")],
    )
    .unwrap()
}

/// Per policy: (mean attempts, mean completion time in s) over `reps`.
fn measure(clients: u32, reps: u32) -> Vec<(f64, f64)> {
    let s = scenario(clients);
    let results = run_all(&s, reps, &|| {}).expect("runs");
    (0..s.policies().len())
        .map(|p| {
            let runs: Vec<&RunResult> = results.iter().filter(|r| r.policy_index == p).collect();
            for r in &runs {
                assert_eq!(r.summary().succeeded, clients as u64, "{}", r.policy);
                assert_eq!(r.summary().unfinished, 0);
            }
            let n = runs.len() as f64;
            let calls = runs
                .iter()
                .map(|r| r.summary().attempts as f64)
                .sum::<f64>()
                / n;
            let done = runs
                .iter()
                .map(|r| r.summary().last_success_s.unwrap())
                .sum::<f64>()
                / n;
            (calls, done)
        })
        .collect()
}

const NO_BACKOFF: usize = 0;
const EXPONENTIAL: usize = 1;
const FULL: usize = 2;
const EQUAL: usize = 3;
const DECORRELATED: usize = 4;

#[test]
fn the_scenario_names_the_five_policies() {
    let s = scenario(10);
    let names: Vec<&str> = s.policies().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, POLICIES);
}

#[test]
fn published_findings_hold_at_100_clients() {
    let m = measure(100, 10);
    let calls = |p: usize| m[p].0;
    let done = |p: usize| m[p].1;
    // Full jitter: less than half the calls of un-jittered exponential
    // backoff, and an order of magnitude sooner.
    assert!(calls(FULL) < 0.5 * calls(EXPONENTIAL), "{m:?}");
    assert!(done(FULL) * 10.0 < done(EXPONENTIAL), "{m:?}");
    // Full ≈ equal < decorrelated in calls.
    assert!((calls(FULL) / calls(EQUAL) - 1.0).abs() < 0.1, "{m:?}");
    assert!(calls(EQUAL) < calls(DECORRELATED), "{m:?}");
    assert!(calls(FULL) < calls(DECORRELATED), "{m:?}");
    // Decorrelated finishes slightly sooner than full jitter.
    assert!(done(DECORRELATED) < done(FULL), "{m:?}");
    assert!(done(DECORRELATED) > 0.8 * done(FULL), "{m:?}");
    // No backoff finishes fastest but does the most work.
    for p in [EXPONENTIAL, FULL, EQUAL, DECORRELATED] {
        assert!(done(NO_BACKOFF) < done(p), "{m:?}");
        assert!(calls(NO_BACKOFF) > calls(p), "{m:?}");
    }
}

#[test]
fn work_grows_faster_than_linearly_with_clients() {
    let small = measure(25, 10);
    let large = measure(50, 10);
    for p in 0..POLICIES.len() {
        let growth = large[p].0 / small[p].0;
        // Twice the clients: at least 2.2 times the calls (linear would be 2,
        // quadratic 4); no backoff is closest to quadratic.
        assert!(growth > 2.2, "{}: {growth}", POLICIES[p]);
    }
    // Without backoff every client competes in every round (one commit per
    // read-to-write window, two windows per round): about N²/4 calls, the
    // quadratic shape AWS shows.
    let huge = measure(100, 4);
    assert!(huge[NO_BACKOFF].0 / large[NO_BACKOFF].0 > 3.2, "{huge:?}");
    let n2 = 100.0 * 100.0 / 4.0;
    assert!((huge[NO_BACKOFF].0 / n2 - 1.0).abs() < 0.2, "{huge:?}");
}

#[test]
fn one_client_makes_exactly_one_call() {
    for (calls, _) in measure(1, 3) {
        assert_eq!(calls, 1.0);
    }
}
