//! Parameter sweeps: one full scenario run (every policy × replication) per
//! point of a grid of `--set` values, summarised in one `sweep.csv`.
//!
//! Determinism: every (point, policy, replication) run is independent and
//! runs in parallel, but results are collected in index order and each
//! point's rows are built from its own runs only, so the CSV is the same
//! whatever the thread count or the sharding. A shard writes the rows of
//! its own points (each row carries its point index) plus a `sweep.json`
//! manifest; [`merge`] checks the manifests agree, sorts the rows by point
//! and writes exactly the bytes an unsharded sweep writes.

pub mod grid;
pub mod range;
pub mod row;
pub mod shard_env;

pub use grid::{Axis, Grid, GridError, Shard};

use crate::decimal::num;
mod error;
pub(crate) use error::first_of;
pub use error::{EditedShard, MergeError, PointError};
pub use row::Row;

use crate::csv_text;
use crate::engine::stop;
use crate::metrics::aggregate::aggregate;
use crate::metrics::columns::{extra_header, extra_row, summary_header_blocks, summary_row_blocks};
use crate::metrics::{Extras, RunResult};
use crate::runner::{self, Job, RunError};
use crate::scenario::error::{InvalidInput, Located};
use crate::scenario::spec::Mode;
use crate::scenario::{self, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a sweep (or one shard of it) covered: written as `sweep.json` next
/// to `sweep.csv`, and checked by `merge`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(expecting = "the object `sweep` writes to sweep.json")]
pub struct Manifest {
    /// The scenario's name.
    pub scenario: String,
    /// The swept parameters.
    pub axes: Vec<Axis>,
    /// Points in the whole grid.
    pub points: usize,
    /// The policies simulated at every point, in scenario order.
    pub policies: Vec<String>,
    /// Runs per (point, policy).
    pub replications: u32,
    /// Which slice of the points this output holds.
    pub shard: Shard,
    /// [`Scenario::fingerprint`] of point 0, the same for every shard of
    /// the sweep (empty in outputs of versions that did not record it).
    #[serde(default)]
    pub fingerprint: String,
}

/// The rows of `sweep.csv`, as text cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// One row per (point, policy), in point order then policy order.
    pub rows: Vec<Row>,
}

impl Table {
    /// Reads a table back from CSV bytes; `origin` names the file in errors.
    /// Every line the report's CSV writer writes ends with a line end, so a file
    /// that does not was cut short, maybe within its last number.
    pub fn from_csv(bytes: &[u8], origin: &str) -> Result<Table, InvalidInput> {
        if bytes.is_empty() {
            return Err(InvalidInput::At(Located::whole(
                origin,
                "the file is empty, not even its header: it was cut short (a full disk?); \
                 run that shard again",
            )));
        }
        if bytes.last().is_some_and(|&b| b != b'\n') {
            return Err(InvalidInput::At(Located::whole(
                origin,
                "the last line has no line end: the file was cut short (a full disk?); \
                 run that shard again",
            )));
        }
        let malformed = |e: csv::Error| InvalidInput::Malformed {
            origin: origin.to_string(),
            source: Box::new(e),
        };
        let mut r = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(bytes);
        let header = r
            .headers()
            .map_err(malformed)?
            .iter()
            .map(str::to_string)
            .collect();
        let mut rows = Vec::new();
        for rec in r.records() {
            let rec = rec.map_err(malformed)?;
            rows.push(rec.iter().collect());
        }
        Ok(Table { header, rows })
    }

