//! One simulated run: one policy, one replication, single-threaded.
//!
//! The run owns the event queue, the traffic, the network, the dispatcher
//! and the tiers — the top backend (tier 0) and those below it
//! (`downstream`), each a [`Tier`] with its backend, requests, clients,
//! meters, fault timeline and timers — and routes each event to the
//! components it concerns. Each component keeps its own state and
//! invariants; none schedules events: they return (or leave in
//! [`Backend::out`](super::backend::Backend)) what should happen next, and
//! the run schedules it, in the order decided, so ties between events at
//! the same instant always break the same way.
//!
//! Every request, at any tier, lives one lifecycle (`life`): it is opened,
//! made due, sent, answered (or timed out), and retried or finished,
//! keyed by its tier's index. What only the top has — arrivals from the
//! traffic, the network, the dispatcher, request deadlines, hedging and
//! client-side rate limiters — is in `top`.
//!
//! Every event that refers to a request carries the slot's generation (and
//! the attempt number); an event whose request has moved on (a response to
//! an attempt that already timed out, a timer for a request that already
//! ended) is recognised as stale and skipped, so timers are never searched
//! for or cancelled. `docs/architecture.md` follows one request through
//! these events.

use super::app_queue::AppQueue;
use super::backend::{base_workers, Backend};
use super::clients::Clients;
use super::connection::Connections;
use super::dispatcher::Dispatcher;
use super::dist::Dist;
pub use super::error::RunError;
use super::event::Ev;
use super::faults::Timeline;
use super::meter::Meter;
use super::network::Network;
use super::story::Story;
use super::tier::Tier;
use super::traffic::{Start, Traffic};
use crate::engine::{stop, stream, tier_stream, watch, EventQueue, LaneId, OldestFirst, Stream};
use crate::metrics::{recovery, BinRow, RunResult, RunSummary, TierRun};
use crate::policy::{Backoff, Policy};
use crate::scenario::spec::{Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::{secs, Nanos};
use tiers::Tiers;

mod life;
mod resume;
mod tiers;
mod top;

pub use resume::{first_edge, next_edge, sharing_key, simulate_to, Paused};

/// The top backend's index in [`Sim::tiers`].
const TOP: usize = 0;
/// [`TOP`] as the events carry a tier (`Ev::Done`, `Ev::Timeout`, …), to
/// match on it.
const TOP_EV: u8 = TOP as u8;

/// Events at one instant beyond which a run is considered stuck: far more
/// than any real instant holds (a burst of every client at once, each
/// spending every attempt its policy allows, included), reached within
/// seconds of wall time when time stops. A closed loop's clients start
/// request after request, so their attempt limit bounds nothing.
fn stall_limit(spec: &ScenarioSpec, policy: &Policy) -> u64 {
    let attempts = match (spec.traffic.mode, policy.max_attempts) {
        (Mode::Closed, _) | (_, None) => 1,
        (_, Some(m)) => u64::from(m.max(1)),
    };
    10_000_000u64.saturating_add(
        64u64
            .saturating_mul(attempts)
            .saturating_mul(u64::from(spec.traffic.clients)),
    )
}

/// Simulates policy `policy_index` of `scenario`, replication `replication`.
pub fn simulate(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
) -> Result<RunResult, RunError> {
    simulate_with(scenario, policy_index, replication, None, None).map(|(r, _)| r)
}

/// [`simulate`], carrying `story` (`run --trace`: see [`super::story`])
/// through the run and returning it.
pub fn simulate_story(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
    story: Option<Box<Story>>,
) -> Result<(RunResult, Option<Box<Story>>), RunError> {
    simulate_with(scenario, policy_index, replication, story, None)
}

/// Asked each time the top tier closes bins, with the run's progress:
/// `true` ends the run at the end of the last closed bin (see
/// [`simulate_until`]).
pub type StopCheck<'a> = &'a mut dyn FnMut(&Progress<'_>) -> bool;

/// What a stop check reads when the top tier closes bins: its bins so far
/// and the whole-run figures that can only grow, as they stand at the end
/// of the last closed bin. Each figure of the whole run is at least the
/// one here, so a limit already broken here is broken by the whole run.
#[derive(Clone, Copy, Debug)]
pub struct Progress<'r> {
    /// Every bin closed so far.
    pub bins: &'r [BinRow],
    /// The counts so far: requests ended (and how), attempts made, and
    /// `max_task_age_s` over the requests that ended.
    pub summary: &'r RunSummary,
    /// The worst second so far (attempts that reached the backend within
    /// 1 s, after warm-up), as `RunSummary::peak_offered_1s`.
    pub peak_offered_1s: u64,
    /// The top backend's nominal capacity (requests/s), as
    /// `RunSummary::capacity_rps`.
    pub capacity_rps: f64,
    /// How long the oldest request still open had been open at the end of
    /// the last closed bin (s), when it is counted (arrived after the
    /// warm-up); `None` when none is open or the oldest is not counted.
    pub oldest_open_age_s: Option<f64>,
}

/// [`simulate`], with a check that may end the run early at a bin
/// boundary: the run then is exactly the first part of the full run (the
/// same events, in the same order), cut at the end of the last closed
/// bin, and its summary covers that part only. `None` runs to the end.
pub fn simulate_until(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
    stop_check: Option<StopCheck<'_>>,
) -> Result<RunResult, RunError> {
    simulate_with(scenario, policy_index, replication, None, stop_check).map(|(r, _)| r)
}

/// The one run behind [`simulate`], [`simulate_story`] and
/// [`simulate_until`].
fn simulate_with(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
    story: Option<Box<Story>>,
    stop_check: Option<StopCheck<'_>>,
) -> Result<(RunResult, Option<Box<Story>>), RunError> {
    run_to_end(
        scenario,
        policy_index,
        replication,
        Begin::Start(story),
        stop_check,
        0,
    )
}

/// [`drive`] without a pause time: the run to its end (or where its stop
/// check ends it); `closed`: the bins the check has already seen.
fn run_to_end<'a>(
    scenario: &'a Scenario,
    policy_index: usize,
    replication: u32,
    begin: Begin<'a>,
    stop_check: Option<StopCheck<'_>>,
    closed: usize,
) -> Result<(RunResult, Option<Box<Story>>), RunError> {
    let ran = drive(
        scenario,
        policy_index,
        replication,
        begin,
        stop_check,
        Nanos::MAX,
        closed,
    )?;
    match ran {
        Ran::Ended(result, story) => Ok((result, story)),
        Ran::Paused(_) => unreachable!("a run without a pause time runs to its end"),
    }
}

