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
mod downstream;
mod fault;
pub mod measured;
pub mod trace;

pub use action::ActionSpec;
pub use dist::DistSpec;
pub use downstream::{DownstreamSpec, PolicyRef, COMPARED, MAX_DOWNSTREAM};
pub use fault::{incident, FaultSpec};

use crate::policy::{Policy, PolicySpec};
use crate::status::Status;
use crate::time::{Dur, Nanos};
use serde::{Deserialize, Serialize};

/// A whole scenario file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The scenario's name, shown in reports and used in file names.
    pub name: String,
    /// What the scenario shows, in a sentence or two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The base seed: a run is a pure function of (scenario, seed, replication).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time covered by each run.
    pub duration: Dur,
    /// Requests arriving before this are simulated but left out of the summary.
    #[serde(default)]
    pub warmup: Dur,
    /// The time series' resolution.
    #[serde(default = "default_bin")]
    pub bin: Dur,
    /// Who sends requests, when, and how patiently.
    pub traffic: TrafficSpec,
    /// What serves the attempts.
    #[serde(default)]
    pub backend: BackendSpec,
    /// Tiers below the backend, in calling order: the backend's workers
    /// call the first, whose workers call the second, and so on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub downstream: Vec<DownstreamSpec>,
    /// Scheduled faults of the backend.
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    /// Scheduled operator actions (switch retries off, shed load, force tasks).
    #[serde(default)]
    pub actions: Vec<ActionSpec>,
    /// A Cloud Tasks dispatcher between the clients and the backend; absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatcher: Option<DispatcherSpec>,
    /// The retry policies compared, each run on the same traffic.
    pub policies: Vec<PolicySpec>,
    /// How recovery is judged and which alert rules are evaluated.
    #[serde(default)]
    pub report: ReportSpec,
}

fn default_seed() -> u64 {
    1
}
fn default_bin() -> Dur {
    Dur::from_secs(1)
}

/// The top backend's tier name when the scenario gives none.
pub const TOP_TIER: &str = "backend";

/// What a storm can cost one request: see [`ScenarioSpec::storm_attempts`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StormAttempts {
    /// Attempts it makes.
    pub attempts: f64,
    /// Its first retry delay.
    pub first_delay: Nanos,
    /// The pushback that set its delays, when the policy honours one.
    pub pushback: Option<Nanos>,
    /// Its delays follow the policy's `throttling_backoff`.
    pub throttled: bool,
}

impl ScenarioSpec {
    /// Whether a run has something to recover from: an incident fault
    /// ([`FaultSpec::is_incident`]) or a load spike.
    pub fn has_incident(&self) -> bool {
        let run_end = self.duration.ns();
        self.faults.iter().any(|f| f.is_incident(run_end))
            || self.traffic.load_spike(run_end).is_some()
    }

