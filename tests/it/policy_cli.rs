//! `retrysim schedule` and `retrysim import` end to end: output shape and
//! exit statuses (0 success, 2 invalid input).

use std::path::Path;
use std::process::{Command, Output};

fn retrysim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn schedule_of_the_default_queue() {
    let o = retrysim(&["schedule", "--preset", "cloud-tasks-default"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(text.contains("84.8 h"), "{text}");
    assert!(text.contains("over 99 retries"), "{text}");
}

/// A policy of a scenario with a queue takes what the queue's policy
/// leaves out from the Cloud Tasks API, in `schedule` as in a run.
#[test]
fn schedule_of_a_queue_scenario_s_policy_has_the_api_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "q.json",
        r#"{"name": "q", "duration": "1m", "traffic": {"rate": 1},
            "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}},
            "dispatcher": {"max_dispatches_per_second": 10},
            "policies": [{"name": "d"}, {"name": "e", "max_attempts": 5}]}"#,
    );
    let d = stdout(&retrysim(&["schedule", "--policy", &file, "--name", "d"]));
    assert!(d.contains("over 99 retries"), "{d}");
    let o = retrysim(&["schedule", "--policy", &file, "--name", "e"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let e = stdout(&o);
    assert!(
        e.contains("Cloud Tasks 100ms–1h") && e.contains("max_attempts: 5"),
        "{e}"
    );
}

/// The Go v2 and JavaScript v3 SDKs' defaults (docs/policies.md [GO1],
/// [JS1]): Go waits `U(0, 2^k)` s before retry k, JavaScript
/// `U(0, 100 ms · 2^(k−1))`; 3 attempts each.
#[test]
fn schedule_of_the_go_and_js_sdk_defaults() {
    let o = retrysim(&["schedule", "--preset", "aws-go-v2-standard"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    assert!(
        text.contains("backoff: exponential 2s ×2, max 20s; jitter: full U(0, d); max_attempts: 3"),
        "{text}"
    );
    assert!(
        text.contains("total retry window: 6 s over 2 retries; with jitter 0 s .. 6 s"),
        "{text}"
    );
    let text = stdout(&retrysim(&["schedule", "--preset", "aws-js-v3-standard"]));
    assert!(
        text.contains(
            "backoff: exponential 100ms ×2, max 20s; jitter: full U(0, d); max_attempts: 3"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "total retry window: 300 ms (0.3 s) over 2 retries; with jitter 0 s .. 300 ms"
        ),
        "{text}"
    );
}

#[test]
fn schedule_of_a_hedging_policy_speaks_of_hedges() {
    // gRFC A6's example: 4 attempts, a hedge every 0.5 s.
    let o = retrysim(&["schedule", "--preset", "grpc-hedging"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[1].starts_with("hedging: another attempt every 500ms while none has succeeded"),
        "{text}"
    );
    assert!(lines[1].ends_with("max_attempts: 4"), "{text}");
    assert!(
        lines[1].contains("non-fatal: unavailable, aborted, internal"),
        "{text}"
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["attempt", "hedge", "delay", "cumulative"]
    );
    assert_eq!(lines.len(), 7, "{text}");
    assert_eq!(
        lines[6],
        "all 3 hedges sent within 1.5 s if no attempt answers"
    );
    assert!(!text.contains("retr"), "{text}");
    // One retry is worded as one.
    let text = stdout(&retrysim(&["schedule", "--preset", "envoy"]));
    assert!(text.contains(" over 1 retry; "), "{text}");
}

#[test]
fn schedule_csv_of_the_documented_example() {
    let o = retrysim(&[
        "schedule",
        "--backoff",
        "cloud_tasks",
        "--min-backoff",
        "10s",
        "--max-backoff",
        "300s",
        "--max-doublings",
        "3",
        "--attempts",
        "8",
        "--csv",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    let cum: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap())
        .collect();
    assert_eq!(cum, ["10", "30", "70", "150", "310", "550", "850", "1150"]);
}

#[test]
fn schedule_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "p.json",
        r#"{"name": "x", "max_attempts": "many"}"#,
    );
    for args in [
        vec!["schedule", "--preset", "nope"],
        vec!["schedule", "--policy", bad.as_str()],
        vec!["schedule", "--policy", "/nonexistent/p.json"],
        vec!["schedule", "--backoff", "exponential"],
        vec!["schedule", "--jitter", "sometimes", "--preset", "grpc"],
    ] {
        let o = retrysim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
    let o = retrysim(&["schedule", "--policy", &bad]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("p.json") && err.contains("max_attempts"),
        "{err}"
    );
    // An empty file is no policy, whatever its format (an empty TOML
    // document would read as every default).
    for name in ["empty.toml", "empty.json"] {
        let empty = write(dir.path(), name, " \n");
        let o = retrysim(&["schedule", "--policy", &empty]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(&format!("{name}: the file is empty")), "{err}");
    }
}

#[test]
fn import_gcloud_and_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let q = write(
        dir.path(),
        "q.yaml",
        "name: projects/p/locations/l/queues/orders\nretryConfig:\n  maxAttempts: 10\n  minBackoff: 0.100s\n  maxBackoff: 10s\n  maxDoublings: 5\n",
    );
    let o = retrysim(&["import", "gcloud", &q]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["policies"][0]["name"], "orders");
    assert_eq!(v["policies"][0]["max_attempts"], 10);
    assert_eq!(v["dispatcher"]["max_dispatches_per_second"], 500.0);

    let sc = write(
        dir.path(),
        "sc.json",
        r#"{"methodConfig": [{"name": [{"service": "a.B"}], "retryPolicy": {"maxAttempts": 4,
            "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"]}}],
            "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#,
    );
    let o = retrysim(&["import", "grpc", &sc]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["policies"][0]["name"], "a.B");
    assert_eq!(
        v["policies"][0]["budget"]["token_bucket"]["max_tokens"],
        10.0
    );
}

