//! The backend as one component: what happens to an attempt from the moment
//! it arrives until the backend answers it (or never does).
//!
//! Two kinds share this interface. The **queue** backend is a worker pool
//! (`pool.rs`) in front of a waiting room: an arriving attempt takes an idle
//! worker, else waits, else is rejected (answered at once, or once a worker
//! has paid `reject_cost`). A worker spends `admission_cost + service time`
//! on it (only the admission cost during an outage, or for an expired
//! attempt that `drop_expired` discards), then answers. The **contention**
//! backend is one record under optimistic concurrency (`record.rs`). The
//! **concurrency** backend (`concurrent.rs`) has no waiting room: an
//! arriving attempt is served at once (or rejected above
//! `max_concurrency`) and takes `base + per_request ×` the attempts already
//! in service; `drop_expired` discards, at no cost, an attempt whose client
//! gave up before it arrived (as the queue backend does when a worker would
//! start it); attempts in service are served to the end.
//!
//! Faults act here: the current [`FaultState`] decides outages, blackholes,
//! slowdowns, lost workers and error bursts; the operator's `shed_load`
//! rejects a share of arrivals at no cost.
//!
//! The backend never schedules events itself. Each call leaves what should
//! happen next in [`Backend::out`], in order — answers to send, workers that
//! became busy, contention writes on their way, attempts it is done with —
//! and the run turns those into events (and tells the requests). Whether a client still waits for an attempt (it may have
//! timed out) decides whether work is wasted; the backend asks the
//! [`Requests`] for that and never changes them.

use super::concurrent::Server;
use super::dist::Dist;
use super::faults::FaultState;
use super::meter::Meter;
use super::pool::{Next, Pool, Work, WorkerState};
use super::record::Record;
use super::requests::{Job, Requests};
use crate::engine::SimRng;
use crate::scenario::spec::{BackendKind, BackendSpec, Discipline, DistSpec, UslSpec};
use crate::status::Status;
use crate::time::{ns_f64, trunc_ns, Nanos, NS_PER_SEC};
use rand::Rng;

/// Something the backend wants to happen, in the order it was decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Effect {
    /// Worker `worker` is busy for `after`; its completion carries `wgen`.
    Busy {
        /// The worker.
        worker: u32,
        /// Its generation, for the completion event.
        wgen: u32,
        /// How long the work takes.
        after: Nanos,
    },
    /// A contention transaction read the record; its conditional write
    /// reaches the record one network round trip later.
    RoundTrip {
        /// The transaction, for the write event.
        txn: u32,
    },
    /// Worker `worker` served `job` and now waits, still busy, for its
    /// calls to the tier below; [`Backend::release`] ends the wait.
    Hold {
        /// The worker (the slot in service, for a concurrency backend).
        worker: u32,
        /// Its generation, for [`Backend::release`].
        wgen: u32,
        /// The attempt it serves.
        job: Job,
    },
    /// The backend is done with this attempt: answers it with `reply` (one
    /// network hop away) when there is one for a client still waiting,
    /// then settles it. `completed`: it served the attempt successfully
    /// (the work was done), whether or not its client still waited. Every
    /// attempt that reaches the backend is settled once.
    Settle {
        /// The attempt.
        job: Job,
        /// Served successfully.
        completed: bool,
        /// The answer to send back, if any.
        reply: Option<Status>,
        /// The answer is a failure sent after response headers (an
        /// `outage` with `headers_first`): a policy with
        /// `commit_on_headers` neither retries nor hedges it.
        committed: bool,
    },
}

impl Effect {
    /// The answer this effect gives a waiting client, if any, and
    /// whether it came after response headers.
    pub fn answer(&self) -> Option<(Job, Status, bool)> {
        match *self {
            Effect::Settle {
                job,
                reply: Some(status),
                committed,
                ..
            } => Some((job, status, committed)),
            _ => None,
        }
    }
}

/// Which kind of backend, with its state.
#[derive(Clone, Debug)]
enum Kind {
    Queue(Pool),
    Contention(Record),
    Concurrency(Server),
}

