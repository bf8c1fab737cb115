//! The requests in flight: a slot vector reused through a free list, so
//! memory follows what is open, never how many requests a run has made.
//!
//! Every slot has a generation, bumped when its request ends; events carry
//! (slot, generation), so an event about a request that has ended is
//! recognised as stale even after the slot holds a new request.
//!
//! A request's life is a small state machine, and every move goes through
//! a method here: `open` (in flight, no attempt yet) → `begin_attempt`
//! (in flight) → `wait_backoff` (backoff) → `backoff_over` (due) →
//! `begin_attempt` … → `close`. The number of requests waiting out a
//! backoff is derived from those moves in this file alone.

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
}

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
}

/// All request slots of a run.
#[derive(Debug, Default)]
pub struct Requests {
    slots: Vec<Request>,
    free: Vec<u32>,
    /// Requests in [`Phase::Backoff`].
    retrying: u64,
}

impl Requests {
    /// Opens a request in a free slot and returns the slot; it is in flight
    /// with no attempt sent yet.
    pub fn open(&mut self, client: u32, now: Nanos, counted: bool) -> u32 {
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Request {
                    gen: 0,
                    attempts: 0,
                    client: 0,
                    phase: Phase::Free,
                    counted: false,
                    start: 0,
                    backoff: RetryState::default(),
                    dispatched: false,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let r = &mut self.slots[slot as usize];
        *r = Request {
            gen: r.gen,
            attempts: 0,
            client,
            phase: Phase::InFlight,
            counted,
            start: now,
            backoff: RetryState::default(),
            dispatched: false,
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
        r.gen == job.gen && r.attempts == job.attempt && r.phase == Phase::InFlight
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

    /// Requests waiting out a backoff now.
    #[inline]
    pub fn retrying(&self) -> u64 {
        self.retrying
    }

    /// Ends the request in `slot`: frees the slot and makes every event
    /// still about it stale.
    pub fn close(&mut self, slot: u32) {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase != Phase::Free, "a request ended twice");
        if r.phase == Phase::Backoff {
            self.retrying -= 1;
        }
        r.phase = Phase::Free;
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
        let a = t.open(7, 100, true);
        let b = t.open(8, 200, false);
        assert_eq!((a, b), (0, 1));
        let gen = t[a as usize].gen;
        t.close(a);
        assert_eq!(t[a as usize].phase, Phase::Free);
        let c = t.open(9, 300, true);
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
}
