//! `retrysim sweep` and `retrysim merge` end to end: the grid, the CSV,
//! sharding and merging byte for byte, the heatmap, and exit statuses.

use std::path::Path;
use std::process::{Command, Output};

fn retrysim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .output()
        .expect("the binary runs")
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

/// A short HotOS toy: 2 × 3 grid, 3 policies.
const TOY: &str = "scenarios/hotos21-toy.json";
const RATE: &str = "traffic.rate=140,280";
const QUEUE: &str = "backend.queue_limit=300,600,1200";
const SHORT: &str = "duration=100s";

#[test]
fn sweep_writes_one_row_per_point_and_policy() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "all");
    ok(&retrysim(&[
        "sweep", TOY, "--set", RATE, "--set", SHORT, "-o", &out, "-q",
    ]));
    let csv = std::fs::read_to_string(t.path().join("all/sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("point,traffic.rate,duration,policy,requests,"));
    // last_success_s keeps its place after the first block; later blocks
    // follow it.
    assert!(lines[0].contains(",unfinished,last_success_s,max_attempts_reached,"));
    assert!(lines[0].ends_with(",drain_s"));
    assert_eq!(lines.len(), 1 + 2 * 3);
    assert!(lines[1].starts_with("0,140,100s,retry-once,"));
    assert!(lines[4].starts_with("1,280,100s,retry-once,"));
    // The collapse at 280 QPS, the recovery at 140.
    let meta = |l: &str| l.split(',').nth(3 + 17).unwrap().to_string();
    assert_eq!(meta(lines[1]), "false");
    assert_eq!(meta(lines[4]), "true");
    // One varying parameter: no heatmap.
    assert!(!t.path().join("all/heatmap.png").exists());
}

#[test]
fn shards_merge_into_the_unsharded_output_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let sweep = |extra: &[&str], out: &str| {
        let mut args = vec![
            "sweep", TOY, "--set", RATE, "--set", QUEUE, "--set", SHORT, "-q", "-o", out,
        ];
        args.extend_from_slice(extra);
        ok(&retrysim(&args));
    };
    let all = p(t.path(), "all");
    sweep(&[], &all);
    let parts: Vec<String> = (1..=4).map(|i| p(t.path(), &format!("part{i}"))).collect();
    for (i, part) in parts.iter().enumerate() {
        sweep(&["--shard", &format!("{}/4", i + 1)], part);
        assert!(!Path::new(part).join("heatmap.png").exists());
    }
    let merged = p(t.path(), "merged");
    // Any order of the shard directories.
    ok(&retrysim(&[
        "merge", &parts[2], &parts[0], &parts[3], &parts[1], "-o", &merged, "-q",
    ]));
    for f in ["sweep.csv", "sweep.json", "heatmap.png"] {
        let a = std::fs::read(Path::new(&all).join(f)).unwrap();
        let b = std::fs::read(Path::new(&merged).join(f)).unwrap();
        assert!(a == b, "{f} differs");
    }
    let png = image::open(Path::new(&all).join("heatmap.png")).unwrap();
    assert!(png.width() >= 1200);
    // A missing or repeated shard, or a shard of another sweep, is an error.
    let bad = p(t.path(), "bad");
    let o = retrysim(&["merge", &parts[0], &parts[1], &parts[2], "-o", &bad]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing shard 4/4"));
    let o = retrysim(&[
        "merge", &parts[0], &parts[0], &parts[1], &parts[2], &parts[3], "-o", &bad,
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = retrysim(&["merge", &all, &parts[0], "-o", &bad]);
    assert_eq!(o.status.code(), Some(2));
    // A shard's sweep.csv with a row given twice, a row of no point of
    // the sweep, or cut short, is refused.
    let csv = Path::new(&parts[1]).join("sweep.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let first_row = text.lines().nth(1).unwrap().to_string();
    // Without its last row.
    let cut = &text[..text.trim_end().rfind('\n').unwrap() + 1];
    let stray = format!("{text}999{}\n", &first_row[first_row.find(',').unwrap()..]);
    // A row of shard 1's slice copied in: this shard's file is named.
    let shard1 = std::fs::read_to_string(Path::new(&parts[0]).join("sweep.csv")).unwrap();
    let copied = shard1.lines().nth(1).unwrap();
    for (edited, needle) in [
        (format!("{text}{first_row}\n"), "comes twice"),
        (
            format!("{text}{copied}\n"),
            "is a point of shard 1/4, not of this shard (2/4)",
        ),
        (stray, "not part of the sweep"),
        (cut.to_string(), "cut short"),
        // Cut within its last number: every field still there.
        (text[..text.len() - 3].to_string(), "cut short"),
    ] {
        std::fs::write(&csv, edited).unwrap();
        let o = retrysim(&[
            "merge", &parts[0], &parts[1], &parts[2], &parts[3], "-o", &bad,
        ]);
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(needle), "{err}");
    }
}

/// A one-policy scenario that runs in milliseconds.
const QUICK: &str = r#"{"name":"quick","duration":"20s","traffic":{"rate":100,"clients":50,"attempt_timeout":"1s"},"backend":{"workers":5,"service_time":{"exponential":{"mean":"10ms"}},"queue_limit":100},"faults":[{"outage":{"start":"5s","duration":"3s"}}],"policies":[{"name":"p","max_attempts":3,"backoff":{"exponential":{"initial":"100ms","multiplier":2,"max":"1s"}},"jitter":"full"}]}"#;

/// Shards 1/2 and 2/2 of a three-point sweep of [`QUICK`], in `dir`.
fn quick_shards(dir: &Path) -> (String, String) {
    let scenario = dir.join("quick.json");
    std::fs::write(&scenario, QUICK).unwrap();
    let parts = (p(dir, "p1"), p(dir, "p2"));
    for (i, out) in [(1, &parts.0), (2, &parts.1)] {
        ok(&retrysim(&[
            "sweep",
            scenario.to_str().unwrap(),
            "--set",
            "traffic.rate=100,200,300",
            "--shard",
            &format!("{i}/2"),
            "-o",
            out,
            "-q",
        ]));
    }
    parts
}

/// Merges `parts` into `out`; the exit status must be 2 and stderr hold
/// `needle`.
fn refused(parts: &[&str], out: &str, needle: &str) {
    let mut args = vec!["merge"];
    args.extend_from_slice(parts);
    args.extend_from_slice(&["-o", out]);
    let o = retrysim(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(needle), "{err}");
}

/// Applies each `(from, to, needle)` edit to `file` in turn, requires the
/// merge of `parts` to be refused with `needle`, and puts the file back.
fn each_edit_is_refused(file: &Path, edits: &[(&str, &str, &str)], parts: &[&str], out: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    for (from, to, needle) in edits {
        let edited = text.replacen(from, to, 1);
        assert_ne!(edited, text);
        std::fs::write(file, edited).unwrap();
        refused(parts, out, needle);
    }
    std::fs::write(file, text).unwrap();
}

#[test]
fn merge_says_what_is_wrong_with_a_shards_manifest() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let json = Path::new(&p1).join("sweep.json");
    let text = std::fs::read_to_string(&json).unwrap();
    let out = p(t.path(), "out");
    let edits = [
        (
            "\"index\": 1",
            "\"index\": 99",
            "p1/sweep.json: shard.index 99 is above shard.count 2",
        ),
        (
            "\"index\": 1",
            "\"index\": 0",
            "p1/sweep.json: shard.index 0 is below 1",
        ),
        (
            "\"count\": 2",
            "\"count\": 0",
            "p1/sweep.json: shard.count 0 must be at least 1",
        ),
        // Refused before anything the size of the count is allocated.
        (
            "\"count\": 2",
            "\"count\": 4000000000",
            "p1/sweep.json: shard.count 4000000000 is above the 3 points of the grid",
        ),
    ];
    each_edit_is_refused(&json, &edits, &[&p1, &p2], &out);
    // A point count that is not the grid's size.
    std::fs::write(&json, text.replacen("\"points\": 3", "\"points\": 4", 1)).unwrap();
    let json2 = Path::new(&p2).join("sweep.json");
    let text2 = std::fs::read_to_string(&json2).unwrap();
    std::fs::write(&json2, text2.replacen("\"points\": 3", "\"points\": 4", 1)).unwrap();
    refused(&[&p1, &p2], &out, "points 4, but its axes make 3 points");
    std::fs::write(&json, text).unwrap();
    std::fs::write(&json2, text2).unwrap();
    ok(&retrysim(&["merge", &p1, &p2, "-o", &out, "-q"]));
}

/// Two axes on one field, however they name it, are refused: the later
/// would replace the earlier's values at every point, under its labels.
#[test]
fn axes_on_one_field_written_differently_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let scenario = t.path().join("quick.json");
    std::fs::write(&scenario, QUICK).unwrap();
    let scenario = scenario.to_str().unwrap();
    let out = p(t.path(), "out");
    for (a, b) in [
        ("faults.0.outage.duration=2s,3s", "faults.0.duration=4s"),
        ("policies.0.max_attempts=2,3", "policies.p.max_attempts=4,5"),
        ("policies[p].max_attempts=2,3", "policies.00.max_attempts=4"),
    ] {
        let o = retrysim(&["sweep", scenario, "--set", a, "--set", b, "-o", &out]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{a} {b}: {err}");
        assert!(err.contains("overlaps"), "{err}");
    }
    // Neighbours are not one field.
    ok(&retrysim(&[
        "sweep",
        scenario,
        "--set",
        "traffic.rate=100,200",
        "--set",
        "traffic.clients=10",
        "--set",
        "faults.0.start=4s",
        "-o",
        &out,
        "-q",
    ]));
}

/// Shards of one name but not of one scenario: run with another `--seed`,
/// or from a file edited in between. Their rows would mix two sweeps.
#[test]
fn merge_refuses_shards_of_another_seed_or_an_edited_scenario() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let scenario = t.path().join("quick.json");
    let scenario = scenario.to_str().unwrap();
    let out = p(t.path(), "out");
    let shard2 = |extra: &[&str], dir: &str| {
        let mut args = vec![
            "sweep",
            scenario,
            "--set",
            "traffic.rate=100,200,300",
            "--shard",
            "2/2",
            "-o",
            dir,
            "-q",
        ];
        args.extend_from_slice(extra);
        ok(&retrysim(&args));
    };
    let seeded = p(t.path(), "seeded");
    shard2(&["--seed", "9"], &seeded);
    refused(&[&p1, &seeded], &out, "not a shard of the same sweep");
    std::fs::write(scenario, QUICK.replace("\"workers\":5", "\"workers\":6")).unwrap();
    let edited = p(t.path(), "edited");
    shard2(&[], &edited);
    refused(&[&p1, &edited], &out, "not a shard of the same sweep");
    ok(&retrysim(&["merge", &p1, &p2, "-o", &out, "-q"]));
    // A map written into the same directory: neither is picked silently.
    std::fs::write(Path::new(&p1).join("map.json"), "{}").unwrap();
    refused(
        &[&p1, &p2],
        &out,
        "holds both a sweep (sweep.json) and a map",
    );
}

/// A grid larger than a sweep holds in memory at once runs in batches:
/// the whole sweep's CSV is the merge of shards small enough to run in one
/// batch each, byte for byte.
#[test]
fn a_sweep_run_in_batches_writes_what_its_shards_do() {
    let t = tempfile::tempdir().unwrap();
    let scenario = t.path().join("tiny.json");
    std::fs::write(
        &scenario,
        r#"{"name": "tiny", "duration": "1s", "bin": "1s", "traffic": {"rate": 5},
            "backend": {"workers": 1, "service_time": {"exponential": {"mean": "50ms"}}},
            "policies": [{"name": "p"}]}"#,
    )
    .unwrap();
    let scenario = scenario.to_str().unwrap();
    // 5,000 points: two batches whole, one batch per shard of 2,500.
    let grid = ["--set", "traffic.rate=1..50:50", "--set", "seed=1..100:100"];
    let sweep = |extra: &[&str], out: &str| {
        let mut args = vec!["sweep", scenario, "-o", out, "-q", "--no-plots"];
        args.extend_from_slice(&grid);
        args.extend_from_slice(extra);
        ok(&retrysim(&args));
    };
    let whole = p(t.path(), "whole");
    sweep(&[], &whole);
    let (s1, s2) = (p(t.path(), "s1"), p(t.path(), "s2"));
    sweep(&["--shard", "1/2"], &s1);
    sweep(&["--shard", "2/2"], &s2);
    let merged = p(t.path(), "merged");
    ok(&retrysim(&[
        "merge",
        &s1,
        &s2,
        "-o",
        &merged,
        "-q",
        "--no-plots",
    ]));
    let csv = |dir: &str| std::fs::read_to_string(Path::new(dir).join("sweep.csv")).unwrap();
    let whole_csv = csv(&whole);
    assert_eq!(whole_csv.lines().count(), 5_001);
    assert!(
        whole_csv == csv(&merged),
        "batched sweep differs from its shards"
    );
}

