//! The scenario file as written: a serde mirror of the file format that
//! `docs/scenario-reference.md` documents.
//!
//! Every struct denies unknown fields and every variant is externally tagged,
//! so serde reports exact field paths and positions for mistakes. These types
//! hold what the user wrote (durations already in integer nanoseconds). The
//! kinds a scenario lists — distributions, faults, actions — each live in a
//! file of their own with their checks and their wording; the policy parts
//! live in `crate::policy`. Checks that span blocks live in
//! `super::validate`.

mod action;
mod dist;
mod fault;

pub use action::ActionSpec;
pub use dist::DistSpec;
pub use fault::FaultSpec;

use crate::policy::PolicySpec;
use crate::status::Status;
use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub duration: Dur,
    #[serde(default)]
    pub warmup: Dur,
    #[serde(default = "default_bin")]
    pub bin: Dur,
    pub traffic: TrafficSpec,
    #[serde(default)]
    pub backend: BackendSpec,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    #[serde(default)]
    pub actions: Vec<ActionSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatcher: Option<DispatcherSpec>,
    pub policies: Vec<PolicySpec>,
    #[serde(default)]
    pub report: ReportSpec,
}

fn default_seed() -> u64 {
    1
}
fn default_bin() -> Dur {
    Dur::from_secs(1)
}

/// How new requests arrive over time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    #[default]
    Poisson,
    Uniform,
}

/// Whether arrivals wait for answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Open,
    Closed,
    Burst,
}

/// One knot of the piecewise-linear traffic profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilePoint {
    pub at: Dur,
    pub scale: f64,
}

/// The `traffic` block: who sends what, when, and how patiently.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    /// New requests per second in all (open mode); required unless burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    #[serde(default = "default_clients")]
    pub clients: u32,
    #[serde(default)]
    pub arrival: Arrival,
    #[serde(default)]
    pub mode: Mode,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile: Vec<ProfilePoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Dur>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_delay: Option<DistSpec>,
    /// Closed mode: pause between one request's end and the next (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_time: Option<DistSpec>,
    /// Burst mode: when every client sends its request (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_at: Option<Dur>,
    /// Burst mode: the sends are spread uniformly over this span (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_spread: Option<Dur>,
}

fn default_clients() -> u32 {
    1
}

/// What kind of backend serves the attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    #[default]
    Queue,
    Contention,
}

/// Order in which waiting attempts are taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    #[default]
    Fifo,
    Lifo,
}

/// The `backend` block.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {
    #[serde(default)]
    pub kind: BackendKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<DistSpec>,
    #[serde(default)]
    pub admission_cost: Dur,
    #[serde(default)]
    pub reject_cost: Dur,
    /// Waiting-room size; absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_limit: Option<u64>,
    #[serde(default)]
    pub discipline: Discipline,
    #[serde(default)]
    pub drop_expired: bool,
    #[serde(default = "default_reject_status")]
    pub reject_status: Status,
    /// Pushback the backend sends with `unavailable`/`resource_exhausted`
    /// answers (gRPC `grpc-retry-pushback-ms`, HTTP `Retry-After`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Dur>,
}

fn default_reject_status() -> Status {
    Status::Unavailable
}

/// The Cloud Tasks dispatcher in front of the backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSpec {
    #[serde(default = "default_dispatch_rate")]
    pub max_dispatches_per_second: f64,
    #[serde(default = "default_burst")]
    pub max_burst_size: u32,
    #[serde(default = "default_concurrent")]
    pub max_concurrent_dispatches: u32,
    #[serde(default = "default_dispatch_deadline")]
    pub dispatch_deadline: Dur,
}

fn default_dispatch_rate() -> f64 {
    500.0
}
fn default_burst() -> u32 {
    100
}
fn default_concurrent() -> u32 {
    1000
}
fn default_dispatch_deadline() -> Dur {
    Dur::from_secs(600)
}

/// The `report` block: how recovery is judged.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    #[serde(default = "default_threshold")]
    pub recovery_threshold: f64,
    #[serde(default = "default_stable_for")]
    pub stable_for: Dur,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            recovery_threshold: default_threshold(),
            stable_for: default_stable_for(),
        }
    }
}

fn default_threshold() -> f64 {
    0.9
}
fn default_stable_for() -> Dur {
    Dur::from_secs(30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::JitterSpec;

    #[test]
    fn the_spec_example_parses() {
        let text = include_str!("../../../scenarios/example.json");
        let s: ScenarioSpec = serde_json::from_str(text).unwrap();
        assert_eq!(s.policies.len(), 4);
        assert_eq!(s.backend.workers, Some(100));
        assert_eq!(s.faults[0].window(), (300_000_000_000, 390_000_000_000));
        assert_eq!(
            s.policies[2].jitter,
            Some(JitterSpec::Full),
            "unit variants are strings"
        );
        assert_eq!(s.policies[1].jitter, Some(JitterSpec::Proportional(0.1)));
    }
}
