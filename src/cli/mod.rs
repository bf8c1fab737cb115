//! Command-line interface: one subcommand per file, each a thin layer over
//! the library.

pub mod assess;
pub mod check;
pub mod import;
pub mod map;
pub mod merge;
pub mod progress;
pub mod run;
pub mod schedule;
pub mod sweep;
pub mod tune;

use crate::error::InvalidInput;
use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// Simulate retry storms: how much load retries add during an outage,
/// whether the backend recovers, and which policy settings fix it.
#[derive(Debug, Parser)]
#[command(name = "retrysim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate every policy of one or more scenarios and write the report.
    #[command(after_help = run::EXAMPLES)]
    Run(run::RunArgs),
    /// Run a scenario at every point of a grid of --set values (sweep.csv).
    #[command(after_help = sweep::EXAMPLES)]
    Sweep(sweep::SweepArgs),
    /// Map where each policy recovers over two parameters (map.csv, map.png).
    #[command(after_help = map::EXAMPLES)]
    Map(map::MapArgs),
    /// Verdict per policy: trigger threshold, storm load, worst case.
    #[command(after_help = assess::EXAMPLES)]
    Assess(assess::AssessArgs),
    /// Join the shard outputs of `sweep` or `map` into one output.
    #[command(after_help = merge::EXAMPLES)]
    Merge(merge::MergeArgs),
    /// Validate scenario files without simulating.
    Check(check::CheckArgs),
    /// Print the retry schedule of one policy.
    #[command(after_help = schedule::EXAMPLES)]
    Schedule(schedule::ScheduleArgs),
    /// Search a policy's parameters for the best setting that meets constraints.
    #[command(after_help = tune::EXAMPLES)]
    Tune(tune::TuneArgs),
    /// Convert a real configuration into a scenario policy block.
    #[command(subcommand)]
    Import(import::ImportCommand),
}

/// Runs the command line and returns the process exit status.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Map(a) => map::run(a),
        Command::Assess(a) => assess::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Check(a) => check::run(a),
        Command::Schedule(a) => schedule::run(a),
        Command::Import(a) => import::run(a),
        Command::Tune(a) => tune::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => exit_for(&e),
    }
}

/// Prints an error and picks its exit status: 2 for invalid input, 0 for a
/// closed stdout (`retrysim ... | head`), 1 otherwise.
pub fn exit_for(e: &anyhow::Error) -> ExitCode {
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        if io.kind() == std::io::ErrorKind::BrokenPipe {
            return ExitCode::SUCCESS;
        }
    }
    let mut err = std::io::stderr().lock();
    match e.downcast_ref::<crate::runner::RunError>() {
        Some(crate::runner::RunError::Interrupted) => {
            let _ = writeln!(err, "interrupted");
            return ExitCode::from(130);
        }
        Some(stalled) => {
            let _ = writeln!(err, "error: {stalled}");
            return ExitCode::from(2);
        }
        None => {}
    }
    if let Some(bad) = e.downcast_ref::<InvalidInput>() {
        let _ = writeln!(err, "error: {bad}");
        return ExitCode::from(2);
    }
    let _ = writeln!(err, "error: {e:#}");
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
