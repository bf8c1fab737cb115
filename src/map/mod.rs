//! Recovery maps: for every cell of a two-parameter grid and every policy,
//! the share of replications that recover from the scenario's fault and the
//! median recovery time. The answer to "how close is the cliff?".
//!
//! **Cells.** Cell `c = yi · nx + xi`: rows of the grid are the y values,
//! the x value varies fastest. Each cell is the scenario with
//! `--set X=x --set Y=y`.
//!
//! **Adaptive refinement.** Replications are spent near the boundary, not
//! in flat regions. A coarse pass runs replications `0..coarse` of every
//! (cell, policy); a (cell, policy) then gets replications
//! `coarse..replications` when its coarse share of recovered runs is
//! strictly between 0 and 1, or when one of its four neighbours' coarse
//! share differs from its own. Replication indices are fixed per cell, so a
//! cell's result does not depend on which pass ran it: a refined cell is
//! exactly the cell a full run would give.
//!
//! **Shards.** Shard I/N holds a contiguous block of cells (cells
//! `len·(I−1)/N .. len·I/N`, bands of rows), unlike the interleaved shards
//! of `sweep`. With refinement on, a shard also runs the coarse pass of the
//! cells next to its block (its halo), so every refinement decision sees
//! the same coarse results as an unsharded map would: shard outputs merge
//! byte for byte into the unsharded one. The halo costs at most two rows
//! of coarse runs per shard.
//!
//! Determinism: every run is independent, results come back in job order
//! (`runner::run_jobs`), and every figure is a function of a cell's own
//! runs.

pub mod outcome;

use crate::csv_text::safe_cell;
use crate::decimal::num;
use crate::metrics::RunResult;
use crate::runner::early::Question;
use crate::runner::shared::run_sharing_prefixes;
use crate::runner::{Job, RunError};
use crate::scenario::set::paths_overlap;
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::Scenario;
use crate::sweep::{Axis, Row, Shard, Table};
use outcome::{outcome_within, Outcome};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;

mod error;
use crate::sweep::{EditedShard, Gap};
pub use error::MapError;

/// The two axes of a map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapGrid {
    /// Across (columns of the picture).
    pub x: Axis,
    /// Up (rows of the picture).
    pub y: Axis,
}

impl MapGrid {
    /// Checks the axes: two different paths, neither within the other
    /// (`traffic` and `traffic.rate`), no value twice on an axis.
    pub fn new(x: Axis, y: Axis) -> Result<MapGrid, MapError> {
        if paths_overlap(&x.path, &y.path) {
            return Err(MapError::SamePath(x.path, y.path));
        }
        for (name, a) in [("x", &x), ("y", &y)] {
            // In n log n: a map.json read back may hold any number.
            let mut seen = std::collections::BTreeSet::new();
            for v in &a.values {
                if !seen.insert(v.as_str()) {
                    return Err(MapError::Duplicate {
                        axis: name,
                        path: a.path.clone(),
                        value: v.clone(),
                    });
                }
            }
        }
        Ok(MapGrid { x, y })
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.x.values.len().saturating_mul(self.y.values.len())
    }

    /// Whether the map has no cells.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (x index, y index) of cell `c`.
    pub fn coords(&self, c: usize) -> (usize, usize) {
        let nx = self.x.values.len();
        (c % nx, c / nx)
    }

    /// The cell at (x index, y index).
    pub fn cell(&self, xi: usize, yi: usize) -> usize {
        yi * self.x.values.len() + xi
    }

    /// The `PATH=VALUE` assignments of cell `c` (x first).
    pub fn assignments(&self, c: usize) -> Vec<String> {
        let (xi, yi) = self.coords(c);
        vec![self.x.assignment(xi), self.y.assignment(yi)]
    }

    /// The cells left, right, below and above `c` that exist.
    pub fn neighbours(&self, c: usize) -> Vec<usize> {
        let (xi, yi) = self.coords(c);
        let (nx, ny) = (self.x.values.len(), self.y.values.len());
        let mut out = Vec::with_capacity(4);
        if xi > 0 {
            out.push(self.cell(xi - 1, yi));
        }
        if xi + 1 < nx {
            out.push(self.cell(xi + 1, yi));
        }
        if yi > 0 {
            out.push(self.cell(xi, yi - 1));
        }
        if yi + 1 < ny {
            out.push(self.cell(xi, yi + 1));
        }
        out
    }

    /// The cell holding the values `x` and `y`, if both are on the axes.
    pub fn find(&self, x: &str, y: &str) -> Option<usize> {
        let xi = self.x.values.iter().position(|v| v == x)?;
        let yi = self.y.values.iter().position(|v| v == y)?;
        Some(self.cell(xi, yi))
    }
}

/// The cells of `shard` out of `len`: a contiguous block.
pub fn shard_cells(shard: Shard, len: usize) -> Range<usize> {
    let (i, n) = (shard.index as u128 - 1, shard.count.max(1) as u128);
    let at = |k: u128| (len as u128 * k / n) as usize;
    at(i)..at(i + 1)
}

