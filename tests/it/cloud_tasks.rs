//! Cloud Tasks fidelity: the retry window counts from the first attempt,
//! RunTask (`force_run`) leaves one schedule, the queue's limits hold with
//! and without system throttling, duplicated work, and the outage's closed
//! forms (attempts the schedule predicts, drain time).

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str) -> RunResult {
    simulate(&Scenario::from_json(json).expect("valid scenario"), 0, 0).unwrap()
}

/// Retries sent in the one-second bin starting at `t`.
fn retries_at(r: &RunResult, t: usize) -> f64 {
    r.bins[t].retry_rps
}

#[test]
fn the_retry_window_counts_from_the_first_attempt_not_from_creation() {
    // 100 tasks at once on a queue dispatching 1 per second, through an
    // outage longer than the run: the last task is first dispatched at
    // 99 s. Measured from creation, every task dispatched after 30 s would
    // give up after one attempt (1.3 attempts per task); measured from the
    // first attempt, each retries once (age 0 < 30 s), and gives up after
    // its second attempt, 100 s later.
    let r = run(r#"{"name": "age", "duration": "400s",
        "traffic": {"mode": "burst", "clients": 100},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "10ms"}}},
        "faults": [{"outage": {"start": 0, "duration": "400s"}}],
        "dispatcher": {"max_dispatches_per_second": 1, "max_burst_size": 1},
        "policies": [{"name": "p", "max_attempts": 1, "max_retry_duration": "30s",
                      "backoff": {"constant": {"delay": "1s"}}}]}"#);
    let s = &r.summary;
    assert_eq!(s.requests, 100);
    assert_eq!(s.dropped, 100, "all dead-lettered within 400 s");
    assert_eq!(s.attempts, 200, "two attempts per task");
    assert_eq!(
        s.attempt_counts[2],
        [0, 100],
        "every task gave up at attempt 2"
    );
    assert_eq!(s.max_attempts_reached, 100);
}

/// Five tasks at 0 s, an outage for the whole run, a constant backoff of
/// 100 s, and an operator's `force_run` at 10 s (`action` is its JSON);
/// `admission` is the time the handler takes to fail an attempt.
fn forced(action: &str, admission: &str) -> RunResult {
    run(&format!(
        r#"{{"name": "force", "duration": "350s",
        "traffic": {{"mode": "burst", "clients": 5}},
        "backend": {{"workers": 5, "service_time": {{"constant": {{"value": "1ms"}}}},
                     "admission_cost": "{admission}"}},
        "faults": [{{"outage": {{"start": 0, "duration": "350s"}}}}],
        "actions": [{action}],
        "dispatcher": {{"max_dispatches_per_second": 500}},
        "policies": [{{"name": "p", "max_attempts": 0,
                      "backoff": {{"constant": {{"delay": "100s"}}}}}}]}}"#
    ))
}

