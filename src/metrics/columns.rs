//! The layout of a summary row, shared by `summary.csv`, `summary.json`,
//! `replications.csv` and `sweep.csv`: `policy`, then the summary columns in
//! the order of [`Col::ALL`] (always, so scripts can rely on positions).
//! Optional columns ([`Col::extra`]) are written only when some run has
//! them ([`Extras`]); they come last in [`Col::ALL`], so the others never
//! move. With more than one replication the `<col>_ci95` half-widths of the
//! numeric columns follow, in the same order, and `metastable_share` comes
//! last. Cells are typed, so each file writes them its own way.

use super::aggregate::{Col, PolicySummary};
use super::Extras;
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

/// The summary columns written when the runs have `extras`, in file order.
pub fn columns(extras: Extras) -> impl Iterator<Item = Col> {
    Col::ALL.into_iter().filter(move |c| extras.has(c.extra()))
}

/// The header of `summary.csv` for `replications` runs per policy.
pub fn summary_header(replications: usize, extras: Extras) -> Vec<String> {
    let mut h = vec!["policy".to_string()];
    h.extend(columns(extras).map(|c| c.name().to_string()));
    if replications > 1 {
        h.extend(
            columns(extras)
                .filter(|c| c.is_numeric())
                .map(|c| format!("{}_ci95", c.name())),
        );
        h.push("metastable_share".into());
    }
    h
}

/// One policy's `summary.csv` row (see [`summary_header`]).
pub fn summary_row(s: &PolicySummary, replications: usize, extras: Extras) -> Vec<Cell> {
    let mut row = vec![Cell::Text(s.policy.clone())];
    for c in columns(extras) {
        row.push(match c {
            Col::Metastable => Cell::Bool(s.metastable),
            c => Cell::Num(s.get(c)),
        });
    }
    if replications > 1 {
        for c in columns(extras).filter(|c| c.is_numeric()) {
            row.push(Cell::Num(s.ci(c)));
        }
        row.push(Cell::Num(Some(s.metastable_share)));
    }
    row
}

/// The header of `replications.csv`: `policy,replication` then the
/// summary columns.
pub fn replications_header(extras: Extras) -> Vec<String> {
    let mut h = vec!["policy".to_string(), "replication".to_string()];
    h.extend(columns(extras).map(|c| c.name().to_string()));
    h
}
