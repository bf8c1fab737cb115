//! Reports made from finished runs: CSV, JSON, plots, HTML and the terminal
//! table. Reporting reads results; it never touches the engine.
//!
//! Every file except `perf.json` is a pure function of the scenario and the
//! results: numbers go through one formatting rule ([`format::num`]), sums
//! run in (policy, replication) order, JSON keys keep a fixed order and the
//! plots use an embedded font, so identical inputs give identical bytes.

pub mod describe;
pub mod files;
pub mod format;
pub mod heatmap;
pub mod html;
pub mod plot;
pub mod table;

use crate::error::OutputError;
use crate::metrics::aggregate::{aggregate_figures, run_figures};
use crate::metrics::{Extras, RunResult};
use crate::scenario::Scenario;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How the runs went, for `perf.json` (the only output that may differ
/// between identical runs).
#[derive(Clone, Debug, Serialize)]
pub struct Perf {
    /// Events the engine processed, all runs together.
    pub events: u64,
    /// Wall-clock seconds the runs took.
    pub wall_s: f64,
    /// `events / wall_s`.
    pub events_per_s: f64,
    /// Worker threads used.
    pub threads: usize,
    /// (policy, replication) runs made.
    pub runs: usize,
    /// Requests counted in all runs.
    pub requests: u64,
}

/// Which optional outputs to make.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    /// Skip `load.png` and `recovery.png` (and their place in the HTML).
    /// Copies left in the directory by an earlier run are deleted, so every
    /// file there comes from the same run.
    pub no_plots: bool,
    /// Size of `load.png` and `recovery.png` in pixels (width, height);
    /// `None` = [`plot::WIDTH`] × [`plot::HEIGHT`].
    pub plot_size: Option<(u32, u32)>,
}

fn save(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    written: &mut Vec<PathBuf>,
) -> Result<(), OutputError> {
    let path = dir.join(name);
    if let Err(source) = std::fs::write(&path, bytes) {
        return Err(OutputError::Write { path, source });
    }
    written.push(path);
    Ok(())
}

/// Writes every report file into `dir` and returns the paths written.
/// `dir` must exist: the caller creates it once, before the runs, so a bad
/// output directory is reported before any time is spent simulating.
/// `results` are sorted by (policy index, replication).
pub fn write_all(
    dir: &Path,
    scenario: &Scenario,
    results: &[RunResult],
    perf: &Perf,
    opts: &ReportOptions,
) -> Result<Vec<PathBuf>, OutputError> {
    let figures = run_figures(results);
    let summaries = aggregate_figures(&figures);
    let reps = summaries.iter().map(|s| s.replications).max().unwrap_or(0);
    let extras = Extras::of(results);
    let mut written = Vec::new();
    save(
        dir,
        "timeseries.csv",
        &files::timeseries_csv(results)?,
        &mut written,
    )?;
    save(
        dir,
        "summary.csv",
        &files::summary_csv(&summaries, reps, extras)?,
        &mut written,
    )?;
    save(
        dir,
        "summary.json",
        files::summary_json(scenario, &summaries, reps, extras).as_bytes(),
        &mut written,
    )?;
    save(
        dir,
        "replications.csv",
        &files::replications_csv(&figures, extras)?,
        &mut written,
    )?;

    let mut pngs = Vec::new();
    if opts.no_plots || results.is_empty() {
        for stale in ["load.png", "recovery.png"] {
            let path = dir.join(stale);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(OutputError::Remove { path, source }),
            }
        }
    } else {
        let load = dir.join("load.png");
        let size = opts.plot_size.unwrap_or((plot::WIDTH, plot::HEIGHT));
        plot::load_png(&load, scenario, results, size)?;
        let recovery = dir.join("recovery.png");
        plot::recovery_png(&recovery, scenario, results, size)?;
        pngs.push(html::Figure {
            title: "Offered load".into(),
            alt: "Attempts per second reaching the backend for each policy over time, with demand, nominal capacity and the fault windows".into(),
            png: read_back(&load)?,
        });
        pngs.push(html::Figure {
            title: "Recovery".into(),
            alt: "Goodput divided by demand for each policy over time, with the recovery threshold and each policy's recovery time".into(),
            png: read_back(&recovery)?,
        });
        written.push(load);
        written.push(recovery);
    }
    let capacity = results.first().map(|r| r.summary.capacity_rps);
    let page = html::page(scenario, &summaries, capacity, &pngs);
    save(dir, "report.html", page.as_bytes(), &mut written)?;
    save(
        dir,
        "perf.json",
        (serde_json::to_string_pretty(perf)? + "\n").as_bytes(),
        &mut written,
    )?;
    Ok(written)
}

/// The bytes of a file written moments ago (a plot, embedded into the page).
fn read_back(path: &Path) -> Result<Vec<u8>, OutputError> {
    std::fs::read(path).map_err(|source| OutputError::ReadBack {
        path: path.to_path_buf(),
        source,
    })
}

/// The summary table printed on stdout, plain text.
pub fn summary_table(scenario: &Scenario, results: &[RunResult]) -> String {
    table::render(scenario, results, false)
}

/// The summary table with ANSI colours when `color` is true (pass
/// `std::io::stdout().is_terminal()`), plain otherwise.
pub fn summary_table_colored(scenario: &Scenario, results: &[RunResult], color: bool) -> String {
    table::render(scenario, results, color)
}
