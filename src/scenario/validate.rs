//! The checks serde cannot express: ranges, orderings, required-unless
//! rules and limits that keep a run's memory bounded. Every problem names
//! the field path (`policies[1].backoff.exponential.initial`) in the same
//! form as deserialisation errors, and all problems are reported at once.

use super::spec::{
    ActionSpec, BackendKind, BackoffSpec, BreakerSpec, BudgetScope, BudgetSpec, DistSpec,
    FaultSpec, JitterSpec, Mode, PolicySpec, ScenarioSpec,
};
use crate::policy;
use crate::status::Status;
use crate::time::{Dur, NS_PER_SEC};
use std::collections::HashMap;
use std::fmt;

/// More time-series bins than this per run is refused (memory).
pub const MAX_BINS: u64 = 10_000_000;
/// More clients than this is refused (per-client state is held in memory).
pub const MAX_CLIENTS: u32 = 100_000_000;
/// More backend workers than this is refused.
pub const MAX_WORKERS: u32 = 10_000_000;
/// Most clients that may each hold a budget or breaker (a few hundred bytes
/// of state each).
pub const MAX_GATED_CLIENTS: u32 = 5_000_000;
/// A higher request rate (per second) is refused.
pub const MAX_RATE: f64 = 1e9;

/// One thing wrong with a scenario: where (a field path) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Field path as serde_path_to_error writes it (`traffic.profile[2].at`).
    pub path: String,
    /// What is wrong, written for the person who wrote the file.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Checks every value of a deserialised scenario; returns all problems.
pub fn validate(spec: &ScenarioSpec) -> Result<(), Vec<Problem>> {
    let mut c = Checker::default();
    c.scenario(spec);
    if c.problems.is_empty() {
        Ok(())
    } else {
        Err(c.problems)
    }
}

#[derive(Default)]
struct Checker {
    problems: Vec<Problem>,
}

