//! The one lifecycle of a request, at every tier: opened, made due, sent,
//! served, answered (or timed out), then retried or finished.
//!
//! Tier 0 ([`TOP`]) is the top backend, whose requests come from the
//! scenario's clients; tier `k ≥ 1` is `downstream[k − 1]`, whose requests
//! are *calls* from the workers of tier `k − 1`. When a worker of tier `k`
//! has served an attempt and tier `k + 1` exists, the backend leaves an
//! [`Effect::Hold`]: the worker stays busy and opens `calls` requests at
//! tier `k + 1` at once (calls between tiers take no network time). Each
//! call lives the same life as a client's request: attempts, timeouts,
//! backoff, budget and breaker follow the tier's policy. The worker is
//! released ([`Backend::release`](crate::model::backend::Backend)) when
//! every call has succeeded (the attempt is answered `ok`, unless this
//! tier's own error burst strikes), when one call gives up (the attempt
//! fails with that call's last status), or when the attempt it serves
//! times out for its own caller (`HoldOver`). Calls still open then go on
//! for nobody, or, when tier `k + 1` has `propagate_cancel`, are
//! cancelled: they stop retrying, their waiting attempts are dropped when
//! reached, and a worker of tier `k + 1` waiting while it serves one is
//! released in turn — which cancels its own calls if tier `k + 2`
//! propagates too.
//!
//! What only the top has (the dispatcher and rate limiters that gate a
//! due request, the network, hedges, deadlines, closed-mode clients) is
//! reached from here through `top`.

use super::{Sim, Status, TOP};
use crate::model::backend::Effect;
use crate::model::clients::Decision;
use crate::model::event::Ev;
use crate::model::requests::{GiveUp, Job, Outcome, Phase};
use crate::model::tier::Caller;
use crate::time::{secs, Nanos};

/// The tier a lifecycle function runs for. Its hot functions take a
/// `const IS_TOP: bool` beside `k`: a caller that knows `k` is the top
/// passes `true`, and the function then reads `k` as the constant [`TOP`],
/// so every `k == TOP` test folds and the tier list is indexed at a
/// constant — most events of a run are the top's, and that path is about
/// 3 % fewer instructions. `false` works for any `k`, the top included
/// (the cold paths and the tiers below use it). Either way the same code
/// runs: a function is compiled once per flag, from one source.
#[inline(always)]
fn tier<const IS_TOP: bool>(k: usize) -> usize {
    debug_assert!(!IS_TOP || k == TOP, "IS_TOP with tier {k}");
    if IS_TOP {
        TOP
    } else {
        k
    }
}

impl<'a> Sim<'a> {
    /// A new request at tier `k`: from `client` at the top, or a call
    /// waited for by `caller` (a worker of tier `k − 1`, or nobody) below.
    /// Returns its slot.
    pub(super) fn open<const IS_TOP: bool>(
        &mut self,
        now: Nanos,
        k: usize,
        client: u32,
        caller: Option<Caller>,
    ) -> u32 {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        let counted = tier.meter.counted(now);
        let hedged = tier.policy.hedging.is_some();
        let slot = tier.reqs.open(client, now, counted, hedged);
        let gen = tier.reqs[slot as usize].gen;
        tier.meter.col.now.demand += 1;
        if counted {
            tier.meter.summary.requests += 1;
        }
        tier.clients
            .on_request(now, client, &mut tier.reqs[slot as usize].mark);
        if k == TOP {
            if let Some(d) = self.deadlines.as_mut() {
                d.set(&mut self.q, (slot, gen));
            }
            if let Some(s) = self.story.as_deref_mut() {
                s.opened(slot, now, client);
            }
        } else {
            tier.set_caller(slot, caller);
        }
        if k == TOP && self.app.is_some() && !self.take_thread(now, slot, gen) {
            // Pool mode: it waits in the application queue.
            return slot;
        }
        self.make_due::<IS_TOP>(now, k, slot);
        slot
    }

