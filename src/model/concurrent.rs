//! The `concurrency` backend's bookkeeping: a server with no waiting room
//! whose attempts slow each other down.
//!
//! Every attempt that gets in is served at once and takes
//! `base + per_request × n`, where `n` is the number of attempts already in
//! service when it starts (so an attempt alone takes `base`). With
//! `max_concurrency`, an attempt that finds that many in service is
//! rejected. The time is fixed when the attempt starts: later arrivals do
//! not stretch it, which keeps every completion one event and the model
//! exact to state (a server whose attempts share a lock, a connection pool
//! or a CPU, measured as "latency grows with the load at the start").
//!
//! Slots hold the attempts in service; a slot's generation is bumped
//! whenever its work ends or is taken away (a crash), so a stale completion
//! event is recognised, as for the pool's workers.

use super::pool::Work;
use crate::time::Nanos;

/// One attempt in service.
#[derive(Clone, Copy, Debug)]
struct Slot {
    wgen: u32,
    busy: bool,
    work: Work,
}

/// The attempts in service on a `concurrency` backend.
#[derive(Clone, Debug)]
pub struct Server {
    base: Nanos,
    per_request: Nanos,
    slots: Vec<Slot>,
    free: Vec<u32>,
    in_service: u64,
}

impl Server {
    /// A server where an attempt takes `base + per_request × n`.
    pub fn new(base: Nanos, per_request: Nanos) -> Server {
        Server {
            base,
            per_request,
            slots: Vec::new(),
            free: Vec::new(),
            in_service: 0,
        }
    }

    /// Attempts in service now.
    pub fn in_service(&self) -> u64 {
        self.in_service
    }

    /// How long an attempt starting now is served: `base + per_request ×`
    /// the attempts already in service.
    pub fn service_time(&self) -> Nanos {
        self.base
            .saturating_add(self.per_request.saturating_mul(self.in_service))
    }

    /// Time to serve one attempt with `n` in service in all (itself
    /// included), in nanoseconds.
    pub fn time_at(&self, n: f64) -> f64 {
        self.base as f64 + self.per_request as f64 * (n - 1.0).max(0.0)
    }

    /// Puts `work` in service; returns its slot and generation for the
    /// completion event.
    pub fn start(&mut self, work: Work) -> (u32, u32) {
        self.in_service += 1;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    wgen: 0,
                    busy: false,
                    work,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let s = &mut self.slots[slot as usize];
        debug_assert!(!s.busy);
        s.busy = true;
        s.work = work;
        (slot, s.wgen)
    }

    /// The work of `slot` started with generation `wgen` is over: returns
    /// it and frees the slot, or `None` when the event is stale.
    pub fn finish(&mut self, slot: u32, wgen: u32) -> Option<Work> {
        let s = self.slots.get_mut(slot as usize)?;
        if !s.busy || s.wgen != wgen {
            return None;
        }
        s.busy = false;
        s.wgen = s.wgen.wrapping_add(1);
        self.in_service -= 1;
        self.free.push(slot);
        Some(s.work)
    }

    /// The work of `slot` started with generation `wgen`, left in service;
    /// `None` when the event is stale.
    pub fn peek(&self, slot: u32, wgen: u32) -> Option<Work> {
        let s = self.slots.get(slot as usize)?;
        (s.busy && s.wgen == wgen).then_some(s.work)
    }

    /// A crash: takes every attempt being served out of service (work
    /// that only admits or fails an attempt goes on), in slot order.
    pub fn drain(&mut self) -> Vec<Work> {
        let mut out = Vec::new();
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.busy && matches!(s.work, Work::Serve(_)) {
                s.busy = false;
                s.wgen = s.wgen.wrapping_add(1);
                self.in_service -= 1;
                self.free.push(i as u32);
                out.push(s.work);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::requests::Job;

    fn job(slot: u32) -> Job {
        Job {
            slot,
            gen: 0,
            attempt: 1,
        }
    }

    #[test]
    fn each_attempt_in_service_slows_the_next_one() {
        let mut s = Server::new(1000, 10);
        assert_eq!(s.service_time(), 1000);
        let (a, ga) = s.start(Work::Serve(job(0)));
        assert_eq!(s.service_time(), 1010);
        let (b, gb) = s.start(Work::Serve(job(1)));
        assert_eq!((s.in_service(), s.service_time()), (2, 1020));
        assert_eq!(s.finish(a, ga), Some(Work::Serve(job(0))));
        assert_eq!(s.finish(a, ga), None, "stale");
        let (c, _) = s.start(Work::Serve(job(2)));
        assert_eq!(c, a, "slots are reused");
        assert_eq!(s.drain().len(), 2);
        assert_eq!(s.finish(b, gb), None, "a crash makes completions stale");
        assert_eq!(s.in_service(), 0);
    }
}