/// Shards from a version that did not record the scenario's fingerprint
/// still merge, with a warning that says what was not checked; shards that
/// record it merge without one.
#[test]
fn merging_shards_without_a_fingerprint_warns() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let out = p(t.path(), "out");
    let o = retrysim(&["merge", &p1, &p2, "-o", &out]);
    ok(&o);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for dir in [&p1, &p2] {
        let path = Path::new(dir).join("sweep.json");
        let mut m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(m["fingerprint"].as_str().is_some_and(|f| !f.is_empty()));
        m.as_object_mut().unwrap().remove("fingerprint");
        std::fs::write(&path, m.to_string()).unwrap();
    }
    let old = p(t.path(), "old");
    let o = retrysim(&["merge", &p1, &p2, "-o", &old]);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning: these shards do not record which scenario they ran"),
        "{err}"
    );
    let csv = |dir: &str| std::fs::read(Path::new(dir).join("sweep.csv")).unwrap();
    assert_eq!(csv(&old), csv(&out), "the same rows either way");
    // Quiet: nothing but errors.
    let o = retrysim(&["merge", &p1, &p2, "-o", &p(t.path(), "quiet"), "-q"]);
    ok(&o);
    assert!(o.stderr.is_empty());
}

#[test]
fn merge_checks_each_rows_swept_values_against_the_manifest() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let out = p(t.path(), "out");
    let csv = Path::new(&p1).join("sweep.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    // Shard 1/2 holds points 0 and 2: rates 100 and 300.
    assert!(text.lines().nth(1).unwrap().starts_with("0,100,p,"));
    assert!(text.lines().nth(2).unwrap().starts_with("2,300,p,"));
    let edits = [
        (
            "\n0,100,",
            "\n0,NaN,",
            "line 2, column 2 (traffic.rate): expected \"100\" as sweep.json gives for point 0, found \"NaN\"",
        ),
        (
            "\n2,300,",
            "\n2,200,",
            "line 3, column 2 (traffic.rate): expected \"300\" as sweep.json gives for point 2, found \"200\"",
        ),
    ];
    each_edit_is_refused(&csv, &edits, &[&p1, &p2], &out);
    assert!(!Path::new(&out).exists(), "nothing written");
    // A renamed swept column, in every shard alike.
    let csv2 = Path::new(&p2).join("sweep.csv");
    let text2 = std::fs::read_to_string(&csv2).unwrap();
    for (f, t) in [(&csv, &text), (&csv2, &text2)] {
        std::fs::write(
            f,
            t.replacen("point,traffic.rate,", "point,traffic.rat,", 1),
        )
        .unwrap();
    }
    refused(
        &[&p1, &p2],
        &out,
        "p1/sweep.csv line 1, column 2: expected the axis \"traffic.rate\" as sweep.json gives, found \"traffic.rat\"",
    );
    std::fs::write(&csv, text).unwrap();
    std::fs::write(&csv2, text2).unwrap();
    ok(&retrysim(&["merge", &p1, &p2, "-o", &out, "-q"]));
    let merged = std::fs::read_to_string(Path::new(&out).join("sweep.csv")).unwrap();
    assert!(!merged.contains("NaN"));
}