    /// The position of column `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

/// Points a sweep holds in memory at once: their scenarios are loaded,
/// run and dropped this many at a time, so a grid of a million points
/// needs the memory of its rows, not of a million scenarios. Enough runs
/// at once to keep every core busy.
pub const POINTS_AT_ONCE: usize = 4096;

/// The scenario of point `i` of `grid`, loaded (and validated) from the
/// scenario text with the point's assignments. An invalid value is an
/// [`InvalidInput::SweepPoint`] naming the point; a stop request (Ctrl-C)
/// ends the loading.
pub fn load_point(text: &str, origin: &str, grid: &Grid, i: usize) -> Result<Scenario, PointError> {
    if stop::requested() {
        return Err(RunError::Interrupted.into());
    }
    let point = grid.assignments(i);
    match scenario::load_str(text, origin, &point) {
        Ok(s) => Ok(s),
        Err(e) => Err(InvalidInput::SweepPoint {
            index: i,
            assignments: point,
            error: Box::new(e),
        }
        .into()),
    }
}

/// Runs every (point, policy, replication) in parallel and returns, per
/// point, its results sorted by (policy, replication). Time series are
/// dropped as soon as a run ends (the summary keeps what the sweep needs).
pub fn run_points(
    points: &[(usize, Scenario)],
    replications: u32,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<Vec<RunResult>>, RunError> {
    let per_point: Vec<Vec<Job<'_>>> = points
        .iter()
        .map(|(_, s)| runner::jobs_of(s, replications))
        .collect();
    let jobs: Vec<Job<'_>> = per_point.iter().flatten().copied().collect();
    let mut results = runner::run_jobs(&jobs, false, on_done)?.into_iter();
    Ok(per_point
        .iter()
        .map(|js| results.by_ref().take(js.len()).collect())
        .collect())
}

/// The optional summary columns a sweep of `scenario` writes: the same at
/// every point and in every shard, since a sweep may not change the list
/// of policies.
pub fn extras(scenario: &Scenario) -> Extras {
    Extras {
        client_wait: scenario.policies().iter().any(|p| p.rate_limiter.is_some()),
        // Channels are kept only toward a top backend that crashes.
        reconnect: scenario.policies().iter().any(|p| p.reconnect.is_some())
            && scenario.spec().faults.iter().any(|f| {
                matches!(f, crate::scenario::spec::FaultSpec::Crash { .. }) && f.tier().is_none()
            }),
        pool: scenario.spec().traffic.mode == Mode::Pool,
    }
}

/// The header of `sweep.csv`: `point`, one column per axis (its path), then
/// `policy` and the first block of `summary.csv` columns, then
/// `last_success_s`, then the later blocks (so a new summary column never
/// moves an existing one), then the optional columns `extras` asks for.
pub fn header(grid: &Grid, replications: u32, extras: Extras) -> Vec<String> {
    let mut h = vec!["point".to_string()];
    h.extend(grid.axes.iter().map(|a| a.path.clone()));
    h.push("policy".into());
    let mut blocks = summary_header_blocks(replications as usize).into_iter();
    h.extend(blocks.next().unwrap_or_default());
    h.push("last_success_s".into());
    h.extend(blocks.flatten());
    h.extend(extra_header(replications as usize, extras));
    h
}

/// The `sweep.csv` rows of one point: one per policy, in scenario order.
pub fn point_rows(
    grid: &Grid,
    index: usize,
    results: &[RunResult],
    replications: u32,
    extras: Extras,
) -> Vec<Row> {
    let coords = grid.coords(index);
    let values: Vec<String> = coords
        .iter()
        .zip(&grid.axes)
        .map(|(&v, a)| a.values[v].clone())
        .collect();
    aggregate(results)
        .iter()
        .map(|s| {
            let mut row = vec![index.to_string()];
            row.extend(values.iter().cloned());
            row.push(s.policy.clone());
            let mut blocks = summary_row_blocks(s, replications as usize).into_iter();
            row.extend(blocks.next().unwrap_or_default().iter().map(|c| c.csv()));
            // Mean over the replications where something succeeded, in
            // replication order.
            let done: Vec<f64> = results
                .iter()
                .filter(|r| r.policy_index == s.policy_index)
                .filter_map(|r| r.summary().last_success_s)
                .collect();
            row.push(if done.is_empty() {
                String::new()
            } else {
                num(done.iter().sum::<f64>() / done.len() as f64)
            });
            row.extend(blocks.flatten().map(|c| c.csv()));
            row.extend(
                extra_row(s, replications as usize, extras)
                    .iter()
                    .map(|c| c.csv()),
            );
            row.into_iter().collect()
        })
        .collect()
}

/// What a cell of column `name` of `sweep.csv` must hold, for the
/// columns after `policy`: `metastable` is `true`, `false` or
/// `undetermined`; every other column is a number under the report rule
/// or empty (no value).
fn cell_problem(name: &str, cell: &str) -> Option<&'static str> {
    if name == "metastable" {
        return (!matches!(cell, "true" | "false" | "undetermined"))
            .then_some("true, false or undetermined");
    }
    (!cell.is_empty() && !is_report_number(cell)).then_some("a number or empty")
}

/// Whether `text` is a number as the report writes it (`12`, `-0.5`,
/// `1.5e20`): digits, `-`, `.` and `e` only, and a finite value.
pub fn is_report_number(text: &str) -> bool {
    text.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'.' | b'e'))
        && text.parse::<f64>().is_ok_and(f64::is_finite)
}

/// The most axes a `sweep.json` read back may have.
pub const MAX_AXES: usize = 1000;

