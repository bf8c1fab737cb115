//! `retrysim map`: the share of replications that recover from the
//! scenario's fault over a grid of two parameters, per policy: `map.csv`,
//! `map.json` and `map.png`.

use super::common::{self, part_of, within, SimArgs, Stdout, Within};
use super::progress;
use crate::decimal::count;
use crate::error::{Error, InvalidInput, MapError, OutputError, RunError};
use crate::map::{self, MapGrid, MapManifest, OperatingPoint, Passes};
use crate::report::{self, format::deadline_words, staging::Staging};
use crate::runner::early::Question;
use crate::scenario::set::paths_overlap;
use crate::scenario::{self, Scenario};
use crate::sweep::range::expand_values;
use crate::sweep::shard_env::shard_from_process_env;
use crate::sweep::{Axis, Shard};
use crate::time::secs;
use clap::Args;
use std::collections::BTreeMap;
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

A run recovers when goodput is back above the scenario's recovery_threshold
for its stable_for, starting within --recover-within (default 1m, as for
`assess`) of the fault's end; `--recover-within none` accepts a recovery at any
time before the run's end. Each run stops as soon as that is decided, so
median_amplification and median_peak_load_ratio cover each run up to there.

Refinement: a coarse pass runs max(2, ⌈R/4⌉) replications per cell, then only
the cells whose share is strictly between 0 and 1, or whose neighbours' shares
differ, get all R. --no-refine runs R everywhere.

Examples:
  # The HotOS '21 toy: load × stall length
  retrysim map scenarios/hotos21-toy.json --x traffic.rate=100..300:11 \\
      --y faults.0.duration=2s..60s:12 --replications 5
  # The same, counting only a recovery that starts within 10 s of the stall's end
  retrysim map scenarios/hotos21-toy.json --x traffic.rate=100..300:11 \\
      --y faults.0.duration=2s..60s:12 --recover-within 10s
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
    /// Scenario file (.json or .toml; `-` reads standard input).
    pub scenario: PathBuf,
    /// The parameter across, `PATH=V1,V2,...` or `PATH=A..B:N`.
    #[arg(long = "x", value_name = "PATH=RANGE")]
    pub x: String,
    /// The parameter up, `PATH=V1,V2,...` or `PATH=A..B:N`.
    #[arg(long = "y", value_name = "PATH=RANGE")]
    pub y: String,
    /// The flags every simulating command shares; `--set` values apply to
    /// every cell.
    #[command(flatten)]
    pub sim: SimArgs,
    /// A run recovers when its recovery starts within this long after
    /// the fault's end (e.g. 30s, 5m); `none`: at any time before the
    /// run's end.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = within)]
    pub recover_within: Within,
    /// Run every replication in every cell (no coarse pass).
    #[arg(long)]
    pub no_refine: bool,
    /// Replications of the coarse pass (default max(2, ⌈R/4⌉)); fewer
    /// than --replications.
    #[arg(long, value_name = "N", conflicts_with = "no_refine",
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub coarse: Option<u32>,
    /// Run only the I-th of N blocks of cells (1-based), written into DIR
    /// itself: give each shard a folder of its own (`-o results/map/shard-3`),
    /// as --shards does by itself.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Split the map into N blocks and run the one the batch system names:
    /// JOB_COMPLETION_INDEX (Kubernetes Indexed Job, 0-based) or
    /// SLURM_ARRAY_TASK_ID − SLURM_ARRAY_TASK_MIN (Slurm array). Writes
    /// into `DIR/shard-<I>-of-<N>/`.
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
}

/// Parses `--x` / `--y`: a list or a range of values for one path.
pub fn axis(flag: &str, arg: &str) -> Result<Axis, InvalidInput> {
    let flag_error = |message: String| InvalidInput::Flag {
        flag: format!("{flag} {arg}"),
        message,
    };
    if !arg.contains('=') {
        return Err(flag_error(
            "expected PATH=V1,V2,... or PATH=A..B:N (e.g. traffic.rate=100..300:11)".into(),
        ));
    }
    // Axis::parse words its problems for `--set`; keep only what follows.
    let mut a = Axis::parse(arg).map_err(|e| {
        let text = e.to_string();
        let prefix = format!("--set {arg}: ");
        flag_error(text.strip_prefix(&prefix).unwrap_or(&text).to_string())
    })?;
    a.values = expand_values(a.values).map_err(|e| flag_error(e.to_string()))?;
    Ok(a)
}

