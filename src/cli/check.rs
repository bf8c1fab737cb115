//! `retrysim check`: validates scenario files without simulating.

use clap::Args;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `retrysim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Scenario files (.json or .toml).
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// Overrides one scenario value before checking, as `run --set` does.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
}

/// Validates each file; the first invalid one ends the command with status 2.
pub fn run(args: CheckArgs) -> anyhow::Result<ExitCode> {
    for path in &args.scenarios {
        let s = crate::scenario::load(path, &args.sets)?;
        println!(
            "{}: ok ({} polic{}, {} fault{})",
            path.display(),
            s.policies().len(),
            if s.policies().len() == 1 { "y" } else { "ies" },
            s.spec().faults.len(),
            if s.spec().faults.len() == 1 { "" } else { "s" }
        );
        let mut err = std::io::stderr().lock();
        for w in s.warnings() {
            writeln!(err, "{}: warning: {w}", path.display())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