/// How many replications each (cell, policy) gets, and in which passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    expecting = "an object with the `replications` of a refined cell and those of the `coarse` pass"
)]
pub struct Passes {
    /// Replications of a refined (or, without refinement, every) cell.
    pub replications: u32,
    /// Replications of the coarse pass; `None` = refinement off, every
    /// cell gets `replications`.
    pub coarse: Option<u32>,
}

impl Passes {
    /// `replications` per cell; with `refine`, a coarse pass of `coarse`
    /// (default `max(2, ⌈replications / 4⌉)`) first. Refinement is off
    /// when the coarse pass would already run every replication.
    pub fn new(replications: u32, refine: bool, coarse: Option<u32>) -> Passes {
        let c = coarse
            .unwrap_or_else(|| replications.div_ceil(4).max(2))
            .max(1);
        Passes {
            replications,
            coarse: (refine && c < replications).then_some(c),
        }
    }

    /// Replications every (cell, policy) gets in the first pass.
    pub fn first(&self) -> u32 {
        self.coarse.unwrap_or(self.replications)
    }
}

/// The cells whose scenarios a shard needs: its own block and, when
/// refining, the neighbours of the block (the halo), in cell order.
pub fn cells_needed(grid: &MapGrid, shard: Shard, passes: Passes) -> Vec<usize> {
    let own = shard_cells(shard, grid.len());
    let mut cells: Vec<usize> = own.clone().collect();
    if passes.coarse.is_some() {
        for c in own.clone() {
            cells.extend(grid.neighbours(c).into_iter().filter(|n| !own.contains(n)));
        }
        cells.sort_unstable();
        cells.dedup();
    }
    cells
}

/// What the runs of one (cell, policy) gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    /// Runs made.
    pub runs: u32,
    /// Runs that recovered after the fault.
    pub recovered: u32,
    /// Runs that stayed degraded.
    pub degraded: u32,
    /// Runs whose outcome cannot be told (see [`outcome()`]).
    pub undetermined: u32,
    /// Seconds from the fault's end to recovery, per recovered run.
    pub recovery_s: Vec<f64>,
    /// Attempts per request, per run.
    pub amplification: Vec<f64>,
    /// Peak offered load ÷ capacity, per run.
    pub peak_load_ratio: Vec<f64>,
}

impl Tally {
    /// Adds one run of `spec` (stopped once `question` was decided).
    pub fn add(&mut self, r: &RunResult, spec: &ScenarioSpec, question: Question) {
        self.runs += 1;
        match outcome_within(r.summary(), spec, question.recover_within) {
            Outcome::Recovered(after) => {
                self.recovered += 1;
                self.recovery_s.push(after);
            }
            Outcome::Degraded => self.degraded += 1,
            Outcome::Undetermined => self.undetermined += 1,
        }
        self.amplification.push(r.summary().amplification());
        self.peak_load_ratio.push(r.summary().peak_load_ratio());
    }

    /// Recovered ÷ determined runs; `None` when no run was determined.
    pub fn share(&self) -> Option<f64> {
        let determined = self.recovered + self.degraded;
        (determined > 0).then(|| f64::from(self.recovered) / f64::from(determined))
    }

    /// Whether at least half of the determined runs recovered.
    pub fn mostly_recovers(&self) -> bool {
        self.share().is_some_and(|s| s >= 0.5)
    }
}

/// The median of `values` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// A shard's results: a tally per (policy, own cell), and what it cost.
#[derive(Clone, Debug)]
pub struct MapRun {
    /// The shard's own cells.
    pub cells: Range<usize>,
    /// `tallies[policy][cell - cells.start]`.
    pub tallies: Vec<Vec<Tally>>,
    /// Runs simulated, the halo's coarse runs included.
    pub simulated: u64,
    /// Runs the shard's own cells would take without refinement.
    pub full: u64,
}

