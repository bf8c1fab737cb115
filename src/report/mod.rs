//! Reports made from finished runs: CSV, JSON, plots, HTML and the terminal
//! table. Reporting reads results; it never touches the engine.
//!
//! Every file except `perf.json` is a pure function of the scenario and the
//! results: numbers go through one formatting rule ([`crate::decimal::num`]), sums
//! run in (policy, replication) order, JSON keys keep a fixed order and the
//! plots use an embedded font, so identical inputs give identical bytes.

pub mod alerting;
pub mod assess;
pub mod describe;
pub mod files;
pub mod format;
pub mod heatmap;
pub mod html;
pub mod map;
pub mod plot;
pub mod staging;
pub mod table;

mod error;
use crate::metrics::aggregate::{aggregate_figures, run_figures};
use crate::metrics::{Extras, RunResult};
use crate::scenario::Scenario;
pub use error::{is_broken_pipe, OutputError};
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
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

fn save(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    written: &mut Vec<PathBuf>,
) -> Result<(), OutputError> {
    save_streamed(dir, name, written, |mut w| {
        w.write_all(bytes)?;
        Ok(w)
    })
}

/// A report file being written: buffered, and stopping at a stop request.
type StagedFile = BufWriter<staging::Stoppable<File>>;

/// Writes the file `name` piece by piece through a buffer (`write`
/// returns the writer it was given), for a file too large to build in
/// memory first; an I/O error names the file.
fn save_streamed(
    dir: &Path,
    name: &str,
    written: &mut Vec<PathBuf>,
    write: impl FnOnce(StagedFile) -> io::Result<StagedFile>,
) -> Result<(), OutputError> {
    let path = dir.join(name);
    staging::fail_point(name)?;
    // In pieces that each check for a stop (Ctrl-C, a signal), so a
    // large file is given up at once rather than finished.
    let written_out = File::create(&path)
        .and_then(|file| write(BufWriter::new(staging::Stoppable::new(file))))
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()));
    if let Err(source) = written_out {
        if crate::engine::stop::requested() {
            return Err(OutputError::Interrupted);
        }
        return Err(OutputError::Write { path, source });
    }
    written.push(path);
    Ok(())
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
];

/// Writes every report file into `dir` and returns the paths written.
/// `dir` must exist: the caller stages it (see [`staging::Staging`]) before
/// the runs, so a bad output directory is reported before any time is spent
/// simulating. `results` are sorted by (policy index, replication).
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
    save_streamed(dir, "timeseries.csv", &mut written, |w| {
        Ok(files::write_timeseries_csv(w, results)?)
    })?;
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
    save(
        dir,
        "attempts.csv",
        &files::attempts_csv(results)?,
        &mut written,
    )?;
    if !scenario.spec().downstream.is_empty() {
        save(dir, "tiers.csv", &files::tiers_csv(results)?, &mut written)?;
    }
    let alerts = alerting::evaluate_all(scenario, results);
    save(
        dir,
        "alerts.csv",
        &files::alerts_csv(&alerts)?,
        &mut written,
    )?;

    let mut pngs = Vec::new();
    if !(opts.no_plots || results.is_empty()) {
        let load = dir.join("load.png");
        let size = opts.plot_size.unwrap_or((plot::WIDTH, plot::HEIGHT));
        plot::load_png(&load, scenario, results, size)?;
        let recovery = dir.join("recovery.png");
        plot::recovery_png(&recovery, scenario, results, size)?;
        let attempts = dir.join("attempts.png");
        plot::attempts_png(&attempts, scenario, results, size.0)?;
        pngs.push(html::Figure {
            title: "Offered load".into(),
            alt: "Attempts per second reaching the backend for each policy over time, with demand, nominal capacity, the fault windows and the periods during which alerts fired".into(),
            png: read_back(&load)?,
        });
        pngs.push(html::Figure {
            title: "Recovery".into(),
            alt: "Goodput divided by demand for each policy over time, with the recovery threshold and each policy's recovery time".into(),
            png: read_back(&recovery)?,
        });
        pngs.push(html::Figure {
            title: "Attempt distribution".into(),
            alt: "For each policy, how many requests succeeded at each attempt number and how many were given up after that many attempts, on a logarithmic scale".into(),
            png: read_back(&attempts)?,
        });
        written.push(load);
        written.push(recovery);
        written.push(attempts);
    }
    let capacity = results.first().map(|r| r.summary.capacity_rps);
    let alert_lines = alerting::summary_lines(scenario, &alerts);
    let page = html::page(scenario, &summaries, capacity, &pngs, &alert_lines);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the streamed writer gets lands in the file, and any failure
    /// (here, no directory to create it in) names the file.
    #[test]
    fn a_streamed_file_is_written_whole_or_reported_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut written = Vec::new();
        save(dir.path(), "t.csv", b"a,b\n1,2\n", &mut written).unwrap();
        assert_eq!(written, [dir.path().join("t.csv")]);
        assert_eq!(std::fs::read(&written[0]).unwrap(), b"a,b\n1,2\n");
        let gone = dir.path().join("missing");
        let e = save_streamed(&gone, "t.csv", &mut written, Ok).unwrap_err();
        assert!(
            matches!(&e, OutputError::Write { path, .. } if *path == gone.join("t.csv")),
            "{e:?}"
        );
        assert_eq!(written.len(), 1);
    }
}
