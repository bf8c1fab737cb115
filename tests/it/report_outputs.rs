//! The report files written from hand-made results: exact headers,
//! aggregation, plots that are big, non-blank and byte-stable, and an HTML
//! page that holds the numbers and is well formed.

use retrysim::metrics::aggregate::{aggregate, Col};
use retrysim::metrics::{BinRow, Recovery, RunResult, RunSummary, TierRun};
use retrysim::report::{self, Perf, ReportOptions};
use retrysim::scenario::Scenario;
use std::path::Path;

const SCENARIO: &str = r#"{
  "name": "storm 'test' & co",
  "description": "A 90 s outage; \"quoted\" <b>not bold</b>",
  "seed": 7, "duration": "10m", "bin": "1s",
  "traffic": {"rate": 7000, "clients": 5000, "attempt_timeout": "1s"},
  "backend": {"workers": 100, "service_time": {"exponential": {"mean": "10ms"}},
              "admission_cost": "500us", "queue_limit": 20000},
  "faults": [
    {"outage": {"start": "2m", "duration": "90s"}},
    {"errors": {"start": "0s", "duration": "10m", "rate": 0.01}}
  ],
  "policies": [
    {"name": "no-jitter", "max_attempts": 0, "backoff": {"constant": {"delay": "100ms"}}},
    {"name": "jitter-10", "max_attempts": 10,
     "backoff": {"exponential": {"initial": "100ms", "multiplier": 2, "max": "10s"}},
     "jitter": {"proportional": 0.1}},
    {"name": "platform", "max_attempts": 5,
     "backoff": {"exponential": {"initial": "100ms", "multiplier": 2, "max": "32s"}},
     "jitter": "full", "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}}
  ]
}"#;

fn scenario() -> Scenario {
    Scenario::from_json(SCENARIO).unwrap()
}

/// A deterministic wiggle in [-1, 1].
fn wiggle(i: usize, k: u32) -> f64 {
    ((i as f64) * 0.37 + k as f64 * 1.3).sin() * ((i as f64) * 0.051).cos()
}

/// A storm: policy 0 never recovers, policy 1 recovers 40 s after the
/// outage, policy 2 after 8 s (replication `rep` shifts things a little).
fn run(pi: usize, rep: u32) -> RunResult {
    let cap = 100.0 / 0.0105;
    let (fs, fe) = (120.0, 210.0);
    let recover = [None, Some(fe + 40.0 + rep as f64), Some(fe + 8.0)][pi];
    let peak = [60_000.0, 25_000.0, 11_000.0][pi];
    let bins: Vec<BinRow> = (0..600)
        .map(|i| {
            let t = i as f64;
            let demand = 7000.0 + 60.0 * wiggle(i, rep);
            let healthy = t < fs || recover.is_some_and(|r| t >= r);
            let offered = if t < fs {
                demand * 1.01
            } else if healthy {
                demand * 1.02
            } else {
                peak * (1.0 + 0.05 * wiggle(i, rep + 7))
            };
            let goodput = if healthy {
                demand * 0.99
            } else if t < fe {
                0.0
            } else {
                demand * 0.3
            };
            BinRow {
                t_s: t,
                demand_rps: demand,
                first_attempt_rps: demand,
                retry_rps: offered - demand,
                offered_rps: offered,
                goodput_rps: goodput,
                queue_len_avg: if healthy { 3.0 } else { 20_000.0 },
                queue_len_max: if healthy { 9.0 } else { 20_000.0 },
                utilization: if healthy { 0.73 } else { 1.0 },
                latency_p50_ms: healthy.then_some(10.5),
                latency_p99_ms: healthy.then_some(48.25),
                capacity_rps: cap,
                ..Default::default()
            }
        })
        .collect();
    let requests = 4_200_000 + 1000 * rep as u64;
    let attempts = requests + [2_000_000, 600_000, 100_000][pi] + 10_000 * rep as u64;
    RunResult {
        policy: ["no-jitter", "jitter-10", "platform"][pi].into(),
        policy_index: pi,
        replication: rep,
        stopped_at_s: None,
        tiers: vec![TierRun {
            bins,
            summary: RunSummary {
                requests,
                succeeded: requests - 50_000 * (3 - pi as u64),
                failed: 10_000,
                dropped: 40_000 * (3 - pi as u64) - 10_000,
                unfinished: 0,
                attempts,
                retries: attempts - requests,
                served: attempts - 1000,
                wasted: 5000 * (3 - pi as u64),
                peak_offered_rps: peak,
                capacity_rps: cap,
                fault_start_s: Some(fs),
                fault_end_s: Some(fe),
                recovered_at_s: recover,
                recovery: if recover.is_some() {
                    Recovery::Recovered
                } else {
                    Recovery::Degraded
                },
                latency_p50_ms: Some(10.5),
                latency_mean_ms: Some(14.0),
                latency_p99_ms: Some(48.25 + pi as f64),
                ..Default::default()
            },
            ..Default::default()
        }],
        events: 1_000_000,
    }
}

