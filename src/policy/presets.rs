//! Named starting points for policies (`"preset": "cloud-tasks-default"`).
//!
//! Placeholder list until the presets issue lands: only the Cloud Tasks
//! API defaults are defined here.

use crate::scenario::spec::{BackoffSpec, PolicySpec};
use crate::time::Dur;

/// The names `preset` accepts.
pub const NAMES: &[&str] = &["cloud-tasks-default"];

/// The policy a preset stands for (its `name` is left empty).
pub fn preset(name: &str) -> Option<PolicySpec> {
    match name {
        "cloud-tasks-default" => Some(PolicySpec {
            max_attempts: Some(100),
            backoff: Some(BackoffSpec::CloudTasks {
                min_backoff: Dur::from_millis(100),
                max_backoff: Dur::from_secs(3600),
                max_doublings: 16,
            }),
            ..Default::default()
        }),
        _ => None,
    }
}