/// Runs a shard of a map. `scenarios` holds the scenario of every cell
/// [`cells_needed`] lists (same policies everywhere); `planned` is told
/// how many runs each pass adds (for a progress bar) and `on_done` is
/// called once per finished run. A run that cannot finish fails the map.
pub fn run_map(
    grid: &MapGrid,
    shard: Shard,
    passes: Passes,
    question: Question,
    scenarios: &BTreeMap<usize, Scenario>,
    planned: &dyn Fn(u64),
    on_done: &(dyn Fn() + Sync),
) -> Result<MapRun, RunError> {
    let own = shard_cells(shard, grid.len());
    let policies = scenarios.values().next().map_or(0, |s| s.policies().len());
    // Pass 1: every needed cell, replications 0..first.
    let first = passes.first();
    let jobs = coarse_jobs(scenarios, policies, first);
    let mut coarse: BTreeMap<(usize, usize), Tally> = BTreeMap::new();
    let simulated_first = jobs.len() as u64;
    planned(simulated_first);
    let plain: Vec<Job<'_>> = jobs.iter().map(|(_, j)| *j).collect();
    for ((c, job), r) in jobs
        .iter()
        .zip(run_sharing_prefixes(&plain, question, on_done)?)
    {
        coarse
            .entry((job.policy, *c))
            .or_default()
            .add(&r, job.scenario.spec(), question);
    }
    // Pass 2: the own cells near the boundary get the rest.
    let refine = if passes.coarse.is_some() {
        near_boundary(grid, own.clone(), policies, &coarse)
    } else {
        Vec::new()
    };
    let mut jobs: Vec<(usize, Job<'_>)> = Vec::new();
    for &(policy, c) in &refine {
        for replication in first..passes.replications {
            jobs.push((
                c,
                Job {
                    scenario: &scenarios[&c],
                    policy,
                    replication,
                },
            ));
        }
    }
    planned(jobs.len() as u64);
    let plain: Vec<Job<'_>> = jobs.iter().map(|(_, j)| *j).collect();
    let simulated = simulated_first + plain.len() as u64;
    for ((c, job), r) in jobs
        .iter()
        .zip(run_sharing_prefixes(&plain, question, on_done)?)
    {
        coarse
            .get_mut(&(job.policy, *c))
            .expect("a coarse tally first")
            .add(&r, job.scenario.spec(), question);
    }
    let tallies = (0..policies)
        .map(|p| {
            own.clone()
                .map(|c| coarse.remove(&(p, c)).unwrap_or_default())
                .collect()
        })
        .collect();
    Ok(MapRun {
        full: own.len() as u64 * policies as u64 * u64::from(passes.replications),
        cells: own,
        tallies,
        simulated,
    })
}

/// The jobs of the coarse pass, each with its cell: every cell of
/// `scenarios`, every one of its `policies`, replications `0..first`.
fn coarse_jobs(
    scenarios: &BTreeMap<usize, Scenario>,
    policies: usize,
    first: u32,
) -> Vec<(usize, Job<'_>)> {
    let mut jobs: Vec<(usize, Job<'_>)> = Vec::new();
    for (&c, s) in scenarios {
        for policy in 0..policies {
            for replication in 0..first {
                jobs.push((
                    c,
                    Job {
                        scenario: s,
                        policy,
                        replication,
                    },
                ));
            }
        }
    }
    jobs
}

/// The (policy, cell) pairs of the `own` cells that get the refining
/// replications: their `coarse` share is split, or one of their
/// neighbours' differs. In policy order, then cell order.
fn near_boundary(
    grid: &MapGrid,
    own: Range<usize>,
    policies: usize,
    coarse: &BTreeMap<(usize, usize), Tally>,
) -> Vec<(usize, usize)> {
    let mut refine: Vec<(usize, usize)> = Vec::new();
    for policy in 0..policies {
        for c in own.clone() {
            let share = coarse[&(policy, c)].share();
            let split = share.is_some_and(|s| s > 0.0 && s < 1.0);
            let disagree = grid
                .neighbours(c)
                .iter()
                .any(|n| coarse[&(policy, *n)].share() != share);
            if split || disagree {
                refine.push((policy, c));
            }
        }
    }
    refine
}

/// What a `map.csv` column holds, as `merge` checks a shard's cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holds {
    /// The row's key (policy, x, y): checked against the manifest.
    Key,
    /// A whole number of runs.
    Runs,
    /// A share from 0 to 1, or empty.
    Share,
    /// A number, or empty.
    Number,
}

/// One row of `map.csv` as it is written: a policy's tally at a cell.
struct MapRow<'a> {
    policy: &'a str,
    x: &'a str,
    y: &'a str,
    tally: &'a Tally,
}