#[test]
fn a_forced_task_follows_one_schedule() {
    let r = forced(r#"{"force_run": {"at": "10s"}}"#, "0s");
    // Attempts at 0, 10, 110, 210, 310 s: 5 per task, not 8 (the timer left
    // by attempt 1 would add attempts at 100, 200, 300 s).
    assert_eq!(r.summary.attempts, 25);
    for t in [10, 110, 210, 310] {
        assert_eq!(retries_at(&r, t), 5.0, "retries at {t} s");
    }
    let others: f64 = r.bins.iter().map(|b| b.retry_rps).sum::<f64>() - 20.0;
    assert_eq!(others, 0.0, "no retry on the old schedule");
}

#[test]
fn after_a_forced_attempt_fails_the_next_is_the_runtask_time_plus_the_delay() {
    // The handler takes 2 s to fail: the forced attempt (10 s) fails at
    // 12 s, and its retry is due at 10 + 100 s, not 12 + 100 s. Later
    // retries count from their failures again: 112 + 100, 214 + 100.
    let r = forced(r#"{"force_run": {"at": "10s"}}"#, "2s");
    for (t, n) in [(10, 5.0), (110, 5.0), (212, 5.0), (314, 5.0)] {
        assert_eq!(retries_at(&r, t), n, "retries at {t} s");
    }
    assert_eq!(r.summary.attempts, 25);
}

#[test]
fn forcing_a_subset_leaves_the_other_tasks_alone() {
    // Tasks 0 and 3 (creation order) are forced; 1, 2 and 4 keep retrying
    // at 100, 200, 300 s.
    let r = forced(r#"{"force_run": {"at": "10s", "tasks": [0, 3]}}"#, "0s");
    for (t, n) in [
        (10, 2.0),
        (100, 3.0),
        (110, 2.0),
        (200, 3.0),
        (210, 2.0),
        (300, 3.0),
        (310, 2.0),
    ] {
        assert_eq!(retries_at(&r, t), n, "retries at {t} s");
    }
    assert_eq!(r.summary.attempts, 2 * 5 + 3 * 4);
    // The older half, rounded up: 3 of the 5.
    let r = forced(r#"{"force_run": {"at": "10s", "fraction": 0.5}}"#, "0s");
    assert_eq!((retries_at(&r, 10), retries_at(&r, 100)), (3.0, 2.0));
    assert_eq!(r.summary.attempts, 3 * 5 + 2 * 4);
}

/// The slow-handler scenario with its handler's service time and deadline.
fn slow_handler(extra: &str) -> RunResult {
    let text = std::fs::read_to_string("scenarios/cloud-tasks-slow-handler.json").unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    if !extra.is_empty() {
        let patch: serde_json::Value = serde_json::from_str(extra).unwrap();
        for (k, val) in patch.as_object().unwrap() {
            v[k] = val.clone();
        }
    }
    run(&v.to_string())
}

#[test]
fn work_is_duplicated_only_when_the_handler_outlasts_the_deadline() {
    // The shipped scenario: a fourfold slowdown pushes the handler past
    // the 15 s dispatch deadline.
    let r = slow_handler("");
    assert!(
        r.summary.duplicates > 100,
        "duplicates {}",
        r.summary.duplicates
    );
    // Service always 4 s, below the deadline, and errors instead of the
    // slowdown, so tasks do retry: never done twice.
    let r = slow_handler(
        r#"{"backend": {"workers": 200, "service_time": {"constant": {"value": "4s"}}},
            "faults": [{"errors": {"start": "10m", "duration": "10m", "rate": 0.3}}]}"#,
    );
    assert!(r.summary.attempts > r.summary.requests + 100, "it retried");
    assert_eq!(r.summary.duplicates, 0);
}

#[test]
fn a_task_through_the_outage_makes_the_attempts_the_schedule_predicts_and_the_backlog_drains_at_the_spare_capacity(
) {
    // 5 tasks/s into a handler that serves 6/s (6 workers × 1 s, 6 concurrent
    // dispatches so nothing queues at the handler), the default RetryConfig,
    // a 30-minute outage from 600 s in which attempts fail at once.
    let r = run(
        r#"{"name": "closed-form", "duration": "13000s", "bin": "10s",
        "traffic": {"rate": 5, "arrival": "uniform"},
        "backend": {"workers": 6, "service_time": {"constant": {"value": "1s"}}},
        "faults": [{"outage": {"start": "600s", "duration": "30m"}}],
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100,
                       "max_concurrent_dispatches": 6},
        "policies": [{"name": "default", "preset": "cloud-tasks-default"}]}"#,
    );
    // The schedule: retry k waits 0.1 s · 2^(k−1), so the retries land at
    // 0.1 · (2^k − 1) s after the first attempt; within 1800 s that is
    // k ≤ 14: 15 attempts fail, and the 16th, after the outage, succeeds.
    let cumulative = |k: u32| 0.1 * (2f64.powi(k as i32) - 1.0);
    let during = 1 + (1..=16).filter(|&k| cumulative(k) < 1800.0).count();
    assert_eq!(during, 15);
    let counts = &r.summary.attempt_counts;
    let most = counts.iter().rposition(|c| c[0] > 0).unwrap();
    assert!(
        (most as i64 - (during as i64 + 1)).abs() <= 1,
        "the first task of the outage succeeded at attempt {most}"
    );
    assert_eq!(r.summary.dead_lettered(), 0);
    // Drain: the backlog at the outage's end, served at capacity − arrivals.
    let end = r.bins.iter().position(|b| b.t_s >= 2400.0).unwrap();
    let backlog = r.bins[end - 1].backlog;
    assert!((8900.0..9100.0).contains(&backlog), "backlog {backlog}");
    let predicted = backlog / (6.0 - 5.0);
    let drain = r.summary.drain_s.expect("drained");
    assert!(
        (drain - predicted).abs() <= 0.1 * predicted,
        "drain {drain} s vs {predicted} s"
    );
}
