//! `retrysim tune` finds a setting that beats a storm-prone baseline and
//! meets its constraints.

use retrysim::scenario::Scenario;
use retrysim::tune::{tune, Constraints, Objective};

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
