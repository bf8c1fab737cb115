//! Traffic from a trace (`traffic.trace`) and latency from a histogram
//! file: a dashboard's rate series drives Poisson arrivals that match it
//! within Poisson noise (a chi-square test), a list of arrival times is
//! replayed exactly, a histogram file is the inline histogram, bad files
//! are refused with their line and column, and the trace is part of the
//! scenario's fingerprint.

use retrysim::engine::{stream, Stream};
use retrysim::model::traffic::{Start, Traffic};
use retrysim::runner::run_all;
use retrysim::scenario::{load, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The shipped sample: a day's rate compressed into 20 minutes, one
/// point every 15 s, as Grafana exports it (dates, a quoted header, gaps).
const SAMPLE: &str = "scenarios/trace-day-rps.csv";

/// The sample as (seconds from its first row, rate), gaps left out: read
/// here on its own, not by the crate's reader.
fn sample_points() -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let mut out = vec![];
    let mut origin = None;
    for line in text.lines().skip(1) {
        let (time, value) = line.split_once(',').unwrap();
        // "2026-11-30 HH:MM:SS": the sample stays within one day.
        let hms: Vec<f64> = time[11..].split(':').map(|x| x.parse().unwrap()).collect();
        let t = hms[0] * 3600.0 + hms[1] * 60.0 + hms[2];
        let t0 = *origin.get_or_insert(t);
        if let Ok(r) = value.parse::<f64>() {
            if r.is_finite() {
                out.push((t - t0, r));
            }
        }
    }
    out
}

/// The rate at `t` s, linear between the points.
fn rate_at(points: &[(f64, f64)], t: f64) -> f64 {
    let i = points.partition_point(|p| p.0 <= t);
    if i == 0 {
        return points[0].1;
    }
    if i == points.len() {
        return points[i - 1].1;
    }
    let ((t0, r0), (t1, r1)) = (points[i - 1], points[i]);
    r0 + (r1 - r0) * (t - t0) / (t1 - t0)
}

/// Expected arrivals in each of `n` bins of `width` s: the rate's
/// integral, exact for bins that each lie within one segment (the points
/// are 15 s apart, the bins divide 15 s).
fn expected(points: &[(f64, f64)], n: usize, width: f64) -> Vec<f64> {
    (0..n)
        .map(|k| {
            let (a, b) = (k as f64 * width, (k + 1) as f64 * width);
            // Trapezoids of 1 s: exact, as the rate is linear within
            // each second.
            let steps = (width.round() as usize).max(1);
            (0..steps)
                .map(|j| {
                    let (x, y) = (a + j as f64, (a + j as f64 + 1.0).min(b));
                    (rate_at(points, x) + rate_at(points, y)) / 2.0 * (y - x)
                })
                .sum()
        })
        .collect()
}

/// Pearson's statistic of `observed` counts against `expected` ones.
fn chi_square(observed: &[f64], expected: &[f64]) -> f64 {
    observed
        .iter()
        .zip(expected)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum()
}

/// The chi-square distribution's quantile for `df` degrees of freedom at
/// the normal quantile `z` (Wilson–Hilferty; within 1 % for df ≥ 50).
fn chi_square_quantile(df: f64, z: f64) -> f64 {
    let a = 2.0 / (9.0 * df);
    df * (1.0 - a + z * a.sqrt()).powi(3)
}

/// z of a two-sided test at α = 0.001 (0.0005 in each tail).
const Z_TWO_SIDED_001: f64 = 3.2905;

/// Arrivals per bin of `width` s of a run's bins (each `bin` s long).
fn counts(bins: &[retrysim::metrics::BinRow], bin: f64, width: f64) -> Vec<f64> {
    let per = (width / bin).round() as usize;
    bins.chunks(per)
        .filter(|c| c.len() == per)
        .map(|c| c.iter().map(|b| (b.demand_rps * bin).round()).sum())
        .collect()
}

