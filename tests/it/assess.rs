//! `retrysim assess` on the HotOS '21 toy (`scenarios/hotos21-toy.json`,
//! shortened as in `tests/it/story_hotos.rs`): the trigger threshold lands on
//! capacity/(1 + R) = 150 QPS, and the worst-case amplification the
//! closed forms give is what a whole-run outage produces.

use retrysim::assess::{assess, AssessError, Assessment, Options};
use retrysim::runner::RunError;
use retrysim::scenario::{load_str, Scenario};

const TOY: &str = include_str!("../../scenarios/hotos21-toy.json");

/// 20 s with a 5 s stall from 5 s on and 5 s of health to call a recovery:
/// enough for the worst-case checks, which replace the stall anyway.
const SHORT: [&str; 4] = [
    "duration=20s",
    "faults.0.start=5s",
    "faults.0.duration=5s",
    "report.stable_for=5s",
];

/// Why an assessment in these tests failed, in words.
struct Failed(String);

impl From<AssessError> for Failed {
    fn from(e: AssessError) -> Failed {
        Failed(e.to_string())
    }
}

impl From<RunError> for Failed {
    fn from(e: RunError) -> Failed {
        Failed(e.to_string())
    }
}

/// Assesses `policy` of the toy with `sets` applied first.
fn run(sets: &[&str], policy: &str, replications: u32) -> Assessment {
    let load = |extra: &[String]| -> Result<Scenario, Failed> {
        let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        all.extend(extra.iter().cloned());
        let mut s = load_str(TOY, "hotos21-toy.json", &all).map_err(|e| Failed(e.to_string()))?;
        s.select_policies(&[policy.to_string()])
            .map_err(|e| Failed(format!("{e:?}")))?;
        Ok(s)
    };
    let base = load(&[]).unwrap_or_else(|Failed(why)| panic!("{why}"));
    let opts = Options {
        load_path: "traffic.rate".into(),
        replications,
        tolerance: 0.02,
    };
    assess(&base, &opts, &load, &|_| {}, &|| {}).unwrap_or_else(|Failed(why)| panic!("{why}"))
}

#[test]
fn the_threshold_is_near_capacity_over_one_plus_r() {
    // 110 s with the stall at 15–25 s, as in tests/it/story_hotos.rs.
    let a = run(&["duration=110s", "faults.0.start=15s"], "retry-once", 3);
    let p = &a.policies[0];
    let (lo, hi) = (p.threshold.low.unwrap(), p.threshold.high.unwrap());
    assert!(lo < hi && hi - lo <= 1.0, "[{lo}, {hi}]");
    let mid = p.threshold.mid().unwrap();
    assert!((mid - 150.0).abs() <= 15.0, "threshold {mid}, theory 150");
    // The analytic rule says exactly capacity / 2.
    assert_eq!(p.analytic.attempts_rule, Some(150.0));
    // The scenario's own 280 QPS is past the cliff.
    assert!(a.own_load > hi);
    // A storm the stall started dies out below about the same load.
    let s = p.sustaining.unwrap().mid().unwrap();
    assert!((s - 150.0).abs() <= 15.0, "sustaining {s}");
}

#[test]
fn an_attempt_cap_bounds_amplification_exactly() {
    let a = run(&SHORT, "retry-once", 1);
    let p = &a.policies[0];
    assert_eq!(p.bound.attempts, Some(2.0));
    assert_eq!(p.bound.binding(), "max_attempts = 2");
    let sim = p.simulated_amplification;
    assert!((sim - 2.0).abs() <= 0.02 * 2.0, "simulated {sim}");
}

#[test]
fn a_token_bucket_allows_half_its_tokens_per_bucket() {
    // 100 clients, each with its own bucket of 10 tokens, unlimited
    // attempts 10 ms apart: under a whole-run outage each bucket allows
    // 4 retries, then none.
    let sets = [
        SHORT[0],
        SHORT[1],
        SHORT[2],
        SHORT[3],
        "traffic.rate=100",
        "traffic.clients=100",
        "policies.2.max_attempts=0",
        r#"policies.2.backoff={"constant": {"delay": "10ms"}}"#,
        r#"policies.2.budget={"token_bucket": {"max_tokens": 10, "token_ratio": 0.1, "scope": "client"}}"#,
    ];
    let a = run(&sets, "retry-once-throttled", 1);
    let p = &a.policies[0];
    let bound = p.bound.attempts.unwrap();
    assert!(
        p.bound.binding().starts_with("token bucket"),
        "{}",
        p.bound.binding()
    );
    // 1 + 100 × 4 / N.
    let n = p.requests as f64;
    assert!((bound - (1.0 + 400.0 / n)).abs() < 1e-9);
    let sim = p.simulated_amplification;
    assert!(
        (sim - bound).abs() <= 0.02 * bound,
        "simulated {sim}, bound {bound}"
    );
    // Exactly 400 retries: 4 per bucket.
    assert_eq!((sim * n).round() as u64 - p.requests, 400);
}