/// Where [`drive`] starts a run.
enum Begin<'a> {
    /// At time 0, with the story to carry (`run --trace`).
    Start(Option<Box<Story>>),
    /// From a copy of a paused run, made ready for its new scenario
    /// (see `resume`).
    From(Box<Sim<'a>>),
}

/// How [`drive`] left a run.
enum Ran<'a> {
    /// At its end (or where its stop check ended it).
    Ended(RunResult, Option<Box<Story>>),
    /// Before its pause time.
    Paused(Box<Sim<'a>>),
}

/// Every run goes through here, so that the event loop ([`Sim::run`]) is
/// compiled in one place, on a run in this function's frame: it starts
/// (`begin`), handles the events before `until` (`Nanos::MAX`: to the
/// end), and ends the run or returns it paused.
fn drive<'a>(
    scenario: &'a Scenario,
    policy_index: usize,
    replication: u32,
    begin: Begin<'a>,
    stop_check: Option<StopCheck<'_>>,
    until: Nanos,
    closed: usize,
) -> Result<Ran<'a>, RunError> {
    let mut sim = match begin {
        Begin::Start(story) => {
            let policy = &scenario.policies()[policy_index];
            let tier_policies = scenario.tier_policies(policy_index);
            let mut sim = Sim::new(scenario.spec(), policy, tier_policies, replication);
            sim.story = story;
            sim.start();
            sim
        }
        Begin::From(sim) => *sim,
    };
    if let Some((at, events)) = sim.run(stop_check, until, closed)? {
        return Err(stalled(scenario, policy_index, replication, at, events));
    }
    if until < sim.run_end {
        return Ok(Ran::Paused(Box::new(sim)));
    }
    let story = sim.story.take();
    Ok(Ran::Ended(
        sim.into_result(policy_index, replication),
        story,
    ))
}

/// The error of a run of policy `policy_index` of `scenario` whose time
/// stopped advancing at `at` after `events` events at that instant.
fn stalled(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
    at: Nanos,
    events: u64,
) -> RunError {
    RunError::Stalled {
        policy: scenario.policies()[policy_index].name.clone(),
        replication,
        at_s: secs(at),
        events,
        why: scenario.zero_time_loop(policy_index).unwrap_or_else(|| {
            "every step at that instant takes no time: add delays (a backoff, a \
             network_delay, a reject_cost or an admission_cost)"
                .to_string()
        }),
    }
}

/// The state of one run.
#[derive(Clone)]
struct Sim<'a> {
    spec: &'a ScenarioSpec,
    q: EventQueue<Ev>,
    run_end: Nanos,
    /// The stream lane of the next open-mode or burst arrival.
    arrivals: LaneId,
    traffic: Traffic,
    network: Network,
    dispatcher: Option<Dispatcher>,
    /// Whether the top's due requests pass a gate first (the dispatcher or
    /// a client-side rate limiter): fixed for the run, asked per attempt.
    gated: bool,
    /// Request deadlines (the client's patience per request), of which
    /// only the oldest open request's is an event.
    deadlines: Option<OldestFirst<(u32, u32)>>,
    /// Set when a dispatcher slot or token may have freed up (or, in pool
    /// mode, a client thread).
    pump: bool,
    /// Pool mode: the application queue and its client threads.
    app: Option<AppQueue>,
    /// The top backend (`TOP`), then the tiers below it in calling order.
    tiers: Tiers<'a>,
    /// Simulated time already added to the process's progress
    /// ([`watch`]).
    watched: Nanos,
    /// The top-level requests' stories, under `run --trace` only.
    story: Option<Box<Story>>,
}

/// The lane of `policy`'s backoff timers when it is one fixed delay.
fn backoff_lane(q: &mut EventQueue<Ev>, policy: &Policy) -> Option<LaneId> {
    match policy.backoff {
        Backoff::Constant { delay } if !policy.jitter.is_random() => Some(q.register_lane(delay)),
        _ => None,
    }
}