/// Checks a manifest read back from a shard (`origin` names the file)
/// for what no sweep writes: an axis without values or repeated, a grid
/// too large to count, a point count that is not the grid's. Sizes are
/// checked before anything is allocated from them.
pub fn check_manifest(m: &Manifest, origin: &str) -> Result<Grid, MergeError> {
    let bad = |why: String| {
        MergeError::Edited(EditedShard::Manifest {
            origin: origin.to_string(),
            why,
        })
    };
    // Axes come from `--set` flags, a few each; their checks below compare
    // every pair, so a manifest with thousands is refused first.
    if m.axes.len() > MAX_AXES {
        return Err(bad(format!(
            "{} axes, more than any sweep of {MAX_AXES} --set flags",
            m.axes.len()
        )));
    }
    if let Some(a) = m.axes.iter().find(|a| a.values.is_empty()) {
        return Err(bad(format!("the axis {:?} has no values", a.path)));
    }
    let grid = Grid::new(m.axes.clone()).map_err(|e| bad(e.to_string()))?;
    if m.policies.is_empty() {
        return Err(bad("it lists no policies".into()));
    }
    if let Some((field, value, why)) = m.shard.problem(m.points.min(grid.len()), "points") {
        return Err(MergeError::BadShard {
            origin: origin
                .strip_suffix("/sweep.json")
                .unwrap_or(origin)
                .to_string(),
            field,
            value,
            why,
        });
    }
    if grid.len() != m.points {
        return Err(MergeError::Points {
            origin: origin
                .strip_suffix("/sweep.json")
                .unwrap_or(origin)
                .to_string(),
            points: m.points,
            grid: grid.len(),
        });
    }
    if m.points.checked_mul(m.policies.len()).is_none() {
        return Err(bad(format!(
            "{} points × {} policies are more rows than can be counted",
            m.points,
            m.policies.len()
        )));
    }
    Ok(grid)
}

/// The shards `count` that no part holds, as `I/N`: at most ten named, the
/// rest counted, so a manifest claiming a huge count allocates nothing.
pub fn missing_shards(count: usize, seen: &std::collections::BTreeSet<usize>) -> Vec<String> {
    const SHOWN: usize = 9;
    let total = count.saturating_sub(seen.len());
    let mut out: Vec<String> = (1..=count)
        .filter(|i| !seen.contains(i))
        .take(if total > SHOWN + 1 { SHOWN } else { total })
        .map(|i| format!("{i}/{count}"))
        .collect();
    if total > out.len() {
        out.push(format!("and {} more", total - out.len()));
    }
    out
}

/// Where the rows of a merge, sorted by their place in the whole output,
/// first fail to be `0..total` once each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gap {
    /// The row at this position of the sorted rows repeats the one before.
    Twice(usize),
    /// No shard holds the row of this place.
    Missing(usize),
}

/// The first [`Gap`] in `places` (each row's place in the whole output,
/// sorted), or `None` when they are exactly `0..total`. Sweeps and maps
/// merge their shards' rows the same way, each naming the gap in its own
/// words.
pub(crate) fn first_gap(places: impl IntoIterator<Item = usize>, total: usize) -> Option<Gap> {
    let mut next = 0usize;
    for (i, at) in places.into_iter().enumerate() {
        if at < next {
            return Some(Gap::Twice(i));
        }
        if at > next {
            break;
        }
        next = at + 1;
    }
    (next < total).then_some(Gap::Missing(next))
}

