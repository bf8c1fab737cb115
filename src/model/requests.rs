//! The requests in flight: a slot vector reused through a free list, so
//! memory follows what is open, never how many requests a run has made.
//!
//! Every slot has a generation, bumped when its request ends; events carry
//! (slot, generation), so an event about a request that has ended is
//! recognised as stale even after the slot holds a new request.
//!
//! A request's life is a small state machine, and every move goes through
//! a method here: `open` (in flight, no attempt yet) → `begin_attempt`
//! (in flight) → `attempt_over` → `wait_backoff` (backoff) → `backoff_over`
//! (due) → [`wait_token` (waiting for a client-side rate limiter) →
//! `token_granted`] → `begin_attempt` … → `close`. The numbers of requests
//! waiting out a backoff and waiting for a token are derived from those
//! moves in this file alone.
//!
//! **Several attempts in flight.** A hedged request (gRPC hedging) may have
//! up to five attempts out at once. Each request keeps a small bit set of
//! its attempts the client still waits for (`open`, bit k−1 for attempt
//! k): an ordinary request uses bit 0 for its one current attempt, a
//! hedged one a bit per attempt. An answer or a timeout is current only
//! while its bit is set, so each attempt is answered at most once, and a
//! cancelled hedge (the request succeeded or ended) is stale like any
//! other. The common path stays as before: an ordinary request's attempt is
//! current when it is the latest one and the request is in flight. Hedge
//! timers are kept in a side table that only hedged runs allocate.

use crate::policy::budget::Mark;
use crate::policy::RetryState;
use crate::time::Nanos;
use std::ops::{Index, IndexMut};

/// One attempt of one request, as the backend and the network see it: an
/// event about it is stale once the request has moved on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    /// The request's slot.
    pub slot: u32,
    /// The slot's generation when the attempt was sent.
    pub gen: u32,
    /// The attempt's number (1 = the first attempt).
    pub attempt: u32,
}

/// How a request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An attempt succeeded.
    Succeeded,
    /// A status the policy does not retry, or refused by an open breaker.
    Failed,
    /// Given up: limits, deadline, budget, or retries switched off.
    Dropped,
}

/// Where a request is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// The slot holds no request.
    Free,
    /// An attempt is outstanding.
    InFlight,
    /// Waiting for a backoff timer.
    Backoff,
    /// Due, waiting in the dispatcher queue for a token or a free slot.
    Due,
    /// Due, waiting for a token of the client's rate limiter.
    Waiting,
}

/// Bits of [`Request::open`] that hold attempts (attempts 1..=5).
const OPEN_ATTEMPTS: u8 = 0b1_1111;
/// Bit of [`Request::open`] set once hedging is frozen for the request.
const FROZEN: u8 = 0b1000_0000;
/// No hedge timer armed.
const NO_HEDGE: Nanos = Nanos::MAX;

/// One open request.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    /// Bumped when the request ends.
    pub gen: u32,
    /// Attempts sent so far (the current one included).
    pub attempts: u32,
    /// The client that sent it.
    pub client: u32,
    /// Where it is in its life.
    pub phase: Phase,
    /// Arrived after the warm-up, so it counts in the summary.
    pub counted: bool,
    /// When the request arrived (its first attempt, or its enqueueing).
    pub start: Nanos,
    /// What the policy remembers between retries (the last delay, where an
    /// exact pushback restarted the backoff).
    pub backoff: RetryState,
    /// The current attempt holds one of the dispatcher's concurrent slots.
    pub dispatched: bool,
    /// Hedged (several attempts may be out at once).
    pub hedged: bool,
    /// The attempts the client still waits for (bit k−1: attempt k; an
    /// ordinary request uses bit 0 for its current attempt), and
    /// [`FROZEN`] once no more hedges may go.
    pub open: u8,
    /// What the budget remembers for this request (see
    /// [`crate::policy::budget::Mark`]).
    pub mark: Mark,
    /// When it started waiting for a rate-limiter token.
    pub since: Nanos,
}

/// All request slots of a run.
#[derive(Debug, Default)]
pub struct Requests {
    slots: Vec<Request>,
    free: Vec<u32>,
    /// Requests in [`Phase::Backoff`].
    retrying: u64,
    /// Requests in [`Phase::Waiting`].
    waiting: u64,
    /// When each hedged request's next hedge is due ([`NO_HEDGE`]: none);
    /// indexed by slot, allocated by hedged runs only.
    hedge_at: Vec<Nanos>,
}

