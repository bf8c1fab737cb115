//! The resource guard's estimate against what runs measure: on the storm
//! catalogue (`tests/storms/`: an outage over the whole run, overload with
//! no fault, a queue with no backoff, retries inside a tier, fan-out, a
//! budget, a closed loop, timeouts under a slowdown), the estimated events
//! are within 3× of the events the run processes, and the cases the guard
//! must stop are refused in seconds with the mechanism to change.

use retrysim::model::run::simulate;
use retrysim::runner::estimate::estimate;
use retrysim::runner::jobs_of;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Estimated and measured events of every policy of one scenario file
/// (one replication each).
fn events(path: &Path) -> (u64, u64) {
    let s = retrysim::scenario::load(path, &[]).unwrap();
    let e = estimate(&jobs_of(&s, 1), true, 1);
    assert!(!e.too_big(), "{}: {e:?}", path.display());
    let measured = (0..s.policies().len())
        .map(|i| simulate(&s, i, 0).unwrap().events)
        .sum();
    (e.events, measured)
}

#[test]
fn the_estimate_is_within_3x_of_the_events_on_the_storm_catalogue() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/storms"));
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 8);
    let mut table = String::new();
    let mut worst: f64 = 1.0;
    for path in &files {
        let (estimated, measured) = events(path);
        let ratio = estimated as f64 / measured.max(1) as f64;
        table += &format!(
            "{}: estimated {estimated}, measured {measured}, ratio {ratio:.2}\n",
            path.file_stem().unwrap().to_string_lossy()
        );
        worst = worst.max(ratio).max(1.0 / ratio);
    }
    // The shipped scenarios' estimates, for the README's table (their
    // runs take too long for the test suite).
    let shipped = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios"));
    let mut names: Vec<_> = std::fs::read_dir(shipped)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let Ok(s) = retrysim::scenario::load(&path, &[]) else {
            continue;
        };
        let e = estimate(&jobs_of(&s, 1), true, 1);
        table += &format!(
            "shipped {}: estimated {} events, {} bytes\n",
            s.spec().name,
            e.events,
            e.bytes
        );
    }
    eprint!("{table}");
    assert!(worst <= 3.0, "off by {worst:.2}×:\n{table}");
}

/// Storms nothing bounds are refused by `run` in seconds, and `check`
/// says so beforehand, naming what to change.
#[test]
fn unbounded_storms_are_refused_with_the_mechanism() {
    let cases = [
        // An outage over the whole run, unlimited retries 10 µs apart.
        (
            r#""traffic": {"rate": 100}, "faults": [{"outage": {"start": "0s", "duration": "60s"}}],
               "policies": [{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "10us"}}}]"#,
            "events",
        ),
        // Overload with no fault: 500/s on 400/s, unlimited 10 µs retries.
        (
            r#""traffic": {"rate": 500}, "backend": {"workers": 4, "queue_limit": 10,
                 "service_time": {"constant": {"value": "10ms"}}},
               "policies": [{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "10us"}}}]"#,
            "events",
        ),
        // A zero-time loop inside a tier.
        (
            r#""traffic": {"rate": 10},
               "downstream": [{"name": "db", "backend": {"workers": 5, "service_time": {"constant": {"value": "1ms"}}},
                 "policy": {"name": "db", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}}}],
               "faults": [{"outage": {"start": "1s", "duration": "1s", "tier": "db"}}],
               "policies": [{"name": "p"}]"#,
            "calls to tier \"db\"",
        ),
        // Three tiers of a thousand calls each, with the workers to serve
        // them all at once: 10⁹ calls held for one request.
        (
            r#""traffic": {"rate": 1},
               "downstream": [{"name": "a", "calls": 1000, "backend": {"workers": 1000000, "service_time": {"constant": {"value": "1ms"}}}},
                              {"name": "b", "calls": 1000, "backend": {"workers": 1000000, "service_time": {"constant": {"value": "1ms"}}}},
                              {"name": "c", "calls": 1000, "backend": {"workers": 1000000, "service_time": {"constant": {"value": "1ms"}}}}],
               "policies": [{"name": "p"}]"#,
            "GiB of memory",
        ),
        // A queue whose burst lets a zero-time retry loop run 10⁹ times at
        // one instant through a 100 ms outage.
        (
            r#""traffic": {"rate": 100},
               "dispatcher": {"max_dispatches_per_second": 1e9, "max_burst_size": 1000000000},
               "faults": [{"outage": {"start": "2s", "duration": "100ms"}}],
               "policies": [{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}}]"#,
            "max_burst_size 1000000000",
        ),
    ];
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let dir = tempfile::tempdir().unwrap();
    for (i, (body, needle)) in cases.iter().enumerate() {
        let body = if body.contains("\"backend\": {\"workers\": 4") {
            body.to_string()
        } else {
            format!(
                r#"{body}, "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}}"#
            )
        };
        let text = format!(r#"{{"name": "storm{i}", "duration": "60s", {body}}}"#);
        let file = dir.path().join(format!("storm{i}.json"));
        std::fs::write(&file, &text).unwrap();
        let check = Command::new(bin).arg("check").arg(&file).output().unwrap();
        let warned = String::from_utf8_lossy(&check.stderr);
        assert!(
            warned.contains("`run` refuses it") && warned.contains(needle),
            "case {i}: {warned}"
        );
        let started = Instant::now();
        let run = Command::new(bin)
            .args(["run", "-q", "--no-plots", "-o"])
            .arg(dir.path().join("out"))
            .arg(&file)
            .output()
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(20), "case {i}");
        assert_eq!(run.status.code(), Some(2), "case {i}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(
            err.contains("--force") && err.contains(needle),
            "case {i}: {err}"
        );
    }
}

