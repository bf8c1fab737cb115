//! `run --trace N` on the waves scenario (a queue flushed at 5 s, constant
//! 100 ms backoff with no jitter, ±10 % and full jitter): `trace.json` is
//! valid Chrome trace-event JSON, every slice ends after it starts and
//! lies inside its request's slice, the traced requests are the same on 1
//! and 2 threads, the no-jitter requests retry at the same instants while
//! the full-jitter ones do not, and the other output files are the bytes
//! a run without `--trace` writes.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn run(dir: &Path, threads: &str, trace: bool) {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/waves.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    cmd.arg("run")
        .arg(&scenario)
        .arg("-o")
        .arg(dir)
        .args(["--no-plots", "-q"])
        .env("RAYON_NUM_THREADS", threads);
    if trace {
        cmd.args(["--trace", "5"]);
    }
    let out = cmd.output().unwrap();
    crate::support::assert_ok(&out);
}

/// Every file of `dir` but those named in `skip`, by name.
fn files(dir: &Path, skip: &[&str]) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !skip.contains(&e.file_name().to_str().unwrap()))
        .map(|e| {
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_trace_shows_the_waves_and_changes_nothing_else() {
    let t = tempfile::tempdir().unwrap();
    let (one, two, plain) = (t.path().join("1"), t.path().join("2"), t.path().join("0"));
    run(&one, "1", true);
    run(&two, "2", true);
    run(&plain, "2", false);
    let (one, two, plain) = (one.join("waves"), two.join("waves"), plain.join("waves"));
    let text = std::fs::read_to_string(one.join("trace.json")).unwrap();
    assert_eq!(
        text.as_bytes(),
        std::fs::read(two.join("trace.json")).unwrap(),
        "the trace depends on the thread count"
    );
    // Every other file is what a run without --trace writes (perf.json
    // holds wall-clock figures; the manifest lists trace.json).
    let skip = ["perf.json", "trace.json", ".retrysim-manifest"];
    assert_eq!(files(&one, &skip), files(&plain, &skip));

    let v: Value = serde_json::from_str(&text).expect("trace.json is JSON");
    let events = v["traceEvents"].as_array().expect("a traceEvents array");
    let mut requests: BTreeMap<(u64, u64), (f64, f64)> = BTreeMap::new();
    let mut processes = BTreeMap::new();
    for e in events {
        let ph = e["ph"].as_str().expect("every event has a phase");
        assert!(["X", "M", "i", "C"].contains(&ph), "{e}");
        let pid = e["pid"].as_u64().expect("a pid");
        assert!(e["tid"].as_u64().is_some(), "{e}");
        if ph == "M" && e["name"] == "process_name" {
            processes.insert(pid, e["args"]["name"].as_str().unwrap().to_string());
        }
        if ph != "M" {
            let ts = e["ts"].as_f64().expect("a time");
            assert!((0.0..=8e6).contains(&ts), "{e}");
        }
        if ph == "X" {
            let dur = e["dur"].as_f64().expect("a duration");
            assert!(dur >= 0.0, "a slice ends before it starts: {e}");
            if e["cat"] == "request" {
                let key = (pid, e["tid"].as_u64().unwrap());
                let ts = e["ts"].as_f64().unwrap();
                requests.insert(key, (ts, ts + dur));
            }
        }
    }
    assert_eq!(
        processes.values().cloned().collect::<Vec<_>>(),
        ["policy no-jitter", "policy jitter-10", "policy full-jitter"]
    );
    // Five requests per policy.
    for pid in 1..=3u64 {
        assert_eq!(requests.keys().filter(|k| k.0 == pid).count(), 5);
    }
    // Attempts and waits lie inside their request (hedge tracks aside:
    // this scenario has none).
    for e in events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] != "request")
    {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        let (from, to) = requests[&key];
        let ts = e["ts"].as_f64().unwrap();
        let end = ts + e["dur"].as_f64().unwrap();
        assert!(
            ts >= from - 1e-6 && end <= to + 1e-6,
            "{e} outside {from}..{to}"
        );
    }
    // Counters: offered load, queue length and goodput for each policy.
    for name in [
        "offered load (attempts/s)",
        "queue length",
        "goodput (req/s)",
    ] {
        for pid in 1..=3u64 {
            assert!(events
                .iter()
                .any(|e| e["ph"] == "C" && e["name"] == name && e["pid"] == pid));
        }
    }
    // The retries of different traced requests sent at the very same
    // nanosecond: the flush's wave without jitter, none with full jitter.
    let shared = |pid: u64| {
        let mut at: BTreeMap<String, std::collections::BTreeSet<u64>> = BTreeMap::new();
        for e in events
            .iter()
            .filter(|e| e["pid"] == pid && e["cat"] == "attempt" && e["name"] != "attempt 1")
        {
            at.entry(e["ts"].to_string())
                .or_default()
                .insert(e["tid"].as_u64().unwrap());
        }
        at.values().filter(|tids| tids.len() > 1).count()
    };
    assert!(shared(1) > 0, "no-jitter retries are synchronized");
    assert_eq!(shared(3), 0, "full-jitter retries are spread");
}
