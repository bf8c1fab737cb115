//! `retrysim map`, ranges and batch-system shards end to end, on short
//! copies of the HotOS '21 toy: range syntax and its errors, the toy's
//! cells on either side of the cliff, and shards picked through
//! `JOB_COMPLETION_INDEX` / `SLURM_ARRAY_TASK_ID` merging byte for byte
//! into the unsharded output.

use std::path::Path;
use std::process::{Command, Output};

const TOY: &str = "scenarios/hotos21-toy.json";

fn retrysim(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    cmd.args(args)
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("SLURM_ARRAY_TASK_MIN")
        .env_remove("SLURM_ARRAY_TASK_COUNT");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

/// The rows of a CSV as maps from column name to cell.
fn rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn ranges_expand_in_map_and_sweep_and_bad_ones_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "sweep");
    ok(&retrysim(
        &[
            "sweep",
            TOY,
            "--set",
            "traffic.rate=100..140:3",
            "--set",
            "faults.0.duration=5s..10s:2",
            "--set",
            "duration=60s",
            "--policy",
            "no-retry",
            "--seed",
            "3",
            "-o",
            &out,
            "-q",
        ],
        &[],
    ));
    let got: Vec<(String, String, String)> = rows(&t.path().join("sweep/sweep.csv"))
        .into_iter()
        .map(|r| {
            (
                r["traffic.rate"].clone(),
                r["faults.0.duration"].clone(),
                r["policy"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("100", "5s"),
        ("100", "10s"),
        ("120", "5s"),
        ("120", "10s"),
        ("140", "5s"),
        ("140", "10s"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string(), "no-retry".to_string()))
    .collect();
    assert_eq!(got, want);

    let bad = p(t.path(), "bad");
    for (x, y, why) in [
        ("traffic.rate=100..300", "faults.0.duration=10s", "A..B:N"),
        (
            "traffic.rate=100..x:3",
            "faults.0.duration=10s",
            "is not a number",
        ),
        (
            "traffic.rate=100..300:0",
            "faults.0.duration=10s",
            "whole number",
        ),
        (
            "traffic.rate=100",
            "faults.0.duration=2..60s:3",
            "both ends",
        ),
        (
            "traffic.rate=100",
            "faults.0.duration=-1s..2s:2",
            "negative",
        ),
        (
            "traffic.rate=100,100",
            "faults.0.duration=10s",
            "given twice",
        ),
        ("traffic.rate=100", "traffic.rate=200", "two different"),
    ] {
        let o = retrysim(&["map", TOY, "--x", x, "--y", y, "-o", &bad], &[]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{x} {y}: {err}");
        assert!(err.contains(why), "{x} {y}: {err}");
    }
    let o = retrysim(
        &["sweep", TOY, "--set", "traffic.rate=1..2:1", "-o", &bad],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("N >= 2"));
}

/// A one-row map of the toy's `retry-once` at the loads `rates`: a 10 s
/// stall at 15 s in a 110 s run, as in tests/it/story_hotos.rs, every
/// cell with `reps` replications; `extra` flags follow.
fn retry_once_row(rates: &str, reps: &str, extra: &[&str], out: &str) {
    let x = format!("traffic.rate={rates}");
    let mut args = vec![
        "map",
        TOY,
        "--x",
        &x,
        "--y",
        "faults.0.duration=10s",
        "--set",
        "duration=110s",
        "--set",
        "faults.0.start=15s",
        "--policy",
        "retry-once",
        "--replications",
        reps,
        "--no-refine",
        "-o",
        out,
        "-q",
    ];
    args.extend_from_slice(extra);
    ok(&retrysim(&args, &[]));
}

#[test]
fn the_toy_recovers_at_120_qps_and_collapses_at_200() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "map");
    retry_once_row("120,200", "3", &[], &out);
    let header = std::fs::read_to_string(t.path().join("map/map.csv")).unwrap();
    assert!(header.starts_with(
        "policy,x,y,replications,recovered_share,median_recovery_s,recovered,degraded,undetermined,"
    ));
    let r = rows(&t.path().join("map/map.csv"));
    assert_eq!(r.len(), 2);
    let (low, high) = (&r[0], &r[1]);
    assert_eq!((low["x"].as_str(), low["y"].as_str()), ("120", "10s"));
    assert_eq!(low["replications"], "3");
    assert_eq!(low["recovered"], "3", "{low:?}");
    assert_eq!(low["recovered_share"], "1");
    assert!(low["median_recovery_s"].parse::<f64>().unwrap() < 30.0);
    assert_eq!(high["x"], "200");
    assert_eq!(high["degraded"], "3", "{high:?}");
    assert_eq!(high["recovered_share"], "0");
    assert_eq!(high["median_recovery_s"], "");
    // The scenario's own point (280 QPS, 10 s) is recorded for the marker.
    let m = map_json(t.path().join("map").to_str().unwrap());
    assert_eq!(m["operating_point"]["x"], "280");
    assert_eq!(m["operating_point"]["y"], "10s");
    let png = image::open(t.path().join("map/map.png")).unwrap();
    assert!(png.width() >= 900);
}

/// A 3 × 3 map across the toy's cliff with refinement (2 coarse
/// replications, 4 near the boundary).
fn small_map(extra: &[&str], out: &str, env: &[(&str, &str)]) {
    let mut args = vec![
        "map",
        TOY,
        "--x",
        "traffic.rate=120..180:3",
        "--y",
        "faults.0.duration=5s..15s:3",
        "--set",
        "duration=60s",
        "--set",
        "faults.0.start=10s",
        "--replications",
        "4",
        "-o",
        out,
        "-q",
    ];
    args.extend_from_slice(extra);
    ok(&retrysim(&args, env));
}

/// `map.csv`, `map.json` and `map.png` are byte-identical in folders `a`
/// and `b`.
fn assert_same_files(a: &str, b: &str) {
    for f in ["map.csv", "map.json", "map.png"] {
        let x = std::fs::read(Path::new(a).join(f)).unwrap();
        let y = std::fs::read(Path::new(b).join(f)).unwrap();
        assert!(x == y, "{f} differs");
    }
}

/// The `map.json` in folder `dir`.
fn map_json(dir: &str) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(Path::new(dir).join("map.json")).unwrap()).unwrap()
}

