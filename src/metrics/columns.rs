//! The layout of a summary row, shared by `summary.csv`, `summary.json`,
//! `replications.csv` and `sweep.csv`: `policy`, then the summary columns in
//! the order of [`Col::ALL`] (always, so scripts can rely on positions).
//! With more than one replication the `<col>_ci95` half-widths of the
//! numeric columns follow, in the same order, then `metastable_share` and
//! `undetermined_share`. `metastable` is `true`, `false` or `undetermined`
//! (the run ended too soon after its fault to tell). Cells are typed, so each file writes them its own way.
//!
//! Optional columns ([`Col::extra`], e.g. `client_wait_ms`) are not part
//! of that row: a file writes them only when some run has them
//! ([`Extras`]), after everything else it writes (and their `_ci95`
//! after them), so no other column ever moves.

use super::aggregate::{Col, PolicySummary};
use super::{Extras, Recovery};
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

/// The columns every summary row has, in file order.
fn base_columns() -> impl Iterator<Item = Col> {
    Col::ALL.into_iter().filter(|c| c.extra().is_none())
}

/// The optional columns written when the runs have `extras`, in order.
pub fn extra_columns(extras: Extras) -> impl Iterator<Item = Col> {
    Col::ALL
        .into_iter()
        .filter(move |c| c.extra().is_some() && extras.has(c.extra()))
}

/// The header of `summary.csv` for `replications` runs per policy (the
/// optional columns are in [`extra_header`]).
pub fn summary_header(replications: usize) -> Vec<String> {
    let mut h = vec!["policy".to_string()];
    h.extend(base_columns().map(|c| c.name().to_string()));
    if replications > 1 {
        h.extend(
            base_columns()
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
    for c in base_columns() {
        row.push(match c {
            Col::Metastable => match s.recovery {
                Recovery::Undetermined => Cell::Text("undetermined".into()),
                r => Cell::Bool(r == Recovery::Degraded),
            },
            c => Cell::Num(s.get(c)),
        });
    }
    if replications > 1 {
        for c in base_columns().filter(|c| c.is_numeric()) {
            row.push(Cell::Num(s.ci(c)));
        }
        row.push(Cell::Num(Some(s.metastable_share)));
        row.push(Cell::Num(Some(
            s.undetermined_runs as f64 / s.replications.max(1) as f64,
        )));
    }
    row
}

/// The optional summary columns `extras` asks for, with their `_ci95`
/// half-widths after them when `replications > 1`.
pub fn extra_header(replications: usize, extras: Extras) -> Vec<String> {
    let mut h: Vec<String> = extra_columns(extras)
        .map(|c| c.name().to_string())
        .collect();
    if replications > 1 {
        h.extend(extra_columns(extras).map(|c| format!("{}_ci95", c.name())));
    }
    h
}

/// One policy's cells for [`extra_header`].
pub fn extra_row(s: &PolicySummary, replications: usize, extras: Extras) -> Vec<Cell> {
    let mut row: Vec<Cell> = extra_columns(extras).map(|c| Cell::Num(s.get(c))).collect();
    if replications > 1 {
        row.extend(extra_columns(extras).map(|c| Cell::Num(s.ci(c))));
    }
    row
}

/// The header of `replications.csv`: `policy,replication` then the
/// summary columns, the optional ones last.
pub fn replications_header(extras: Extras) -> Vec<String> {
    let mut h = vec!["policy".to_string(), "replication".to_string()];
    h.extend(base_columns().map(|c| c.name().to_string()));
    h.extend(extra_columns(extras).map(|c| c.name().to_string()));
    h
}
