//! `retrysim check`: validates scenario files without simulating.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `retrysim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files (.json or .toml).
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
}

/// Validates each file; the first invalid one ends the command with status 2.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    for path in &args.scenarios {
        let s = crate::scenario::load(path, &[])?;
        println!(
            "{}: ok ({} polic{}, {} fault{})",
            path.display(),
            s.policies.len(),
            if s.policies.len() == 1 { "y" } else { "ies" },
            s.spec.faults.len(),
            if s.spec.faults.len() == 1 { "" } else { "s" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