impl Requests {
    /// Opens a request in a free slot and returns the slot; it is in flight
    /// with no attempt sent yet. `hedged`: several attempts may be out.
    pub fn open(&mut self, client: u32, now: Nanos, counted: bool, hedged: bool) -> u32 {
        let fresh = Request {
            gen: 0,
            attempts: 0,
            client,
            phase: Phase::InFlight,
            counted,
            start: now,
            backoff: RetryState::default(),
            dispatched: false,
            hedged,
            open: 0,
            mark: 0,
            since: 0,
        };
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Request {
                    phase: Phase::Free,
                    ..fresh
                });
                (self.slots.len() - 1) as u32
            }
        };
        let r = &mut self.slots[slot as usize];
        *r = Request {
            gen: r.gen,
            ..fresh
        };
        slot
    }

    /// Sends the request's next attempt: counts it and returns the job
    /// that travels to the backend.
    #[inline]
    pub fn begin_attempt(&mut self, slot: u32) -> Job {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase != Phase::Free && r.phase != Phase::Backoff);
        r.attempts += 1;
        r.phase = Phase::InFlight;
        if r.hedged {
            debug_assert!(r.attempts <= 5, "at most five hedged attempts");
            r.open |= 1 << (r.attempts - 1);
        } else {
            r.open = 1;
        }
        Job {
            slot,
            gen: r.gen,
            attempt: r.attempts,
        }
    }

    /// Whether the client is still waiting for this attempt.
    #[inline]
    pub fn is_current(&self, job: Job) -> bool {
        let r = &self.slots[job.slot as usize];
        if r.gen != job.gen || r.phase != Phase::InFlight {
            return false;
        }
        if r.hedged {
            job.attempt <= 5 && r.open & (1 << (job.attempt - 1)) != 0
        } else {
            r.attempts == job.attempt && r.open != 0
        }
    }

    /// The client stops waiting for this (current) attempt: answered or
    /// timed out.
    #[inline]
    pub fn attempt_over(&mut self, job: Job) {
        let r = &mut self.slots[job.slot as usize];
        if r.hedged {
            r.open &= !(1 << (job.attempt - 1));
        } else {
            r.open = 0;
        }
    }

    /// How many attempts of the request in `slot` the client still waits
    /// for.
    #[inline]
    pub fn open_attempts(&self, slot: u32) -> u32 {
        (self.slots[slot as usize].open & OPEN_ATTEMPTS).count_ones()
    }

    /// No more hedges may go for this request (a budget refused one).
    pub fn freeze_hedging(&mut self, slot: u32) {
        self.slots[slot as usize].open |= FROZEN;
        if let Some(at) = self.hedge_at.get_mut(slot as usize) {
            *at = NO_HEDGE;
        }
    }

    /// Whether hedging is frozen for the request in `slot`.
    pub fn hedging_frozen(&self, slot: u32) -> bool {
        self.slots[slot as usize].open & FROZEN != 0
    }

    /// The request's next hedge is due at `at` (replacing any earlier
    /// plan: only the latest timer is honoured).
    pub fn arm_hedge(&mut self, slot: u32, at: Nanos) {
        let i = slot as usize;
        if self.hedge_at.len() <= i {
            self.hedge_at.resize(self.slots.len().max(i + 1), NO_HEDGE);
        }
        self.hedge_at[i] = at;
    }

    /// A hedge timer for `(slot, gen)` fired at `now`: true (and the timer
    /// is spent) when it is the request's latest timer and the request is
    /// still open and not frozen.
    pub fn hedge_due(&mut self, slot: u32, gen: u32, now: Nanos) -> bool {
        let i = slot as usize;
        let r = &self.slots[i];
        if r.gen != gen || r.phase != Phase::InFlight || r.open & FROZEN != 0 {
            return false;
        }
        match self.hedge_at.get_mut(i) {
            Some(at) if *at == now => {
                *at = NO_HEDGE;
                true
            }
            _ => false,
        }
    }

    /// Whether the request that `gen` was issued for still holds `slot`.
    #[inline]
    pub fn is_open(&self, slot: u32, gen: u32) -> bool {
        let r = &self.slots[slot as usize];
        r.gen == gen && r.phase != Phase::Free
    }

    /// The attempt failed and the request waits out a backoff; returns the
    /// generation its timer carries.
    pub fn wait_backoff(&mut self, slot: u32) -> u32 {
        let r = &mut self.slots[slot as usize];
        debug_assert_eq!(r.phase, Phase::InFlight);
        r.phase = Phase::Backoff;
        self.retrying += 1;
        r.gen
    }

    /// A backoff timer fired: true (and the request is now due) when it is
    /// still the request's current timer.
    #[inline]
    pub fn backoff_over(&mut self, slot: u32, gen: u32) -> bool {
        let r = &mut self.slots[slot as usize];
        if r.gen == gen && r.phase == Phase::Backoff {
            r.phase = Phase::Due;
            self.retrying -= 1;
            true
        } else {
            false
        }
    }

    /// Makes a request that waits (backoff or due) due now, cutting its
    /// backoff short; false when it was not waiting.
    pub fn hurry(&mut self, slot: u32) -> bool {
        let r = &mut self.slots[slot as usize];
        match r.phase {
            Phase::Backoff => {
                r.phase = Phase::Due;
                self.retrying -= 1;
                true
            }
            Phase::Due => true,
            _ => false,
        }
    }

    /// Marks the request due (waiting for the dispatcher).
    pub fn set_due(&mut self, slot: u32) {
        self.slots[slot as usize].phase = Phase::Due;
    }

    /// The request waits from `now` for a token of its client's rate
    /// limiter.
    pub fn wait_token(&mut self, slot: u32, now: Nanos) {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase == Phase::InFlight || r.phase == Phase::Due);
        r.phase = Phase::Waiting;
        r.since = now;
        self.waiting += 1;
    }

    /// Whether the request that `gen` was issued for waits for a token.
    #[inline]
    pub fn is_waiting(&self, slot: u32, gen: u32) -> bool {
        let r = &self.slots[slot as usize];
        r.gen == gen && r.phase == Phase::Waiting
    }

    /// The request got its token at `now`: it is due; returns how long it
    /// waited.
    pub fn token_granted(&mut self, slot: u32, now: Nanos) -> Nanos {
        let r = &mut self.slots[slot as usize];
        debug_assert_eq!(r.phase, Phase::Waiting);
        r.phase = Phase::Due;
        self.waiting -= 1;
        now.saturating_sub(r.since)
    }

    /// Requests waiting out a backoff now.
    #[inline]
    pub fn retrying(&self) -> u64 {
        self.retrying
    }

    /// Requests waiting for a rate-limiter token now.
    #[inline]
    pub fn waiting(&self) -> u64 {
        self.waiting
    }

    /// Ends the request in `slot`: frees the slot and makes every event
    /// still about it stale.
    pub fn close(&mut self, slot: u32) {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase != Phase::Free, "a request ended twice");
        match r.phase {
            Phase::Backoff => self.retrying -= 1,
            Phase::Waiting => self.waiting -= 1,
            _ => {}
        }
        r.phase = Phase::Free;
        r.open = 0;
        r.gen = r.gen.wrapping_add(1);
        self.free.push(slot);
    }

    /// Slots ever used (open or free).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no slot was ever used.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The requests still open.
    pub fn open_requests(&self) -> impl Iterator<Item = &Request> {
        self.slots.iter().filter(|r| r.phase != Phase::Free)
    }
}