/// The shipped trace scenario's arrivals, per 1 s bin, follow the rate
/// series within Poisson noise: Pearson's chi-square over the 1200 one-
/// second bins, and over the 80 fifteen-second bins, lies within the
/// two-sided 99.9 % range of its distribution (on the scenario's fixed
/// seed), while the same counts against a flat rate of the same mean are
/// far outside it (the test can tell the shape apart).
#[test]
fn a_dashboard_rate_series_drives_arrivals_within_poisson_noise() {
    let mut s = load(
        Path::new("scenarios/trace-day.json"),
        &["faults=[]".to_string()],
    )
    .unwrap();
    s.select_policies(&["no-jitter".to_string()]).unwrap();
    let runs = run_all(&s, 1, &|| {}).unwrap();
    let bins = &runs[0].bins();
    assert_eq!(bins.len(), 1200);
    let points = sample_points();
    assert_eq!(points.len(), 81 - 4, "the sample has four gaps");
    for width in [1.0, 15.0] {
        let observed = counts(bins, 1.0, width);
        let want = expected(&points, observed.len(), width);
        let df = observed.len() as f64;
        let x2 = chi_square(&observed, &want);
        let (lo, hi) = (
            chi_square_quantile(df, -Z_TWO_SIDED_001),
            chi_square_quantile(df, Z_TWO_SIDED_001),
        );
        assert!(
            x2 > lo && x2 < hi,
            "bins of {width} s: chi-square {x2:.1} outside [{lo:.1}, {hi:.1}] (df {df})"
        );
        let mean = want.iter().sum::<f64>() / df;
        let flat = chi_square(&observed, &vec![mean; want.len()]);
        println!("bins of {width} s: chi-square {x2:.1} in [{lo:.1}, {hi:.1}]; flat {flat:.0}");
        assert!(flat > 10.0 * hi, "a flat rate fits too: {flat:.1}");
    }
    // The total, within 4 standard deviations of the integral.
    let total: f64 = counts(bins, 1.0, 1.0).iter().sum();
    let want: f64 = expected(&points, 1200, 1.0).iter().sum();
    assert!(
        (total - want).abs() < 4.0 * want.sqrt(),
        "{total} vs {want}"
    );
    // The scenario's rate is the series' mean: about 715/s.
    let rate = s.spec().traffic.rate.unwrap();
    assert!((rate - want / 1200.0).abs() < 1e-6 * rate, "{rate}");
}

/// A folder holding `files` (name, content).
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

/// A scenario of open traffic with `traffic` (JSON members) and a
/// service time `service` (a distribution's JSON).
fn scenario(traffic: &str, service: &str, duration: &str, bin: &str) -> String {
    format!(
        r#"{{"name": "t", "duration": "{duration}", "bin": "{bin}", "seed": 5,
  "traffic": {{"clients": 10, {traffic}}},
  "backend": {{"workers": 4, "service_time": {service}}},
  "policies": [{{"name": "p", "max_attempts": 3,
                 "backoff": {{"exponential": {{"initial": "100ms"}}}}}}]}}"#
    )
}

const EXP: &str = r#"{"exponential": {"mean": "1ms"}}"#;

/// Epoch milliseconds of a list of arrivals: 300 times over 2 s, some at
/// the same millisecond, from a fixed generator.
fn arrival_millis() -> Vec<u64> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut t = 1_733_450_400_000u64;
    (0..300)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += x % 14; // 0–13 ms apart: ties included
            t
        })
        .collect()
}

