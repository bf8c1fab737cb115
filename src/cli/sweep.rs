//! `retrysim sweep`: one full scenario run per point of a grid of `--set`
//! values; writes `sweep.csv`, `sweep.json` and, when exactly two
//! parameters vary, `heatmap.png`.

use super::progress;
use crate::error::invalid;
use crate::report::heatmap::{heatmap_png, varying_pair};
use crate::sweep::range::expand_values;
use crate::sweep::{self, Axis, Grid, Manifest, Shard, Table};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str =
    "Output: DIR/sweep.csv, one row per (point, policy): `point`, the swept values,
then the summary.csv columns, then last_success_s (when the last request
succeeded: a burst's completion time). DIR/sweep.json describes the sweep;
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
    /// Scenario file (.json or .toml).
    pub scenario: PathBuf,
    /// A swept parameter and its values, `PATH=V1,V2,...` or `PATH=A..B:N`
    /// (N evenly spaced values from A to B; repeatable; the grid is the
    /// cartesian product). A single value is a fixed override.
    #[arg(long = "set", value_name = "PATH=V1,V2,...", required = true)]
    pub sets: Vec<String>,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulate only the named policies (repeatable).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Run only the I-th of N interleaved slices of the points (1-based).
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Split the points into N interleaved slices and run the one the batch
    /// system names: JOB_COMPLETION_INDEX (Kubernetes Indexed Job, 0-based)
    /// or SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN (Slurm array). Writes
    /// into DIR/shard-<I>-of-<N>/.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Output directory (default output/<scenario name>/sweep).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Independent runs per (point, policy).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub replications: u32,
    /// Skip the heatmap.
    #[arg(long)]
    pub no_plots: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the command.
pub fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let mut axes = Vec::new();
    for s in &args.sets {
        let mut a = Axis::parse(s).map_err(invalid)?;
        a.values = expand_values(a.values).map_err(|e| invalid(format!("--set {s}: {e}")))?;
        axes.push(a);
    }
    let grid = Grid::new(axes).map_err(invalid)?;
    let origin = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    // The shard is settled before any point is loaded; its directory once
    // the scenario's name is known.
    let (shard, _) = super::map::shard_and_dir(args.shard.as_deref(), args.shards, PathBuf::new())?;
    let mut points = sweep::load_points(&text, &origin, &[], &grid, shard)?;
    for (_, s) in &mut points {
        apply(s, &args)?;
    }
    // The name and policies of the sweep: those of point 0, the same for
    // every shard.
    let base = match points.first() {
        Some((0, s)) => s.clone(),
        _ => {
            let mut s = crate::scenario::load_str(&text, &origin, &grid.assignments(0))?;
            apply(&mut s, &args)?;
            s
        }
    };
    let (_, dir) = super::map::shard_and_dir(
        args.shard.as_deref(),
        args.shards,
        args.output
            .clone()
            .unwrap_or_else(|| Path::new("output").join(&base.spec().name).join("sweep")),
    )?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    let manifest = Manifest {
        scenario: base.spec().name.clone(),
        axes: grid.axes.clone(),
        points: grid.len(),
        policies: base.policies().iter().map(|p| p.name.clone()).collect(),
        replications: args.replications,
        shard,
    };
    for (i, s) in &points {
        let names: Vec<&str> = s.policies().iter().map(|p| p.name.as_str()).collect();
        if names != manifest.policies {
            return Err(invalid(format!(
                "sweep point {i}: its policies ({}) differ from the scenario's; a sweep may change policy fields, not the list",
                names.join(", ")
            )));
        }
    }
    let runs = points.len() as u64 * manifest.policies.len() as u64 * u64::from(args.replications);
    let bar = progress::bar(runs, args.quiet, &format!("sweeping {}", manifest.scenario));
    let results = sweep::run_points(&points, args.replications, &|| bar.inc(1));
    bar.finish_and_clear();
    let results = results?;
    let mut table = Table {
        header: sweep::header(&grid, args.replications),
        rows: Vec::new(),
    };
    for ((i, _), res) in points.iter().zip(&results) {
        table
            .rows
            .extend(sweep::point_rows(&grid, *i, res, args.replications));
    }
    let written = write(&dir, &manifest, &table, args.no_plots)?;
    if !args.quiet {
        println!(
            "{} of {} points x {} policies x {} replications",
            points.len(),
            grid.len(),
            manifest.policies.len(),
            args.replications
        );
        for p in written {
            println!("wrote {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Applies `--seed` and `--policy` to a point's scenario.
fn apply(s: &mut crate::scenario::Scenario, args: &SweepArgs) -> anyhow::Result<()> {
    if let Some(seed) = args.seed {
        s.set_seed(seed);
    }
    s.select_policies(&args.policies).map_err(|n| {
        let known: Vec<_> = s.policies().iter().map(|p| p.name.as_str()).collect();
        invalid(format!(
            "--policy {n:?}: scenario {:?} has no such policy (it has: {})",
            s.spec().name,
            known.join(", ")
        ))
    })
}

/// Writes `sweep.csv`, `sweep.json` and (for a whole sweep with exactly two
/// varying parameters, unless `no_plots`) `heatmap.png` into `dir`.
pub fn write(
    dir: &Path,
    manifest: &Manifest,
    table: &Table,
    no_plots: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let csv_path = dir.join("sweep.csv");
    std::fs::write(&csv_path, table.to_csv()?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", csv_path.display()))?;
    written.push(csv_path);
    let json_path = dir.join("sweep.json");
    let json = serde_json::to_string_pretty(manifest)? + "\n";
    std::fs::write(&json_path, json)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", json_path.display()))?;
    written.push(json_path);
    if !no_plots && manifest.shard == Shard::ALL && varying_pair(manifest).is_some() {
        let png = dir.join("heatmap.png");
        heatmap_png(&png, manifest, table)?;
        written.push(png);
    }
    Ok(written)
}