/// What the faults' worker count means for the backend of `spec`: its
/// workers (1 for the contention backend), or for the concurrency backend
/// its `max_concurrency` (`u32::MAX`: unlimited), which a capacity fault
/// lowers.
pub fn base_workers(spec: &BackendSpec) -> u32 {
    match spec.kind {
        BackendKind::Concurrency => spec.max_concurrency.unwrap_or(u32::MAX),
        _ => spec.workers.unwrap_or(1),
    }
}

/// The backend of one run.
#[derive(Clone, Debug)]
pub struct Backend {
    kind: Kind,
    service: Dist,
    admission: Nanos,
    reject_cost: Nanos,
    reject_status: Status,
    drop_expired: bool,
    retry_after: Option<Nanos>,
    base_workers: u32,
    usl: Option<UslSpec>,
    fault: FaultState,
    /// Share of arrivals rejected at no cost (operator's `shed_load`).
    shed: f64,
    rng_service: SimRng,
    rng_faults: SimRng,
    /// A tier below this one: a served attempt holds its worker for the
    /// calls to it ([`Effect::Hold`]).
    calls_down: bool,
    /// Per worker (or slot in service) holding for calls below: whether
    /// its attempt counted as served (its service ended after the warm-up),
    /// so that its waste, known only when the calls end, is counted alike.
    held_counted: Vec<bool>,
    /// What the last calls decided, oldest first; the run drains it.
    pub out: Vec<Effect>,
}

impl Backend {
    /// The backend `spec` describes, with no fault active.
    pub fn new(spec: &BackendSpec, rng_service: SimRng, rng_faults: SimRng) -> Backend {
        let workers = base_workers(spec);
        let kind = match spec.kind {
            BackendKind::Queue => Kind::Queue(Pool::new(
                workers,
                spec.queue_limit.unwrap_or(u64::MAX),
                spec.discipline == Discipline::Lifo,
            )),
            BackendKind::Contention => Kind::Contention(Record::default()),
            BackendKind::Concurrency => Kind::Concurrency(Server::new(
                spec.base.unwrap_or_default().ns(),
                spec.per_request.unwrap_or_default().ns(),
            )),
        };
        let zero = DistSpec::Constant {
            value: Default::default(),
        };
        Backend {
            kind,
            service: Dist::new(spec.service_time.as_ref().unwrap_or(&zero)),
            admission: spec.admission_cost.ns(),
            reject_cost: spec.reject_cost.ns(),
            reject_status: spec.reject_status,
            drop_expired: spec.drop_expired,
            retry_after: spec.retry_after.map(|d| d.ns()),
            base_workers: workers,
            usl: spec.usl,
            fault: FaultState::healthy(workers),
            shed: 0.0,
            rng_service,
            rng_faults,
            calls_down: false,
            held_counted: Vec::new(),
            out: Vec::new(),
        }
    }

    /// This backend calls a tier below it: every served attempt holds its
    /// worker until [`Backend::release`].
    pub fn set_calls_down(&mut self) {
        self.calls_down = true;
    }

    /// Its callers tell it when they stop waiting (`propagate_cancel`): an
    /// attempt nobody waits for any more is dropped when a worker would
    /// start it, as with `drop_expired`.
    pub fn set_drop_cancelled(&mut self) {
        self.drop_expired = true;
    }

    /// Requests per second `workers` workers serve at a service time
    /// multiplied by `slowdown` (and by the USL factor with every worker
    /// busy); 0 for the contention backend (a record has no throughput
    /// limit to speak of). For the concurrency backend, `workers` is the
    /// concurrency limit: `M` attempts in service each taking
    /// `base + per_request·(M−1)` serve `M / that`; unlimited, the peak as
    /// `M` grows, `1 / per_request`.
    fn capacity(&self, workers: u32, slowdown: f64) -> f64 {
        match &self.kind {
            Kind::Contention(_) => return 0.0,
            Kind::Concurrency(server) => {
                if workers == u32::MAX {
                    let per = server.time_at(2.0) - server.time_at(1.0);
                    return if per > 0.0 {
                        NS_PER_SEC as f64 / (per * slowdown)
                    } else {
                        f64::INFINITY
                    };
                }
                let m = workers as f64;
                let cost = self.admission as f64 + server.time_at(m) * slowdown;
                return if m == 0.0 {
                    0.0
                } else if cost > 0.0 {
                    m * NS_PER_SEC as f64 / cost
                } else {
                    f64::INFINITY
                };
            }
            Kind::Queue(_) => {}
        }
        let mut service = self.service.mean() * slowdown;
        if let Some(usl) = self.usl {
            service *= usl.factor(workers as f64);
        }
        let cost = self.admission as f64 + service;
        if cost > 0.0 {
            workers as f64 * NS_PER_SEC as f64 / cost
        } else {
            f64::INFINITY
        }
    }

