//! The queue backend's bookkeeping: workers, the waiting room and the
//! rejections waiting to be paid for. It decides who does what next; the
//! backend (`backend.rs`) decides what the work costs and answers.
//!
//! A freed worker first pays for a pending rejection (rejections go before
//! the waiting room), then takes the next waiting attempt (FIFO or LIFO),
//! else goes idle. Workers beyond the capacity a fault leaves are parked:
//! they finish what they are doing and take nothing new until capacity
//! returns.

use super::requests::{Job, ReadAhead, Requests};
use crate::status::Status;
use std::collections::VecDeque;

/// What a worker is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerState {
    /// Waiting for work.
    Idle,
    /// Doing [`Worker::work`].
    Busy,
    /// Beyond the capacity a fault left; takes no work.
    Parked,
}

/// The work a busy worker is paid for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Work {
    /// Serving an attempt (admission + service time).
    Serve(Job),
    /// Admitting an attempt during an outage; it fails with the status,
    /// after response headers when the flag is set (`headers_first`).
    Fail(Job, Status, bool),
    /// Admitting an expired attempt that `drop_expired` discards.
    Discard(Job),
    /// Rejecting an attempt that found the waiting room full: costs
    /// `reject_cost`, and the rejection is answered when it is done.
    Reject(Job),
}

/// One worker.
#[derive(Clone, Copy, Debug)]
pub struct Worker {
    /// What it is doing.
    pub state: WorkerState,
    /// Bumped whenever the worker's work ends or is taken away (a crash), so
    /// a stale completion event is recognised.
    pub wgen: u32,
    /// The work it is paid for (meaningful while busy).
    pub work: Work,
}

/// What a freed worker does next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next {
    /// Pay for this rejection.
    Reject(Job),
    /// Take this attempt from the waiting room.
    Take(Job),
    /// Nothing to do (now idle or parked).
    Rest,
}

/// Workers, waiting room and pending rejections of one run.
#[derive(Clone, Debug)]
pub struct Pool {
    workers: Vec<Worker>,
    idle: Vec<u32>,
    busy: u64,
    active: u32,
    waiting: VecDeque<Job>,
    queue_limit: u64,
    lifo: bool,
    /// Rejections waiting for a worker to pay their cost. A saturated
    /// frontend is slow even to say no, so its clients time out instead of
    /// retrying at once.
    rejects: VecDeque<Job>,
    /// How far `rejects` has had its requests' slots read ahead.
    rejects_read: ReadAhead,
    /// How far the waiting room has had its requests' slots read ahead.
    waiting_read: ReadAhead,
}

impl Pool {
    /// `workers` idle workers in front of a waiting room of `queue_limit`.
    pub fn new(workers: u32, queue_limit: u64, lifo: bool) -> Pool {
        Pool {
            workers: vec![
                Worker {
                    state: WorkerState::Idle,
                    wgen: 0,
                    work: Work::Discard(Job {
                        slot: 0,
                        gen: 0,
                        attempt: 0,
                    }),
                };
                workers as usize
            ],
            idle: (0..workers).rev().collect(),
            busy: 0,
            active: workers,
            waiting: VecDeque::new(),
            queue_limit,
            lifo,
            rejects: VecDeque::new(),
            rejects_read: ReadAhead::default(),
            waiting_read: ReadAhead::default(),
        }
    }

    /// Workers busy now.
    pub fn busy(&self) -> u64 {
        self.busy
    }

    /// Workers the faults leave available.
    pub fn active(&self) -> u32 {
        self.active
    }

    /// Attempts in the waiting room.
    pub fn queue_len(&self) -> u64 {
        self.waiting.len() as u64
    }

    /// Worker `w`.
    pub fn worker(&self, w: u32) -> Worker {
        self.workers[w as usize]
    }

    /// All workers, by index.
    pub fn len(&self) -> u32 {
        self.workers.len() as u32
    }

    /// Whether there are no workers at all.
    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// An idle worker, if any.
    pub fn take_idle(&mut self) -> Option<u32> {
        self.idle.pop()
    }

    /// Puts an arriving attempt in the waiting room; false when it is full.
    pub fn enqueue(&mut self, job: Job) -> bool {
        if self.queue_len() < self.queue_limit {
            self.waiting.push_back(job);
            true
        } else {
            false
        }
    }

    /// A rejection to be paid for by the next free worker.
    pub fn push_reject(&mut self, job: Job) {
        self.rejects.push_back(job);
    }

    /// Marks worker `w` busy with `work`; returns its generation for the
    /// completion event.
    pub fn occupy(&mut self, w: u32, work: Work) -> u32 {
        let worker = &mut self.workers[w as usize];
        debug_assert!(worker.state != WorkerState::Busy);
        worker.state = WorkerState::Busy;
        worker.work = work;
        self.busy += 1;
        worker.wgen
    }

