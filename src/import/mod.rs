//! Importers: real retry configurations turned into scenario blocks, so a
//! scenario can simulate exactly what production runs.
//!
//! - [`gcloud`]: the YAML that `gcloud tasks queues describe` prints (a Cloud
//!   Tasks queue's `retryConfig` and `rateLimits`).
//! - [`grpc`]: a gRPC service config's `methodConfig[].retryPolicy` and
//!   `retryThrottling` (gRFC A6).
//!
//! Both return an [`Imported`] block; malformed input is an
//! [`InvalidInput`] error naming the file and the key.

pub mod gcloud;
pub mod grpc;

use crate::error::{InvalidInput, Located};
use crate::policy::PolicySpec;
use crate::scenario::spec::DispatcherSpec;
use serde::Serialize;

/// What an importer produced: scenario blocks plus the warnings about what
/// it had to drop or assume.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Imported {
    /// The imported retry policies, as written in a scenario.
    pub policies: Vec<PolicySpec>,
    /// The imported queue (`dispatcher` block), when the source has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatcher: Option<DispatcherSpec>,
    /// Printed on stderr, never part of the block.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Imported {
    /// The block as pretty JSON, ready to paste into a scenario.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenario blocks always serialize")
    }
}

/// An [`InvalidInput`] error about `key` of the file `origin`.
pub(crate) fn bad_key(origin: &str, key: &str, msg: impl std::fmt::Display) -> InvalidInput {
    InvalidInput::At(Located::at_path(origin, key, msg.to_string()))
}