/// The shard from `--shard I/N` or `--shards N` (index from the batch
/// system), and the directory the shard writes into.
pub fn shard_and_dir(
    shard: Option<&str>,
    shards: Option<usize>,
    dir: PathBuf,
) -> Result<(Shard, PathBuf), Error> {
    if let Some(n) = shards {
        let (s, _) = shard_from_process_env(n)?;
        let width = n.to_string().len();
        let sub = format!("shard-{:0width$}-of-{n}", s.index);
        return Ok((s, dir.join(sub)));
    }
    let s = match shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::ALL,
    };
    Ok((s, dir))
}

/// Refuses `--seed` with an axis that varies the seed, and a coarse pass
/// that runs as many replications as the full one.
fn check_flags(args: &MapArgs, grid: &MapGrid) -> Result<(), Error> {
    let sim = &args.sim;
    for (flag, a) in [("--x", &grid.x), ("--y", &grid.y)] {
        if let (Some(seed), true) = (sim.seed, paths_overlap(&a.path, "seed")) {
            return Err(InvalidInput::Flag {
                flag: format!("--seed {seed}"),
                message: format!(
                    "{flag} varies {} over the map: drop --seed or that axis",
                    a.path
                ),
            }
            .into());
        }
    }
    if let Some(c) = args.coarse {
        if c >= sim.replications {
            return Err(InvalidInput::Flag {
                flag: format!("--coarse {c}"),
                message: format!(
                    "the coarse pass must run fewer replications than --replications {} \
                     (or use --no-refine)",
                    sim.replications
                ),
            }
            .into());
        }
    }
    Ok(())
}

/// Refuses the axes and the fixed overrides on one field however written
/// (`traffic.rate` twice, or `faults.0.duration` and
/// `faults.0.outage.duration`): checked once, on the scenario.
fn check_overlap(text: &str, origin: &str, grid: &MapGrid, sets: &[String]) -> Result<(), Error> {
    let set_paths: Vec<&str> = sets
        .iter()
        .map(|s| s.split_once('=').map_or(s.as_str(), |(p, _)| p.trim()))
        .collect();
    let paths: Vec<&str> = [grid.x.path.as_str(), grid.y.path.as_str()]
        .into_iter()
        .chain(set_paths.iter().copied())
        .collect();
    match scenario::overlapping(text, origin, &paths) {
        Some((1, 0)) => Err(MapError::SamePath(grid.x.path.clone(), grid.y.path.clone()).into()),
        Some((i, j)) if j < 2 => Err(InvalidInput::Flag {
            flag: format!("--set {}", sets[i - 2]),
            message: format!(
                "{} varies {} over the map: set it in one place",
                ["--x", "--y"][j],
                paths[j]
            ),
        }
        .into()),
        _ => Ok(()),
    }
}

/// Every cell's scenario the map will run (those of the shard, and of its
/// halo), loaded and checked: each must have the base's policies.
fn load_cells(
    grid: &MapGrid,
    shard: Shard,
    passes: Passes,
    names: &[String],
    load: &dyn Fn(&[String]) -> Result<Scenario, InvalidInput>,
    sets: &[String],
) -> Result<BTreeMap<usize, Scenario>, Error> {
    let mut scenarios = BTreeMap::new();
    for c in map::cells_needed(grid, shard, passes) {
        if crate::engine::stop::requested() {
            return Err(RunError::Interrupted.into());
        }
        let cell = grid.assignments(c);
        let mut cell_sets = sets.to_vec();
        cell_sets.extend(cell.iter().cloned());
        let s = load(&cell_sets).map_err(|error| InvalidInput::MapCell {
            index: c,
            assignments: cell.clone(),
            error: Box::new(error),
        })?;
        let here: Vec<String> = s.policies().iter().map(|p| p.name.clone()).collect();
        if here != names {
            return Err(MapError::Policies {
                index: c,
                policies: here,
            }
            .into());
        }
        scenarios.insert(c, s);
    }
    if !scenarios.is_empty() && !scenarios.values().any(|s| s.spec().has_incident()) {
        return Err(MapError::NoIncident.into());
    }
    Ok(scenarios)
}

/// The base scenario: the scenario with the fixed overrides. When it
/// cannot be run as it stands (a field the file lacks, or a value the
/// axes replace), the map's first cell stands in for its name and
/// policies, as `sweep` does, and the map has no operating point to mark
/// (the `bool` is false).
fn load_base(
    grid: &MapGrid,
    sets: &[String],
    load: &dyn Fn(&[String]) -> Result<Scenario, InvalidInput>,
) -> Result<(Scenario, bool), Error> {
    match load(sets) {
        Ok(s) => Ok((s, true)),
        Err(whole) => {
            let mut first = sets.to_vec();
            first.extend(grid.assignments(0));
            match load(&first) {
                Ok(s) => Ok((s, false)),
                Err(_) => Err(whole.into()),
            }
        }
    }
}