    /// The run's incident window (ns): the hull of the faults'
    /// [`incident`] and the traffic's [`TrafficSpec::load_spike`]; a
    /// scenario with neither has none.
    pub fn incident(&self, run_end: Nanos) -> Option<(Nanos, Nanos)> {
        match (
            incident(&self.faults, run_end),
            self.traffic.load_spike(run_end),
        ) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (f, s) => f.or(s),
        }
    }

    /// The incident faults with their spans within the run, ns.
    pub fn incident_spans(&self) -> impl Iterator<Item = (&FaultSpec, Nanos)> {
        let run_end = self.duration.ns();
        self.faults
            .iter()
            .filter(move |f| f.is_incident(run_end))
            .map(move |f| {
                let (start, end) = f.window();
                (f, end.min(run_end).saturating_sub(start))
            })
    }

    /// How long a request may keep retrying whatever its policy: until
    /// its `traffic.deadline` (`Nanos::MAX` without one). The policy's own
    /// limits end it sooner where both are reached (see
    /// [`Policy::exhausted`]), which the walks of its schedule apply.
    pub fn retry_window(&self) -> Nanos {
        self.traffic.deadline.map_or(Nanos::MAX, |d| d.ns())
    }

    /// The ways a fault or a rejection can fail an attempt that change its
    /// retry delay: `(pushback, throttled)` for each status they answer
    /// with, the pushback being the backend's `retry_after` (if it has one)
    /// and a throttling error a `resource_exhausted` answer. A plain
    /// failure (a timeout, `(None, false)`) is always possible besides.
    pub fn storm_failures(&self) -> Vec<(Option<Nanos>, bool)> {
        let pushback = self.backend.retry_after.map(|d| d.ns());
        let statuses = self
            .faults
            .iter()
            .filter_map(|f| match f {
                FaultSpec::Outage { status, .. } | FaultSpec::Errors { status, .. } => {
                    Some(*status)
                }
                FaultSpec::Crash { .. } => Some(Status::Unavailable),
                _ => None,
            })
            .chain([self.backend.reject_status]);
        let mut out = Vec::new();
        for status in statuses {
            let pushed = matches!(status, Status::Unavailable | Status::ResourceExhausted);
            let failure = (
                pushback.filter(|_| pushed),
                status == Status::ResourceExhausted,
            );
            if !out.contains(&failure) {
                out.push(failure);
            }
        }
        out
    }

    /// The most attempts a request failing through `life` ns can make under
    /// `policy`, over a plain failure and [`ScenarioSpec::storm_failures`]:
    /// the count, the first retry delay of that way of failing, and the way
    /// of failing.
    pub fn storm_attempts(&self, policy: &Policy, life: Nanos) -> StormAttempts {
        let of = |(pushback, throttled): (Option<Nanos>, bool)| StormAttempts {
            attempts: policy.attempts_within(life, pushback, throttled),
            first_delay: policy.next_delay(
                1,
                &mut crate::policy::RetryState::default(),
                0.5,
                pushback,
                throttled,
            ),
            pushback: pushback.filter(|_| policy.honor_retry_after),
            throttled: throttled && policy.throttling_backoff.is_some(),
        };
        self.storm_failures()
            .into_iter()
            .map(of)
            .fold(of((None, false)), |worst, s| {
                if s.attempts > worst.attempts {
                    s
                } else {
                    worst
                }
            })
    }

    /// The names of the tiers, the top backend first.
    pub fn tier_names(&self) -> Vec<&str> {
        std::iter::once(self.backend.name.as_deref().unwrap_or(TOP_TIER))
            .chain(self.downstream.iter().map(|d| d.name.as_str()))
            .collect()
    }

    /// The tier a fault or action's `tier` field names (0 = the top
    /// backend); `None` when it names none.
    pub fn tier_index(&self, tier: Option<&str>) -> Option<usize> {
        match tier {
            None => Some(0),
            Some(name) => self.tier_names().iter().position(|n| *n == name),
        }
    }

    /// Rewrites a fault or action `tier` that names the top backend as no
    /// tier (the top backend), so the model matches tiers by one spelling.
    pub fn name_top_tier_none(&mut self) {
        let Some(top) = self.backend.name.clone() else {
            return;
        };
        for f in &mut self.faults {
            f.clear_tier_if(&top);
        }
        for a in &mut self.actions {
            a.clear_tier_if(&top);
        }
    }

    /// The backend of tier `i` (0 = the top backend).
    pub fn tier_backend(&self, i: usize) -> &BackendSpec {
        if i == 0 {
            &self.backend
        } else {
            &self.downstream[i - 1].backend
        }
    }
}

/// How new requests arrive over time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps between arrivals.
    #[default]
    Poisson,
    /// Evenly spaced arrivals.
    Uniform,
}