/// The fault and action timeline of tier `k` of `spec` (0: the top
/// backend; `k` ≥ 1: `downstream[k − 1]`).
pub(super) fn timeline_of(spec: &ScenarioSpec, k: usize) -> Timeline {
    let (backend, name) = match k.checked_sub(1) {
        None => (&spec.backend, None),
        Some(i) => (
            &spec.downstream[i].backend,
            Some(spec.downstream[i].name.as_str()),
        ),
    };
    Timeline::new(&spec.faults, &spec.actions, base_workers(backend), name)
}

/// The top tier of a run as the scenario sets it up: its backend (which
/// calls down when there are tiers below), meter, clients (with their
/// reconnect backoff and rate limiter) and fault timeline. What depends
/// on the event queue (timeouts, lanes) is set by [`Sim::new`].
fn top_tier<'a>(spec: &'a ScenarioSpec, policy: &'a Policy, replication: u32) -> Tier<'a> {
    let rng = |which| stream(spec.seed, replication, which);
    let t = &spec.traffic;
    let mut backend = Backend::new(&spec.backend, rng(Stream::Service), rng(Stream::Faults));
    if !spec.downstream.is_empty() {
        backend.set_calls_down();
    }
    let mut top = Tier::new(
        spec.tier_names()[TOP],
        backend,
        Meter::new(
            spec.bin.ns(),
            spec.duration.ns(),
            spec.warmup.ns(),
            policy.rate_limiter.is_some(),
        ),
        Clients::new(policy, t.clients, rng(Stream::Backoff)),
        policy,
        timeline_of(spec, TOP),
    );
    if let Some(r) = policy.reconnect {
        let crashes = top.timeline.crash_windows();
        let c = Connections::new(r, t.clients, crashes, rng(Stream::Reconnect));
        top.clients.set_connections(c);
        if top.clients.has_connections() {
            top.meter.col.set_reconnect();
        }
    }
    top.clients.set_limiter_rng(rng(Stream::Limiter));
    top.tail_attempt = spec.report.alerts.tail_attempt;
    top
}

