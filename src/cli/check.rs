//! `retrysim check`: validates scenario files without simulating.

use super::common::{self, Stdout};
use crate::error::Error;
use crate::runner::estimate;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Checks every file given: prints, for each valid file, an `ok` line, its
estimated cost and any warnings and, for each invalid one, every problem
in it, one per line, as
<file>:<line>:<col>: <field path>: <what is wrong>.
Exit status 2 when any file is invalid.

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

/// Validates every file, reporting each invalid one and going on to the
/// next (a folder of scenarios is checked in one go); status 2 when any
/// was invalid.
pub fn run(args: CheckArgs) -> Result<ExitCode, Error> {
    let mut out = Stdout::lock();
    let mut any_invalid = false;
    for path in &args.scenarios {
        let s = match crate::scenario::load(path, &args.sets) {
            Ok(s) => s,
            Err(e) => {
                super::print_error(&Error::from(e));
                any_invalid = true;
                continue;
            }
        };
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
        for line in s.queue_settings() {
            out.line(format_args!("{origin}: {line}"))?;
        }
        let cost = estimate::of_one_replication(&s, rayon::current_num_threads());
        out.line(format_args!("{origin}: estimated cost: {}", cost.summary()))?;
        for w in s.warnings() {
            common::note(format_args!("{origin}: warning: {w}"));
        }
        // What `run` would refuse before simulating (one replication).
        if let Some(w) = estimate::warning(&s, rayon::current_num_threads()) {
            common::note(format_args!("{origin}: warning: {w}"));
        }
    }
    Ok(if any_invalid {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