fn results(reps: u32) -> Vec<RunResult> {
    let mut v = vec![];
    for pi in 0..3 {
        for r in 0..reps {
            v.push(run(pi, r));
        }
    }
    v
}

fn perf() -> Perf {
    Perf {
        events: 1,
        wall_s: 0.123456789,
        events_per_s: 8.100000073710001,
        threads: 2,
        runs: 3,
        requests: 10,
    }
}

fn write(dir: &Path, reps: u32, no_plots: bool) -> Vec<std::path::PathBuf> {
    let (s, rs) = (scenario(), results(reps));
    report::write_all(
        dir,
        &report::RunReport::new(&s, &rs),
        &perf(),
        &ReportOptions {
            no_plots,
            ..Default::default()
        },
    )
    .unwrap()
}

fn first_line(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string()
}

const SUMMARY_HEADER: &str = "policy,requests,succeeded,failed,dropped,success_rate,attempts,amplification,retries,retry_reduction,peak_offered_rps,peak_load_ratio,fault_start_s,fault_end_s,recovered_at_s,recovery_after_fault_s,degraded_s,metastable,latency_p50_ms,latency_mean_ms,latency_p99_ms,wasted_fraction,unfinished";

/// The second block of summary columns: why requests ended unsuccessfully,
/// duplicated work and the queue's figures.
const OPERATORS_HEADER: &str = "max_attempts_reached,dropped_deadline,dropped_budget,dropped_retries_disabled,failed_breaker,failed_non_retryable,duplicates,max_task_age_s,dead_lettered,drain_s";

#[test]
fn csv_headers_are_exactly_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 1, true);
    assert_eq!(
        first_line(&dir.path().join("timeseries.csv")),
        "policy,replication,t_s,demand_rps,first_attempt_rps,retry_rps,offered_rps,rejected_rps,goodput_rps,wasted_rps,timeout_rps,error_rps,dropped_rps,queue_len_avg,queue_len_max,utilization,retrying,latency_p50_ms,latency_p99_ms,capacity_rps,retry_rate,backlog,oldest_pending_age_s,retry_gap_p50_ms,retry_gap_p99_ms,dead_lettered_rps,finished_rps,tail_finished_rps"
    );
    let summary = format!("{SUMMARY_HEADER},{OPERATORS_HEADER}");
    assert_eq!(first_line(&dir.path().join("summary.csv")), summary);
    let reps_header = first_line(&dir.path().join("replications.csv"));
    assert_eq!(
        reps_header,
        summary.replacen("policy,", "policy,replication,", 1)
    );
    let ts = std::fs::read_to_string(dir.path().join("timeseries.csv")).unwrap();
    assert_eq!(ts.lines().count(), 1 + 3 * 600);
    let row: Vec<&str> = ts.lines().nth(200).unwrap().split(',').collect();
    assert_eq!(row.len(), 28);
    assert_eq!(row[0], "no-jitter");
    assert_eq!(row[2], "199", "t_s");
    assert_eq!(row[17], "", "missing latency is an empty cell");
}

