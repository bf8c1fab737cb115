//! `retrysim merge`: joins the outputs of `retrysim sweep --shard I/N` into
//! the `sweep.csv` (byte for byte) an unsharded sweep writes.

use super::common::{create_output_dir, Stdout};
use crate::error::{Error, InvalidInput};
use crate::sweep::{self, Manifest, Table};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 1/2 -o part1
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 2/2 -o part2
  retrysim merge part1 part2 -o all      # all/sweep.csv, all/sweep.json (+ heatmap.png)";

/// Flags of `retrysim merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories (each holds sweep.csv and sweep.json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Skip the heatmap.
    #[arg(long)]
    pub no_plots: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Runs the command.
pub fn run(args: MergeArgs) -> Result<ExitCode, Error> {
    let mut parts = Vec::new();
    for dir in &args.dirs {
        let origin = dir.display().to_string();
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read(&p).map_err(|source| InvalidInput::Unreadable {
                origin: p.display().to_string(),
                source,
            })
        };
        let manifest: Manifest =
            serde_json::from_slice(&read("sweep.json")?).map_err(|e| InvalidInput::Malformed {
                origin: format!("{origin}/sweep.json"),
                source: Box::new(e),
            })?;
        let table = Table::from_csv(&read("sweep.csv")?, &format!("{origin}/sweep.csv"))?;
        parts.push((origin, manifest, table));
    }
    let (manifest, table) = sweep::merge(parts)?;
    create_output_dir(&args.output)?;
    let written = super::sweep::write(&args.output, &manifest, &table, args.no_plots)?;
    if !args.quiet {
        let mut out = Stdout::lock();
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