/// One column of `map.csv`: its name, what its cells hold and how a row's
/// cell is written.
pub struct MapColumn {
    /// The column's name in the header.
    pub name: &'static str,
    holds: Holds,
    cell: fn(&MapRow<'_>) -> String,
}

/// A number cell under the report rule; empty when there is none.
fn opt_cell(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

/// The columns of `map.csv`, declared once: the writer, the header and
/// `merge`'s checks all read this list.
pub const COLUMNS: [MapColumn; 11] = [
    MapColumn {
        name: "policy",
        holds: Holds::Key,
        cell: |r| r.policy.to_string(),
    },
    MapColumn {
        name: "x",
        holds: Holds::Key,
        cell: |r| r.x.to_string(),
    },
    MapColumn {
        name: "y",
        holds: Holds::Key,
        cell: |r| r.y.to_string(),
    },
    MapColumn {
        name: "replications",
        holds: Holds::Runs,
        cell: |r| r.tally.runs.to_string(),
    },
    MapColumn {
        name: "recovered_share",
        holds: Holds::Share,
        cell: |r| opt_cell(r.tally.share()),
    },
    MapColumn {
        name: "median_recovery_s",
        holds: Holds::Number,
        cell: |r| opt_cell(median(&r.tally.recovery_s)),
    },
    MapColumn {
        name: "recovered",
        holds: Holds::Runs,
        cell: |r| r.tally.recovered.to_string(),
    },
    MapColumn {
        name: "degraded",
        holds: Holds::Runs,
        cell: |r| r.tally.degraded.to_string(),
    },
    MapColumn {
        name: "undetermined",
        holds: Holds::Runs,
        cell: |r| r.tally.undetermined.to_string(),
    },
    MapColumn {
        name: "median_amplification",
        holds: Holds::Number,
        cell: |r| opt_cell(median(&r.tally.amplification)),
    },
    MapColumn {
        name: "median_peak_load_ratio",
        holds: Holds::Number,
        cell: |r| opt_cell(median(&r.tally.peak_load_ratio)),
    },
];

/// The header of `map.csv`.
pub fn column_names() -> impl Iterator<Item = &'static str> {
    COLUMNS.iter().map(|c| c.name)
}

/// The `map.csv` rows of a shard: policy by policy (scenario order), own
/// cells in cell order.
pub fn table(grid: &MapGrid, policies: &[String], run: &MapRun) -> Table {
    let mut rows = Vec::new();
    for (p, name) in policies.iter().enumerate() {
        for (k, c) in run.cells.clone().enumerate() {
            let (xi, yi) = grid.coords(c);
            let row = MapRow {
                policy: name,
                x: &grid.x.values[xi],
                y: &grid.y.values[yi],
                tally: &run.tallies[p][k],
            };
            rows.push(COLUMNS.iter().map(|col| (col.cell)(&row)).collect());
        }
    }
    Table {
        header: column_names().map(str::to_string).collect(),
        rows,
    }
}

/// The scenario's own value of each axis, as the scenario states it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(expecting = "an object with the scenario's own `x` and `y` values (each a string or null)")]
pub struct OperatingPoint {
    /// The scenario's value at the x path (`None`: not stated).
    pub x: Option<String>,
    /// The scenario's value at the y path.
    pub y: Option<String>,
}

/// What a map (or one shard of it) covered: `map.json` next to `map.csv`,
/// checked by `merge`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "the object `map` writes to map.json")]
pub struct MapManifest {
    /// The scenario's name.
    pub scenario: String,
    /// The seed the runs used.
    pub seed: u64,
    /// Across.
    pub x: Axis,
    /// Up.
    pub y: Axis,
    /// The policies, in scenario order.
    pub policies: Vec<String>,
    /// Replications of a refined cell, and of the coarse pass.
    pub passes: Passes,
    /// The scenario's own values of x and y (the marker on the picture).
    pub operating_point: OperatingPoint,
    /// Which block of cells this output holds.
    pub shard: Shard,
    /// Runs behind the rows held (the halo's coarse runs not counted).
    pub runs: u64,
    /// Runs the same rows would take without refinement.
    pub full_runs: u64,
    /// [`Scenario::fingerprint`] of the scenario before the axes' values,
    /// the same for every shard (empty in outputs of versions that did
    /// not record it).
    #[serde(default)]
    pub fingerprint: String,
    /// A run recovered when its recovery started within this long (s)
    /// after the fault's end (`--recover-within`); `None`: at any time
    /// before the run's end, as in outputs of versions without it.
    #[serde(default, serialize_with = "report_number")]
    pub recover_within_s: Option<f64>,
}

/// Writes a number of `map.json` as every report writes numbers
/// ([`num`]: `60`, not `60.0`); `null` when there is none.
fn report_number<S: serde::Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    let n = v.and_then(|x| num(x).parse::<serde_json::Number>().ok());
    n.serialize(s)
}

impl MapManifest {
    /// Sets `runs` and `full_runs` from the rows of `table`.
    pub fn count_runs(&mut self, table: &Table) {
        let col = table
            .column("replications")
            .expect("map.csv has a replications column");
        self.runs = table
            .rows
            .iter()
            .filter_map(|r| r.get(col)?.parse::<u64>().ok())
            .fold(0, u64::saturating_add);
        self.full_runs = table.rows.len() as u64 * u64::from(self.passes.replications);
    }

    /// Whether `other` describes a shard of the same map.
    fn same_map(&self, other: &MapManifest) -> bool {
        self.scenario == other.scenario
            && self.fingerprint == other.fingerprint
            && self.seed == other.seed
            && self.x == other.x
            && self.y == other.y
            && self.policies == other.policies
            && self.passes == other.passes
            && self.operating_point == other.operating_point
            && self.shard.count == other.shard.count
            && self.recover_within_s == other.recover_within_s
    }
}

