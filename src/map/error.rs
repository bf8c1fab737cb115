//! Map axes that do not make a map, and map shards that do not join.

use crate::sweep::{first_of, EditedShard};

/// Map axes that do not make a map, or map shards that do not join into
/// one (`map`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// `--x` and `--y` name the same path, or one a field within the other.
    #[error("--x {0} and --y {1} set the same field; a map needs two different parameters")]
    SamePath(String, String),
    /// A value appears twice on one axis.
    #[error("--{axis} {path}: the value {value} is given twice")]
    Duplicate {
        /// `x` or `y`.
        axis: &'static str,
        /// The axis' path.
        path: String,
        /// The value repeated.
        value: String,
    },
    /// A cell whose policies differ from the scenario's.
    #[error("map cell {index}: its policies ({}) differ from the scenario's; a map may change policy fields, not the list", .policies.join(", "))]
    Policies {
        /// The cell.
        index: usize,
        /// Its policies.
        policies: Vec<String>,
    },
    /// No cell has an incident, so no run can recover or stay degraded.
    #[error("no cell of the map has a fault or a load spike to recover from, so every cell would be undetermined; give the scenario a fault (or map one of its fields)")]
    NoIncident,
    /// No shard directories given to merge.
    #[error("merge: no map directories given")]
    NothingToMerge,
    /// A shard of another map.
    #[error("{origin}: not a shard of the same map as {first} (the scenario and its contents, --set values, --x, --y, policies, replications, refinement, --recover-within, seed and N of the shards must all match)")]
    Different {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// A manifest whose shard is not `I/N` with 1 <= I <= N.
    #[error("{origin}/map.json: shard.{field} {value} {why}: was the shard edited?")]
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
    /// A shard given twice.
    #[error("{origin}: shard {index}/{count} is also in {other}")]
    Twice {
        /// The shard directory.
        origin: String,
        /// The shard's I.
        index: usize,
        /// The shard's N.
        count: usize,
        /// The other directory holding it.
        other: String,
    },
    /// Shards missing.
    #[error("merge: missing map shard{} {}", if .0.len() == 1 { "" } else { "s" }, first_of(.0))]
    Missing(Vec<String>),
    /// A (policy, cell) with no row, or with two, among the shards.
    #[error("merge: the map has {} row for policy {policy:?} at x = {x}, y = {y}: a map.csv was {}", if *.twice { "more than one" } else { "no" }, if *.twice { "given twice or edited" } else { "cut short" })]
    RowCount {
        /// The policy.
        policy: String,
        /// The cell's x value.
        x: String,
        /// The cell's y value.
        y: String,
        /// Two rows rather than none.
        twice: bool,
    },
    /// A shard file that no map writes.
    #[error(transparent)]
    Edited(#[from] EditedShard),
    /// A row the manifest does not explain.
    #[error("{origin}: map.csv row {row} names a policy or value not in map.json")]
    StrayRow {
        /// The shard directory.
        origin: String,
        /// 1-based row.
        row: usize,
    },
    /// A row for a cell of another shard's block: the file was edited,
    /// or rows were copied between shards.
    #[error("{origin}: map.csv line {line} is the row for {cell}, a cell of shard {owner}/{count}, not of this shard ({index}/{count}): was the file edited?")]
    ForeignRow {
        /// The shard directory.
        origin: String,
        /// 1-based line of map.csv (the header is line 1).
        line: usize,
        /// The policy and cell, in words (`policy "p" at x = 1, y = 2s`).
        cell: String,
        /// The shard the directory holds.
        index: usize,
        /// The shard whose block holds the cell.
        owner: usize,
        /// N of the shards.
        count: usize,
    },
    /// Shard outputs of different kinds given to merge.
    #[error("{origin}: a {found} output among {expected} outputs; merge one kind at a time")]
    MixedKinds {
        /// The directory.
        origin: String,
        /// What it holds.
        found: &'static str,
        /// What the first one holds.
        expected: &'static str,
    },
    /// A directory holding both a sweep's and a map's output (one `-o`
    /// for both).
    #[error("{0}: holds both a sweep (sweep.json) and a map (map.json); write each to its own -o directory and merge that one")]
    BothKinds(String),
    /// A directory given to merge that holds no output.
    #[error("{0}: holds no sweep.json or map.json, nor directories that do")]
    NoOutput(String),
    /// A merge output directory that would overwrite or hide an input.
    #[error("-o {output}: {why}; choose another output directory")]
    OutputIsInput {
        /// The output directory, as given.
        output: String,
        /// Which input it is, and what writing there would do.
        why: String,
    },
}
