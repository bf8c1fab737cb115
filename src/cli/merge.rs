//! `retrysim merge`: joins the shard outputs of `retrysim sweep` or
//! `retrysim map` into the files (byte for byte) an unsharded run writes.
//!
//! A directory holding `sweep.json` or `map.json` is one shard; any other
//! directory stands for the shard directories directly inside it (what
//! `--shards N` writes), so `retrysim merge results/map` needs no shell
//! glob (a distroless image has no shell).

use crate::error::invalid;
use crate::map::{self, MapManifest};
use crate::sweep::{self, Manifest, Table};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 1/2 -o part1
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 2/2 -o part2
  retrysim merge part1 part2 -o all      # all/sweep.csv, all/sweep.json (+ heatmap.png)
  # Map shards written with --shards N into results/map/shard-<I>-of-<N>/
  retrysim merge results/map -o results/map-merged   # map.csv, map.json, map.png";

/// Flags of `retrysim merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories (each holds sweep.csv and sweep.json, or
    /// map.csv and map.json), or directories holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Skip the heatmap or map.png.
    #[arg(long)]
    pub no_plots: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// What kind of output a shard directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Sweep,
    Map,
}

fn kind_of(dir: &Path) -> Option<Kind> {
    if dir.join("map.json").is_file() {
        Some(Kind::Map)
    } else if dir.join("sweep.json").is_file() {
        Some(Kind::Sweep)
    } else {
        None
    }
}

/// The shard directories `dirs` name, each with its kind, in the order
/// given (a parent's shards in name order).
fn shard_dirs(dirs: &[PathBuf]) -> anyhow::Result<Vec<(PathBuf, Kind)>> {
    let mut out = Vec::new();
    for dir in dirs {
        if let Some(k) = kind_of(dir) {
            out.push((dir.clone(), k));
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| {
            invalid(format!(
                "{}: cannot read (expected a sweep or map output, or a directory of them): {e}",
                dir.display()
            ))
        })?;
        let mut inside: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir() && kind_of(p).is_some())
            .collect();
        inside.sort();
        if inside.is_empty() {
            return Err(invalid(format!(
                "{}: holds no sweep.json or map.json, nor directories that do",
                dir.display()
            )));
        }
        out.extend(inside.into_iter().map(|p| {
            let k = kind_of(&p).expect("filtered");
            (p, k)
        }));
    }
    Ok(out)
}

fn read(dir: &Path, name: &str) -> anyhow::Result<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| invalid(format!("{}: cannot read: {e}", p.display())))
}

/// Runs the command.
pub fn run(args: MergeArgs) -> anyhow::Result<ExitCode> {
    let dirs = shard_dirs(&args.dirs)?;
    let kind = dirs[0].1;
    if let Some((d, _)) = dirs.iter().find(|(_, k)| *k != kind) {
        return Err(invalid(format!(
            "{}: a {} output among {} outputs; merge one kind at a time",
            d.display(),
            if kind == Kind::Map { "sweep" } else { "map" },
            if kind == Kind::Map { "map" } else { "sweep" }
        )));
    }
    std::fs::create_dir_all(&args.output).map_err(|e| {
        anyhow::anyhow!(
            "cannot create output directory {}: {e}",
            args.output.display()
        )
    })?;
    let written = match kind {
        Kind::Sweep => {
            let mut parts = Vec::new();
            for (dir, _) in &dirs {
                let origin = dir.display().to_string();
                let manifest: Manifest = serde_json::from_slice(&read(dir, "sweep.json")?)
                    .map_err(|e| invalid(format!("{origin}/sweep.json: {e}")))?;
                if manifest.shard.index == 0 || manifest.shard.index > manifest.shard.count {
                    return Err(invalid(format!("{origin}/sweep.json: bad shard")));
                }
                let table =
                    Table::from_csv(&read(dir, "sweep.csv")?, &format!("{origin}/sweep.csv"))?;
                parts.push((origin, manifest, table));
            }
            let (manifest, table) = sweep::merge(parts)?;
            super::sweep::write(&args.output, &manifest, &table, args.no_plots)?
        }
        Kind::Map => {
            let mut parts = Vec::new();
            for (dir, _) in &dirs {
                let origin = dir.display().to_string();
                let manifest: MapManifest = serde_json::from_slice(&read(dir, "map.json")?)
                    .map_err(|e| invalid(format!("{origin}/map.json: {e}")))?;
                let table = Table::from_csv(&read(dir, "map.csv")?, &format!("{origin}/map.csv"))?;
                parts.push((origin, manifest, table));
            }
            let (manifest, table) = map::merge(parts).map_err(|e| invalid(e.to_string()))?;
            super::map::write(&args.output, &manifest, &table, args.no_plots)?
        }
    };
    if !args.quiet {
        for p in written {
            println!("wrote {}", p.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