/// Checks a manifest read back from a shard (`origin` names the file)
/// for what no map writes: an axis without values, with a value twice or
/// on the other's field, a shard index or count out of range. Returns the
/// grid; its size is counted with checked arithmetic before anything is
/// allocated from it.
pub fn check_manifest(m: &MapManifest, origin: &str) -> Result<MapGrid, MapError> {
    let bad = |why: String| {
        MapError::Edited(EditedShard::Manifest {
            origin: origin.to_string(),
            why,
        })
    };
    for (name, a) in [("x", &m.x), ("y", &m.y)] {
        if a.values.is_empty() {
            return Err(bad(format!("the {name} axis {:?} has no values", a.path)));
        }
    }
    let grid = MapGrid::new(m.x.clone(), m.y.clone()).map_err(|e| bad(e.to_string()))?;
    if m.policies.is_empty() {
        return Err(bad("it lists no policies".into()));
    }
    let cells =
        m.x.values
            .len()
            .checked_mul(m.y.values.len())
            .and_then(|c| c.checked_mul(m.policies.len()).map(|_| c))
            .ok_or_else(|| {
                bad(format!(
                    "{} × {} cells × {} policies are more rows than can be counted",
                    m.x.values.len(),
                    m.y.values.len(),
                    m.policies.len()
                ))
            })?;
    if let Some((field, value, why)) = m.shard.problem(cells, "cells") {
        return Err(MapError::BadShard {
            origin: origin
                .strip_suffix("/map.json")
                .unwrap_or(origin)
                .to_string(),
            field,
            value,
            why,
        });
    }
    Ok(grid)
}

/// What a cell of `map.csv` column `c` (of [`COLUMNS`]) must hold; `None`
/// when it does. Run counts are whole numbers, shares between 0 and 1,
/// the medians numbers, an empty cell where no run gave a value.
fn cell_problem(c: usize, cell: &str) -> Option<&'static str> {
    let number = || crate::sweep::is_report_number(cell);
    match COLUMNS[c].holds {
        Holds::Key => None,
        Holds::Runs => (cell.parse::<u32>().is_err() || !cell.bytes().all(|b| b.is_ascii_digit()))
            .then_some("a whole number of runs"),
        Holds::Share => {
            let share = || number() && (0.0..=1.0).contains(&cell.parse::<f64>().unwrap_or(-1.0));
            (!cell.is_empty() && !share()).then_some("a share from 0 to 1 or empty")
        }
        Holds::Number => (!cell.is_empty() && !number()).then_some("a number or empty"),
    }
}

/// Joins shard outputs into the manifest and table of the whole map, the
/// bytes an unsharded map writes. Every shard must be there once, and
/// every (policy, cell) in one of them, each cell the value its column
/// holds. Nothing is allocated from a size the manifests state: only from
/// the rows the tables hold.
pub fn merge(parts: Vec<(String, MapManifest, Table)>) -> Result<(MapManifest, Table), MapError> {
    let Some((first_origin, first, first_table)) = parts.first().cloned() else {
        return Err(MapError::NothingToMerge);
    };
    for (origin, m, _) in &parts {
        check_manifest(m, &format!("{origin}/map.json"))?;
    }
    check_one_map(&parts)?;
    check_header(&first_origin, &first_table.header)?;
    let grid = MapGrid {
        x: first.x.clone(),
        y: first.y.clone(),
    };
    let keys = RowKeys::new(&grid, &first.policies);
    // One row per (policy, cell) of the whole grid: a row given twice or
    // a shard cut short is refused rather than merged into a map that
    // looks whole.
    let mut rows: Vec<(usize, Row)> = Vec::new();
    for (origin, m, t) in &parts {
        let own = shard_cells(m.shard, grid.len());
        for (i, r) in t.rows.iter().enumerate() {
            let (at, row) = keys.row(origin, i, r)?;
            // A row of another shard's block names this file, not the
            // shard the row was copied from.
            if !own.contains(&(at % grid.len())) {
                return Err(keys.foreign_row(origin, i, at, m.shard));
            }
            rows.push((at, row));
        }
    }
    // In map order (stable), a row twice is next to its twin and a gap is
    // a (policy, cell) no shard has.
    rows.sort_by_key(|(at, _)| *at);
    let total = first.policies.len() * grid.len();
    match crate::sweep::first_gap(rows.iter().map(|(at, _)| *at), total) {
        Some(Gap::Twice(i)) => return Err(keys.row_count(rows[i].0, true)),
        Some(Gap::Missing(next)) => return Err(keys.row_count(next, false)),
        None => {}
    }
    let table = Table {
        header: first_table.header,
        rows: rows.into_iter().map(|(_, r)| r).collect(),
    };
    let mut manifest = MapManifest {
        shard: Shard::ALL,
        ..first
    };
    manifest.count_runs(&table);
    Ok((manifest, table))
}

/// Checks that the parts (at least one) are shards of the first one's
/// map, with its header, and that each of its shards is there exactly
/// once.
fn check_one_map(parts: &[(String, MapManifest, Table)]) -> Result<(), MapError> {
    let (first_origin, first, first_table) = &parts[0];
    let count = first.shard.count;
    let mut seen: BTreeMap<usize, String> = BTreeMap::new();
    for (origin, m, t) in parts {
        if !first.same_map(m) || t.header != first_table.header {
            return Err(MapError::Different {
                origin: origin.clone(),
                first: first_origin.clone(),
            });
        }
        if let Some(other) = seen.insert(m.shard.index, origin.clone()) {
            return Err(MapError::Twice {
                origin: origin.clone(),
                index: m.shard.index,
                count,
                other,
            });
        }
    }
    if seen.len() < count {
        let seen = seen.keys().copied().collect();
        return Err(MapError::Missing(crate::sweep::missing_shards(
            count, &seen,
        )));
    }
    Ok(())
}

