//! The errors of joining shards: a shard file no run writes
//! ([`EditedShard`], which the map's merge shares) and shard outputs that
//! do not make one sweep ([`MergeError`]); and why a sweep point could not
//! be loaded ([`PointError`]).

use crate::runner::RunError;
use crate::scenario::error::InvalidInput;

/// A shard file of a sweep or a map that the command never writes: both
/// merges refuse it the same way, naming the file (and the row and column
/// of a cell) so the user can see what was edited.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditedShard {
    /// A `sweep.json` or `map.json` that no run writes (an axis without
    /// values or with a value twice, a grid that cannot be counted, a
    /// shard larger than one process runs).
    #[error("{origin}: {why}: was the shard edited?")]
    Manifest {
        /// The file.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
    /// A result cell that is not the value its column holds.
    #[error("{origin} line {line}, column {column} ({name}): {found:?} is not {expected}: was the shard edited?")]
    Cell {
        /// The file.
        origin: String,
        /// 1-based line (the header is line 1).
        line: usize,
        /// 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// The cell as found.
        found: String,
        /// What the column holds.
        expected: &'static str,
    },
}

/// Shard outputs that do not join into one sweep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("merge: no shard directories given")]
    NoShards,
    /// A manifest whose shard is not `I/N` with 1 <= I <= N.
    #[error("{origin}/sweep.json: shard.{field} {value} {why}: was the shard edited?")]
    BadShard {
        /// The shard directory.
        origin: String,
        /// `index` or `count`.
        field: &'static str,
        /// Its value.
        value: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A manifest whose point count is not the size of its grid.
    #[error("{origin}/sweep.json: points {points}, but its axes make {grid} points: was the shard edited?")]
    Points {
        /// The shard directory.
        origin: String,
        /// `points` as written.
        points: usize,
        /// The product of the axes' lengths.
        grid: usize,
    },
    /// A swept value in `sweep.csv` that is not the axis value
    /// `sweep.json` gives for the row's point.
    #[error("{origin}/sweep.csv line {line}, column {column} ({name}): expected {expected:?} as sweep.json gives for point {point}, found {found:?}: was the shard edited?")]
    SweptValue {
        /// The shard directory.
        origin: String,
        /// 1-based line (the header is line 1).
        line: usize,
        /// 1-based column.
        column: usize,
        /// The axis (its path).
        name: Box<str>,
        /// The row's point index.
        point: usize,
        /// The value sweep.json gives.
        expected: Box<str>,
        /// The value found.
        found: Box<str>,
    },
    /// A `sweep.csv` header whose swept-value columns are not sweep.json's
    /// axes.
    #[error("{origin}/sweep.csv line 1, column {column}: expected the axis {expected:?} as sweep.json gives, found {found:?}: was the shard edited?")]
    AxisColumn {
        /// The shard directory.
        origin: String,
        /// 1-based column.
        column: usize,
        /// The axis' path.
        expected: String,
        /// The column's name found.
        found: String,
    },
    /// A shard of another sweep.
    #[error("{origin}: not a shard of the same sweep as {first} (the scenario and its contents, --set values, --seed, --policy, replications and N of --shard I/N must all match)")]
    OtherSweep {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// A `sweep.csv` with other columns than the first shard's.
    #[error("{origin}: sweep.csv columns differ from {first}")]
    Columns {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// The same shard given twice.
    #[error("{origin}: shard {index}/{count} is also in {other}")]
    Duplicate {
        /// The shard directory.
        origin: String,
        /// The shard's I.
        index: usize,
        /// The shard's N.
        count: usize,
        /// The other directory holding it.
        other: String,
    },
    /// Shards of the sweep that were not given (`I/N` each).
    #[error("merge: missing shard{} {}", if .0.len() == 1 { "" } else { "s" }, first_of(.0))]
    Missing(Vec<String>),
    /// A row whose first cell is not a point index.
    #[error("{origin}: sweep.csv row without a point index")]
    NoPointIndex {
        /// The shard directory.
        origin: String,
    },
    /// A row for a point of another shard's slice: the file was edited,
    /// or rows were copied between shards.
    #[error("{origin}: the sweep.csv row for point {point}, policy {policy:?} is a point of shard {owner}/{count}, not of this shard ({index}/{count}): was the shard edited?")]
    ForeignRow {
        /// The shard directory.
        origin: String,
        /// The row's point index.
        point: usize,
        /// The row's policy.
        policy: String,
        /// The shard the directory holds.
        index: usize,
        /// The shard whose slice holds the point.
        owner: usize,
        /// N of the shards.
        count: usize,
    },
    /// A row for a point or policy the sweep does not have, or a row
    /// given twice.
    #[error("{origin}: the sweep.csv row for point {point}, policy {policy:?} {why}: was the shard edited?")]
    StrayRow {
        /// The shard directory.
        origin: String,
        /// The row's point index.
        point: usize,
        /// The row's policy.
        policy: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A shard file that no sweep writes.
    #[error(transparent)]
    Edited(#[from] EditedShard),
    /// No shard holds this row.
    #[error("merge: no shard has the row for point {point}, policy {policy:?}: a sweep.csv was cut short")]
    MissingRow {
        /// The point index.
        point: usize,
        /// The policy.
        policy: String,
    },
}

/// The first few items of a long list, and how many more there are (a
/// merge can miss millions of shards).
pub(crate) fn first_of(list: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = list[..list.len().min(SHOWN)].join(", ");
    if list.len() > SHOWN {
        text.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    text
}

/// Why a sweep point could not be loaded: its scenario is invalid (an
/// [`InvalidInput::SweepPoint`]) or a stop was requested.
#[derive(Debug, thiserror::Error)]
pub enum PointError {
    /// The point's scenario is invalid.
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// A stop was requested (Ctrl-C) while loading.
    #[error(transparent)]
    Run(#[from] RunError),
}
