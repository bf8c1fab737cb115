//! `retrysim import`: real configurations → scenario blocks, printed as
//! JSON ready to paste into a scenario file. Warnings (what was dropped or
//! assumed) go to stderr so stdout stays valid JSON.

use crate::error::invalid;
use crate::import::{gcloud, grpc, Imported};
use clap::Subcommand;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The formats `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// `gcloud tasks queues describe` YAML output.
    Gcloud { file: PathBuf },
    /// A gRPC service config JSON.
    Grpc { file: PathBuf },
}

/// An importer: text and the file's name in errors → the block.
type Importer = fn(&str, &str) -> anyhow::Result<Imported>;

/// Reads and imports the file the command names.
pub fn import(cmd: &ImportCommand) -> anyhow::Result<Imported> {
    let (file, f): (&Path, Importer) = match cmd {
        ImportCommand::Gcloud { file } => (file, gcloud::import_str),
        ImportCommand::Grpc { file } => (file, grpc::import_str),
    };
    let origin = file.display().to_string();
    let text = std::fs::read_to_string(file)
        .map_err(|e| invalid(format!("{origin}: cannot read: {e}")))?;
    f(&text, &origin)
}

/// Prints the imported block.
pub fn run(cmd: ImportCommand) -> anyhow::Result<ExitCode> {
    let imported = import(&cmd)?;
    {
        let mut err = std::io::stderr().lock();
        for w in &imported.warnings {
            let _ = writeln!(err, "warning: {w}");
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", imported.to_json())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
