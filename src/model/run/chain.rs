//! The run's multi-tier part: calls from the workers of one tier to the
//! next (`downstream`), their retries, and the workers waiting on them.
//!
//! Tier 0 is the top backend; tier `t ≥ 1` is `downstream[t − 1]`, whose
//! state is `Sim::tiers[t − 1]`. When a worker of tier `k` has served an
//! attempt and tier `k + 1` exists, the backend leaves an
//! [`Effect::Hold`]: the worker stays busy and makes `calls` calls to tier
//! `k + 1` at once (calls between tiers take no network time). Each call
//! is a small request of that tier: attempts, timeouts, backoff, budget
//! and breaker follow the tier's policy, exactly as a client's request
//! does at the top. The worker is released ([`Backend::release`]) when
//! every call has succeeded (the attempt is answered `ok`, unless this
//! tier's own error burst strikes), when one call gives up (the attempt
//! fails with that call's last status), or when the attempt it serves
//! times out for its own caller (`HoldOver`). Calls still open then go on
//! for nobody, or, when tier `k + 1` has `propagate_cancel`, are
//! cancelled: they stop retrying, their waiting attempts are dropped when
//! reached, and a worker of tier `k + 1` waiting while it serves one is
//! released in turn — which cancels its own calls if tier `k + 2`
//! propagates too.

use super::{Sim, Status};
use crate::engine::{tier_stream, EventQueue, OldestFirst, Stream};
use crate::metrics::{recovery, BinRow, RunSummary, TierRun};
use crate::model::backend::{base_workers, Backend, Effect};
use crate::model::clients::{Clients, Decision};
use crate::model::event::Ev;
use crate::model::faults::Timeline;
use crate::model::meter::Meter;
use crate::model::requests::{GiveUp, Job, Outcome, Requests};
use crate::model::tier::{Caller, Tier};
use crate::policy::{Backoff, Policy};
use crate::scenario::spec::ScenarioSpec;
use crate::time::{secs, Nanos};

/// How a call ends.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CallEnd {
    /// An attempt succeeded.
    Ok,
    /// Given up for this reason; the caller sees this status.
    GaveUp(GiveUp, Status),
    /// Its caller stopped waiting and said so (`propagate_cancel`).
    Cancelled,
}

/// The tiers of `spec`'s `downstream` under `policies` (one per tier), for
/// replication `replication`; registers their fixed delays as lanes of
/// `q`.
pub(super) fn tiers<'a>(
    spec: &'a ScenarioSpec,
    policies: &'a [Policy],
    replication: u32,
    run_end: Nanos,
    q: &mut EventQueue<Ev>,
) -> Vec<Tier<'a>> {
    let last = spec.downstream.len();
    spec.downstream
        .iter()
        .zip(policies)
        .enumerate()
        .map(|(i, (d, policy))| {
            let t = (i + 1) as u32;
            let rng = |which| tier_stream(spec.seed, replication, which, t);
            let mut backend = Backend::new(&d.backend, rng(Stream::Service), rng(Stream::Faults));
            if i + 1 < last {
                backend.set_calls_down();
            }
            if d.propagate_cancel {
                backend.set_drop_cancelled();
            }
            let timeouts = d.attempt_timeout.map(|to| OldestFirst::new(q, to.ns()));
            if let Backoff::Constant { delay } = policy.backoff {
                if !policy.jitter.is_random() {
                    q.register_lane(delay);
                }
            }
            let meter = Meter::new(spec.bin.ns(), run_end, spec.warmup.ns(), false);
            Tier::new(
                &d.name,
                backend,
                meter,
                Clients::new(policy, 1, rng(Stream::Backoff)),
                policy,
                d.attempt_timeout.map(|x| x.ns()),
                d.calls,
                d.propagate_cancel,
                Timeline::new(
                    &spec.faults,
                    &spec.actions,
                    base_workers(&d.backend),
                    Some(&d.name),
                ),
                timeouts,
            )
        })
        .collect()
}

impl<'a> Sim<'a> {
    /// Schedules the tiers' first fault edges and records their capacity.
    pub(super) fn start_tiers(&mut self) {
        for t in 1..=self.tiers.len() {
            self.update_tier_capacity(t);
            if let Some(at) = self.tiers[t - 1].timeline.first() {
                self.q.schedule_at(at, Ev::TierEdge { tier: t as u8 });
            }
        }
    }

