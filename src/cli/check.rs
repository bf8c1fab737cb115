//! `retrysim check`: validates scenario files without simulating.

use super::common::{self, Stdout};
use crate::error::Error;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Prints one line per valid file; the first invalid one ends the command
with status 2 and every problem in it, one per line, as
<file>:<line>:<col>: <field path>: <what is wrong>.

Examples:
  retrysim check scenarios/*.json
  retrysim check my-scenario.toml --set traffic.rate=9000   # validate an override too";

/// Flags of `retrysim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files (.json or .toml; `-` reads standard input).
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// Overrides one scenario value before checking, as `run --set` does.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
}

/// Validates each file; the first invalid one ends the command with status 2.
pub fn run(args: CheckArgs) -> Result<ExitCode, Error> {
    let mut out = Stdout::lock();
    for path in &args.scenarios {
        let s = crate::scenario::load(path, &args.sets)?;
        let origin = crate::scenario::origin(path);
        let tiers = match s.spec().downstream.len() {
            0 => String::new(),
            _ => format!(", tiers {}", s.spec().tier_names().join(" → ")),
        };
        out.line(format_args!(
            "{origin}: ok ({} polic{}, {} fault{}{tiers})",
            s.policies().len(),
            if s.policies().len() == 1 { "y" } else { "ies" },
            s.spec().faults.len(),
            if s.spec().faults.len() == 1 { "" } else { "s" }
        ))?;
        for w in s.warnings() {
            common::note(format_args!("{origin}: warning: {w}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
