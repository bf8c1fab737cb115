//! The layout of a summary row, shared by `summary.csv`, `summary.json`,
//! `replications.csv` and `sweep.csv`: `policy`, then the summary columns in
//! the order of [`Col::ALL`] (always, so scripts can rely on positions).
//! With more than one replication the `<col>_ci95` half-widths of the
//! numeric columns follow, in the same order, then `metastable_share` and
//! `undetermined_share`. `metastable` is `true`, `false` or `undetermined`
//! (the run ended too soon after its fault to tell). Cells are typed, so each file writes them its own way.

use super::aggregate::{Col, PolicySummary};
use super::Recovery;
use crate::decimal::opt;

/// One cell of a summary row, typed so CSV and JSON can each write it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A name, written as is (CSV) or as a JSON string.
    Text(String),
    /// A number under the report rule; `None` is empty / `null`.
    Num(Option<f64>),
    /// `true` / `false`.
    Bool(bool),
}

impl Cell {
    /// The cell's CSV text under the number rule.
    pub fn csv(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Num(x) => opt(*x),
            Cell::Bool(b) => b.to_string(),
        }
    }
}

/// The header of `summary.csv` for `replications` runs per policy.
pub fn summary_header(replications: usize) -> Vec<String> {
    let mut h = vec!["policy".to_string()];
    h.extend(Col::ALL.iter().map(|c| c.name().to_string()));
    if replications > 1 {
        h.extend(
            Col::ALL
                .iter()
                .filter(|c| c.is_numeric())
                .map(|c| format!("{}_ci95", c.name())),
        );
        h.push("metastable_share".into());
        h.push("undetermined_share".into());
    }
    h
}

/// One policy's `summary.csv` row (see [`summary_header`]).
pub fn summary_row(s: &PolicySummary, replications: usize) -> Vec<Cell> {
    let mut row = vec![Cell::Text(s.policy.clone())];
    for c in Col::ALL {
        row.push(match c {
            Col::Metastable => match s.recovery {
                Recovery::Undetermined => Cell::Text("undetermined".into()),
                r => Cell::Bool(r == Recovery::Degraded),
            },
            c => Cell::Num(s.get(c)),
        });
    }
    if replications > 1 {
        for c in Col::ALL.iter().filter(|c| c.is_numeric()) {
            row.push(Cell::Num(s.ci(*c)));
        }
        row.push(Cell::Num(Some(s.metastable_share)));
        row.push(Cell::Num(Some(
            s.undetermined_runs as f64 / s.replications.max(1) as f64,
        )));
    }
    row
}

/// The header of `replications.csv`: `policy,replication` then the
/// summary columns.
pub fn replications_header() -> Vec<String> {
    let mut h = vec!["policy".to_string(), "replication".to_string()];
    h.extend(Col::ALL.iter().map(|c| c.name().to_string()));
    h
}
