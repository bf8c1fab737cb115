//! What only the top tier has: arrivals from the traffic, the
//! dispatcher's line and an operator's RunTask calls, client-side rate
//! limiters, hedged requests and request deadlines. Validation refuses
//! hedging and rate limiters on the tiers below (the one rule in
//! `scenario::validate`), so these act on tier 0 alone.

use super::{Sim, Status, TOP};
use crate::model::clients::{Admit, Hedge, Release, Wake};
use crate::model::dispatcher::Pump;
use crate::model::event::Ev;
use crate::model::faults::ForceRun;
use crate::model::requests::{GiveUp, Phase};
use crate::policy::hedging::Hedging;
use crate::time::Nanos;

impl<'a> Sim<'a> {
    pub(super) fn on_arrival(&mut self, now: Nanos) {
        let client = self.traffic.arrival_client();
        self.open::<true>(now, TOP, client, None);
        if let Some(at) = self.traffic.next_arrival(now) {
            if at < self.run_end {
                self.q.schedule_in_stream(self.arrivals, at, Ev::Arrival);
            }
        }
    }

    /// A due request at the top meets its gate: the dispatcher's line
    /// when the scenario has one, else its client's rate limiter
    /// (validation refuses both at once).
    pub(super) fn gate(&mut self, now: Nanos, slot: u32) {
        let top = &mut self.tiers[TOP];
        match self.dispatcher.as_mut() {
            None => {
                let r = &top.reqs[slot as usize];
                match top.clients.limiter_admit(now, r.client, slot, r.gen) {
                    Admit::Go => {
                        top.meter.col.now.client_grants += 1;
                        self.send::<true>(now, TOP, slot);
                    }
                    Admit::Wait(wake) => {
                        top.reqs.wait_token(slot, now);
                        self.schedule_wake(wake);
                    }
                }
            }
            Some(d) => {
                d.enqueue(top.reqs.set_due(slot));
                self.pump = true;
            }
        }
    }

    /// Queues a rate limiter's wake-up, when there is one before the run's
    /// end. Inlined: every answer asks, and without a limiter the answer
    /// is always `None`.
    #[inline(always)]
    pub(super) fn schedule_wake(&mut self, wake: Option<Wake>) {
        if let Some(w) = wake {
            self.schedule_limiter(w);
        }
    }

