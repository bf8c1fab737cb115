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
pub use crate::error::MergeError;
pub use row::Row;

use crate::engine::stop;
use crate::error::{Error, InvalidInput};
use crate::metrics::aggregate::aggregate;
use crate::metrics::columns::{extra_header, extra_row, summary_header_blocks, summary_row_blocks};
use crate::metrics::{Extras, RunResult};
use crate::runner::{self, Job, RunError};
use crate::scenario::{self, Scenario};
use serde::{Deserialize, Serialize};

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
    /// The CSV bytes (`\n` line ends; the same writer settings as the
    /// other report files).
    pub fn to_csv(&self) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        w.write_record(&self.header)?;
        for r in &self.rows {
            w.write_record(r.iter())?;
        }
        w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
    }

    /// Reads a table back from CSV bytes; `origin` names the file in errors.
    /// Every line [`Table::to_csv`] writes ends with a line end, so a file
    /// that does not was cut short, maybe within its last number.
    pub fn from_csv(bytes: &[u8], origin: &str) -> Result<Table, InvalidInput> {
        if bytes.last().is_some_and(|&b| b != b'\n') {
            return Err(InvalidInput::At(crate::error::Located::whole(
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
pub fn load_point(text: &str, origin: &str, grid: &Grid, i: usize) -> Result<Scenario, Error> {
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
                .filter_map(|r| r.summary.last_success_s)
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

/// Joins shard outputs (their manifests and tables) into the table and
/// manifest of the whole sweep. Every shard of the same sweep must be
/// present exactly once.
pub fn merge(parts: Vec<(String, Manifest, Table)>) -> Result<(Manifest, Table), MergeError> {
    let Some((first_origin, first, first_table)) = parts.first().cloned() else {
        return Err(MergeError::NoShards);
    };
    for (origin, m, _) in &parts {
        if let Some((field, value, why)) = m
            .shard
            .problem(m.points.min(Grid::points_of(&m.axes)), "points")
        {
            return Err(MergeError::BadShard {
                origin: origin.clone(),
                field,
                value,
                why,
            });
        }
    }
    let count = first.shard.count;
    let mut seen = vec![None::<String>; count];
    for (origin, m, t) in &parts {
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
                first: first_origin,
            });
        }
        if t.header != first_table.header {
            return Err(MergeError::Columns {
                origin: origin.clone(),
                first: first_origin,
            });
        }
        let slot = &mut seen[m.shard.index - 1];
        if let Some(other) = slot {
            return Err(MergeError::Duplicate {
                origin: origin.clone(),
                index: m.shard.index,
                count,
                other: other.clone(),
            });
        }
        *slot = Some(origin.clone());
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| seen[i - 1].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing(missing));
    }
    // The manifests agree (checked above): the first one's grid is the
    // sweep's, and its size must be the point count the rows are checked
    // against.
    let grid = Grid {
        axes: first.axes.clone(),
    };
    if grid.len() != first.points {
        return Err(MergeError::Points {
            origin: first_origin,
            points: first.points,
            grid: grid.len(),
        });
    }
    // The swept-value columns follow `point`, one per axis, in axis order.
    for (k, a) in grid.axes.iter().enumerate() {
        let found = first_table.header.get(k + 1).map_or("", String::as_str);
        if found != a.path {
            return Err(MergeError::AxisColumn {
                origin: first_origin,
                column: k + 2,
                expected: a.path.clone(),
                found: found.to_string(),
            });
        }
    }
    // Every point of the grid has one row per policy: a shard cut short,
    // edited or holding a row twice is refused rather than merged into a
    // table that looks whole.
    let policy_col = first_table.header.iter().position(|h| h == "policy");
    let n = first.policies.len();
    let mut seen = vec![false; first.points.saturating_mul(n)];
    let mut rows: Vec<(usize, Row)> = Vec::new();
    for (origin, _, t) in &parts {
        for (i, r) in t.rows.iter().enumerate() {
            let point = r
                .get(0)
                .and_then(|p| p.parse::<usize>().ok())
                .ok_or_else(|| MergeError::NoPointIndex {
                    origin: origin.clone(),
                })?;
            let policy = policy_col
                .and_then(|c| r.get(c))
                .map(str::to_string)
                .unwrap_or_default();
            let stray = |why| MergeError::StrayRow {
                origin: origin.clone(),
                point,
                policy: policy.clone(),
                why,
            };
            let p = first.policies.iter().position(|x| *x == policy);
            let Some(at) = p.filter(|_| point < first.points).map(|p| point * n + p) else {
                return Err(stray("is not part of the sweep in sweep.json"));
            };
            // The swept values are the point's: an unsharded sweep writes
            // them from sweep.json's axes, so a merge must too.
            for (k, (&v, a)) in grid.coords(point).iter().zip(&grid.axes).enumerate() {
                let expected = &a.values[v];
                let found = r.get(k + 1).unwrap_or("");
                if found != expected {
                    return Err(MergeError::SweptValue {
                        origin: origin.clone(),
                        // The header is line 1 (a quoted value never holds a
                        // line break in a sweep.csv).
                        line: i + 2,
                        column: k + 2,
                        name: a.path.as_str().into(),
                        point,
                        expected: expected.as_str().into(),
                        found: found.into(),
                    });
                }
            }
            if std::mem::replace(&mut seen[at], true) {
                return Err(stray("comes twice"));
            }
            rows.push((at, r.clone()));
        }
    }
    if let Some(at) = seen.iter().position(|s| !s) {
        return Err(MergeError::MissingRow {
            point: at / n,
            policy: first.policies[at % n].clone(),
        });
    }
    rows.sort_by_key(|(at, _)| *at);
    let manifest = Manifest {
        shard: Shard::ALL,
        ..first
    };
    Ok((
        manifest,
        Table {
            header: first_table.header,
            rows: rows.into_iter().map(|(_, r)| r).collect(),
        },
    ))
}
