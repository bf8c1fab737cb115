//! The `contention` backend: optimistic concurrency on one record, the
//! model of AWS's "Exponential Backoff and Jitter" experiment (2015).
//!
//! There are no workers and no queue. An attempt travels one network hop to
//! the record and reads its version; the client then sends its conditional
//! write, which reaches the record one network round trip (two more hops)
//! after the read. The write commits only when no other write committed in
//! between (the version is unchanged) and bumps the version; otherwise it
//! fails with `aborted`. The answer travels back one hop. So every attempt
//! costs one read and one write call, and the number of attempts is the
//! number of write calls AWS counted.
//!
//! The client side is the same as the queue backend's (`run.rs`): open,
//! closed and burst traffic, attempt timeouts and deadlines, the policy's
//! verdict and backoff, budgets and circuit breakers, operator actions, and
//! the same metrics accounting (every request ends exactly once). Faults
//! act on the record: during an `outage` reads and writes fail with its
//! status, during a `blackhole` they are never answered, an `errors` burst
//! fails that share of the writes that would have committed; `slowdown` and
//! `capacity` have nothing to act on. Time-series conventions: `offered` is
//! attempts reaching the record (reads), `goodput` requests that succeeded,
//! `wasted` writes that reached the record after their client had given up,
//! `queue_len` the number of transactions open between read and write, and
//! capacity is reported as 0 (the record has no throughput limit).

use super::dist::Dist;
use super::faults::{self, ActionState, FaultState};
use super::traffic::{ArrivalClock, Profile, SortedUniforms};
use crate::engine::{stream, EventQueue, SimRng, Stream};
use crate::metrics::collector::Collector;
use crate::metrics::quantile::LogHistogram;
use crate::metrics::{recovery, RunResult, RunSummary};
use crate::policy::breaker::Breaker;
use crate::policy::budget::Budget;
use crate::policy::{Policy, RetryVerdict};
use crate::scenario::spec::{BudgetScope, BudgetSpec, Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::{secs, Nanos};
use rand::Rng;

/// One attempt of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Job {
    slot: u32,
    gen: u32,
    attempt: u32,
}

/// Everything that can happen in a contention run.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// The next open-mode or burst arrival.
    Arrival,
    /// A closed-mode client sends its next request.
    ClientNext { client: u32 },
    /// A backoff timer fired: send the next attempt.
    Send { slot: u32, gen: u32 },
    /// An attempt reaches the record and reads its version.
    Read(Job),
    /// The attempt's conditional write reaches the record; it commits only
    /// if the record still has `version`.
    Write(Job, u64),
    /// An answer reaches the client.
    Response(Job, Status),
    /// The client gives up waiting for an attempt.
    AttemptTimeout(Job),
    /// The client gives up the whole request.
    Deadline { slot: u32, gen: u32 },
    /// A fault or operator action starts or ends.
    Edge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Free,
    InFlight,
    Backoff,
}

#[derive(Clone, Copy, Debug)]
struct Request {
    gen: u32,
    attempts: u32,
    client: u32,
    phase: Phase,
    counted: bool,
    start: Nanos,
    prev_delay: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Succeeded,
    Failed,
    Dropped,
}

/// The retry-limiting state of one client (or of all, when global).
struct ClientGate {
    budget: Option<Budget>,
    breaker: Option<Breaker>,
}

struct Sim<'a> {
    spec: &'a ScenarioSpec,
    policy: &'a Policy,
    q: EventQueue<Ev>,
    run_end: Nanos,
    warmup: Nanos,

    reqs: Vec<Request>,
    free: Vec<u32>,

    /// The record's version: the number of committed writes.
    version: u64,
    /// Transactions between their read and their write.
    open: u64,

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
    rng_network: SimRng,
    rng_backoff: SimRng,
    rng_faults: SimRng,
    rng_clients: SimRng,

    budget_global: bool,
    breaker_global: bool,
    gates: Vec<ClientGate>,

    col: Collector,
    summary: RunSummary,
    latency: LogHistogram,
    last_success: Option<Nanos>,
}

/// Simulates policy `policy_index` of a `contention`-backend `scenario`,
/// replication `replication`: the contention counterpart of
/// [`super::run::simulate`], with the same result shape and accounting.
pub fn simulate_contention(
    scenario: &Scenario,
    policy_index: usize,
    replication: u32,
) -> RunResult {
    let policy = &scenario.policies[policy_index];
    let mut sim = Sim::new(&scenario.spec, policy, replication);
    sim.start();
    sim.run();
    sim.into_result(policy_index, replication)
}