impl<'a> Sim<'a> {
    fn new(
        spec: &'a ScenarioSpec,
        policy: &'a Policy,
        tier_policies: &'a [Policy],
        replication: u32,
    ) -> Sim<'a> {
        let rng = |which| stream(spec.seed, replication, which);
        let t = &spec.traffic;
        let run_end = spec.duration.ns();
        // Cloud Tasks: the dispatch deadline is the attempt timeout.
        let attempt_timeout = match &spec.dispatcher {
            Some(d) => Some(d.dispatch_deadline),
            None => t.attempt_timeout,
        };
        let network = Network::new(
            t.network_delay.as_ref().map(Dist::new),
            rng(Stream::Network),
        );
        // Fixed delays get FIFO lanes (see `engine::queue`).
        let mut q = EventQueue::new();
        let arrivals = q.register_stream();
        let timeouts = attempt_timeout.map(|d| OldestFirst::new(&mut q, d.ns()));
        let deadlines = t.deadline.map(|d| OldestFirst::new(&mut q, d.ns()));
        // A network of constant zero delay makes no hop events: no lane.
        if let Some(c) = network.constant().filter(|&c| c > 0) {
            q.register_lane(c);
        }
        let top_lane = backoff_lane(&mut q, policy);
        let mut top = top_tier(spec, policy, replication);
        top.attempt_timeout = attempt_timeout.map(|d| d.ns());
        top.timeouts = timeouts;
        top.instant = network.instant();
        top.backoff_lane = top_lane;
        let mut tiers = Tiers::new(top);
        downstream(
            spec,
            tier_policies,
            replication,
            run_end,
            &mut q,
            &mut tiers,
        );
        let dispatcher = spec.dispatcher.as_ref().map(Dispatcher::new);
        let gated = dispatcher.is_some() || tiers[TOP].clients.has_limiter();
        Sim {
            spec,
            q,
            run_end,
            arrivals,
            traffic: Traffic::new(t, rng(Stream::Arrivals), rng(Stream::Clients)),
            network,
            dispatcher,
            gated,
            deadlines,
            pump: false,
            app: match (t.mode, t.threads) {
                (Mode::Pool, Some(n)) => {
                    Some(AppQueue::new(n, spec.bin.ns(), run_end, spec.warmup.ns()))
                }
                _ => None,
            },
            tiers,
            watched: 0,
            story: None,
        }
    }

    fn update_capacity(&mut self, k: usize) {
        let tier = &mut self.tiers[k];
        let (workers, cap) = tier.backend.capacity_now();
        tier.meter.col.set_capacity(workers, cap);
    }

    fn start(&mut self) {
        for k in 0..self.tiers.len() {
            self.update_capacity(k);
            if let Some(at) = self.tiers[k].timeline.first() {
                self.q.schedule_at(at, Ev::Edge { tier: k as u8 });
            }
        }
        match self.traffic.start() {
            Start::Arrival(Some(at)) => self.q.schedule_in_stream(self.arrivals, at, Ev::Arrival),
            Start::Arrival(None) => {}
            Start::Clients(times) => {
                for (client, at) in times.into_iter().enumerate() {
                    self.q.schedule_at(
                        at,
                        Ev::ClientNext {
                            client: client as u32,
                        },
                    );
                }
            }
        }
    }

    /// Runs to the end, or (`until`) handles every event before that
    /// time and no other ([`resume`]); `closed`: the bins `stop_check` has
    /// already seen. Returns the instant and the event count when time
    /// stopped advancing there (see [`stall_limit`]). Called from
    /// [`drive`] alone, where it is inlined: the loop works on the run in
    /// that function's frame (out of line, or inlined in more places, it
    /// costs 1–5 % more instructions).
    fn run(
        &mut self,
        mut stop_check: Option<StopCheck<'_>>,
        until: Nanos,
        mut closed: usize,
    ) -> Result<Option<(Nanos, u64)>, RunError> {
        let limit = stall_limit(self.spec, self.tiers[TOP].policy);
        // No event is at `Nanos::MAX` (the run ends before), so the first
        // event starts an instant.
        let (mut instant, mut at_instant) = (Nanos::MAX, 0u64);
        let before = until.min(self.run_end);
        while let Some((now, ev)) = self.q.pop_before(before) {
            if now == instant {
                at_instant += 1;
                if at_instant > limit {
                    return Ok(Some((now, at_instant)));
                }
            } else {
                (instant, at_instant) = (now, 1);
                // The meters move only when time does: within an instant
                // no bin closes and no level accrues.
                let (top, below) = self.tiers.split_top_mut();
                top.meter.advance(now, &mut top.reqs);
                for tier in below {
                    tier.meter.advance(now, &mut tier.reqs);
                }
                if let Some(check) = stop_check.as_mut() {
                    let top = &self.tiers[TOP];
                    if top.meter.col.rows().len() != closed {
                        closed = top.meter.col.rows().len();
                        if check(&top.progress()) {
                            // Every bin up to `edge` is closed and no event
                            // lies between it and `now`: the run ends there.
                            let edge = self.tiers[TOP].meter.col.closed_until();
                            self.run_end = edge;
                            for tier in self.tiers.iter_mut() {
                                tier.meter.col.end_at(edge);
                            }
                            break;
                        }
                    }
                }
            }
            self.step(now, ev)?;
            // The chain of zero-delay steps this event started (retries
            // without backoff, work that takes no time), popped here
            // rather than by the loop above: the same events in the same
            // order, but `step` is inlined here too, so their dispatch is
            // a branch of its own, which mostly sees those few kinds and
            // so is better predicted.
            while let Some(ev) = self.q.pop_step() {
                at_instant += 1;
                if at_instant > limit {
                    return Ok(Some((now, at_instant)));
                }
                self.step(now, ev)?;
            }
            if !self.q.instant_busy() {
                self.settle_timers();
            }
        }
        let covered = until.min(self.run_end);
        watch::add(covered.saturating_sub(self.watched));
        self.watched = covered;
        Ok(None)
    }

    /// Handles one event at `now`, then lets the dispatcher send what it
    /// can; every 65,536 events, reports progress and stops when the user
    /// asked to.
    #[inline(always)]
    fn step(&mut self, now: Nanos, ev: Ev) -> Result<(), RunError> {
        if self.q.popped().is_multiple_of(65_536) {
            self.checkpoint(now)?;
        }
        self.handle(now, ev);
        if self.pump {
            self.pump_dispatcher(now);
        }
        Ok(())
    }

    /// Adds the simulated time covered since the last checkpoint to the
    /// process's progress; an error when the user asked to stop.
    #[cold]
    #[inline(never)]
    fn checkpoint(&mut self, now: Nanos) -> Result<(), RunError> {
        if stop::requested() {
            return Err(RunError::Interrupted);
        }
        watch::add(now - self.watched);
        self.watched = now;
        Ok(())
    }

    /// The chain of steps at this instant is over: settles the timers
    /// (every tier's attempt timeouts, request deadlines). Only the oldest
    /// live timer of each kind can fire next, since timers of one fixed
    /// delay fall due in the order they were set (see [`OldestFirst`]);
    /// the others stay reserved places in the event order, and those whose
    /// attempt is answered or whose request ends before they are due never
    /// become events. A run's outputs are those of scheduling every timer
    /// outright.
    #[inline]
    fn settle_timers(&mut self) {
        // One loop, so that each kind of timer is settled from one place:
        // the top's attempt timeouts, its request deadlines, then each
        // tier's below. The top is handled apart, and the tiers below are
        // walked rather than indexed: this runs at every instant.
        let Sim {
            tiers,
            q,
            deadlines,
            ..
        } = self;
        let (top, below) = tiers.split_top_mut();
        if let Some(t) = top.timeouts.as_mut() {
            let reqs = &top.reqs;
            let event = |job| Ev::Timeout { tier: TOP_EV, job };
            t.settle(q, |j| reqs.is_current(j), event);
        }
        if let Some(d) = deadlines.as_mut() {
            let reqs = &top.reqs;
            d.settle(
                q,
                |(slot, gen)| reqs.is_open(slot, gen),
                |(slot, gen)| Ev::Deadline { slot, gen },
            );
        }
        for (k, tier) in below.iter_mut().enumerate() {
            if let Some(t) = tier.timeouts.as_mut() {
                let reqs = &tier.reqs;
                let event = |job| Ev::Timeout {
                    tier: (k + 1) as u8,
                    job,
                };
                t.settle(q, |j| reqs.is_current(j), event);
            }
        }
    }

    /// Routes one event to the components it concerns.
    #[inline(always)]
    fn handle(&mut self, now: Nanos, ev: Ev) {
        match ev {
            Ev::Arrival => self.on_arrival(now),
            Ev::ClientNext { client } => {
                self.open::<true>(now, TOP, client, None);
            }
            Ev::Send { tier: TOP_EV, key } => self.backoff_over::<true>(now, TOP, key),
            Ev::Send { tier, key } => self.backoff_over::<false>(now, tier as usize, key),
            Ev::AtBackend(job) => self.arrive::<true>(now, TOP, job),
            Ev::Done {
                tier: TOP_EV,
                worker,
                wgen,
            } => self.worker_done::<true>(now, TOP, worker, wgen),
            Ev::Done { tier, worker, wgen } => {
                self.worker_done::<false>(now, tier as usize, worker, wgen)
            }
            Ev::Write { txn } => {
                let top = &mut self.tiers[TOP];
                top.backend.write(now, txn, &top.reqs, &mut top.meter);
                self.apply_effects::<true>(now, TOP);
            }
            Ev::Response(job, status, committed) => {
                self.answer_after_headers::<true>(now, TOP, job, status, committed)
            }
            Ev::Timeout { tier: TOP_EV, job } => {
                self.timeout_popped::<true>(now, TOP, job);
                self.time_out::<true>(now, TOP, job)
            }
            Ev::Timeout { tier, job } => {
                let k = tier as usize;
                self.timeout_popped::<false>(now, k, job);
                self.time_out::<false>(now, k, job)
            }
            Ev::Deadline { slot, gen } => {
                if let Some(d) = self.deadlines.as_mut() {
                    let reqs = &self.tiers[TOP].reqs;
                    let live = |(slot, gen)| reqs.is_open(slot, gen);
                    let event = |(slot, gen)| Ev::Deadline { slot, gen };
                    d.popped(&mut self.q, (slot, gen), now, live, event);
                }
                self.on_deadline(now, slot, gen)
            }
            Ev::Edge { tier } => self.on_edge(now, tier as usize),
            Ev::DispatchTick => {
                if let Some(d) = self.dispatcher.as_mut() {
                    d.on_tick();
                }
                self.pump = true;
            }
            Ev::RunTask => self.run_task(now),
            Ev::Hedge { slot, gen } => {
                if self.tiers[TOP].reqs.hedge_due(slot, gen, now) {
                    self.hedge(now, slot);
                }
            }
            Ev::Limiter { index, wgen } => {
                if self.tiers[TOP].clients.limiter_woken(index, wgen) {
                    self.release_limited(now, index);
                }
            }
            Ev::HoldOver { tier, worker, wgen } => self.hold_over(now, tier as usize, worker, wgen),
        }
    }

    fn into_result(mut self, policy_index: usize, replication: u32) -> RunResult {
        let events = self.q.popped();
        let spec = self.spec;
        let incident = spec.incident(self.run_end);
        let policy = self.tiers[TOP].policy.name.clone();
        let mut app = self.app.take();
        let tiers = self
            .tiers
            .into_vec()
            .into_iter()
            .map(|tier| {
                let (name, failed) = (tier.name, tier.failed_answers);
                let capacity = tier.backend.nominal_capacity();
                let (mut bins, mut summary) = figures(spec, self.run_end, incident, tier);
                // The application queue is the top's (tier 0, the first).
                if let Some(app) = app.take() {
                    app.fill(&mut bins, &mut summary);
                }
                tier_run(spec, incident, name, bins, summary, failed, capacity)
            })
            .collect();
        RunResult {
            policy,
            policy_index,
            replication,
            events,
            stopped_at_s: (self.run_end < spec.duration.ns()).then(|| secs(self.run_end)),
            tiers,
        }
    }
}