/// Whether arrivals wait for answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Arrivals follow the rate whatever happens to earlier requests.
    #[default]
    Open,
    /// Each client has one request outstanding and sends the next after its think time.
    Closed,
    /// Every client sends one request around `burst_at`.
    Burst,
    /// Arrivals as in open mode, into an application queue served by
    /// `threads` client threads; a thread holds a request from its first
    /// attempt to its end (a blocking SDK call on a thread pool).
    Pool,
}

impl Mode {
    /// Whether arrivals follow `rate` and `profile` whatever happens to
    /// earlier requests (open and pool mode).
    pub fn open_arrivals(self) -> bool {
        matches!(self, Mode::Open | Mode::Pool)
    }
}

/// One knot of the piecewise-linear traffic profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfilePoint {
    /// When this knot applies.
    pub at: Dur,
    /// The multiplier of `traffic.rate` at that instant.
    pub scale: f64,
}

/// The `traffic` block: who sends what, when, and how patiently.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrafficSpec {
    /// New requests per second in all (open mode); required unless burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// How many clients share the traffic (budgets, limiters and breakers are per client unless scoped).
    #[serde(default = "default_clients")]
    pub clients: u32,
    /// How arrivals are spaced.
    #[serde(default)]
    pub arrival: Arrival,
    /// Whether arrivals wait for answers.
    #[serde(default)]
    pub mode: Mode,
    /// Piecewise-linear multiplier of `rate` over time; constant outside its knots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profile: Vec<ProfilePoint>,
    /// The client abandons an attempt after this long (`deadline_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_timeout: Option<Dur>,
    /// The client abandons the whole request this long after it arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Dur>,
    /// One-way delay on every attempt and every answer.
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
    /// Arrivals taken from a file: a rate series or arrival times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceSpec>,
    /// Pool mode: the client threads that serve the application queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
}

fn default_clients() -> u32 {
    1
}

/// What kind of backend serves the attempts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// A pool of identical workers in front of a waiting room.
    #[default]
    Queue,
    /// One record under optimistic concurrency: overlapping attempts conflict.
    Contention,
    /// No waiting room; every attempt is served at once and takes longer
    /// the more attempts are in service.
    Concurrency,
}

/// Order in which waiting attempts are taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Discipline {
    /// Oldest waiting attempt first.
    #[default]
    Fifo,
    /// Newest waiting attempt first.
    Lifo,
}

impl TrafficSpec {
    /// The lowest and highest scale of the rate over the run: the profile
    /// holds its first and last knots' scales outside them, so they are
    /// its knots' extremes (1 without a profile).
    pub fn scale_range(&self) -> (f64, f64) {
        let scales = || self.profile.iter().map(|p| p.scale);
        (
            scales().reduce(f64::min).unwrap_or(1.0),
            scales().reduce(f64::max).unwrap_or(1.0),
        )
    }

    /// The load spikes of open traffic as one window (ns): from the first
    /// instant the profile's rate rises above its rate at time 0 to the
    /// last instant it comes back down to that rate (or below), both
    /// within `run_end`. A rise not back down by then (a lasting change of
    /// load) is not a spike; closed and burst traffic, and traffic without
    /// a profile or a rate, have none. Neither has traffic from a
    /// `trace`: its ups and downs are the everyday load, not an incident
    /// (any rise above its first value would otherwise make one that spans
    /// most of the run). Crossings between knots are found on the linear
    /// segments, to the nanosecond.
    pub fn load_spike(&self, run_end: Nanos) -> Option<(Nanos, Nanos)> {
        if !self.mode.open_arrivals() || self.rate.is_none_or(|r| r <= 0.0) || self.trace.is_some()
        {
            return None;
        }
        let knots: Vec<(f64, f64)> = self
            .profile
            .iter()
            .map(|p| (p.at.ns() as f64, p.scale))
            .collect();
        // The scale at time 0: knots are never before 0, and before the first
        // knot the scale is the first knot's.
        let base = knots.first()?.1;
        let end_ns = run_end as f64;
        let mut open: Option<f64> = None;
        let mut window: Option<(f64, f64)> = None;
        for pair in knots.windows(2) {
            let ((t0, s0), (t1, s1)) = (pair[0], pair[1]);
            if s0 <= base && s1 > base {
                open = Some(t0 + (base - s0) / (s1 - s0) * (t1 - t0));
            } else if s0 > base && s1 <= base {
                let end = t0 + (s0 - base) / (s0 - s1) * (t1 - t0);
                match open.take() {
                    Some(start) if end <= end_ns => {
                        window = Some(window.map_or((start, end), |(a, _)| (a, end)));
                    }
                    _ => {}
                }
            }
        }
        // A rise still open after the last knot lasts for ever: not a spike.
        window.map(|(start, end)| (start.round() as Nanos, end.round() as Nanos))
    }
}

