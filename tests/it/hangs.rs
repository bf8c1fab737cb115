//! Scenarios whose simulated time stops advancing (every step of a retry
//! loop takes no time) end within seconds with a clear error instead of
//! hanging, and `check` warns about them before anything runs.

use retrysim::model::run::{simulate, RunError};
use retrysim::scenario::Scenario;
use std::process::Command;
use std::time::{Duration, Instant};

/// Retry immediately, forever, into a full waiting room that rejects at
/// no cost.
const RETRY_FOREVER: &str = r#"{"name": "forever", "duration": "60s",
  "traffic": {"rate": 200},
  "backend": {"workers": 1, "queue_limit": 2,
              "service_time": {"constant": {"value": "1s"}}},
  "policies": [{"name": "while-true", "max_attempts": 0,
                "backoff": {"constant": {"delay": "0s"}}}]}"#;

/// Closed-loop clients with no think time during an outage that fails
/// attempts at once.
const CLOSED_OUTAGE: &str = r#"{"name": "closed", "duration": "60s",
  "traffic": {"mode": "closed", "clients": 50},
  "backend": {"workers": 5, "service_time": {"constant": {"value": "10ms"}}},
  "faults": [{"outage": {"start": "5s", "duration": "10s"}}],
  "policies": [{"name": "once"}]}"#;

fn stalls(text: &str) -> (RunError, Duration) {
    let s = Scenario::from_json(text).unwrap();
    let started = Instant::now();
    let e = simulate(&s, 0, 0).expect_err("time stops");
    (e, started.elapsed())
}

#[test]
fn retrying_forever_into_instant_rejections_stops_with_the_cause() {
    let (e, took) = stalls(RETRY_FOREVER);
    let RunError::Stalled { at_s, why, .. } = &e else {
        panic!("{e}");
    };
    assert!(*at_s < 1.0, "the queue fills within the first second: {e}");
    assert!(
        why.contains("no backoff") && why.contains("reject_cost"),
        "{why}"
    );
    assert!(took < Duration::from_secs(30), "{took:?}");
}

#[test]
fn closed_clients_without_think_time_stop_during_an_outage() {
    let (e, _) = stalls(CLOSED_OUTAGE);
    let RunError::Stalled { at_s, why, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(*at_s, 5.0, "the outage starts at 5 s");
    assert!(why.contains("think_time"), "{why}");
}

#[test]
fn closed_clients_behind_an_open_breaker_stop_too() {
    let text = CLOSED_OUTAGE.replace(
        r#"{"name": "once"}"#,
        r#"{"name": "breaker", "circuit_breaker": {"failure_rate": 0.5}}"#,
    );
    let (e, _) = stalls(&text);
    assert!(matches!(e, RunError::Stalled { .. }), "{e}");
    assert!(e.to_string().contains("breaker"), "{e}");
}

#[test]
fn any_delay_lets_time_pass() {
    for text in [
        RETRY_FOREVER.replace(
            r#""rate": 200"#,
            r#""rate": 200, "network_delay": {"constant": {"value": "1ms"}}"#,
        ),
        RETRY_FOREVER.replace(
            r#""queue_limit": 2"#,
            r#""queue_limit": 2, "reject_cost": "1us""#,
        ),
        CLOSED_OUTAGE.replace(
            r#""clients": 50"#,
            r#""clients": 50, "think_time": {"constant": {"value": "1ms"}}"#,
        ),
    ] {
        let short = text.replace(r#""duration": "60s""#, r#""duration": "6s""#);
        let s = Scenario::from_json(&short).unwrap();
        let r = simulate(&s, 0, 0).expect("time passes");
        assert!(r.summary().requests > 0);
    }
}

#[test]
fn the_command_line_exits_2_and_check_warns_first() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("forever.json");
    std::fs::write(&file, RETRY_FOREVER).unwrap();
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let check = Command::new(bin).arg("check").arg(&file).output().unwrap();
    assert!(check.status.success());
    let warned = String::from_utf8_lossy(&check.stderr);
    assert!(warned.contains("time may stop advancing"), "{warned}");
    // The guard refuses it before it starts, naming the mechanism; forced,
    // the run stops when time stops.
    let run = Command::new(bin)
        .args(["run", "-q", "--no-plots", "-o"])
        .arg(dir.path().join("out"))
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("no time passing"), "{err}");
    let run = Command::new(bin)
        .args(["run", "-q", "--no-plots", "--force", "-o"])
        .arg(dir.path().join("out"))
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("stopped advancing"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A batch estimated to need far more memory or time than a machine has is
/// refused before anything runs, with the estimate and the way out; the
/// same batch at a coarser bin runs.
#[test]
fn huge_batches_are_refused_before_they_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.json");
    std::fs::write(
        &file,
        r#"{"name": "huge", "duration": "2h", "bin": "1ms",
  "traffic": {"rate": 10},
  "backend": {"workers": 5, "service_time": {"constant": {"value": "10ms"}}},
  "policies": [{"name": "a"}, {"name": "b"}]}"#,
    )
    .unwrap();
    let bin = env!("CARGO_BIN_EXE_retrysim");
    let out = dir.path().join("out");
    let started = Instant::now();
    let run = Command::new(bin)
        .args(["run", "-q", "--no-plots", "--replications", "100", "-o"])
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(run.status.code(), Some(2));
    let err = String::from_utf8_lossy(&run.stderr);
    for needle in [
        "huge: this would need about",
        "GiB of memory",
        "--force",
        "bin",
    ] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    assert!(!out.join("huge").exists(), "nothing is written");
    // `check` warns of what `run` refuses: at one replication, a million
    // requests a second for two hours, so the advice is not fewer
    // replications.
    let check = Command::new(bin)
        .args(["check", "--set", "traffic.rate=1000000"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(0));
    let warned = String::from_utf8_lossy(&check.stderr);
    assert!(
        warned.contains("warning: `run` refuses it: this would need about"),
        "{warned}"
    );
    assert!(!warned.contains("replications"), "{warned}");
    let quiet = Command::new(bin).arg("check").arg(&file).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("refuses"),
        "one replication of two hours fits"
    );
    // Sweeps keep no time series: the same scenario is not refused for
    // memory, and a coarse bin runs.
    let ok = Command::new(bin)
        .args(["run", "-q", "--no-plots", "--set", "bin=10s", "--set"])
        .arg("duration=60s")
        .arg("-o")
        .arg(&out)
        .arg(&file)
        .output()
        .unwrap();
    crate::support::assert_ok(&ok);
}