/// A list of arrival timestamps is replayed exactly: the traffic's
/// arrival times are the file's, to the nanosecond, from the first one
/// (after `start`), and a run's arrivals per 10 ms bin are the file's.
#[test]
fn arrival_times_are_replayed_exactly() {
    let ms = arrival_millis();
    let csv: String = std::iter::once("timestamp_ms".to_string())
        .chain(ms.iter().map(|m| m.to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    for (start, skip_ms) in [("0s", 0u64), ("500ms", 500)] {
        let trace = format!(
            r#""trace": {{"file": "data/arrivals.csv", "kind": "arrivals", "start": "{start}"}}"#
        );
        let dir = folder(&[
            ("s.json", &scenario(&trace, EXP, "3s", "10ms")),
            ("data/arrivals.csv", &csv),
        ]);
        let s = load(&dir.path().join("s.json"), &[]).unwrap();
        let want: Vec<u64> = ms
            .iter()
            .map(|m| m - ms[0])
            .filter(|&d| d >= skip_ms)
            .map(|d| (d - skip_ms) * 1_000_000)
            .collect();
        let mut traffic = Traffic::new(
            &s.spec().traffic,
            stream(5, 0, Stream::Arrivals),
            stream(5, 0, Stream::Clients),
        );
        let mut got = vec![];
        let mut next = match traffic.start() {
            Start::Arrival(t) => t,
            Start::Clients(_) => panic!("open traffic"),
        };
        while let Some(t) = next {
            got.push(t);
            next = traffic.next_arrival(t);
        }
        assert_eq!(got, want, "start {start}");
        // A run: arrivals per 10 ms bin.
        let runs = run_all(&s, 1, &|| {}).unwrap();
        let per_bin: Vec<u64> = runs[0]
            .bins()
            .iter()
            .map(|b| (b.demand_rps * 0.01).round() as u64)
            .collect();
        let mut want_bins = vec![0u64; per_bin.len()];
        for t in &want {
            want_bins[(*t / 10_000_000) as usize] += 1;
        }
        assert_eq!(per_bin, want_bins, "start {start}");
    }
}

/// A histogram read from a `le,count` file is the inline histogram with
/// the same buckets: the same distribution, and the same run.
#[test]
fn a_histogram_file_is_the_inline_histogram() {
    let csv = "le,count\n0.001,120\n0.0025,610\n0.005,880\n0.01,990\n0.05,1000\n+Inf,1003\n";
    let inline = r#"{"histogram": {"buckets": [
        {"le": "1ms", "count": 120}, {"le": "2.5ms", "count": 610},
        {"le": "5ms", "count": 880}, {"le": "10ms", "count": 990},
        {"le": "50ms", "count": 1000}, {"le": "+Inf", "count": 1003}]}}"#;
    let traffic = r#""rate": 500"#;
    let dir = folder(&[
        (
            "file.json",
            &scenario(
                traffic,
                r#"{"histogram": {"file": "lat.csv"}}"#,
                "20s",
                "1s",
            ),
        ),
        ("inline.json", &scenario(traffic, inline, "20s", "1s")),
        ("lat.csv", csv),
    ]);
    let from_file = load(&dir.path().join("file.json"), &[]).unwrap();
    let written = load(&dir.path().join("inline.json"), &[]).unwrap();
    let knots = |s: &Scenario| s.spec().backend.service_time.as_ref().unwrap().knots();
    assert!(knots(&written).is_some());
    assert_eq!(knots(&from_file), knots(&written));
    let bins = |s: &Scenario| format!("{:?}", run_all(s, 1, &|| {}).unwrap()[0].bins());
    assert_eq!(bins(&from_file), bins(&written));
}

