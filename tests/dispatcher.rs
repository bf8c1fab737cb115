//! The Cloud Tasks topology: rate limit, burst, concurrency, dispatch
//! deadline, dead-lettering and RunTask (`force_run`).

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str) -> RunResult {
    simulate(&Scenario::from_json(json).expect("valid scenario"), 0, 0).expect("runs")
}

#[test]
fn dispatch_rate_caps_offered_load_after_the_burst() {
    let r = run(r#"{"name": "rate", "duration": "60s", "seed": 4,
        "traffic": {"rate": 200},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "5ms"}}},
        "dispatcher": {"max_dispatches_per_second": 50, "max_burst_size": 20, "max_concurrent_dispatches": 1000},
        "policies": [{"name": "p"}]}"#);
    // The bucket starts with 20 tokens, then refills at 50/s.
    let first = r.bins[0].offered_rps;
    assert!(
        (68.0..=71.0).contains(&first),
        "first second: 20 burst + 50 refill, got {first}"
    );
    for b in &r.bins[1..] {
        assert!(
            b.offered_rps <= 50.0 + 1e-9,
            "t={} offered {}",
            b.t_s,
            b.offered_rps
        );
    }
    let s = &r.summary;
    assert_eq!(s.succeeded + s.unfinished, s.requests);
    assert!(
        (s.succeeded as f64 - 20.0 - 50.0 * 60.0).abs() <= 2.0,
        "succeeded {}",
        s.succeeded
    );
}

#[test]
fn concurrency_caps_throughput() {
    let r = run(r#"{"name": "conc", "duration": "30s",
        "traffic": {"rate": 100, "arrival": "uniform"},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "200ms"}}},
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100, "max_concurrent_dispatches": 4},
        "policies": [{"name": "p"}]}"#);
    // 4 in flight × 5 per second each.
    let mean: f64 = r.bins[5..].iter().map(|b| b.goodput_rps).sum::<f64>() / 25.0;
    assert!((mean - 20.0).abs() < 0.5, "throughput {mean}");
    for b in &r.bins {
        assert!(b.utilization * 50.0 <= 4.0 + 1e-9);
    }
}

#[test]
fn dispatch_deadline_is_the_attempt_timeout_and_exhausted_tasks_are_dead_lettered() {
    let r = run(r#"{"name": "dl", "duration": "120s",
        "traffic": {"rate": 10, "arrival": "uniform"},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}},
        "faults": [{"blackhole": {"start": 0, "duration": "120s"}}],
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100,
                       "max_concurrent_dispatches": 1000, "dispatch_deadline": "15s"},
        "policies": [{"name": "p", "max_attempts": 3,
                      "backoff": {"cloud_tasks": {"min_backoff": "1s", "max_backoff": "10s", "max_doublings": 2}}}]}"#);
    let s = &r.summary;
    // Each attempt times out after the 15 s dispatch deadline; 3 attempts
    // + 1 s + 2 s of backoff = 48 s to dead-letter a task. (A
    // `traffic.attempt_timeout` next to a dispatcher is refused as
    // meaningless.)
    let first_drop = r.bins.iter().position(|b| b.dropped_rps > 0.0).unwrap();
    assert_eq!(first_drop, 48);
    assert_eq!(s.succeeded, 0);
    assert_eq!(s.dropped + s.unfinished, s.requests);
    assert!(s.dropped > 0 && s.attempts >= 3 * s.dropped);
}

#[test]
fn force_run_dispatches_every_waiting_task_at_once() {
    let json = |force: bool| {
        format!(
            r#"{{"name": "force", "duration": "100s",
            "traffic": {{"rate": 10, "arrival": "uniform"}},
            "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "faults": [{{"outage": {{"start": "0s", "duration": "30s"}}}}],
            "actions": [{}],
            "dispatcher": {{"max_dispatches_per_second": 5, "max_burst_size": 5, "max_concurrent_dispatches": 1000}},
            "policies": [{{"name": "p", "max_attempts": 0,
                "backoff": {{"constant": {{"delay": "600s"}}}}}}]}}"#,
            if force {
                r#"{"force_run": {"at": "40s"}}"#
            } else {
                r#"{"disable_retries": {"at": "99s"}}"#
            }
        )
    };
    let without = run(&json(false));
    let with = run(&json(true));
    // Tasks that failed in the outage wait 600 s; RunTask sends them at 40 s
    // regardless of the 5/s rate limit.
    assert!(
        with.bins[40].offered_rps > 100.0,
        "offered at 40 s: {}",
        with.bins[40].offered_rps
    );
    assert!(without.bins[40].offered_rps <= 5.0 + 1e-9);
    assert!(with.summary.succeeded > without.summary.succeeded + 100);
}
