//! `retrysim map`: the share of replications that recover from the
//! scenario's fault over a grid of two parameters, per policy: `map.csv`,
//! `map.json` and `map.png`.

use super::progress;
use crate::error::invalid;
use crate::map::{self, MapGrid, MapManifest, OperatingPoint, Passes};
use crate::report::map::map_png;
use crate::scenario::{self, Scenario};
use crate::sweep::range::expand_values;
use crate::sweep::shard_env::shard_from_process_env;
use crate::sweep::{Axis, Shard, Table};
use clap::Args;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str =
    "Output: DIR/map.csv, one row per (policy, cell): policy, x, y, replications,
recovered_share (recovered ÷ judged runs), median_recovery_s (after the fault's
end), then recovered, degraded and undetermined counts, median_amplification and
median_peak_load_ratio. DIR/map.json describes the map; DIR/map.png draws one
panel per policy with the 50 % boundary and the scenario's own operating point.
Default DIR: output/<scenario name>/map.

Ranges: A..B:N is N evenly spaced values from A to B inclusive, numbers or
durations (durations keep their unit: 2s..60s:12); a list is V1,V2,...

Refinement: a coarse pass runs max(2, ⌈R/4⌉) replications per cell, then only
the cells whose share is strictly between 0 and 1, or whose neighbours' shares
differ, get all R. --no-refine runs R everywhere.

Examples:
  # The HotOS '21 toy: load × stall length
  retrysim map scenarios/hotos21-toy.json --x traffic.rate=100..300:11 \\
      --y faults.0.duration=2s..60s:12 --replications 5
  # The spanner storm's policies: load × outage length
  retrysim map scenarios/spanner-90s.json --set 'traffic.profile=[]' \\
      --x traffic.rate=1000..2400:8 --y faults.0.outage.duration=10s..120s:6
  # One shard of ten, index from a Kubernetes Indexed Job or a Slurm array
  retrysim map s.json --x traffic.rate=100..330:40 --y faults.0.duration=1s..25s:25 \\
      --shards 10 -o results/map           # writes results/map/shard-<I>-of-10/
  retrysim merge results/map -o results/map-merged";

/// Flags of `retrysim map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    /// Scenario file (.json or .toml).
    pub scenario: PathBuf,
    /// The parameter across, `PATH=V1,V2,...` or `PATH=A..B:N`.
    #[arg(long = "x", value_name = "PATH=RANGE")]
    pub x: String,
    /// The parameter up, `PATH=V1,V2,...` or `PATH=A..B:N`.
    #[arg(long = "y", value_name = "PATH=RANGE")]
    pub y: String,
    /// Replications of a cell near the boundary (of every cell with
    /// --no-refine).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub replications: u32,
    /// Run every replication in every cell (no coarse pass).
    #[arg(long)]
    pub no_refine: bool,
    /// Replications of the coarse pass (default max(2, ⌈R/4⌉)).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub coarse: Option<u32>,
    /// Overrides one scenario value in every cell, e.g.
    /// `backend.workers=120` (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Map only the named policies (repeatable).
    #[arg(long = "policy")]
    pub policies: Vec<String>,
    /// Run only the I-th of N blocks of cells (1-based).
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Split the map into N blocks and run the one the batch system names:
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job, 0-based) or
    /// SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN (Slurm array). Writes
    /// into DIR/shard-<I>-of-<N>/.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Output directory (default output/<scenario name>/map).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Skip map.png.
    #[arg(long)]
    pub no_plots: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Parses `--x` / `--y`: a list or a range of values for one path.
pub fn axis(flag: &str, arg: &str) -> anyhow::Result<Axis> {
    let mut a = Axis::parse(arg).map_err(|e| invalid(format!("{flag}: {e}")))?;
    a.values = expand_values(a.values).map_err(|e| invalid(format!("{flag} {arg}: {e}")))?;
    Ok(a)
}

/// The shard from `--shard I/N` or `--shards N` (index from the batch
/// system), and the directory the shard writes into.
pub fn shard_and_dir(
    shard: Option<&str>,
    shards: Option<usize>,
    dir: PathBuf,
) -> anyhow::Result<(Shard, PathBuf)> {
    if let Some(n) = shards {
        let (s, _) = shard_from_process_env(n).map_err(|e| invalid(e.to_string()))?;
        let width = n.to_string().len();
        let sub = format!("shard-{:0width$}-of-{n}", s.index);
        return Ok((s, dir.join(sub)));
    }
    let s = match shard {
        Some(s) => Shard::parse(s).map_err(invalid)?,
        None => Shard::ALL,
    };
    Ok((s, dir))
}