    /// Worker `w`'s work is over (done, or taken away by a crash): decides
    /// what it does next. `Take` and `Reject` leave it to the caller to
    /// `occupy` it.
    pub fn free(&mut self, w: u32) -> Next {
        let worker = &mut self.workers[w as usize];
        if worker.state == WorkerState::Busy {
            self.busy -= 1;
        }
        worker.wgen = worker.wgen.wrapping_add(1);
        if w >= self.active {
            worker.state = WorkerState::Parked;
            return Next::Rest;
        }
        worker.state = WorkerState::Idle;
        if let Some(job) = self.rejects.pop_front() {
            return Next::Reject(job);
        }
        let next = if self.lifo {
            self.waiting.pop_back()
        } else {
            self.waiting.pop_front()
        };
        match next {
            Some(job) => Next::Take(job),
            None => {
                self.idle.push(w);
                Next::Rest
            }
        }
    }

    /// A worker just took what `next` says: when few of the jobs it will
    /// take next from the same queue have had their request's slot read,
    /// reads the next batch at once ([`Requests::read_ahead`]). Their
    /// answers will need those slots, cold by then in a storm whose open
    /// requests outgrow the caches; read together, the misses overlap.
    /// Only a hint: it changes nothing.
    #[inline]
    pub fn read_ahead(&mut self, next: Next, reqs: &Requests) {
        if reqs.outgrow_cache() {
            self.read_queue_ahead(next, reqs);
        }
    }

    #[inline(never)]
    fn read_queue_ahead(&mut self, next: Next, reqs: &Requests) {
        // The queue the worker took from, and whether it takes from the back.
        let (read, queue, from_back) = match next {
            Next::Reject(_) => (&mut self.rejects_read, &self.rejects, false),
            Next::Take(_) => (&mut self.waiting_read, &self.waiting, self.lifo),
            Next::Rest => return,
        };
        let Some((skip, n)) = read.took_one() else {
            return;
        };
        let slot = |j: &Job| j.slot;
        if from_back {
            reqs.read_ahead(queue.iter().rev().skip(skip).take(n).map(slot));
        } else {
            reqs.read_ahead(queue.iter().skip(skip).take(n).map(slot));
        }
    }

    /// Changes the number of available workers; returns the parked workers
    /// that may work again (the caller frees each).
    pub fn set_active(&mut self, n: u32) -> Vec<u32> {
        let old = self.active;
        self.active = n;
        if n < old {
            let workers = &mut self.workers;
            self.idle.retain(|&w| {
                if w >= n {
                    workers[w as usize].state = WorkerState::Parked;
                    false
                } else {
                    true
                }
            });
            Vec::new()
        } else {
            (old..n.min(self.len()))
                .filter(|&w| self.workers[w as usize].state == WorkerState::Parked)
                .collect()
        }
    }

    /// Empties the waiting room (a crash), oldest first.
    pub fn drain_waiting(&mut self) -> Vec<Job> {
        self.waiting.drain(..).collect()
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
    fn rejections_go_before_the_waiting_room_and_lifo_takes_the_newest() {
        let mut p = Pool::new(1, 2, true);
        let w = p.take_idle().unwrap();
        p.occupy(w, Work::Serve(job(0)));
        assert!(p.enqueue(job(1)) && p.enqueue(job(2)));
        assert!(!p.enqueue(job(3)), "the waiting room holds 2");
        p.push_reject(job(3));
        assert_eq!(p.free(w), Next::Reject(job(3)));
        p.occupy(w, Work::Reject(job(3)));
        assert_eq!(p.free(w), Next::Take(job(2)), "LIFO");
        p.occupy(w, Work::Serve(job(2)));
        assert_eq!(p.free(w), Next::Take(job(1)));
        p.occupy(w, Work::Serve(job(1)));
        assert_eq!(p.free(w), Next::Rest);
        assert_eq!((p.busy(), p.take_idle()), (0, Some(0)));
    }

    #[test]
    fn capacity_cuts_park_workers_until_it_returns() {
        let mut p = Pool::new(3, 10, false);
        let a = p.take_idle().unwrap();
        p.occupy(a, Work::Serve(job(0)));
        assert!(p.set_active(1).is_empty());
        assert_eq!(p.worker(1).state, WorkerState::Parked);
        assert_eq!(p.worker(2).state, WorkerState::Parked);
        assert_eq!(
            p.take_idle(),
            None,
            "only worker 0 may work, and it is busy"
        );
        assert_eq!(p.set_active(3), vec![1, 2]);
    }
}