impl Index<usize> for Requests {
    type Output = Request;
    #[inline]
    fn index(&self, slot: usize) -> &Request {
        &self.slots[slot]
    }
}

impl IndexMut<usize> for Requests {
    #[inline]
    fn index_mut(&mut self, slot: usize) -> &mut Request {
        &mut self.slots[slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_with_a_new_generation() {
        let mut t = Requests::default();
        let a = t.open(7, 100, true, false);
        let b = t.open(8, 200, false, false);
        assert_eq!((a, b), (0, 1));
        let gen = t[a as usize].gen;
        t.close(a);
        assert_eq!(t[a as usize].phase, Phase::Free);
        let c = t.open(9, 300, true, false);
        assert_eq!(c, a, "the freed slot is reused");
        assert_eq!(
            t[c as usize].gen,
            gen + 1,
            "old events about slot 0 are stale"
        );
        assert_eq!((t[c as usize].client, t[c as usize].start), (9, 300));
        assert_eq!(t.len(), 2);
        assert_eq!(t.open_requests().count(), 2);
    }

    #[test]
    fn hedged_attempts_are_current_until_each_is_over() {
        let mut t = Requests::default();
        let s = t.open(0, 0, true, true);
        let a1 = t.begin_attempt(s);
        let a2 = t.begin_attempt(s);
        let a3 = t.begin_attempt(s);
        assert!(t.is_current(a1) && t.is_current(a2) && t.is_current(a3));
        assert_eq!(t.open_attempts(s), 3);
        t.attempt_over(a2);
        assert!(t.is_current(a1) && !t.is_current(a2) && t.is_current(a3));
        assert_eq!(t.open_attempts(s), 2);
        // Timers: only the latest counts, and a frozen request has none.
        t.arm_hedge(s, 50);
        t.arm_hedge(s, 80);
        assert!(!t.hedge_due(s, 0, 50));
        assert!(t.hedge_due(s, 0, 80));
        assert!(!t.hedge_due(s, 0, 80), "spent");
        t.arm_hedge(s, 90);
        t.freeze_hedging(s);
        assert!(!t.hedge_due(s, 0, 90));
        t.close(s);
        assert!(!t.is_current(a1) && !t.is_current(a3));
        // An ordinary request: only its latest attempt, once.
        let o = t.open(0, 0, true, false);
        let b1 = t.begin_attempt(o);
        t.attempt_over(b1);
        assert!(!t.is_current(b1));
        let b2 = t.begin_attempt(o);
        assert!(t.is_current(b2) && !t.is_current(b1));
    }
}
