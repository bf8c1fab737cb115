//! The Cloud Tasks dispatcher: tasks that are due wait in a FIFO and go to
//! the backend only while the queue's token bucket has a token
//! (`max_dispatches_per_second`, capacity `max_burst_size`, starting full)
//! and fewer than `max_concurrent_dispatches` are in flight. First attempts
//! and retries are limited alike, as the service does.
//!
//! The dispatcher owns its counts: a task holds a concurrent slot from
//! [`Dispatcher::next`] (or [`Dispatcher::force`]) until
//! [`Dispatcher::release`], and both sides of that — the task's
//! `dispatched` flag and the in-flight count — change only here.
//!
//! With `throttling` (off unless the scenario asks for it) the bucket
//! refills at an *effective* rate that the dispatcher adjusts itself, an
//! approximation of Cloud Tasks' system throttling, whose algorithm Google
//! does not publish: time is cut into windows of `window`; at each window's
//! end the effective rate is multiplied by `decrease` when at least
//! `error_share` of the window's answers were errors (by
//! `overload_decrease` when most of those errors were `unavailable` or
//! `resource_exhausted`, HTTP 503 and 429), raised by `ramp` × the
//! configured rate otherwise, and brought down to `start` × the configured
//! rate after a window without a dispatch (an idle queue ramps up again);
//! it stays within [`min_rate`, `max_dispatches_per_second`]. An answer
//! carrying the backend's `retry_after` pauses all dispatching for that
//! long when `honor_retry_after` is on. The effective rate never exceeds
//! the configured one and the bucket never holds more than
//! `max_burst_size`, so the configured limits hold either way.
//!
//! An operator's RunTask (`force_run`) dispatches a task past both limits,
//! but the calls themselves are limited: Cloud Tasks allows a project
//! `per_minute` RunTask calls a minute (60 by default). The dispatcher
//! keeps the calls still to make ([`RunTasks`]): the tasks an action
//! chose, in order of their next attempt, one call every `60 s /
//! per_minute`; a task that is no longer waiting when its turn comes (its
//! own retry went first, or it ended) is passed over without a call.

use super::requests::{Job, Request, Requests};
use crate::scenario::spec::{DispatcherSpec, ThrottlingSpec};
use crate::status::Status;
use crate::time::{Nanos, NS_PER_SEC};
use std::collections::VecDeque;

/// Dispatcher state of one run.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    /// Tokens added per nanosecond.
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Nanos,
    max_concurrent: u32,
    /// Dispatches whose answer (or deadline) has not come yet.
    in_flight: u32,
    /// Due tasks as (slot, generation, attempts), oldest first; entries
    /// whose task has moved on are skipped.
    due: VecDeque<Job>,
    /// Whether a wake-up for the next token is already scheduled.
    tick_pending: bool,
    /// The system-throttling approximation, when switched on.
    throttle: Option<Throttle>,
    /// The operator's RunTask calls still to make.
    pub run_tasks: RunTasks,
}

/// The RunTask calls an operator's `force_run` actions still have to
/// make, paced at the quota: one call, then a pause of the call's gap
/// before the next.
#[derive(Clone, Debug, Default)]
pub struct RunTasks {
    /// (slot, generation, pause after the call) of the tasks to force, in
    /// the order their calls go.
    pending: VecDeque<(u32, u32, Nanos)>,
    /// No call before this instant (the last call plus its gap).
    next_call: Nanos,
    /// Whether a wake-up for the next call is scheduled.
    scheduled: bool,
}

impl RunTasks {
    /// An action at `now` asks for calls on `tasks` (slot, generation), in
    /// this order, `gap` apart. Returns when to wake up for the next call,
    /// if no wake-up is scheduled yet.
    pub fn plan(
        &mut self,
        now: Nanos,
        tasks: impl IntoIterator<Item = (u32, u32)>,
        gap: Nanos,
    ) -> Option<Nanos> {
        self.pending
            .extend(tasks.into_iter().map(|(slot, gen)| (slot, gen, gap)));
        if self.scheduled || self.pending.is_empty() {
            return None;
        }
        self.scheduled = true;
        Some(self.next_call.max(now))
    }