#[test]
fn merge_refuses_an_output_directory_that_is_an_input() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let before = std::fs::read(Path::new(&p1).join("sweep.json")).unwrap();
    // The same directory, however it is written.
    let dotted = format!("{p2}/../p1/");
    let link = p(t.path(), "link");
    std::os::unix::fs::symlink(&p1, &link).unwrap();
    for out in [&p1, &dotted, &link] {
        refused(
            &[&p1, &p2],
            out,
            "merging into it would overwrite that shard; choose another output directory",
        );
    }
    assert_eq!(
        std::fs::read(Path::new(&p1).join("sweep.json")).unwrap(),
        before
    );
    // A directory given for the shards inside it: neither it nor a new
    // directory directly inside it (the next merge of it would take the
    // merged output for a shard).
    let parent = p(t.path(), "parent");
    std::fs::create_dir(&parent).unwrap();
    for d in [&p1, &p2] {
        let name = Path::new(d).file_name().unwrap();
        std::fs::rename(d, Path::new(&parent).join(name)).unwrap();
    }
    refused(&[&parent], &parent, "which holds the shards being merged");
    refused(&[&parent], &p(Path::new(&parent), "all"), "is inside");
    refused(&[&parent], &p(Path::new(&parent), "p2"), "is the shard");
    // Twice in a row, the merge still works.
    for _ in 0..2 {
        ok(&retrysim(&[
            "merge",
            &parent,
            "-o",
            &p(t.path(), "all"),
            "-q",
        ]));
    }
}

