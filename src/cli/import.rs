//! `retrysim import`: real configurations → scenario blocks. (Placeholder.)

use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

/// The formats `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// `gcloud tasks queues describe` YAML output.
    Gcloud { file: PathBuf },
    /// A gRPC service config JSON.
    Grpc { file: PathBuf },
}

/// Prints the imported block.
pub fn run(_cmd: ImportCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("import is not implemented yet")
}