#[test]
fn a_map_is_the_same_on_one_thread_and_on_three() {
    // The cells of a column share their runs' part before the stall:
    // however the groups and runs fall on the threads, every file is the
    // same.
    let t = tempfile::tempdir().unwrap();
    let (one, three) = (p(t.path(), "one"), p(t.path(), "three"));
    small_map(&[], &one, &[("RAYON_NUM_THREADS", "1")]);
    small_map(&[], &three, &[("RAYON_NUM_THREADS", "3")]);
    assert_same_files(&one, &three);
    assert_eq!(map_json(&one)["recover_within_s"], 60);
}

#[test]
fn a_recovery_after_the_deadline_is_not_a_recovery() {
    // At 120 QPS the toy recovers from a 10 s stall, a few seconds after
    // it: within 1 min, but not within 1 ms.
    let t = tempfile::tempdir().unwrap();
    let cell = |within: &str, out: &str| {
        retry_once_row("120", "2", &["--recover-within", within], out);
        rows(&Path::new(out).join("map.csv")).remove(0)
    };
    let late = cell("1ms", &p(t.path(), "ms"));
    let soon = cell("1m", &p(t.path(), "m"));
    let any = cell("none", &p(t.path(), "none"));
    assert!(late["median_recovery_s"].is_empty(), "{late:?}");
    assert_eq!(
        (late["recovered"].as_str(), late["degraded"].as_str()),
        ("0", "2")
    );
    assert_eq!(soon["recovered"], "2", "{soon:?}");
    assert!(soon["median_recovery_s"].parse::<f64>().unwrap() > 0.001);
    assert_eq!(any["recovered"], "2");
    assert_eq!(any["median_recovery_s"], soon["median_recovery_s"]);
}