fn finite_pos(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

impl Checker {
    fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    fn positive_dur(&mut self, path: &str, d: Dur) {
        if d.ns() == 0 {
            self.err(path, "must be greater than 0");
        }
    }

    fn scenario(&mut self, s: &ScenarioSpec) {
        if s.name.trim().is_empty() {
            self.err("name", "must not be empty");
        }
        self.positive_dur("duration", s.duration);
        if s.bin.ns() == 0 {
            self.err("bin", "must be greater than 0");
        } else if s.duration.ns() > 0 {
            if s.bin > s.duration {
                self.err(
                    "bin",
                    format!(
                        "{} is longer than the run's duration ({})",
                        s.bin, s.duration
                    ),
                );
            } else if s.duration.ns() / s.bin.ns() > MAX_BINS {
                self.err(
                    "bin",
                    format!(
                        "{} bins of {} over {} is too many (at most {MAX_BINS}); use a larger bin",
                        s.duration.ns() / s.bin.ns(),
                        s.bin,
                        s.duration
                    ),
                );
            }
        }
        if s.duration.ns() > 0 && s.warmup >= s.duration {
            self.err(
                "warmup",
                format!(
                    "{} must be shorter than the run's duration ({})",
                    s.warmup, s.duration
                ),
            );
        }
        self.traffic(s);
        self.backend(s);
        for (i, f) in s.faults.iter().enumerate() {
            self.fault(&format!("faults[{i}].{}", f.kind()), f, s);
        }
        for (i, a) in s.actions.iter().enumerate() {
            self.action(i, a, s);
        }
        if let Some(d) = &s.dispatcher {
            let p = "dispatcher";
            if !finite_pos(d.max_dispatches_per_second) {
                self.err(
                    format!("{p}.max_dispatches_per_second"),
                    "must be a number greater than 0",
                );
            }
            if d.max_burst_size < 1 {
                self.err(format!("{p}.max_burst_size"), "must be at least 1");
            }
            if d.max_concurrent_dispatches < 1 {
                self.err(
                    format!("{p}.max_concurrent_dispatches"),
                    "must be at least 1",
                );
            }
            self.positive_dur(&format!("{p}.dispatch_deadline"), d.dispatch_deadline);
        }
        self.policies(&s.policies, s.traffic.clients);
        let r = &s.report;
        if !(r.recovery_threshold.is_finite()
            && r.recovery_threshold > 0.0
            && r.recovery_threshold <= 1.0)
        {
            self.err(
                "report.recovery_threshold",
                format!(
                    "{} is out of range: it is a share of demand in (0, 1], e.g. 0.9",
                    r.recovery_threshold
                ),
            );
        }
        self.positive_dur("report.stable_for", r.stable_for);
    }

    fn traffic(&mut self, s: &ScenarioSpec) {
        let t = &s.traffic;
        match t.rate {
            None if t.mode != Mode::Burst => self.err(
                "traffic.rate",
                "missing: requests per second are required unless mode is \"burst\"",
            ),
            Some(r) if !finite_pos(r) => self.err(
                "traffic.rate",
                format!("{r} is not a number of requests per second greater than 0"),
            ),
            Some(r) if r > MAX_RATE => self.err(
                "traffic.rate",
                format!("{r} requests per second is too many (at most {MAX_RATE:e})"),
            ),
            _ => {}
        }
        if t.clients < 1 {
            self.err("traffic.clients", "must be at least 1");
        } else if t.clients > MAX_CLIENTS {
            self.err(
                "traffic.clients",
                format!("{} is too many (at most {MAX_CLIENTS})", t.clients),
            );
        }
        let mut prev: Option<Dur> = None;
        for (i, p) in t.profile.iter().enumerate() {
            if let Some(prev) = prev {
                if p.at <= prev {
                    self.err(
                        format!("traffic.profile[{i}].at"),
                        format!(
                            "{} is not after the previous point ({prev}); `at` must be strictly increasing",
                            p.at
                        ),
                    );
                }
            }
            prev = Some(p.at);
            if !finite_nonneg(p.scale) {
                self.err(
                    format!("traffic.profile[{i}].scale"),
                    format!("{} must be a number >= 0", p.scale),
                );
            }
        }
        if let Some(d) = t.attempt_timeout {
            self.positive_dur("traffic.attempt_timeout", d);
        }
        if let Some(d) = t.deadline {
            self.positive_dur("traffic.deadline", d);
        }
        if let Some(d) = &t.network_delay {
            self.dist("traffic.network_delay", d);
        }
        if let Some(d) = &t.think_time {
            self.dist("traffic.think_time", d);
        }
    }

    fn dist(&mut self, path: &str, d: &DistSpec) {
        match d {
            DistSpec::Constant { .. } => {}
            DistSpec::Exponential { mean } => {
                self.positive_dur(&format!("{path}.exponential.mean"), *mean)
            }
            DistSpec::Uniform { min, max } => {
                if min > max {
                    self.err(
                        format!("{path}.uniform.min"),
                        format!("{min} is greater than max ({max})"),
                    );
                }
            }
            DistSpec::Lognormal {
                median,
                p99,
                mean,
                stddev,
            } => {
                let p = format!("{path}.lognormal");
                let quantiles = median.is_some() || p99.is_some();
                let moments = mean.is_some() || stddev.is_some();
                match (median, p99, mean, stddev) {
                    (Some(m), Some(q), None, None) => {
                        if m.ns() == 0 {
                            self.err(format!("{p}.median"), "must be greater than 0");
                        } else if q < m {
                            self.err(
                                format!("{p}.p99"),
                                format!("{q} is less than the median ({m})"),
                            );
                        }
                    }
                    (None, None, Some(m), Some(_)) => {
                        if m.ns() == 0 {
                            self.err(format!("{p}.mean"), "must be greater than 0");
                        }
                    }
                    _ if quantiles && moments => self.err(
                        p,
                        "give either {median, p99} or {mean, stddev}, not fields of both",
                    ),
                    _ => self.err(
                        p,
                        "needs both `median` and `p99`, or both `mean` and `stddev`",
                    ),
                }
            }
            DistSpec::Normal { .. } => {}
        }
    }

    fn backend(&mut self, s: &ScenarioSpec) {
        let b = &s.backend;
        match b.kind {
            BackendKind::Queue => {
                match b.workers {
                    None => self.err(
                        "backend.workers",
                        "missing: a queue backend needs a number of workers",
                    ),
                    Some(0) => self.err("backend.workers", "must be at least 1"),
                    Some(w) if w > MAX_WORKERS => self.err(
                        "backend.workers",
                        format!("{w} is too many (at most {MAX_WORKERS})"),
                    ),
                    _ => {}
                }
                match &b.service_time {
                    None => self.err(
                        "backend.service_time",
                        "missing: a queue backend needs a service time distribution",
                    ),
                    Some(d) => self.dist("backend.service_time", d),
                }
            }
            BackendKind::Contention => {
                let meaningless = [
                    ("workers", b.workers.is_some()),
                    ("service_time", b.service_time.is_some()),
                    ("queue_limit", b.queue_limit.is_some()),
                ];
                for (field, given) in meaningless {
                    if given {
                        self.err(
                            format!("backend.{field}"),
                            "has no meaning for a \"contention\" backend (it has no workers and no queue); remove it",
                        );
                    }
                }
            }
        }
    }

    fn fault(&mut self, p: &str, f: &FaultSpec, s: &ScenarioSpec) {
        let (start, _) = f.window();
        let duration = match f {
            FaultSpec::Outage { duration, .. }
            | FaultSpec::Blackhole { duration, .. }
            | FaultSpec::Slowdown { duration, .. }
            | FaultSpec::Capacity { duration, .. }
            | FaultSpec::Errors { duration, .. } => *duration,
        };
        self.positive_dur(&format!("{p}.duration"), duration);
        if s.duration.ns() > 0 && start >= s.duration.ns() {
            self.err(
                format!("{p}.start"),
                format!(
                    "{} is at or after the end of the run ({}); the fault would never happen",
                    Dur(start),
                    s.duration
                ),
            );
        }
        match f {
            FaultSpec::Outage { status, .. } if *status == Status::Ok => {
                self.err(format!("{p}.status"), "an outage cannot answer `ok`")
            }
            FaultSpec::Slowdown { factor, .. } if !finite_pos(*factor) => self.err(
                format!("{p}.factor"),
                format!("{factor} must be a number greater than 0"),
            ),
            FaultSpec::Errors { rate, status, .. } => {
                if !(rate.is_finite() && (0.0..=1.0).contains(rate)) {
                    self.err(
                        format!("{p}.rate"),
                        format!("{rate} is out of range: a fraction in [0, 1], e.g. 0.01"),
                    );
                }
                if *status == Status::Ok {
                    self.err(format!("{p}.status"), "injected errors cannot be `ok`");
                }
            }
            _ => {}
        }
    }

    fn action(&mut self, i: usize, a: &ActionSpec, s: &ScenarioSpec) {
        match a {
            ActionSpec::DisableRetries { duration, .. } => {
                if let Some(d) = duration {
                    self.positive_dur(&format!("actions[{i}].disable_retries.duration"), *d);
                }
            }
            ActionSpec::ShedLoad {
                fraction, duration, ..
            } => {
                let p = format!("actions[{i}].shed_load");
                if !(fraction.is_finite() && (0.0..=1.0).contains(fraction)) {
                    self.err(
                        format!("{p}.fraction"),
                        format!("{fraction} is out of range: a fraction in [0, 1]"),
                    );
                }
                if let Some(d) = duration {
                    self.positive_dur(&format!("{p}.duration"), *d);
                }
            }
            ActionSpec::ForceRun { .. } => {
                if s.dispatcher.is_none() {
                    self.err(
                        format!("actions[{i}].force_run"),
                        "needs a `dispatcher` block (it runs the dispatcher's waiting tasks)",
                    );
                }
            }
        }
    }

    fn policies(&mut self, policies: &[PolicySpec], clients: u32) {
        if policies.is_empty() {
            self.err("policies", "needs at least one policy");
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in policies.iter().enumerate() {
            let path = format!("policies[{i}]");
            if p.name.trim().is_empty() {
                self.err(format!("{path}.name"), "must not be empty");
            } else if let Some(first) = seen.insert(p.name.as_str(), i) {
                seen.insert(p.name.as_str(), first);
                self.err(
                    format!("{path}.name"),
                    format!(
                        "{:?} is already the name of policies[{first}]; names must be unique",
                        p.name
                    ),
                );
            }
            self.policy(&path, p);
            self.client_state_fits(&path, p, clients);
        }
    }

    /// Per-client budgets and breakers keep state for every client; refuse
    /// client counts whose state would not fit in memory.
    fn client_state_fits(&mut self, path: &str, p: &PolicySpec, clients: u32) {
        if clients > MAX_CLIENTS {
            return; // already reported on traffic.clients
        }
        let Ok(resolved) = policy::resolve(p) else {
            return;
        };
        let per_client_budget = resolved
            .budget
            .as_ref()
            .is_some_and(|b| b.scope() != BudgetScope::Global);
        let per_client_breaker = resolved
            .breaker
            .as_ref()
            .is_some_and(|b| b.scope != BudgetScope::Global);
        if (per_client_budget || per_client_breaker) && clients > MAX_GATED_CLIENTS {
            self.err(
                path.to_string(),
                format!(
                    "a per-client budget or circuit breaker keeps state for each of the {clients} clients \
                     (at most {MAX_GATED_CLIENTS}); use \"scope\": \"global\" or fewer clients"
                ),
            );
        }
    }

    fn policy(&mut self, path: &str, p: &PolicySpec) {
        let before = self.problems.len();
        if let Some(name) = &p.preset {
            if policy::presets::preset(name).is_none() {
                self.err(
                    format!("{path}.preset"),
                    format!(
                        "unknown preset {name:?}; known presets: {}",
                        policy::presets::NAMES.join(", ")
                    ),
                );
            }
        }
        if let Some(m) = p.max_attempts {
            if m < -1 {
                self.err(
                    format!("{path}.max_attempts"),
                    format!("{m} is not allowed: attempts in all, the first included (0 or -1 = unlimited)"),
                );
            }
        }
        if let Some(b) = &p.backoff {
            self.backoff(&format!("{path}.backoff"), b);
        }
        if let Some(JitterSpec::Proportional(f)) = p.jitter {
            if !(f.is_finite() && (0.0..=1.0).contains(&f)) {
                self.err(
                    format!("{path}.jitter.proportional"),
                    format!("{f} is out of range: a fraction in [0, 1], e.g. 0.1 for ±10%"),
                );
            }
        }
        if let Some(b) = &p.budget {
            self.budget(&format!("{path}.budget"), b);
        }
        if let Some(b) = &p.circuit_breaker {
            self.breaker(&format!("{path}.circuit_breaker"), b);
        }
        // Only ask the resolver once the fields themselves are sound, so a
        // bad preset name is not reported twice.
        if self.problems.len() == before {
            if let Err(e) = policy::resolve(p) {
                self.err(path, e);
            }
        }
    }

    fn backoff(&mut self, path: &str, b: &BackoffSpec) {
        match b {
            BackoffSpec::Constant { .. } => {}
            BackoffSpec::Linear { initial, max, .. } => {
                if let Some(max) = max {
                    if max < initial {
                        self.err(
                            format!("{path}.linear.max"),
                            format!("{max} is less than initial ({initial})"),
                        );
                    }
                }
            }
            BackoffSpec::Exponential {
                initial,
                multiplier,
                max,
                ..
            } => {
                let p = format!("{path}.exponential");
                self.positive_dur(&format!("{p}.initial"), *initial);
                if !(multiplier.is_finite() && *multiplier >= 1.0) {
                    self.err(
                        format!("{p}.multiplier"),
                        format!("{multiplier} must be a number >= 1"),
                    );
                }
                if let Some(max) = max {
                    if max < initial {
                        self.err(
                            format!("{p}.max"),
                            format!("{max} is less than initial ({initial})"),
                        );
                    }
                }
            }
            BackoffSpec::CloudTasks {
                min_backoff,
                max_backoff,
                ..
            } => {
                if min_backoff > max_backoff {
                    self.err(
                        format!("{path}.cloud_tasks.min_backoff"),
                        format!("{min_backoff} is greater than max_backoff ({max_backoff})"),
                    );
                }
            }
            BackoffSpec::Decorrelated { base, max } => {
                let p = format!("{path}.decorrelated");
                if base.ns() == 0 {
                    self.err(format!("{p}.base"), "must be greater than 0");
                } else if base > max {
                    self.err(
                        format!("{p}.base"),
                        format!("{base} is greater than max ({max})"),
                    );
                }
            }
        }
    }

    fn budget(&mut self, path: &str, b: &BudgetSpec) {
        match b {
            BudgetSpec::TokenBucket {
                max_tokens,
                token_ratio,
                ..
            } => {
                let p = format!("{path}.token_bucket");
                if !(finite_pos(*max_tokens) && *max_tokens <= 1000.0) {
                    self.err(
                        format!("{p}.max_tokens"),
                        format!("{max_tokens} is out of range (0, 1000] (gRFC A6)"),
                    );
                }
                if !finite_pos(*token_ratio) {
                    self.err(
                        format!("{p}.token_ratio"),
                        format!("{token_ratio} must be a number greater than 0"),
                    );
                }
            }
            BudgetSpec::Ratio {
                percent,
                min_per_second,
                ttl,
                ..
            } => {
                let p = format!("{path}.ratio");
                if !(finite_nonneg(*percent) && *percent <= 1000.0) {
                    self.err(
                        format!("{p}.percent"),
                        format!("{percent} is out of range [0, 1000] (a percent: 20 = 20%)"),
                    );
                }
                if !finite_nonneg(*min_per_second) {
                    self.err(
                        format!("{p}.min_per_second"),
                        format!("{min_per_second} must be a number >= 0"),
                    );
                }
                if ttl.ns() < NS_PER_SEC || ttl.ns() > 60 * NS_PER_SEC {
                    self.err(
                        format!("{p}.ttl"),
                        format!("{ttl} is out of range [1s, 60s]"),
                    );
                }
            }
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                ..
            } => {
                let p = format!("{path}.quota");
                if !finite_pos(*capacity) {
                    self.err(
                        format!("{p}.capacity"),
                        format!("{capacity} must be a number greater than 0"),
                    );
                }
                for (name, v) in [
                    ("cost", cost),
                    ("timeout_cost", timeout_cost),
                    ("refund", refund),
                ] {
                    if !finite_nonneg(*v) {
                        self.err(format!("{p}.{name}"), format!("{v} must be a number >= 0"));
                    }
                }
            }
        }
    }

    fn breaker(&mut self, p: &str, b: &BreakerSpec) {
        if !(b.failure_rate.is_finite() && b.failure_rate > 0.0 && b.failure_rate <= 1.0) {
            self.err(
                format!("{p}.failure_rate"),
                format!(
                    "{} is out of range: a share of failures in (0, 1], e.g. 0.5",
                    b.failure_rate
                ),
            );
        }
        self.positive_dur(&format!("{p}.window"), b.window);
        self.positive_dur(&format!("{p}.open_for"), b.open_for);
        if b.half_open_probes < 1 {
            self.err(format!("{p}.half_open_probes"), "must be at least 1");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> ScenarioSpec {
        serde_json::from_str(include_str!("../../scenarios/example.json")).unwrap()
    }

    fn paths(s: &ScenarioSpec) -> Vec<String> {
        validate(s)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|p| p.path)
            .collect()
    }

    #[test]
    fn shipped_scenarios_are_valid() {
        assert_eq!(validate(&example()), Ok(()));
        let s: ScenarioSpec =
            serde_json::from_str(include_str!("../../scenarios/spanner-90s.json")).unwrap();
        assert_eq!(validate(&s), Ok(()));
    }

    #[test]
    fn reports_every_problem_at_once() {
        let mut s = example();
        s.name = " ".into();
        s.bin = Dur(0);
        s.traffic.rate = Some(-1.0);
        s.policies[1].name = "no-jitter".into();
        s.report.recovery_threshold = 1.5;
        let p = paths(&s);
        for want in [
            "name",
            "bin",
            "traffic.rate",
            "policies[1].name",
            "report.recovery_threshold",
        ] {
            assert!(p.iter().any(|x| x == want), "{want} missing from {p:?}");
        }
    }

    #[test]
    fn burst_mode_needs_no_rate() {
        let mut s = example();
        s.traffic.rate = None;
        assert_eq!(paths(&s), vec!["traffic.rate"]);
        s.traffic.mode = Mode::Burst;
        assert_eq!(validate(&s), Ok(()));
    }

    #[test]
    fn lognormal_needs_one_pair() {
        let d = |median: Option<u64>, p99: Option<u64>, mean: Option<u64>, stddev: Option<u64>| {
            DistSpec::Lognormal {
                median: median.map(Dur::from_millis),
                p99: p99.map(Dur::from_millis),
                mean: mean.map(Dur::from_millis),
                stddev: stddev.map(Dur::from_millis),
            }
        };
        let mut s = example();
        for (dist, ok) in [
            (d(Some(10), Some(50), None, None), true),
            (d(None, None, Some(10), Some(0)), true),
            (d(Some(10), None, None, None), false),
            (d(Some(10), Some(5), None, None), false),
            (d(Some(10), Some(50), Some(1), None), false),
            (d(None, None, Some(0), Some(1)), false),
        ] {
            s.backend.service_time = Some(dist.clone());
            assert_eq!(validate(&s).is_ok(), ok, "{dist:?}");
        }
    }

    #[test]
    fn absurd_sizes_are_refused() {
        let mut s = example();
        s.bin = Dur(1);
        assert_eq!(paths(&s), vec!["bin"]);
        let mut s = example();
        s.traffic.clients = u32::MAX;
        assert_eq!(paths(&s), vec!["traffic.clients"]);
    }

    #[test]
    fn a_policy_that_retries_needs_a_backoff() {
        let mut s = example();
        s.policies[0].backoff = None;
        let e = validate(&s).unwrap_err();
        assert_eq!(e[0].path, "policies[0]");
        assert!(e[0].message.contains("backoff"), "{}", e[0]);
    }
}
