//! A retry policy as written in a scenario file, and its checks.

use super::backoff::BackoffSpec;
use super::breaker::BreakerSpec;
use super::budget::BudgetSpec;
use super::jitter::JitterSpec;
use super::{presets, resolve, ResolveError};
use crate::check::Problems;
use crate::status::Status;
use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// One retry policy as written; fields left out come from the preset (if
/// any) and then from the defaults of [`super::resolve`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Attempts in all; 0 or -1 = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_duration: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<BackoffSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<Status>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<BreakerSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honor_retry_after: Option<bool>,
    /// How an honoured pushback combines with the backoff (default
    /// `at_least`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushback: Option<Pushback>,
}

/// How a policy honours the server's pushback (`retry_after`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pushback {
    /// Wait the backoff delay or the pushback, whichever is longer.
    #[default]
    AtLeast,
    /// gRPC (gRFC A6): retry after exactly the pushback, and start the
    /// backoff sequence again from `initial` for the next retry.
    Exact,
}

impl PolicySpec {
    /// The policy with its preset's fields written out (fields the policy
    /// sets win) and the preset name dropped; the policy itself when it
    /// names no preset.
    pub fn with_preset_applied(&self) -> Result<PolicySpec, ResolveError> {
        let Some(name) = &self.preset else {
            return Ok(self.clone());
        };
        let base =
            presets::preset(name).ok_or_else(|| ResolveError::UnknownPreset(name.clone()))?;
        Ok(PolicySpec {
            name: self.name.clone(),
            preset: None,
            max_attempts: self.max_attempts.or(base.max_attempts),
            max_retry_duration: self.max_retry_duration.or(base.max_retry_duration),
            backoff: self.backoff.clone().or(base.backoff),
            jitter: self.jitter.or(base.jitter),
            retry_on: self.retry_on.clone().or(base.retry_on),
            budget: self.budget.clone().or(base.budget),
            circuit_breaker: self.circuit_breaker.clone().or(base.circuit_breaker),
            honor_retry_after: self.honor_retry_after.or(base.honor_retry_after),
            pushback: self.pushback.or(base.pushback),
        })
    }

    /// Checks every field and that the policy resolves; `path` is the
    /// policy's own (`policies[1]`).
    pub fn check(&self, path: &str, c: &mut Problems) {
        let before = c.len();
        if let Some(name) = &self.preset {
            if presets::preset(name).is_none() {
                c.err(
                    format!("{path}.preset"),
                    format!(
                        "unknown preset {name:?}; known presets: {}",
                        presets::NAMES.join(", ")
                    ),
                );
            }
        }
        if let Some(m) = self.max_attempts {
            if m < -1 {
                c.err(
                    format!("{path}.max_attempts"),
                    format!("{m} is not allowed: attempts in all, the first included (0 or -1 = unlimited)"),
                );
            }
        }
        if let Some(b) = &self.backoff {
            b.check(&format!("{path}.backoff"), c);
        }
        if let Some(j) = &self.jitter {
            j.check(&format!("{path}.jitter"), c);
        }
        if let Some(b) = &self.budget {
            b.check(&format!("{path}.budget"), c);
        }
        if let Some(b) = &self.circuit_breaker {
            b.check(&format!("{path}.circuit_breaker"), c);
        }
        // Only ask the resolver once the fields themselves are sound, so a
        // bad preset name is not reported twice.
        if c.len() == before {
            if let Err(e) = resolve(self) {
                c.err(path, e.to_string());
            }
        }
    }
}
