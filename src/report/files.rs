//! The CSV and JSON report files, built in memory as bytes so tests can
//! compare them and `write_all` only has to save them; `timeseries.csv`,
//! which grows with every bin of every run, is written straight to its
//! file instead.
//!
//! Layout of `summary.csv` / `summary.json` rows: `policy`, then the
//! summary columns in a fixed order, in blocks (see
//! `crate::metrics::columns`), so scripts can rely on positions.

use super::alerting::RunAlerts;
use super::csv_file::{self, int, num as number, text, Column};
use super::format::{json_num, json_str};
use super::output::{save, save_streamed};
use super::RunReport;
use crate::decimal::{num, opt};
use crate::metrics::aggregate::PolicySummary;
use crate::metrics::aggregate::{by_policy, Col, RunFigures};
use crate::metrics::alerts::Firing;
use crate::metrics::columns::{
    extra_columns, extra_header, extra_row, replications_header, summary_header, summary_row, Cell,
};
use crate::metrics::{BinColumn, BinRow, Extras, RunResult};
use crate::report::OutputError;
use crate::scenario::Scenario;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The JSON text of a summary cell.
fn cell_json(c: &Cell) -> String {
    match c {
        Cell::Text(s) => json_str(s),
        Cell::Num(x) => json_num(*x),
        Cell::Bool(b) => b.to_string(),
    }
}

fn csv_bytes(
    header: &[String],
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<Vec<u8>, csv::Error> {
    csv_file::bytes(header, rows)
}

/// Writes the CSV and JSON files of a run's report into `dir`, in the
/// order they are listed: `timeseries.csv`, `summary.csv`, `summary.json`,
/// `replications.csv`, `attempts.csv`, `tiers.csv` (with `downstream`
/// tiers only) and `alerts.csv`.
pub fn write_run_files(
    dir: &Path,
    report: &RunReport<'_>,
    written: &mut Vec<PathBuf>,
) -> Result<(), OutputError> {
    let (scenario, results) = (report.scenario, report.results);
    let (summaries, reps, extras) = (&report.summaries, report.replications, report.extras);
    save_streamed(dir, "timeseries.csv", written, |w| {
        Ok(write_timeseries_csv(w, results)?)
    })?;
    save(
        dir,
        "summary.csv",
        &summary_csv(summaries, reps, extras)?,
        written,
    )?;
    let json = summary_json(scenario, summaries, reps, extras);
    save(dir, "summary.json", json.as_bytes(), written)?;
    let replications = replications_csv(&report.figures, extras)?;
    save(dir, "replications.csv", &replications, written)?;
    save(dir, "attempts.csv", &attempts_csv(results)?, written)?;
    if !scenario.spec().downstream.is_empty() {
        save(dir, "tiers.csv", &tiers_csv(results)?, written)?;
    }
    save(dir, "alerts.csv", &alerts_csv(&report.alerts)?, written)
}

/// Writes `timeseries.csv` into `out`: one row per (policy, replication,
/// bin), in the order of `results`; the columns after `policy` and
/// `replication` are [`BinRow::COLUMNS`], the optional ones only when a
/// run has them. Streamed: a run with millions of bins would otherwise
/// hold the whole text in memory beside its bins.
pub fn write_timeseries_csv<W: Write>(out: W, results: &[RunResult]) -> Result<W, csv::Error> {
    let extras = Extras::of(results);
    let cols: Vec<&BinColumn> = BinRow::COLUMNS
        .iter()
        .filter(|c| extras.has(c.extra))
        .collect();
    let mut header = vec!["policy".to_string(), "replication".to_string()];
    header.extend(cols.iter().map(|c| c.name.to_string()));
    let cols = &cols;
    let rows = results.iter().flat_map(|r| {
        r.bins().iter().map(move |b| {
            let mut row = Vec::with_capacity(2 + cols.len());
            row.push(r.policy.clone());
            row.push(r.replication.to_string());
            row.extend(cols.iter().map(|c| opt((c.get)(b))));
            row
        })
    });
    csv_file::write(out, &header, rows)
}

/// One row of `tiers.csv`: a tier of one run.
struct TierLine<'a> {
    policy: &'a str,
    replication: u32,
    tier: &'a crate::metrics::TierRun,
}

