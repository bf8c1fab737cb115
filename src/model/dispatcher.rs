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

use super::requests::{Phase, Request, Requests};
use crate::scenario::spec::DispatcherSpec;
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
    /// Due tasks as (slot, generation), oldest first; entries whose task has
    /// moved on are skipped.
    due: VecDeque<(u32, u32)>,
    /// Whether a wake-up for the next token is already scheduled.
    tick_pending: bool,
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
        Dispatcher {
            rate: spec.max_dispatches_per_second / NS_PER_SEC as f64,
            burst,
            tokens: burst,
            last: 0,
            max_concurrent: spec.max_concurrent_dispatches.max(1),
            in_flight: 0,
            due: VecDeque::new(),
            tick_pending: false,
        }
    }

    fn refill(&mut self, now: Nanos) {
        if now > self.last {
            self.tokens = (self.tokens + (now - self.last) as f64 * self.rate).min(self.burst);
            self.last = now;
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

    /// A task became due: it waits in line.
    pub fn enqueue(&mut self, slot: u32, gen: u32) {
        self.due.push_back((slot, gen));
    }

    /// The next task to dispatch at `now`, if the limits allow one; takes
    /// its token and its concurrent slot.
    pub fn next(&mut self, now: Nanos, reqs: &mut Requests) -> Pump {
        while let Some(&(slot, gen)) = self.due.front() {
            let r = &reqs[slot as usize];
            if r.gen != gen || r.phase != Phase::Due {
                self.due.pop_front();
                continue;
            }
            if !self.has_slot() {
                return Pump::Idle;
            }
            if !self.take_token(now) {
                if self.tick_pending {
                    return Pump::Idle;
                }
                self.tick_pending = true;
                return Pump::WakeAt(self.next_token_at(now));
            }
            self.due.pop_front();
            self.admit(&mut reqs[slot as usize]);
            return Pump::Send(slot);
        }
        Pump::Idle
    }

    /// The wake-up for the next token came.
    pub fn on_tick(&mut self) {
        self.tick_pending = false;
    }

    /// Cloud Tasks' RunTask: `r` is dispatched now whatever the limits; it
    /// holds a concurrent slot like any dispatch.
    pub fn force(&mut self, r: &mut Request) {
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
            reqs.set_due(s);
            d.enqueue(s, reqs[s as usize].gen);
        }
        assert_eq!(d.next(0, &mut reqs), Pump::Send(0));
        assert_eq!(d.next(0, &mut reqs), Pump::Send(1));
        assert_eq!(d.in_flight(), 2);
        assert_eq!(d.next(0, &mut reqs), Pump::Idle, "two concurrent at most");
        // Slot 0's attempt ends: its slot frees, once.
        reqs.begin_attempt(0);
        assert!(d.release(&mut reqs[0]));
        assert!(!d.release(&mut reqs[0]));
        assert_eq!(d.next(0, &mut reqs), Pump::Send(2));
        reqs.begin_attempt(2);
        d.release(&mut reqs[2]);
        // The bucket (3 tokens) is empty: wake up at the next token, once.
        assert_eq!(d.next(0, &mut reqs), Pump::WakeAt(100_000_000));
        assert_eq!(d.next(0, &mut reqs), Pump::Idle);
        d.on_tick();
        assert_eq!(d.next(100_000_000, &mut reqs), Pump::Send(3));
    }

    #[test]
    fn stale_entries_are_skipped() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 2));
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true, false);
        reqs.set_due(a);
        d.enqueue(a, reqs[a as usize].gen);
        reqs.close(a);
        assert_eq!(d.next(0, &mut reqs), Pump::Idle);
        assert_eq!(d.in_flight(), 0);
    }
}