/// One tier's row of `tiers.csv` and its time series.
fn tier_run(
    spec: &ScenarioSpec,
    incident: Option<(Nanos, Nanos)>,
    name: &str,
    bins: Vec<BinRow>,
    s: RunSummary,
    failed: u64,
    capacity: f64,
) -> TierRun {
    let warmup_s = spec.warmup.secs();
    let peak = bins
        .iter()
        .filter(|b| b.t_s >= warmup_s)
        .map(|b| b.offered_rps)
        .fold(0.0, f64::max);
    let recovered_at_s = incident.and_then(|(_, end)| {
        recovery::recovered_at(
            &bins,
            spec.bin.secs(),
            secs(end),
            spec.report.recovery_threshold,
            spec.report.stable_for.secs(),
            spec.duration.secs(),
        )
    });
    TierRun {
        name: name.to_string(),
        attempts: s.offered,
        served: s.served,
        failed,
        wasted: s.wasted,
        capacity_rps: capacity,
        peak_load_ratio: (capacity > 0.0).then(|| peak / capacity),
        recovered_at_s,
        recovery_after_fault_s: recovered_at_s
            .zip(incident)
            .map(|(at, (_, end))| (at - secs(end)).max(0.0)),
        bins,
        summary: s,
    }
}

/// The tiers of `spec`'s `downstream` under `policies` (one per tier), for
/// replication `replication`, appended to `tiers` (which holds the top);
/// registers their fixed delays as lanes of `q`.
fn downstream<'a>(
    spec: &'a ScenarioSpec,
    policies: &'a [Policy],
    replication: u32,
    run_end: Nanos,
    q: &mut EventQueue<Ev>,
    tiers: &mut Tiers<'a>,
) {
    let last = spec.downstream.len();
    for (i, (d, policy)) in spec.downstream.iter().zip(policies).enumerate() {
        let rng = |which| tier_stream(spec.seed, replication, which, (i + 1) as u32);
        let mut backend = Backend::new(&d.backend, rng(Stream::Service), rng(Stream::Faults));
        if i + 1 < last {
            backend.set_calls_down();
        }
        if d.propagate_cancel {
            backend.set_drop_cancelled();
        }
        let timeouts = d.attempt_timeout.map(|to| OldestFirst::new(q, to.ns()));
        let lane = backoff_lane(q, policy);
        let meter = Meter::new(spec.bin.ns(), run_end, spec.warmup.ns(), false);
        let timeline = timeline_of(spec, i + 1);
        let mut clients = Clients::new(policy, 1, rng(Stream::Backoff));
        if let Some(r) = policy.reconnect {
            let crashes = timeline.crash_windows();
            clients.set_connections(Connections::new(r, 1, crashes, rng(Stream::Reconnect)));
        }
        let mut meter = meter;
        if clients.has_connections() {
            meter.col.set_reconnect();
        }
        let mut tier = Tier::new(&d.name, backend, meter, clients, policy, timeline);
        tier.attempt_timeout = d.attempt_timeout.map(|x| x.ns());
        tier.timeouts = timeouts;
        tier.fan_out = d.calls;
        tier.propagate_cancel = d.propagate_cancel;
        tier.backoff_lane = lane;
        tiers.push(tier);
    }
}