/// Checks that `header` (the first shard's, from `origin`) is the one
/// every map writes: [`COLUMNS`]' names.
fn check_header(origin: &str, header: &[String]) -> Result<(), MapError> {
    if header.iter().map(String::as_str).ne(column_names()) {
        return Err(MapError::Edited(EditedShard::Manifest {
            origin: format!("{origin}/map.csv"),
            why: format!(
                "its header is not {}",
                column_names().collect::<Vec<_>>().join(",")
            ),
        }));
    }
    Ok(())
}

/// Cells as the CSV writer's rule wrote them, back to their index.
fn written_index(values: &[String]) -> BTreeMap<String, usize> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| (safe_cell(v).into_owned(), i))
        .collect()
}

/// The keys a row of a shard's `map.csv` may have (a policy, an x and a
/// y value of the merged map, as written), to place each row in the whole
/// table and name a (policy, cell) in errors.
struct RowKeys<'a> {
    grid: &'a MapGrid,
    /// The policies as given, in order.
    policies: &'a [String],
    xs: BTreeMap<String, usize>,
    ys: BTreeMap<String, usize>,
    policy_index: BTreeMap<String, usize>,
}

impl<'a> RowKeys<'a> {
    /// The keys of a map of `grid` and `policies`.
    fn new(grid: &'a MapGrid, policies: &'a [String]) -> RowKeys<'a> {
        RowKeys {
            grid,
            policies,
            xs: written_index(&grid.x.values),
            ys: written_index(&grid.y.values),
            policy_index: written_index(policies),
        }
    }

    /// Checks row `i` of `origin`'s table and returns its place in the
    /// whole table (policy × cells + cell), with the row as the unsharded
    /// map holds it.
    fn row(&self, origin: &str, i: usize, r: &Row) -> Result<(usize, Row), MapError> {
        let (p, xi, yi) = (|| {
            let p = *self.policy_index.get(r.get(0)?)?;
            let xi = *self.xs.get(r.get(1)?)?;
            let yi = *self.ys.get(r.get(2)?)?;
            Some((p, xi, yi))
        })()
        .ok_or_else(|| MapError::StrayRow {
            origin: origin.to_string(),
            row: i + 1,
        })?;
        check_row_cells(origin, i, r)?;
        let grid = self.grid;
        let at = p * grid.len() + grid.cell(xi, yi);
        // Kept as the unsharded map holds it in memory: the policy and
        // values as given, not as the CSV writer's rule wrote them.
        let raw: Row = [
            self.policies[p].as_str(),
            grid.x.values[xi].as_str(),
            grid.y.values[yi].as_str(),
        ]
        .into_iter()
        .chain(r.iter().skip(3))
        .collect();
        Ok((at, raw))
    }

    /// The error for row `i` of `origin` (shard `shard`), whose (policy,
    /// cell) at place `at` lies in another shard's block.
    fn foreign_row(&self, origin: &str, i: usize, at: usize, shard: Shard) -> MapError {
        let cells = self.grid.len();
        let (xi, yi) = self.grid.coords(at % cells);
        let owner = (1..=shard.count)
            .find(|&k| {
                shard_cells(
                    Shard {
                        index: k,
                        count: shard.count,
                    },
                    cells,
                )
                .contains(&(at % cells))
            })
            .unwrap_or(shard.index);
        MapError::ForeignRow {
            origin: origin.to_string(),
            line: i + 2,
            cell: format!(
                "policy {:?} at x = {}, y = {}",
                self.policies[at / cells],
                self.grid.x.values[xi],
                self.grid.y.values[yi]
            ),
            index: shard.index,
            owner,
            count: shard.count,
        }
    }

    /// The error for the (policy, cell) at place `at` of the whole table:
    /// given `twice`, or in no shard.
    fn row_count(&self, at: usize, twice: bool) -> MapError {
        let cells = self.grid.len();
        let (xi, yi) = self.grid.coords(at % cells);
        MapError::RowCount {
            policy: self.policies[at / cells].clone(),
            x: self.grid.x.values[xi].clone(),
            y: self.grid.y.values[yi].clone(),
            twice,
        }
    }
}

/// Checks the result cells of row `i` of `origin`'s table: each the value
/// its column holds, and the run counts adding up.
fn check_row_cells(origin: &str, i: usize, r: &Row) -> Result<(), MapError> {
    for (c, col) in COLUMNS.iter().enumerate().skip(3) {
        let cell = r.get(c).unwrap_or_default();
        if let Some(expected) = cell_problem(c, cell) {
            return Err(MapError::Edited(EditedShard::Cell {
                origin: format!("{origin}/map.csv"),
                line: i + 2,
                column: c + 1,
                name: col.name.to_string(),
                found: cell.to_string(),
                expected,
            }));
        }
    }
    let runs = |c: usize| u64::from(r[c].parse::<u32>().unwrap_or(0));
    if runs(6) + runs(7) + runs(8) != runs(3) {
        return Err(MapError::Edited(EditedShard::Cell {
            origin: format!("{origin}/map.csv"),
            line: i + 2,
            column: 4,
            name: COLUMNS[3].name.to_string(),
            found: r[3].to_string(),
            expected: "the sum of recovered, degraded and undetermined",
        }));
    }
    Ok(())
}