/// The columns of `tiers.csv`, declared once.
fn tiers_columns<'a>() -> [Column<TierLine<'a>>; 10] {
    [
        Column {
            name: "policy",
            cell: |l| text(l.policy),
        },
        Column {
            name: "replication",
            cell: |l| int(l.replication),
        },
        Column {
            name: "tier",
            cell: |l| text(l.tier.name.as_str()),
        },
        Column {
            name: "attempts",
            cell: |l| int(l.tier.attempts),
        },
        Column {
            name: "served",
            cell: |l| int(l.tier.served),
        },
        Column {
            name: "failed",
            cell: |l| int(l.tier.failed),
        },
        Column {
            name: "wasted",
            cell: |l| int(l.tier.wasted),
        },
        Column {
            name: "peak_load_ratio",
            cell: |l| Cell::Num(l.tier.peak_load_ratio),
        },
        Column {
            name: "recovered_at_s",
            cell: |l| Cell::Num(l.tier.recovered_at_s),
        },
        Column {
            name: "recovery_after_fault_s",
            cell: |l| Cell::Num(l.tier.recovery_after_fault_s),
        },
    ]
}

/// `tiers.csv`: one row per (policy, replication, tier), tiers in calling
/// order (the top backend first); counts after the warm-up. Only runs of
/// a scenario with `downstream` tiers have rows.
pub fn tiers_csv(results: &[RunResult]) -> Result<Vec<u8>, csv::Error> {
    let lines: Vec<TierLine<'_>> = results
        .iter()
        .flat_map(|r| {
            r.tiers.iter().map(move |tier| TierLine {
                policy: &r.policy,
                replication: r.replication,
                tier,
            })
        })
        .collect();
    csv_file::table(&tiers_columns(), &lines)
}

/// `summary.csv`: one row per policy.
pub fn summary_csv(
    summaries: &[PolicySummary],
    replications: usize,
    extras: Extras,
) -> Result<Vec<u8>, csv::Error> {
    let rows = summaries.iter().map(|s| {
        let mut cells = summary_row(s, replications);
        cells.extend(extra_row(s, replications, extras));
        cells.iter().map(Cell::csv).collect()
    });
    let mut header = summary_header(replications);
    header.extend(extra_header(replications, extras));
    csv_bytes(&header, rows)
}

/// `replications.csv`: one row per (policy, replication) with that run's
/// own figures, so a policy that recovered in some runs only shows it.
pub fn replications_csv(figures: &[RunFigures], extras: Extras) -> Result<Vec<u8>, csv::Error> {
    let rows = figures.iter().map(|f| {
        let mut row = vec![f.policy.clone(), f.replication.to_string()];
        for c in Col::ALL.iter().filter(|c| c.extra().is_none()) {
            row.push(match c {
                Col::Metastable => f.recovery.metastable_text().to_string(),
                c => opt(f.get(*c)),
            });
        }
        row.extend(extra_columns(extras).map(|c| opt(f.get(c))));
        row
    });
    csv_bytes(&replications_header(extras), rows)
}

/// `summary.json`: `{"scenario": {...}, "columns": [...], "policies":
/// [{...}, ...]}`. Written by hand so that keys keep the column order.
pub fn summary_json(
    scenario: &Scenario,
    summaries: &[PolicySummary],
    replications: usize,
    extras: Extras,
) -> String {
    let spec = scenario.spec();
    let mut header = summary_header(replications);
    header.extend(extra_header(replications, extras));
    let mut out = String::from("{\n  \"scenario\": {\n");
    let fields = [
        ("name", json_str(&spec.name)),
        (
            "description",
            spec.description
                .as_deref()
                .map(json_str)
                .unwrap_or_else(|| "null".into()),
        ),
        ("seed", spec.seed.to_string()),
        ("replications", replications.to_string()),
        ("duration_s", num(spec.duration.secs())),
        ("warmup_s", num(spec.warmup.secs())),
        ("bin_s", num(spec.bin.secs())),
        ("recovery_threshold", num(spec.report.recovery_threshold)),
        ("stable_for_s", num(spec.report.stable_for.secs())),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("    {}: {}", json_str(k), v))
        .collect();
    out.push_str(&body.join(",\n"));
    out.push_str("\n  },\n  \"columns\": [");
    let cols: Vec<String> = header.iter().map(|c| json_str(c)).collect();
    out.push_str(&cols.join(", "));
    out.push_str("],\n  \"policies\": [");
    let rows: Vec<String> = summaries
        .iter()
        .map(|s| {
            let mut cells = summary_row(s, replications);
            cells.extend(extra_row(s, replications, extras));
            let kv: Vec<String> = header
                .iter()
                .zip(&cells)
                .map(|(k, v)| format!("      {}: {}", json_str(k), cell_json(v)))
                .collect();
            format!("\n    {{\n{}\n    }}", kv.join(",\n"))
        })
        .collect();
    out.push_str(&rows.join(","));
    if !rows.is_empty() {
        out.push_str("\n  ");
    }
    out.push_str("]\n}\n");
    out
}