    /// The capacity without faults (requests/s; 0 when it cannot be
    /// stated), for the summary.
    pub fn nominal_capacity(&self) -> f64 {
        let c = self.capacity(self.base_workers, 1.0);
        if c.is_finite() {
            c
        } else {
            0.0
        }
    }

    /// Workers available now and the capacity they give with the faults
    /// active now, for the time series.
    pub fn capacity_now(&self) -> (u64, f64) {
        let cap = if self.fault.outage.is_some() || self.fault.blackhole || self.fault.crashed {
            0.0
        } else {
            self.capacity(self.fault.workers, self.fault.slowdown)
        };
        if self.fault.workers == u32::MAX {
            // An unlimited concurrency backend: utilization is the share
            // of time something is in service (see `concurrency_levels`).
            return (1, cap);
        }
        (self.fault.workers as u64, cap)
    }

    /// The pushback the backend sends with `status` (`retry_after`, with
    /// `unavailable` and `resource_exhausted` answers); none for an attempt
    /// the client gave up on (`timeout`).
    pub fn pushback(&self, status: Status, timeout: bool) -> Option<Nanos> {
        if timeout || !matches!(status, Status::Unavailable | Status::ResourceExhausted) {
            return None;
        }
        self.retry_after
    }

    /// The operator sheds `fraction` of arrivals from now on.
    pub fn set_shed(&mut self, fraction: f64) {
        self.shed = fraction;
    }

    /// An attempt arrives.
    pub fn arrive(&mut self, now: Nanos, job: Job, reqs: &Requests, m: &mut Meter) {
        if self.fault.crashed {
            // Connection refused: nothing reaches the backend.
            self.settle(job, false, Some(Status::Unavailable));
            return;
        }
        m.col.now.offered += 1;
        let counted = m.counted(now);
        if counted {
            m.summary.offered += 1;
            m.col.peak_1s.hit(now);
        }
        if self.fault.blackhole {
            self.settle(job, false, None);
            return;
        }
        if self.shed > 0.0 && self.rng_faults.random::<f64>() < self.shed {
            m.col.now.rejected += 1;
            m.summary.rejected += counted as u64;
            self.settle(job, false, Some(self.reject_status));
            return;
        }
        let pool = match &mut self.kind {
            Kind::Contention(record) => {
                if let Some(status) = self.fault.outage {
                    let committed = self.fault.headers_first;
                    self.settle_as(job, false, Some(status), committed);
                    return;
                }
                let txn = record.read(job);
                m.col.set_queue_len(record.open());
                self.out.push(Effect::RoundTrip { txn });
                return;
            }
            Kind::Concurrency(_) => return self.arrive_concurrent(job, reqs, m, counted),
            Kind::Queue(pool) => pool,
        };
        if let Some(w) = pool.take_idle() {
            self.start_work(w, job, reqs, m);
        } else if pool.enqueue(job) {
            m.col.set_queue_len(pool.queue_len());
            m.summary.waited += counted as u64;
        } else {
            m.col.now.rejected += 1;
            m.summary.rejected += counted as u64;
            if self.reject_cost == 0 {
                self.settle(job, false, Some(self.reject_status));
            } else {
                pool.push_reject(job);
            }
        }
    }

