//! Every file any command writes, and the tables and pages it prints: CSV,
//! JSON, plots, HTML and terminal text, made from finished results.
//! Reporting reads results; it never touches the engine. One module per
//! command's outputs (`files` and this module for `run`, `sweep`, `map`,
//! `assess`, `tune`, `schedule`), one writer per format (`output` saves
//! every file and encodes every PNG, `csv_file` writes every CSV from one
//! declaration of its columns), so the command line only passes results on.
//!
//! Every file except `perf.json` is a pure function of the scenario and the
//! results: numbers go through one formatting rule ([`crate::decimal::num`]), sums
//! run in (policy, replication) order, JSON keys keep a fixed order and the
//! plots use an embedded font, so identical inputs give identical bytes.

pub mod alerting;
pub mod assess;
pub mod csv_file;
pub mod describe;
pub mod files;
pub mod format;
pub mod heatmap;
pub mod html;
pub mod junit;
pub mod map;
pub mod markdown;
pub mod output;
pub mod perfetto;
pub mod plot;
pub mod schedule;
pub mod staging;
pub mod sweep;
pub mod table;
pub mod tune;

mod error;
use crate::metrics::aggregate::{aggregate_figures, run_figures, PolicySummary, RunFigures};
use crate::metrics::{Extras, RunResult};
use crate::scenario::Scenario;
use alerting::RunAlerts;
pub use error::{is_broken_pipe, OutputError};
use output::{read_back, save};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How the runs went, for `perf.json` (the only output that may differ
/// between identical runs).
#[derive(Clone, Debug, Serialize)]
pub struct Perf {
    /// Events the engine processed, all runs together.
    pub events: u64,
    /// Wall-clock seconds the runs took.
    #[serde(serialize_with = "six_decimals")]
    pub wall_s: f64,
    /// `events / wall_s`.
    #[serde(serialize_with = "six_decimals")]
    pub events_per_s: f64,
    /// Worker threads used.
    pub threads: usize,
    /// (policy, replication) runs made.
    pub runs: usize,
    /// Requests counted in all runs.
    pub requests: u64,
}

/// A measured figure under the report's number rule (six decimals).
fn six_decimals<S: serde::Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64((x * 1e6).round() / 1e6)
}

/// Which optional outputs to make.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Skip `load.png` and `recovery.png` (and their place in the HTML).
    pub no_plots: bool,
    /// Size of `load.png` and `recovery.png` in pixels (width, height);
    /// `None` = [`plot::WIDTH`] × [`plot::HEIGHT`].
    pub plot_size: Option<(u32, u32)>,
}

/// Every file [`write_all`] may write: the ones a run does not write
/// (`load.png` with `--no-plots`) are stale leftovers of an earlier run,
/// removed when the new report is committed (see [`staging::Staging`]).
pub const REPORT_FILES: &[&str] = &[
    "timeseries.csv",
    "summary.csv",
    "summary.json",
    "replications.csv",
    "attempts.csv",
    "alerts.csv",
    "tiers.csv",
    "load.png",
    "recovery.png",
    "attempts.png",
    "report.html",
    "perf.json",
    "trace.json",
];

/// One scenario's runs and what the report files and the terminal table
/// read from them (figures, summaries, alerts), each computed once.
pub struct RunReport<'a> {
    /// The scenario run.
    pub scenario: &'a Scenario,
    /// Its runs, sorted by (policy index, replication).
    pub results: &'a [RunResult],
    /// Each run's own figures, in the order of `results`.
    pub figures: Vec<RunFigures>,
    /// One summary per policy.
    pub summaries: Vec<PolicySummary>,
    /// The most replications any policy has.
    pub replications: usize,
    /// The optional columns some run has.
    pub extras: Extras,
    /// The alert rules evaluated on every run, in the order of `results`.
    pub alerts: Vec<RunAlerts>,
}

impl<'a> RunReport<'a> {
    /// Computes what the report reads from `results` (sorted by (policy
    /// index, replication), keeping their time series).
    pub fn new(scenario: &'a Scenario, results: &'a [RunResult]) -> RunReport<'a> {
        let figures = run_figures(results);
        let summaries = aggregate_figures(&figures);
        let replications = summaries.iter().map(|s| s.replications).max().unwrap_or(0);
        RunReport {
            scenario,
            results,
            figures,
            summaries,
            replications,
            extras: Extras::of(results),
            alerts: alerting::evaluate_all(scenario, results),
        }
    }
}

/// Writes every report file into `dir` and returns the paths written.
/// `dir` must exist: the caller stages it (see [`staging::Staging`]) before
/// the runs, so a bad output directory is reported before any time is spent
/// simulating.
pub fn write_all(
    dir: &Path,
    report: &RunReport<'_>,
    perf: &Perf,
    opts: &ReportOptions,
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    files::write_run_files(dir, report, &mut written)?;
    let pngs = if opts.no_plots || report.results.is_empty() {
        Vec::new()
    } else {
        write_plots(dir, report, opts, &mut written)?
    };
    let alert_lines = alerting::summary_lines(report.scenario, &report.alerts);
    // The files beside the page: those written so far, and perf.json,
    // written after it.
    let mut beside: Vec<&str> = written
        .iter()
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()))
        .collect();
    beside.push("perf.json");
    let page = html::page(report, &pngs, &alert_lines, &beside);
    save(dir, "report.html", page.as_bytes(), &mut written)?;
    output::save_json(dir, "perf.json", perf, &mut written)?;
    Ok(written)
}

/// Draws `load.png`, `recovery.png` and `attempts.png` into `dir` and
/// returns them as figures of the HTML page.
fn write_plots(
    dir: &Path,
    report: &RunReport<'_>,
    opts: &ReportOptions,
    written: &mut Vec<PathBuf>,
) -> Result<Vec<html::Figure>, OutputError> {
    let (scenario, results) = (report.scenario, report.results);
    let load = dir.join("load.png");
    let size = opts.plot_size.unwrap_or((plot::WIDTH, plot::HEIGHT));
    plot::load_png(&load, report, size)?;
    let recovery = dir.join("recovery.png");
    plot::recovery_png(&recovery, report, size)?;
    let attempts = dir.join("attempts.png");
    plot::attempts_png(&attempts, scenario, results, size.0)?;
    let pngs = vec![
        html::Figure {
            title: "Offered load".into(),
            alt: "Attempts per second reaching the backend for each policy over time, with demand, nominal capacity, the fault windows and the periods during which alerts fired".into(),
            png: read_back(&load)?,
        },
        html::Figure {
            title: "Recovery".into(),
            alt: "Goodput divided by demand for each policy over time, with the recovery threshold and each policy's recovery time".into(),
            png: read_back(&recovery)?,
        },
        html::Figure {
            title: "Attempt distribution".into(),
            alt: "For each policy, how many requests succeeded at each attempt number and how many were given up after that many attempts, on a logarithmic scale".into(),
            png: read_back(&attempts)?,
        },
    ];
    written.extend([load, recovery, attempts]);
    Ok(pngs)
}

/// The summary table printed on stdout, plain text.
pub fn summary_table(report: &RunReport<'_>) -> String {
    table::render(report, false)
}

/// The summary table with ANSI colours when `color` is true (pass
/// `std::io::stdout().is_terminal()`), plain otherwise.
pub fn summary_table_colored(report: &RunReport<'_>, color: bool) -> String {
    table::render(report, color)
}