/// One row of `attempts.csv`: a policy and an attempt count, with the
/// mean numbers of requests that succeeded at that attempt and that were
/// given up after it.
#[derive(Clone, Debug, PartialEq)]
pub struct AttemptRow {
    /// The policy's name.
    pub policy: String,
    /// The policy's position in the scenario.
    pub policy_index: usize,
    /// The attempt count.
    pub attempts: usize,
    /// Mean requests that succeeded at attempt `attempts`.
    pub succeeded: f64,
    /// Mean requests given up (failed or dropped) after `attempts` attempts.
    pub gave_up: f64,
}

/// The columns of `attempts.csv`.
const ATTEMPTS_COLUMNS: &[Column<AttemptRow>] = &[
    Column {
        name: "policy",
        cell: |r| text(&r.policy),
    },
    Column {
        name: "attempts",
        cell: |r| int(r.attempts),
    },
    Column {
        name: "succeeded",
        cell: |r| number(r.succeeded),
    },
    Column {
        name: "gave_up",
        cell: |r| number(r.gave_up),
    },
];

/// The attempt distribution of each policy: for every attempt count `k`,
/// the mean over replications of the counted requests that succeeded at
/// attempt `k` and of those given up (failed or dropped) after `k`
/// attempts. Rows run from 1 to the largest count seen below
/// `DENSE_ATTEMPTS` (0 appears only for requests an open breaker refused
/// before any attempt), then only the larger counts some run saw.
pub fn attempt_rows(results: &[RunResult]) -> Vec<AttemptRow> {
    let mut out = Vec::new();
    for (pi, runs) in by_policy(results, |r| r.policy_index) {
        let n = runs.len() as f64;
        let len = runs
            .iter()
            .map(|r| r.summary().attempt_counts.len())
            .max()
            .unwrap_or(0);
        let at = |k: usize, i: usize| -> f64 {
            let mut sum = 0.0;
            for r in &runs {
                sum += r.summary().attempt_counts.get(k).map_or(0, |c| c[i]) as f64;
            }
            sum / n
        };
        for k in 0..len {
            let (ok, gave_up) = (at(k, 0), at(k, 1));
            if k == 0 && ok == 0.0 && gave_up == 0.0 {
                continue;
            }
            out.push(AttemptRow {
                policy: runs[0].policy.clone(),
                policy_index: pi,
                attempts: k,
                succeeded: ok,
                gave_up,
            });
        }
        // Counts beyond the dense table: only those some run saw.
        let tail: std::collections::BTreeSet<u32> = runs
            .iter()
            .flat_map(|r| r.summary().attempt_tail.keys().copied())
            .collect();
        for k in tail {
            let mean = |i: usize| {
                runs.iter()
                    .map(|r| r.summary().attempt_tail.get(&k).map_or(0, |c| c[i]) as f64)
                    .sum::<f64>()
                    / n
            };
            out.push(AttemptRow {
                policy: runs[0].policy.clone(),
                policy_index: pi,
                attempts: k as usize,
                succeeded: mean(0),
                gave_up: mean(1),
            });
        }
    }
    out
}

/// `attempts.csv`: `policy,attempts,succeeded,gave_up`, one row per policy
/// and attempt count (see [`attempt_rows`]); for each policy the rows add
/// up to its mean `succeeded + failed + dropped`.
pub fn attempts_csv(results: &[RunResult]) -> Result<Vec<u8>, csv::Error> {
    csv_file::table(ATTEMPTS_COLUMNS, &attempt_rows(results))
}

/// One row of `alerts.csv`: a firing period of one run.
struct AlertRow<'a> {
    run: &'a RunAlerts,
    firing: &'a Firing,
}

/// The columns of `alerts.csv`.
fn alerts_columns<'a>() -> [Column<AlertRow<'a>>; 5] {
    [
        Column {
            name: "policy",
            cell: |r| text(&r.run.policy),
        },
        Column {
            name: "replication",
            cell: |r| int(r.run.replication),
        },
        Column {
            name: "rule",
            cell: |r| text(r.firing.rule.name()),
        },
        Column {
            name: "fired_at_s",
            cell: |r| number(r.firing.fired_at_s),
        },
        Column {
            name: "cleared_at_s",
            cell: |r| Cell::Num(r.firing.cleared_at_s),
        },
    ]
}

/// `alerts.csv`: `policy,replication,rule,fired_at_s,cleared_at_s`, one row
/// per firing period, runs in (policy, replication) order; `cleared_at_s`
/// is empty when the alert still fired at the end of the run.
pub fn alerts_csv(alerts: &[RunAlerts]) -> Result<Vec<u8>, csv::Error> {
    let rows: Vec<AlertRow<'_>> = alerts
        .iter()
        .flat_map(|run| {
            run.firings
                .iter()
                .map(move |firing| AlertRow { run, firing })
        })
        .collect();
    csv_file::table(&alerts_columns(), &rows)
}