/// A tier's time series and whole-run figures at the end of the run:
/// requests still open count as unfinished; rates, capacity, recovery and
/// latency quantiles are derived.
fn figures(
    spec: &ScenarioSpec,
    run_end: Nanos,
    incident: Option<(Nanos, Nanos)>,
    mut tier: Tier<'_>,
) -> (Vec<BinRow>, RunSummary) {
    for r in tier.reqs.open_requests() {
        if r.counted {
            let s = &mut tier.meter.summary;
            s.unfinished += 1;
            s.attempts += u64::from(r.attempts);
            s.retries += u64::from(r.attempts.saturating_sub(1));
            s.max_task_age_s = s.max_task_age_s.max(secs(run_end - r.start));
        }
    }
    let warmup_s = secs(tier.meter.warmup());
    let oldest = tier.reqs.oldest_start();
    tier.meter.col.set_open(tier.reqs.open_count(), oldest);
    let peak_1s = tier.meter.col.peak_1s.max();
    let bins = tier
        .meter
        .col
        .finish(tier.reqs.retrying(), tier.reqs.waiting());
    let mut s = tier.meter.summary;
    if tier.policy.rate_limiter.is_some() {
        // Requests still waiting at the end count what they waited.
        s.client_wait_ns += tier.reqs.counted_wait_at(run_end);
        s.client_wait_ms = Some(if s.requests > 0 {
            s.client_wait_ns as f64 / s.requests as f64 / 1e6
        } else {
            0.0
        });
    }
    if tier.clients.has_connections() {
        s.refused_locally.get_or_insert(0);
    }
    s.peak_offered_rps = bins
        .iter()
        .filter(|b| b.t_s >= warmup_s)
        .map(|b| b.offered_rps)
        .fold(0.0, f64::max);
    s.capacity_rps = tier.backend.nominal_capacity();
    s.peak_offered_1s = peak_1s;
    if let Some((start, end)) = incident {
        s.fault_start_s = Some(secs(start));
        s.fault_end_s = Some(secs(end));
        s.recovered_at_s = recovery::recovered_at(
            &bins,
            spec.bin.secs(),
            secs(end),
            spec.report.recovery_threshold,
            spec.report.stable_for.secs(),
            secs(run_end),
        );
        s.recovery = recovery::outcome(
            &bins,
            secs(end),
            spec.report.recovery_threshold,
            spec.report.stable_for.secs(),
            secs(run_end),
            s.recovered_at_s,
        );
        s.drain_s = recovery::drained_after(
            &bins,
            spec.bin.secs(),
            (secs(start), secs(end)),
            secs(run_end),
            s.recovered_at_s,
        );
    }
    let ms = |v: Option<f64>| v.map(|x| x / 1e6);
    s.latency_p50_ms = ms(tier.meter.latency.quantile(0.5));
    s.latency_p99_ms = ms(tier.meter.latency.quantile(0.99));
    s.latency_mean_ms = ms(tier.meter.latency.mean());
    (bins, s)
}
#[cfg(test)]
mod tests {
    use super::*;

