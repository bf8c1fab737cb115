//! The tiers below the top backend (`downstream`) and the workers that
//! wait on them.
//!
//! A downstream [`Tier`] is a backend of its own with its own meters, fed
//! by *calls*: while a worker of the tier above serves an attempt, it
//! makes `calls` calls to this tier, each a small request of its own
//! (slots and generations in a [`Requests`] table) retried through the
//! tier's policy by a [`Clients`] whose one client is the whole tier above.
//! [`Holds`] records, per worker of a calling tier, the attempt it serves
//! and the calls it waits for; `run.rs` (its `chain` part) routes the
//! events between them.

use super::backend::Backend;
use super::clients::Clients;
use super::faults::Timeline;
use super::meter::Meter;
use super::requests::{Job, Requests};
use crate::engine::OldestFirst;
use crate::policy::Policy;
use crate::time::Nanos;

/// No worker / no caller.
const NONE: u32 = u32::MAX;

/// The worker of the tier above that waits for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The worker.
    pub worker: u32,
    /// Its generation when it started waiting.
    pub wgen: u32,
}

/// One tier below the top backend, with the calls made to it.
#[derive(Debug)]
pub struct Tier<'a> {
    /// The tier's name (`downstream[].name`).
    pub name: &'a str,
    /// What serves its attempts.
    pub backend: Backend,
    /// Its time series and counts.
    pub meter: Meter,
    /// The calls made to it, one slot each.
    pub calls: Requests,
    /// The callers' retry state (one client: the tier above).
    pub clients: Clients<'a>,
    /// The policy the tier above calls it with.
    pub policy: &'a Policy,
    /// How long a caller waits for one attempt.
    pub attempt_timeout: Option<Nanos>,
    /// Calls each attempt served above makes to it.
    pub fan_out: u32,
    /// Whether callers that stop waiting tell it (`propagate_cancel`).
    pub propagate_cancel: bool,
    /// Its faults and actions.
    pub timeline: Timeline,
    /// For each call slot, the worker above waiting for it, if any.
    callers: Vec<Caller>,
    /// Attempts answered with an error after the warm-up.
    pub failed_answers: u64,
    /// Its call attempts' timeouts, of which only the oldest unanswered
    /// one is an event (none without an `attempt_timeout`).
    pub timeouts: Option<OldestFirst<Job>>,
}

impl<'a> Tier<'a> {
    /// A tier with no call yet.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        name: &'a str,
        backend: Backend,
        meter: Meter,
        clients: Clients<'a>,
        policy: &'a Policy,
        attempt_timeout: Option<Nanos>,
        fan_out: u32,
        propagate_cancel: bool,
        timeline: Timeline,
        timeouts: Option<OldestFirst<Job>>,
    ) -> Tier<'a> {
        Tier {
            name,
            backend,
            meter,
            calls: Requests::default(),
            clients,
            policy,
            attempt_timeout,
            fan_out,
            propagate_cancel,
            timeline,
            callers: Vec::new(),
            failed_answers: 0,
            timeouts,
        }
    }

    /// Records who waits for the call in `slot` (`None`: nobody).
    pub fn set_caller(&mut self, slot: u32, caller: Option<Caller>) {
        let i = slot as usize;
        if self.callers.len() <= i {
            self.callers.resize(
                i + 1,
                Caller {
                    worker: NONE,
                    wgen: 0,
                },
            );
        }
        self.callers[i] = caller.unwrap_or(Caller {
            worker: NONE,
            wgen: 0,
        });
    }

    /// Who waits for the call in `slot`, and forgets it.
    pub fn take_caller(&mut self, slot: u32) -> Option<Caller> {
        let c = self.callers.get_mut(slot as usize)?;
        let out = (c.worker != NONE).then_some(*c);
        c.worker = NONE;
        out
    }
}

/// What one worker waiting on the tier below holds.
#[derive(Clone, Debug)]
pub struct Hold {
    /// Waiting now.
    pub active: bool,
    /// The worker's generation when it started waiting.
    pub wgen: u32,
    /// The attempt it serves.
    pub job: Job,
    /// Calls not yet answered.
    pub pending: u32,
    /// Its calls as (slot, generation) in the tier below.
    pub calls: Vec<(u32, u32)>,
}