impl<'a> Sim<'a> {
    fn new(spec: &'a ScenarioSpec, policy: &'a Policy, replication: u32) -> Sim<'a> {
        let seed = spec.seed;
        let t = &spec.traffic;
        let run_end = spec.duration.ns();
        let global = |b: &BudgetSpec| {
            matches!(
                b,
                BudgetSpec::TokenBucket {
                    scope: BudgetScope::Global,
                    ..
                } | BudgetSpec::Ratio {
                    scope: BudgetScope::Global,
                    ..
                } | BudgetSpec::Quota {
                    scope: BudgetScope::Global,
                    ..
                }
            )
        };
        let budget_global = policy.budget.as_ref().is_some_and(global);
        let breaker_global = policy
            .breaker
            .as_ref()
            .is_some_and(|br| br.scope == BudgetScope::Global);
        let needs_gates = policy.budget.is_some() || policy.breaker.is_some();
        let gate_count = if !needs_gates {
            0
        } else if budget_global && (breaker_global || policy.breaker.is_none()) {
            1
        } else {
            t.clients.max(1) as usize
        };
        let gates = (0..gate_count)
            .map(|_| ClientGate {
                budget: policy.budget.as_ref().map(Budget::new),
                breaker: policy.breaker.as_ref().map(Breaker::new),
            })
            .collect();
        let mut q = EventQueue::new();
        for d in [t.attempt_timeout, t.deadline].into_iter().flatten() {
            q.register_lane(d.ns());
        }
        let network = t.network_delay.as_ref().map(Dist::new);
        if let Some(c) = network.and_then(|n| n.constant_value()) {
            q.register_lane(c);
            q.register_lane(c.saturating_mul(2));
        }
        Sim {
            spec,
            policy,
            q,
            run_end,
            warmup: spec.warmup.ns(),
            reqs: Vec::new(),
            free: Vec::new(),
            version: 0,
            open: 0,
            network,
            think: t.think_time.as_ref().map(Dist::new),
            attempt_timeout: t.attempt_timeout.map(|d| d.ns()),
            deadline: t.deadline.map(|d| d.ns()),
            clients: t.clients.max(1),
            fault: faults::state_at(&[], 0, 0),
            actions: ActionState::default(),
            edges: faults::edges(&spec.faults, &spec.actions),
            next_edge: 0,
            arrivals: None,
            burst: None,
            rng_arrivals: stream(seed, replication, Stream::Arrivals),
            rng_network: stream(seed, replication, Stream::Network),
            rng_backoff: stream(seed, replication, Stream::Backoff),
            rng_faults: stream(seed, replication, Stream::Faults),
            rng_clients: stream(seed, replication, Stream::Clients),
            budget_global,
            breaker_global,
            gates,
            col: Collector::new(spec.bin.ns(), run_end),
            summary: RunSummary::default(),
            latency: LogHistogram::new(),
            last_success: None,
        }
    }

    fn start(&mut self) {
        self.col.set_capacity(0, 0.0);
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

    /// One network hop.
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
                    self.send_attempt(now, slot);
                }
            }
            Ev::Read(job) => self.on_read(now, job),
            Ev::Write(job, version) => self.on_write(now, job, version),
            Ev::Response(job, status) => {
                if self.is_current(job) {
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
                    self.col.now.timeouts += 1;
                    self.failure(now, job.slot, Status::DeadlineExceeded, true);
                }
            }
            Ev::Deadline { slot, gen } => {
                let r = &self.reqs[slot as usize];
                if r.gen == gen && r.phase != Phase::Free {
                    self.finish(now, slot, Outcome::Dropped);
                }
            }
            Ev::Edge => self.on_edge(now),
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

    fn gate(&mut self, client: u32, budget: bool) -> Option<&mut ClientGate> {
        let global = if budget {
            self.budget_global
        } else {
            self.breaker_global
        };
        let n = self.gates.len();
        if n == 0 {
            return None;
        }
        let i = if global || n == 1 {
            0
        } else {
            client as usize % n
        };
        self.gates.get_mut(i)
    }

    fn new_request(&mut self, now: Nanos, client: u32) {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.reqs.push(Request {
                    gen: 0,
                    attempts: 0,
                    client: 0,
                    phase: Phase::Free,
                    counted: false,
                    start: 0,
                    prev_delay: 0,
                });
                (self.reqs.len() - 1) as u32
            }
        };
        let counted = now >= self.warmup;
        let r = &mut self.reqs[slot as usize];
        r.attempts = 0;
        r.client = client;
        r.phase = Phase::InFlight;
        r.counted = counted;
        r.start = now;
        r.prev_delay = 0;
        let gen = r.gen;
        self.col.now.demand += 1;
        if counted {
            self.summary.requests += 1;
        }
        if let Some(b) = self.gate(client, true).and_then(|g| g.budget.as_mut()) {
            b.on_request(now);
        }
        if let Some(d) = self.deadline {
            self.q.schedule_after(d, Ev::Deadline { slot, gen });
        }
        self.send_attempt(now, slot);
    }

    fn send_attempt(&mut self, now: Nanos, slot: u32) {
        let client = self.reqs[slot as usize].client;
        if let Some(br) = self.gate(client, false).and_then(|g| g.breaker.as_mut()) {
            if !br.allow(now) {
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
        self.q.schedule_after(hop, Ev::Read(job));
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

    /// The attempt reaches the record: read the version, or fail under a
    /// fault or load shedding.
    fn on_read(&mut self, now: Nanos, job: Job) {
        self.col.now.offered += 1;
        let counted = now >= self.warmup;
        if counted {
            self.summary.offered += 1;
        }
        if self.fault.blackhole {
            return;
        }
        if let Some(status) = self.fault.outage {
            self.reply(job, status);
            return;
        }
        if self.actions.shed > 0.0 && self.rng_faults.random::<f64>() < self.actions.shed {
            self.col.now.rejected += 1;
            self.summary.rejected += counted as u64;
            self.reply(job, self.spec.backend.reject_status);
            return;
        }
        self.open += 1;
        self.col.set_queue_len(self.open);
        let round_trip = self.net().saturating_add(self.net());
        self.q
            .schedule_after(round_trip, Ev::Write(job, self.version));
    }

    /// The conditional write reaches the record.
    fn on_write(&mut self, now: Nanos, job: Job, read_version: u64) {
        self.open -= 1;
        self.col.set_queue_len(self.open);
        let counted = now >= self.warmup;
        if counted {
            self.summary.served += 1;
        }
        let current = self.is_current(job);
        if !current {
            self.col.now.wasted += 1;
            self.summary.wasted += counted as u64;
        }
        if self.fault.blackhole {
            return;
        }
        let status = if let Some(status) = self.fault.outage {
            status
        } else if read_version != self.version {
            Status::Aborted
        } else {
            match self.write_error() {
                Some(status) => status,
                None => {
                    self.version += 1;
                    Status::Ok
                }
            }
        };
        if current {
            self.reply(job, status);
        }
    }

    /// The status of a write that would commit, when an error burst hits it.
    fn write_error(&mut self) -> Option<Status> {
        for i in 0..self.fault.errors.len() {
            let (rate, status) = self.fault.errors[i];
            if self.rng_faults.random::<f64>() < rate {
                return Some(status);
            }
        }
        None
    }

    fn succeed(&mut self, now: Nanos, slot: u32) {
        let r = self.reqs[slot as usize];
        if let Some(g) = self.gate(r.client, true).and_then(|g| g.budget.as_mut()) {
            g.on_success(now, r.attempts > 1);
        }
        if let Some(br) = self.gate(r.client, false).and_then(|g| g.breaker.as_mut()) {
            br.record(now, true);
        }
        let latency = now - r.start;
        self.col.now.goodput += 1;
        self.col.record_latency(latency);
        if r.counted {
            self.latency.record(latency);
            self.last_success = Some(now);
        }
        self.finish(now, slot, Outcome::Succeeded);
    }

    fn failure(&mut self, now: Nanos, slot: u32, status: Status, timeout: bool) {
        let r = self.reqs[slot as usize];
        if let Some(br) = self.gate(r.client, false).and_then(|g| g.breaker.as_mut()) {
            br.record(now, false);
        }
        let verdict = self.policy.verdict(status, r.attempts, now - r.start);
        if verdict != RetryVerdict::NotRetryable {
            if let Some(b) = self.gate(r.client, true).and_then(|g| g.budget.as_mut()) {
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
                if let Some(b) = self.gate(r.client, true).and_then(|g| g.budget.as_mut()) {
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
                let delay = self
                    .policy
                    .retry_delay(req.attempts, &mut req.prev_delay, u);
                req.phase = Phase::Backoff;
                let gen = req.gen;
                self.col.retrying += 1;
                self.q.schedule_after(delay, Ev::Send { slot, gen });
            }
        }
    }

    fn finish(&mut self, _now: Nanos, slot: u32, outcome: Outcome) {
        let r = self.reqs[slot as usize];
        debug_assert!(r.phase != Phase::Free, "a request ended twice");
        if r.phase == Phase::Backoff {
            self.col.retrying -= 1;
        }
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
        let req = &mut self.reqs[slot as usize];
        req.phase = Phase::Free;
        req.gen = req.gen.wrapping_add(1);
        self.free.push(slot);
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
        self.fault = faults::state_at(&self.spec.faults, 0, now);
        self.actions = faults::actions_at(&self.spec.actions, now);
    }

    fn into_result(mut self, policy_index: usize, replication: u32) -> RunResult {
        for r in &self.reqs {
            if r.phase != Phase::Free && r.counted {
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
        // The record has no throughput limit.
        s.capacity_rps = 0.0;
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
        s.last_success_s = self.last_success.map(secs);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(clients: u32, extra: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "c", "duration": "60s", "bin": "100ms",
                "traffic": {{"clients": {clients}, "mode": "burst",
                  "network_delay": {{"constant": {{"value": "10ms"}}}} {extra} }},
                "backend": {{"kind": "contention"}},
                "policies": [{{"name": "retry", "max_attempts": 0,
                  "backoff": {{"constant": {{"delay": "0s"}}}},
                  "retry_on": ["aborted"]}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn one_client_commits_with_one_attempt_after_two_round_trips() {
        let r = simulate_contention(&scenario(1, ""), 0, 0);
        let s = &r.summary;
        assert_eq!((s.requests, s.succeeded, s.attempts), (1, 1, 1));
        assert_eq!(s.offered, 1);
        // Read at 10 ms, write at 30 ms, answer at 40 ms.
        assert_eq!(s.last_success_s, Some(0.04));
    }

    #[test]
    fn the_second_writer_aborts_and_commits_on_its_retry() {
        // Both read version 0 at 10 ms; the first write (30 ms) commits,
        // the second aborts (answer at 40 ms), retries at once: read at
        // 50 ms, write at 70 ms, answer at 80 ms.
        let r = simulate_contention(&scenario(2, ""), 0, 0);
        let s = &r.summary;
        assert_eq!((s.requests, s.succeeded, s.attempts), (2, 2, 3));
        assert_eq!(s.last_success_s, Some(0.08));
        let errors: f64 = r.bins.iter().map(|b| b.error_rps * 0.1).sum();
        assert!((errors - 1.0).abs() < 1e-9, "one aborted answer: {errors}");
    }

    #[test]
    fn without_aborted_in_retry_on_a_conflict_fails_the_request() {
        let mut s = scenario(2, "");
        s.policies[0].retry_on = crate::status::StatusSet::default_retry_on();
        let r = simulate_contention(&s, 0, 0);
        assert_eq!((r.summary.succeeded, r.summary.failed), (1, 1));
    }

    #[test]
    fn a_timed_out_attempt_is_wasted_and_every_request_ends_once() {
        let s = scenario(30, r#", "attempt_timeout": "25ms", "deadline": "2s""#);
        let r = simulate_contention(&s, 0, 0);
        let m = &r.summary;
        // Every attempt times out before its answer (40 ms): nothing succeeds.
        assert_eq!(m.succeeded, 0);
        assert_eq!(m.dropped + m.unfinished + m.failed, 30);
        assert_eq!(m.wasted, m.served);
        assert!(m.served > 0);
    }

    #[test]
    fn runs_are_deterministic() {
        let mut s = scenario(40, "");
        s.spec.traffic.network_delay = Some(crate::scenario::spec::DistSpec::Normal {
            mean: crate::time::Dur::from_millis(10),
            stddev: crate::time::Dur::from_millis(2),
        });
        assert_eq!(simulate_contention(&s, 0, 3), simulate_contention(&s, 0, 3));
        assert_ne!(
            simulate_contention(&s, 0, 3).summary,
            simulate_contention(&s, 0, 4).summary
        );
    }
}
