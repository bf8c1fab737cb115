//! The layout of a summary row, shared by `summary.csv`, `summary.json`,
//! `replications.csv` and `sweep.csv`: `policy`, then the summary columns in
//! the order of [`Col::ALL`], in blocks (the columns each release added).
//! With more than one replication each block's columns are followed by the
//! `<col>_ci95` half-widths of its numeric columns, in the same order, and
//! the first block by `metastable_share` and `undetermined_share`. New
//! columns are appended in a new block, so scripts that read positions keep
//! working. `metastable` is `true`, `false` or `undetermined` (the run
//! ended too soon after its fault to tell). Cells are typed, so each file
//! writes them its own way.
//!
//! Optional columns ([`Col::extra`], e.g. `client_wait_ms`) are in no
//! block: a file writes them only when some run has them ([`Extras`]),
//! after everything else it writes (and their `_ci95` after them), so no
//! other column ever moves.

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

/// Where each release's summary columns start in [`Col::ALL`]: the
/// columns of a block are written together, followed (with more than one
/// replication) by their `_ci95` half-widths, and the first block by
/// `metastable_share` and `undetermined_share`. A later block comes after
/// everything of the earlier ones, so a new column never moves an existing
/// one.
const BLOCK_STARTS: [usize; 2] = [0, 22];

/// The columns of block `b` (optional columns excluded).
fn block(b: usize) -> Vec<Col> {
    let end = BLOCK_STARTS.get(b + 1).copied().unwrap_or(Col::ALL.len());
    Col::ALL[BLOCK_STARTS[b]..end]
        .iter()
        .copied()
        .filter(|c| c.extra().is_none())
        .collect()
}

/// The optional columns written when the runs have `extras`, in order.
pub fn extra_columns(extras: Extras) -> impl Iterator<Item = Col> {
    Col::ALL
        .into_iter()
        .filter(move |c| c.extra().is_some() && extras.has(c.extra()))
}

/// The header of `summary.csv` after `policy`, block by block (see
/// `BLOCK_STARTS`), for `replications` runs per policy.
pub fn summary_header_blocks(replications: usize) -> Vec<Vec<String>> {
    (0..BLOCK_STARTS.len())
        .map(|b| {
            let cols = block(b);
            let mut h: Vec<String> = cols.iter().map(|c| c.name().to_string()).collect();
            if replications > 1 {
                h.extend(
                    cols.iter()
                        .filter(|c| c.is_numeric())
                        .map(|c| format!("{}_ci95", c.name())),
                );
                if b == 0 {
                    h.push("metastable_share".into());
                    h.push("undetermined_share".into());
                }
            }
            h
        })
        .collect()
}

/// The header of `summary.csv` for `replications` runs per policy.
pub fn summary_header(replications: usize) -> Vec<String> {
    let mut h = vec!["policy".to_string()];
    h.extend(summary_header_blocks(replications).into_iter().flatten());
    h
}

/// One policy's `summary.csv` cells after `policy`, block by block (see
/// [`summary_header_blocks`]).
pub fn summary_row_blocks(s: &PolicySummary, replications: usize) -> Vec<Vec<Cell>> {
    (0..BLOCK_STARTS.len())
        .map(|b| {
            let cols = block(b);
            let mut row: Vec<Cell> = cols
                .iter()
                .map(|&c| match c {
                    Col::Metastable => match s.recovery {
                        Recovery::Undetermined => Cell::Text("undetermined".into()),
                        r => Cell::Bool(r == Recovery::Degraded),
                    },
                    c => Cell::Num(s.get(c)),
                })
                .collect();
            if replications > 1 {
                for c in cols.iter().filter(|c| c.is_numeric()) {
                    row.push(Cell::Num(s.ci(*c)));
                }
                if b == 0 {
                    row.push(Cell::Num(Some(s.metastable_share)));
                    row.push(Cell::Num(Some(
                        s.undetermined_runs as f64 / s.replications.max(1) as f64,
                    )));
                }
            }
            row
        })
        .collect()
}

/// One policy's `summary.csv` row (see [`summary_header`]).
pub fn summary_row(s: &PolicySummary, replications: usize) -> Vec<Cell> {
    let mut row = vec![Cell::Text(s.policy.clone())];
    row.extend(summary_row_blocks(s, replications).into_iter().flatten());
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
    h.extend(
        Col::ALL
            .iter()
            .filter(|c| c.extra().is_none())
            .map(|c| c.name().to_string()),
    );
    h.extend(extra_columns(extras).map(|c| c.name().to_string()));
    h
}