/// Loads the scenario with `sets`, then applies `--seed` and `--policy`.
fn load(
    text: &str,
    origin: &str,
    sets: &[String],
    seed: Option<u64>,
    policies: &[String],
) -> anyhow::Result<Scenario> {
    let mut s = scenario::load_str(text, origin, sets)?;
    if let Some(seed) = seed {
        s.set_seed(seed);
    }
    s.select_policies(policies).map_err(|n| {
        let known: Vec<_> = s.policies().iter().map(|p| p.name.as_str()).collect();
        invalid(format!(
            "--policy {n:?}: scenario {:?} has no such policy (it has: {})",
            s.spec().name,
            known.join(", ")
        ))
    })?;
    Ok(s)
}

/// Runs the command.
pub fn run(args: MapArgs) -> anyhow::Result<ExitCode> {
    let grid = MapGrid::new(axis("--x", &args.x)?, axis("--y", &args.y)?)
        .map_err(|e| invalid(e.to_string()))?;
    let origin = args.scenario.display().to_string();
    let text = std::fs::read_to_string(&args.scenario)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    let base = load(&text, &origin, &args.sets, args.seed, &args.policies)?;
    if !args.quiet {
        let mut err = std::io::stderr().lock();
        for w in base.warnings() {
            writeln!(err, "{}: warning: {w}", base.spec().name)?;
        }
    }
    let default_dir = Path::new("output").join(&base.spec().name).join("map");
    let (shard, dir) = shard_and_dir(
        args.shard.as_deref(),
        args.shards,
        args.output.clone().unwrap_or(default_dir),
    )?;
    let passes = Passes::new(args.replications, !args.no_refine, args.coarse);
    let names: Vec<String> = base.policies().iter().map(|p| p.name.clone()).collect();
    let mut scenarios = BTreeMap::new();
    for c in map::cells_needed(&grid, shard, passes) {
        let mut sets = args.sets.clone();
        let cell = grid.assignments(c);
        sets.extend(cell.iter().cloned());
        let s = load(&text, &origin, &sets, args.seed, &args.policies).map_err(|e| {
            invalid(format!(
                "map cell {} ({}):\n{e}",
                c,
                cell.iter()
                    .map(|a| format!("--set {a}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ))
        })?;
        let here: Vec<String> = s.policies().iter().map(|p| p.name.clone()).collect();
        if here != names {
            return Err(invalid(format!(
                "map cell {c}: its policies ({}) differ from the scenario's; a map may change policy fields, not the list",
                here.join(", ")
            )));
        }
        scenarios.insert(c, s);
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| anyhow::anyhow!("cannot create output directory {}: {e}", dir.display()))?;
    let bar = progress::bar(0, args.quiet, &format!("mapping {}", base.spec().name));
    let result = map::run_map(
        &grid,
        shard,
        passes,
        &scenarios,
        &|n| bar.inc_length(n),
        &|| bar.inc(1),
    );
    bar.finish_and_clear();
    let result = result?;
    let table = map::table(&grid, &names, &result);
    let json = serde_json::to_value(base.spec()).expect("a scenario serializes");
    let mut manifest = MapManifest {
        scenario: base.spec().name.clone(),
        seed: base.spec().seed,
        x: grid.x.clone(),
        y: grid.y.clone(),
        policies: names,
        passes,
        operating_point: OperatingPoint {
            x: map::value_at(&json, &grid.x.path),
            y: map::value_at(&json, &grid.y.path),
        },
        shard,
        runs: 0,
        full_runs: 0,
    };
    manifest.count_runs(&table);
    let written = write(&dir, &manifest, &table, args.no_plots)?;
    if !args.quiet {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "{} of {} cells x {} policies: {} runs{}",
            result.cells.len(),
            grid.len(),
            manifest.policies.len(),
            result.simulated,
            saved(&manifest, result.simulated)
        )?;
        for p in written {
            writeln!(out, "wrote {}", p.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// What refinement saved, in words (nothing without refinement).
fn saved(m: &MapManifest, simulated: u64) -> String {
    if m.passes.coarse.is_none() || m.full_runs == 0 {
        return String::new();
    }
    let saved = m.full_runs.saturating_sub(simulated);
    format!(
        " instead of {} without refinement ({} saved, {:.0}%)",
        m.full_runs,
        saved,
        100.0 * saved as f64 / m.full_runs as f64
    )
}

/// Writes `map.csv`, `map.json` and (for a whole map, unless `no_plots`)
/// `map.png` into `dir`.
pub fn write(
    dir: &Path,
    manifest: &MapManifest,
    table: &Table,
    no_plots: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let csv_path = dir.join("map.csv");
    std::fs::write(&csv_path, table.to_csv()?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", csv_path.display()))?;
    written.push(csv_path);
    let json_path = dir.join("map.json");
    let json = serde_json::to_string_pretty(manifest)? + "\n";
    std::fs::write(&json_path, json)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", json_path.display()))?;
    written.push(json_path);
    let png = dir.join("map.png");
    if !no_plots && manifest.shard == Shard::ALL {
        map_png(&png, manifest, table)?;
        written.push(png);
    } else if png.exists() {
        // Every file in the directory comes from the same map.
        std::fs::remove_file(&png)
            .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", png.display()))?;
    }
    Ok(written)
}
