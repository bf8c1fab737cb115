//! One simulated run: one policy, one replication, single-threaded.
//!
//! Requests live in reusable slots (`requests.rs`), so memory follows what
//! is in flight. Every event that refers to a request carries the slot's
//! generation and the attempt number; an event whose request has
//! moved on (a response to an attempt that already timed out, a timer for a
//! request that already ended) is recognised as stale and skipped, so timers
//! are never searched for or cancelled.

use super::backend::{Next, Pool, Work, WorkerState};
use super::dispatcher::Dispatcher;
use super::dist::Dist;
use super::faults::{self, ActionState, FaultState};
use super::record::Record;
use super::requests::{Job, Phase, Requests};
use super::traffic::{ArrivalClock, Profile, SortedUniforms};
use crate::engine::{stream, EventQueue, SimRng, Stream};
use crate::metrics::collector::Collector;
use crate::metrics::quantile::LogHistogram;
use crate::metrics::{recovery, RunResult, RunSummary};
use crate::policy::breaker::Breaker;
use crate::policy::budget::Budget;
use crate::policy::{BudgetScope, Pushback};
use crate::policy::{Policy, RetryVerdict};
use crate::scenario::spec::{BackendKind, Discipline, FaultSpec, Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::{secs, Nanos, NS_PER_SEC};
use rand::Rng;

/// Everything that can happen. Kept small (16 bytes) for the event queue.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The next open-mode or burst arrival.
    Arrival,
    /// A closed-mode client sends its next request.
    ClientNext { client: u32 },
    /// A backoff timer fired: send the next attempt.
    Send { slot: u32, gen: u32 },
    /// An attempt reaches the backend.
    AtBackend(Job),
    /// A worker finishes what it was doing.
    WorkerDone { worker: u32, wgen: u32 },
    /// An answer reaches the client.
    Response(Job, Status),
    /// The client gives up waiting for an attempt.
    AttemptTimeout(Job),
    /// The client gives up the whole request.
    Deadline { slot: u32, gen: u32 },
    /// A fault or operator action starts or ends.
    Edge,
    /// The dispatcher's bucket has a token again.
    DispatchTick,
    /// Contention backend: a conditional write that read this version
    /// reaches the record.
    Write(Job, u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Succeeded,
    Failed,
    Dropped,
}

/// One instance per client, or one for all when the scope is global (none
/// when the policy has no such limit).
fn per_scope<T>(make: impl Fn() -> T, global: bool, clients: u32) -> Vec<T> {
    let n = if global { 1 } else { clients.max(1) as usize };
    (0..n).map(|_| make()).collect()
}

/// The instance that holds `client`'s state.
fn for_client<T>(v: &mut [T], client: u32) -> Option<&mut T> {
    match v.len() {
        0 => None,
        1 => v.first_mut(),
        n => v.get_mut(client as usize % n),
    }
}

struct Sim<'a> {
    spec: &'a ScenarioSpec,
    policy: &'a Policy,
    q: EventQueue<Ev>,
    run_end: Nanos,
    warmup: Nanos,

    reqs: Requests,

    pool: Pool,
    admission: Nanos,
    reject_cost: Nanos,
    service: Dist,

    network: Option<Dist>,
    think: Option<Dist>,
    attempt_timeout: Option<Nanos>,
    deadline: Option<Nanos>,
    clients: u32,

    fault: FaultState,
    actions: ActionState,
    edges: Vec<Nanos>,
    next_edge: usize,

    arrivals: Option<ArrivalClock>,
    burst: Option<(SortedUniforms, Nanos, Nanos, u32)>,
    rng_arrivals: SimRng,
    rng_service: SimRng,
    rng_network: SimRng,
    rng_backoff: SimRng,
    rng_faults: SimRng,
    rng_clients: SimRng,

    /// Retry budgets (see `per_scope`).
    budgets: Vec<Budget>,
    /// Circuit breakers (see `per_scope`).
    breakers: Vec<Breaker>,

    dispatcher: Option<Dispatcher>,
    /// The record, when the backend is `contention` (then there are no
    /// workers and no waiting room).
    record: Option<Record>,
    /// Set when a dispatcher slot or token may have freed up.
    pump: bool,

    col: Collector,
    summary: RunSummary,
    latency: LogHistogram,
}

