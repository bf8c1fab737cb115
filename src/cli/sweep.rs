//! `retrysim sweep`: one full scenario run per point of a grid of `--set`
//! values; writes `sweep.csv`, `sweep.json` and, when exactly two
//! parameters vary, `heatmap.png`.

use super::common::{part_of, SimArgs, Stdout};
use super::progress;
use crate::decimal::count;
use crate::error::{Error, GridError, InvalidInput};
use crate::report::{self, staging::Staging};
use crate::runner;
use crate::scenario::Scenario;
use crate::sweep::range::expand_values;
use crate::sweep::{self, Axis, Grid, Manifest, Table};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str =
    "Output: DIR/sweep.csv, one row per (point, policy): `point`, the swept values,
then the summary.csv columns of the first release, then last_success_s (when
the last request succeeded: a burst's completion time), then the summary
columns added since (give-up reasons, duplicates, task age, dead letters,
drain). DIR/sweep.json describes the sweep;
DIR/heatmap.png (success rate per cell, one panel per policy) is drawn when
exactly two parameters vary. Default DIR: output/<scenario name>/sweep.

Examples:
  # The HotOS '21 toy: where does one retry turn a 10 s stall into a permanent collapse?
  retrysim sweep scenarios/hotos21-toy.json --set traffic.rate=100,140,180,220,260,280
  # AWS's jitter experiment from 10 to 100 clients
  retrysim sweep scenarios/aws-jitter.json --set traffic.clients=10,20,30,40,50,60,70,80,90,100
  # Two parameters: a heatmap
  retrysim sweep scenarios/hotos21-toy.json --set traffic.rate=120,160,200,240,280 \\
      --set backend.queue_limit=150,300,600,1200
  # A range: N evenly spaced values from A to B (numbers or durations)
  retrysim sweep scenarios/hotos21-toy.json --set traffic.rate=100..300:11 --set faults.0.duration=5s..20s:4
  # Split across machines, then join (the merged sweep.csv is byte-identical)
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 1/2 -o part1
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 2/2 -o part2
  retrysim merge part1 part2 -o all
  # The shard index from a Kubernetes Indexed Job or a Slurm array
  retrysim sweep s.json --set traffic.rate=100..300:21 --shards 4 -o parts   # parts/shard-<I>-of-4/
  retrysim merge parts -o all";

/// Flags of `retrysim sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file (.json or .toml; `-` reads standard input).
    pub scenario: PathBuf,
    /// The flags every simulating command shares; here each `--set` is an
    /// axis of the grid.
    #[command(flatten)]
    pub sim: SimArgs,
    /// Run only the I-th of N interleaved slices of the points (1-based),
    /// written into DIR itself: give each shard a folder of its own (`-o
    /// results/sweep/shard-3`), as --shards does by itself.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Split the points into N interleaved slices and run the one the batch
    /// system names: JOB_COMPLETION_INDEX (Kubernetes Indexed Job, 0-based)
    /// or SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN (Slurm array). Writes
    /// into `DIR/shard-<I>-of-<N>/`.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
}

/// The grid the `--set` flags describe (each one an axis).
fn grid_of(sets: &[String]) -> Result<Grid, Error> {
    let mut axes = Vec::new();
    for s in sets {
        let mut a = Axis::parse(s)?;
        a.values = expand_values(a.values).map_err(|e| InvalidInput::Flag {
            flag: format!("--set {s}"),
            message: e.to_string(),
        })?;
        axes.push(a);
    }
    Ok(Grid::new(axes)?)
}