/// Joins shard outputs (their manifests and tables) into the table and
/// manifest of the whole sweep. Every shard of the same sweep must be
/// present exactly once, and every row of the grid in one of them, each
/// cell the value its column holds. Nothing is allocated from a size the
/// manifests state: only from the rows the tables hold.
pub fn merge(parts: Vec<(String, Manifest, Table)>) -> Result<(Manifest, Table), MergeError> {
    let Some((first_origin, first, first_table)) = parts.first().cloned() else {
        return Err(MergeError::NoShards);
    };
    for (origin, m, _) in &parts {
        check_manifest(m, &format!("{origin}/sweep.json"))?;
    }
    check_one_sweep(&parts)?;
    // The manifests agree (checked above): the first one's grid is the
    // sweep's.
    let grid = Grid {
        axes: first.axes.clone(),
    };
    check_header(&grid, &first_origin, &first, &first_table.header)?;
    let rule = RowRule::new(&grid, &first, &first_table.header);
    // Every point of the grid has one row per policy: a shard cut short,
    // edited or holding a row twice is refused rather than merged into a
    // table that looks whole.
    let n = first.policies.len();
    let mut rows: Vec<(usize, &str, Row)> = Vec::new();
    for (origin, m, t) in &parts {
        for (i, r) in t.rows.iter().enumerate() {
            let (at, raw) = rule.row(origin, i, r)?;
            // A row of another shard's slice names this file, not the
            // shard the row was copied from.
            let point = at / n;
            if !m.shard.includes(point) {
                let count = m.shard.count;
                return Err(MergeError::ForeignRow {
                    origin: origin.to_string(),
                    point,
                    policy: raw.get(rule.policy_col).unwrap_or_default().to_string(),
                    index: m.shard.index,
                    owner: point % count + 1,
                    count,
                });
            }
            rows.push((at, origin, raw));
        }
    }
    // In grid order (stable: a row given twice keeps the order found), a
    // row twice is next to its twin and a gap is a row no shard has.
    rows.sort_by_key(|(at, _, _)| *at);
    match first_gap(rows.iter().map(|(at, _, _)| *at), first.points * n) {
        Some(Gap::Twice(i)) => {
            let (at, origin, r) = &rows[i];
            return Err(MergeError::StrayRow {
                origin: origin.to_string(),
                point: at / n,
                policy: r.get(rule.policy_col).unwrap_or_default().to_string(),
                why: "comes twice",
            });
        }
        Some(Gap::Missing(next)) => {
            return Err(MergeError::MissingRow {
                point: next / n,
                policy: first.policies[next % n].clone(),
            });
        }
        None => {}
    }
    let manifest = Manifest {
        shard: Shard::ALL,
        ..first
    };
    Ok((
        manifest,
        Table {
            header: first_table.header,
            rows: rows.into_iter().map(|(_, _, r)| r).collect(),
        },
    ))
}

/// Checks that the parts (at least one) are shards of the first one's
/// sweep, with its columns, and that each of its shards is there exactly
/// once.
fn check_one_sweep(parts: &[(String, Manifest, Table)]) -> Result<(), MergeError> {
    let (first_origin, first, first_table) = &parts[0];
    let count = first.shard.count;
    let mut seen: BTreeMap<usize, String> = BTreeMap::new();
    for (origin, m, t) in parts {
        let same = m.scenario == first.scenario
            && m.fingerprint == first.fingerprint
            && m.axes == first.axes
            && m.points == first.points
            && m.policies == first.policies
            && m.replications == first.replications
            && m.shard.count == count;
        if !same {
            return Err(MergeError::OtherSweep {
                origin: origin.clone(),
                first: first_origin.clone(),
            });
        }
        if t.header != first_table.header {
            return Err(MergeError::Columns {
                origin: origin.clone(),
                first: first_origin.clone(),
            });
        }
        if let Some(other) = seen.insert(m.shard.index, origin.clone()) {
            return Err(MergeError::Duplicate {
                origin: origin.clone(),
                index: m.shard.index,
                count,
                other,
            });
        }
    }
    if seen.len() < count {
        let seen = seen.keys().copied().collect();
        return Err(MergeError::Missing(missing_shards(count, &seen)));
    }
    Ok(())
}

/// Checks that `header` (the first shard's, from `origin`) is one a
/// sweep of `first`'s axes and replications writes.
fn check_header(
    grid: &Grid,
    origin: &str,
    first: &Manifest,
    header: &[String],
) -> Result<(), MergeError> {
    // The header is the one a sweep of these axes and replications writes
    // (as written: its cells through the CSV writer's rule).
    let written = |cells: Vec<String>| -> Vec<String> {
        cells
            .iter()
            .map(|c| csv_text::safe_cell(c).into_owned())
            .collect()
    };
    // The swept-value columns follow `point`, one per axis, in axis order.
    for (k, a) in grid.axes.iter().enumerate() {
        let found = header.get(k + 1).map_or("", String::as_str);
        if found != csv_text::safe_cell(&a.path) {
            return Err(MergeError::AxisColumn {
                origin: origin.to_string(),
                column: k + 2,
                expected: a.path.clone(),
                found: found.to_string(),
            });
        }
    }
    let known: Vec<Vec<String>> = Extras::every()
        .map(|extras| written(self::header(grid, first.replications, extras)))
        .collect();
    if !known.iter().any(|h| h == header) {
        return Err(MergeError::Edited(EditedShard::Manifest {
            origin: format!("{origin}/sweep.csv"),
            why: format!(
                "its header is not the one a sweep of these axes and {} replication(s) writes",
                first.replications
            ),
        }));
    }
    Ok(())
}

