//! Cloud Tasks fidelity: the retry window counts from the first attempt,
//! RunTask (`force_run`) leaves one schedule and keeps to its quota, a
//! queue's policy takes the API's defaults, the queue's limits hold with
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
    r.bins()[t].retry_rps
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
    let s = &r.summary();
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
/// 100 s, and an operator's `force_run` at 10 s (`action` is its JSON,
/// with a RunTask quota of 6,000 a minute: one call every 10 ms, all five
/// within the second); `admission` is the time the handler takes to fail
/// an attempt.
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
    let r = forced(r#"{"force_run": {"at": "10s", "per_minute": 6000}}"#, "0s");
    // Attempts at 0, 10, 110, 210, 310 s: 5 per task, not 8 (the timer left
    // by attempt 1 would add attempts at 100, 200, 300 s).
    assert_eq!(r.summary().attempts, 25);
    for t in [10, 110, 210, 310] {
        assert_eq!(retries_at(&r, t), 5.0, "retries at {t} s");
    }
    let others: f64 = r.bins().iter().map(|b| b.retry_rps).sum::<f64>() - 20.0;
    assert_eq!(others, 0.0, "no retry on the old schedule");
}

#[test]
fn after_a_forced_attempt_fails_the_next_is_the_runtask_time_plus_the_delay() {
    // The handler takes 2 s to fail: the forced attempt (10 s) fails at
    // 12 s, and its retry is due at 10 + 100 s, not 12 + 100 s. Later
    // retries count from their failures again: 112 + 100, 214 + 100.
    let r = forced(r#"{"force_run": {"at": "10s", "per_minute": 6000}}"#, "2s");
    for (t, n) in [(10, 5.0), (110, 5.0), (212, 5.0), (314, 5.0)] {
        assert_eq!(retries_at(&r, t), n, "retries at {t} s");
    }
    assert_eq!(r.summary().attempts, 25);
}

#[test]
fn forcing_a_subset_leaves_the_other_tasks_alone() {
    // Tasks 0 and 3 (creation order) are forced; 1, 2 and 4 keep retrying
    // at 100, 200, 300 s.
    let r = forced(
        r#"{"force_run": {"at": "10s", "tasks": [0, 3], "per_minute": 6000}}"#,
        "0s",
    );
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
    assert_eq!(r.summary().attempts, 2 * 5 + 3 * 4);
    // The older half, rounded up: 3 of the 5.
    let r = forced(
        r#"{"force_run": {"at": "10s", "fraction": 0.5, "per_minute": 6000}}"#,
        "0s",
    );
    assert_eq!((retries_at(&r, 10), retries_at(&r, 100)), (3.0, 2.0));
    assert_eq!(r.summary().attempts, 3 * 5 + 2 * 4);
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
        r.summary().duplicates > 100,
        "duplicates {}",
        r.summary().duplicates
    );
    // Service always 4 s, below the deadline, and errors instead of the
    // slowdown, so tasks do retry: never done twice.
    let r = slow_handler(
        r#"{"backend": {"workers": 200, "service_time": {"constant": {"value": "4s"}}},
            "faults": [{"errors": {"start": "10m", "duration": "10m", "rate": 0.3}}]}"#,
    );
    assert!(
        r.summary().attempts > r.summary().requests + 100,
        "it retried"
    );
    assert_eq!(r.summary().duplicates, 0);
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
    let counts = &r.summary().attempt_counts;
    let most = counts.iter().rposition(|c| c[0] > 0).unwrap();
    assert!(
        (most as i64 - (during as i64 + 1)).abs() <= 1,
        "the first task of the outage succeeded at attempt {most}"
    );
    assert_eq!(r.summary().dead_lettered(), 0);
    // Drain: the backlog at the outage's end, served at capacity − arrivals.
    let end = r.bins().iter().position(|b| b.t_s >= 2400.0).unwrap();
    let backlog = r.bins()[end - 1].backlog;
    assert!((8900.0..9100.0).contains(&backlog), "backlog {backlog}");
    let predicted = backlog / (6.0 - 5.0);
    let drain = r.summary().drain_s.expect("drained");
    assert!(
        (drain - predicted).abs() <= 0.1 * predicted,
        "drain {drain} s vs {predicted} s"
    );
}

/// RunTask calls in each one-second bin of `r`: the retries, where every
/// task's own retry is an hour away.
fn forced_per_second(r: &RunResult) -> Vec<f64> {
    r.bins().iter().map(|b| b.retry_rps).collect()
}

