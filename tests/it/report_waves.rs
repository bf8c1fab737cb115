//! Synchronised retries show as waves at fine bins (`scenarios/waves.json`),
//! the plots stay fast with many bins, `schedule --png` draws a stable
//! figure, and `--no-plots` leaves no stale plots behind.

use retrysim::metrics::{BinRow, RunResult, RunSummary, TierRun};
use retrysim::report::{plot, RunReport};
use retrysim::scenario::{self, Scenario};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// The default plot size, as `retrysim run` draws it.
const SIZE: (u32, u32) = (plot::WIDTH, plot::HEIGHT);

fn waves() -> (Scenario, Vec<RunResult>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/waves.json");
    let s = scenario::load(&path, &[]).unwrap();
    let results = retrysim::runner::run_all(&s, 1, &|| {}).expect("runs");
    (s, results)
}

/// offered_rps of `policy` in [from, to) seconds.
fn offered(results: &[RunResult], policy: &str, from: f64, to: f64) -> Vec<f64> {
    let r = results.iter().find(|r| r.policy == policy).unwrap();
    r.bins()
        .iter()
        .filter(|b| b.t_s >= from - 1e-9 && b.t_s < to - 1e-9)
        .map(|b| b.offered_rps)
        .collect()
}

fn peak_to_mean(v: &[f64]) -> f64 {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().copied().fold(0.0, f64::max) / mean
}

#[test]
fn synchronised_retries_come_in_waves() {
    let (s, results) = waves();
    assert_eq!(s.spec().bin.secs(), 0.01);
    // The crash is at 5 s; look at the 2 s after it.
    let ratio = |p: &str| peak_to_mean(&offered(&results, p, 5.0, 7.0));
    let (none, ten, full) = (ratio("no-jitter"), ratio("jitter-10"), ratio("full-jitter"));
    assert!(
        none > 2.0 * full && none > 6.0,
        "no-jitter peak/mean {none:.2}, full jitter {full:.2}"
    );
    assert!(ten > full, "jitter-10 {ten:.2}, full jitter {full:.2}");
    // The waves are periodic: while the backend is down the flushed cohort
    // comes back every 100 ms (10 bins), so the no-jitter load has a peak
    // in nearly every 100 ms slot of the outage, far above its median.
    let v = offered(&results, "no-jitter", 5.0, 6.0);
    let mut sorted = v.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let slots_with_wave = v
        .chunks(10)
        .filter(|slot| slot.iter().any(|&x| x > 4.0 * median))
        .count();
    assert!(
        slots_with_wave >= 8,
        "waves in {slots_with_wave} of 10 slots"
    );
}

#[test]
fn waves_plot_is_drawn() {
    let (s, results) = waves();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("load.png");
    plot::load_png(&path, &RunReport::new(&s, &results), SIZE).unwrap();
    let img = image::open(&path).unwrap().to_rgb8();
    assert!(img.width() >= 1200 && img.height() >= 700);
}

/// 10 ms bins over 30 minutes: 180,000 bins per policy.
fn many_bins(pi: usize) -> RunResult {
    let n = 180_000;
    let bins = (0..n)
        .map(|i| {
            let t = i as f64 * 0.01;
            let storm = (600.0..700.0).contains(&t);
            // A wave every 100 ms during the storm, narrower than a pixel.
            let offered = if storm && i % 10 == pi {
                80_000.0
            } else {
                2000.0 + ((i * 7919) % 100) as f64
            };
            BinRow {
                t_s: t,
                demand_rps: 2000.0,
                first_attempt_rps: 2000.0,
                offered_rps: offered,
                goodput_rps: if storm { 0.0 } else { 1990.0 },
                capacity_rps: 3000.0,
                ..Default::default()
            }
        })
        .collect();
    RunResult {
        policy: format!("p{pi}"),
        policy_index: pi,
        replication: 0,
        stopped_at_s: None,
        tiers: vec![TierRun {
            bins,
            summary: RunSummary {
                requests: 1,
                capacity_rps: 3000.0,
                fault_start_s: Some(600.0),
                fault_end_s: Some(700.0),
                recovered_at_s: Some(700.0),
                ..Default::default()
            },
            ..Default::default()
        }],
        events: 1,
    }
}