/// The `backend` block.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackendSpec {
    /// The top backend's name as a tier (`tiers.csv`, a fault's `tier`);
    /// default `backend`. A downstream entry has its own `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which kind of backend this is.
    #[serde(default)]
    pub kind: BackendKind,
    /// Queue backend: the number of identical workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<u32>,
    /// How long serving one attempt takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_time: Option<DistSpec>,
    /// Worker time spent on every attempt taken (parse, auth, route).
    #[serde(default)]
    pub admission_cost: Dur,
    /// Worker time each rejection costs before it is answered.
    #[serde(default)]
    pub reject_cost: Dur,
    /// Waiting-room size; absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_limit: Option<u64>,
    /// Order in which waiting attempts are taken.
    #[serde(default)]
    pub discipline: Discipline,
    /// Attempts whose client already gave up cost `admission_cost` only.
    #[serde(default)]
    pub drop_expired: bool,
    /// The status a rejection answers with.
    #[serde(default = "default_reject_status")]
    pub reject_status: Status,
    /// Pushback the backend sends with `unavailable`/`resource_exhausted`
    /// answers (gRPC `grpc-retry-pushback-ms`, HTTP `Retry-After`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<Dur>,
    /// `concurrency` backend: the time an attempt alone takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Dur>,
    /// `concurrency` backend: the time each attempt already in service
    /// adds to an arriving one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<Dur>,
    /// `concurrency` backend: attempts in service above which arrivals are
    /// rejected; absent = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// Queue backend: Universal Scalability Law slowdown of the service
    /// time with the number of busy workers; absent = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usl: Option<UslSpec>,
}

/// The Universal Scalability Law (`backend.usl`): an attempt that starts
/// service with `N` workers busy (itself included) takes its service time
/// × `1 + sigma·(N−1) + kappa·N·(N−1)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UslSpec {
    /// Contention: the serial share of the work.
    #[serde(default)]
    pub sigma: f64,
    /// Coherency: the cost of keeping every pair of workers in step.
    #[serde(default)]
    pub kappa: f64,
}

impl BackendSpec {
    /// Requests per second the backend serves without faults when an
    /// attempt's service takes `service_ns` on average: workers ÷
    /// (admission cost + service) for a queue; for a concurrency backend
    /// its throughput at `max_concurrency` in service, or without a limit
    /// the peak `1 / per_request` (its service is its own, `service_ns`
    /// unused); `None` for the contention backend or work that costs
    /// nothing. The one formula `assess` and `check` both use.
    pub fn capacity_rps(&self, service_ns: f64) -> Option<f64> {
        match self.kind {
            BackendKind::Contention => None,
            BackendKind::Concurrency => {
                let base = self.base.unwrap_or_default().ns() as f64;
                let per = self.per_request.unwrap_or_default().ns() as f64;
                match self.max_concurrency {
                    // M in service, each taking base + per·(M−1).
                    Some(m) => {
                        let m = f64::from(m);
                        let cost = self.admission_cost.ns() as f64 + base + per * (m - 1.0);
                        (cost > 0.0).then(|| m * 1e9 / cost)
                    }
                    // The peak as the concurrency grows.
                    None => (per > 0.0).then(|| 1e9 / per),
                }
            }
            BackendKind::Queue => {
                let workers = f64::from(self.workers.unwrap_or(1));
                let cost_ns = self.admission_cost.ns() as f64 + service_ns;
                (cost_ns > 0.0).then(|| workers * 1e9 / cost_ns)
            }
        }
    }
}

