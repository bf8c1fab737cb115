//! One simulated run: one policy, one replication, single-threaded.
//!
//! The run owns the event queue and the components — traffic, requests,
//! clients, network, backend, dispatcher, the fault timeline and the
//! meters — and routes each event to the components it concerns. Each
//! component keeps its own state and invariants; none schedules events:
//! they return (or leave in [`Backend::out`]) what should happen next, and
//! the run schedules it, in the order decided, so ties between events at
//! the same instant always break the same way.
//!
//! Every event that refers to a request carries the slot's generation (and
//! the attempt number); an event whose request has moved on (a response to
//! an attempt that already timed out, a timer for a request that already
//! ended) is recognised as stale and skipped, so timers are never searched
//! for or cancelled. `docs/architecture.md` follows one request through
//! these events.

use super::backend::{Backend, Effect};
use super::clients::{Admit, Clients, Decision, Hedge, Release, Wake};
use super::dispatcher::{Dispatcher, Pump};
use super::dist::Dist;
pub use super::error::RunError;
use super::event::Ev;
use super::faults::{ForceRun, Timeline};
use super::meter::Meter;
use super::network::Network;
use super::requests::{GiveUp, Job, Outcome, Phase, ReadAhead, Requests};
use super::tier::{Holds, Tier};
use super::traffic::{Start, Traffic};
use crate::engine::{stop, stream, watch, EventQueue, LaneId, OldestFirst, Stream};
use crate::metrics::{recovery, RunResult};
use crate::policy::{Backoff, Policy};
use crate::scenario::spec::{Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::{secs, Nanos};

mod chain;

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
    let policy = &scenario.policies()[policy_index];
    let tier_policies = scenario.tier_policies(policy_index);
    let mut sim = Sim::new(scenario.spec(), policy, tier_policies, replication);
    sim.start();
    if let Some((at, events)) = sim.run()? {
        return Err(RunError::Stalled {
            policy: policy.name.clone(),
            replication,
            at_s: secs(at),
            events,
            why: scenario.zero_time_loop(policy_index).unwrap_or_else(|| {
                "every step at that instant takes no time: add delays (a backoff, a \
                 network_delay, a reject_cost or an admission_cost)"
                    .to_string()
            }),
        });
    }
    Ok(sim.into_result(policy_index, replication))
}