/// Runs the command.
pub fn run(args: SweepArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let grid = grid_of(&sim.sets)?;
    grid.check_seed(sim.seed)?;
    // The shard is settled before any point is loaded; its directory once
    // the scenario's name is known.
    let (shard, _) = super::map::shard_and_dir(args.shard.as_deref(), args.shards, PathBuf::new())?;
    shard.fits(grid.len(), "points")?;
    let origin = crate::scenario::origin(&args.scenario);
    sim.guard_points(&origin, shard.count_of(grid.len()), "points")?;
    let text = crate::scenario::read_text(&args.scenario)?;
    // Two axes on one field however written (`faults.0.duration` and
    // `faults.0.outage.duration`): the later would replace the earlier's
    // values at every point, under the earlier's labels.
    let paths: Vec<&str> = grid.axes.iter().map(|a| a.path.as_str()).collect();
    if let Some((i, j)) = crate::scenario::overlapping(&text, &origin, &paths) {
        return Err(GridError::Overlap {
            path: paths[i].to_string(),
            other: paths[j].to_string(),
        }
        .into());
    }
    let load = |i: usize| -> Result<Scenario, Error> {
        let mut s = sweep::load_point(&text, &origin, &grid, i)?;
        sim.apply(&mut s)?;
        Ok(s)
    };
    // The name and policies of the sweep: those of point 0, the same for
    // every shard.
    let base = load(0)?;
    let (_, dir) = super::map::shard_and_dir(
        args.shard.as_deref(),
        args.shards,
        sim.output
            .clone()
            .unwrap_or_else(|| Path::new("output").join(&base.spec().name).join("sweep")),
    )?;
    let manifest = Manifest {
        scenario: base.spec().name.clone(),
        axes: grid.axes.clone(),
        points: grid.len(),
        policies: base.policies().iter().map(|p| p.name.clone()).collect(),
        replications: sim.replications,
        shard,
        fingerprint: base.fingerprint(),
    };
    let points: Vec<usize> = shard.points(grid.len()).collect();
    let first = check_points(sim, &manifest, &points, &load)?;
    let stage = Staging::begin(&dir, report::sweep::SWEEP_FILES, sim.force)?;
    let table = run_points(sim, &grid, &base, &manifest, &points, first, &load)?;
    let written = report::sweep::write(stage, &manifest, &table, sim.no_plots)?;
    if !sim.quiet {
        let mut out = Stdout::lock();
        out.line(format_args!(
            "{} × {} × {}",
            part_of(points.len(), grid.len(), "point", "points"),
            count(manifest.policies.len() as f64, "policy", "policies"),
            count(f64::from(sim.replications), "replication", "replications")
        ))?;
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads and checks every point, and estimates the whole batch, before
/// anything runs; returns the first `POINTS_AT_ONCE`, which stay loaded
/// (a larger grid loads the others again as it reaches them).
fn check_points(
    sim: &SimArgs,
    manifest: &Manifest,
    points: &[usize],
    load: &dyn Fn(usize) -> Result<Scenario, Error>,
) -> Result<Vec<(usize, Scenario)>, Error> {
    let mut first = Vec::new();
    let mut estimator = sim.estimator(false);
    let checking = progress::counter(
        points.len() as u64,
        sim.quiet,
        &format!("checking {}", manifest.scenario),
        "points",
    );
    let checked = points.iter().try_for_each(|&i| -> Result<(), Error> {
        let s = load(i)?;
        let names: Vec<&str> = s.policies().iter().map(|p| p.name.as_str()).collect();
        if names != manifest.policies {
            return Err(InvalidInput::SweepPolicies {
                index: i,
                policies: names.iter().map(|n| n.to_string()).collect(),
            }
            .into());
        }
        estimator.add_jobs(&runner::jobs_of(&s, sim.replications));
        if first.len() < sweep::POINTS_AT_ONCE {
            first.push((i, s));
        }
        checking.inc(1);
        Ok(())
    });
    // Cleared before an error is printed, as the run's bar is.
    checking.finish_and_clear();
    checked?;
    sim.refuse_too_big(estimator.finish(), &manifest.scenario)?;
    Ok(first)
}

/// Runs every point, `POINTS_AT_ONCE` at a time (`first` already loaded),
/// and returns the rows of `sweep.csv`.
fn run_points(
    sim: &SimArgs,
    grid: &Grid,
    base: &Scenario,
    manifest: &Manifest,
    points: &[usize],
    first: Vec<(usize, Scenario)>,
    load: &dyn Fn(usize) -> Result<Scenario, Error>,
) -> Result<Table, Error> {
    let runs = points.len() as u64 * manifest.policies.len() as u64 * u64::from(sim.replications);
    let bar = progress::bar(runs, sim.quiet, &format!("sweeping {}", manifest.scenario));
    let mut table = Table {
        header: sweep::header(grid, sim.replications, sweep::extras(base)),
        rows: Vec::new(),
    };
    let mut run_batch = |batch: &[(usize, Scenario)]| -> Result<(), Error> {
        let results = sweep::run_points(batch, sim.replications, &|| bar.inc(1))?;
        for ((i, _), res) in batch.iter().zip(&results) {
            table.rows.extend(sweep::point_rows(
                grid,
                *i,
                res,
                sim.replications,
                sweep::extras(base),
            ));
        }
        Ok(())
    };
    let rest = &points[first.len()..];
    let ran = run_batch(&first).and_then(|()| {
        drop(first);
        for chunk in rest.chunks(sweep::POINTS_AT_ONCE) {
            let batch = chunk
                .iter()
                .map(|&i| Ok((i, load(i)?)))
                .collect::<Result<Vec<_>, Error>>()?;
            run_batch(&batch)?;
        }
        Ok(())
    });
    bar.finish_and_clear();
    ran?;
    Ok(table)
}