    /// A request is due for its next attempt: sends it, or, at the top,
    /// hands it to the dispatcher or its client's rate limiter when there
    /// is one ([`Sim::gate`]).
    #[inline(always)]
    pub(super) fn make_due<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, slot: u32) {
        let k = tier::<IS_TOP>(k);
        if k == TOP && self.gated {
            self.gate(now, slot);
        } else {
            self.send::<IS_TOP>(now, k, slot);
        }
    }

    /// A backoff timer of tier `k` popped: the request is due again unless
    /// the timer is stale.
    #[inline(always)]
    pub(super) fn backoff_over<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, key: Job) {
        let k = tier::<IS_TOP>(k);
        if self.tiers[k].reqs.outgrow_cache() {
            self.read_ahead(k);
        }
        if self.tiers[k].reqs.backoff_over(key) {
            self.make_due::<IS_TOP>(now, k, key.slot);
        }
    }

    /// A backoff timer of tier `k` popped: when the slots of the next few
    /// timers have not been read yet, reads them in one batch
    /// ([`Requests::read_ahead`]), so that in a herd of retries each timer
    /// finds its request in cache. The next timers are the front of the
    /// fixed backoff's lane, or, for random delays, the events the heap
    /// pops soonest ([`EventQueue::heap_ahead`]). Only a hint: it changes
    /// nothing, and a timer popped from elsewhere merely shifts the count.
    ///
    /// [`Requests::read_ahead`]: crate::model::requests::Requests::read_ahead
    /// [`EventQueue::heap_ahead`]: crate::engine::EventQueue::heap_ahead
    #[inline(never)]
    fn read_ahead(&mut self, k: usize) {
        let tier = &mut self.tiers[k];
        let Some((skip, n)) = tier.backoff_read.took_one() else {
            return;
        };
        let slot = |ev: &Ev| match *ev {
            Ev::Send { tier, key } if usize::from(tier) == k => Some(key.slot),
            _ => None,
        };
        match tier.backoff_lane {
            Some(lane) => {
                let ahead = self.q.lane_ahead(lane, skip);
                tier.reqs.read_ahead(ahead.take(n).filter_map(slot));
            }
            None => {
                let ahead = self.q.heap_ahead(skip);
                tier.reqs.read_ahead(ahead.take(n).filter_map(slot));
            }
        }
    }

    /// The next attempt of the request in `slot` goes to tier `k`, unless
    /// an open breaker refuses it.
    pub(super) fn send<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, slot: u32) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        let r = &tier.reqs[slot as usize];
        let client = r.client;
        if !tier.clients.may_send(now, client, r.attempts == 0) {
            // Refused by an open breaker: fails fast, never reaches the
            // backend. A refused hedge only stops hedging while other
            // attempts are out.
            if tier.reqs.open_attempts(slot) > 0 {
                tier.reqs.freeze_hedging(slot, GiveUp::Breaker);
            } else {
                self.finish::<IS_TOP>(now, k, slot, Some(GiveUp::Breaker), Status::Unavailable);
            }
            return;
        }
        if k == TOP {
            if let Some(s) = self.story.as_deref_mut() {
                let hedge = tier.reqs.open_attempts(slot) > 0;
                s.sent(slot, now, tier.reqs[slot as usize].attempts + 1, hedge);
            }
        }
        if !tier.clients.connected(now, client) {
            self.fail_locally(now, k, slot);
            return;
        }
        let job = tier.start_attempt(slot, now);
        let instant = tier.instant;
        if !instant {
            let hop = self.network.hop();
            self.q.schedule_after(hop, Ev::AtBackend(job));
        }
        if let Some(t) = tier.timeouts.as_mut() {
            t.set(&mut self.q, job);
        }
        if let Some(h) = tier.policy.hedging {
            if h.more_after(job.attempt) {
                self.schedule_hedge(now, slot, h);
            }
        }
        if instant {
            // The attempt's timers are set: it reaches the backend now.
            self.arrive::<IS_TOP>(now, k, job);
        }
    }

    /// The request in `slot` at tier `k` makes an attempt while its
    /// client's channel is disconnected (a crash, `reconnect`): the attempt
    /// counts, fails at the client at once with `unavailable` (no backend
    /// load, no pushback) and goes through the policy like any failure.
    #[inline(never)]
    fn fail_locally(&mut self, now: Nanos, k: usize, slot: u32) {
        let tier = &mut self.tiers[k];
        let job = tier.start_attempt(slot, now);
        tier.meter.col.now.refused_locally += 1;
        if tier.meter.counted(now) {
            *tier.meter.summary.refused_locally.get_or_insert(0) += 1;
        }
        // Never sent: settled here, with nothing to serve.
        tier.reqs.settle(job, false);
        self.respond::<false>(now, k, job, Status::Unavailable, false, true, false);
    }

    /// An attempt reaches tier `k`'s backend.
    pub(super) fn arrive<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, job: Job) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        tier.backend.arrive(now, job, &tier.reqs, &mut tier.meter);
        self.apply_effects::<IS_TOP>(now, k);
    }

    /// A worker of tier `k` finishes what it was doing.
    pub(super) fn worker_done<const IS_TOP: bool>(
        &mut self,
        now: Nanos,
        k: usize,
        w: u32,
        wgen: u32,
    ) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        tier.backend
            .worker_done(now, w, wgen, &tier.reqs, &mut tier.meter);
        self.apply_effects::<IS_TOP>(now, k);
    }

    /// Turns what tier `k`'s backend decided into events, in the order
    /// decided. Where answers take no network time (always below the top)
    /// they are not events: they reach their callers once every effect is
    /// in place, in the order given.
    pub(super) fn apply_effects<const IS_TOP: bool>(&mut self, now: Nanos, k: usize) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        if tier.backend.out.is_empty() {
            // Nothing decided (an attempt that joined the queue, or one
            // a blackhole swallowed): the common case in an overload.
            return;
        }
        let instant = tier.instant;
        let mut out = std::mem::take(&mut tier.backend.out);
        for &effect in &out {
            match effect {
                Effect::Settle {
                    job,
                    completed,
                    reply,
                    committed,
                } => {
                    let tier = &mut self.tiers[k];
                    if let Some(status) = reply {
                        if status != Status::Ok && tier.meter.counted(now) {
                            tier.failed_answers += 1;
                        }
                        if !instant {
                            let hop = self.network.hop();
                            self.q
                                .schedule_after(hop, Ev::Response(job, status, committed));
                        }
                    }
                    let s = tier.reqs.settle(job, completed);
                    if s.duplicate && s.counted {
                        tier.meter.summary.duplicates += 1;
                    }
                }
                Effect::Busy {
                    worker,
                    wgen,
                    after,
                } => self.q.schedule_after(
                    after,
                    Ev::Done {
                        tier: k as u8,
                        worker,
                        wgen,
                    },
                ),
                Effect::RoundTrip { txn } => {
                    // Only a contention backend, only at the top.
                    let round_trip = self.network.hop().saturating_add(self.network.hop());
                    self.q.schedule_after(round_trip, Ev::Write { txn });
                }
                Effect::Hold { worker, wgen, job } => self.start_hold(now, k, worker, wgen, job),
            }
        }
        if instant {
            // Delivering an answer may end a request, release a calling
            // worker or send an attempt (a hedge, a call): their effects
            // are applied within, from lists of their own.
            for (job, status, committed) in out.iter().filter_map(Effect::answer) {
                self.answer_after_headers::<IS_TOP>(now, k, job, status, committed);
            }
        }
        out.clear();
        let tier = &mut self.tiers[k];
        if tier.backend.out.is_empty() {
            tier.backend.out = out;
        }
    }

    /// An attempt's timeout at tier `k` popped (see
    /// [`OldestFirst::popped`](crate::engine::OldestFirst::popped)).
    #[inline(always)]
    pub(super) fn timeout_popped<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, job: Job) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        if let Some(t) = tier.timeouts.as_mut() {
            let reqs = &tier.reqs;
            let event = |job| Ev::Timeout { tier: k as u8, job };
            t.popped(&mut self.q, job, now, |j| reqs.is_current(j), event);
        }
    }

    /// The caller at tier `k` stops waiting for an attempt: its attempt
    /// timeout fired (stale when the attempt was answered first).
    pub(super) fn time_out<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, job: Job) {
        let timeout = true;
        self.respond::<IS_TOP>(now, k, job, Status::DeadlineExceeded, timeout, false, false);
    }

    /// An answer from tier `k`'s backend reaches its caller; `committed`:
    /// it is a failure that came after response headers (an `outage` with
    /// `headers_first`).
    pub(super) fn answer_after_headers<const IS_TOP: bool>(
        &mut self,
        now: Nanos,
        k: usize,
        job: Job,
        status: Status,
        committed: bool,
    ) {
        self.respond::<IS_TOP>(now, k, job, status, false, false, committed);
    }

    /// What an attempt's answer ([`Sim::answer_after_headers`]), its
    /// timeout ([`Sim::time_out`]) or (`local`) a failure at the client,
    /// which brings no pushback, does at the caller; `committed`: a
    /// failure after response headers, which a policy with
    /// `commit_on_headers` neither retries nor hedges (gRFC A6).
    ///
    /// Inlined into its three callers (an answer, a timeout, a local
    /// failure), each of which fixes some of its flags: 1 % fewer
    /// instructions per event on a storm (benches/README.md).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn respond<const IS_TOP: bool>(
        &mut self,
        now: Nanos,
        k: usize,
        job: Job,
        status: Status,
        timeout: bool,
        local: bool,
        committed: bool,
    ) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        if !tier.reqs.is_current(job) {
            return;
        }
        let pushback = if local {
            None
        } else {
            tier.backend.pushback(status, timeout)
        };
        if k == TOP {
            if let Some(d) = self.dispatcher.as_mut() {
                if tier.reqs[job.slot as usize].dispatched {
                    d.on_result(now, status, timeout, pushback);
                }
            }
            if let Some(s) = self.story.as_deref_mut() {
                s.answered(job.slot, now, job.attempt, status, timeout);
            }
        }
        tier.reqs.attempt_over(job);
        let r = &mut tier.reqs[job.slot as usize];
        tier.clients.attempt_done(r, job.attempt);
        let client = r.client;
        let throttled = !timeout && status == Status::ResourceExhausted;
        let wake = tier.clients.limiter_response(now, client, throttled);
        self.schedule_wake(wake);
        if k == TOP {
            self.release_dispatch(job.slot);
        }
        if status == Status::Ok {
            self.succeed::<IS_TOP>(now, k, job.slot, job.attempt);
            return;
        }
        let tier = &mut self.tiers[k];
        if timeout {
            tier.meter.col.now.timeouts += 1;
        } else {
            tier.meter.col.now.errors += 1;
        }
        if committed && tier.policy.commit_on_headers {
            // The call is committed to this attempt: it fails, and any
            // hedges still out are abandoned with it.
            let r = &tier.reqs[job.slot as usize];
            tier.clients.on_committed_failure(now, r);
            self.finish::<IS_TOP>(now, k, job.slot, Some(GiveUp::NotRetryable), status);
            return;
        }
        if tier.policy.hedging.is_some() {
            self.on_hedge_failure(now, job.slot, status, pushback);
            return;
        }
        let r = &mut tier.reqs[job.slot as usize];
        match tier.clients.on_failure(now, r, status, timeout, pushback) {
            Decision::Retry(delay) => {
                let (key, delay) = tier.reqs.wait_backoff(job.slot, now, delay);
                if k == TOP {
                    if let Some(s) = self.story.as_deref_mut() {
                        s.backoff(job.slot, now, now.saturating_add(delay));
                    }
                }
                if k == TOP && self.dispatcher.is_some() {
                    tier.reqs.note_due(job.slot, now.saturating_add(delay));
                }
                self.q
                    .schedule_after(delay, Ev::Send { tier: k as u8, key });
            }
            Decision::GiveUp(why) => self.finish::<IS_TOP>(now, k, job.slot, Some(why), status),
        }
    }

    fn succeed<const IS_TOP: bool>(&mut self, now: Nanos, k: usize, slot: u32, attempt: u32) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        let r = tier.reqs[slot as usize];
        tier.clients.on_success(now, &r, attempt);
        let latency = now - r.start;
        tier.meter.col.now.goodput += 1;
        tier.meter.col.record_latency(latency);
        if r.counted {
            tier.meter.latency.record(latency);
            tier.meter.summary.last_success_s = Some(secs(now));
        }
        self.finish::<IS_TOP>(now, k, slot, None, Status::Ok);
    }

    /// The request in `slot` at tier `k` ends: it succeeded (`why` is
    /// `None`) or was given up for `why`, `status` being the last answer
    /// (what a worker waiting on a call answers its own caller with). Its
    /// counts; then, at the top, a closed-mode client's next request, and
    /// below, its caller learns how it went.
    pub(super) fn finish<const IS_TOP: bool>(
        &mut self,
        now: Nanos,
        k: usize,
        slot: u32,
        why: Option<GiveUp>,
        status: Status,
    ) {
        let k = tier::<IS_TOP>(k);
        let tier = &mut self.tiers[k];
        let open = tier.reqs.open_attempts(slot);
        let r = &mut tier.reqs[slot as usize];
        tier.clients.request_ended(r, open);
        let r = *r;
        if r.phase == Phase::Waiting && r.counted {
            tier.meter.summary.client_wait_ns += tier.reqs.waited(slot, now);
        }
        if k == TOP {
            self.release_dispatch(slot);
            if let Some(s) = self.story.as_deref_mut() {
                s.ended(slot, now, r.start, why);
            }
        }
        let tier = &mut self.tiers[k];
        let outcome = why.map_or(Outcome::Succeeded, GiveUp::outcome);
        let bin = &mut tier.meter.col.now;
        bin.finished += 1;
        if r.attempts >= tier.tail_attempt {
            bin.tail_finished += 1;
        }
        if outcome == Outcome::Dropped {
            bin.dropped += 1;
        }
        if why == Some(GiveUp::Limits) {
            bin.dead_lettered += 1;
        }
        if r.counted {
            let s = &mut tier.meter.summary;
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
            s.attempts += u64::from(r.attempts);
            s.retries += u64::from(r.attempts.saturating_sub(1));
            s.record_end(r.attempts, outcome == Outcome::Succeeded);
            s.max_task_age_s = s.max_task_age_s.max(secs(now - r.start));
        }
        let caller = tier.take_caller(slot);
        tier.reqs.close(slot);
        if k == TOP {
            if self.app.is_some() {
                self.free_thread(now, slot, r.start);
            }
            if let Some(pause) = self.traffic.after_request() {
                self.q
                    .schedule_after(pause, Ev::ClientNext { client: r.client });
            }
            return;
        }
        if let Some(caller) = caller {
            self.call_ended(now, k - 1, caller, why, status);
        }
    }

    /// A call made by `caller`, a worker of tier `above`, has ended: a
    /// success counts down the calls it waits for (the last one releases
    /// it), a give-up ends its hold with the call's last `status`. A
    /// worker that stopped waiting meanwhile (a new hold) learns nothing.
    fn call_ended(
        &mut self,
        now: Nanos,
        above: usize,
        caller: Caller,
        why: Option<GiveUp>,
        status: Status,
    ) {
        let Some(h) = self.tiers[above].holds.get_mut(caller.worker, caller.wgen) else {
            return;
        };
        match why {
            None => {
                h.pending -= 1;
                if h.pending == 0 {
                    self.end_hold(now, above, caller.worker, Some(Status::Ok));
                }
            }
            Some(_) => self.end_hold(now, above, caller.worker, Some(status)),
        }
    }

    /// When the caller of `job`, an attempt at tier `k`, stops waiting
    /// for it (`None`: never).
    fn attempt_deadline(&self, k: usize, job: Job) -> Option<Nanos> {
        let tier = &self.tiers[k];
        let timeout = tier.attempt_timeout?;
        Some(
            tier.reqs[job.slot as usize]
                .last_sent
                .saturating_add(timeout),
        )
    }

    /// Worker `w` of tier `k` has served `job` and calls tier `k + 1`.
    fn start_hold(&mut self, now: Nanos, k: usize, w: u32, wgen: u32, job: Job) {
        let (fan_out, cancel) = {
            let below = &self.tiers[k + 1];
            (below.fan_out, below.propagate_cancel)
        };
        let deadline = self.attempt_deadline(k, job);
        if !self.tiers[k].reqs.is_current(job) || deadline.is_some_and(|d| d <= now) {
            // Its caller has already stopped waiting: the worker is free at
            // once; its calls go out anyway unless the caller said so.
            if !cancel {
                for _ in 0..fan_out {
                    self.open::<false>(now, k + 1, 0, None);
                }
            }
            self.release_worker(now, k, w, wgen, None);
            return;
        }
        self.tiers[k].holds.start(w, wgen, job, fan_out);
        for _ in 0..fan_out {
            if self.tiers[k].holds.get_mut(w, wgen).is_none() {
                break; // a call already failed (an open breaker)
            }
            let caller = Caller { worker: w, wgen };
            let slot = self.open::<false>(now, k + 1, 0, Some(caller));
            let gen = self.tiers[k + 1].reqs[slot as usize].gen;
            if let Some(h) = self.tiers[k].holds.get_mut(w, wgen) {
                h.calls.push((slot, gen));
            }
        }
        if let Some(d) = deadline {
            if d < self.run_end && self.tiers[k].holds.get_mut(w, wgen).is_some() {
                self.q.schedule_at(
                    d,
                    Ev::HoldOver {
                        tier: k as u8,
                        worker: w,
                        wgen,
                    },
                );
            }
        }
    }

    /// Worker `w` of tier `k` stops waiting: its calls still open are left
    /// to run (or cancelled, when tier `k + 1` propagates cancellation),
    /// and the worker answers with `result` (see `Backend::release`).
    fn end_hold(&mut self, now: Nanos, k: usize, w: u32, result: Option<Status>) {
        let (_, wgen) = self.drop_calls(now, k, w);
        self.release_worker(now, k, w, wgen, result);
    }

    /// Ends worker `w`'s wait at tier `k` without answering: abandons its
    /// open calls; returns the attempt it served and its generation.
    fn drop_calls(&mut self, now: Nanos, k: usize, w: u32) -> (Job, u32) {
        let (job, wgen, calls) = self.tiers[k].holds.end(w);
        let cancel = self.tiers[k + 1].propagate_cancel;
        for &(slot, gen) in &calls {
            if !self.tiers[k + 1].reqs.is_open(slot, gen) {
                continue;
            }
            if cancel {
                self.cancel_call(now, k + 1, slot);
            } else {
                self.tiers[k + 1].set_caller(slot, None);
            }
        }
        self.tiers[k].holds.give_back(w, calls);
        (job, wgen)
    }

    /// The caller of the call in `slot` to tier `k` stopped waiting and
    /// says so: the call ends (dropped, as at a deadline), and a worker of
    /// tier `k` waiting while it serves the call's attempt stops waiting
    /// too.
    fn cancel_call(&mut self, now: Nanos, k: usize, slot: u32) {
        self.tiers[k].set_caller(slot, None);
        let holder = self.tiers[k].holds.holder(slot);
        let why = Some(GiveUp::Deadline);
        self.finish::<false>(now, k, slot, why, Status::DeadlineExceeded);
        if let Some(w) = holder {
            self.end_hold(now, k, w, None);
        }
    }

    /// Hands worker `w` of tier `k` back to its backend with `result`.
    fn release_worker(&mut self, now: Nanos, k: usize, w: u32, wgen: u32, result: Option<Status>) {
        let tier = &mut self.tiers[k];
        tier.backend
            .release(w, wgen, result, &tier.reqs, &mut tier.meter);
        self.apply_effects::<false>(now, k);
    }

    /// The attempt worker `w` of tier `k` serves has timed out for its
    /// caller: the worker stops waiting, if it still is.
    pub(super) fn hold_over(&mut self, now: Nanos, k: usize, w: u32, wgen: u32) {
        if self.tiers[k].holds.get_mut(w, wgen).is_some() {
            self.end_hold(now, k, w, None);
        }
    }

    /// A crash at tier `k`: every waiting worker stops waiting (the crash
    /// answers its attempt and frees it).
    fn abandon_holds(&mut self, now: Nanos, k: usize) {
        for w in self.tiers[k].holds.waiting() {
            self.drop_calls(now, k, w);
        }
    }

    /// A fault or action of tier `k` starts or ends: retries switched off
    /// or on, shedding, (at the top) RunTask calls planned, the backend's
    /// new fault state, and a crash when an outage with `flush` starts.
    #[inline(never)]
    pub(super) fn on_edge(&mut self, now: Nanos, k: usize) {
        let (next, change) = self.tiers[k].timeline.reach(now);
        if let Some(at) = next {
            self.q.schedule_at(at, Ev::Edge { tier: k as u8 });
        }
        let tier = &mut self.tiers[k];
        tier.clients
            .set_retries_disabled(change.actions.retries_disabled);
        tier.backend.set_shed(change.actions.shed);
        if k == TOP {
            for (which, per_minute) in &change.force_run {
                self.force_run(now, which, *per_minute);
            }
        }
        let tier = &mut self.tiers[k];
        tier.backend
            .set_faults(change.fault, &tier.reqs, &mut tier.meter);
        self.apply_effects::<false>(now, k);
        if let Some(status) = change.flush {
            self.abandon_holds(now, k);
            let tier = &mut self.tiers[k];
            tier.backend.flush(status, &tier.reqs, &mut tier.meter);
            self.apply_effects::<false>(now, k);
        }
        self.update_capacity(k);
    }
}
