//! `retrysim tune` finds a setting that beats a storm-prone baseline and
//! meets its constraints.

use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use retrysim::tune::{no_worse, tune, Constraints, Objective};

const SCENARIO: &str = r#"{"name": "tq", "duration": "4m", "seed": 3,
 "traffic": {"rate": 200, "clients": 200, "attempt_timeout": "1s"},
 "backend": {"workers": 3, "service_time": {"exponential": {"mean": "10ms"}}, "queue_limit": 400,
             "admission_cost": "1ms", "reject_cost": "200us"},
 "faults": [{"outage": {"start": "60s", "duration": "30s"}}],
 "policies": [{"name": "queue", "preset": "cloud-tasks-default"}]}"#;

#[test]
fn tuning_escapes_the_metastable_default() {
    let s = Scenario::from_json(SCENARIO).unwrap();
    let c = Constraints {
        max_drop_rate: Some(0.05),
        must_recover: true,
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Recovery, c, 1, 1).expect("runs");
    assert!(
        t.baseline.score.metastable,
        "the default schedule keeps this backend in a storm"
    );
    let best = t.best.expect("a feasible setting exists");
    assert!(!best.score.metastable);
    assert!(best.score.drop_rate <= 0.05);
    assert!(best.score.amplification < t.baseline.score.amplification);
    assert!(t.evaluated > 10);
    // Deterministic: the same search gives the same answer.
    let again = tune(&s, 0, Objective::Recovery, c, 1, 1)
        .expect("runs")
        .best
        .unwrap();
    assert_eq!(format!("{:?}", again.spec), format!("{:?}", best.spec));
}

/// A retry put off past the end of the run leaves its request neither
/// succeeded nor dropped: the score counts those requests as unfinished,
/// as the run's summary does, so the output can say so.
#[test]
fn requests_left_unfinished_are_counted() {
    let late = SCENARIO.replace(
        r#"{"name": "queue", "preset": "cloud-tasks-default"}"#,
        r#"{"name": "late", "max_attempts": 3, "backoff": {"constant": {"delay": "3m"}}}"#,
    );
    let s = Scenario::from_json(&late).unwrap();
    let t = tune(&s, 0, Objective::Success, Constraints::default(), 1, 1).expect("runs");
    let run = simulate(&s, 0, 0).expect("runs");
    let sum = &run.summary;
    assert!(sum.unfinished > 0, "a 3 min backoff in a 4 min run");
    let base = &t.baseline.score;
    assert_eq!(
        base.unfinished_rate,
        sum.unfinished as f64 / sum.requests as f64
    );
    for c in &t.candidates {
        let s = &c.score;
        assert!(s.success_rate + s.drop_rate + s.unfinished_rate <= 1.0 + 1e-9);
    }
    assert!(retrysim::tune::describe(base).contains("unfinished when the run ended"));
}

/// `scenarios/cloud-tasks-outage.json` scaled down to run in a test: 2
/// tasks/s into a handler serving 3/s behind a queue with the API's default
/// rate limits, a 5-minute outage, the default RetryConfig.
const OUTAGE: &str = r#"{"name": "ct-small", "duration": "40m", "bin": "10s", "seed": 3,
 "traffic": {"rate": 2},
 "backend": {"workers": 3, "service_time": {"lognormal": {"mean": "1s", "stddev": "500ms"}},
             "queue_limit": 3},
 "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100,
                "max_concurrent_dispatches": 1000},
 "faults": [{"outage": {"start": "2m", "duration": "5m"}}],
 "policies": [{"name": "default", "preset": "cloud-tasks-default"}],
 "report": {"stable_for": "2m"}}"#;

#[test]
fn tuning_a_queue_meets_its_constraints_in_every_replication_and_beats_the_default() {
    let s = Scenario::from_json(OUTAGE).unwrap();
    let c = Constraints {
        max_dead_letter_rate: Some(0.0),
        max_peak_load: Some(3.0),
        max_task_age_s: Some(3600.0),
        must_recover: true,
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Drain, c, 2, 3).expect("runs");
    // The default queue sends up to its burst of 100 at once at a handler
    // that serves 3 per second.
    let base = &t.baseline.score;
    assert!(
        base.peak_load_ratio > 3.0,
        "baseline peak {}",
        base.peak_load_ratio
    );
    let best = t.best.clone().expect("a feasible setting exists");
    let b = &best.score;
    assert_eq!(b.spread.replications, 2);
    assert_eq!(
        b.spread.dead_letter_rate.1, 0.0,
        "no dead letter in any run"
    );
    assert!(
        b.spread.peak_load_ratio.1 <= 3.0,
        "peak {:?}",
        b.spread.peak_load_ratio
    );
    assert!(b.spread.max_task_age_s.1 <= 3600.0);
    assert!(b.drain_s.is_some(), "drains in every replication");
    assert!(no_worse(b, base, Objective::Drain));
    // The rate limits were part of the search.
    let d = best.dispatcher.as_ref().expect("a queue");
    assert!(d.max_dispatches_per_second < 500.0 || d.max_burst_size < 100);
    // Every candidate is listed with its spread, the baseline first.
    assert_eq!(t.candidates.len(), t.evaluated);
    assert!(retrysim::tune::changes(&t.baseline, &t.candidates[0]).is_empty());
}
