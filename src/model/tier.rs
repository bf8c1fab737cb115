//! The tiers of a run: the top backend (tier 0) and those below it
//! (`downstream`), and the workers that wait on them.
//!
//! A [`Tier`] is a backend with its own meters, fed by requests: at the
//! top, the clients' requests; below, *calls*: while a worker of the tier
//! above serves an attempt, it makes `calls` calls to this tier, each a
//! small request of its own. Either kind has a slot and generation in the
//! tier's [`Requests`] table and is retried through the tier's policy by
//! its [`Clients`] (at the top, the scenario's clients; below, one client:
//! the whole tier above). [`Holds`] records, per worker of a calling tier,
//! the attempt it serves and the calls it waits for; `run.rs` (its `life`
//! part) carries every request through the one lifecycle, keyed by tier.

use super::backend::Backend;
use super::clients::Clients;
use super::faults::Timeline;
use super::meter::Meter;
use super::requests::{Job, ReadAhead, Requests};
use super::run::Progress;
use crate::engine::{LaneId, OldestFirst};
use crate::policy::Policy;
use crate::time::{secs, Nanos};

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

/// One tier: the top backend (tier 0) or one below it, with the requests
/// (or calls) made to it.
#[derive(Clone, Debug)]
pub struct Tier<'a> {
    /// The tier's name (`backend.name` at the top, `downstream[].name`
    /// below).
    pub name: &'a str,
    /// What serves its attempts.
    pub backend: Backend,
    /// Its time series and counts.
    pub meter: Meter,
    /// The requests (at the top) or calls (below) made to it, one slot
    /// each.
    pub reqs: Requests,
    /// The callers' retry state (below the top, one client: the tier
    /// above).
    pub clients: Clients<'a>,
    /// The policy its callers retry with.
    pub policy: &'a Policy,
    /// How long a caller waits for one attempt.
    pub attempt_timeout: Option<Nanos>,
    /// Its attempts' timeouts, of which only the oldest unanswered one is
    /// an event (none without an `attempt_timeout`).
    pub timeouts: Option<OldestFirst<Job>>,
    /// Its faults and actions.
    pub timeline: Timeline,
    /// Whether attempts reach it and answers leave it without network
    /// time (always below the top: calls take none).
    pub instant: bool,
    /// Calls each attempt served above makes to it (0 at the top).
    pub fan_out: u32,
    /// Whether callers that stop waiting tell it (`propagate_cancel`).
    pub propagate_cancel: bool,
    /// The attempt number from which an ending counts in the tail the
    /// `attempt_tail` alert watches (never, below the top).
    pub tail_attempt: u32,
    /// The lane of a fixed backoff's timers, if its policy has one.
    pub backoff_lane: Option<LaneId>,
    /// How far `backoff_lane` has had its requests' slots read ahead.
    pub backoff_read: ReadAhead,
    /// Its workers waiting on their calls to the tier below.
    pub holds: Holds,
    /// For each slot, the worker above waiting for it, if any (below the
    /// top only).
    callers: Vec<Caller>,
    /// Attempts answered with an error after the warm-up.
    pub failed_answers: u64,
}

impl<'a> Tier<'a> {
    /// Its progress for a stop check (see [`Progress`]), read when bins
    /// have just closed.
    pub fn progress(&self) -> Progress<'_> {
        let edge = self.meter.col.closed_until();
        let oldest = self.reqs.peek_oldest_start();
        let warmup = self.meter.warmup();
        Progress {
            bins: self.meter.col.rows(),
            summary: &self.meter.summary,
            peak_offered_1s: self.meter.col.peak_1s.max(),
            capacity_rps: self.backend.nominal_capacity(),
            oldest_open_age_s: oldest
                .filter(|&start| start >= warmup)
                .map(|start| secs(edge.saturating_sub(start))),
        }
    }

    /// The request in `slot` makes its next attempt at `now`: begun,
    /// counted in the current bin (a first attempt, or a retry with its
    /// gap since the last one) and told to its client. The one place an
    /// attempt starts, whether it goes out or fails at the client.
    #[inline(always)]
    pub fn start_attempt(&mut self, slot: u32, now: Nanos) -> Job {
        let r = &self.reqs[slot as usize];
        let (previous, client) = (r.last_sent, r.client);
        let job = self.reqs.begin_attempt(slot, now);
        if job.attempt == 1 {
            self.meter.col.now.first_attempts += 1;
        } else {
            self.meter.col.now.retries += 1;
            self.meter.col.record_retry_gap(now - previous);
        }
        self.clients.on_send(client);
        job
    }

    /// A tier with no request yet, reached without network time, with no
    /// attempt timeout, fixed backoff lane, calls or tail; the run sets
    /// what differs.
    pub fn new(
        name: &'a str,
        backend: Backend,
        meter: Meter,
        clients: Clients<'a>,
        policy: &'a Policy,
        timeline: Timeline,
    ) -> Tier<'a> {
        Tier {
            name,
            backend,
            meter,
            reqs: Requests::default(),
            clients,
            policy,
            attempt_timeout: None,
            timeouts: None,
            timeline,
            instant: true,
            fan_out: 0,
            propagate_cancel: false,
            tail_attempt: u32::MAX,
            backoff_lane: None,
            backoff_read: ReadAhead::default(),
            holds: Holds::default(),
            callers: Vec::new(),
            failed_answers: 0,
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

    /// Who waits for the call in `slot`, and forgets it (`None` at the
    /// top, whose requests come from clients).
    #[inline]
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
#[derive(Clone, Debug, Default)]
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