impl UslSpec {
    /// The service-time multiplier with `n` workers busy (itself included).
    pub fn factor(&self, n: f64) -> f64 {
        1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0)
    }
}

fn default_reject_status() -> Status {
    Status::Unavailable
}

/// The Cloud Tasks dispatcher in front of the backend.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatcherSpec {
    /// Token refill rate of the dispatcher's bucket.
    #[serde(default = "default_dispatch_rate")]
    pub max_dispatches_per_second: f64,
    /// Capacity of the dispatcher's bucket.
    #[serde(default = "default_burst")]
    pub max_burst_size: u32,
    /// Tasks dispatched and not yet answered, at most.
    #[serde(default = "default_concurrent")]
    pub max_concurrent_dispatches: u32,
    /// The attempt timeout of a dispatched task.
    #[serde(default = "default_dispatch_deadline")]
    pub dispatch_deadline: Dur,
    /// An approximation of Cloud Tasks' system throttling; off when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling: Option<ThrottlingSpec>,
}

/// The dispatcher's system-throttling approximation (`dispatcher.throttling`):
/// an effective dispatch rate cut on error-heavy windows and raised step by
/// step otherwise. Google documents the behaviour, not the numbers; these
/// are this model's (see `docs/model.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThrottlingSpec {
    /// The interval over which answers are counted and the rate adjusted.
    #[serde(default = "default_throttle_window")]
    pub window: Dur,
    /// A window is error-heavy when at least this share of its answers
    /// were errors (timeouts included).
    #[serde(default = "default_error_share")]
    pub error_share: f64,
    /// Rate multiplier after an error-heavy window.
    #[serde(default = "default_decrease")]
    pub decrease: f64,
    /// Rate multiplier after an error-heavy window whose errors were mostly
    /// `unavailable` or `resource_exhausted` (HTTP 503, 429).
    #[serde(default = "default_overload_decrease")]
    pub overload_decrease: f64,
    /// Added to the rate after any other window with dispatches, as a share
    /// of the configured rate.
    #[serde(default = "default_ramp")]
    pub ramp: f64,
    /// A new queue starts at this share of the configured rate, and a
    /// window without dispatches brings it back down to it.
    #[serde(default = "default_start")]
    pub start: f64,
    /// The effective rate never goes below this (dispatches per second).
    #[serde(default = "default_min_rate")]
    pub min_rate: f64,
    /// An answer carrying the backend's `retry_after` pauses dispatching
    /// for that long.
    #[serde(default = "default_true")]
    pub honor_retry_after: bool,
}

impl Default for ThrottlingSpec {
    fn default() -> Self {
        ThrottlingSpec {
            window: default_throttle_window(),
            error_share: default_error_share(),
            decrease: default_decrease(),
            overload_decrease: default_overload_decrease(),
            ramp: default_ramp(),
            start: default_start(),
            min_rate: default_min_rate(),
            honor_retry_after: true,
        }
    }
}

fn default_throttle_window() -> Dur {
    Dur::from_secs(5)
}
fn default_error_share() -> f64 {
    0.05
}
fn default_decrease() -> f64 {
    0.8
}
fn default_overload_decrease() -> f64 {
    0.5
}
fn default_ramp() -> f64 {
    0.05
}
fn default_start() -> f64 {
    0.05
}
fn default_min_rate() -> f64 {
    1.0
}
fn default_true() -> bool {
    true
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

/// The `report` block: how recovery is judged, and the alert rules.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// A bin is healthy when its goodput is at least this share of its demand.
    #[serde(default = "default_threshold")]
    pub recovery_threshold: f64,
    /// How long bins must stay healthy after the incident to count as recovered.
    #[serde(default = "default_stable_for")]
    pub stable_for: Dur,
    /// Thresholds of the alert rules evaluated on the time series.
    #[serde(default)]
    pub alerts: AlertsSpec,
}