/// The guard refuses only what is really too big: every shipped scenario
/// passes it with ten replications, except the example's, whose no-jitter
/// storm lasts 25 minutes of its 30 (ten replications: over an hour on two
/// threads), which passes with one.
#[test]
fn shipped_scenarios_pass_the_resource_guard() {
    use retrysim::runner::{estimate::estimate, jobs_of};
    let mut seen = 0;
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "toml")
        ) {
            continue;
        }
        let s = retrysim::scenario::load(&path, &[]).unwrap();
        let replications = if s.spec().name == "example" { 1 } else { 10 };
        let e = estimate(&jobs_of(&s, replications), true, 2);
        assert!(!e.too_big(), "{}: {e:?}", path.display());
        seen += 1;
    }
    assert!(seen >= 5);
}

/// The engine benchmark's runs (`benches/scenarios/`, the peer storm) are
/// valid scenarios: the benchmarks are not run in CI, so a change to the
/// scenario format that broke them would otherwise go unseen until
/// someone measured.
#[test]
fn the_benchmark_scenarios_load() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(root.join("benches/scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.push(root.join("benches/peer/storm.json"));
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        // The error names the file, line and field.
        retrysim::scenario::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Asking for a huge thread pool does not stall a small run: the pool is
/// cut to the cap (or the core count, if larger) with a warning.
#[test]
fn a_huge_thread_count_is_cut_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RAYON_NUM_THREADS", "100000")
        .args(["run", "tests/good/minimal.json", "--no-plots", "-o"])
        .arg(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let most = retrysim::cli::MAX_THREADS.max(cores);
    assert!(
        err.contains(&format!(
            "warning: RAYON_NUM_THREADS=100000: using {most} threads"
        )),
        "{err}"
    );
    let perf = std::fs::read_to_string(dir.path().join("minimal/perf.json")).unwrap();
    let perf: serde_json::Value = serde_json::from_str(&perf).unwrap();
    assert_eq!(perf["threads"], most);

    // A value that is no number is not silently ignored.
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RAYON_NUM_THREADS", "four")
        .args(["check", "tests/good/minimal.json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: RAYON_NUM_THREADS=\"four\" is not a number of threads"),
        "{err}"
    );
}