#[test]
fn shards_from_job_completion_index_merge_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let all = p(t.path(), "all");
    small_map(&[], &all, &[]);
    let parts = p(t.path(), "parts");
    for i in ["0", "1", "2"] {
        small_map(&["--shards", "3"], &parts, &[("JOB_COMPLETION_INDEX", i)]);
    }
    for i in 1..=3 {
        let dir = Path::new(&parts).join(format!("shard-{i}-of-3"));
        assert!(dir.join("map.csv").exists(), "{}", dir.display());
        assert!(!dir.join("map.png").exists());
    }
    let merged = p(t.path(), "merged");
    ok(&retrysim(&["merge", &parts, "-o", &merged, "-q"], &[]));
    assert_same_files(&all, &merged);
    // Refinement spent the extra replications on some cells only.
    let m = map_json(&all);
    let (runs, full) = (
        m["runs"].as_u64().unwrap(),
        m["full_runs"].as_u64().unwrap(),
    );
    assert_eq!(full, 9 * 3 * 4);
    assert!(runs < full && runs > 9 * 3 * 2, "{runs} of {full}");
    let reps: Vec<String> = rows(&Path::new(&all).join("map.csv"))
        .into_iter()
        .map(|r| r["replications"].clone())
        .collect();
    assert!(reps.contains(&"2".to_string()) && reps.contains(&"4".to_string()));
    // Without refinement, the same cells get 4 everywhere.
    let plain = p(t.path(), "plain");
    small_map(&["--no-refine"], &plain, &[]);
    let full_rows = rows(&Path::new(&plain).join("map.csv"));
    assert!(full_rows.iter().all(|r| r["replications"] == "4"));
    // A missing shard, or an index past the last, is an error.
    let o = retrysim(
        &[
            "merge",
            &Path::new(&parts).join("shard-1-of-3").display().to_string(),
            "-o",
            &p(t.path(), "bad"),
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing map shards 2/3, 3/3"));
    // A shard's map.csv with a row given twice, or cut short, is refused.
    let csv = Path::new(&parts).join("shard-2-of-3").join("map.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let first_row = text.lines().nth(1).unwrap();
    // Without its last row.
    let cut = &text[..text.trim_end().rfind('\n').unwrap() + 1];
    // A row of shard 1's block copied in: shard 2's file and line are
    // named, and shard 1 as the cell's own.
    let shard1_csv = Path::new(&parts).join("shard-1-of-3").join("map.csv");
    let shard1_text = std::fs::read_to_string(&shard1_csv).unwrap();
    let copied = shard1_text.lines().nth(1).unwrap();
    let line = text.lines().count() + 1;
    let foreign = format!("shard-2-of-3: map.csv line {line} is the row for policy");
    for (edited, needle) in [
        (format!("{text}{first_row}\n"), "more than one row"),
        (cut.to_string(), "cut short"),
        (format!("{text}{copied}\n"), foreign.as_str()),
        (
            format!("{text}{copied}\n"),
            "a cell of shard 1/3, not of this shard (2/3)",
        ),
    ] {
        std::fs::write(&csv, edited).unwrap();
        let o = retrysim(&["merge", &parts, "-o", &p(t.path(), "bad")], &[]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{err}");
    }
    std::fs::write(&csv, text).unwrap();
    // An output directory that is an input, or would become one of its
    // shards, is refused before anything is written.
    let shard1 = Path::new(&parts).join("shard-1-of-3");
    let before = std::fs::read(shard1.join("map.json")).unwrap();
    for (out, needle) in [
        (parts.clone(), "which holds the shards being merged"),
        (p(Path::new(&parts), "merged"), "is inside"),
        (shard1.display().to_string(), "is the shard"),
    ] {
        let o = retrysim(&["merge", &parts, "-o", &out], &[]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{err}");
        assert!(err.contains("choose another output directory"), "{err}");
    }
    assert!(!Path::new(&parts).join("map.csv").exists());
    assert!(!Path::new(&parts).join("merged").exists());
    // A shard index past the count in map.json is named as such.
    let json = String::from_utf8(before.clone()).unwrap();
    let edited = json.replacen("\"index\": 1", "\"index\": 99", 1);
    assert_ne!(edited, json);
    std::fs::write(shard1.join("map.json"), edited).unwrap();
    let o = retrysim(&["merge", &parts, "-o", &p(t.path(), "bad")], &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("map.json: shard.index 99 is above shard.count 3"),
        "{err}"
    );
    std::fs::write(shard1.join("map.json"), before).unwrap();
    let o = retrysim(
        &[
            "map",
            TOY,
            "--x",
            "traffic.rate=100",
            "--y",
            "faults.0.duration=5s",
            "--shards",
            "3",
            "-o",
            &parts,
        ],
        &[("JOB_COMPLETION_INDEX", "3")],
    );
    assert_eq!(o.status.code(), Some(2));
    let o = retrysim(
        &[
            "map",
            TOY,
            "--x",
            "traffic.rate=100",
            "--y",
            "faults.0.duration=5s",
            "--shards",
            "3",
            "-o",
            &parts,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("JOB_COMPLETION_INDEX"));
    // More shards than cells: the extra ones would run nothing and the
    // merge would wait for them.
    let o = retrysim(
        &[
            "map",
            TOY,
            "--x",
            "traffic.rate=100,200,300",
            "--y",
            "faults.0.duration=5s,10s,15s",
            "--shard",
            "2/10",
            "-o",
            &parts,
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("10 shards for 9 cells: use at most 9"),
        "{err}"
    );
}

#[test]
fn sweep_shards_from_a_slurm_array_merge_like_numbered_ones() {
    let t = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str], out: &str, env: &[(&str, &str)]| {
        let mut args = vec![
            "sweep",
            TOY,
            "--set",
            "traffic.rate=120..200:5",
            "--set",
            "duration=60s",
            "-q",
            "-o",
            out,
        ];
        args.extend_from_slice(extra);
        ok(&retrysim(&args, env));
    };
    let all = p(t.path(), "all");
    sweep(&[], &all, &[]);
    // A 1-based array (--array=1-2).
    let parts = p(t.path(), "parts");
    for id in ["1", "2"] {
        sweep(
            &["--shards", "2"],
            &parts,
            &[
                ("SLURM_ARRAY_TASK_ID", id),
                ("SLURM_ARRAY_TASK_MIN", "1"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ],
        );
    }
    let merged = p(t.path(), "merged");
    ok(&retrysim(&["merge", &parts, "-o", &merged, "-q"], &[]));
    for f in ["sweep.csv", "sweep.json"] {
        let a = std::fs::read(Path::new(&all).join(f)).unwrap();
        let b = std::fs::read(Path::new(&merged).join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
}

/// A field the file lacks can come from an axis, as in `sweep`: every cell
/// then has it, and the map has no operating point to mark (the file
/// states none). A field missing from every cell is still an error.
#[test]
fn an_axis_supplies_a_field_the_file_lacks() {
    let t = tempfile::tempdir().unwrap();
    let mut toy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(TOY).unwrap()).unwrap();
    toy.as_object_mut().unwrap().remove("duration");
    let file = p(t.path(), "no-duration.json");
    std::fs::write(&file, serde_json::to_string_pretty(&toy).unwrap()).unwrap();
    let out = p(t.path(), "map");
    let args = |x: &'static str| {
        vec![
            "map".to_string(),
            file.clone(),
            "--x".into(),
            x.into(),
            "--y".into(),
            "traffic.rate=120,180".into(),
            "--set".into(),
            "faults.0.start=5s".into(),
            "--replications".into(),
            "1".into(),
            "--no-refine".into(),
            "--no-plots".into(),
            "-o".into(),
            out.clone(),
            "-q".into(),
        ]
    };
    let run = |x| {
        let a = args(x);
        retrysim(&a.iter().map(String::as_str).collect::<Vec<_>>(), &[])
    };
    ok(&run("duration=30s,40s"));
    let cells = rows(&Path::new(&out).join("map.csv"));
    assert_eq!(cells.len(), 4 * 3, "2 × 2 cells, three policies");
    let manifest = map_json(&out);
    assert_eq!(manifest["scenario"], "hotos21-toy");
    assert!(manifest["operating_point"]["x"].is_null());
    assert!(manifest["operating_point"]["y"].is_null());

    let o = run("bin=1s,2s");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("missing field `duration`"), "{err}");
}

/// A one-policy scenario that runs in milliseconds, with a fault to
/// recover from.
const QUICK: &str = r#"{"name":"quick","duration":"20s","traffic":{"rate":100,"clients":50,"attempt_timeout":"1s"},"backend":{"workers":5,"service_time":{"exponential":{"mean":"10ms"}},"queue_limit":100},"faults":[{"outage":{"start":"5s","duration":"3s"}}],"policies":[{"name":"p","max_attempts":3,"backoff":{"exponential":{"initial":"100ms","multiplier":2,"max":"1s"}},"jitter":"full"}]}"#;

#[test]
fn merge_checks_every_cell_and_size_of_map_shards() {
    let t = tempfile::tempdir().unwrap();
    let scenario = t.path().join("quick.json");
    std::fs::write(&scenario, QUICK).unwrap();
    let parts = [p(t.path(), "m1"), p(t.path(), "m2")];
    for (i, out) in parts.iter().enumerate() {
        ok(&retrysim(
            &[
                "map",
                scenario.to_str().unwrap(),
                "--x",
                "traffic.rate=100,200",
                "--y",
                "faults.0.duration=1s,2s",
                "--replications",
                "2",
                "--shard",
                &format!("{}/2", i + 1),
                "-o",
                out,
                "-q",
            ],
            &[],
        ));
    }
    let bad = p(t.path(), "bad");
    let merge = || retrysim(&["merge", &parts[0], &parts[1], "-o", &bad, "-q"], &[]);
    let refused = |file: &Path, edited: String, needles: &[&str]| {
        let before = std::fs::read(file).unwrap();
        std::fs::write(file, edited).unwrap();
        let started = std::time::Instant::now();
        let o = merge();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        std::fs::write(file, before).unwrap();
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        for n in needles {
            assert!(err.contains(n), "{n:?} not in: {err}");
        }
        assert!(started.elapsed().as_secs() < 20);
        assert!(!Path::new(&bad).exists());
    };
    // Result cells: a formula, a share above 1, counts that do not add up.
    let csv = Path::new(&parts[1]).join("map.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let edit = |col: usize, to: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
        cells[col] = to.to_string();
        lines[1] = cells.join(",");
        lines.join("\n") + "\n"
    };
    refused(
        &csv,
        edit(4, "=1+1"),
        &[
            "map.csv line 2, column 5 (recovered_share)",
            "was the shard edited?",
        ],
    );
    refused(&csv, edit(4, "1.5"), &["a share from 0 to 1"]);
    refused(&csv, edit(3, "-2"), &["(replications)", "a whole number"]);
    refused(
        &csv,
        edit(3, "7"),
        &["the sum of recovered, degraded and undetermined"],
    );
    refused(&csv, edit(9, "@SUM(A1)"), &["(median_amplification)"]);
    // Axes inflated to 10^10 cells: refused before anything is allocated.
    let json_path = Path::new(&parts[1]).join("map.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let mut m = json.clone();
    let values: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    m["x"]["values"] = values.clone().into();
    m["y"]["values"] = values.into();
    refused(
        &json_path,
        m.to_string(),
        &[
            "map.json",
            "more than one process runs",
            "was the shard edited?",
        ],
    );
    // An axis without values, or with one twice.
    let mut m = json.clone();
    m["x"]["values"] = serde_json::json!([]);
    refused(&json_path, m.to_string(), &["has no values"]);
    let mut m = json.clone();
    m["y"]["values"] = serde_json::json!(["1s", "1s"]);
    refused(&json_path, m.to_string(), &["given twice"]);
    ok(&merge());
}