impl Default for ReportSpec {
    fn default() -> Self {
        ReportSpec {
            recovery_threshold: default_threshold(),
            stable_for: default_stable_for(),
            alerts: AlertsSpec::default(),
        }
    }
}

/// The thresholds of the four alert rules evaluated on the time series
/// (`report.alerts`; definitions in `docs/model.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsSpec {
    /// `max_attempts_reached`: fires while more than this many requests
    /// per second are given up at their retry limits.
    #[serde(default)]
    pub max_attempts_reached: f64,
    /// `retry_rate`: fires when the share of attempts that are retries
    /// stays above this …
    #[serde(default = "default_alert_retry_rate")]
    pub retry_rate: f64,
    /// … for at least this long.
    #[serde(default = "default_alert_for")]
    pub retry_rate_for: Dur,
    /// `task_age`: fires while the oldest open request is older than this.
    #[serde(default = "default_alert_task_age")]
    pub task_age: Dur,
    /// `attempt_tail`: the attempt number from which an ending counts as
    /// the distribution's tail …
    #[serde(default = "default_alert_tail_attempt")]
    pub tail_attempt: u32,
    /// … fires when more than this share of the requests that ended …
    #[serde(default = "default_alert_tail_share")]
    pub tail_share: f64,
    /// … over the last `tail_window` ended in the tail.
    #[serde(default = "default_alert_for")]
    pub tail_window: Dur,
}

impl Default for AlertsSpec {
    fn default() -> Self {
        AlertsSpec {
            max_attempts_reached: 0.0,
            retry_rate: default_alert_retry_rate(),
            retry_rate_for: default_alert_for(),
            task_age: default_alert_task_age(),
            tail_attempt: default_alert_tail_attempt(),
            tail_share: default_alert_tail_share(),
            tail_window: default_alert_for(),
        }
    }
}