#[test]
fn plots_with_180k_bins_per_policy_stay_fast_and_keep_the_peaks() {
    let s = Scenario::from_json(
        r#"{"name": "many", "duration": "30m", "bin": "10ms",
            "traffic": {"rate": 2000},
            "backend": {"workers": 30, "service_time": {"constant": {"value": "10ms"}}},
            "faults": [{"outage": {"start": "10m", "duration": "100s"}}],
            "policies": [{"name": "p0"}, {"name": "p1"}, {"name": "p2"}]}"#,
    )
    .unwrap();
    let results: Vec<RunResult> = (0..3).map(many_bins).collect();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let report = RunReport::new(&s, &results);
    plot::load_png(&dir.path().join("load.png"), &report, SIZE).unwrap();
    plot::recovery_png(&dir.path().join("recovery.png"), &report, SIZE).unwrap();
    let took = started.elapsed().as_secs_f64();
    eprintln!("load.png + recovery.png, 3 × 180,000 bins: {took:.2} s");
    assert!(took < 20.0, "{took} s");
    // The 80k waves survive the downsampling: the log axis reaches them,
    // so some policy colour is drawn in the top tenth of the plot area.
    let img = image::open(dir.path().join("load.png")).unwrap().to_rgb8();
    let blue = image::Rgb([0u8, 114, 178]);
    let top_rows =
        (60..img.height() / 3).any(|y| (0..img.width()).any(|x| *img.get_pixel(x, y) == blue));
    assert!(top_rows, "no wave peak drawn near the top");
}

fn retrysim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn schedule_png_is_big_busy_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.png");
    let b = dir.path().join("b.png");
    for p in [&a, &b] {
        let out = retrysim(&[
            "schedule",
            "--preset",
            "cloud-tasks-default",
            "--jitter",
            "0.1",
            "--png",
            p.to_str().unwrap(),
        ]);
        crate::support::assert_ok(&out);
        // The table still goes to stdout.
        assert!(String::from_utf8_lossy(&out.stdout).contains("total retry window"));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let img = image::open(&a).unwrap().to_rgb8();
    assert!(
        img.width() >= 1200 && img.height() >= 700,
        "{:?}",
        img.dimensions()
    );
    let mut colours = std::collections::BTreeSet::new();
    for p in img.pixels() {
        colours.insert(p.0);
    }
    assert!(colours.len() > 50, "{} colours", colours.len());
    // A bad path fails with status 1 and says which file.
    let out = retrysim(&[
        "schedule",
        "--preset",
        "grpc",
        "--png",
        "/nonexistent-dir/x.png",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("x.png"));
}

#[test]
fn no_plots_removes_stale_plots_and_lists_only_written_files() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/waves.json");
    let out_dir = dir.path().to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            scenario.to_str().unwrap(),
            "-o",
            out_dir,
            "--policy",
            "no-jitter",
        ];
        args.extend_from_slice(extra);
        let out = retrysim(&args);
        crate::support::assert_ok(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let first = run(&[]);
    let load = dir.path().join("waves/load.png");
    assert!(load.exists() && first.contains("load.png"), "{first}");
    let second = run(&["--no-plots"]);
    assert!(!load.exists(), "stale load.png left behind");
    assert!(!dir.path().join("waves/recovery.png").exists());
    assert!(!second.contains(".png"), "{second}");
    for line in second.lines().filter(|l| l.starts_with("wrote ")) {
        assert!(Path::new(&line[6..]).exists(), "{line}");
    }
    let html = std::fs::read_to_string(dir.path().join("waves/report.html")).unwrap();
    assert!(!html.contains("load.png"));
}