    /// [`Sim::schedule_wake`]'s rare half: the wake-up as an event.
    #[inline(never)]
    fn schedule_limiter(&mut self, w: Wake) {
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

    /// A rate limiter woke up: the requests at the head of its queue go
    /// while it has tokens.
    #[inline(never)]
    pub(super) fn release_limited(&mut self, now: Nanos, index: u32) {
        loop {
            let top = &mut self.tiers[TOP];
            match top.clients.limiter_next(now, index, &top.reqs) {
                Release::Send(slot) => {
                    let waited = top.reqs.token_granted(slot, now);
                    let col = &mut top.meter.col.now;
                    col.client_grants += 1;
                    col.client_wait_ns += waited;
                    if top.reqs[slot as usize].counted {
                        top.meter.summary.client_wait_ns += waited;
                    }
                    self.send::<true>(now, TOP, slot);
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
    pub(super) fn hedge(&mut self, now: Nanos, slot: u32) {
        let Some(h) = self.tiers[TOP].policy.hedging else {
            return;
        };
        if !h.more_after(self.tiers[TOP].reqs[slot as usize].attempts) {
            return;
        }
        let top = &mut self.tiers[TOP];
        if h.throttles_when_scheduled() {
            // grpc-java asked the throttle when it scheduled this hedge.
            if top.clients.retries_off() {
                return self.stop_hedging(now, slot, GiveUp::RetriesDisabled);
            }
            return self.send::<true>(now, TOP, slot);
        }
        match top.clients.may_hedge(now, &mut top.reqs[slot as usize]) {
            Ok(()) => self.send::<true>(now, TOP, slot),
            Err(why) => self.stop_hedging(now, slot, why),
        }
    }

    /// The attempt just sent is a hedged request's: its next hedge is due
    /// `h.delay` from now, if the budget allows it when asked now
    /// (grpc-java) or always (A6, which asks when the hedge goes).
    pub(super) fn schedule_hedge(&mut self, now: Nanos, slot: u32, h: Hedging) {
        if h.throttles_when_scheduled() {
            let top = &mut self.tiers[TOP];
            if let Err(why) = top.clients.may_hedge(now, &mut top.reqs[slot as usize]) {
                // The attempt just sent is out: the request goes on.
                top.reqs.freeze_hedging(slot, why);
                return;
            }
        }
        self.arm_hedge(now, slot, h.delay);
    }

    /// No more hedges for the request in `slot` (`why` refused one); it is
    /// over, for that reason, when none of its attempts is still out.
    #[inline(never)]
    fn stop_hedging(&mut self, now: Nanos, slot: u32, why: GiveUp) {
        self.tiers[TOP].reqs.freeze_hedging(slot, why);
        if self.tiers[TOP].reqs.open_attempts(slot) == 0 {
            self.finish::<true>(now, TOP, slot, Some(why), Status::Unavailable);
        }
    }

    /// Pool mode: whether a client thread takes the request just opened
    /// in `slot` now (else it waits in the application queue).
    pub(super) fn take_thread(&mut self, now: Nanos, slot: u32, gen: u32) -> bool {
        self.app
            .as_mut()
            .is_none_or(|app| app.arrive(now, slot, gen))
    }

    /// Pool mode: the request in `slot`, which arrived at `start`, ended;
    /// a thread it held goes to the oldest waiting request once this step
    /// is over ([`Sim::pump_dispatcher`]), so a chain of requests that end
    /// at once never nests.
    pub(super) fn free_thread(&mut self, now: Nanos, slot: u32, start: Nanos) {
        if let Some(app) = self.app.as_mut() {
            if app.end(now, slot, start) {
                self.pump = true;
            }
        }
    }

    /// Pool mode: free threads take the oldest waiting requests, which are
    /// due now.
    #[inline(never)]
    fn serve_app_queue(&mut self, now: Nanos) {
        while let Some(slot) = self.app.as_mut().and_then(|app| app.next(now)) {
            self.make_due::<true>(now, TOP, slot);
        }
    }

    /// Dispatches due tasks while tokens and concurrent slots allow, and
    /// wakes up again when the next token comes; in pool mode (which has
    /// no dispatcher), gives free threads their next requests.
    #[inline(never)]
    pub(super) fn pump_dispatcher(&mut self, now: Nanos) {
        if self.app.is_some() {
            self.serve_app_queue(now);
        }
        while let Some(d) = self.dispatcher.as_mut() {
            match d.next(now, &mut self.tiers[TOP].reqs) {
                Pump::Send(slot) => self.send::<true>(now, TOP, slot),
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
    pub(super) fn force_run(&mut self, now: Nanos, which: &ForceRun, per_minute: f64) {
        let Some(d) = self.dispatcher.as_mut() else {
            return;
        };
        let waiting = self.tiers[TOP].reqs.waiting_in_creation_order();
        let mut chosen: Vec<(Nanos, u32)> = which
            .select(&waiting)
            .into_iter()
            .map(|slot| (self.tiers[TOP].reqs.next_attempt_at(slot), slot))
            .collect();
        // Stable: equal times keep creation order.
        chosen.sort_by_key(|&(at, _)| at);
        let reqs = &self.tiers[TOP].reqs;
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
    pub(super) fn run_task(&mut self, now: Nanos) {
        let Some(d) = self.dispatcher.as_mut() else {
            return;
        };
        let reqs = &self.tiers[TOP].reqs;
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
        if self.tiers[TOP].reqs.hurry(slot) {
            if let Some(d) = self.dispatcher.as_mut() {
                d.force(&mut self.tiers[TOP].reqs[slot as usize]);
            }
            self.send::<true>(now, TOP, slot);
        }
    }

    /// The next hedge of the request in `slot` is due `after` from now.
    pub(super) fn arm_hedge(&mut self, now: Nanos, slot: u32, after: Nanos) {
        let at = now.saturating_add(after);
        self.tiers[TOP].reqs.arm_hedge(slot, at);
        if at < self.run_end {
            let gen = self.tiers[TOP].reqs[slot as usize].gen;
            self.q.schedule_at(at, Ev::Hedge { slot, gen });
        }
    }

    /// The current attempt is over for the client: its dispatcher slot frees.
    pub(super) fn release_dispatch(&mut self, slot: u32) {
        if let Some(d) = self.dispatcher.as_mut() {
            if d.release(&mut self.tiers[TOP].reqs[slot as usize]) {
                self.pump = true;
            }
        }
    }

    /// One attempt of a hedged request failed: the next hedge now, later,
    /// never, or the request fails.
    #[inline(never)]
    pub(super) fn on_hedge_failure(
        &mut self,
        now: Nanos,
        slot: u32,
        status: Status,
        pushback: Option<Nanos>,
    ) {
        let top = &mut self.tiers[TOP];
        let frozen = top.reqs.hedging_frozen(slot);
        let r = &mut top.reqs[slot as usize];
        match top
            .clients
            .on_hedge_failure(now, r, status, frozen, pushback)
        {
            Hedge::Fatal => self.finish::<true>(now, TOP, slot, Some(GiveUp::NotRetryable), status),
            Hedge::Now => self.send::<true>(now, TOP, slot),
            Hedge::After(d) => {
                self.arm_hedge(now, slot, d);
            }
            Hedge::Refused(why) => self.stop_hedging(now, slot, why),
            Hedge::Wait => {}
            Hedge::Commit => self.finish::<true>(now, TOP, slot, Some(GiveUp::Budget), status),
            Hedge::NoMore => {
                if self.tiers[TOP].reqs.open_attempts(slot) == 0 {
                    // Its last attempt out failed: hedging was stopped
                    // (for the reason that stopped it), or every hedge is
                    // out (the attempt limit).
                    let why = self.tiers[TOP]
                        .reqs
                        .frozen_why(slot)
                        .unwrap_or(GiveUp::Limits);
                    self.finish::<true>(now, TOP, slot, Some(why), status);
                }
            }
        }
    }

    /// The client gives up the whole request.
    #[inline(never)]
    pub(super) fn on_deadline(&mut self, now: Nanos, slot: u32, gen: u32) {
        if !self.tiers[TOP].reqs.is_open(slot, gen) {
            return;
        }
        let r = self.tiers[TOP].reqs[slot as usize];
        if r.phase == Phase::InFlight {
            let open = self.tiers[TOP].reqs.open_attempts(slot);
            self.tiers[TOP].clients.on_abandoned(now, r.client, open);
        }
        self.finish::<true>(
            now,
            TOP,
            slot,
            Some(GiveUp::Deadline),
            Status::DeadlineExceeded,
        );
    }
}