#[test]
fn bad_sweep_input_exits_2() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "x");
    for args in [
        vec!["sweep", TOY, "--set", "traffic.rate", "-o", &out],
        vec!["sweep", TOY, "--set", "traffic.rate=1,,2", "-o", &out],
        vec!["sweep", TOY, "--set", "traffic.rate=100,-5", "-o", &out],
        vec!["sweep", TOY, "--set", "traffic.nope.x=1,2", "-o", &out],
        vec![
            "sweep",
            TOY,
            "--set",
            "traffic.rate=1",
            "--set",
            "traffic.rate=2",
            "-o",
            &out,
        ],
        vec![
            "sweep",
            TOY,
            "--set",
            "traffic.rate=100",
            "--shard",
            "3/2",
            "-o",
            &out,
        ],
        vec![
            "sweep",
            "nonexistent.json",
            "--set",
            "traffic.rate=100",
            "-o",
            &out,
        ],
        vec!["merge", "nonexistent-dir", "-o", &out],
        // More shards than points: the extra ones would run nothing.
        vec![
            "sweep",
            TOY,
            "--set",
            "traffic.rate=100,200",
            "--shard",
            "1/4000000000",
            "-o",
            &out,
        ],
    ] {
        let o = retrysim(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let o = retrysim(&[
        "sweep",
        TOY,
        "--set",
        "traffic.rate=100,200",
        "--shard",
        "1/3",
        "-o",
        &out,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("3 shards for 2 points: use at most 2"),
        "{err}"
    );
    let o = retrysim(&["sweep", TOY, "--set", "traffic.rate=100,-5", "-o", &out]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("sweep point 1") && err.contains("traffic.rate"),
        "{err}"
    );
}

#[test]
fn aws_sweep_over_clients_reports_completion_time() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "aws");
    ok(&retrysim(&[
        "sweep",
        "scenarios/aws-jitter.json",
        "--set",
        "traffic.clients=10,20",
        "--replications",
        "2",
        "-o",
        &out,
        "-q",
    ]));
    let csv = std::fs::read_to_string(t.path().join("aws/sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 2 * 5);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(lines[0].contains("_ci95"));
    let col = header.iter().position(|h| *h == "last_success_s").unwrap();
    assert_eq!(header[col - 1], "undetermined_share");
    for l in &lines[1..] {
        let done: f64 = l.split(',').nth(col).unwrap().parse().unwrap();
        assert!(done > 0.03 && done < 60.0, "{l}");
    }
}

/// A grid too large to hold is refused even with `--force`, and a shard
/// of a grid of 10^16 points loads only its own points: the first point's
/// problem is found at once, not after walking the whole grid.
#[test]
fn huge_grids_are_refused_or_sharded_without_walking_them() {
    let t = tempfile::tempdir().unwrap();
    let out = p(t.path(), "huge");
    let axes = [
        "--set",
        "traffic.rate=100..300:10000",
        "--set",
        "backend.workers=1..10000:10000",
        "--set",
        "backend.queue_limit=1..10000:10000",
        "--set",
        "seed=1..10000:10000",
    ];
    let mut args = vec!["sweep", TOY, "-o", &out, "-q", "--force"];
    args.extend_from_slice(&axes[..4]);
    let o = retrysim(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "100000000 points to run in one process, more than one can hold even with --force"
        ),
        "{err}"
    );
    // 10 points per shard; the toy's fault starts at 30 s, after a
    // 20 s run: the shard's first point is refused as soon as it loads.
    let mut args = vec!["sweep", TOY, "-o", &out, "-q", "--set", "duration=20s"];
    args.extend_from_slice(&axes);
    args.extend_from_slice(&["--shard", "1/1000000000000000"]);
    let o = retrysim(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("sweep point 0 "), "{err}");
}

/// Each `(from, to)` edit of `file` must make the merge of `parts` into
/// `out` exit 2 within seconds with every `needles` in stderr; the file is
/// put back after each.
fn refused_after(file: &Path, edits: &[(String, &[&str])], parts: &[&str], out: &str) {
    let before = std::fs::read(file).unwrap();
    for (edited, needles) in edits {
        std::fs::write(file, edited).unwrap();
        let started = std::time::Instant::now();
        let mut args = vec!["merge"];
        args.extend_from_slice(parts);
        args.extend_from_slice(&["-o", out, "-q"]);
        let o = retrysim(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        for n in *needles {
            assert!(err.contains(n), "{n:?} not in: {err}");
        }
        assert!(started.elapsed().as_secs() < 20, "{err}");
        assert!(!Path::new(out).exists(), "{out} was written");
        std::fs::write(file, &before).unwrap();
    }
}

#[test]
fn free_text_values_reach_no_csv_as_formulas_and_merge_byte_for_byte() {
    let t = tempfile::tempdir().unwrap();
    let scenario = t.path().join("quick.json");
    std::fs::write(&scenario, QUICK).unwrap();
    let axis = "description==1+1,@SUM(A1),-2+3,+x";
    let sweep = |extra: &[&str], out: &str| {
        let mut args = vec![
            "sweep",
            scenario.to_str().unwrap(),
            "--set",
            axis,
            "-o",
            out,
            "-q",
        ];
        args.extend_from_slice(extra);
        ok(&retrysim(&args));
    };
    let all = p(t.path(), "all");
    sweep(&[], &all);
    let csv = std::fs::read_to_string(Path::new(&all).join("sweep.csv")).unwrap();
    // The values are there, each behind a `'`; no cell of any line starts
    // a formula, and numbers such as -1.5 keep their sign.
    for v in ["'=1+1", "'@SUM(A1)", "'-2+3", "'+x"] {
        assert!(csv.contains(&format!(",{v},")), "{v} in\n{csv}");
    }
    for line in csv.lines() {
        for cell in line.split(',') {
            assert!(!cell.starts_with(['=', '@', '+']), "{cell:?} in {line}");
            assert!(
                !cell.starts_with('-') || cell.parse::<f64>().is_ok(),
                "{cell:?} in {line}"
            );
        }
    }
    // Sharded and merged: the same bytes.
    let parts = [p(t.path(), "p1"), p(t.path(), "p2")];
    for (i, part) in parts.iter().enumerate() {
        sweep(&["--shard", &format!("{}/2", i + 1)], part);
    }
    let merged = p(t.path(), "merged");
    ok(&retrysim(&[
        "merge", &parts[0], &parts[1], "-o", &merged, "-q",
    ]));
    for f in ["sweep.csv", "sweep.json"] {
        assert_eq!(
            std::fs::read(Path::new(&all).join(f)).unwrap(),
            std::fs::read(Path::new(&merged).join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn merge_checks_every_cell_count_and_size_of_its_shards() {
    let t = tempfile::tempdir().unwrap();
    let (p1, p2) = quick_shards(t.path());
    let bad = p(t.path(), "bad");
    let parts = [p1.as_str(), p2.as_str()];
    // A result cell edited into a formula, or text where a number is.
    let csv = Path::new(&p2).join("sweep.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let requests = header.iter().position(|h| *h == "requests").unwrap();
    let metastable = header.iter().position(|h| *h == "metastable").unwrap();
    let edit = |col: usize, to: &str| -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut cells: Vec<String> = lines[1].split(',').map(str::to_string).collect();
        cells[col] = to.to_string();
        lines[1] = cells.join(",");
        lines.join("\n") + "\n"
    };
    let at = format!("sweep.csv line 2, column {} (requests)", requests + 1);
    refused_after(
        &csv,
        &[
            (
                edit(requests, "\"=HYPERLINK(\"\"http://x\"\")\""),
                &[
                    at.as_str(),
                    "is not a number or empty",
                    "was the shard edited?",
                ],
            ),
            (edit(requests, "12abc"), &[at.as_str()]),
            (edit(requests, "inf"), &[at.as_str()]),
            (
                edit(metastable, "maybe"),
                &["(metastable)", "true, false or undetermined"],
            ),
            // Larger than the rows sweep.json describes can take.
            (
                format!("{text}{}", " ".repeat(17 << 20)),
                &["sweep.csv", "more than", "was the shard edited?"],
            ),
        ],
        &parts,
        &bad,
    );
    // A manifest whose axes make a grid too large to count, or one no
    // process ran, is refused before anything is allocated from it.
    let json_path = Path::new(&p2).join("sweep.json");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let inflated = |axes: usize, points: u64| {
        let mut m = json.clone();
        m["axes"] = (0..axes)
            .map(|i| serde_json::json!({"path": format!("a{i}"), "values": vec!["1"; 10_000]}))
            .collect();
        m["points"] = points.into();
        m.to_string()
    };
    refused_after(
        &json_path,
        &[
            (
                inflated(5, u64::MAX),
                &["sweep.json", "more than 10^19", "was the shard edited?"],
            ),
            (
                inflated(4, 10_000u64.pow(4)),
                &["sweep.json", "more than one process runs"],
            ),
            (
                format!("{}{}", json, " ".repeat(17 << 20)),
                &["sweep.json", "more than 16777216 bytes"],
            ),
        ],
        &parts,
        &bad,
    );
    ok(&retrysim(&["merge", &p1, &p2, "-o", &bad, "-q"]));
}
