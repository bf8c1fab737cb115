//! `retrysim schedule`: the retry schedule of one policy. (Placeholder.)

use clap::Args;
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:\n  retrysim schedule --preset cloud-tasks-default";

/// Flags of `retrysim schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// A named policy preset.
    #[arg(long)]
    pub preset: Option<String>,
}

/// Prints the schedule.
pub fn run(_args: ScheduleArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("schedule is not implemented yet")
}