    fn update_tier_capacity(&mut self, t: usize) {
        let tier = &mut self.tiers[t - 1];
        let (workers, cap) = tier.backend.capacity_now();
        tier.meter.col.set_capacity(workers, cap);
    }

    /// Integrates every tier's levels up to `now` (see `Collector::advance`).
    pub(super) fn advance_tiers(&mut self, now: Nanos) {
        for tier in &mut self.tiers {
            tier.meter.advance(now, &mut tier.calls);
        }
    }

    /// The table of tier `k`'s attempts: the requests at the top, the
    /// calls below.
    fn table(&self, k: usize) -> &Requests {
        if k == 0 {
            &self.reqs
        } else {
            &self.tiers[k - 1].calls
        }
    }

    /// When the caller of `job`, an attempt at tier `k`, stops waiting
    /// for it (`None`: never).
    fn attempt_deadline(&self, k: usize, job: Job) -> Option<Nanos> {
        let timeout = if k == 0 {
            self.attempt_timeout
        } else {
            self.tiers[k - 1].attempt_timeout
        }?;
        Some(
            self.table(k)[job.slot as usize]
                .last_sent
                .saturating_add(timeout),
        )
    }

    /// Worker `w` of tier `k` has served `job` and calls tier `k + 1`.
    pub(super) fn start_hold(&mut self, now: Nanos, k: usize, w: u32, wgen: u32, job: Job) {
        let (fan_out, cancel) = {
            let below = &self.tiers[k];
            (below.fan_out, below.propagate_cancel)
        };
        let deadline = self.attempt_deadline(k, job);
        if !self.table(k).is_current(job) || deadline.is_some_and(|d| d <= now) {
            // Its caller has already stopped waiting: the worker is free at
            // once; its calls go out anyway unless the caller said so.
            if !cancel {
                for _ in 0..fan_out {
                    self.open_call(now, k + 1, None);
                }
            }
            self.release_worker(now, k, w, wgen, None);
            return;
        }
        self.holds[k].start(w, wgen, job, fan_out);
        for _ in 0..fan_out {
            if self.holds[k].get_mut(w, wgen).is_none() {
                break; // a call already failed (an open breaker)
            }
            let caller = Caller { worker: w, wgen };
            let slot = self.open_call(now, k + 1, Some(caller));
            let gen = self.tiers[k].calls[slot as usize].gen;
            if let Some(h) = self.holds[k].get_mut(w, wgen) {
                h.calls.push((slot, gen));
            }
        }
        if let Some(d) = deadline {
            if d < self.run_end && self.holds[k].get_mut(w, wgen).is_some() {
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

    /// A new call to tier `t`, waited for by `caller`; returns its slot.
    fn open_call(&mut self, now: Nanos, t: usize, caller: Option<Caller>) -> u32 {
        let tier = &mut self.tiers[t - 1];
        let counted = tier.meter.counted(now);
        let slot = tier.calls.open(0, now, counted, false);
        tier.meter.col.now.demand += 1;
        if counted {
            tier.meter.summary.requests += 1;
        }
        tier.clients
            .on_request(now, 0, &mut tier.calls[slot as usize].mark);
        tier.set_caller(slot, caller);
        self.send_call(now, t, slot);
        slot
    }

    /// The next attempt of the call in `slot` goes to tier `t`.
    fn send_call(&mut self, now: Nanos, t: usize, slot: u32) {
        let tier = &mut self.tiers[t - 1];
        let r = &tier.calls[slot as usize];
        if !tier.clients.may_send(now, 0, r.attempts == 0) {
            self.end_call(
                now,
                t,
                slot,
                CallEnd::GaveUp(GiveUp::Breaker, Status::Unavailable),
            );
            return;
        }
        let previous = r.last_sent;
        let job = tier.calls.begin_attempt(slot, now);
        if job.attempt == 1 {
            tier.meter.col.now.first_attempts += 1;
        } else {
            tier.meter.col.now.retries += 1;
            tier.meter.col.record_retry_gap(now - previous);
        }
        tier.clients.on_send(0);
        if let Some(l) = tier.timeouts.as_mut() {
            l.set(&mut self.q, job);
        }
        // Calls take no network time: the attempt reaches the tier now.
        self.tier_arrive(now, t, job);
    }

    /// A call attempt's timeout at tier `t` popped (see
    /// [`OldestFirst::popped`]).
    pub(super) fn tier_timeout_popped(&mut self, now: Nanos, t: usize, job: Job) {
        let tier = &mut self.tiers[t - 1];
        if let Some(l) = tier.timeouts.as_mut() {
            let calls = &tier.calls;
            let event = |job| Ev::TierTimeout { tier: t as u8, job };
            l.popped(&mut self.q, job, now, |j| calls.is_current(j), event);
        }
    }

    /// The chain of steps at this instant is over: settles each tier's call
    /// timeouts (see `Sim::settle_timers`).
    pub(super) fn settle_tier_timers(&mut self) {
        for (i, tier) in self.tiers.iter_mut().enumerate() {
            if let Some(l) = tier.timeouts.as_mut() {
                let calls = &tier.calls;
                let event = |job| Ev::TierTimeout {
                    tier: (i + 1) as u8,
                    job,
                };
                l.settle(&mut self.q, |j| calls.is_current(j), event);
            }
        }
    }

    fn tier_arrive(&mut self, now: Nanos, t: usize, job: Job) {
        let tier = &mut self.tiers[t - 1];
        tier.backend.arrive(now, job, &tier.calls, &mut tier.meter);
        self.apply_tier_effects(now, t);
    }

    pub(super) fn tier_worker_done(&mut self, now: Nanos, t: usize, w: u32, wgen: u32) {
        let tier = &mut self.tiers[t - 1];
        tier.backend
            .worker_done(now, w, wgen, &tier.calls, &mut tier.meter);
        self.apply_tier_effects(now, t);
    }

    /// Turns what tier `t`'s backend decided into events, in order; its
    /// answers reach their callers once every effect is in place (calls
    /// take no network time).
    fn apply_tier_effects(&mut self, now: Nanos, t: usize) {
        let mut out = std::mem::take(&mut self.tiers[t - 1].backend.out);
        for &effect in &out {
            match effect {
                Effect::Settle {
                    job,
                    completed,
                    reply,
                } => {
                    let tier = &mut self.tiers[t - 1];
                    if let Some(status) = reply {
                        if status != Status::Ok && tier.meter.counted(now) {
                            tier.failed_answers += 1;
                        }
                    }
                    let s = tier.calls.settle(job, completed);
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
                    Ev::TierDone {
                        tier: t as u8,
                        worker,
                        wgen,
                    },
                ),
                Effect::Hold { worker, wgen, job } => self.start_hold(now, t, worker, wgen, job),
                Effect::RoundTrip { .. } => unreachable!("no contention backend below the top"),
            }
        }
        // Delivering an answer may end a call, release the calling
        // worker and send more: their effects are applied within, from
        // lists of their own.
        for (job, status) in out.iter().filter_map(Effect::answer) {
            self.call_answer(now, t, job, status, false);
        }
        out.clear();
        let tier = &mut self.tiers[t - 1];
        if tier.backend.out.is_empty() {
            tier.backend.out = out;
        }
    }

    /// An answer (or, `timeout`, the caller's patience running out)
    /// for an attempt of a call to tier `t`.
    pub(super) fn call_answer(
        &mut self,
        now: Nanos,
        t: usize,
        job: Job,
        status: Status,
        timeout: bool,
    ) {
        let tier = &mut self.tiers[t - 1];
        if !tier.calls.is_current(job) {
            return;
        }
        tier.calls.attempt_over(job);
        let r = &mut tier.calls[job.slot as usize];
        tier.clients.attempt_done(r, job.attempt);
        if status == Status::Ok {
            let r = *r;
            tier.clients.on_success(now, &r, job.attempt);
            let latency = now - r.start;
            tier.meter.col.now.goodput += 1;
            tier.meter.col.record_latency(latency);
            if r.counted {
                tier.meter.latency.record(latency);
            }
            self.end_call(now, t, job.slot, CallEnd::Ok);
            return;
        }
        if timeout {
            tier.meter.col.now.timeouts += 1;
        } else {
            tier.meter.col.now.errors += 1;
        }
        let pushback = tier.backend.pushback(status, timeout);
        match tier.clients.on_failure(now, r, status, timeout, pushback) {
            Decision::Retry(delay) => {
                let (key, delay) = tier.calls.wait_backoff(job.slot, now, delay);
                self.q
                    .schedule_after(delay, Ev::TierSend { tier: t as u8, key });
            }
            Decision::GiveUp(why) => self.end_call(now, t, job.slot, CallEnd::GaveUp(why, status)),
        }
    }

    pub(super) fn call_backoff_over(&mut self, now: Nanos, t: usize, key: Job) {
        if self.tiers[t - 1].calls.backoff_over(key) {
            self.send_call(now, t, key.slot);
        }
    }

    /// The call in `slot` to tier `t` ends: its counts, then its caller
    /// learns how it went.
    fn end_call(&mut self, now: Nanos, t: usize, slot: u32, end: CallEnd) {
        let tier = &mut self.tiers[t - 1];
        let open = tier.calls.open_attempts(slot);
        let r = &mut tier.calls[slot as usize];
        tier.clients.request_ended(r, open);
        let r = *r;
        let outcome = match end {
            CallEnd::Ok => Outcome::Succeeded,
            CallEnd::GaveUp(why, _) => why.outcome(),
            CallEnd::Cancelled => Outcome::Dropped,
        };
        let bin = &mut tier.meter.col.now;
        bin.finished += 1;
        if outcome == Outcome::Dropped {
            bin.dropped += 1;
        }
        if matches!(end, CallEnd::GaveUp(GiveUp::Limits, _)) {
            bin.dead_lettered += 1;
        }
        if r.counted {
            let s = &mut tier.meter.summary;
            match outcome {
                Outcome::Succeeded => s.succeeded += 1,
                Outcome::Failed => s.failed += 1,
                Outcome::Dropped => s.dropped += 1,
            }
            match end {
                CallEnd::GaveUp(GiveUp::Limits, _) => s.max_attempts_reached += 1,
                CallEnd::GaveUp(GiveUp::Budget, _) => s.dropped_budget += 1,
                CallEnd::GaveUp(GiveUp::RetriesDisabled, _) => s.dropped_retries_disabled += 1,
                CallEnd::GaveUp(GiveUp::Breaker, _) => s.failed_breaker += 1,
                CallEnd::GaveUp(GiveUp::NotRetryable, _) => s.failed_non_retryable += 1,
                CallEnd::Cancelled => s.dropped_deadline += 1,
                _ => {}
            }
            s.attempts += u64::from(r.attempts);
            s.record_end(r.attempts, outcome == Outcome::Succeeded);
        }
        let caller = tier.take_caller(slot);
        tier.calls.close(slot);
        let Some(caller) = caller else {
            return;
        };
        let k = t - 1;
        let Some(h) = self.holds[k].get_mut(caller.worker, caller.wgen) else {
            return;
        };
        match end {
            CallEnd::Ok => {
                h.pending -= 1;
                if h.pending == 0 {
                    self.end_hold(now, k, caller.worker, Some(Status::Ok));
                }
            }
            CallEnd::GaveUp(_, status) => self.end_hold(now, k, caller.worker, Some(status)),
            CallEnd::Cancelled => self.end_hold(now, k, caller.worker, None),
        }
    }

    /// Worker `w` of tier `k` stops waiting: its calls still open are left
    /// to run (or cancelled, when tier `k + 1` propagates cancellation),
    /// and the worker answers with `result` (see [`Backend::release`]).
    fn end_hold(&mut self, now: Nanos, k: usize, w: u32, result: Option<Status>) {
        let (_, wgen) = self.drop_calls(now, k, w);
        self.release_worker(now, k, w, wgen, result);
    }

    /// Ends worker `w`'s wait at tier `k` without answering: abandons its
    /// open calls; returns the attempt it served and its generation.
    fn drop_calls(&mut self, now: Nanos, k: usize, w: u32) -> (Job, u32) {
        let (job, wgen, calls) = self.holds[k].end(w);
        let cancel = self.tiers[k].propagate_cancel;
        for &(slot, gen) in &calls {
            if !self.tiers[k].calls.is_open(slot, gen) {
                continue;
            }
            if cancel {
                self.cancel_call(now, k + 1, slot);
            } else {
                self.tiers[k].set_caller(slot, None);
            }
        }
        self.holds[k].give_back(w, calls);
        (job, wgen)
    }

    /// The caller of the call in `slot` to tier `t` stopped waiting and
    /// says so: the call ends, and a worker of tier `t` waiting while it
    /// serves the call's attempt stops waiting too.
    fn cancel_call(&mut self, now: Nanos, t: usize, slot: u32) {
        self.tiers[t - 1].set_caller(slot, None);
        let holder = self.holds.get(t).and_then(|h| h.holder(slot));
        self.end_call(now, t, slot, CallEnd::Cancelled);
        if let Some(w) = holder {
            self.end_hold(now, t, w, None);
        }
    }

    /// Hands worker `w` of tier `k` back to its backend with `result`.
    fn release_worker(&mut self, now: Nanos, k: usize, w: u32, wgen: u32, result: Option<Status>) {
        if k == 0 {
            self.backend
                .release(w, wgen, result, &self.reqs, &mut self.meter);
            self.apply_backend_effects(now);
        } else {
            let tier = &mut self.tiers[k - 1];
            tier.backend
                .release(w, wgen, result, &tier.calls, &mut tier.meter);
            self.apply_tier_effects(now, k);
        }
    }

    /// The attempt worker `w` of tier `k` serves has timed out for its
    /// caller: the worker stops waiting, if it still is.
    pub(super) fn hold_over(&mut self, now: Nanos, k: usize, w: u32, wgen: u32) {
        if self.holds[k].get_mut(w, wgen).is_some() {
            self.end_hold(now, k, w, None);
        }
    }

    /// A crash at tier `k`: every waiting worker stops waiting (the crash
    /// answers its attempt and frees it).
    pub(super) fn abandon_holds(&mut self, now: Nanos, k: usize) {
        let Some(holds) = self.holds.get(k) else {
            return;
        };
        for w in holds.waiting() {
            self.drop_calls(now, k, w);
        }
    }

    /// A fault or action of tier `t` starts or ends.
    pub(super) fn on_tier_edge(&mut self, now: Nanos, t: usize) {
        let (next, change) = self.tiers[t - 1].timeline.reach(now);
        if let Some(at) = next {
            self.q.schedule_at(at, Ev::TierEdge { tier: t as u8 });
        }
        let tier = &mut self.tiers[t - 1];
        tier.clients
            .set_retries_disabled(change.actions.retries_disabled);
        tier.backend.set_shed(change.actions.shed);
        tier.backend
            .set_faults(change.fault, &tier.calls, &mut tier.meter);
        self.apply_tier_effects(now, t);
        if let Some(status) = change.flush {
            self.abandon_holds(now, t);
            let tier = &mut self.tiers[t - 1];
            tier.backend.flush(status, &tier.calls, &mut tier.meter);
            self.apply_tier_effects(now, t);
        }
        self.update_tier_capacity(t);
    }
}

/// Every tier's figures, the top backend first (its bins, summary,
/// failed answers and capacity given), for a run with tiers; empty
/// without.
pub(super) fn tier_runs(
    spec: &ScenarioSpec,
    tiers: Vec<Tier<'_>>,
    top: (&[BinRow], &RunSummary, u64, f64),
    incident: Option<(Nanos, Nanos)>,
) -> Vec<TierRun> {
    if tiers.is_empty() {
        return Vec::new();
    }
    let figures = |name: &str, bins: Vec<BinRow>, s: &RunSummary, failed: u64, capacity: f64| {
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
            summary: s.clone(),
        }
    };
    let (top_bins, top_summary, top_failed, top_capacity) = top;
    let mut out = vec![figures(
        spec.tier_names()[0],
        top_bins.to_vec(),
        top_summary,
        top_failed,
        top_capacity,
    )];
    for mut tier in tiers {
        for r in tier.calls.open_requests() {
            if r.counted {
                tier.meter.summary.unfinished += 1;
                tier.meter.summary.attempts += u64::from(r.attempts);
            }
        }
        let oldest = tier.calls.oldest_start();
        tier.meter.col.set_open(tier.calls.open_count(), oldest);
        let retrying = tier.calls.retrying();
        let waiting = tier.calls.waiting();
        let capacity = tier.backend.nominal_capacity();
        let bins = tier.meter.col.finish(retrying, waiting);
        out.push(figures(
            tier.name,
            bins,
            &tier.meter.summary,
            tier.failed_answers,
            capacity,
        ));
    }
    out
}