#[test]
fn import_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let y = write(dir.path(), "q.yaml", "retryConfig:\n  maxDoublings: -3\n");
    let j = write(dir.path(), "sc.json", "{\"methodConfig\": 7}");
    for args in [
        vec!["import", "gcloud", y.as_str()],
        vec!["import", "grpc", j.as_str()],
        vec!["import", "grpc", "/nonexistent/sc.json"],
    ] {
        let o = retrysim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with("error: "), "{err}");
    }
}

#[test]
fn import_errors_are_one_line_and_warnings_name_what_was_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let y = write(dir.path(), "q.yaml", "retryConfig:\n  maxAttempts: 1e9\n");
    let o = retrysim(&["import", "gcloud", &y]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: {y}:2:16: retryConfig.maxAttempts: expected a whole number, found \"1e9\"\n"
        )
    );
    // A value read, then refused, is placed the same way.
    let y = write(
        dir.path(),
        "r.yaml",
        "retryConfig:\n  maxAttempts: 3\nrateLimits:\n  maxBurstSize: 0\n",
    );
    let o = retrysim(&["import", "gcloud", &y]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("error: {y}:4:17: rateLimits.maxBurstSize: must be at least 1\n")
    );

    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/service_config.json");
    let o = retrysim(&["import", "grpc", example]);
    assert_eq!(o.status.code(), Some(0));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(
            "warning: methodConfig[0].timeout: 10s not imported: a policy has no deadline"
        ),
        "{err}"
    );
}

/// `schedule` with `args`: exit status 2 and the first line of stderr.
fn schedule_refused(args: &[&str]) -> String {
    let mut all = vec!["schedule"];
    all.extend_from_slice(args);
    let o = retrysim(&all);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    err
}

#[test]
fn schedule_cloud_tasks_takes_the_api_defaults() {
    // minBackoff 0.1 s, maxBackoff 3600 s, maxDoublings 16: the same as
    // the cloud-tasks-default preset and `import gcloud`.
    let o = retrysim(&[
        "schedule",
        "--backoff",
        "cloud_tasks",
        "--max-attempts",
        "100",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let preset = retrysim(&["schedule", "--preset", "cloud-tasks-default"]);
    let text = stdout(&o);
    assert!(
        text.contains("backoff: Cloud Tasks 100ms–1h, 16 doublings;"),
        "{text}"
    );
    // Everything after the policy's name is the preset's.
    let tail = |t: &str| t.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(tail(&text), tail(&stdout(&preset)));
    // A flag given replaces its default only.
    let o = retrysim(&[
        "schedule",
        "--backoff",
        "cloud_tasks",
        "--max-doublings",
        "2",
        "--csv",
    ]);
    let csv = stdout(&o);
    let delays: Vec<&str> = csv
        .lines()
        .skip(1)
        .take(5)
        .map(|l| l.split(',').nth(2).unwrap())
        .collect();
    assert_eq!(delays, ["0.1", "0.2", "0.4", "0.8", "1.2"]);
}

#[test]
fn schedule_png_is_replaced_whole_or_not_at_all() {
    let t = tempfile::tempdir().unwrap();
    let png = t.path().join("s.png");
    let png_arg = png.to_str().unwrap();
    let o = retrysim(&["schedule", "--preset", "grpc", "--png", png_arg]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let good = std::fs::read(&png).unwrap();
    assert!(good.len() > 4096);
    // A full disk while writing (debug-build fault injection, as in
    // tests/it/atomic_reports.rs): exit 1, the earlier file as it was, no
    // partial or temporary file left.
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["schedule", "--preset", "grpc-legacy", "--png", png_arg])
        .env("RETRYSIM_FAIL_AT", "s.png")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no space left on device"), "{err}");
    assert_eq!(std::fs::read(&png).unwrap(), good);
    let names: Vec<String> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["s.png"]);
    // A new file is not created half-way either.
    let fresh = t.path().join("new.png");
    let o = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args([
            "schedule",
            "--preset",
            "grpc",
            "--png",
            fresh.to_str().unwrap(),
        ])
        .env("RETRYSIM_FAIL_AT", "new.png")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(!fresh.exists());
    assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 1);
    // And a good write replaces the file.
    let o = retrysim(&["schedule", "--preset", "grpc-legacy", "--png", png_arg]);
    assert_eq!(o.status.code(), Some(0));
    assert_ne!(std::fs::read(&png).unwrap(), good);
}