#[test]
fn a_force_run_of_1000_tasks_forces_no_more_than_the_quota_allows_per_minute() {
    // 1,000 tasks fail at once and wait an hour for their retry; the
    // operator forces every one at 10 s. The quota (60 a minute by
    // default, 600 when the file says so) paces the calls: in every
    // window of 60 s at most that many, one call every 60 s / quota.
    for (quota, field) in [(60.0, ""), (600.0, r#", "per_minute": 600"#)] {
        let r = run(&format!(
            r#"{{"name": "quota", "duration": "300s",
            "traffic": {{"mode": "burst", "clients": 1000}},
            "backend": {{"workers": 1000, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "faults": [{{"outage": {{"start": 0, "duration": "300s"}}}}],
            "actions": [{{"force_run": {{"at": "10s"{field}}}}}],
            "dispatcher": {{"max_dispatches_per_second": 500, "max_burst_size": 500}},
            "policies": [{{"name": "p", "max_attempts": 0,
                          "backoff": {{"constant": {{"delay": "1h"}}}}}}]}}"#
        ));
        let per_s = forced_per_second(&r);
        assert_eq!(per_s[..10].iter().sum::<f64>(), 0.0, "nothing before 10 s");
        for (t, w) in per_s.windows(60).enumerate() {
            let n: f64 = w.iter().sum();
            assert!(
                n <= quota,
                "quota {quota}: {n} forced in [{t}, {}) s",
                t + 60
            );
        }
        // The quota is used in full: the 1,000 calls take 1000 / quota
        // minutes, as many as fit in the 290 s left.
        let total: f64 = per_s.iter().sum();
        let expected = (290.0 * quota / 60.0).min(1000.0);
        assert_eq!(total, expected, "quota {quota}");
        assert_eq!(r.summary().attempts, 1000 + expected as u64);
    }
}

#[test]
fn a_task_whose_own_retry_comes_before_its_run_task_call_is_passed_over() {
    // 100 tasks wait 20 s for their retry; forcing all at 5 s at one call
    // a second reaches 20 of them (5 s .. 24 s: the 15 calls before their
    // own retries at 20 s, then 5 calls to tasks retried at 20 s and
    // waiting again) before the queue's schedule has run every task.
    let r = run(r#"{"name": "passed", "duration": "30s",
        "traffic": {"mode": "burst", "clients": 100},
        "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
        "faults": [{"outage": {"start": 0, "duration": "30s"}}],
        "actions": [{"force_run": {"at": "5s"}}],
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 500},
        "policies": [{"name": "p", "max_attempts": 0,
                      "backoff": {"constant": {"delay": "20s"}}}]}"#);
    let per_s = forced_per_second(&r);
    // One forced attempt a second from 5 s on, until the own retries.
    for (t, &n) in per_s.iter().enumerate().take(20).skip(5) {
        assert_eq!(n, 1.0, "forced at {t} s");
    }
    // At 20 s the 85 tasks not forced retry on their own (the burst's
    // first attempts went out within the first second).
    assert!(per_s[20] >= 84.0, "own retries at 20 s: {}", per_s[20]);
}

#[test]
fn a_queue_policy_without_retry_on_or_max_attempts_behaves_as_cloud_tasks() {
    // The handler answers `internal` (HTTP 500) for a minute. A queue
    // retries every non-2xx answer, 100 attempts by default: no task
    // fails; without the queue the same policy ends them as failed at
    // their first 500 (a policy's own defaults: one attempt, retry on
    // unavailable, resource_exhausted and deadline_exceeded).
    let json = |queue: &str| {
        format!(
            r#"{{"name": "defaults", "duration": "600s",
            "traffic": {{"rate": 10, "arrival": "uniform"}},
            "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "10ms"}}}}}},
            "faults": [{{"outage": {{"start": "60s", "duration": "60s", "status": "internal"}}}}],
            {queue}
            "policies": [{{"name": "p"}}]}}"#
        )
    };
    let queued = run(&json(r#""dispatcher": {},"#));
    let s = &queued.summary();
    assert_eq!(s.failed, 0, "a queue retries a 500");
    assert_eq!(s.failed_non_retryable, 0);
    assert_eq!(s.dropped, 0, "100 attempts outlast a minute");
    assert!(s.attempts > s.requests + 500, "it retried: {}", s.attempts);
    let scenario = Scenario::from_json(&json(r#""dispatcher": {},"#)).unwrap();
    let p = &scenario.policies()[0];
    assert_eq!(p.max_attempts, Some(100));
    assert_eq!(p.backoff.nominal(1), 100_000_000, "min_backoff 0.1 s");
    let plain = run(&json(""));
    assert!(
        (590..=610).contains(&plain.summary().failed_non_retryable),
        "without a queue: {} failed",
        plain.summary().failed_non_retryable
    );
    // What the file says wins over the queue's defaults.
    let written = run(&json(r#""dispatcher": {},"#).replace(
        r#"{"name": "p"}"#,
        r#"{"name": "p", "max_attempts": 2, "retry_on": ["unavailable"]}"#,
    ));
    assert!(written.summary().failed_non_retryable >= 590);
    // `check` names the defaults it applied.
    let lines = scenario.queue_settings();
    assert!(
        lines[0].contains("max_attempts 100")
            && lines[0].contains("API default: max_attempts, backoff, retry_on"),
        "{lines:?}"
    );
}

#[test]
fn settings_beyond_the_documented_api_limits_are_warned_about_by_field() {
    let s = Scenario::from_json(
        r#"{"name": "limits", "duration": "60s",
        "traffic": {"rate": 10},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "10ms"}}},
        "dispatcher": {"max_dispatches_per_second": 501, "max_burst_size": 501,
                       "max_concurrent_dispatches": 5001, "dispatch_deadline": "5s"},
        "policies": [{"name": "p", "max_retry_duration": "1000h", "max_attempts": 4294967295,
                      "backoff": {"cloud_tasks": {"min_backoff": "1500ms", "max_backoff": "10s",
                                                  "max_doublings": 3}}}]}"#,
    )
    .unwrap();
    let w = s.warnings();
    let at = |path: &str| {
        w.iter()
            .find(|w| w.path == path)
            .unwrap_or_else(|| panic!("no warning at {path}: {w:?}"))
            .message
            .clone()
    };
    assert!(at("dispatcher.max_dispatches_per_second").contains("at most 500"));
    assert!(at("dispatcher.max_burst_size").contains("500"));
    assert!(at("dispatcher.max_concurrent_dispatches").contains("at most 5000"));
    let deadline = at("dispatcher.dispatch_deadline");
    assert!(
        deadline.contains("15 s to 30 min") && deadline.contains("24 h 15 s"),
        "{deadline}"
    );
    assert!(at("policies[0].backoff.cloud_tasks.min_backoff").contains("truncates it to 1 s"));
    assert!(at("policies[0].max_retry_duration").contains("31 days"));
    assert!(at("policies[0].max_attempts").starts_with("4294967295 is above"));
    // Within the ranges, and a 2 h deadline only an App Engine target takes.
    let s = Scenario::from_json(
        r#"{"name": "ok", "duration": "60s", "traffic": {"rate": 10},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "10ms"}}},
        "dispatcher": {"dispatch_deadline": "2h"},
        "policies": [{"name": "p", "preset": "cloud-tasks-default"}]}"#,
    )
    .unwrap();
    let w = s.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.contains("only an App Engine target"));
}