#[test]
fn summary_with_replications_appends_ci95_and_outcome_shares() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 3, true);
    let text = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[..23].join(","), SUMMARY_HEADER);
    assert_eq!(header[23], "requests_ci95");
    // The first block ends with the outcome shares; the operators' block
    // (give-up reasons, duplicates, queue figures) follows with its own
    // half-widths, so positions of earlier columns never move.
    assert_eq!(header[44..46], ["metastable_share", "undetermined_share"]);
    assert!(!header.contains(&"metastable_ci95"));
    let operators: Vec<&str> = OPERATORS_HEADER.split(',').collect();
    assert_eq!(header[46..56], operators[..]);
    let ci: Vec<String> = operators.iter().map(|c| format!("{c}_ci95")).collect();
    assert_eq!(header[56..], ci);
    let rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    assert_eq!(rows[0][col("metastable")], "true");
    assert_eq!(rows[0][col("metastable_share")], "1");
    assert_eq!(rows[0][col("recovered_at_s")], "");
    assert_eq!(rows[0][col("retry_reduction")], "0");
    assert_eq!(rows[1][col("metastable")], "false");
    // Recovered at 250, 251, 252: mean 251, sd 1, t(2) = 4.302653 / sqrt 3.
    assert_eq!(rows[1][col("recovered_at_s")], "251");
    assert_eq!(rows[1][col("recovered_at_s_ci95")], "2.484138");
    // Requests 4_200_000 + 1000 r: mean 4_201_000, sd 1000.
    assert_eq!(rows[1][col("requests")], "4201000");
    assert_eq!(rows[1][col("requests_ci95")], "2484.137712");
    let r = &rows[1][col("retry_reduction")];
    // Paired per replication: 1 - (600000 + 10000 r) / (2000000 + 10000 r).
    let expect: f64 = (0..3)
        .map(|r| 1.0 - (600_000.0 + 10_000.0 * r as f64) / (2_000_000.0 + 10_000.0 * r as f64))
        .sum::<f64>()
        / 3.0;
    assert!((r.parse::<f64>().unwrap() - expect).abs() < 1e-6, "{r}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(json["scenario"]["name"], "storm 'test' & co");
    assert_eq!(json["scenario"]["replications"], 3);
    assert_eq!(json["policies"][1]["recovered_at_s"], 251);
    assert_eq!(
        json["policies"][0]["recovered_at_s"],
        serde_json::Value::Null
    );
    assert_eq!(json["policies"][0]["metastable"], true);
    assert_eq!(json["columns"].as_array().unwrap().len(), header.len());
    let reps = std::fs::read_to_string(dir.path().join("replications.csv")).unwrap();
    assert_eq!(reps.lines().count(), 1 + 9);
}

#[test]
fn aggregation_on_hand_made_results() {
    let s = aggregate(&results(1));
    assert_eq!(s.len(), 3);
    assert_eq!(s[0].get(Col::RetryReduction), Some(0.0));
    assert_eq!(
        s[2].get(Col::RetryReduction),
        Some(1.0 - 100_000.0 / 2_000_000.0)
    );
    assert_eq!(s[1].get(Col::RecoveryAfterFaultS), Some(40.0));
    assert_eq!(s[1].get(Col::DegradedS), Some(130.0));
    assert!(s[0].metastable);
    assert_eq!(s[1].ci(Col::Requests), None, "no ci with one replication");
    // Two of three metastable is a majority; one of three is not.
    let mut rs = results(3);
    for r in &mut rs[3..5] {
        r.tiers[0].summary.recovered_at_s = None;
        r.tiers[0].summary.recovery = Recovery::Degraded;
    }
    let s = aggregate(&rs);
    assert!(s[1].metastable);
    assert_eq!(s[1].metastable_runs, 2);
    assert_eq!(s[1].get(Col::RecoveredAtS), Some(252.0));
    rs[4].tiers[0].summary.recovered_at_s = Some(251.0);
    rs[4].tiers[0].summary.recovery = Recovery::Recovered;
    assert!(!aggregate(&rs)[1].metastable);
    // Runs that ended too soon to tell are neither: two of three make the
    // policy's outcome undetermined.
    for r in &mut rs[3..5] {
        r.tiers[0].summary.recovered_at_s = None;
        r.tiers[0].summary.recovery = Recovery::Undetermined;
    }
    let s = aggregate(&rs);
    assert_eq!(s[1].recovery, Recovery::Undetermined);
    assert!(!s[1].metastable);
    assert_eq!((s[1].metastable_runs, s[1].undetermined_runs), (0, 2));
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h)
}

