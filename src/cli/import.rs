//! `retrysim import`: real configurations → scenario blocks, printed as
//! JSON ready to paste into a scenario file. Warnings (what was dropped or
//! assumed) go to stderr so stdout stays valid JSON.

use super::common::{note, Stdout};
use crate::error::{Error, InvalidInput};
use crate::import::{aws, envoy, gcloud, grpc, istio, linkerd, Imported};
use clap::Subcommand;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `import --help`.
pub const EXAMPLES: &str = "The block is printed on stdout as JSON; warnings (what was dropped or
assumed) go to stderr.

Examples:
  gcloud tasks queues describe my-queue --location us-central1 > queue.yaml
  retrysim import gcloud queue.yaml
  retrysim import grpc service_config.json > policies.json
  retrysim import envoy route.yaml
  retrysim import istio virtualservice.yaml
  retrysim import aws ~/.aws/config --profile batch
  retrysim import linkerd serviceprofile.yaml";

/// Examples shown after `import gcloud --help`.
pub const GCLOUD_EXAMPLES: &str = "Examples:
  gcloud tasks queues describe my-queue --location us-central1 > queue.yaml
  retrysim import gcloud queue.yaml
  retrysim import gcloud examples/queue.yaml 2>/dev/null   # the block only";

/// Examples shown after `import grpc --help`.
pub const GRPC_EXAMPLES: &str = "Examples:
  retrysim import grpc service_config.json
  retrysim import grpc examples/service_config.json > policies.json";

/// Examples shown after `import envoy --help`.
pub const ENVOY_EXAMPLES: &str = "Examples:
  retrysim import envoy route.yaml
  retrysim import envoy tests/good/import/envoy-bootstrap.yaml > policies.json";

/// Examples shown after `import istio --help`.
pub const ISTIO_EXAMPLES: &str = "Examples:
  kubectl get virtualservice reviews -o yaml > vs.yaml
  retrysim import istio vs.yaml
  retrysim import istio tests/good/import/istio-virtualservice.yaml";

/// Examples shown after `import aws --help`.
pub const AWS_EXAMPLES: &str = "Examples:
  retrysim import aws ~/.aws/config
  retrysim import aws ~/.aws/config --profile batch
  retrysim import aws ~/.aws/config --profile default --service dynamodb
  retrysim import aws tests/good/import/aws-config";

/// Examples shown after `import linkerd --help`.
pub const LINKERD_EXAMPLES: &str = "Examples:
  kubectl get serviceprofile -o yaml > sp.yaml
  retrysim import linkerd sp.yaml
  retrysim import linkerd tests/good/import/linkerd.yaml";

/// The formats `import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// `gcloud tasks queues describe` YAML output.
    #[command(after_help = GCLOUD_EXAMPLES)]
    Gcloud {
        /// The YAML file (`-` reads standard input).
        file: PathBuf,
    },
    /// A gRPC service config JSON.
    #[command(after_help = GRPC_EXAMPLES)]
    Grpc {
        /// The JSON file (`-` reads standard input).
        file: PathBuf,
    },
    /// Envoy YAML: route `retry_policy`, cluster `circuit_breakers`.
    #[command(after_help = ENVOY_EXAMPLES)]
    Envoy {
        /// The YAML file, one or more documents (`-` reads standard input).
        file: PathBuf,
    },
    /// An Istio VirtualService's `http[].retries` and `timeout`.
    #[command(after_help = ISTIO_EXAMPLES)]
    Istio {
        /// The YAML file, one or more documents (`-` reads standard input).
        file: PathBuf,
    },
    /// The AWS shared config file's `retry_mode` and `max_attempts`.
    #[command(after_help = AWS_EXAMPLES)]
    Aws {
        /// The config file, such as ~/.aws/config (`-` reads standard input).
        file: PathBuf,
        /// Import this profile only (`default` for `[default]`); without
        /// it, every profile with retry settings.
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
        /// The AWS service the client calls (e.g. `dynamodb`): legacy
        /// mode's delays are per service (DynamoDB: 10 attempts, 50 ms
        /// doubling, no jitter; every other service: 5 attempts, random
        /// base).
        #[arg(long, value_name = "SERVICE")]
        service: Option<String>,
    },
    /// Linkerd retry annotations and a ServiceProfile's `retryBudget`.
    #[command(after_help = LINKERD_EXAMPLES)]
    Linkerd {
        /// The YAML file, one or more documents (`-` reads standard input).
        file: PathBuf,
    },
}

/// An importer: text and the file's name in errors → the block.
type Importer = fn(&str, &str) -> Result<Imported, InvalidInput>;

/// Reads and imports the file the command names.
pub fn import(cmd: &ImportCommand) -> Result<Imported, InvalidInput> {
    let (file, f): (&Path, Importer) = match cmd {
        ImportCommand::Gcloud { file } => (file, gcloud::import_str),
        ImportCommand::Grpc { file } => (file, grpc::import_str),
        ImportCommand::Envoy { file } => (file, envoy::import_str),
        ImportCommand::Istio { file } => (file, istio::import_str),
        ImportCommand::Linkerd { file } => (file, linkerd::import_str),
        ImportCommand::Aws {
            file,
            profile,
            service,
        } => {
            let text = crate::scenario::read_text(file)?;
            return aws::import_profiles(
                &text,
                &crate::scenario::origin(file),
                profile.as_deref(),
                service.as_deref(),
            );
        }
    };
    let text = crate::scenario::read_text(file)?;
    f(&text, &crate::scenario::origin(file))
}

/// Prints the imported block.
pub fn run(cmd: ImportCommand) -> Result<ExitCode, Error> {
    let imported = import(&cmd)?;
    for w in &imported.warnings {
        note(format_args!("warning: {w}"));
    }
    let mut out = Stdout::lock();
    out.line(imported.to_json())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