fn default_alert_retry_rate() -> f64 {
    0.1
}
fn default_alert_for() -> Dur {
    Dur::from_secs(300)
}
fn default_alert_task_age() -> Dur {
    Dur::from_secs(3600)
}
fn default_alert_tail_attempt() -> u32 {
    20
}
fn default_alert_tail_share() -> f64 {
    0.5
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

    fn traffic(extra: &str) -> TrafficSpec {
        serde_json::from_str(&format!(r#"{{"rate": 40 {extra}}}"#)).unwrap()
    }

    fn profile(knots: &str) -> TrafficSpec {
        traffic(&format!(r#", "profile": {knots}"#))
    }

    const SEC: Nanos = 1_000_000_000;

    #[test]
    fn a_rise_above_the_starting_rate_and_back_is_a_load_spike() {
        let end = 300 * SEC;
        // A step written with 1 ms ramps: above the starting rate in (60, 68).
        let step = profile(
            r#"[{"at": "60s", "scale": 1}, {"at": "60.001s", "scale": 2},
                {"at": "67.999s", "scale": 2}, {"at": "68s", "scale": 1}]"#,
        );
        assert_eq!(step.load_spike(end), Some((60 * SEC, 68 * SEC)));
        // Ramps crossing the starting rate between knots: from 0.5 at 10 s
        // to 1.5 at 20 s crosses 1 at 15 s; from 1.5 at 30 s down to 0.5 at
        // 40 s crosses it at 35 s.
        let ramps = profile(
            r#"[{"at": "0s", "scale": 1}, {"at": "10s", "scale": 0.5}, {"at": "20s", "scale": 1.5},
                {"at": "30s", "scale": 1.5}, {"at": "40s", "scale": 0.5}]"#,
        );
        assert_eq!(ramps.load_spike(end), Some((15 * SEC, 35 * SEC)));
        // The starting rate is the first knot's, also when that knot is
        // later than 0; two spikes make one window, gaps included.
        let two = profile(
            r#"[{"at": "50s", "scale": 2}, {"at": "60s", "scale": 3}, {"at": "70s", "scale": 2},
                {"at": "100s", "scale": 2}, {"at": "110s", "scale": 4}, {"at": "120s", "scale": 1}]"#,
        );
        assert_eq!(
            two.load_spike(end),
            Some((50 * SEC, 2 * 60 * SEC - 10 * SEC / 3))
        );
    }

    #[test]
    fn lasting_rises_declines_and_other_modes_are_not_spikes() {
        let end = 300 * SEC;
        assert_eq!(traffic("").load_spike(end), None, "no profile");
        let decline = profile(r#"[{"at": "0s", "scale": 1}, {"at": "20m", "scale": 0.5}]"#);
        assert_eq!(decline.load_spike(end), None);
        let ramp_up = profile(r#"[{"at": "0s", "scale": 0.5}, {"at": "60s", "scale": 1}]"#);
        assert_eq!(ramp_up.load_spike(end), None, "a lasting rise");
        // Back down only after the run's end: not a spike of this run; an
        // earlier spike still counts on its own.
        let late = r#"[{"at": "10s", "scale": 1}, {"at": "20s", "scale": 2}, {"at": "30s", "scale": 1},
                       {"at": "290s", "scale": 1}, {"at": "300s", "scale": 2}, {"at": "310s", "scale": 1}]"#;
        assert_eq!(profile(late).load_spike(end), Some((10 * SEC, 30 * SEC)));
        assert_eq!(profile(late).load_spike(25 * SEC), None);
        let spike =
            r#"[{"at": "10s", "scale": 1}, {"at": "20s", "scale": 2}, {"at": "30s", "scale": 1}]"#;
        for other in [r#", "mode": "closed""#, r#", "mode": "burst""#] {
            let t = traffic(&format!(r#", "profile": {spike} {other}"#));
            assert_eq!(t.load_spike(end), None, "{other}");
        }
        let idle: TrafficSpec =
            serde_json::from_str(&format!(r#"{{"rate": 0, "profile": {spike}}}"#)).unwrap();
        assert_eq!(idle.load_spike(end), None, "no rate, no spike");
    }

    #[test]
    fn the_run_incident_spans_the_faults_and_the_spikes() {
        let scenario = |profile: &str, faults: &str| {
            crate::scenario::Scenario::from_json(&format!(
                r#"{{"name": "t", "duration": "300s",
                    "traffic": {{"rate": 40 {profile}}},
                    "backend": {{"workers": 100, "service_time": {{"constant": {{"value": "1s"}}}}}},
                    "faults": [{faults}], "policies": [{{"name": "p"}}]}}"#
            ))
            .unwrap()
        };
        let spike = r#", "profile": [{"at": "60s", "scale": 1}, {"at": "61s", "scale": 2},
                        {"at": "67s", "scale": 2}, {"at": "68s", "scale": 1}]"#;
        let outage = r#"{"outage": {"start": "100s", "duration": "10s"}}"#;
        let background = r#"{"errors": {"start": "0s", "duration": "300s", "rate": 0.01}}"#;
        let end = 300 * SEC;
        let at = |p: &str, f: &str| scenario(p, f).spec().incident(end);
        assert_eq!(at("", ""), None);
        assert_eq!(at("", background), None);
        assert_eq!(at(spike, background), Some((60 * SEC, 68 * SEC)));
        assert_eq!(at("", outage), Some((100 * SEC, 110 * SEC)));
        assert_eq!(at(spike, outage), Some((60 * SEC, 110 * SEC)));
    }
}