#[test]
fn plots_are_large_non_blank_and_byte_identical() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write(a.path(), 2, false);
    write(b.path(), 2, false);
    for name in ["load.png", "recovery.png"] {
        let bytes = std::fs::read(a.path().join(name)).unwrap();
        let (w, h) = png_size(&bytes);
        assert!(w >= 1200 && h >= 700, "{name}: {w}x{h}");
        let img = image::load_from_memory(&bytes).unwrap().to_rgb8();
        let mut colours = std::collections::BTreeSet::new();
        let mut non_white = 0usize;
        for p in img.pixels() {
            colours.insert(p.0);
            if p.0 != [255, 255, 255] {
                non_white += 1;
            }
        }
        assert!(colours.len() > 50, "{name}: only {} colours", colours.len());
        assert!(non_white > (w * h / 50) as usize, "{name}: nearly blank");
        assert_eq!(bytes, std::fs::read(b.path().join(name)).unwrap(), "{name}");
    }
    for name in [
        "timeseries.csv",
        "summary.csv",
        "summary.json",
        "replications.csv",
        "report.html",
    ] {
        assert_eq!(
            std::fs::read(a.path().join(name)).unwrap(),
            std::fs::read(b.path().join(name)).unwrap(),
            "{name} differs between identical renders"
        );
    }
}

/// Checks that every non-void tag is closed in order.
fn well_formed(html: &str) -> Result<(), String> {
    const VOID: [&str; 4] = ["meta", "img", "br", "hr"];
    let mut stack: Vec<String> = vec![];
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').ok_or("unclosed <")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name {
                return Err(format!("<{open}> closed by </{name}>"));
            }
        } else {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !VOID.contains(&name.as_str()) {
                stack.push(name);
            }
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

#[test]
fn html_holds_the_numbers_escapes_text_and_is_well_formed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), 1, false);
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    well_formed(&html).unwrap();
    assert!(html.contains("storm &#39;test&#39; &amp; co"));
    assert!(!html.contains("<b>not bold</b>"));
    assert!(!html.contains("<script"));
    assert!(!html.contains("http://") && !html.contains("https://"));
    // load.png, recovery.png and attempts.png.
    assert_eq!(html.matches("data:image/png;base64,").count(), 3);
    // Summary values and the story.
    assert!(html.contains("stayed metastable until the end of the run"));
    assert!(html.contains("recovered 40 s after the outage ended"));
    assert!(html.contains("95% fewer retries than no-jitter"), "{html}");
    assert!(html.contains("+40 s"));
    assert!(html.contains("98.81%"), "success rate of platform");
    assert!(html.contains("7000 new requests/s"));
}

#[test]
fn no_plots_skips_pngs() {
    let dir = tempfile::tempdir().unwrap();
    let written = write(dir.path(), 1, true);
    assert!(!dir.path().join("load.png").exists());
    assert!(written.iter().any(|p| p.ends_with("perf.json")));
    // Measured figures follow the number rule of every other output.
    let perf: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("perf.json")).unwrap())
            .unwrap();
    assert_eq!(perf["wall_s"].to_string(), "0.123457");
    assert_eq!(perf["events_per_s"].to_string(), "8.1");
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    well_formed(&html).unwrap();
    assert!(!html.contains("data:image/png"));
}

#[test]
fn terminal_table_is_aligned_and_colour_is_opt_in() {
    let s = scenario();
    let rs = results(1);
    let r = report::RunReport::new(&s, &rs);
    let plain = report::summary_table(&r);
    assert!(!plain.contains('\x1b'));
    let lines: Vec<&str> = plain.lines().collect();
    assert!(lines[0].starts_with("policy"));
    assert!(lines[1].contains("metastable"));
    assert!(lines[2].contains("+40 s"));
    // Right-aligned columns end at the same character position.
    let end_of = |l: &str, pat: &str| l.find(pat).map(|i| l[..i + pat.len()].chars().count());
    assert_eq!(end_of(lines[0], "requests"), end_of(lines[1], "4200000"));
    let coloured = report::summary_table_colored(&r, true);
    assert!(coloured.contains("\x1b[1;31m"));
    let stripped: String = {
        let mut out = String::new();
        let mut esc = false;
        for c in coloured.chars() {
            match (esc, c) {
                (false, '\x1b') => esc = true,
                (true, 'm') => esc = false,
                (true, _) => {}
                (false, c) => out.push(c),
            }
        }
        out
    };
    assert_eq!(stripped, plain);
}

/// Renders the sample into `$RETRYSIM_SAMPLE_DIR` for a person to look at.
#[test]
#[ignore]
fn render_sample() {
    let dir = std::env::var("RETRYSIM_SAMPLE_DIR").unwrap_or_else(|_| "output/sample".into());
    let reps: u32 = std::env::var("RETRYSIM_SAMPLE_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    write(Path::new(&dir), reps, false);
    let (s, rs) = (scenario(), results(reps));
    print!(
        "{}",
        report::summary_table(&report::RunReport::new(&s, &rs))
    );
}