/// The state of one run.
struct Sim<'a> {
    spec: &'a ScenarioSpec,
    policy: &'a Policy,
    q: EventQueue<Ev>,
    run_end: Nanos,
    /// The stream lane of the next open-mode or burst arrival.
    arrivals: LaneId,
    /// The lane of a fixed backoff's timers, if the policy has one.
    backoff_lane: Option<LaneId>,
    /// How far `backoff_lane` has had its requests' slots read ahead.
    backoff_read: ReadAhead,
    traffic: Traffic,
    reqs: Requests,
    clients: Clients<'a>,
    network: Network,
    /// Whether hops take no time: attempts then reach the backend within
    /// their send and answers reach the client within the backend's step,
    /// rather than as events of their own.
    instant: bool,
    backend: Backend,
    dispatcher: Option<Dispatcher>,
    timeline: Timeline,
    meter: Meter,
    /// The client's patience per attempt (a dispatcher's deadline).
    attempt_timeout: Option<Nanos>,
    /// Attempt timeouts, of which only the oldest unanswered attempt's is
    /// an event.
    timeouts: Option<OldestFirst<Job>>,
    /// Request deadlines (the client's patience per request), of which
    /// only the oldest open request's is an event.
    deadlines: Option<OldestFirst<(u32, u32)>>,
    /// Set when a dispatcher slot or token may have freed up.
    pump: bool,
    /// Attempts the backend answered with an error after the warm-up
    /// (counted only when there are tiers: `tiers.csv`).
    top_failed_answers: u64,
    /// The attempt number from which an ending counts in the tail the
    /// `attempt_tail` alert watches.
    tail_attempt: u32,
    /// The tiers below the backend (`downstream`), in calling order.
    tiers: Vec<Tier<'a>>,
    /// For each tier that calls one below (the backend first), its
    /// workers waiting on their calls.
    holds: Vec<Holds>,
    /// Simulated time already added to the process's progress
    /// ([`watch`]).
    watched: Nanos,
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
        let mut backoff_lane = None;
        if let Backoff::Constant { delay } = policy.backoff {
            if !policy.jitter.is_random() {
                backoff_lane = Some(q.register_lane(delay));
            }
        }
        let base_workers = super::backend::base_workers(&spec.backend);
        let mut backend = Backend::new(&spec.backend, rng(Stream::Service), rng(Stream::Faults));
        if !spec.downstream.is_empty() {
            backend.set_calls_down();
        }
        let tiers = chain::tiers(spec, tier_policies, replication, run_end, &mut q);
        Sim {
            spec,
            policy,
            q,
            run_end,
            arrivals,
            backoff_lane,
            backoff_read: ReadAhead::default(),
            traffic: Traffic::new(t, rng(Stream::Arrivals), rng(Stream::Clients)),
            reqs: Requests::default(),
            clients: Clients::new(policy, t.clients, rng(Stream::Backoff)),
            instant: network.instant(),
            network,
            backend,
            dispatcher: spec.dispatcher.as_ref().map(Dispatcher::new),
            timeline: Timeline::new(&spec.faults, &spec.actions, base_workers, None),
            meter: Meter::new(
                spec.bin.ns(),
                run_end,
                spec.warmup.ns(),
                policy.rate_limiter.is_some(),
            ),
            attempt_timeout: attempt_timeout.map(|d| d.ns()),
            timeouts,
            deadlines,
            pump: false,
            top_failed_answers: 0,
            tail_attempt: spec.report.alerts.tail_attempt,
            holds: tiers.iter().map(|_| Holds::default()).collect(),
            tiers,
            watched: 0,
        }
    }

    fn update_capacity_metric(&mut self) {
        let (workers, cap) = self.backend.capacity_now();
        self.meter.col.set_capacity(workers, cap);
    }

    fn start(&mut self) {
        self.update_capacity_metric();
        if let Some(t0) = self.timeline.first() {
            self.q.schedule_at(t0, Ev::Edge);
        }
        self.start_tiers();
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

    /// Runs to the end. Returns the instant and the event count when time
    /// stopped advancing there (see [`stall_limit`]).
    fn run(&mut self) -> Result<Option<(Nanos, u64)>, RunError> {
        let limit = stall_limit(self.spec, self.policy);
        // No event is at `Nanos::MAX` (the run ends before), so the first
        // event starts an instant.
        let (mut instant, mut at_instant) = (Nanos::MAX, 0u64);
        while let Some((now, ev)) = self.q.pop_before(self.run_end) {
            if now == instant {
                at_instant += 1;
                if at_instant > limit {
                    return Ok(Some((now, at_instant)));
                }
            } else {
                (instant, at_instant) = (now, 1);
                // The meters move only when time does: within an instant
                // no bin closes and no level accrues.
                self.meter.advance(now, &mut self.reqs);
                if !self.tiers.is_empty() {
                    self.advance_tiers(now);
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
        watch::add(self.run_end.saturating_sub(self.watched));
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
    /// (attempt timeouts, the tiers' call timeouts, request deadlines).
    /// Only the oldest live timer of each kind can fire next, since timers
    /// of one fixed delay fall due in the order they were set (see
    /// [`OldestFirst`]); the others stay reserved places in the event
    /// order, and those whose attempt is answered or whose request ends
    /// before they are due never become events. A run's outputs are those
    /// of scheduling every timer outright.
    #[inline]
    fn settle_timers(&mut self) {
        if let Some(t) = self.timeouts.as_mut() {
            t.settle(&mut self.q, |j| self.reqs.is_current(j), Ev::AttemptTimeout);
        }
        if let Some(d) = self.deadlines.as_mut() {
            d.settle(
                &mut self.q,
                |(slot, gen)| self.reqs.is_open(slot, gen),
                |(slot, gen)| Ev::Deadline { slot, gen },
            );
        }
        if !self.tiers.is_empty() {
            self.settle_tier_timers();
        }
    }

    /// A backoff timer popped: when the slots of the next few timers in
    /// the fixed backoff's lane have not been read yet, reads them in one
    /// batch ([`Requests::read_ahead`]), so that in a herd of retries each
    /// timer finds its request in cache. Only a hint: it changes nothing,
    /// and a timer popped from elsewhere merely shifts the count.
    #[inline(never)]
    fn read_ahead(&mut self) {
        let Some(lane) = self.backoff_lane else {
            return;
        };
        let Some((skip, n)) = self.backoff_read.took_one() else {
            return;
        };
        let slots = self
            .q
            .lane_ahead(lane, skip)
            .take(n)
            .filter_map(|ev| match ev {
                Ev::Send(key) => Some(key.slot),
                _ => None,
            });
        self.reqs.read_ahead(slots);
    }

    /// Routes one event to the components it concerns.
    #[inline(always)]
    fn handle(&mut self, now: Nanos, ev: Ev) {
        match ev {
            Ev::Arrival => self.on_arrival(now),
            Ev::ClientNext { client } => self.new_request(now, client),
            Ev::Send(key) => {
                if self.reqs.outgrow_cache() {
                    self.read_ahead();
                }
                if self.reqs.backoff_over(key) {
                    self.make_due(now, key.slot);
                }
            }
            Ev::AtBackend(job) => self.reach_backend(now, job),
            Ev::WorkerDone { worker, wgen } => {
                self.backend
                    .worker_done(now, worker, wgen, &self.reqs, &mut self.meter);
                self.apply_backend_effects(now);
            }
            Ev::Write { txn } => {
                self.backend.write(now, txn, &self.reqs, &mut self.meter);
                self.apply_backend_effects(now);
            }
            Ev::Response(job, status) => self.on_answer(now, job, status, false),
            Ev::AttemptTimeout(job) => {
                if let Some(t) = self.timeouts.as_mut() {
                    let live = |j| self.reqs.is_current(j);
                    t.popped(&mut self.q, job, now, live, Ev::AttemptTimeout);
                }
                self.on_answer(now, job, Status::DeadlineExceeded, true)
            }
            Ev::Deadline { slot, gen } => {
                if let Some(d) = self.deadlines.as_mut() {
                    let live = |(slot, gen)| self.reqs.is_open(slot, gen);
                    let event = |(slot, gen)| Ev::Deadline { slot, gen };
                    d.popped(&mut self.q, (slot, gen), now, live, event);
                }
                self.on_deadline(now, slot, gen)
            }
            Ev::Edge => self.on_edge(now),
            Ev::DispatchTick => {
                if let Some(d) = self.dispatcher.as_mut() {
                    d.on_tick();
                }
                self.pump = true;
            }
            Ev::RunTask => self.run_task(now),
            Ev::Hedge { slot, gen } => {
                if self.reqs.hedge_due(slot, gen, now) {
                    self.hedge(now, slot);
                }
            }
            Ev::Limiter { index, wgen } => {
                if self.clients.limiter_woken(index, wgen) {
                    self.release_limited(now, index);
                }
            }
            Ev::TierDone { tier, worker, wgen } => {
                self.tier_worker_done(now, tier as usize, worker, wgen)
            }
            Ev::TierTimeout { tier, job } => {
                self.tier_timeout_popped(now, tier as usize, job);
                self.call_answer(now, tier as usize, job, Status::DeadlineExceeded, true)
            }
            Ev::TierSend { tier, key } => self.call_backoff_over(now, tier as usize, key),
            Ev::HoldOver { tier, worker, wgen } => self.hold_over(now, tier as usize, worker, wgen),
            Ev::TierEdge { tier } => self.on_tier_edge(now, tier as usize),
        }
    }

    /// An attempt reaches the backend.
    fn reach_backend(&mut self, now: Nanos, job: Job) {
        self.backend.arrive(now, job, &self.reqs, &mut self.meter);
        self.apply_backend_effects(now);
    }

    /// Turns what the backend decided into events, in the order decided.
    /// Without network delays its answers are not events: they reach
    /// their clients once every effect is in place, in the order given.
    fn apply_backend_effects(&mut self, now: Nanos) {
        let mut out = std::mem::take(&mut self.backend.out);
        for &effect in &out {
            match effect {
                Effect::Settle {
                    job,
                    completed,
                    reply,
                } => {
                    if let Some(status) = reply {
                        if status != Status::Ok && !self.tiers.is_empty() && self.meter.counted(now)
                        {
                            self.top_failed_answers += 1;
                        }
                        if !self.instant {
                            let hop = self.network.hop();
                            self.q.schedule_after(hop, Ev::Response(job, status));
                        }
                    }
                    let s = self.reqs.settle(job, completed);
                    if s.duplicate && s.counted {
                        self.meter.summary.duplicates += 1;
                    }
                }
                Effect::Busy {
                    worker,
                    wgen,
                    after,
                } => self
                    .q
                    .schedule_after(after, Ev::WorkerDone { worker, wgen }),
                Effect::RoundTrip { txn } => {
                    let round_trip = self.network.hop().saturating_add(self.network.hop());
                    self.q.schedule_after(round_trip, Ev::Write { txn });
                }
                Effect::Hold { worker, wgen, job } => self.start_hold(now, 0, worker, wgen, job),
            }
        }
        if self.instant {
            // Delivering an answer may send an attempt (a hedge) whose
            // effects are applied within, from a list of their own.
            for (job, status) in out.iter().filter_map(Effect::answer) {
                self.on_answer(now, job, status, false);
            }
        }
        out.clear();
        if self.backend.out.is_empty() {
            self.backend.out = out;
        }
    }

    fn on_arrival(&mut self, now: Nanos) {
        let client = self.traffic.arrival_client();
        self.new_request(now, client);
        if let Some(at) = self.traffic.next_arrival(now) {
            if at < self.run_end {
                self.q.schedule_in_stream(self.arrivals, at, Ev::Arrival);
            }
        }
    }

    fn new_request(&mut self, now: Nanos, client: u32) {
        let counted = self.meter.counted(now);
        let hedged = self.policy.hedging.is_some();
        let slot = self.reqs.open(client, now, counted, hedged);
        let gen = self.reqs[slot as usize].gen;
        self.meter.col.now.demand += 1;
        if counted {
            self.meter.summary.requests += 1;
        }
        self.clients
            .on_request(now, client, &mut self.reqs[slot as usize].mark);
        if let Some(d) = self.deadlines.as_mut() {
            d.set(&mut self.q, (slot, gen));
        }
        self.make_due(now, slot);
    }

    /// A request is due for its next attempt: sends it, or hands it to the
    /// dispatcher when the scenario has one, or to its client's rate
    /// limiter when the policy has one (validation refuses both at once).
    fn make_due(&mut self, now: Nanos, slot: u32) {
        match self.dispatcher.as_mut() {
            None if self.clients.has_limiter() => {
                let r = &self.reqs[slot as usize];
                match self.clients.limiter_admit(now, r.client, slot, r.gen) {
                    Admit::Go => {
                        self.meter.col.now.client_grants += 1;
                        self.send_attempt(now, slot);
                    }
                    Admit::Wait(wake) => {
                        self.reqs.wait_token(slot, now);
                        self.schedule_wake(wake);
                    }
                }
            }
            None => self.send_attempt(now, slot),
            Some(d) => {
                d.enqueue(self.reqs.set_due(slot));
                self.pump = true;
            }
        }
    }

    fn schedule_wake(&mut self, wake: Option<Wake>) {
        if let Some(w) = wake {
            if w.at < self.run_end {
                self.q.schedule_at(
                    w.at,
                    Ev::Limiter {
                        index: w.index,
                        wgen: w.wgen,
                    },
                );
            }
        }
    }

    /// A rate limiter woke up: the requests at the head of its queue go
    /// while it has tokens.
    #[inline(never)]
    fn release_limited(&mut self, now: Nanos, index: u32) {
        loop {
            match self.clients.limiter_next(now, index, &self.reqs) {
                Release::Send(slot) => {
                    let waited = self.reqs.token_granted(slot, now);
                    let col = &mut self.meter.col.now;
                    col.client_grants += 1;
                    col.client_wait_ns += waited;
                    if self.reqs[slot as usize].counted {
                        self.meter.summary.client_wait_ns += waited;
                    }
                    self.send_attempt(now, slot);
                }
                Release::WakeAt(w) => {
                    self.schedule_wake(Some(w));
                    return;
                }
                Release::Idle => return,
            }
        }
    }

    /// A hedged request's hedge timer fired: the next hedge goes if the
    /// budget allows; else hedging stops, and the request ends if nothing
    /// is left out.
    #[inline(never)]
    fn hedge(&mut self, now: Nanos, slot: u32) {
        let Some(h) = self.policy.hedging else {
            return;
        };
        if !h.more_after(self.reqs[slot as usize].attempts) {
            return;
        }
        match self.clients.may_hedge(now, &mut self.reqs[slot as usize]) {
            Ok(()) => self.send_attempt(now, slot),
            Err(why) => self.stop_hedging(now, slot, why),
        }
    }

    /// No more hedges for the request in `slot` (`why` refused one); it is
    /// over, for that reason, when none of its attempts is still out.
    #[inline(never)]
    fn stop_hedging(&mut self, now: Nanos, slot: u32, why: GiveUp) {
        self.reqs.freeze_hedging(slot, why);
        if self.reqs.open_attempts(slot) == 0 {
            self.finish(now, slot, Some(why));
        }
    }

    /// Dispatches due tasks while tokens and concurrent slots allow, and
    /// wakes up again when the next token comes.
    #[inline(never)]
    fn pump_dispatcher(&mut self, now: Nanos) {
        while let Some(d) = self.dispatcher.as_mut() {
            match d.next(now, &mut self.reqs) {
                Pump::Send(slot) => self.send_attempt(now, slot),
                Pump::WakeAt(at) => {
                    if at < self.run_end {
                        self.q.schedule_at(at, Ev::DispatchTick);
                    }
                    break;
                }
                Pump::Idle => break,
            }
        }
        // Cleared last: an answer given within a send (no network) frees
        // its slot and sets the flag, but the loop has seen that slot.
        self.pump = false;
    }

    /// An operator's `force_run`: one RunTask call for each waiting task
    /// `which` selects, in order of their next attempt (ties in creation
    /// order), paced at `per_minute` calls a minute; the first call goes
    /// now unless earlier calls still hold the quota.
    #[inline(never)]
    fn force_run(&mut self, now: Nanos, which: &ForceRun, per_minute: f64) {
        let Some(d) = self.dispatcher.as_mut() else {
            return;
        };
        let waiting = self.reqs.waiting_in_creation_order();
        let mut chosen: Vec<(Nanos, u32)> = which
            .select(&waiting)
            .into_iter()
            .map(|slot| (self.reqs.next_attempt_at(slot), slot))
            .collect();
        // Stable: equal times keep creation order.
        chosen.sort_by_key(|&(at, _)| at);
        let reqs = &self.reqs;
        let tasks = chosen
            .into_iter()
            .map(|(_, slot)| (slot, reqs[slot as usize].gen));
        let gap = crate::scenario::cloud_tasks::run_task_gap(per_minute);
        if let Some(at) = d.run_tasks.plan(now, tasks, gap) {
            if at == now {
                self.run_task(now);
            } else if at < self.run_end {
                self.q.schedule_at(at, Ev::RunTask);
            }
        }
    }

    /// The operator's next RunTask call: the next chosen task still
    /// waiting is dispatched now, ignoring the queue's rate and
    /// concurrency limits.
    fn run_task(&mut self, now: Nanos) {
        let Some(d) = self.dispatcher.as_mut() else {
            return;
        };
        let reqs = &self.reqs;
        let waiting = |slot: u32, gen: u32| {
            reqs.is_open(slot, gen)
                && matches!(reqs[slot as usize].phase, Phase::Backoff | Phase::Due)
        };
        let (slot, wake) = d.run_tasks.call(now, waiting);
        if let Some(at) = wake.filter(|&at| at < self.run_end) {
            self.q.schedule_at(at, Ev::RunTask);
        }
        let Some(slot) = slot else {
            return;
        };
        if self.reqs.hurry(slot) {
            if let Some(d) = self.dispatcher.as_mut() {
                d.force(&mut self.reqs[slot as usize]);
            }
            self.send_attempt(now, slot);
        }
    }

    fn send_attempt(&mut self, now: Nanos, slot: u32) {
        let r = &self.reqs[slot as usize];
        let client = r.client;
        if !self.clients.may_send(now, client, r.attempts == 0) {
            // Refused by an open breaker: fails fast, never reaches the
            // backend. A refused hedge only stops hedging while other
            // attempts are out.
            if self.reqs.open_attempts(slot) > 0 {
                self.reqs.freeze_hedging(slot, GiveUp::Breaker);
            } else {
                self.finish(now, slot, Some(GiveUp::Breaker));
            }
            return;
        }
        let previous = r.last_sent;
        let job = self.reqs.begin_attempt(slot, now);
        if job.attempt == 1 {
            self.meter.col.now.first_attempts += 1;
        } else {
            self.meter.col.now.retries += 1;
            self.meter.col.record_retry_gap(now - previous);
        }
        self.clients.on_send(client);
        if !self.instant {
            let hop = self.network.hop();
            self.q.schedule_after(hop, Ev::AtBackend(job));
        }
        if let Some(t) = self.timeouts.as_mut() {
            t.set(&mut self.q, job);
        }
        if let Some(h) = self.policy.hedging {
            if h.more_after(job.attempt) {
                self.arm_hedge(now, slot, h.delay);
            }
        }
        if self.instant {
            // The attempt's timers are set: it reaches the backend now.
            self.reach_backend(now, job);
        }
    }

    /// The next hedge of the request in `slot` is due `after` from now.
    fn arm_hedge(&mut self, now: Nanos, slot: u32, after: Nanos) {
        let at = now.saturating_add(after);
        self.reqs.arm_hedge(slot, at);
        if at < self.run_end {
            let gen = self.reqs[slot as usize].gen;
            self.q.schedule_at(at, Ev::Hedge { slot, gen });
        }
    }

    /// The current attempt is over for the client: its dispatcher slot frees.
    fn release_dispatch(&mut self, slot: u32) {
        if let Some(d) = self.dispatcher.as_mut() {
            if d.release(&mut self.reqs[slot as usize]) {
                self.pump = true;
            }
        }
    }

    /// An attempt's answer reaches the client, or (`timeout`) the client
    /// stops waiting for it; stale when the client no longer waits for it.
    fn on_answer(&mut self, now: Nanos, job: Job, status: Status, timeout: bool) {
        if !self.reqs.is_current(job) {
            return;
        }
        let pushback = self.backend.pushback(status, timeout);
        if let Some(d) = self.dispatcher.as_mut() {
            if self.reqs[job.slot as usize].dispatched {
                d.on_result(now, status, timeout, pushback);
            }
        }
        self.reqs.attempt_over(job);
        let r = &mut self.reqs[job.slot as usize];
        self.clients.attempt_done(r, job.attempt);
        let client = r.client;
        let throttled = !timeout && status == Status::ResourceExhausted;
        let wake = self.clients.limiter_response(now, client, throttled);
        self.schedule_wake(wake);
        self.release_dispatch(job.slot);
        if status == Status::Ok {
            self.succeed(now, job.slot, job.attempt);
            return;
        }
        if timeout {
            self.meter.col.now.timeouts += 1;
        } else {
            self.meter.col.now.errors += 1;
        }
        if self.policy.hedging.is_some() {
            self.on_hedge_failure(now, job.slot, status, pushback);
            return;
        }
        let r = &mut self.reqs[job.slot as usize];
        match self.clients.on_failure(now, r, status, timeout, pushback) {
            Decision::Retry(delay) => {
                let (key, delay) = self.reqs.wait_backoff(job.slot, now, delay);
                if self.dispatcher.is_some() {
                    self.reqs.note_due(job.slot, now.saturating_add(delay));
                }
                self.q.schedule_after(delay, Ev::Send(key));
            }
            Decision::GiveUp(why) => self.finish(now, job.slot, Some(why)),
        }
    }

    /// One attempt of a hedged request failed: the next hedge now, later,
    /// never, or the request fails.
    #[inline(never)]
    fn on_hedge_failure(&mut self, now: Nanos, slot: u32, status: Status, pushback: Option<Nanos>) {
        let frozen = self.reqs.hedging_frozen(slot);
        let r = &mut self.reqs[slot as usize];
        match self
            .clients
            .on_hedge_failure(now, r, status, frozen, pushback)
        {
            Hedge::Fatal => self.finish(now, slot, Some(GiveUp::NotRetryable)),
            Hedge::Now => self.send_attempt(now, slot),
            Hedge::After(d) => {
                self.arm_hedge(now, slot, d);
            }
            Hedge::Refused(why) => self.stop_hedging(now, slot, why),
            Hedge::NoMore => {
                if self.reqs.open_attempts(slot) == 0 {
                    // Its last attempt out failed: hedging was stopped
                    // (for the reason that stopped it), or every hedge is
                    // out (the attempt limit).
                    let why = self.reqs.frozen_why(slot).unwrap_or(GiveUp::Limits);
                    self.finish(now, slot, Some(why));
                }
            }
        }
    }

    fn succeed(&mut self, now: Nanos, slot: u32, attempt: u32) {
        let r = self.reqs[slot as usize];
        self.clients.on_success(now, &r, attempt);
        let latency = now - r.start;
        self.meter.col.now.goodput += 1;
        self.meter.col.record_latency(latency);
        if r.counted {
            self.meter.latency.record(latency);
            self.meter.summary.last_success_s = Some(secs(now));
        }
        self.finish(now, slot, None);
    }

    /// The client gives up the whole request.
    #[inline(never)]
    fn on_deadline(&mut self, now: Nanos, slot: u32, gen: u32) {
        if !self.reqs.is_open(slot, gen) {
            return;
        }
        let r = self.reqs[slot as usize];
        if r.phase == Phase::InFlight {
            let open = self.reqs.open_attempts(slot);
            self.clients.on_abandoned(now, r.client, open);
        }
        self.finish(now, slot, Some(GiveUp::Deadline));
    }

    /// The request in `slot` ends: it succeeded (`why` is `None`) or was
    /// given up for `why`.
    fn finish(&mut self, now: Nanos, slot: u32, why: Option<GiveUp>) {
        let open = self.reqs.open_attempts(slot);
        let r = &mut self.reqs[slot as usize];
        self.clients.request_ended(r, open);
        let r = *r;
        if r.phase == Phase::Waiting && r.counted {
            self.meter.summary.client_wait_ns += self.reqs.waited(slot, now);
        }
        self.release_dispatch(slot);
        let outcome = why.map_or(Outcome::Succeeded, GiveUp::outcome);
        let bin = &mut self.meter.col.now;
        bin.finished += 1;
        if r.attempts >= self.tail_attempt {
            bin.tail_finished += 1;
        }
        if outcome == Outcome::Dropped {
            bin.dropped += 1;
        }
        if why == Some(GiveUp::Limits) {
            bin.dead_lettered += 1;
        }
        if r.counted {
            let s = &mut self.meter.summary;
            match outcome {
                Outcome::Succeeded => s.succeeded += 1,
                Outcome::Failed => s.failed += 1,
                Outcome::Dropped => s.dropped += 1,
            }
            match why {
                None => {}
                Some(GiveUp::Limits) => s.max_attempts_reached += 1,
                Some(GiveUp::Deadline) => s.dropped_deadline += 1,
                Some(GiveUp::Budget) => s.dropped_budget += 1,
                Some(GiveUp::RetriesDisabled) => s.dropped_retries_disabled += 1,
                Some(GiveUp::Breaker) => s.failed_breaker += 1,
                Some(GiveUp::NotRetryable) => s.failed_non_retryable += 1,
            }
            s.attempts += r.attempts as u64;
            s.record_end(r.attempts, outcome == Outcome::Succeeded);
            s.max_task_age_s = s.max_task_age_s.max(secs(now - r.start));
        }
        self.reqs.close(slot);
        if let Some(pause) = self.traffic.after_request() {
            self.q
                .schedule_after(pause, Ev::ClientNext { client: r.client });
        }
    }

    #[inline(never)]
    fn on_edge(&mut self, now: Nanos) {
        let (next, change) = self.timeline.reach(now);
        if let Some(t) = next {
            self.q.schedule_at(t, Ev::Edge);
        }
        self.clients
            .set_retries_disabled(change.actions.retries_disabled);
        self.backend.set_shed(change.actions.shed);
        for (which, per_minute) in &change.force_run {
            self.force_run(now, which, *per_minute);
        }
        self.backend
            .set_faults(change.fault, &self.reqs, &mut self.meter);
        self.apply_backend_effects(now);
        if let Some(status) = change.flush {
            self.abandon_holds(now, 0);
            self.backend.flush(status, &self.reqs, &mut self.meter);
            self.apply_backend_effects(now);
        }
        self.update_capacity_metric();
    }

    fn into_result(mut self, policy_index: usize, replication: u32) -> RunResult {
        for r in self.reqs.open_requests() {
            if r.counted {
                let s = &mut self.meter.summary;
                s.unfinished += 1;
                s.attempts += r.attempts as u64;
                s.max_task_age_s = s.max_task_age_s.max(secs(self.run_end - r.start));
            }
        }
        let events = self.q.popped();
        let spec = self.spec;
        let warmup_s = secs(self.meter.warmup());
        let oldest = self.reqs.oldest_start();
        self.meter.col.set_open(self.reqs.open_count(), oldest);
        let peak_1s = self.meter.col.peak_1s.max();
        let bins = self
            .meter
            .col
            .finish(self.reqs.retrying(), self.reqs.waiting());
        let incident = spec.incident(self.run_end);
        let tiers = chain::tier_runs(
            spec,
            std::mem::take(&mut self.tiers),
            (
                &bins,
                &self.meter.summary,
                self.top_failed_answers,
                self.backend.nominal_capacity(),
            ),
            incident,
        );
        let mut s = self.meter.summary;
        if self.policy.rate_limiter.is_some() {
            // Requests still waiting at the end count what they waited.
            s.client_wait_ns += self.reqs.counted_wait_at(self.run_end);
            s.client_wait_ms = Some(if s.requests > 0 {
                s.client_wait_ns as f64 / s.requests as f64 / 1e6
            } else {
                0.0
            });
        }
        s.peak_offered_rps = bins
            .iter()
            .filter(|b| b.t_s >= warmup_s)
            .map(|b| b.offered_rps)
            .fold(0.0, f64::max);
        s.capacity_rps = self.backend.nominal_capacity();
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
                secs(self.run_end),
            );
            s.recovery = recovery::outcome(
                &bins,
                secs(end),
                spec.report.recovery_threshold,
                spec.report.stable_for.secs(),
                secs(self.run_end),
                s.recovered_at_s,
            );
            s.drain_s = recovery::drained_after(
                &bins,
                spec.bin.secs(),
                (secs(start), secs(end)),
                secs(self.run_end),
                s.recovered_at_s,
            );
        }
        let ms = |v: Option<f64>| v.map(|x| x / 1e6);
        s.latency_p50_ms = ms(self.meter.latency.quantile(0.5));
        s.latency_p99_ms = ms(self.meter.latency.quantile(0.99));
        s.latency_mean_ms = ms(self.meter.latency.mean());
        RunResult {
            policy: self.policy.name.clone(),
            policy_index,
            replication,
            bins,
            summary: s,
            events,
            tiers,
        }
    }
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
        let s = &r.summary;
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
        let s = &r.summary;
        assert_eq!((s.succeeded, s.rejected, s.attempts), (1, 1, 2));
        // Two arrivals, one worker done (the answer reaches the client
        // within it) and the served attempt's timeout, popped stale at
        // 1 s. Neither attempt's trip to the backend nor either answer is
        // an event, and the rejected attempt's timeout never became one.
        assert_eq!(r.events, 4);
    }

    #[test]
    fn reading_slots_ahead_changes_nothing() {
        // A herd with a fixed backoff into an outage, with a waiting room
        // and paid rejections: every read-ahead path runs when the cache
        // is said to hold nothing, and the run must be the same.
        let text = r#"{"name": "t", "duration": "6s", "bin": "500ms", "seed": 3,
            "traffic": {"rate": 3000, "clients": 50, "attempt_timeout": "300ms",
                        "deadline": "3s"},
            "backend": {"workers": 20, "queue_limit": 200, "reject_cost": "100us",
                        "service_time": {"exponential": {"mean": "10ms"}}},
            "faults": [{"outage": {"start": "1s", "duration": "1s"}}],
            "policies": [{"name": "fixed", "max_attempts": 0,
                          "backoff": {"constant": {"delay": "50ms"}}}]}"#;
        let scenario = Scenario::from_json(text).unwrap();
        let run = |cache_slots: usize| {
            let spec = scenario.spec();
            let policy = &scenario.policies()[0];
            let mut sim = Sim::new(spec, policy, scenario.tier_policies(0), 0);
            sim.reqs.set_cache_slots(cache_slots);
            sim.start();
            assert_eq!(sim.run().unwrap(), None);
            let read = sim.reqs.slots_read_ahead();
            (sim.into_result(0, 0), read)
        };
        let ((plain, read_plain), (ahead, read_ahead)) = (run(usize::MAX), run(0));
        let retries = plain.summary.retries();
        assert!(retries > 10_000, "a storm: {retries}");
        // Every retry's timer had its slot read before it fired (all but
        // the very first timer), and the pool read its queues on top.
        assert_eq!(read_plain, 0);
        assert!(
            read_ahead >= retries,
            "{read_ahead} slots read ahead, {retries} retries"
        );
        assert_eq!(plain.events, ahead.events);
        assert_eq!(
            serde_json::to_string(&plain.summary).unwrap(),
            serde_json::to_string(&ahead.summary).unwrap()
        );
        assert_eq!(
            serde_json::to_string(&plain.bins).unwrap(),
            serde_json::to_string(&ahead.bins).unwrap()
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
        let s = &r.summary;
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
            r.bins[..3].iter().map(|b| b.first_attempt_rps).collect()
        };
        let two = run(2);
        assert_eq!(firsts(&two), [3.0, 0.0, 0.0], "all three dispatched at 0 s");
        assert_eq!((two.summary.succeeded, two.summary.rejected), (1, 2));
        // Three arrivals and the worker's completion: no dispatch, trip
        // to the backend or answer is an event of its own.
        assert_eq!(two.events, 4);
        // One slot: each task goes when the one before is answered.
        let one = run(1);
        assert_eq!(firsts(&one), [1.0, 1.0, 1.0]);
        assert_eq!((one.summary.succeeded, one.summary.rejected), (3, 0));
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
        let s = &r.summary;
        assert_eq!((s.succeeded, s.attempts), (1, 2));
        // 10 ms out, answered at once (no service), 10 ms back, 1 s
        // backoff, then 120 ms.
        assert_eq!(s.latency_mean_ms.map(|v| v.round()), Some(1140.0));
        assert_eq!(r.bins[0].retrying, 1.0, "waiting out its backoff at 1 s");
        assert_eq!(r.bins[1].retrying, 0.0, "retried at 1.02 s");
    }

    #[test]
    fn a_timed_out_attempt_is_served_anyway_and_counted_as_waste() {
        let r = one_request(r#", "attempt_timeout": "50ms""#, "", ONCE);
        let s = &r.summary;
        assert_eq!((s.succeeded, s.dropped, s.served, s.wasted), (0, 1, 1, 1));
        let timeouts: f64 = r.bins.iter().map(|b| b.timeout_rps).sum();
        assert_eq!(timeouts, 1.0);
    }

    #[test]
    fn a_deadline_ends_a_request_waiting_out_its_backoff() {
        let r = one_request(
            r#", "deadline": "500ms""#,
            r#", "faults": [{"outage": {"start": "0s", "duration": "5s"}}]"#,
            RETRY,
        );
        let s = &r.summary;
        assert_eq!((s.dropped, s.attempts, s.unfinished), (1, 1, 0));
        // The stale backoff timer at 1.02 s still pops, and is skipped.
        assert_eq!(r.bins[0].dropped_rps, 1.0);
    }
}