/// Runs `retrysim check` on `file` in `dir`; (exit code, stderr).
fn check(dir: &Path, file: &str) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(["check", file])
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Bad trace and histogram files, and names outside the scenario's
/// folder, end with status 2 and say where: the data file's line and
/// column, or the scenario field's.
#[test]
fn bad_files_and_names_are_refused_with_their_place() {
    let rate = |extra: &str| {
        scenario(
            &format!(r#""trace": {{"file": "rps.csv"{extra}}}"#),
            EXP,
            "1m",
            "1s",
        )
    };
    // (scenario, CSV, what stderr must hold)
    let cases: Vec<(String, &str, Vec<&str>)> = vec![
        (
            rate(""),
            "1733450400,10\n1733450415,12\n",
            vec!["rps.csv:1:1: traffic.trace: expected a header"],
        ),
        (
            rate(""),
            "time,rps\n1733450400,10\n1733450415,12\n1733450410,12\n",
            vec!["rps.csv:4:1:", "timestamps must increase"],
        ),
        (
            rate(""),
            "time,rps\n1733450400,10\n1733450415,-3\n",
            vec!["rps.csv:3:12:", "is not a rate"],
        ),
        (
            rate(r#", "value_column": "qps""#),
            "time,rps\n1733450400,10\n",
            vec![
                "rps.csv:1:1:",
                "no column named \"qps\"",
                "\"time\", \"rps\"",
            ],
        ),
        (
            rate(r#", "time_column": "Time""#),
            "time,rps\n2026-12-06 02:00:00,10\n2026-12-06 02:00:15,oops\n",
            vec!["rps.csv:3:21:", "expected a rate"],
        ),
        (
            rate(""),
            "time,rps\n2026-12-06 02:00:00,10\n2026-12-06 02:00:61,11\n",
            vec!["rps.csv:3:1:", "as the first row's"],
        ),
        (
            scenario(r#""trace": {"file": "/etc/rps.csv"}"#, EXP, "1m", "1s"),
            "time,rps\n0,1\n",
            vec!["s.json:2:", "traffic.trace.file: must be relative"],
        ),
        (
            scenario(r#""trace": {"file": "../rps.csv"}"#, EXP, "1m", "1s"),
            "time,rps\n0,1\n",
            vec!["s.json:2:", "traffic.trace.file: must not contain `..`"],
        ),
        (
            scenario(r#""trace": {"file": "missing.csv"}"#, EXP, "1m", "1s"),
            "time,rps\n0,1\n",
            vec!["s.json:2:", "traffic.trace.file: cannot read missing.csv"],
        ),
        (
            scenario(
                r#""rate": 10, "trace": {"file": "rps.csv", "kind": "arrivals"}"#,
                EXP,
                "1m",
                "1s",
            ),
            "time\n0\n",
            vec![
                "s.json:2:",
                "traffic.rate: has no meaning with a trace of arrivals",
            ],
        ),
        (
            scenario(
                r#""trace": {"file": "rps.csv"}, "profile": [{"at": "0s", "scale": 1}]"#,
                EXP,
                "1m",
                "1s",
            ),
            "time,rps\n0,1\n",
            vec!["traffic.profile: has no meaning with a trace"],
        ),
        (
            scenario(
                r#""rate": 5"#,
                r#"{"histogram": {"file": "../lat.csv"}}"#,
                "1m",
                "1s",
            ),
            "",
            vec![
                "s.json:3:",
                "backend.service_time.histogram.file: must not contain `..`",
            ],
        ),
        (
            scenario(
                r#""rate": 5"#,
                r#"{"histogram": {"file": "rps.csv"}}"#,
                "1m",
                "1s",
            ),
            "le,count\n0.01,5\n0.1,seven\n",
            vec!["rps.csv:3:5: backend.service_time.histogram: expected a count"],
        ),
        (
            scenario(
                r#""rate": 5"#,
                r#"{"histogram": {"file": "rps.csv"}}"#,
                "1m",
                "1s",
            ),
            "le,count\n0.01,5\n0.1,3\n",
            vec![
                "backend.service_time.histogram.buckets[1].count",
                "never decrease",
            ],
        ),
    ];
    for (text, csv, want) in &cases {
        let dir = folder(&[("s.json", text), ("rps.csv", csv)]);
        let (code, err) = check(dir.path(), "s.json");
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(code, Some(2), "{text}\n{csv}\n{err}");
        for w in want {
            assert!(err.contains(w), "stderr lacks {w:?}:\n{err}");
        }
    }
}

/// A trace's content is part of the fingerprint `merge` compares: a
/// changed file is a changed scenario, the same file the same one.
#[test]
fn the_fingerprint_follows_the_trace() {
    let text = scenario(r#""trace": {"file": "rps.csv"}"#, EXP, "1m", "1s");
    let arrivals = scenario(
        r#""trace": {"file": "rps.csv", "kind": "arrivals", "time_column": "time"}"#,
        EXP,
        "1m",
        "1s",
    );
    for (s, a, b) in [
        (
            &text,
            "time,rps\n0,10\n30,20\n60,10\n",
            "time,rps\n0,10\n30,21\n60,10\n",
        ),
        (
            &arrivals,
            "time,rps\n0,1\n1.5,1\n",
            "time,rps\n0,1\n1.25,1\n",
        ),
    ] {
        let dir = folder(&[("s.json", s), ("rps.csv", a)]);
        let path: PathBuf = dir.path().join("s.json");
        let first = load(&path, &[]).unwrap().fingerprint();
        assert_eq!(load(&path, &[]).unwrap().fingerprint(), first);
        std::fs::write(dir.path().join("rps.csv"), b).unwrap();
        assert_ne!(load(&path, &[]).unwrap().fingerprint(), first);
        std::fs::write(dir.path().join("rps.csv"), a).unwrap();
        assert_eq!(load(&path, &[]).unwrap().fingerprint(), first);
    }
}

/// With a rate trace, `rate` (when given) is the run's mean rate and
/// `scale` multiplies the series; `start` moves the run into the trace.
#[test]
fn rate_scale_and_start_shape_the_series() {
    let csv = "time,rps\n0,10\n30,30\n60,10\n";
    let load_with = |extra: &str, rate: &str| {
        let dir = folder(&[
            (
                "s.json",
                &scenario(
                    &format!(r#"{rate}"trace": {{"file": "rps.csv"{extra}}}"#),
                    EXP,
                    "1m",
                    "1s",
                ),
            ),
            ("rps.csv", csv),
        ]);
        load(&dir.path().join("s.json"), &[]).unwrap()
    };
    // Mean 20/s over the minute.
    assert_eq!(load_with("", "").spec().traffic.rate, Some(20.0));
    assert_eq!(
        load_with(r#", "scale": 3"#, "").spec().traffic.rate,
        Some(60.0)
    );
    assert_eq!(
        load_with("", r#""rate": 50, "#).spec().traffic.rate,
        Some(50.0)
    );
    // From 30 s on: 30 → 10 over 30 s, mean 20, starting at 1.5 × it.
    let late = load_with(r#", "start": "30s""#, "");
    let t = &late.spec().traffic;
    assert_eq!(t.rate, Some(20.0));
    assert_eq!(t.profile[0].scale, 1.5);
    assert_eq!(t.profile.len(), 2);
}

#[test]
fn a_traces_ups_and_downs_are_no_incident() {
    const S: u64 = 1_000_000_000;
    let s = load(Path::new("scenarios/trace-day.json"), &[]).unwrap();
    let spec = s.spec();
    // The series rises well above its first value (a daily peak), which a
    // written profile would call a load spike; from a trace it is the
    // everyday load, so the incident is the outage alone.
    assert!(spec.traffic.profile.iter().any(|k| k.scale > 1.5));
    assert_eq!(spec.traffic.load_spike(spec.duration.ns()), None);
    assert_eq!(spec.incident(spec.duration.ns()), Some((720 * S, 750 * S)));
    // So the recovery is judged after the outage: no-jitter stays in its
    // storm, the budget recovers at once.
    let runs = run_all(&s, 1, &|| {}).unwrap();
    let judged: Vec<_> = runs
        .iter()
        .map(|r| (r.policy.as_str(), r.summary().recovery))
        .collect();
    assert_eq!(
        judged,
        [
            ("no-jitter", retrysim::metrics::Recovery::Degraded),
            ("full-jitter-budget", retrysim::metrics::Recovery::Recovered),
        ]
    );
}

#[test]
fn assess_searches_a_traced_load_and_skips_the_sustaining_step() {
    let out = tempfile::tempdir().unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args([
            "assess",
            "scenarios/trace-day.json",
            "--policy",
            "full-jitter-budget",
            "--replications",
            "1",
            "-q",
            "-o",
        ])
        .arg(out.path())
        .output()
        .unwrap();
    crate::support::assert_ok(&st);
    let text = std::fs::read_to_string(out.path().join("trace-day/assess.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let p = &json["policies"][0];
    // The sustaining step would replace the trace's shape: not run.
    assert!(p["sustaining_load"].is_null(), "{p}");
    // The trigger threshold is a traffic.rate (the series' mean) above the
    // scenario's own 725.6 req/s: the budget recovers there.
    let low = p["threshold_load"]["low"].as_f64().unwrap();
    assert!(low > 725.6, "{p}");
}
