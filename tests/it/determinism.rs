//! The built binary writes byte-identical reports whatever the thread
//! count, and run after run: every file but `perf.json` (`docs/model.md`,
//! "Runs and determinism").

use std::path::{Path, PathBuf};
use std::process::Command;

/// A few seconds of storm, three policies: small enough to run four times.
const SCENARIO: &str = r#"{
  "name": "det",
  "description": "A 2 s outage in a 10 s run",
  "seed": 3, "duration": "10s", "bin": "100ms",
  "traffic": {"rate": 2000, "clients": 500, "attempt_timeout": "500ms", "deadline": "5s"},
  "backend": {"workers": 20, "service_time": {"exponential": {"mean": "5ms"}},
              "queue_limit": 500},
  "faults": [{"outage": {"start": "3s", "duration": "2s", "flush": true}}],
  "policies": [
    {"name": "no-jitter", "max_attempts": 6, "backoff": {"constant": {"delay": "100ms"}}},
    {"name": "jitter-10", "max_attempts": 6, "backoff": {"constant": {"delay": "100ms"}},
     "jitter": {"proportional": 0.1}},
    {"name": "full", "max_attempts": 6,
     "backoff": {"exponential": {"initial": "100ms", "multiplier": 2, "max": "2s"}},
     "jitter": "full"}
  ],
  "report": {"stable_for": "1s"}
}"#;

const FILES: [&str; 7] = [
    "timeseries.csv",
    "summary.csv",
    "summary.json",
    "replications.csv",
    "load.png",
    "recovery.png",
    "report.html",
];

/// A database outage under a three-tier chain, retries at every layer
/// against retries at the top only (random service times and jitter).
const TIERS: &str = r#"{
  "name": "det",
  "seed": 5, "duration": "8s", "bin": "100ms",
  "traffic": {"rate": 500, "clients": 100, "attempt_timeout": "400ms"},
  "backend": {"name": "front", "workers": 30, "service_time": {"exponential": {"mean": "2ms"}},
              "queue_limit": 200},
  "downstream": [
    {"name": "mid", "attempt_timeout": "150ms", "calls": 2,
     "backend": {"workers": 40, "service_time": {"exponential": {"mean": "2ms"}}}},
    {"name": "db", "attempt_timeout": "50ms", "propagate_cancel": true,
     "backend": {"workers": 10, "service_time": {"exponential": {"mean": "5ms"}}, "queue_limit": 50}}
  ],
  "faults": [{"outage": {"start": "2s", "duration": "2s", "tier": "db"}},
             {"errors": {"start": "5s", "duration": "1s", "rate": 0.3, "tier": "mid"}}],
  "policies": [
    {"name": "every", "max_attempts": 3, "backoff": {"constant": {"delay": "20ms"}},
     "jitter": "full"},
    {"name": "top", "max_attempts": 3, "backoff": {"constant": {"delay": "20ms"}},
     "downstream_policy": {"max_attempts": 1}}
  ],
  "report": {"stable_for": "1s"}
}"#;

fn run(scenario: &Path, out: &Path, threads: &str) -> PathBuf {
    let st = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["run", "--quiet", "--replications", "3", "-o"])
        .arg(out)
        .arg(scenario)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap();
    crate::support::assert_ok(&st);
    let dir = out.join("det");
    let perf = std::fs::read_to_string(dir.join("perf.json")).unwrap();
    assert!(perf.contains(&format!("\"threads\": {threads}")), "{perf}");
    dir
}

#[test]
fn reports_are_identical_across_thread_counts_and_runs() {
    identical(SCENARIO, &FILES);
}

#[test]
fn multi_tier_reports_are_identical_across_thread_counts_and_runs() {
    let mut files = FILES.to_vec();
    files.push("tiers.csv");
    identical(TIERS, &files);
}

fn identical(text: &str, files: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = tmp.path().join("det.json");
    std::fs::write(&scenario, text).unwrap();
    let dirs: Vec<PathBuf> = [("a", "1"), ("b", "2"), ("c", "1"), ("d", "2")]
        .into_iter()
        .map(|(name, threads)| run(&scenario, &tmp.path().join(name), threads))
        .collect();
    for &f in files {
        let first = std::fs::read(dirs[0].join(f)).unwrap();
        assert!(!first.is_empty(), "{f} is empty");
        for d in &dirs[1..] {
            let other = std::fs::read(d.join(f)).unwrap();
            assert!(
                first == other,
                "{f} differs between {} and {}",
                dirs[0].display(),
                d.display()
            );
        }
    }
}
