//! `retrysim sweep`: one full scenario run per point of a grid of `--set`
//! values; writes `sweep.csv`, `sweep.json` and, when exactly two
//! parameters vary, `heatmap.png`.

use crate::error::invalid;
use crate::report::heatmap::{heatmap_png, varying_pair};
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
  # Split across machines, then join (the merged sweep.csv is byte-identical)
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 1/2 -o part1
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 2/2 -o part2
  retrysim merge part1 part2 -o all";

/// Flags of `retrysim sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file (.json or .toml).
    pub scenario: PathBuf,
    /// A swept parameter and its values, `PATH=V1,V2,...` (repeatable; the
    /// grid is the cartesian product). A single value is a fixed override,
    /// e.g. `--set seed=3` to change the seed.
    #[arg(long = "set", value_name = "PATH=V1,V2,...", required = true)]
    pub sets: Vec<String>,
    /// Run only the I-th of N interleaved slices of the points (1-based).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
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
    let axes = args
        .sets
        .iter()
        .map(|s| Axis::parse(s))
        .collect::<Result<Vec<_>, _>>()
        .map_err(invalid)?;
    let grid = Grid::new(axes).map_err(invalid)?;
    let shard = match &args.shard {
        Some(s) => Shard::parse(s).map_err(invalid)?,
        None => Shard::ALL,
    };
    let origin = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    let points = sweep::load_points(&text, &origin, &[], &grid, shard)?;
    // The name and policies of the sweep: those of point 0, the same for
    // every shard.
    let base = match points.first() {
        Some((0, s)) => s.clone(),
        _ => crate::scenario::load_str(&text, &origin, &grid.assignments(0))?,
    };
    let dir = args
        .output
        .clone()
        .unwrap_or_else(|| Path::new("output").join(&base.spec().name).join("sweep"));
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
    let results = sweep::run_points(&points, args.replications, &|| {});
    let mut table = Table {
        header: sweep::header(&grid, args.replications, sweep::extras(&base)),
        rows: Vec::new(),
    };
    for ((i, _), res) in points.iter().zip(&results) {
        table.rows.extend(sweep::point_rows(
            &grid,
            *i,
            res,
            args.replications,
            sweep::extras(&base),
        ));
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