    /// Concurrency backend: an attempt arrives (not blackholed or shed).
    fn arrive_concurrent(&mut self, job: Job, reqs: &Requests, m: &mut Meter, counted: bool) {
        if self.drop_expired && !reqs.is_current(job) {
            self.settle(job, false, None);
            return;
        }
        let Kind::Concurrency(server) = &mut self.kind else {
            unreachable!("only the concurrency backend")
        };
        if server.in_service() >= u64::from(self.fault.workers) {
            m.col.now.rejected += 1;
            m.summary.rejected += counted as u64;
            self.settle(job, false, Some(self.reject_status));
            return;
        }
        let (work, cost) = if let Some(status) = self.fault.outage {
            (
                Work::Fail(job, status, self.fault.headers_first),
                self.admission,
            )
        } else {
            let mut service = server.service_time();
            if self.fault.slowdown != 1.0 {
                service = trunc_ns(ns_f64(service) * self.fault.slowdown);
            }
            (Work::Serve(job), self.admission.saturating_add(service))
        };
        let (slot, wgen) = server.start(work);
        self.concurrency_levels(m);
        self.out.push(Effect::Busy {
            worker: slot,
            wgen,
            after: cost,
        });
    }

    /// Concurrency backend: the levels of the time series. `queue_len` is
    /// the attempts in service; utilization is in service ÷ the
    /// concurrency limit, or without a limit the share of time anything is
    /// in service.
    fn concurrency_levels(&self, m: &mut Meter) {
        let Kind::Concurrency(server) = &self.kind else {
            return;
        };
        let n = server.in_service();
        m.col.set_queue_len(n);
        m.col.set_busy(if self.fault.workers == u32::MAX {
            n.min(1)
        } else {
            n
        });
    }

    /// `job` failed with `status`: answered if its client still waits,
    /// and settled.
    #[inline]
    fn fail(&mut self, job: Job, status: Status, reqs: &Requests) {
        let reply = reqs.is_current(job).then_some(status);
        self.settle(job, false, reply);
    }

    /// Done with `job`: answered with `reply` if given, then settled.
    #[inline]
    fn settle(&mut self, job: Job, completed: bool, reply: Option<Status>) {
        self.settle_as(job, completed, reply, false);
    }

    /// [`Backend::settle`], saying whether the answer came after response
    /// headers (`committed`).
    #[inline]
    fn settle_as(&mut self, job: Job, completed: bool, reply: Option<Status>, committed: bool) {
        self.out.push(Effect::Settle {
            job,
            completed,
            reply,
            committed,
        });
    }

    fn pool(&mut self) -> &mut Pool {
        match &mut self.kind {
            Kind::Queue(pool) => pool,
            _ => unreachable!("only the queue backend has workers"),
        }
    }

    /// Worker `w` starts on `job`: serves it, or only admits it (outage,
    /// expired attempt).
    fn start_work(&mut self, w: u32, job: Job, reqs: &Requests, m: &mut Meter) {
        let (work, cost) = if let Some(status) = self.fault.outage {
            (
                Work::Fail(job, status, self.fault.headers_first),
                self.admission,
            )
        } else if self.drop_expired && !reqs.is_current(job) {
            (Work::Discard(job), self.admission)
        } else {
            let mut service = self.service.sample(&mut self.rng_service);
            if self.fault.slowdown != 1.0 {
                service = trunc_ns(ns_f64(service) * self.fault.slowdown);
            }
            if let Some(usl) = self.usl {
                // The workers busy once this one starts, itself included.
                let n = self.pool().busy() + 1;
                let factor = usl.factor(n as f64);
                if factor != 1.0 {
                    service = trunc_ns(ns_f64(service) * factor);
                }
            }
            (Work::Serve(job), self.admission.saturating_add(service))
        };
        self.occupy(w, work, cost, m);
    }

    fn occupy(&mut self, w: u32, work: Work, cost: Nanos, m: &mut Meter) {
        let pool = self.pool();
        let wgen = pool.occupy(w, work);
        m.col.set_busy(pool.busy());
        self.out.push(Effect::Busy {
            worker: w,
            wgen,
            after: cost,
        });
    }