/// A queue at 10⁹ dispatches/s retrying at once without limit through a
/// 100 ms outage is bounded by its dispatch rate over the outage: about
/// 10⁸ attempts, tens of seconds, not refused and not unbounded.
#[test]
fn a_dispatcher_bounds_a_storm_by_its_rate() {
    let s = retrysim::scenario::Scenario::from_json(
        r#"{"name": "q", "duration": "60s", "traffic": {"rate": 100},
            "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}},
            "dispatcher": {"max_dispatches_per_second": 1e9, "max_burst_size": 1000},
            "faults": [{"outage": {"start": "1s", "duration": "100ms"}}],
            "policies": [{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}}]}"#,
    )
    .unwrap();
    let e = estimate(&jobs_of(&s, 1), true, 1);
    assert!(e.unbounded.is_none(), "{e:?}");
    assert!((1e8..1e9).contains(&(e.events as f64)), "{e:?}");
    assert!(!e.too_big(), "{e:?}");
}

#[cfg(target_os = "linux")]
/// The peak resident memory of a child process, bytes, from `wait4`
/// (only this child's, whatever else the test binary runs at the time).
#[allow(clippy::zombie_processes)] // waited for by `wait4`, below
fn peak_rss_of(cmd: &mut Command) -> u64 {
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: `rusage` is plain data filled by the kernel; the pid is our
    // own child, waited for once here (never by `Child::wait`).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // ru_maxrss is in KiB on Linux.
    usage.ru_maxrss as u64 * 1024
}

/// Per-client state is sized from the types a run allocates: 200,000
/// closed-loop clients, each with its own retry quota, adaptive rate
/// limiter and circuit breaker, take what the estimate says within 2×.
#[cfg(target_os = "linux")]
#[test]
fn per_client_state_costs_what_the_estimate_says() {
    let text = r#"{"name": "clients", "duration": "2s",
        "traffic": {"mode": "closed", "clients": 200000, "think_time": {"constant": {"value": "10s"}}},
        "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
        "policies": [{"name": "p", "preset": "aws-adaptive",
                      "circuit_breaker": {"failure_rate": 0.5}}]}"#;
    let s = retrysim::scenario::Scenario::from_json(text).unwrap();
    let e = estimate(&jobs_of(&s, 1), false, 1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clients.json");
    std::fs::write(&file, text).unwrap();
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let measured = peak_rss_of(
        Command::new(bin)
            .args(["run", "-q", "--no-plots", "-o"])
            .arg(dir.path().join("out"))
            .arg(&file),
    );
    let ratio = e.bytes as f64 / measured as f64;
    assert!(
        (0.5..=2.0).contains(&ratio),
        "estimated {} B, measured {measured} B ({ratio:.2}×)",
        e.bytes
    );
}