    /// One client, one request at t = 0 (burst mode), constant 10 ms hops
    /// and 100 ms service on one worker; `extra` adds scenario fields.
    fn one_request(traffic: &str, extra: &str, policy: &str) -> RunResult {
        let text = format!(
            r#"{{"name": "t", "duration": "10s", "bin": "1s",
                "traffic": {{"mode": "burst", "clients": 1,
                  "network_delay": {{"constant": {{"value": "10ms"}}}} {traffic}}},
                "backend": {{"workers": 1,
                  "service_time": {{"constant": {{"value": "100ms"}}}}}}
                {extra},
                "policies": [{policy}]}}"#
        );
        simulate(&Scenario::from_json(&text).unwrap(), 0, 0).unwrap()
    }

    const ONCE: &str = r#"{"name": "once"}"#;
    const RETRY: &str =
        r#"{"name": "r", "max_attempts": 3, "backoff": {"constant": {"delay": "1s"}}}"#;

    #[test]
    fn the_stall_limit_leaves_room_for_every_attempt_of_a_burst() {
        let limit = |traffic: &str, attempts: i64| {
            let s = Scenario::from_json(&format!(
                r#"{{"name": "t", "duration": "10s", "traffic": {{{traffic}}},
                    "backend": {{"workers": 1, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                    "policies": [{{"name": "p", "max_attempts": {attempts},
                      "backoff": {{"constant": {{"delay": "0s"}}}}}}]}}"#
            ))
            .unwrap();
            stall_limit(s.spec(), &s.policies()[0])
        };
        // 200 000 clients failing 60 attempts each at one instant: two
        // events an attempt, 24 M in all, a finite instant.
        let burst = r#""mode": "burst", "clients": 200000"#;
        assert!(limit(burst, 60) > 2 * 60 * 200_000);
        // Unlimited attempts, or a closed loop (its clients start request
        // after request), get no such room: those instants never end.
        assert_eq!(limit(burst, 0), 10_000_000 + 64 * 200_000);
        let closed = r#""mode": "closed", "clients": 200000"#;
        assert_eq!(limit(closed, 60), 10_000_000 + 64 * 200_000);
    }

    #[test]
    fn a_request_crosses_the_network_twice_around_its_service() {
        let r = one_request("", "", ONCE);
        let s = &r.summary();
        assert_eq!(
            (s.requests, s.succeeded, s.attempts, s.served),
            (1, 1, 1, 1)
        );
        assert_eq!(s.latency_mean_ms.map(|v| v.round()), Some(120.0));
        // Arrival, at the backend, worker done, response.
        assert_eq!(r.events, 4);
    }

    #[test]
    fn without_a_network_attempts_and_answers_are_not_events() {
        // Two requests at t = 0, one worker, no waiting room, no network:
        // the second attempt is rejected within its send.
        let text = r#"{"name": "t", "duration": "10s", "bin": "1s",
            "traffic": {"mode": "burst", "clients": 2, "burst_spread": "0s",
                        "attempt_timeout": "1s"},
            "backend": {"workers": 1, "queue_limit": 0,
                        "service_time": {"constant": {"value": "100ms"}}},
            "policies": [{"name": "once"}]}"#;
        let r = simulate(&Scenario::from_json(text).unwrap(), 0, 0).unwrap();
        let s = &r.summary();
        assert_eq!((s.succeeded, s.rejected, s.attempts), (1, 1, 2));
        // Two arrivals, one worker done (the answer reaches the client
        // within it) and the served attempt's timeout, popped stale at
        // 1 s. Neither attempt's trip to the backend nor either answer is
        // an event, and the rejected attempt's timeout never became one.
        assert_eq!(r.events, 4);
    }

    /// A herd with `policy` into an outage, with a waiting room and paid
    /// rejections, run with the cache said to hold every slot and then
    /// none (every read-ahead path runs): the two runs must be the same.
    /// Returns the retries and the slots read ahead.
    fn read_ahead_changes_nothing(policy: &str) -> (u64, u64) {
        let text = format!(
            r#"{{"name": "t", "duration": "6s", "bin": "500ms", "seed": 3,
            "traffic": {{"rate": 3000, "clients": 50, "attempt_timeout": "300ms",
                        "deadline": "3s"}},
            "backend": {{"workers": 20, "queue_limit": 200, "reject_cost": "100us",
                        "service_time": {{"exponential": {{"mean": "10ms"}}}}}},
            "faults": [{{"outage": {{"start": "1s", "duration": "1s"}}}}],
            "policies": [{policy}]}}"#
        );
        let scenario = Scenario::from_json(&text).unwrap();
        let run = |cache_slots: usize| {
            let spec = scenario.spec();
            let policy = &scenario.policies()[0];
            let mut sim = Sim::new(spec, policy, scenario.tier_policies(0), 0);
            sim.tiers[TOP].reqs.set_cache_slots(cache_slots);
            sim.start();
            assert_eq!(sim.run(None, Nanos::MAX, 0).unwrap(), None);
            let read = sim.tiers[TOP].reqs.slots_read_ahead();
            (sim.into_result(0, 0), read)
        };
        let ((plain, read_plain), (ahead, read_ahead)) = (run(usize::MAX), run(0));
        assert_eq!(read_plain, 0);
        assert_eq!(plain.events, ahead.events);
        assert_eq!(
            serde_json::to_string(&plain.summary()).unwrap(),
            serde_json::to_string(&ahead.summary()).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&plain.bins()).unwrap(),
            serde_json::to_string(&ahead.bins()).unwrap()
        );
        (plain.summary().retries, read_ahead)
    }

    #[test]
    fn reading_slots_ahead_changes_nothing() {
        // A fixed backoff: the timers wait in a lane, read ahead in order.
        let (retries, read) = read_ahead_changes_nothing(
            r#"{"name": "fixed", "max_attempts": 0, "backoff": {"constant": {"delay": "50ms"}}}"#,
        );
        assert!(retries > 10_000, "a storm: {retries}");
        // Every retry's timer had its slot read before it fired (all but
        // the very first timer), and the pool read its queues on top.
        assert!(
            read >= retries,
            "{read} slots read ahead, {retries} retries"
        );
        // Random delays: the timers wait in the heap, read ahead from the
        // events it pops soonest.
        let (retries, read) = read_ahead_changes_nothing(
            r#"{"name": "jittered", "max_attempts": 0, "jitter": "full",
                "backoff": {"exponential": {"initial": "20ms", "multiplier": 2, "max": "200ms"}}}"#,
        );
        assert!(retries > 5_000, "a storm: {retries}");
        assert!(
            read >= retries,
            "{read} slots read ahead, {retries} retries"
        );
    }

    #[test]
    fn a_call_to_the_tier_below_and_its_answer_are_not_events() {
        // The top backend's worker serves 100 ms, then calls the tier
        // below, whose worker serves 50 ms: the call reaches it within the
        // top worker's step and its answer comes back within its own.
        let r = one_request(
            "",
            r#", "downstream": [{"name": "db", "policy": {"max_attempts": 1},
                "backend": {"workers": 1,
                            "service_time": {"constant": {"value": "50ms"}}}}]"#,
            ONCE,
        );
        let s = &r.summary();
        assert_eq!((s.succeeded, s.attempts), (1, 1));
        // 10 ms out, 100 ms + 50 ms of service, 10 ms back.
        assert_eq!(s.latency_mean_ms.map(|v| v.round()), Some(170.0));
        // Arrival, at the backend, the top worker done, the tier's worker
        // done (the call's answer releases the top worker, whose answer
        // leaves), response.
        assert_eq!(r.events, 5);
    }

    #[test]
    fn an_answer_within_a_dispatch_frees_its_slot_at_that_instant() {
        // Three tasks at t = 0, one concurrent dispatch, no network, one
        // worker and no waiting room. Task 1 is served for 1 s; the
        // others wait for the slot (one attempt each: a queue's policy
        // would retry 100 times by default). With two slots, task 2 is rejected
        // within its dispatch, and its freed slot must go to task 3 at
        // once, not at the next event (the worker's, 1 s later).
        let run = |slots: u32| {
            let text = format!(
                r#"{{"name": "t", "duration": "10s", "bin": "1s",
                "traffic": {{"mode": "burst", "clients": 3, "burst_spread": "0s"}},
                "dispatcher": {{"max_dispatches_per_second": 500, "max_burst_size": 100,
                               "max_concurrent_dispatches": {slots},
                               "dispatch_deadline": "10m"}},
                "backend": {{"workers": 1, "queue_limit": 0,
                            "service_time": {{"constant": {{"value": "1s"}}}}}},
                "policies": [{{"name": "once", "max_attempts": 1}}]}}"#
            );
            simulate(&Scenario::from_json(&text).unwrap(), 0, 0).unwrap()
        };
        let firsts = |r: &RunResult| -> Vec<f64> {
            r.bins()[..3].iter().map(|b| b.first_attempt_rps).collect()
        };
        let two = run(2);
        assert_eq!(firsts(&two), [3.0, 0.0, 0.0], "all three dispatched at 0 s");
        assert_eq!((two.summary().succeeded, two.summary().rejected), (1, 2));
        // Three arrivals and the worker's completion: no dispatch, trip
        // to the backend or answer is an event of its own.
        assert_eq!(two.events, 4);
        // One slot: each task goes when the one before is answered.
        let one = run(1);
        assert_eq!(firsts(&one), [1.0, 1.0, 1.0]);
        assert_eq!((one.summary().succeeded, one.summary().rejected), (3, 0));
    }

    #[test]
    fn a_failed_attempt_waits_its_backoff_and_retries() {
        // The outage covers the first attempt (reaches the backend at
        // 10 ms) and is over when the retry arrives (1.03 s).
        let r = one_request(
            "",
            r#", "faults": [{"outage": {"start": "0s", "duration": "500ms"}}]"#,
            RETRY,
        );
        let s = &r.summary();
        assert_eq!((s.succeeded, s.attempts), (1, 2));
        // 10 ms out, answered at once (no service), 10 ms back, 1 s
        // backoff, then 120 ms.
        assert_eq!(s.latency_mean_ms.map(|v| v.round()), Some(1140.0));
        assert_eq!(r.bins()[0].retrying, 1.0, "waiting out its backoff at 1 s");
        assert_eq!(r.bins()[1].retrying, 0.0, "retried at 1.02 s");
    }

    #[test]
    fn a_timed_out_attempt_is_served_anyway_and_counted_as_waste() {
        let r = one_request(r#", "attempt_timeout": "50ms""#, "", ONCE);
        let s = &r.summary();
        assert_eq!((s.succeeded, s.dropped, s.served, s.wasted), (0, 1, 1, 1));
        let timeouts: f64 = r.bins().iter().map(|b| b.timeout_rps).sum();
        assert_eq!(timeouts, 1.0);
    }

    #[test]
    fn a_deadline_ends_a_request_waiting_out_its_backoff() {
        let r = one_request(
            r#", "deadline": "500ms""#,
            r#", "faults": [{"outage": {"start": "0s", "duration": "5s"}}]"#,
            RETRY,
        );
        let s = &r.summary();
        assert_eq!((s.dropped, s.attempts, s.unfinished), (1, 1, 0));
        // The stale backoff timer at 1.02 s still pops, and is skipped.
        assert_eq!(r.bins()[0].dropped_rps, 1.0);
    }
}