    /// The wake-up for a call came at `now`: the next task to force among
    /// those `waiting(slot, gen)` says still wait (the others are passed
    /// over without a call), and when to wake up for the call after it.
    pub fn call(
        &mut self,
        now: Nanos,
        mut waiting: impl FnMut(u32, u32) -> bool,
    ) -> (Option<u32>, Option<Nanos>) {
        self.scheduled = false;
        while let Some((slot, gen, gap)) = self.pending.pop_front() {
            if waiting(slot, gen) {
                self.next_call = now.saturating_add(gap);
                let wake = (!self.pending.is_empty()).then(|| {
                    self.scheduled = true;
                    self.next_call
                });
                return (Some(slot), wake);
            }
        }
        (None, None)
    }

    /// Calls still to make (tasks passed over included).
    pub fn pending(&self) -> usize {
        self.pending.len()
    }
}

/// State of the system-throttling approximation (see the module's text).
#[derive(Clone, Debug)]
struct Throttle {
    spec: ThrottlingSpec,
    /// The configured rate, per nanosecond.
    max_rate: f64,
    /// Window length (ns) and the end of the current window.
    window: Nanos,
    window_end: Nanos,
    /// This window's dispatches, answers, errors and overload errors.
    dispatches: u64,
    answers: u64,
    errors: u64,
    overload: u64,
    /// No dispatch before this instant (`retry_after` honoured).
    paused_until: Nanos,
}

impl Throttle {
    /// The rate (per ns) a window's counts lead to, from `rate`.
    fn next_rate(&self, rate: f64) -> f64 {
        let s = &self.spec;
        let floor = (s.min_rate / NS_PER_SEC as f64).min(self.max_rate);
        let errors = self.errors as f64;
        let r = if self.answers > 0 && errors >= s.error_share * self.answers as f64 && errors > 0.0
        {
            if 2 * self.overload >= self.errors {
                rate * s.overload_decrease
            } else {
                rate * s.decrease
            }
        } else if self.dispatches == 0 {
            rate.min(s.start * self.max_rate)
        } else {
            rate + s.ramp * self.max_rate
        };
        r.clamp(floor, self.max_rate)
    }
}

/// What the dispatcher does next (see [`Dispatcher::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pump {
    /// Dispatch the task in this slot now (it holds a token and a slot).
    Send(u32),
    /// Nothing can go until the next token, at this time: wake up then.
    WakeAt(Nanos),
    /// Nothing to do until a task becomes due or a slot frees.
    Idle,
}

impl Dispatcher {
    /// A dispatcher with a full bucket.
    pub fn new(spec: &DispatcherSpec) -> Dispatcher {
        let burst = spec.max_burst_size.max(1) as f64;
        let max_rate = spec.max_dispatches_per_second / NS_PER_SEC as f64;
        let throttle = spec.throttling.as_ref().map(|t| Throttle {
            spec: t.clone(),
            max_rate,
            window: t.window.ns().max(1),
            window_end: t.window.ns().max(1),
            dispatches: 0,
            answers: 0,
            errors: 0,
            overload: 0,
            paused_until: 0,
        });
        let rate = match &throttle {
            // A new queue ramps up.
            Some(t) => {
                (t.spec.start * max_rate).max((t.spec.min_rate / NS_PER_SEC as f64).min(max_rate))
            }
            None => max_rate,
        };
        Dispatcher {
            rate,
            burst,
            tokens: burst,
            last: 0,
            max_concurrent: spec.max_concurrent_dispatches.max(1),
            in_flight: 0,
            due: VecDeque::new(),
            tick_pending: false,
            throttle,
            run_tasks: RunTasks::default(),
        }
    }

    fn refill(&mut self, now: Nanos) {
        let Some(t) = self.throttle.as_mut() else {
            if now > self.last {
                self.tokens = (self.tokens + (now - self.last) as f64 * self.rate).min(self.burst);
                self.last = now;
            }
            return;
        };
        // Piecewise: each window at the rate in force during it.
        loop {
            let upto = now.min(t.window_end);
            if upto > self.last {
                self.tokens = (self.tokens + (upto - self.last) as f64 * self.rate).min(self.burst);
                self.last = upto;
            }
            if now < t.window_end {
                break;
            }
            self.rate = t.next_rate(self.rate);
            t.dispatches = 0;
            t.answers = 0;
            t.errors = 0;
            t.overload = 0;
            t.window_end = t.window_end.saturating_add(t.window);
        }
    }

    /// The effective dispatch rate now (dispatches per second): the
    /// configured one, or less while throttled.
    pub fn effective_rate(&mut self, now: Nanos) -> f64 {
        self.refill(now);
        self.rate * NS_PER_SEC as f64
    }

