//! The checks serde cannot express: ranges, orderings, required-unless
//! rules and limits that keep a run's memory bounded. Every problem names
//! the field path (`policies[1].backoff.exponential.initial`) in the same
//! form as deserialisation errors, and all problems are reported at once.

use super::names::name_problem;
use super::spec::{
    Arrival, BackendKind, Discipline, DispatcherSpec, Mode, ReportSpec, ScenarioSpec,
    ThrottlingSpec, TrafficSpec,
};
use crate::check::{finite_nonneg, finite_pos, must_be, Problem, Problems};
use crate::decimal::Given;
use crate::policy::{self, PolicySpec};
use crate::scenario::spec::{
    BackendSpec, DownstreamSpec, FaultSpec, PolicyRef, COMPARED, MAX_DOWNSTREAM,
};
use crate::status::Status;
use crate::time::Dur;
use std::collections::HashMap;

/// More time-series bins than this per run is refused (memory).
pub const MAX_BINS: u64 = 10_000_000;
/// More clients than this is refused (per-client state is held in memory).
pub const MAX_CLIENTS: u32 = 100_000_000;
/// More downstream calls per attempt than this is refused.
const MAX_CALLS: u32 = 1000;
/// More backend workers than this is refused.
pub const MAX_WORKERS: u32 = 10_000_000;
/// Most clients that may each hold a budget or breaker (a few hundred bytes
/// of state each).
pub const MAX_GATED_CLIENTS: u32 = 5_000_000;
/// A higher request rate (per second) is refused.
pub const MAX_RATE: f64 = 1e9;
/// More pool-mode client threads than this is refused.
pub const MAX_THREADS: u32 = 10_000_000;

/// Checks every value of a deserialised scenario; returns all problems.
pub fn validate(spec: &ScenarioSpec) -> Result<(), Vec<Problem>> {
    let mut c = Checker::default();
    c.scenario(spec);
    c.p.into_result()
}

/// What is modelled at the top tier only: refused below by one rule
/// ([`Checker::top_only`]).
#[derive(Clone, Copy, Debug)]
enum TopOnly {
    /// A policy's `hedging`.
    Hedging,
    /// A policy's client-side `rate_limiter`.
    RateLimiter,
    /// A backend of `kind` `contention`.
    Contention,
}

#[derive(Default)]
struct Checker {
    p: Problems,
}