    /// Worker `w` finished the work it started with generation `wgen`
    /// (stale when the work was taken away since).
    pub fn worker_done(&mut self, now: Nanos, w: u32, wgen: u32, reqs: &Requests, m: &mut Meter) {
        if let Kind::Concurrency(server) = &mut self.kind {
            // `w` is the attempt's slot in service.
            if self.calls_down {
                if let Some(Work::Serve(job)) = server.peek(w, wgen) {
                    self.hold(now, w, wgen, job, m);
                    return;
                }
            }
            if let Some(work) = server.finish(w, wgen) {
                self.concurrency_levels(m);
                self.complete(now, work, reqs, m);
            }
            return;
        }
        let worker = self.pool().worker(w);
        if worker.wgen != wgen || worker.state != WorkerState::Busy {
            return;
        }
        if let (true, Work::Serve(job)) = (self.calls_down, worker.work) {
            self.hold(now, w, wgen, job, m);
            return;
        }
        self.complete(now, worker.work, reqs, m);
        self.worker_free(w, reqs, m);
    }

    /// Worker `w` has served `job` and now calls the tier below, still busy.
    fn hold(&mut self, now: Nanos, w: u32, wgen: u32, job: Job, m: &mut Meter) {
        let counted = m.counted(now);
        m.summary.served += counted as u64;
        let w_index = w as usize;
        if self.held_counted.len() <= w_index {
            self.held_counted.resize(w_index + 1, false);
        }
        self.held_counted[w_index] = counted;
        self.out.push(Effect::Hold {
            worker: w,
            wgen,
            job,
        });
    }

    /// The wait of worker `w` (generation `wgen`) on the tier below is
    /// over: its calls ended with `result` (`ok` when every call
    /// succeeded, else the status of the one that failed), or `None` when
    /// the worker stopped waiting because its caller's attempt timed out.
    /// The attempt is answered if its client still waits (an `ok` may
    /// still meet an error burst of this tier), and the worker is free.
    /// Stale (nothing happens) when a crash took the work away since.
    pub fn release(
        &mut self,
        w: u32,
        wgen: u32,
        result: Option<Status>,
        reqs: &Requests,
        m: &mut Meter,
    ) {
        let job = match &mut self.kind {
            Kind::Concurrency(server) => match server.finish(w, wgen) {
                Some(Work::Serve(job)) => job,
                _ => return,
            },
            Kind::Queue(pool) => {
                let worker = pool.worker(w);
                match worker.work {
                    Work::Serve(job)
                        if worker.wgen == wgen && worker.state == WorkerState::Busy =>
                    {
                        job
                    }
                    _ => return,
                }
            }
            Kind::Contention(_) => unreachable!("a contention backend calls no tier"),
        };
        if reqs.is_current(job) {
            let status = match result {
                Some(Status::Ok) => self.served_error().unwrap_or(Status::Ok),
                Some(status) => status,
                None => Status::DeadlineExceeded,
            };
            self.settle(job, status == Status::Ok, Some(status));
        } else {
            m.col.now.wasted += 1;
            // Counted as its service was: wasted work is part of the
            // served work across the warm-up's end too.
            if self.held_counted.get(w as usize).copied().unwrap_or(false) {
                m.summary.wasted += 1;
            }
            self.settle(job, result == Some(Status::Ok), None);
        }
        match self.kind {
            Kind::Concurrency(_) => self.concurrency_levels(m),
            _ => self.worker_free(w, reqs, m),
        }
    }

    /// Work is over: answers the attempt if its client still waits, and
    /// settles it.
    fn complete(&mut self, now: Nanos, work: Work, reqs: &Requests, m: &mut Meter) {
        match work {
            Work::Serve(job) => {
                if m.counted(now) {
                    m.summary.served += 1;
                }
                if reqs.is_current(job) {
                    let status = self.served_error().unwrap_or(Status::Ok);
                    self.settle(job, status == Status::Ok, Some(status));
                } else {
                    m.col.now.wasted += 1;
                    if m.counted(now) {
                        m.summary.wasted += 1;
                    }
                    // Nobody waits for the answer, but the work was done.
                    self.settle(job, true, None);
                }
            }
            Work::Fail(job, status, committed) => {
                let reply = reqs.is_current(job).then_some(status);
                self.settle_as(job, false, reply, committed);
            }
            Work::Reject(job) => {
                self.fail(job, self.reject_status, reqs);
            }
            Work::Discard(job) => self.settle(job, false, None),
        }
    }