#[test]
fn schedule_flag_problems_name_the_flag() {
    let err = schedule_refused(&["--backoff", "linear", "--initial", "1s", "--delay", "1s"]);
    assert!(
        err.starts_with("error: --delay: backoff.linear.delay: unknown field `delay`"),
        "{err}"
    );
    let err = schedule_refused(&["--backoff", "exponential", "--initial", "0s"]);
    assert_eq!(
        err,
        "error: --initial: backoff.exponential.initial: must be greater than 0\n"
    );
    let err = schedule_refused(&["--backoff", "cloud_tasks", "--max-doublings", "lots"]);
    assert!(
        err.starts_with("error: --max-doublings: backoff.cloud_tasks.max_doublings: invalid type"),
        "{err}"
    );
    // --attempts counts rows: 0 is refused, not shown as a policy without
    // retries.
    let err = schedule_refused(&["--preset", "grpc", "--attempts", "0"]);
    assert!(
        err.starts_with("error: --attempts: 0 rows would show nothing"),
        "{err}"
    );
    assert!(!err.contains("no retries"), "{err}");
    let o = retrysim(&["schedule", "--preset", "grpc", "--attempts", "0", "--csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    // A default the user did not give is named as one.
    let err = schedule_refused(&["--backoff", "cloud_tasks", "--max-backoff", "10ms"]);
    assert!(
        err.starts_with("error: --min-backoff (default 100ms): "),
        "{err}"
    );
    // Kinds are checked by clap against the policy module's list.
    let err = schedule_refused(&["--backoff", "fibonacci", "--delay", "1s"]);
    assert!(err.contains("cloud_tasks"), "lists the kinds: {err}");
}

#[test]
fn schedule_file_problems_point_into_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "p.json",
        "{\"name\": \"q\", \"max_attempts\": 4,\n \"backoff\": {\"exponential\": {\"initial\": \"0s\"}}}",
    );
    let err = schedule_refused(&["--policy", &p]);
    assert!(err.starts_with(&format!("error: {p}:2:")), "{err}");
    assert!(
        err.ends_with(": backoff.exponential.initial: must be greater than 0\n"),
        "{err}"
    );
    // A flag fixes the file's value; another breaks it, and is named.
    let o = retrysim(&["schedule", "--policy", &p, "--initial", "1s", "--csv"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).lines().nth(1).unwrap().starts_with("2,1,1,"));
    let err = schedule_refused(&["--policy", &p, "--initial", "1s", "--max", "10ms"]);
    assert!(
        err.starts_with("error: --max: backoff.exponential.max: 10ms is less than initial (1s)"),
        "{err}"
    );
}

/// `schedule --csv` of exponential 10 ms ×2 capped at `max`, with `jitter`:
/// the (min_s, max_s) of each retry.
fn next_step_ranges(max: &str, jitter: &str) -> Vec<(String, String)> {
    let o = retrysim(&[
        "schedule",
        "--backoff",
        "exponential",
        "--initial",
        "10ms",
        "--max",
        max,
        "--jitter",
        jitter,
        "--attempts",
        "10",
        "--csv",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = stdout(&o);
    let head: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (lo, hi) = (col("min_s"), col("max_s"));
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[lo].to_string(), f[hi].to_string())
        })
        .collect()
}

#[test]
fn schedule_of_next_step_shows_the_articles_ranges() {
    // Base 10 ms, cap 1 s: retry 7 from [640 ms, 1.28 s) (its nominal
    // 640 ms does not exceed the cap, and the upper end is not capped);
    // retry 8's 1.28 s exceeds it: exactly 1 s.
    let r = next_step_ranges("1s", "next_step");
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(r[0], pair("0.01", "0.02"));
    assert_eq!(r[6], pair("0.64", "1.28"));
    assert_eq!(r[7], pair("1", "1"));
    // Cap 1.28 s: retry 8 does not exceed it, so [1.28 s, 2.56 s).
    let r = next_step_ranges("1.28s", "next_step");
    assert_eq!(r[7], pair("1.28", "2.56"));
    assert_eq!(r[8], pair("1.28", "1.28"));
    // The capped variant keeps both ends under the cap.
    let r = next_step_ranges("1s", "next_step_capped");
    assert_eq!(r[6], pair("0.64", "1"));
    assert_eq!(r[7], pair("1", "1"));
}

/// `schedule --png` never draws over the policy file it reads.
#[test]
fn schedule_png_over_its_own_policy_file_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let policy = t.path().join("p.json");
    let text = r#"{"name": "p", "max_attempts": 3}"#;
    std::fs::write(&policy, text).unwrap();
    let p = policy.to_str().unwrap();
    let o = retrysim(&["schedule", "--policy", p, "--png", p]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is an input of this command"), "{err}");
    assert_eq!(std::fs::read_to_string(&policy).unwrap(), text);
}