/// The workers of one calling tier that wait on the tier below.
#[derive(Debug, Default)]
pub struct Holds {
    by_worker: Vec<Hold>,
    /// For each slot of the calling tier's own table, the worker holding
    /// its current attempt.
    by_slot: Vec<u32>,
}

impl Holds {
    /// Worker `w` starts waiting while it serves `job`; returns its hold,
    /// emptied, to fill with its calls.
    pub fn start(&mut self, w: u32, wgen: u32, job: Job, pending: u32) -> &mut Hold {
        let i = w as usize;
        if self.by_worker.len() <= i {
            self.by_worker.resize(
                i + 1,
                Hold {
                    active: false,
                    wgen: 0,
                    job,
                    pending: 0,
                    calls: Vec::new(),
                },
            );
        }
        let s = job.slot as usize;
        if self.by_slot.len() <= s {
            self.by_slot.resize(s + 1, NONE);
        }
        self.by_slot[s] = w;
        let h = &mut self.by_worker[i];
        h.active = true;
        h.wgen = wgen;
        h.job = job;
        h.pending = pending;
        h.calls.clear();
        h
    }

    /// Worker `w`'s hold, when it is waiting with generation `wgen`.
    pub fn get_mut(&mut self, w: u32, wgen: u32) -> Option<&mut Hold> {
        self.by_worker
            .get_mut(w as usize)
            .filter(|h| h.active && h.wgen == wgen)
    }

    /// Ends worker `w`'s wait; returns the attempt it served, its
    /// generation and its calls (the caller hands the list back with
    /// [`Holds::give_back`] to keep its allocation).
    pub fn end(&mut self, w: u32) -> (Job, u32, Vec<(u32, u32)>) {
        let h = &mut self.by_worker[w as usize];
        h.active = false;
        let (job, wgen) = (h.job, h.wgen);
        let calls = std::mem::take(&mut h.calls);
        if self.by_slot.get(job.slot as usize) == Some(&w) {
            self.by_slot[job.slot as usize] = NONE;
        }
        (job, wgen, calls)
    }

    /// Returns the call list taken by [`Holds::end`], emptied.
    pub fn give_back(&mut self, w: u32, mut calls: Vec<(u32, u32)>) {
        calls.clear();
        let h = &mut self.by_worker[w as usize];
        if !h.active && h.calls.capacity() == 0 {
            h.calls = calls;
        }
    }

    /// The worker waiting while it serves the current attempt of the
    /// calling tier's slot `slot`, if one is.
    pub fn holder(&self, slot: u32) -> Option<u32> {
        let w = *self.by_slot.get(slot as usize)?;
        (w != NONE && self.by_worker[w as usize].active).then_some(w)
    }

    /// The workers waiting now, in worker order.
    pub fn waiting(&self) -> Vec<u32> {
        (0..self.by_worker.len() as u32)
            .filter(|&w| self.by_worker[w as usize].active)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(slot: u32) -> Job {
        Job {
            slot,
            gen: 0,
            attempt: 1,
        }
    }

    #[test]
    fn a_hold_is_found_by_worker_and_by_slot_until_it_ends() {
        let mut h = Holds::default();
        h.start(3, 7, job(5), 2).calls.push((0, 0));
        assert_eq!(h.holder(5), Some(3));
        assert!(h.get_mut(3, 7).is_some());
        assert!(h.get_mut(3, 8).is_none(), "another generation is stale");
        let (j, wgen, calls) = h.end(3);
        assert_eq!((j, wgen, calls.len()), (job(5), 7, 1));
        h.give_back(3, calls);
        assert_eq!(h.holder(5), None);
        assert!(h.get_mut(3, 7).is_none());
        assert!(h.waiting().is_empty());
    }

    #[test]
    fn a_newer_hold_of_the_same_slot_is_not_forgotten_by_an_older_one() {
        let mut h = Holds::default();
        h.start(0, 1, job(9), 1);
        h.start(1, 1, job(9), 1);
        h.end(0);
        assert_eq!(h.holder(9), Some(1));
        assert_eq!(h.waiting(), vec![1]);
    }
}