#[test]
fn check_warns_when_a_force_run_asks_for_more_than_the_quota_before_the_own_retries() {
    // 20 tasks/s for 30 minutes of outage: about 36,000 tasks waiting at
    // 40 m; at 60 calls a minute that takes 600 minutes, while none waits
    // more than an hour (the default max_backoff) for its own retry.
    let text = std::fs::read_to_string("scenarios/cloud-tasks-outage.json").unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["actions"] = serde_json::json!([{"force_run": {"at": "40m"}}]);
    let s = Scenario::from_json(&v.to_string()).unwrap();
    let w = s.warnings();
    let quota = w
        .iter()
        .find(|w| w.path == "actions[0].force_run")
        .expect("a quota warning");
    assert!(
        quota.message.contains("36000 tasks") && quota.message.contains("36000 s"),
        "{}",
        quota.message
    );
    // A handful of named tasks fits the quota: no warning.
    v["actions"] = serde_json::json!([{"force_run": {"at": "40m", "tasks": [1, 2, 3]}}]);
    let s = Scenario::from_json(&v.to_string()).unwrap();
    assert!(s
        .warnings()
        .iter()
        .all(|w| w.path != "actions[0].force_run"));
}

#[test]
fn a_run_task_quota_must_be_positive() {
    let text = std::fs::read_to_string("tests/bad/force_run_quota_zero.json").unwrap();
    let e = Scenario::from_json(&text).unwrap_err().to_string();
    assert!(
        e.contains("actions[0].force_run.per_minute") && e.contains("default is 60"),
        "{e}"
    );
}

/// The terminal and report.html show `duplicates` as what it counts,
/// executions done again, with the figure of `summary.csv`: attempts that
/// time out while the handler still completes them, three per request
/// (each request's first execution is not a repeat).
#[test]
fn repeated_executions_are_shown_as_executions() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("dup.json");
    std::fs::write(
        &scenario,
        r#"{"name": "dup", "duration": "20s", "bin": "1s",
            "traffic": {"rate": 1, "clients": 1, "attempt_timeout": "100ms"},
            "backend": {"workers": 10, "service_time": {"constant": {"value": "300ms"}}},
            "faults": [{"outage": {"start": "10s", "duration": "2s"}}],
            "policies": [{"name": "p", "max_attempts": 3,
                          "backoff": {"constant": {"delay": "10ms"}}}]}"#,
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", "--no-plots", "-o"])
        .arg(&out_dir)
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = std::fs::read_to_string(out_dir.join("dup/summary.csv")).unwrap();
    let mut rows = summary.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = rows.next().unwrap();
    let col = header.iter().position(|h| *h == "duplicates").unwrap();
    let duplicates = rows.next().unwrap()[col].to_string();
    assert!(duplicates.parse::<f64>().unwrap() > 1.0, "{duplicates}");
    assert!(
        stdout.contains(&format!(", {duplicates} repeated executions,")),
        "{stdout}"
    );
    let page = std::fs::read_to_string(out_dir.join("dup/report.html")).unwrap();
    assert!(page.contains("<th>repeated executions</th>"), "{page}");
    assert!(!stdout.contains("twice") && !page.contains("twice"));
}