    /// The answer to a dispatched attempt (`timeout`: no answer before the
    /// dispatch deadline) reached the queue at `now`, with the backend's
    /// `pushback` if it sent one. Feeds the throttling approximation; does
    /// nothing without it.
    pub fn on_result(
        &mut self,
        now: Nanos,
        status: Status,
        timeout: bool,
        pushback: Option<Nanos>,
    ) {
        if self.throttle.is_none() {
            return;
        }
        self.refill(now);
        let Some(t) = self.throttle.as_mut() else {
            return;
        };
        t.answers += 1;
        if status != Status::Ok || timeout {
            t.errors += 1;
            if !timeout && matches!(status, Status::Unavailable | Status::ResourceExhausted) {
                t.overload += 1;
            }
        }
        if let Some(p) = pushback.filter(|_| t.spec.honor_retry_after) {
            t.paused_until = t.paused_until.max(now.saturating_add(p));
        }
    }

    /// Whether another dispatch may start now by concurrency alone.
    pub fn has_slot(&self) -> bool {
        self.in_flight < self.max_concurrent
    }

    /// Dispatches whose answer has not come yet.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// A task became due: it waits in line (`key` from
    /// [`Requests::set_due`]).
    pub fn enqueue(&mut self, key: Job) {
        self.due.push_back(key);
    }

    /// The next task to dispatch at `now`, if the limits allow one; takes
    /// its token and its concurrent slot.
    pub fn next(&mut self, now: Nanos, reqs: &mut Requests) -> Pump {
        while let Some(&key) = self.due.front() {
            if !reqs.is_due(key) {
                self.due.pop_front();
                continue;
            }
            if !self.has_slot() {
                return Pump::Idle;
            }
            let paused = self
                .throttle
                .as_ref()
                .map_or(0, |t| t.paused_until)
                .max(now);
            if paused > now || !self.take_token(now) {
                if self.tick_pending {
                    return Pump::Idle;
                }
                self.tick_pending = true;
                let mut at = if paused > now {
                    // A pause can outlast the window: close the windows it
                    // has already passed, so the wake-up below is the end of
                    // a window still to come, not the next nanosecond.
                    if self.throttle.as_ref().is_some_and(|t| t.window_end <= now) {
                        self.refill(now);
                    }
                    paused
                } else {
                    self.next_token_at(now)
                };
                if let Some(t) = &self.throttle {
                    // The rate may change at the window's end.
                    at = at.min(t.window_end.max(now + 1));
                }
                return Pump::WakeAt(at);
            }
            self.due.pop_front();
            if let Some(t) = self.throttle.as_mut() {
                t.dispatches += 1;
            }
            self.admit(&mut reqs[key.slot as usize]);
            return Pump::Send(key.slot);
        }
        Pump::Idle
    }

    /// The wake-up for the next token came.
    pub fn on_tick(&mut self) {
        self.tick_pending = false;
    }

    /// Cloud Tasks' RunTask: `r` is dispatched now whatever the rate and
    /// concurrency limits (the calls are paced by [`RunTasks`]); it holds
    /// a concurrent slot like any dispatch.
    pub fn force(&mut self, r: &mut Request) {
        if let Some(t) = self.throttle.as_mut() {
            t.dispatches += 1;
        }
        self.admit(r);
    }

    fn admit(&mut self, r: &mut Request) {
        self.in_flight += 1;
        r.dispatched = true;
    }

    /// The client is done with `r`'s current attempt: its concurrent slot
    /// frees. True when it held one.
    pub fn release(&mut self, r: &mut Request) -> bool {
        if r.dispatched {
            r.dispatched = false;
            self.in_flight -= 1;
            true
        } else {
            false
        }
    }