/// Runs the command.
pub fn run(args: MapArgs) -> Result<ExitCode, Error> {
    let sim = &args.sim;
    let grid = MapGrid::new(axis("--x", &args.x)?, axis("--y", &args.y)?)?;
    check_flags(&args, &grid)?;
    let origin = scenario::origin(&args.scenario);
    let text = scenario::read_text(&args.scenario)?;
    check_overlap(&text, &origin, &grid, &sim.sets)?;
    let load = |sets: &[String]| -> Result<Scenario, InvalidInput> {
        let mut s = scenario::load_str(&text, &origin, sets)?;
        sim.apply(&mut s)?;
        Ok(s)
    };
    let (base, at_base) = load_base(&grid, &sim.sets, &load)?;
    if !sim.quiet {
        // The first cell's warnings, when it stands in for the base, are
        // said to be its own: another cell may not share them.
        let whose = if at_base {
            String::new()
        } else {
            format!(" (at the first cell, {})", grid.assignments(0).join(" "))
        };
        for w in base.warnings() {
            common::note(format_args!("{}{whose}: warning: {w}", base.spec().name));
        }
    }
    let default_dir = Path::new("output").join(&base.spec().name).join("map");
    let (shard, dir) = shard_and_dir(
        args.shard.as_deref(),
        args.shards,
        sim.output.clone().unwrap_or(default_dir),
    )?;
    shard.fits(grid.len(), "cells")?;
    sim.guard_points(&origin, map::shard_cells(shard, grid.len()).len(), "cells")?;
    let passes = Passes::new(sim.replications, !args.no_refine, args.coarse);
    let names: Vec<String> = base.policies().iter().map(|p| p.name.clone()).collect();
    let scenarios = load_cells(&grid, shard, passes, &names, &load, &sim.sets)?;
    sim.guard(scenarios.values(), false)?;
    let stage = Staging::begin(&dir, report::map::MAP_FILES, sim.force)?;
    let bar = progress::growing_bar(sim.quiet, &format!("mapping {}", base.spec().name));
    let question = Question {
        recover_within: args.recover_within.0,
    };
    let result = map::run_map(
        &grid,
        shard,
        passes,
        question,
        &scenarios,
        &|n| bar.inc_length(n),
        &|| bar.inc(1),
    );
    bar.finish_and_clear();
    let result = result?;
    let table = map::table(&grid, &names, &result);
    let manifest = manifest(&base, at_base, &grid, passes, shard, question, &table)?;
    let written = report::map::write(stage, &manifest, &table, sim.no_plots)?;
    if !sim.quiet {
        let mut out = Stdout::lock();
        out.line(format_args!(
            "{} × {}: {}{}",
            part_of(result.cells.len(), grid.len(), "cell", "cells"),
            count(manifest.policies.len() as f64, "policy", "policies"),
            count(result.simulated as f64, "run", "runs"),
            saved(&manifest, result.simulated)
        ))?;
        out.line(format_args!(
            "a run counts as recovered when it recovers {} (--recover-within)",
            deadline_words(question.recover_within)
        ))?;
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The manifest of the map: what it varied, asked and ran, and (when the base
/// could be run as it stands) the scenario's own operating point.
fn manifest(
    base: &Scenario,
    at_base: bool,
    grid: &MapGrid,
    passes: Passes,
    shard: Shard,
    question: Question,
    table: &crate::sweep::Table,
) -> Result<MapManifest, Error> {
    let json = serde_json::to_value(base.spec()).map_err(OutputError::Json)?;
    let mut manifest = MapManifest {
        scenario: base.spec().name.clone(),
        seed: base.spec().seed,
        x: grid.x.clone(),
        y: grid.y.clone(),
        policies: base.policies().iter().map(|p| p.name.clone()).collect(),
        passes,
        operating_point: if at_base {
            OperatingPoint {
                x: map::value_at(&json, &grid.x.path),
                y: map::value_at(&json, &grid.y.path),
            }
        } else {
            OperatingPoint::default()
        },
        shard,
        runs: 0,
        full_runs: 0,
        fingerprint: base.fingerprint(),
        recover_within_s: question.recover_within.map(secs),
    };
    manifest.count_runs(table);
    Ok(manifest)
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
