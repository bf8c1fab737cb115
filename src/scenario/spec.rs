//! The scenario file as written: a serde mirror of SPEC "Scenario files".
//!
//! Every struct denies unknown fields and every variant is externally tagged,
//! so serde reports exact field paths and positions for mistakes. These types
//! hold what the user wrote (durations already in integer nanoseconds); the
//! checks serde cannot express live in `validate.rs`, and policies are
//! resolved against their presets in `crate::policy`.

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

/// A random duration (service times, network hops, think times).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DistSpec {
    Constant {
        value: Dur,
    },
    Exponential {
        mean: Dur,
    },
    Uniform {
        min: Dur,
        max: Dur,
    },
    /// Either `{median, p99}` or `{mean, stddev}`.
    Lognormal {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        median: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mean: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stddev: Option<Dur>,
    },
    /// Folded at zero: a negative draw counts as its absolute value.
    Normal {
        mean: Dur,
        stddev: Dur,
    },
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

/// A scheduled fault. Each variant has its window (`start`, `duration`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    Outage {
        start: Dur,
        duration: Dur,
        #[serde(default = "default_fault_status")]
        status: Status,
        #[serde(default)]
        flush: bool,
    },
    Blackhole {
        start: Dur,
        duration: Dur,
    },
    Slowdown {
        start: Dur,
        duration: Dur,
        factor: f64,
    },
    Capacity {
        start: Dur,
        duration: Dur,
        workers: u32,
    },
    Errors {
        start: Dur,
        duration: Dur,
        rate: f64,
        #[serde(default = "default_error_status")]
        status: Status,
    },
}

fn default_fault_status() -> Status {
    Status::Unavailable
}
fn default_error_status() -> Status {
    Status::Internal
}

impl FaultSpec {
    /// The fault's window as (start, end) in nanoseconds.
    pub fn window(&self) -> (u64, u64) {
        let (s, d) = match self {
            FaultSpec::Outage {
                start, duration, ..
            }
            | FaultSpec::Blackhole { start, duration }
            | FaultSpec::Slowdown {
                start, duration, ..
            }
            | FaultSpec::Capacity {
                start, duration, ..
            }
            | FaultSpec::Errors {
                start, duration, ..
            } => (start.ns(), duration.ns()),
        };
        (s, s.saturating_add(d))
    }

    /// The kind's name as written in files (`"outage"`).
    pub fn kind(&self) -> &'static str {
        match self {
            FaultSpec::Outage { .. } => "outage",
            FaultSpec::Blackhole { .. } => "blackhole",
            FaultSpec::Slowdown { .. } => "slowdown",
            FaultSpec::Capacity { .. } => "capacity",
            FaultSpec::Errors { .. } => "errors",
        }
    }
}

/// An operator action taken mid-incident.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionSpec {
    /// Every client stops retrying (for `duration`, default: until the end).
    DisableRetries {
        at: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
    },
    /// The backend rejects `fraction` of arrivals at no cost (for
    /// `duration`, default: until the end).
    ShedLoad {
        at: Dur,
        fraction: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
    },
    /// Every waiting task of the dispatcher queue is dispatched at once.
    ForceRun { at: Dur },
}

impl ActionSpec {
    /// When the action is taken.
    pub fn at(&self) -> Dur {
        match self {
            ActionSpec::DisableRetries { at, .. }
            | ActionSpec::ShedLoad { at, .. }
            | ActionSpec::ForceRun { at } => *at,
        }
    }
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

/// Where a retry budget's state lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetScope {
    #[default]
    Client,
    Global,
}

/// A retry budget (SPEC "Retry policy").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// gRPC retry throttling (gRFC A6).
    TokenBucket {
        max_tokens: f64,
        token_ratio: f64,
        #[serde(default)]
        scope: BudgetScope,
    },
    /// Finagle / Linkerd / tower retry budget.
    Ratio {
        #[serde(default = "default_ratio_percent")]
        percent: f64,
        #[serde(default = "default_min_per_second")]
        min_per_second: f64,
        #[serde(default = "default_ttl")]
        ttl: Dur,
        #[serde(default)]
        scope: BudgetScope,
    },
    /// AWS SDK standard-mode retry quota.
    Quota {
        #[serde(default = "default_quota_capacity")]
        capacity: f64,
        #[serde(default = "default_quota_cost")]
        cost: f64,
        #[serde(default = "default_quota_timeout_cost")]
        timeout_cost: f64,
        #[serde(default = "default_quota_refund")]
        refund: f64,
        #[serde(default)]
        scope: BudgetScope,
    },
}

impl BudgetSpec {
    /// Where the budget's state lives.
    pub fn scope(&self) -> BudgetScope {
        match *self {
            BudgetSpec::TokenBucket { scope, .. }
            | BudgetSpec::Ratio { scope, .. }
            | BudgetSpec::Quota { scope, .. } => scope,
        }
    }
}

fn default_ratio_percent() -> f64 {
    20.0
}
fn default_min_per_second() -> f64 {
    10.0
}
fn default_ttl() -> Dur {
    Dur::from_secs(10)
}
fn default_quota_capacity() -> f64 {
    500.0
}
fn default_quota_cost() -> f64 {
    5.0
}
fn default_quota_timeout_cost() -> f64 {
    10.0
}
fn default_quota_refund() -> f64 {
    1.0
}

/// A client-side circuit breaker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    /// Failure share (0..1) over `window` that opens the breaker.
    pub failure_rate: f64,
    #[serde(default = "default_breaker_window")]
    pub window: Dur,
    #[serde(default = "default_open_for")]
    pub open_for: Dur,
    #[serde(default = "default_probes")]
    pub half_open_probes: u32,
    /// Calls needed in the window before the rate is trusted.
    #[serde(default = "default_min_calls")]
    pub min_calls: u32,
    /// Gate only retries, never first attempts (Brooker's "stop retrying
    /// while the failure rate is high"); default false = gate every call.
    #[serde(default)]
    pub retries_only: bool,
    #[serde(default)]
    pub scope: BudgetScope,
}

fn default_breaker_window() -> Dur {
    Dur::from_secs(10)
}
fn default_open_for() -> Dur {
    Dur::from_secs(5)
}
fn default_probes() -> u32 {
    1
}
fn default_min_calls() -> u32 {
    10
}

/// The nominal delay before retry `n` (n = 1 is the first retry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BackoffSpec {
    Constant {
        delay: Dur,
    },
    Linear {
        initial: Dur,
        step: Dur,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Dur>,
    },
    Exponential {
        initial: Dur,
        #[serde(default = "default_multiplier")]
        multiplier: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Dur>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_doublings: Option<u32>,
    },
    CloudTasks {
        min_backoff: Dur,
        max_backoff: Dur,
        max_doublings: u32,
    },
    Decorrelated {
        base: Dur,
        max: Dur,
    },
}

fn default_multiplier() -> f64 {
    2.0
}

/// Randomisation applied to a backoff delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterSpec {
    #[default]
    None,
    Full,
    Equal,
    /// d · U(1 − f, 1 + f).
    Proportional(f64),
}

/// One retry policy as written; fields left out come from the preset (if
/// any) and then from the SPEC defaults.
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
    /// Wait the backoff delay or the pushback, whichever is longer (SPEC).
    #[default]
    AtLeast,
    /// gRPC (gRFC A6): retry after exactly the pushback, and start the
    /// backoff sequence again from `initial` for the next retry.
    Exact,
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

    #[test]
    fn the_spec_example_parses() {
        let text = include_str!("../../scenarios/example.json");
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
