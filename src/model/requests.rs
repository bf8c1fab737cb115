//! The requests in flight: a slot vector reused through a free list, so
//! memory follows what is open, never how many requests a run has made.
//!
//! Every slot has a generation, bumped when its request ends; events carry
//! (slot, generation), so an event about a request that has ended is
//! recognised as stale even after the slot holds a new request.

use crate::time::Nanos;
use std::ops::{Index, IndexMut};

/// One attempt of one request, as the backend and the network see it: an
/// event about it is stale once the request has moved on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Job {
    pub slot: u32,
    pub gen: u32,
    pub attempt: u32,
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
    pub client: u32,
    pub phase: Phase,
    /// Arrived after the warm-up, so it counts in the summary.
    pub counted: bool,
    /// When the request arrived (its first attempt, or its enqueueing).
    pub start: Nanos,
    /// The last backoff delay (decorrelated jitter keeps it per request).
    pub prev_delay: Nanos,
    /// The current attempt holds one of the dispatcher's concurrent slots.
    pub dispatched: bool,
    /// Attempts made before the last exact pushback (gRPC restarts the
    /// backoff sequence after one).
    pub pushback_at: u32,
}

/// All request slots of a run.
#[derive(Debug, Default)]
pub struct Requests {
    slots: Vec<Request>,
    free: Vec<u32>,
}

impl Requests {
    /// Opens a request in a free slot and returns the slot.
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
                    prev_delay: 0,
                    dispatched: false,
                    pushback_at: 0,
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
            prev_delay: 0,
            dispatched: false,
            pushback_at: 0,
        };
        slot
    }

    /// Ends the request in `slot`: frees the slot and makes every event
    /// still about it stale.
    pub fn close(&mut self, slot: u32) {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase != Phase::Free, "a request ended twice");
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