    /// The status an error burst gives a served attempt, if one hits it.
    fn served_error(&mut self) -> Option<Status> {
        for &(rate, status) in &self.fault.errors {
            if self.rng_faults.random::<f64>() < rate {
                return Some(status);
            }
        }
        None
    }

    /// A worker's work is over: it pays for a pending rejection, takes the
    /// next waiting attempt, or rests (see `pool.rs`).
    fn worker_free(&mut self, w: u32, reqs: &Requests, m: &mut Meter) {
        let pool = self.pool();
        let next = pool.free(w);
        pool.read_ahead(next, reqs);
        match next {
            Next::Reject(job) => self.occupy(w, Work::Reject(job), self.reject_cost, m),
            Next::Take(job) => {
                m.col.set_queue_len(pool.queue_len());
                self.start_work(w, job, reqs, m);
            }
            Next::Rest => m.col.set_busy(pool.busy()),
        }
    }

    /// Contention backend: transaction `txn`'s conditional write reaches
    /// the record. It commits if nobody committed since its read, else it
    /// fails with `aborted`.
    pub fn write(&mut self, now: Nanos, txn: u32, reqs: &Requests, m: &mut Meter) {
        let counted = m.counted(now);
        m.summary.served += counted as u64;
        let job = match &self.kind {
            Kind::Contention(record) => record.job(txn),
            _ => unreachable!("only the contention backend writes"),
        };
        let current = reqs.is_current(job);
        if !current {
            m.col.now.wasted += 1;
            m.summary.wasted += counted as u64;
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
        let Kind::Contention(record) = &mut self.kind else {
            unreachable!("checked above")
        };
        let outcome = record.write(txn, blocked.is_none() && error.is_none());
        m.col.set_queue_len(record.open());
        let status = match (blocked, outcome) {
            (Some(None), _) => None,
            (Some(Some(status)), _) => Some(status),
            (None, Some(false)) => Some(Status::Aborted),
            (None, Some(true)) => Some(Status::Ok),
            (None, None) => Some(error.unwrap_or(Status::Internal)),
        };
        let completed = blocked.is_none() && outcome == Some(true);
        let committed = blocked.is_some() && self.fault.headers_first;
        self.settle_as(job, completed, status.filter(|_| current), committed);
    }

    /// The faults change to `fault` at an edge: workers a capacity fault
    /// gave back start working again.
    pub fn set_faults(&mut self, fault: FaultState, reqs: &Requests, m: &mut Meter) {
        let workers = fault.workers;
        self.fault = fault;
        self.concurrency_levels(m);
        let Kind::Queue(pool) = &mut self.kind else {
            return;
        };
        if workers != pool.active() {
            for w in pool.set_active(workers) {
                self.worker_free(w, reqs, m);
            }
        }
    }

    /// A crash: every queued and in-service attempt fails at once with
    /// `status`.
    pub fn flush(&mut self, status: Status, reqs: &Requests, m: &mut Meter) {
        if let Kind::Concurrency(server) = &mut self.kind {
            for work in server.drain() {
                if let Work::Serve(job) = work {
                    self.fail(job, status, reqs);
                }
            }
            self.concurrency_levels(m);
            return;
        }
        let Kind::Queue(pool) = &mut self.kind else {
            return;
        };
        let queued = pool.drain_waiting();
        m.col.set_queue_len(0);
        for job in queued {
            self.fail(job, status, reqs);
        }
        for w in 0..self.pool().len() {
            let worker = self.pool().worker(w);
            if worker.state != WorkerState::Busy {
                continue;
            }
            if let Work::Serve(job) = worker.work {
                self.fail(job, status, reqs);
                self.worker_free(w, reqs, m);
            }
        }
    }
}