/// The value at a dotted `path` of a scenario as JSON (keys, array
/// indexes, policy names, and the body of a one-key variant such as
/// `{"outage": {...}}`, as `--set` reads paths), written as text: strings
/// as they are (`"90s"`), numbers by the report's number rule, anything
/// else as compact JSON. `None` when the path leads nowhere.
pub fn value_at(root: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    let mut cur = root;
    for seg in crate::scenario::path_segments(path).ok()? {
        cur = loop {
            match cur {
                Value::Object(map) => {
                    if let Some(v) = map.get(seg) {
                        break v;
                    }
                    // Look through a one-key variant.
                    match (map.len(), map.values().next()) {
                        (1, Some(inner @ Value::Object(_))) => cur = inner,
                        _ => return None,
                    }
                }
                Value::Array(items) => {
                    if let Ok(i) = seg.parse::<usize>() {
                        break items.get(i)?;
                    }
                    // A policy by name.
                    break items
                        .iter()
                        .find(|v| v.get("name").and_then(Value::as_str) == Some(seg))?;
                }
                _ => return None,
            }
        };
    }
    Some(match cur {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_f64().map(num).unwrap_or_else(|| n.to_string()),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(path: &str, values: &[&str]) -> Axis {
        Axis {
            path: path.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn grid(nx: usize, ny: usize) -> MapGrid {
        let xs: Vec<String> = (0..nx).map(|i| i.to_string()).collect();
        let ys: Vec<String> = (0..ny).map(|i| format!("{i}s")).collect();
        MapGrid::new(
            axis("x", &xs.iter().map(String::as_str).collect::<Vec<_>>()),
            axis("y", &ys.iter().map(String::as_str).collect::<Vec<_>>()),
        )
        .unwrap()
    }

    #[test]
    fn cells_run_x_fastest_and_know_their_neighbours() {
        let g = grid(3, 2);
        assert_eq!(g.len(), 6);
        assert_eq!(g.coords(4), (1, 1));
        assert_eq!(g.assignments(4), ["x=1", "y=1s"]);
        assert_eq!(g.neighbours(0), [1, 3]);
        assert_eq!(g.neighbours(4), [3, 5, 1]);
        assert_eq!(g.find("2", "1s"), Some(5));
        assert!(MapGrid::new(axis("a", &["1"]), axis("a", &["2"])).is_err());
        assert!(MapGrid::new(axis("a", &["1", "1"]), axis("b", &["2"])).is_err());
    }

    #[test]
    fn shards_are_blocks_that_cover_the_map_once() {
        for (len, n) in [(10, 3), (144, 7), (3, 5), (1000, 10)] {
            let mut covered = vec![0; len];
            for i in 1..=n {
                for c in shard_cells(Shard { index: i, count: n }, len) {
                    covered[c] += 1;
                }
            }
            assert!(covered.iter().all(|&k| k == 1), "{len} cells, {n} shards");
        }
        assert_eq!(shard_cells(Shard { index: 2, count: 3 }, 10), 3..6);
    }

    #[test]
    fn the_halo_is_the_block_s_neighbours() {
        let g = grid(4, 3);
        let refine = Passes::new(5, true, None);
        assert_eq!(refine.coarse, Some(2));
        // Shard 2/3 owns cells 4..8 (the middle row); its halo is the rows
        // above and below.
        let need = cells_needed(&g, Shard { index: 2, count: 3 }, refine);
        assert_eq!(need, (0..12).collect::<Vec<_>>());
        let need = cells_needed(&g, Shard { index: 1, count: 3 }, refine);
        assert_eq!(need, (0..8).collect::<Vec<_>>());
        let plain = Passes::new(5, false, None);
        assert_eq!(plain.coarse, None);
        let need = cells_needed(&g, Shard { index: 1, count: 3 }, plain);
        assert_eq!(need, (0..4).collect::<Vec<_>>());
    }

    #[test]
    fn passes_refine_only_when_it_saves_runs() {
        assert_eq!(Passes::new(2, true, None).coarse, None);
        assert_eq!(Passes::new(10, true, None).coarse, Some(3));
        assert_eq!(Passes::new(10, true, Some(1)).coarse, Some(1));
        assert_eq!(Passes::new(10, true, Some(10)).coarse, None);
        assert_eq!(Passes::new(10, true, Some(4)).first(), 4);
    }

    #[test]
    fn medians_and_shares() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        let t = Tally {
            recovered: 1,
            degraded: 2,
            undetermined: 5,
            ..Default::default()
        };
        assert_eq!(t.share(), Some(1.0 / 3.0));
        assert!(!t.mostly_recovers());
        assert_eq!(Tally::default().share(), None);
    }

    #[test]
    fn values_are_read_the_way_set_writes_them() {
        let v: serde_json::Value = serde_json::from_str(
            r#"{"traffic": {"rate": 280.0},
                "faults": [{"capacity": {"start": "30s", "duration": "10s"}}],
                "policies": [{"name": "a", "max_attempts": 2}]}"#,
        )
        .unwrap();
        assert_eq!(value_at(&v, "traffic.rate").as_deref(), Some("280"));
        assert_eq!(value_at(&v, "faults.0.duration").as_deref(), Some("10s"));
        assert_eq!(
            value_at(&v, "faults.0.capacity.duration").as_deref(),
            Some("10s")
        );
        assert_eq!(
            value_at(&v, "policies.a.max_attempts").as_deref(),
            Some("2")
        );
        assert_eq!(value_at(&v, "traffic.nope"), None);
        assert_eq!(value_at(&v, "faults.3.duration"), None);
    }

    fn manifest(shard: Shard) -> MapManifest {
        MapManifest {
            scenario: "s".into(),
            seed: 1,
            x: axis("x", &["0", "1"]),
            y: axis("y", &["0s", "1s"]),
            policies: vec!["a".into(), "b".into()],
            passes: Passes::new(4, true, None),
            operating_point: OperatingPoint::default(),
            shard,
            runs: 0,
            full_runs: 0,
            fingerprint: "0badf00d".into(),
            recover_within_s: Some(60.0),
        }
    }

    fn rows(cells: &[(usize, &str)]) -> Table {
        let g = grid(2, 2);
        let mut rows = Vec::new();
        for p in ["a", "b"] {
            for (c, reps) in cells {
                let (xi, yi) = g.coords(*c);
                rows.push(
                    // Every replication recovered: the run counts add up
                    // to `replications`, as merge checks.
                    vec![
                        p.to_string(),
                        g.x.values[xi].clone(),
                        g.y.values[yi].clone(),
                        reps.to_string(),
                        "1".to_string(),
                        "12.5".to_string(),
                        reps.to_string(),
                        "0".to_string(),
                        "0".to_string(),
                        "1.5".to_string(),
                        "1.2".to_string(),
                    ]
                    .into_iter()
                    .collect(),
                );
            }
        }
        Table {
            header: column_names().map(str::to_string).collect(),
            rows,
        }
    }

    #[test]
    fn merging_sorts_by_policy_then_cell_and_counts_runs() {
        let s = |i| Shard { index: i, count: 2 };
        let parts = vec![
            (
                "two".to_string(),
                manifest(s(2)),
                rows(&[(2, "4"), (3, "2")]),
            ),
            (
                "one".to_string(),
                manifest(s(1)),
                rows(&[(0, "2"), (1, "4")]),
            ),
        ];
        let (m, t) = merge(parts.clone()).unwrap();
        assert_eq!(m.shard, Shard::ALL);
        assert_eq!((m.runs, m.full_runs), (2 * 12, 8 * 4));
        let keys: Vec<String> = t
            .rows
            .iter()
            .map(|r| r.iter().take(3).collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            keys,
            ["a 0 0s", "a 1 0s", "a 0 1s", "a 1 1s", "b 0 0s", "b 1 0s", "b 0 1s", "b 1 1s"]
        );
        assert!(matches!(
            merge(parts[..1].to_vec()),
            Err(MapError::Missing(m)) if m == ["1/2"]
        ));
        let twice = vec![parts[0].clone(), parts[0].clone(), parts[1].clone()];
        assert!(matches!(merge(twice), Err(MapError::Twice { .. })));
        let mut other = parts.clone();
        other[1].1.seed = 2;
        assert!(matches!(merge(other), Err(MapError::Different { .. })));
        // A scenario edited under the same name, or other --set values.
        let mut edited = parts.clone();
        edited[1].1.fingerprint = "12345678".into();
        assert!(matches!(merge(edited), Err(MapError::Different { .. })));
        // Another recovery deadline asks another question.
        let mut asked = parts.clone();
        asked[1].1.recover_within_s = None;
        assert!(matches!(merge(asked), Err(MapError::Different { .. })));
    }

    #[test]
    fn the_deadline_is_written_as_reports_write_numbers_and_may_be_absent() {
        let mut m = manifest(Shard::ALL);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(v["recover_within_s"].to_string(), "60");
        m.recover_within_s = Some(1.5);
        assert_eq!(serde_json::to_value(&m).unwrap()["recover_within_s"], 1.5);
        m.recover_within_s = None;
        let mut v = serde_json::to_value(&m).unwrap();
        assert!(v["recover_within_s"].is_null());
        // A map.json written before the deadline existed: none.
        v.as_object_mut().unwrap().remove("recover_within_s");
        let old: MapManifest = serde_json::from_value(v).unwrap();
        assert_eq!(old.recover_within_s, None);
    }
}
