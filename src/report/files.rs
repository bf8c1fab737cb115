//! The CSV and JSON report files, built in memory as bytes so tests can
//! compare them and `write_all` only has to save them.
//!
//! Layout of `summary.csv` / `summary.json` rows: `policy`, then the 22
//! summary columns in a fixed order (always, so scripts can rely on positions). With
//! more than one replication, the `<col>_ci95` half-widths of the numeric
//! columns follow, again in that order, and `metastable_share` comes last.
//! Optional columns (a rate limiter's `client_wait_ms`) are written only
//! when a run has them, after all of that, so no column ever moves.

use super::format::{json_num, json_str};
use crate::decimal::{num, opt};
use crate::metrics::aggregate::PolicySummary;
use crate::metrics::aggregate::{Col, RunFigures};
use crate::metrics::columns::{
    extra_columns, extra_header, extra_row, replications_header, summary_header, summary_row, Cell,
};
use crate::metrics::{BinColumn, BinRow, Extras, RunResult};
use crate::scenario::Scenario;

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
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(header)?;
    for row in rows {
        w.write_record(&row)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// `timeseries.csv`: one row per (policy, replication, bin), in the order
/// of `results`; the columns after `policy` and `replication` are
/// [`BinRow::COLUMNS`], the optional ones only when a run has them.
pub fn timeseries_csv(results: &[RunResult]) -> Result<Vec<u8>, csv::Error> {
    let extras = Extras::of(results);
    let cols: Vec<&BinColumn> = BinRow::COLUMNS
        .iter()
        .filter(|c| extras.has(c.extra))
        .collect();
    let mut header = vec!["policy".to_string(), "replication".to_string()];
    header.extend(cols.iter().map(|c| c.name.to_string()));
    let cols = &cols;
    let rows = results.iter().flat_map(|r| {
        r.bins.iter().map(move |b| {
            let mut row = Vec::with_capacity(2 + cols.len());
            row.push(r.policy.clone());
            row.push(r.replication.to_string());
            row.extend(cols.iter().map(|c| opt((c.get)(b))));
            row
        })
    });
    csv_bytes(&header, rows)
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