/// Simulates policy `policy_index` of `scenario`, replication `replication`.
pub fn simulate(scenario: &Scenario, policy_index: usize, replication: u32) -> RunResult {
    let policy = &scenario.policies()[policy_index];
    let mut sim = Sim::new(scenario.spec(), policy, replication);
    sim.start();
    sim.run();
    sim.into_result(policy_index, replication)
}

impl<'a> Sim<'a> {
    fn new(spec: &'a ScenarioSpec, policy: &'a Policy, replication: u32) -> Sim<'a> {
        let seed = spec.seed;
        let t = &spec.traffic;
        let b = &spec.backend;
        let workers = b.workers.unwrap_or(1);
        let service = Dist::new(b.service_time.as_ref().unwrap_or(
            &crate::scenario::spec::DistSpec::Constant {
                value: Default::default(),
            },
        ));
        let run_end = spec.duration.ns();
        let budgets = policy.budget.as_ref().map_or_else(Vec::new, |b| {
            per_scope(
                || Budget::new(b),
                b.scope() == BudgetScope::Global,
                t.clients,
            )
        });
        let breakers = policy.breaker.as_ref().map_or_else(Vec::new, |b| {
            per_scope(
                || Breaker::new(b),
                b.scope == BudgetScope::Global,
                t.clients,
            )
        });
        let dispatcher = spec.dispatcher.as_ref().map(Dispatcher::new);
        // Cloud Tasks: the dispatch deadline is the attempt timeout.
        let attempt_timeout = match &spec.dispatcher {
            Some(d) => Some(d.dispatch_deadline),
            None => t.attempt_timeout,
        };
        let mut q = EventQueue::new();
        for d in [attempt_timeout, t.deadline].into_iter().flatten() {
            q.register_lane(d.ns());
        }
        let network = t.network_delay.as_ref().map(Dist::new);
        if let Some(c) = network.and_then(|n| n.constant_value()) {
            q.register_lane(c);
        }
        if let crate::policy::Backoff::Constant { delay } = policy.backoff {
            if !policy.jitter.is_random() {
                q.register_lane(delay);
            }
        }
        Sim {
            spec,
            policy,
            q,
            run_end,
            warmup: spec.warmup.ns(),
            reqs: Requests::default(),
            pool: Pool::new(
                workers,
                b.queue_limit.unwrap_or(u64::MAX),
                b.discipline == Discipline::Lifo,
            ),
            admission: b.admission_cost.ns(),
            reject_cost: b.reject_cost.ns(),
            service,
            network,
            think: t.think_time.as_ref().map(Dist::new),
            attempt_timeout: attempt_timeout.map(|d| d.ns()),
            deadline: t.deadline.map(|d| d.ns()),
            clients: t.clients.max(1),
            fault: faults::state_at(&[], workers, 0),
            actions: ActionState::default(),
            edges: faults::edges(&spec.faults, &spec.actions),
            next_edge: 0,
            arrivals: None,
            burst: None,
            rng_arrivals: stream(seed, replication, Stream::Arrivals),
            rng_service: stream(seed, replication, Stream::Service),
            rng_network: stream(seed, replication, Stream::Network),
            rng_backoff: stream(seed, replication, Stream::Backoff),
            rng_faults: stream(seed, replication, Stream::Faults),
            rng_clients: stream(seed, replication, Stream::Clients),
            budgets,
            breakers,
            dispatcher,
            record: (b.kind == BackendKind::Contention).then(Record::default),
            pump: false,
            col: Collector::new(spec.bin.ns(), run_end),
            summary: RunSummary::default(),
            latency: LogHistogram::new(),
        }
    }

    /// Nominal capacity (requests/s) with `workers` workers and a service
    /// time multiplied by `slowdown`.
    fn capacity(&self, workers: u32, slowdown: f64) -> f64 {
        let cost = self.admission as f64 + self.service.mean() * slowdown;
        if cost > 0.0 {
            workers as f64 * NS_PER_SEC as f64 / cost
        } else {
            f64::INFINITY
        }
    }

    fn update_capacity_metric(&mut self) {
        let cap = if self.fault.outage.is_some() || self.fault.blackhole || self.record.is_some() {
            0.0
        } else {
            self.capacity(self.pool.active(), self.fault.slowdown)
        };
        self.col.set_capacity(self.pool.active() as u64, cap);
    }

    fn start(&mut self) {
        self.update_capacity_metric();
        if let Some(&t0) = self.edges.first() {
            self.q.schedule_at(t0, Ev::Edge);
        }
        let t = &self.spec.traffic;
        match t.mode {
            Mode::Open => {
                let profile = Profile::new(t.rate.unwrap_or(0.0), &t.profile);
                let mut clock = ArrivalClock::new(profile, t.arrival);
                if let Some(at) = clock.next(&mut self.rng_arrivals) {
                    self.q.schedule_at(at, Ev::Arrival);
                }
                self.arrivals = Some(clock);
            }
            Mode::Closed => {
                for client in 0..self.clients {
                    let first = self.think_time();
                    self.q.schedule_at(first, Ev::ClientNext { client });
                }
            }
            Mode::Burst => {
                let at = t.burst_at.map_or(0, |d| d.ns());
                let spread = t.burst_spread.map_or(0, |d| d.ns());
                self.burst = Some((SortedUniforms::new(self.clients as u64), at, spread, 0));
                self.schedule_burst();
            }
        }
    }

    fn schedule_burst(&mut self) {
        if let Some((order, at, spread, _)) = self.burst.as_mut() {
            if let Some(u) = order.next(&mut self.rng_arrivals) {
                let t = *at + (u * *spread as f64) as Nanos;
                self.q.schedule_at(t.max(self.q.now()), Ev::Arrival);
            }
        }
    }

    fn think_time(&mut self) -> Nanos {
        match self.think {
            Some(d) => d.sample(&mut self.rng_clients),
            None => 0,
        }
    }

    fn net(&mut self) -> Nanos {
        match self.network {
            None => 0,
            Some(Dist::Constant(v)) => v as Nanos,
            Some(d) => d.sample(&mut self.rng_network),
        }
    }

    fn run(&mut self) {
        while let Some(t) = self.q.peek_time() {
            if t >= self.run_end {
                break;
            }
            let (now, ev) = self.q.pop().expect("peeked");
            self.col.advance(now);
            self.handle(now, ev);
            if self.pump {
                self.pump_dispatcher(now);
            }
        }
    }

    fn handle(&mut self, now: Nanos, ev: Ev) {
        match ev {
            Ev::Arrival => self.on_arrival(now),
            Ev::ClientNext { client } => self.new_request(now, client),
            Ev::Send { slot, gen } => {
                let r = &self.reqs[slot as usize];
                if r.gen == gen && r.phase == Phase::Backoff {
                    self.col.retrying -= 1;
                    self.reqs[slot as usize].phase = Phase::Due;
                    self.make_due(now, slot);
                }
            }
            Ev::AtBackend(job) => self.at_backend(now, job),
            Ev::WorkerDone { worker, wgen } => self.worker_done(now, worker, wgen),
            Ev::Response(job, status) => {
                if self.is_current(job) {
                    self.release_dispatch(job.slot);
                    if status == Status::Ok {
                        self.succeed(now, job.slot);
                    } else {
                        self.col.now.errors += 1;
                        self.failure(now, job.slot, status, false);
                    }
                }
            }
            Ev::AttemptTimeout(job) => {
                if self.is_current(job) {
                    self.release_dispatch(job.slot);
                    self.col.now.timeouts += 1;
                    self.failure(now, job.slot, Status::DeadlineExceeded, true);
                }
            }
            Ev::Deadline { slot, gen } => {
                let r = self.reqs[slot as usize];
                if r.gen == gen && r.phase != Phase::Free {
                    if r.phase == Phase::InFlight {
                        // The abandoned attempt counts as a failure for the
                        // breaker, or a half-open breaker would wait for ever.
                        if let Some(br) = self.breaker(r.client) {
                            br.record(now, false);
                        }
                    }
                    self.finish(now, slot, Outcome::Dropped);
                }
            }
            Ev::Edge => self.on_edge(now),
            Ev::Write(job, seen) => self.on_write(now, job, seen),
            Ev::DispatchTick => {
                if let Some(d) = self.dispatcher.as_mut() {
                    d.tick_pending = false;
                }
                self.pump = true;
            }
        }
    }

    /// Sends a due request's next attempt, through the dispatcher when the
    /// scenario has one.
    fn make_due(&mut self, now: Nanos, slot: u32) {
        match self.dispatcher.as_mut() {
            None => self.send_attempt(now, slot),
            Some(d) => {
                let r = &mut self.reqs[slot as usize];
                r.phase = Phase::Due;
                d.due.push_back((slot, r.gen));
                self.pump = true;
            }
        }
    }

    /// The current attempt is over for the client: its dispatcher slot frees.
    fn release_dispatch(&mut self, slot: u32) {
        let r = &mut self.reqs[slot as usize];
        if r.dispatched {
            r.dispatched = false;
            if let Some(d) = self.dispatcher.as_mut() {
                d.in_flight -= 1;
                self.pump = true;
            }
        }
    }

    /// Dispatches due tasks while tokens and concurrent slots allow, and
    /// wakes up again when the next token comes.
    fn pump_dispatcher(&mut self, now: Nanos) {
        self.pump = false;
        let Some(mut d) = self.dispatcher.take() else {
            return;
        };
        while let Some(&(slot, gen)) = d.due.front() {
            let r = &self.reqs[slot as usize];
            if r.gen != gen || r.phase != Phase::Due {
                d.due.pop_front();
                continue;
            }
            if !d.has_slot() {
                break;
            }
            if !d.take_token(now) {
                if !d.tick_pending {
                    d.tick_pending = true;
                    let at = d.next_token_at(now);
                    if at < self.run_end {
                        self.q.schedule_at(at, Ev::DispatchTick);
                    }
                }
                break;
            }
            d.due.pop_front();
            d.in_flight += 1;
            self.reqs[slot as usize].dispatched = true;
            self.dispatcher = Some(d);
            self.send_attempt(now, slot);
            d = self.dispatcher.take().expect("put back above");
        }
        self.dispatcher = Some(d);
    }

    /// Cloud Tasks' RunTask for every waiting task: dispatched at once,
    /// ignoring rate and concurrency limits.
    fn force_run(&mut self, now: Nanos) {
        if self.dispatcher.is_none() {
            return;
        }
        for slot in 0..self.reqs.len() as u32 {
            let phase = self.reqs[slot as usize].phase;
            if phase == Phase::Backoff {
                self.col.retrying -= 1;
                self.reqs[slot as usize].phase = Phase::Due;
            }
            if matches!(phase, Phase::Backoff | Phase::Due) {
                if let Some(d) = self.dispatcher.as_mut() {
                    d.in_flight += 1;
                }
                self.reqs[slot as usize].dispatched = true;
                self.send_attempt(now, slot);
            }
        }
    }

    fn on_arrival(&mut self, now: Nanos) {
        if let Some((_, _, _, next_client)) = self.burst.as_mut() {
            let client = *next_client;
            *next_client += 1;
            self.new_request(now, client);
            self.schedule_burst();
            return;
        }
        let client = if self.clients > 1 {
            self.rng_arrivals.random_range(0..self.clients)
        } else {
            0
        };
        self.new_request(now, client);
        if let Some(at) = self
            .arrivals
            .as_mut()
            .and_then(|c| c.next(&mut self.rng_arrivals))
        {
            if at < self.run_end {
                self.q.schedule_at(at.max(now), Ev::Arrival);
            }
        }
    }

    /// The retry budget that governs `client`, if the policy has one.
    fn budget(&mut self, client: u32) -> Option<&mut Budget> {
        for_client(&mut self.budgets, client)
    }

    /// The circuit breaker that governs `client`, if the policy has one.
    fn breaker(&mut self, client: u32) -> Option<&mut Breaker> {
        for_client(&mut self.breakers, client)
    }

    fn new_request(&mut self, now: Nanos, client: u32) {
        let counted = now >= self.warmup;
        let slot = self.reqs.open(client, now, counted);
        let gen = self.reqs[slot as usize].gen;
        self.col.now.demand += 1;
        if counted {
            self.summary.requests += 1;
        }
        if let Some(b) = self.budget(client) {
            b.on_request(now);
        }
        if let Some(d) = self.deadline {
            self.q.schedule_after(d, Ev::Deadline { slot, gen });
        }
        self.make_due(now, slot);
    }

    fn send_attempt(&mut self, now: Nanos, slot: u32) {
        let (client, first) = {
            let r = &self.reqs[slot as usize];
            (r.client, r.attempts == 0)
        };
        // A retries-only breaker never sees first attempts (so they do not
        // use up half-open probes either).
        let gated = !first || !self.policy.breaker.as_ref().is_some_and(|b| b.retries_only);
        if let Some(br) = self.breaker(client) {
            if gated && !br.allow(now) {
                // Refused by an open breaker: fails fast, never reaches the backend.
                self.finish(now, slot, Outcome::Failed);
                return;
            }
        }
        let r = &mut self.reqs[slot as usize];
        r.attempts += 1;
        r.phase = Phase::InFlight;
        let job = Job {
            slot,
            gen: r.gen,
            attempt: r.attempts,
        };
        if job.attempt == 1 {
            self.col.now.first_attempts += 1;
        } else {
            self.col.now.retries += 1;
        }
        let hop = self.net();
        self.q.schedule_after(hop, Ev::AtBackend(job));
        if let Some(t) = self.attempt_timeout {
            self.q.schedule_after(t, Ev::AttemptTimeout(job));
        }
    }

    /// Whether the client is still waiting for this attempt.
    #[inline]
    fn is_current(&self, job: Job) -> bool {
        let r = &self.reqs[job.slot as usize];
        r.gen == job.gen && r.attempts == job.attempt && r.phase == Phase::InFlight
    }

    fn reply(&mut self, job: Job, status: Status) {
        let hop = self.net();
        self.q.schedule_after(hop, Ev::Response(job, status));
    }

    fn at_backend(&mut self, now: Nanos, job: Job) {
        self.col.now.offered += 1;
        let counted = now >= self.warmup;
        if counted {
            self.summary.offered += 1;
        }
        if self.fault.blackhole {
            return;
        }
        if self.actions.shed > 0.0 && self.rng_faults.random::<f64>() < self.actions.shed {
            self.col.now.rejected += 1;
            self.summary.rejected += counted as u64;
            self.reply(job, self.spec.backend.reject_status);
            return;
        }
        if self.record.is_some() {
            self.on_read(job);
        } else if let Some(w) = self.pool.take_idle() {
            self.start_work(now, w, job);
        } else if self.pool.enqueue(job) {
            self.col.set_queue_len(self.pool.queue_len());
            self.summary.waited += counted as u64;
        } else {
            self.col.now.rejected += 1;
            self.summary.rejected += counted as u64;
            if self.reject_cost == 0 {
                self.reply(job, self.spec.backend.reject_status);
            } else {
                self.pool.push_reject(job);
            }
        }
    }

    /// Contention backend: the attempt reads the record's version; its
    /// conditional write arrives one network round trip later.
    fn on_read(&mut self, job: Job) {
        if let Some(status) = self.fault.outage {
            self.reply(job, status);
            return;
        }
        let record = self.record.as_mut().expect("contention backend");
        let seen = record.read();
        let open = record.open;
        self.col.set_queue_len(open);
        let round_trip = self.net().saturating_add(self.net());
        self.q.schedule_after(round_trip, Ev::Write(job, seen));
    }

    /// Contention backend: the write commits if nobody committed since its
    /// read, else it fails with `aborted`.
    fn on_write(&mut self, now: Nanos, job: Job, seen: u32) {
        let counted = now >= self.warmup;
        self.summary.served += counted as u64;
        let current = self.is_current(job);
        if !current {
            self.col.now.wasted += 1;
            self.summary.wasted += counted as u64;
        }
        let blocked = if self.fault.blackhole {
            Some(None)
        } else {
            self.fault.outage.map(Some)
        };
        let error = if blocked.is_none() {
            self.served_error()
        } else {
            None
        };
        let record = self.record.as_mut().expect("contention backend");
        let outcome = record.write(seen, blocked.is_none() && error.is_none());
        let open = record.open;
        self.col.set_queue_len(open);
        let status = match (blocked, outcome) {
            (Some(None), _) => return,
            (Some(Some(status)), _) => status,
            (None, Some(false)) => Status::Aborted,
            (None, Some(true)) => Status::Ok,
            (None, None) => error.unwrap_or(Status::Internal),
        };
        if current {
            self.reply(job, status);
        }
    }

    fn start_work(&mut self, now: Nanos, w: u32, job: Job) {
        let current = self.is_current(job);
        let (work, cost) = if let Some(status) = self.fault.outage {
            (Work::Fail(job, status), self.admission)
        } else if !current && self.spec.backend.drop_expired {
            (Work::Discard, self.admission)
        } else {
            let mut service = self.service.sample(&mut self.rng_service);
            if self.fault.slowdown != 1.0 {
                service = (service as f64 * self.fault.slowdown) as Nanos;
            }
            (Work::Serve(job), self.admission.saturating_add(service))
        };
        self.occupy(now, w, work, cost);
    }

    fn occupy(&mut self, _now: Nanos, w: u32, work: Work, cost: Nanos) {
        let wgen = self.pool.occupy(w, work);
        self.col.set_busy(self.pool.busy());
        self.q
            .schedule_after(cost, Ev::WorkerDone { worker: w, wgen });
    }

    fn worker_done(&mut self, now: Nanos, w: u32, wgen: u32) {
        let worker = self.pool.worker(w);
        if worker.wgen != wgen || worker.state != WorkerState::Busy {
            return;
        }
        match worker.work {
            Work::Serve(job) => {
                if now >= self.warmup {
                    self.summary.served += 1;
                }
                if self.is_current(job) {
                    let status = self.served_status();
                    self.reply(job, status);
                } else {
                    self.col.now.wasted += 1;
                    if now >= self.warmup {
                        self.summary.wasted += 1;
                    }
                }
            }
            Work::Fail(job, status) => {
                if self.is_current(job) {
                    self.reply(job, status);
                }
            }
            Work::Reject(job) => {
                if self.is_current(job) {
                    self.reply(job, self.spec.backend.reject_status);
                }
            }
            Work::Discard => {}
        }
        self.worker_free(now, w);
    }

    /// The status of a served attempt: `ok` unless an error burst hits it.
    fn served_status(&mut self) -> Status {
        self.served_error().unwrap_or(Status::Ok)
    }

    /// The status an error burst gives a served attempt, if one hits it.
    fn served_error(&mut self) -> Option<Status> {
        for i in 0..self.fault.errors.len() {
            let (rate, status) = self.fault.errors[i];
            if self.rng_faults.random::<f64>() < rate {
                return Some(status);
            }
        }
        None
    }

    /// A worker's work is over: it pays for a pending rejection, takes the
    /// next waiting attempt, or rests (see `backend.rs`).
    fn worker_free(&mut self, now: Nanos, w: u32) {
        match self.pool.free(w) {
            Next::Reject(job) => self.occupy(now, w, Work::Reject(job), self.reject_cost),
            Next::Take(job) => {
                self.col.set_queue_len(self.pool.queue_len());
                self.start_work(now, w, job);
            }
            Next::Rest => self.col.set_busy(self.pool.busy()),
        }
    }

    fn succeed(&mut self, now: Nanos, slot: u32) {
        let r = self.reqs[slot as usize];
        if let Some(g) = self.budget(r.client) {
            g.on_success(now, r.attempts > 1);
        }
        if let Some(br) = self.breaker(r.client) {
            br.record(now, true);
        }
        let latency = now - r.start;
        self.col.now.goodput += 1;
        self.col.record_latency(latency);
        if r.counted {
            self.latency.record(latency);
            self.summary.last_success_s = Some(secs(now));
        }
        self.finish(now, slot, Outcome::Succeeded);
    }

    fn failure(&mut self, now: Nanos, slot: u32, status: Status, timeout: bool) {
        let r = self.reqs[slot as usize];
        if let Some(br) = self.breaker(r.client) {
            br.record(now, false);
        }
        let verdict = self.policy.verdict(status, r.attempts, now - r.start);
        if verdict != RetryVerdict::NotRetryable {
            if let Some(b) = self.budget(r.client) {
                b.on_failure(now);
            }
        }
        match verdict {
            RetryVerdict::NotRetryable => self.finish(now, slot, Outcome::Failed),
            RetryVerdict::Exhausted => self.finish(now, slot, Outcome::Dropped),
            RetryVerdict::Retry => {
                if self.actions.retries_disabled {
                    self.finish(now, slot, Outcome::Dropped);
                    return;
                }
                if let Some(b) = self.budget(r.client) {
                    if !b.try_retry(now, timeout) {
                        self.finish(now, slot, Outcome::Dropped);
                        return;
                    }
                }
                let u = if self.policy.delay_is_random() {
                    self.rng_backoff.random::<f64>()
                } else {
                    0.0
                };
                let req = &mut self.reqs[slot as usize];
                let n = req.attempts - req.pushback_at;
                let mut delay = self.policy.retry_delay(n, &mut req.prev_delay, u);
                if self.policy.honor_retry_after
                    && !timeout
                    && matches!(status, Status::Unavailable | Status::ResourceExhausted)
                {
                    if let Some(ra) = self.spec.backend.retry_after {
                        match self.policy.pushback {
                            Pushback::AtLeast => delay = delay.max(ra.ns()),
                            Pushback::Exact => {
                                delay = ra.ns();
                                req.pushback_at = req.attempts;
                            }
                        }
                    }
                }
                req.phase = Phase::Backoff;
                let gen = req.gen;
                self.col.retrying += 1;
                self.q.schedule_after(delay, Ev::Send { slot, gen });
            }
        }
    }

    fn finish(&mut self, _now: Nanos, slot: u32, outcome: Outcome) {
        let r = self.reqs[slot as usize];
        if r.phase == Phase::Backoff {
            self.col.retrying -= 1;
        }
        self.release_dispatch(slot);
        if outcome == Outcome::Dropped {
            self.col.now.dropped += 1;
        }
        if r.counted {
            match outcome {
                Outcome::Succeeded => self.summary.succeeded += 1,
                Outcome::Failed => self.summary.failed += 1,
                Outcome::Dropped => self.summary.dropped += 1,
            }
            self.summary.attempts += r.attempts as u64;
        }
        self.reqs.close(slot);
        if self.spec.traffic.mode == Mode::Closed {
            let pause = self.think_time();
            self.q
                .schedule_after(pause, Ev::ClientNext { client: r.client });
        }
    }

    fn on_edge(&mut self, now: Nanos) {
        while self.next_edge < self.edges.len() && self.edges[self.next_edge] <= now {
            self.next_edge += 1;
        }
        if let Some(&t) = self.edges.get(self.next_edge) {
            self.q.schedule_at(t, Ev::Edge);
        }
        let base = self.spec.backend.workers.unwrap_or(1);
        let new = faults::state_at(&self.spec.faults, base, now);
        self.actions = faults::actions_at(&self.spec.actions, now);
        let flush = self.spec.faults.iter().find_map(|f| match *f {
            FaultSpec::Outage {
                start,
                status,
                flush: true,
                ..
            } if start.ns() == now => Some(status),
            _ => None,
        });
        let force_run = self.spec.actions.iter().any(
            |a| matches!(a, crate::scenario::spec::ActionSpec::ForceRun { at } if at.ns() == now),
        );
        if force_run {
            self.force_run(now);
        }
        let old_workers = self.pool.active();
        self.fault = new;
        if self.fault.workers != old_workers {
            for w in self.pool.set_active(self.fault.workers) {
                self.worker_free(now, w);
            }
        }
        if let Some(status) = flush {
            self.flush(now, status);
        }
        self.update_capacity_metric();
    }

    /// A crash: every queued and in-service attempt fails at once.
    fn flush(&mut self, now: Nanos, status: Status) {
        let queued = self.pool.drain_waiting();
        self.col.set_queue_len(0);
        for job in queued {
            if self.is_current(job) {
                self.reply(job, status);
            }
        }
        for w in 0..self.pool.len() {
            let worker = self.pool.worker(w);
            if worker.state != WorkerState::Busy {
                continue;
            }
            if let Work::Serve(job) = worker.work {
                if self.is_current(job) {
                    self.reply(job, status);
                }
                self.worker_free(now, w);
            }
        }
    }

    fn into_result(mut self, policy_index: usize, replication: u32) -> RunResult {
        for r in self.reqs.open_requests() {
            if r.counted {
                self.summary.unfinished += 1;
                self.summary.attempts += r.attempts as u64;
            }
        }
        let events = self.q.popped();
        let spec = self.spec;
        let bins = self.col.finish();
        let mut s = self.summary;
        let warmup_s = secs(self.warmup);
        s.peak_offered_rps = bins
            .iter()
            .filter(|b| b.t_s >= warmup_s)
            .map(|b| b.offered_rps)
            .fold(0.0, f64::max);
        s.capacity_rps = if self.record.is_some() {
            0.0
        } else {
            let cost = spec.backend.admission_cost.ns() as f64 + self.service.mean();
            if cost > 0.0 {
                spec.backend.workers.unwrap_or(1) as f64 * NS_PER_SEC as f64 / cost
            } else {
                0.0
            }
        };
        if let Some((start, end)) = faults::incident(&spec.faults, self.run_end) {
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
        }
        let ms = |v: Option<f64>| v.map(|x| x / 1e6);
        s.latency_p50_ms = ms(self.latency.quantile(0.5));
        s.latency_p99_ms = ms(self.latency.quantile(0.99));
        s.latency_mean_ms = ms(self.latency.mean());
        RunResult {
            policy: self.policy.name.clone(),
            policy_index,
            replication,
            bins,
            summary: s,
            events,
        }
    }
}
