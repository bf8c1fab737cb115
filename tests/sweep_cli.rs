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
    for (edited, needle) in [
        (format!("{text}{first_row}\n"), "comes twice"),
        (stray, "not part of the sweep"),
        (cut.to_string(), "cut short"),
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
    ] {
        let o = retrysim(&args);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
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