    /// Takes a token for one dispatch at `now`, if there is one.
    pub fn take_token(&mut self, now: Nanos) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// When the next whole token will be there (after a failed `take_token`).
    pub fn next_token_at(&self, now: Nanos) -> Nanos {
        let missing = (1.0 - self.tokens).max(0.0);
        if self.rate <= 0.0 {
            return Nanos::MAX;
        }
        now.saturating_add((missing / self.rate).ceil() as Nanos)
            .max(now + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn spec(rate: f64, burst: u32, conc: u32) -> DispatcherSpec {
        DispatcherSpec {
            max_dispatches_per_second: rate,
            max_burst_size: burst,
            max_concurrent_dispatches: conc,
            dispatch_deadline: Dur::from_secs(600),
            throttling: None,
        }
    }

    #[test]
    fn bucket_starts_full_then_refills_at_the_rate() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 100));
        assert!((0..3).all(|_| d.take_token(0)));
        assert!(!d.take_token(0));
        assert_eq!(d.next_token_at(0), 100_000_000, "one token per 100 ms");
        assert!(!d.take_token(99_999_999));
        assert!(d.take_token(100_000_000));
        // A long pause refills only up to the burst size.
        assert!((0..3).all(|_| d.take_token(100 * NS_PER_SEC)));
        assert!(!d.take_token(100 * NS_PER_SEC));
    }

    #[test]
    fn dispatches_in_line_within_both_limits() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 2));
        let mut reqs = Requests::default();
        let slots: Vec<u32> = (0..4).map(|c| reqs.open(c, 0, true, false)).collect();
        for &s in &slots {
            d.enqueue(reqs.set_due(s));
        }
        assert_eq!(d.next(0, &mut reqs), Pump::Send(0));
        assert_eq!(d.next(0, &mut reqs), Pump::Send(1));
        assert_eq!(d.in_flight(), 2);
        assert_eq!(d.next(0, &mut reqs), Pump::Idle, "two concurrent at most");
        // Slot 0's attempt ends: its slot frees, once.
        reqs.begin_attempt(0, 0);
        assert!(d.release(&mut reqs[0]));
        assert!(!d.release(&mut reqs[0]));
        assert_eq!(d.next(0, &mut reqs), Pump::Send(2));
        reqs.begin_attempt(2, 0);
        d.release(&mut reqs[2]);
        // The bucket (3 tokens) is empty: wake up at the next token, once.
        assert_eq!(d.next(0, &mut reqs), Pump::WakeAt(100_000_000));
        assert_eq!(d.next(0, &mut reqs), Pump::Idle);
        d.on_tick();
        assert_eq!(d.next(100_000_000, &mut reqs), Pump::Send(3));
    }

    #[test]
    fn run_task_calls_go_one_gap_apart_and_pass_over_tasks_no_longer_waiting() {
        let mut rt = RunTasks::default();
        let s = NS_PER_SEC;
        assert_eq!(rt.plan(5 * s, [(0, 0), (1, 0), (2, 0)], s), Some(5 * s));
        // A second action while calls are under way only queues its own.
        assert_eq!(rt.plan(5 * s, [(3, 0)], 2 * s), None);
        assert_eq!(rt.call(5 * s, |_, _| true), (Some(0), Some(6 * s)));
        // Task 1 went on its own: passed over, task 2 gets the call.
        assert_eq!(rt.call(6 * s, |slot, _| slot != 1), (Some(2), Some(7 * s)));
        assert_eq!(rt.call(7 * s, |_, _| true), (Some(3), None));
        assert_eq!(rt.pending(), 0);
        // The next action's first call waits out the last call's gap.
        assert_eq!(rt.plan(8 * s, [(4, 0)], s), Some(9 * s));
        assert_eq!(rt.call(9 * s, |_, _| false), (None, None));
    }

    #[test]
    fn stale_entries_are_skipped() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 2));
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true, false);
        d.enqueue(reqs.set_due(a));
        reqs.close(a);
        assert_eq!(d.next(0, &mut reqs), Pump::Idle);
        assert_eq!(d.in_flight(), 0);
    }

    fn throttled(rate: f64) -> Dispatcher {
        let mut s = spec(rate, 1000, 1000);
        s.throttling = Some(ThrottlingSpec {
            window: Dur::from_secs(5),
            start: 0.1,
            ramp: 0.1,
            decrease: 0.8,
            overload_decrease: 0.5,
            error_share: 0.05,
            min_rate: 1.0,
            honor_retry_after: true,
        });
        Dispatcher::new(&s)
    }

    /// `n` answers at `t` with `status`, and a dispatch before them so the
    /// window is not idle.
    fn answers(d: &mut Dispatcher, t: Nanos, n: u32, status: Status) {
        // Close the windows before `t` first, so the dispatch counts in
        // the window of its answers.
        d.refill(t);
        d.throttle.as_mut().unwrap().dispatches += 1;
        for _ in 0..n {
            d.on_result(t, status, false, None);
        }
    }

    #[test]
    fn throttling_cuts_the_rate_on_errors_and_ramps_it_back() {
        let s = NS_PER_SEC;
        let mut d = throttled(100.0);
        // A new queue starts at 10 % of its rate.
        assert!((d.effective_rate(0) - 10.0).abs() < 1e-9);
        // Healthy windows add 10 % of the configured rate each.
        answers(&mut d, s, 50, Status::Ok);
        assert!((d.effective_rate(5 * s) - 20.0).abs() < 1e-9);
        answers(&mut d, 6 * s, 50, Status::Ok);
        assert!((d.effective_rate(10 * s) - 30.0).abs() < 1e-9);
        // 503s: halved; other errors: × 0.8; one error in 100 is below
        // the 5 % share and counts as healthy.
        answers(&mut d, 11 * s, 10, Status::Unavailable);
        assert!((d.effective_rate(15 * s) - 15.0).abs() < 1e-9);
        answers(&mut d, 16 * s, 10, Status::Internal);
        assert!((d.effective_rate(20 * s) - 12.0).abs() < 1e-9);
        answers(&mut d, 21 * s, 99, Status::Ok);
        answers(&mut d, 21 * s, 1, Status::Internal);
        assert!((d.effective_rate(25 * s) - 22.0).abs() < 1e-9);
        // Never above the configured rate, never below the floor.
        for w in 0..20 {
            answers(&mut d, (26 + 5 * w) * s, 1, Status::Ok);
        }
        assert!((d.effective_rate(126 * s) - 100.0).abs() < 1e-9);
        for w in 0..20 {
            answers(&mut d, (126 + 5 * w) * s, 1, Status::ResourceExhausted);
        }
        assert!((d.effective_rate(226 * s) - 1.0).abs() < 1e-9);
        // An idle window (no dispatch) brings it down to the start rate at
        // most: from 1/s it stays 1/s; from 100/s it would drop to 10/s.
        assert!((d.effective_rate(300 * s) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn tokens_refill_at_the_rate_in_force_in_each_window() {
        let s = NS_PER_SEC;
        let mut d = throttled(100.0);
        // Empty the bucket, then one healthy window: 10/s for 5 s, then
        // 20/s.
        while d.take_token(0) {}
        answers(&mut d, 0, 1, Status::Ok);
        let mut taken = 0;
        while d.take_token(7 * s) {
            taken += 1;
        }
        assert_eq!(taken, 5 * 10 + 2 * 20);
    }

    #[test]
    fn retry_after_pauses_dispatching() {
        let mut d = throttled(100.0);
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true, false);
        d.on_result(0, Status::Unavailable, false, Some(3 * NS_PER_SEC));
        d.enqueue(reqs.set_due(a));
        assert_eq!(d.next(NS_PER_SEC, &mut reqs), Pump::WakeAt(3 * NS_PER_SEC));
        d.on_tick();
        assert_eq!(d.next(3 * NS_PER_SEC, &mut reqs), Pump::Send(a));
        // A timeout carries no pushback and is not an overload error,
        // though it is an error.
        let t = d.throttle.as_ref().unwrap();
        let (overload, errors) = (t.overload, t.errors);
        d.on_result(4 * NS_PER_SEC, Status::DeadlineExceeded, true, None);
        let t = d.throttle.as_ref().unwrap();
        assert_eq!((t.overload, t.errors), (overload, errors + 1));
    }

    #[test]
    fn a_pause_longer_than_the_window_wakes_once_per_window() {
        // Windows of 5 s; a 20 s `Retry-After` at 1 s pauses until 21 s.
        let mut d = throttled(100.0);
        let window = d.throttle.as_ref().unwrap().window;
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true, false);
        d.on_result(
            NS_PER_SEC,
            Status::Unavailable,
            false,
            Some(20 * NS_PER_SEC),
        );
        d.enqueue(reqs.set_due(a));
        let mut now = NS_PER_SEC;
        let mut wakes = 0;
        loop {
            match d.next(now, &mut reqs) {
                Pump::WakeAt(at) => {
                    assert!(at > now, "a wake-up at {at} is not after {now}");
                    assert!(at <= 21 * NS_PER_SEC, "woke after the pause ended: {at}");
                    now = at;
                    wakes += 1;
                    d.on_tick();
                }
                Pump::Send(slot) => {
                    assert_eq!(slot, a);
                    break;
                }
                Pump::Idle => panic!("a due task with a free slot left idle"),
            }
            assert!(wakes <= 10, "{wakes} wake-ups for a 20 s pause");
        }
        assert_eq!(now, 21 * NS_PER_SEC);
        // One wake-up at each window's end within the pause, then its end.
        assert_eq!(wakes as u64, 20 * NS_PER_SEC / window + 1);
    }
}