/// What a row of a shard's `sweep.csv` must be, from the (checked)
/// manifest and header of the sweep: [`RowRule::row`] checks a row
/// against it and places it in the whole table.
struct RowRule<'a> {
    grid: &'a Grid,
    first: &'a Manifest,
    header: &'a [String],
    /// The column of `policy`, after `point` and the swept values.
    policy_col: usize,
    /// The policies as the CSV writer's rule writes them, to their index.
    policies: BTreeMap<String, usize>,
}

impl<'a> RowRule<'a> {
    /// The rule of the sweep of `first`, whose shards have `header`.
    fn new(grid: &'a Grid, first: &'a Manifest, header: &'a [String]) -> RowRule<'a> {
        let policies = first
            .policies
            .iter()
            .enumerate()
            .map(|(i, p)| (csv_text::safe_cell(p).into_owned(), i))
            .collect();
        RowRule {
            grid,
            first,
            header,
            policy_col: grid.axes.len() + 1,
            policies,
        }
    }

    /// Checks row `i` of `origin`'s table and returns its place in the
    /// whole table, with the row as the unsharded sweep holds it.
    fn row(&self, origin: &str, i: usize, r: &Row) -> Result<(usize, Row), MergeError> {
        // The header is line 1 (a quoted value never holds a line
        // break in a sweep.csv).
        let line = i + 2;
        let (point, at) = self.place(origin, r)?;
        self.check_swept_values(origin, line, point, r)?;
        self.check_cells(origin, line, r)?;
        Ok((at, self.as_held(point, at, r)))
    }

    /// The row's point and its place in the whole table (point × policies
    /// + policy), refusing a row of no point or policy of the sweep.
    fn place(&self, origin: &str, r: &Row) -> Result<(usize, usize), MergeError> {
        let point = r
            .get(0)
            .and_then(|p| p.parse::<usize>().ok())
            .ok_or_else(|| MergeError::NoPointIndex {
                origin: origin.to_string(),
            })?;
        let policy = r.get(self.policy_col).unwrap_or_default();
        let n = self.first.policies.len();
        let p = self.policies.get(policy).copied();
        p.filter(|_| point < self.first.points)
            .and_then(|p| point.checked_mul(n)?.checked_add(p))
            .map(|at| (point, at))
            .ok_or_else(|| MergeError::StrayRow {
                origin: origin.to_string(),
                point,
                policy: policy.to_string(),
                why: "is not part of the sweep in sweep.json",
            })
    }

    /// Checks the swept values of a row of `point` (at `line`).
    fn check_swept_values(
        &self,
        origin: &str,
        line: usize,
        point: usize,
        r: &Row,
    ) -> Result<(), MergeError> {
        let grid = self.grid;
        // The swept values are the point's: an unsharded sweep writes
        // them from sweep.json's axes, so a merge must too.
        for (k, (&v, a)) in grid.coords(point).iter().zip(&grid.axes).enumerate() {
            let expected = csv_text::safe_cell(&a.values[v]);
            let found = r.get(k + 1).unwrap_or("");
            if found != expected {
                return Err(MergeError::SweptValue {
                    origin: origin.to_string(),
                    line,
                    column: k + 2,
                    name: a.path.as_str().into(),
                    point,
                    expected: expected.as_ref().into(),
                    found: found.into(),
                });
            }
        }
        Ok(())
    }

    /// Checks the result cells of a row (at `line`): each the value its
    /// column holds.
    fn check_cells(&self, origin: &str, line: usize, r: &Row) -> Result<(), MergeError> {
        for (c, name) in self.header.iter().enumerate().skip(self.policy_col + 1) {
            let cell = r.get(c).unwrap_or_default();
            if let Some(expected) = cell_problem(name, cell) {
                return Err(MergeError::Edited(EditedShard::Cell {
                    origin: format!("{origin}/sweep.csv"),
                    line,
                    column: c + 1,
                    name: name.clone(),
                    found: cell.to_string(),
                    expected,
                }));
            }
        }
        Ok(())
    }

    /// The row of `point` at place `at`, as the unsharded sweep holds it.
    fn as_held(&self, point: usize, at: usize, r: &Row) -> Row {
        let (grid, policy_col) = (self.grid, self.policy_col);
        let n = self.first.policies.len();
        // Kept as the unsharded sweep holds it in memory: the swept
        // values and the policy as given, not as the CSV writer's rule
        // wrote them (it writes them so again).
        let coords = grid.coords(point);
        r.iter()
            .enumerate()
            .map(|(c, cell)| match c {
                0 => cell,
                c if c < policy_col => grid.axes[c - 1].values[coords[c - 1]].as_str(),
                c if c == policy_col => self.first.policies[at % n].as_str(),
                _ => cell,
            })
            .collect()
    }
}