impl Checker {
    fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.p.err(path, message);
    }

    fn err_with<R: Into<String>>(
        &mut self,
        path: impl Into<String>,
        related: impl IntoIterator<Item = R>,
        message: impl Into<String>,
    ) {
        self.p.err_with(path, related, message);
    }

    fn positive_dur(&mut self, path: &str, d: Dur) {
        self.p.positive_dur(path, d);
    }

    /// The whole scenario, section by section, in the order its problems
    /// are reported.
    fn scenario(&mut self, s: &ScenarioSpec) {
        if let Some(why) = name_problem(&s.name) {
            self.err("name", format!("{:?} {why}", s.name));
        }
        self.run_length(s);
        self.traffic(s);
        self.backend("backend", &s.backend);
        self.downstream(s);
        for (i, f) in s.faults.iter().enumerate() {
            f.check(
                &format!("faults[{i}].{}", f.kind()),
                s.duration,
                &mut self.p,
            );
        }
        for (i, a) in s.actions.iter().enumerate() {
            a.check(
                &format!("actions[{i}]"),
                s.dispatcher.is_some(),
                s.duration,
                &mut self.p,
            );
        }
        if let Some(d) = &s.dispatcher {
            self.dispatcher(d);
        }
        // Channels (`reconnect`) are kept only toward a top backend that
        // crashes.
        let crash = s.faults.iter().any(|f| {
            matches!(f, FaultSpec::Crash { .. })
                && f.tier()
                    .is_none_or(|t| Some(t) == s.backend.name.as_deref())
        });
        self.policies(
            &s.policies,
            s.traffic.clients,
            s.dispatcher.is_some(),
            crash,
        );
        self.report(&s.report);
    }

    /// The run's `duration`, and what is measured against it: the `bin`
    /// (no longer than the run, and not so many bins that the time series
    /// would not fit in memory) and the `warmup`.
    fn run_length(&mut self, s: &ScenarioSpec) {
        self.positive_dur("duration", s.duration);
        if s.bin.ns() == 0 {
            self.err("bin", "must be greater than 0");
        } else if s.duration.ns() > 0 {
            if s.bin > s.duration {
                self.err_with(
                    "bin",
                    ["duration"],
                    format!(
                        "{} is longer than the run's duration ({})",
                        s.bin, s.duration
                    ),
                );
            } else if s.duration.ns() / s.bin.ns() > MAX_BINS {
                self.err_with(
                    "bin",
                    ["duration"],
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
            self.err_with(
                "warmup",
                ["duration"],
                format!(
                    "{} must be shorter than the run's duration ({})",
                    s.warmup, s.duration
                ),
            );
        }
    }

    /// A Cloud Tasks queue's dispatcher: its rate, bucket, concurrency and
    /// deadline, then its adaptive throttling if any.
    fn dispatcher(&mut self, d: &DispatcherSpec) {
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
        if let Some(t) = &d.throttling {
            self.throttling(t);
        }
    }

    /// The dispatcher's adaptive throttling: its window, the shares that
    /// start and steer it, and the multipliers and floor of its rate.
    fn throttling(&mut self, t: &ThrottlingSpec) {
        let p = "dispatcher.throttling";
        // Each window closes in turn, also while the queue is idle:
        // a window shorter than a millisecond measures nothing a
        // real queue could react to and only costs time.
        if t.window.ns() < 1_000_000 {
            self.err(
                format!("{p}.window"),
                format!("{} is below the smallest window, 1ms", t.window),
            );
        }
        self.p
            .fraction(&format!("{p}.error_share"), t.error_share, ", e.g. 0.05");
        self.p
            .fraction(&format!("{p}.start"), t.start, ", e.g. 0.05");
        self.p.fraction(&format!("{p}.ramp"), t.ramp, ", e.g. 0.05");
        for (field, v) in [
            ("decrease", t.decrease),
            ("overload_decrease", t.overload_decrease),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                self.err(
                    format!("{p}.{field}"),
                    format!(
                        "{} is out of range: a rate multiplier in (0, 1], e.g. 0.5",
                        Given(v)
                    ),
                );
            }
        }
        if !finite_pos(t.min_rate) {
            self.err(format!("{p}.min_rate"), "must be a number greater than 0");
        }
    }

    /// The `report` block: the recovery test's threshold and window, and
    /// the alerts' thresholds and windows.
    fn report(&mut self, r: &ReportSpec) {
        if !(r.recovery_threshold.is_finite()
            && r.recovery_threshold > 0.0
            && r.recovery_threshold <= 1.0)
        {
            self.err(
                "report.recovery_threshold",
                format!(
                    "{} is out of range: it is a share of demand in (0, 1], e.g. 0.9",
                    Given(r.recovery_threshold)
                ),
            );
        }
        self.positive_dur("report.stable_for", r.stable_for);
        let a = &r.alerts;
        if !finite_nonneg(a.max_attempts_reached) {
            self.err(
                "report.alerts.max_attempts_reached",
                "must be a number >= 0 (requests per second)",
            );
        }
        self.p
            .fraction("report.alerts.retry_rate", a.retry_rate, ", e.g. 0.1");
        self.p
            .fraction("report.alerts.tail_share", a.tail_share, ", e.g. 0.5");
        self.positive_dur("report.alerts.retry_rate_for", a.retry_rate_for);
        self.positive_dur("report.alerts.task_age", a.task_age);
        self.positive_dur("report.alerts.tail_window", a.tail_window);
        if a.tail_attempt < 2 {
            self.err(
                "report.alerts.tail_attempt",
                "must be at least 2 (an attempt number; 20 watches the 20th attempt on)",
            );
        }
    }

    /// Pool mode: a number of threads, and no dispatcher (a Cloud Tasks
    /// queue has no client threads).
    fn pool(&mut self, s: &ScenarioSpec) {
        let t = &s.traffic;
        if t.mode != Mode::Pool {
            return;
        }
        match t.threads {
            None => self.err_with(
                "traffic.threads",
                ["traffic.mode"],
                "missing: pool-mode traffic needs the number of client threads, e.g. 400",
            ),
            Some(n) if n == 0 || n > MAX_THREADS => self.err(
                "traffic.threads",
                format!("{n} is not a number of threads from 1 to {MAX_THREADS}"),
            ),
            Some(_) => {}
        }
        if s.dispatcher.is_some() {
            self.err_with(
                "traffic.mode",
                ["dispatcher"],
                "\"pool\" cannot be used with a dispatcher: a Cloud Tasks queue dispatches tasks itself, with no client threads; use mode \"open\"",
            );
        }
    }

    /// The `traffic` block: its rate, the fields only another mode uses,
    /// pool mode's threads, the burst's time, the clients, the rate
    /// profile, and its time limits and delays.
    fn traffic(&mut self, s: &ScenarioSpec) {
        let t = &s.traffic;
        self.rate(t);
        self.other_modes_fields(t);
        self.pool(s);
        if let (Mode::Burst, Some(at)) = (t.mode, t.burst_at) {
            if s.duration.ns() > 0 && at >= s.duration {
                self.err_with(
                    "traffic.burst_at",
                    ["duration"],
                    format!(
                        "{at} is at or after the end of the run ({}); the burst would never be sent",
                        s.duration
                    ),
                );
            }
        }
        if s.dispatcher.is_some() && t.attempt_timeout.is_some() {
            self.err_with(
                "traffic.attempt_timeout",
                ["dispatcher"],
                "has no effect with a dispatcher: the attempt timeout of a Cloud Tasks queue is `dispatcher.dispatch_deadline`; remove it (or move its value there)",
            );
        }
        if t.clients < 1 {
            self.err("traffic.clients", "must be at least 1");
        } else if t.clients > MAX_CLIENTS {
            self.err(
                "traffic.clients",
                format!("{} is too many (at most {MAX_CLIENTS})", t.clients),
            );
        }
        self.profile(t);
        if let Some(d) = t.attempt_timeout {
            self.positive_dur("traffic.attempt_timeout", d);
        }
        if let Some(d) = t.deadline {
            self.positive_dur("traffic.deadline", d);
        }
        if let Some(d) = &t.network_delay {
            d.check("traffic.network_delay", &mut self.p);
        }
        if let Some(d) = &t.think_time {
            d.check("traffic.think_time", &mut self.p);
        }
    }

    /// `traffic.rate`: required, and bounded, where arrivals keep their
    /// own clock (open and pool mode); refused where each client decides
    /// when it sends (closed and burst mode), unless 0.
    fn rate(&mut self, t: &TrafficSpec) {
        match (t.mode, t.rate) {
            (Mode::Open | Mode::Pool, None) => self.err_with(
                "traffic.rate",
                ["traffic.mode"],
                "missing: open-mode (and pool-mode) traffic needs new requests per second (or set mode \"closed\" or \"burst\")",
            ),
            (Mode::Open | Mode::Pool, Some(r)) if !r.is_finite() => self.err(
                "traffic.rate",
                must_be(r, "a number of requests per second greater than 0"),
            ),
            (Mode::Open | Mode::Pool, Some(r)) if !finite_pos(r) => self.err(
                "traffic.rate",
                format!("{} is not a number of requests per second greater than 0", Given(r)),
            ),
            (Mode::Open | Mode::Pool, Some(r)) if r > MAX_RATE => self.err(
                "traffic.rate",
                format!("{} requests per second is too many (at most {MAX_RATE:e})", Given(r)),
            ),
            (Mode::Closed, Some(r)) if r != 0.0 => self.err_with(
                "traffic.rate",
                ["traffic.mode"],
                "has no meaning in closed mode: each client sends its next request when its last one ends (after `think_time`); remove it, or use mode \"open\"",
            ),
            (Mode::Burst, Some(r)) if r != 0.0 => self.err_with(
                "traffic.rate",
                ["traffic.mode"],
                "has no meaning in burst mode: every client sends one request (at `burst_at`, spread over `burst_spread`); remove it, or use mode \"open\"",
            ),
            _ => {}
        }
    }

    /// The fields of another mode than the traffic's: each is refused,
    /// with the mode that uses it and what it does there.
    fn other_modes_fields(&mut self, t: &TrafficSpec) {
        let only_in = |field: &str, mode: &str, what: &str| {
            (
                format!("traffic.{field}"),
                format!(
                    "has no meaning outside {mode} mode ({what}); remove it or set mode \"{mode}\""
                ),
            )
        };
        let mut misplaced = Vec::new();
        if t.mode != Mode::Closed && t.think_time.is_some() {
            misplaced.push(only_in(
                "think_time",
                "closed",
                "the pause between a closed-loop client's requests",
            ));
        }
        if t.mode != Mode::Burst {
            if t.burst_at.is_some() {
                misplaced.push(only_in(
                    "burst_at",
                    "burst",
                    "when every client sends its one request",
                ));
            }
            if t.burst_spread.is_some() {
                misplaced.push(only_in(
                    "burst_spread",
                    "burst",
                    "the span a burst's sends are spread over",
                ));
            }
        }
        if !t.mode.open_arrivals() {
            if !t.profile.is_empty() {
                misplaced.push(only_in("profile", "open", "it scales the arrival rate"));
            }
            if t.arrival != Arrival::Poisson {
                misplaced.push(only_in(
                    "arrival",
                    "open",
                    "it shapes the gaps between open-mode arrivals",
                ));
            }
        }
        if t.mode != Mode::Pool && t.threads.is_some() {
            misplaced.push(only_in(
                "threads",
                "pool",
                "the client threads that serve the application queue",
            ));
        }
        for (path, message) in misplaced {
            self.err_with(path, ["traffic.mode"], message);
        }
    }

    /// `traffic.profile`: points at strictly increasing times, each scale
    /// a number >= 0 that keeps the rate within what a rate may be.
    fn profile(&mut self, t: &TrafficSpec) {
        let mut prev: Option<Dur> = None;
        for (i, p) in t.profile.iter().enumerate() {
            if let Some(prev) = prev {
                if p.at <= prev {
                    self.err_with(
                        format!("traffic.profile[{i}].at"),
                        [format!("traffic.profile[{}].at", i - 1)],
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
                    must_be(p.scale, "a number >= 0"),
                );
            } else if let Some(r) = t.rate.filter(|&r| finite_pos(r) && r <= MAX_RATE) {
                // The rate the scale gives is bounded as the rate itself.
                if r * p.scale > MAX_RATE {
                    self.err(
                        format!("traffic.profile[{i}].scale"),
                        format!(
                            "{} times the rate ({}/s) is too many requests per second \
                             (at most {MAX_RATE:e})",
                            Given(p.scale),
                            Given(r)
                        ),
                    );
                }
            }
        }
    }

    /// A backend, the top one or a tier's below at `path`: what its kind
    /// needs and refuses, and the status its rejections answer with.
    fn backend(&mut self, path: &str, b: &BackendSpec) {
        // What a backend needs and refuses depends on its kind.
        match b.kind {
            BackendKind::Queue => self.queue_backend(path, b),
            BackendKind::Contention => self.not_for_kind(
                path,
                "contention",
                "(it has no workers and no queue)",
                &[
                    ("workers", b.workers.is_some()),
                    ("service_time", b.service_time.is_some()),
                    ("queue_limit", b.queue_limit.is_some()),
                    ("base", b.base.is_some()),
                    ("per_request", b.per_request.is_some()),
                    ("max_concurrency", b.max_concurrency.is_some()),
                    ("usl", b.usl.is_some()),
                    // The record has no worker to spend time on an attempt
                    // or a rejection, and no waiting room to order or to
                    // skip an expired attempt in.
                    ("admission_cost", b.admission_cost.ns() > 0),
                    ("reject_cost", b.reject_cost.ns() > 0),
                    ("discipline", b.discipline != Discipline::Fifo),
                    ("drop_expired", b.drop_expired),
                ],
            ),
            BackendKind::Concurrency => self.concurrency_backend(path, b),
        }
        if b.reject_status == Status::Ok {
            self.err(
                format!("{path}.reject_status"),
                "a rejection cannot answer `ok`; name the error a full backend returns, e.g. \"unavailable\" or \"resource_exhausted\"",
            );
        }
    }

    /// A queue backend: workers and a service time, none of a
    /// concurrency backend's fields, and USL coefficients that are shares.
    fn queue_backend(&mut self, path: &str, b: &BackendSpec) {
        let kind = [format!("{path}.kind")];
        match b.workers {
            None => self.err_with(
                format!("{path}.workers"),
                kind.clone(),
                "missing: a queue backend needs a number of workers",
            ),
            Some(0) => self.err(format!("{path}.workers"), "must be at least 1"),
            Some(w) if w > MAX_WORKERS => self.err(
                format!("{path}.workers"),
                format!("{w} is too many (at most {MAX_WORKERS})"),
            ),
            _ => {}
        }
        match &b.service_time {
            None => self.err_with(
                format!("{path}.service_time"),
                kind.clone(),
                "missing: a queue backend needs a service time distribution",
            ),
            Some(d) => d.check(&format!("{path}.service_time"), &mut self.p),
        }
        self.not_for_kind(
            path,
            "queue",
            "(it has workers and a service time)",
            &[
                ("base", b.base.is_some()),
                ("per_request", b.per_request.is_some()),
                ("max_concurrency", b.max_concurrency.is_some()),
            ],
        );
        if let Some(u) = b.usl {
            for (field, v) in [("sigma", u.sigma), ("kappa", u.kappa)] {
                // Gunther's coefficients are shares: above 1 a
                // second busy worker already more than doubles
                // every service time.
                if !(v.is_finite() && (0.0..=1.0).contains(&v)) {
                    self.err(
                        format!("{path}.usl.{field}"),
                        format!("{} must be a number in [0, 1]", crate::decimal::num(v)),
                    );
                }
            }
        }
    }

    /// A concurrency backend: `base` and `per_request`, a positive
    /// `max_concurrency` if any, and none of a queue backend's fields.
    fn concurrency_backend(&mut self, path: &str, b: &BackendSpec) {
        let kind = [format!("{path}.kind")];
        for (field, given) in [("base", b.base), ("per_request", b.per_request)] {
            if given.is_none() {
                self.err_with(
                    format!("{path}.{field}"),
                    kind.clone(),
                    "missing: a concurrency backend needs `base` and `per_request` (an attempt takes base + per_request × the attempts already in service)",
                );
            }
        }
        if b.max_concurrency == Some(0) {
            self.err(format!("{path}.max_concurrency"), "must be at least 1");
        }
        self.not_for_kind(
            path,
            "concurrency",
            "(it has no workers and no waiting room; an attempt takes base + per_request × the attempts in service)",
            &[
                ("workers", b.workers.is_some()),
                ("service_time", b.service_time.is_some()),
                ("queue_limit", b.queue_limit.is_some()),
                ("usl", b.usl.is_some()),
                ("reject_cost", b.reject_cost.ns() > 0),
                ("discipline", b.discipline != Discipline::Fifo),
            ],
        );
    }

    /// Refuses the fields given that a backend of `kind` has no use for.
    fn not_for_kind(&mut self, path: &str, kind: &str, why: &str, fields: &[(&str, bool)]) {
        for &(field, given) in fields {
            if given {
                self.err_with(
                    format!("{path}.{field}"),
                    [format!("{path}.kind")],
                    format!("has no meaning for a \"{kind}\" backend {why}; remove it"),
                );
            }
        }
    }

    /// The downstream tiers: names, backends, calls and their policies
    /// under every compared policy; and that faults and actions name
    /// tiers that exist.
    fn downstream(&mut self, s: &ScenarioSpec) {
        let names = s.tier_names();
        if let Some(top) = &s.backend.name {
            if let Some(why) = name_problem(top) {
                self.err("backend.name", format!("{top:?} {why}"));
            }
        }
        if s.downstream.len() > MAX_DOWNSTREAM {
            self.err(
                "downstream",
                format!(
                    "{} tiers; at most {MAX_DOWNSTREAM} can be modelled below the top backend",
                    s.downstream.len()
                ),
            );
            return;
        }
        if !s.downstream.is_empty() && s.backend.kind == BackendKind::Contention {
            self.err_with(
                "downstream",
                ["backend.kind"],
                "a contention backend makes no downstream calls; use a queue or concurrency backend at the top",
            );
        }
        for (i, d) in s.downstream.iter().enumerate() {
            self.downstream_tier(s, &names, i, d);
        }
        self.downstream_policies(s);
        self.tier_references(s, &names);
    }

    /// Downstream tier `i`: a name of its own, its backend, its calls and
    /// attempt timeout, and the policy the tier above calls it with.
    fn downstream_tier(&mut self, s: &ScenarioSpec, names: &[&str], i: usize, d: &DownstreamSpec) {
        let path = format!("downstream[{i}]");
        if let Some(why) = name_problem(&d.name) {
            self.err(format!("{path}.name"), format!("{:?} {why}", d.name));
        } else if let Some(first) = names.iter().position(|n| *n == d.name) {
            if first != i + 1 {
                let (other, its_name) = if first == 0 {
                    ("the top backend".to_string(), "backend.name".to_string())
                } else {
                    let other = format!("downstream[{}]", first - 1);
                    let its_name = format!("{other}.name");
                    (other, its_name)
                };
                self.err_with(
                    format!("{path}.name"),
                    [its_name],
                    format!(
                        "{:?} is already the name of {other}; tier names must be unique",
                        d.name
                    ),
                );
            }
        }
        let bpath = format!("{path}.backend");
        self.backend(&bpath, &d.backend);
        if d.backend.name.is_some() {
            self.err(
                format!("{bpath}.name"),
                "a downstream tier is named by its entry's `name`; remove this one",
            );
        }
        if d.backend.kind == BackendKind::Contention {
            self.top_only(format!("{bpath}.kind"), &[], &d.name, TopOnly::Contention);
        }
        if d.calls == 0 || d.calls > MAX_CALLS {
            self.err(
                format!("{path}.calls"),
                format!(
                    "{} is out of range: calls per attempt, 1 to {MAX_CALLS}",
                    d.calls
                ),
            );
        }
        if let Some(t) = d.attempt_timeout {
            self.positive_dur(&format!("{path}.attempt_timeout"), t);
        }
        self.tier_policy_ref(s, &path, d);
    }

    /// The policy a downstream tier at `path` is called with: the
    /// compared one, a known preset or a valid policy; then, if it is
    /// sound, that it asks for nothing modelled at the top only, under
    /// every compared policy where it follows them.
    fn tier_policy_ref(&mut self, s: &ScenarioSpec, path: &str, d: &DownstreamSpec) {
        let ppath = format!("{path}.policy");
        match &d.policy {
            PolicyRef::Compared => {}
            PolicyRef::Preset(name) => {
                if policy::presets::preset(name).is_none() {
                    self.err(
                        ppath.clone(),
                        format!(
                            "{name:?} is neither \"{COMPARED}\" nor a preset; known presets: {}",
                            policy::presets::NAMES.join(", ")
                        ),
                    );
                    return;
                }
            }
            PolicyRef::Spec(p) => {
                let before = self.p.len();
                p.check(&ppath, &mut self.p);
                if self.p.len() > before {
                    return;
                }
            }
        }
        match d.policy.fixed() {
            // One policy whatever is compared: checked once.
            Some(fixed) => self.tier_policy(&ppath, &[], &d.name, &fixed),
            // Each compared policy (or its `downstream_policy`) calls
            // the tier: each is checked, under its own path.
            None => {
                for (k, compared) in s.policies.iter().enumerate() {
                    let at = match &compared.downstream_policy {
                        Some(_) => format!("policies[{k}].downstream_policy"),
                        None => format!("policies[{k}]"),
                    };
                    let related = [ppath.clone()];
                    self.tier_policy(&at, &related, &d.name, &d.policy.spec(compared));
                }
            }
        }
    }

    /// The compared policies' own `downstream_policy`: only where there
    /// are tiers below to apply it to, with none of its own, and valid.
    fn downstream_policies(&mut self, s: &ScenarioSpec) {
        for (k, p) in s.policies.iter().enumerate() {
            let Some(dp) = &p.downstream_policy else {
                continue;
            };
            let path = format!("policies[{k}].downstream_policy");
            if s.downstream.is_empty() {
                self.err_with(
                    path.clone(),
                    ["downstream"],
                    "the scenario has no `downstream` tier to apply it to; remove it or add tiers",
                );
            }
            if dp.downstream_policy.is_some() {
                self.err(
                    format!("{path}.downstream_policy"),
                    "a downstream policy applies at every tier below; it has none of its own",
                );
            }
            dp.check(&path, &mut self.p);
        }
    }

    /// That the faults and actions name tiers that exist (the top
    /// backend's, or a downstream one's).
    fn tier_references(&mut self, s: &ScenarioSpec, names: &[&str]) {
        let known = || names.join(", ");
        // The tiers are the top backend and the downstream ones.
        let tiers = ["backend.name", "downstream"];
        for (i, f) in s.faults.iter().enumerate() {
            if s.tier_index(f.tier()).is_none() {
                self.err_with(
                    format!("faults[{i}].{}.tier", f.kind()),
                    tiers,
                    format!(
                        "{:?} names no tier; the tiers are {}",
                        f.tier().unwrap_or(""),
                        known()
                    ),
                );
            }
        }
        for (i, a) in s.actions.iter().enumerate() {
            if s.tier_index(a.tier()).is_none() {
                self.err_with(
                    format!("actions[{i}].tier"),
                    tiers,
                    format!(
                        "{:?} names no tier; the tiers are {}",
                        a.tier().unwrap_or(""),
                        known()
                    ),
                );
            }
        }
    }

    /// A policy the workers of one tier call the next with: what is
    /// modelled at the top only is refused ([`Checker::top_only`]).
    /// `related`: the tier's `policy`, when `p` is the compared policy at
    /// `path`.
    fn tier_policy(&mut self, path: &str, related: &[String], tier: &str, p: &PolicySpec) {
        let Ok(resolved) = policy::resolve(p) else {
            return;
        };
        if resolved.hedging.is_some() {
            self.top_only(path.to_string(), related, tier, TopOnly::Hedging);
        }
        if resolved.rate_limiter.is_some() {
            self.top_only(path.to_string(), related, tier, TopOnly::RateLimiter);
        }
    }

    /// The one rule for the tiers below the top: `what`, asked for at
    /// `path` for tier `tier`, is modelled at the top only. A tier below is
    /// called by the workers of the tier above, with no network between
    /// them and no clients of its own, and what rests on either (a
    /// contention backend's round trips, a client's hedges or rate
    /// limiter) has no meaning there.
    fn top_only(&mut self, path: String, related: &[String], tier: &str, what: TopOnly) {
        let (name, instead) = match what {
            TopOnly::Hedging => ("hedging", "give that tier a retry policy"),
            TopOnly::RateLimiter => (
                "a client-side rate limiter",
                "give that tier a retry policy",
            ),
            TopOnly::Contention => ("a contention backend", "use a queue or concurrency backend"),
        };
        self.err_with(
            path,
            related,
            format!(
                "{name} is modelled at the top only, not at the {tier:?} tier: a tier below is \
                 called by the workers of the tier above, with no network between them and no \
                 clients of its own; {instead}"
            ),
        );
    }

    fn policies(&mut self, policies: &[PolicySpec], clients: u32, dispatcher: bool, crash: bool) {
        if policies.is_empty() {
            self.err("policies", "needs at least one policy");
        }
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in policies.iter().enumerate() {
            let path = format!("policies[{i}]");
            if let Some(why) = name_problem(&p.name) {
                self.err(format!("{path}.name"), format!("{:?} {why}", p.name));
            } else if let Some(first) = seen.insert(p.name.as_str(), i) {
                seen.insert(p.name.as_str(), first);
                self.err_with(
                    format!("{path}.name"),
                    [format!("policies[{first}].name")],
                    format!(
                        "{:?} is already the name of policies[{first}]; names must be unique",
                        p.name
                    ),
                );
            }
            // A queue's policy is checked as the queue runs it: what it
            // leaves out takes the Cloud Tasks API's defaults.
            if dispatcher {
                super::cloud_tasks::with_queue_defaults(p)
                    .0
                    .check(&path, &mut self.p);
            } else {
                p.check(&path, &mut self.p);
            }
            self.client_state_fits(&path, p, clients, crash);
            if dispatcher {
                self.not_with_dispatcher(&path, p);
            }
        }
    }

    /// A Cloud Tasks queue neither hedges nor sits behind an SDK's rate
    /// limiter: those policies are refused with a dispatcher.
    fn not_with_dispatcher(&mut self, path: &str, p: &PolicySpec) {
        let Ok(resolved) = policy::resolve(p) else {
            return;
        };
        // Either may come from the preset.
        let related = ["dispatcher".to_string(), format!("{path}.preset")];
        if resolved.hedging.is_some() {
            self.err_with(
                format!("{path}.hedging"),
                related.clone(),
                "hedging through a Cloud Tasks dispatcher is not modelled; remove the dispatcher or the hedging",
            );
        }
        if resolved.rate_limiter.is_some() {
            self.err_with(
                format!("{path}.rate_limiter"),
                related,
                "a client-side rate limiter in front of a Cloud Tasks dispatcher is not modelled; remove one of them",
            );
        }
    }

    /// Per-client budgets and breakers keep state for every client (and
    /// so do per-client channels toward a backend that `crash`es); refuse
    /// client counts whose state would not fit in memory.
    fn client_state_fits(&mut self, path: &str, p: &PolicySpec, clients: u32, crash: bool) {
        if clients > MAX_CLIENTS {
            return; // already reported on traffic.clients
        }
        let Ok(resolved) = policy::resolve(p) else {
            return;
        };
        let instances = [
            resolved.budget.as_ref().map(|b| b.scope()),
            resolved.breaker.as_ref().map(|b| b.scope),
            resolved.rate_limiter.as_ref().map(|l| l.scope()),
            resolved.reconnect.filter(|_| crash).map(|r| r.scope),
        ]
        .into_iter()
        .flatten()
        .map(|scope| scope.instances(clients))
        .max()
        .unwrap_or(0);
        if instances > MAX_GATED_CLIENTS {
            self.err_with(
                path.to_string(),
                ["traffic.clients"],
                format!(
                    "a per-client budget, rate limiter, circuit breaker or connection keeps state for each of {instances} \
                     clients or groups (at most {MAX_GATED_CLIENTS}); use \"scope\": \"global\", a larger \
                     {{\"group\": N}} or fewer clients"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::DistSpec;

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
    fn only_open_mode_needs_a_rate_and_others_refuse_one() {
        let mut s = example();
        s.traffic.rate = None;
        assert_eq!(paths(&s), vec!["traffic.rate"]);
        s.traffic.profile.clear();
        s.traffic.mode = Mode::Burst;
        assert_eq!(validate(&s), Ok(()));
        s.traffic.rate = Some(0.0);
        assert_eq!(
            validate(&s),
            Ok(()),
            "a zero rate means nothing and is accepted"
        );
        s.traffic.rate = Some(10.0);
        assert_eq!(paths(&s), vec!["traffic.rate"]);
        s.traffic.mode = Mode::Closed;
        assert_eq!(paths(&s), vec!["traffic.rate"]);
        s.traffic.rate = None;
        assert_eq!(validate(&s), Ok(()));
    }

    /// A profile may not scale the rate past the most a rate may be: a
    /// product that overflowed to infinity had run with no arrivals.
    #[test]
    fn a_profile_scale_is_bounded_with_the_rate() {
        let mut s = example();
        let rate = s.traffic.rate.unwrap();
        assert!(!s.traffic.profile.is_empty());
        s.traffic.profile[0].scale = (MAX_RATE / rate).floor();
        assert_eq!(validate(&s), Ok(()));
        for scale in [MAX_RATE / rate * 1.001, 1e307, f64::MAX] {
            s.traffic.profile[0].scale = scale;
            assert_eq!(paths(&s), vec!["traffic.profile[0].scale"], "{scale}");
        }
        // A bad rate is reported once, on the rate.
        s.traffic.rate = Some(f64::INFINITY);
        assert_eq!(paths(&s), vec!["traffic.rate"]);
    }

    #[test]
    fn fields_another_mode_uses_are_refused() {
        let mut s = example();
        s.traffic.think_time = Some(DistSpec::Constant {
            value: Dur::from_millis(5),
        });
        s.traffic.burst_at = Some(Dur::from_secs(1));
        assert_eq!(paths(&s), vec!["traffic.think_time", "traffic.burst_at"]);
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
    fn a_rate_that_is_not_finite_is_called_so() {
        let mut s = example();
        for (rate, want) in [
            (f64::INFINITY, "inf is not a finite number"),
            (f64::NAN, "NaN is not a finite number"),
            (
                -1.0,
                "-1 is not a number of requests per second greater than 0",
            ),
        ] {
            s.traffic.rate = Some(rate);
            let e = validate(&s).unwrap_err();
            assert_eq!(e[0].path, "traffic.rate");
            assert!(e[0].message.starts_with(want), "{}", e[0]);
        }
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
