//! Pool-mode traffic's application side: requests arrive as in open mode
//! into a first-in-first-out application queue served by a fixed number
//! of client threads. A thread takes the oldest waiting request and holds
//! it from its first attempt to its end — through every backoff and
//! limiter wait — as a blocking SDK call does; then it takes the next.
//!
//! The request is opened when it arrives (so its latency and its deadline
//! count from then), but made due only when a thread takes it. A request
//! whose deadline passes while it waits ends then, without a thread. The
//! queue keeps its own time series (the `app_queue`, `threads_busy` and
//! `app_wait_ms` columns, written only in pool mode), so open mode pays
//! nothing for it.

use crate::metrics::{BinRow, RunSummary};
use crate::time::Nanos;
use std::collections::VecDeque;

/// Where a request of the top tier stands with the pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seat {
    /// No request, or one that is over.
    None,
    /// Waiting in the queue, for the request of this generation.
    Queued(u32),
    /// Holding a thread.
    Thread,
}

/// The application queue and its threads, with their time series.
#[derive(Clone, Debug)]
pub struct AppQueue {
    threads: u32,
    busy: u32,
    /// Requests waiting for a thread, oldest first, as (slot, generation,
    /// arrival); an entry whose request ended while waiting stays until
    /// it reaches the head, and is skipped there.
    waiting: VecDeque<(u32, u32, Nanos)>,
    /// Live entries of `waiting`.
    queued: u64,
    /// Each request slot's seat.
    seats: Vec<Seat>,
    warmup: Nanos,
    series: Series,
    /// Time the counted requests waited for a thread, ns.
    counted_wait: u128,
}

/// The per-bin levels and counts of the application queue.
#[derive(Clone, Debug)]
struct Series {
    bin: Nanos,
    run_end: Nanos,
    /// The levels are integrated up to here.
    last: Nanos,
    /// Per bin: ∫ requests waiting dt, ∫ busy threads dt (ns).
    queue_area: Vec<u128>,
    busy_area: Vec<u128>,
    /// Per bin: requests that got a thread, and the time they waited.
    started: Vec<u64>,
    wait_ns: Vec<u128>,
}

impl Series {
    fn new(bin: Nanos, run_end: Nanos) -> Series {
        let bin = bin.max(1);
        let n = run_end.div_ceil(bin) as usize;
        Series {
            bin,
            run_end,
            last: 0,
            queue_area: vec![0; n],
            busy_area: vec![0; n],
            started: vec![0; n],
            wait_ns: vec![0; n],
        }
    }

    /// Adds the levels `queued` and `busy`, held since `last`, up to `now`.
    fn integrate(&mut self, now: Nanos, queued: u64, busy: u32) {
        let now = now.min(self.run_end);
        while self.last < now {
            let i = (self.last / self.bin) as usize;
            let edge = ((i as u64 + 1) * self.bin).min(now);
            let dt = u128::from(edge - self.last);
            self.queue_area[i] += u128::from(queued) * dt;
            self.busy_area[i] += u128::from(busy) * dt;
            self.last = edge;
        }
    }

    /// A request got a thread at `now` after waiting `wait`.
    fn start(&mut self, now: Nanos, wait: Nanos) {
        if now < self.run_end {
            let i = (now / self.bin) as usize;
            self.started[i] += 1;
            self.wait_ns[i] += u128::from(wait);
        }
    }
}

impl AppQueue {
    /// A pool of `threads` threads, recording in bins of `bin` ns over a
    /// run of `run_end` ns; requests that arrive before `warmup` are left
    /// out of the summary.
    pub fn new(threads: u32, bin: Nanos, run_end: Nanos, warmup: Nanos) -> AppQueue {
        AppQueue {
            threads,
            busy: 0,
            waiting: VecDeque::new(),
            queued: 0,
            seats: Vec::new(),
            warmup,
            series: Series::new(bin, run_end),
            counted_wait: 0,
        }
    }

    fn seat(&mut self, slot: u32) -> &mut Seat {
        let i = slot as usize;
        if i >= self.seats.len() {
            self.seats.resize(i + 1, Seat::None);
        }
        &mut self.seats[i]
    }

    /// The request in `slot` (generation `gen`) arrived at `now`: whether
    /// a thread takes it now; if not, it waits in the queue.
    pub fn arrive(&mut self, now: Nanos, slot: u32, gen: u32) -> bool {
        self.series.integrate(now, self.queued, self.busy);
        if self.busy < self.threads && self.queued == 0 {
            self.busy += 1;
            *self.seat(slot) = Seat::Thread;
            self.series.start(now, 0);
            return true;
        }
        *self.seat(slot) = Seat::Queued(gen);
        self.waiting.push_back((slot, gen, now));
        self.queued += 1;
        false
    }

    /// The request in `slot`, which arrived at `start`, ended at `now`:
    /// whether it held a thread (which is free now). One that ended while
    /// waiting (its deadline) counts the time it waited.
    pub fn end(&mut self, now: Nanos, slot: u32, start: Nanos) -> bool {
        self.series.integrate(now, self.queued, self.busy);
        let seat = std::mem::replace(self.seat(slot), Seat::None);
        match seat {
            Seat::Thread => {
                self.busy -= 1;
                true
            }
            Seat::Queued(_) => {
                self.queued -= 1;
                self.count_wait(start, now - start);
                false
            }
            Seat::None => false,
        }
    }

    /// A thread is free at `now`: the oldest waiting request takes it, if
    /// any (its slot).
    pub fn next(&mut self, now: Nanos) -> Option<u32> {
        if self.busy >= self.threads {
            return None;
        }
        self.series.integrate(now, self.queued, self.busy);
        while let Some((slot, gen, start)) = self.waiting.pop_front() {
            if self.seats.get(slot as usize) != Some(&Seat::Queued(gen)) {
                continue;
            }
            self.seats[slot as usize] = Seat::Thread;
            self.queued -= 1;
            self.busy += 1;
            self.series.start(now, now - start);
            self.count_wait(start, now - start);
            return Some(slot);
        }
        None
    }

    fn count_wait(&mut self, start: Nanos, wait: Nanos) {
        if start >= self.warmup {
            self.counted_wait += u128::from(wait);
        }
    }

    /// Requests waiting for a thread.
    pub fn queued(&self) -> u64 {
        self.queued
    }

    /// Threads holding a request.
    pub fn busy(&self) -> u32 {
        self.busy
    }

    /// At the run's end: writes the pool's columns into the top tier's
    /// `bins` and its mean wait for a thread into `s` (requests still
    /// waiting count what they waited so far).
    pub fn fill(mut self, bins: &mut [BinRow], s: &mut RunSummary) {
        let end = self.series.run_end;
        self.series.integrate(end, self.queued, self.busy);
        let waiting = std::mem::take(&mut self.waiting);
        for (slot, gen, start) in waiting {
            if self.seats.get(slot as usize) == Some(&Seat::Queued(gen)) {
                self.count_wait(start, end.saturating_sub(start));
            }
        }
        let series = &self.series;
        for (i, b) in bins.iter_mut().enumerate() {
            let from = i as u64 * series.bin;
            let width = (from + series.bin).min(series.run_end).saturating_sub(from);
            if i >= series.queue_area.len() || width == 0 {
                break;
            }
            b.app_queue = Some(series.queue_area[i] as f64 / width as f64);
            b.threads_busy = Some(series.busy_area[i] as f64 / width as f64);
            b.app_wait_ms = (series.started[i] > 0)
                .then(|| series.wait_ns[i] as f64 / series.started[i] as f64 / 1e6);
        }
        s.app_wait_ms = Some(if s.requests > 0 {
            self.counted_wait as f64 / s.requests as f64 / 1e6
        } else {
            0.0
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: Nanos = 1_000_000_000;

    #[test]
    fn a_thread_serves_the_oldest_waiting_request_and_levels_integrate() {
        let mut q = AppQueue::new(1, S, 2 * S, 0);
        assert!(q.arrive(0, 0, 0));
        // Two more wait: the first from 0.5 s, the second from 1 s.
        assert!(!q.arrive(S / 2, 1, 0));
        assert!(!q.arrive(S, 2, 0));
        assert_eq!((q.queued(), q.busy()), (2, 1));
        // The first ends at 1.5 s: slot 1 (the oldest) takes the thread.
        assert!(q.end(S + S / 2, 0, 0));
        assert_eq!(q.next(S + S / 2), Some(1));
        // Slot 2 gives up while waiting (its deadline) at 1.75 s.
        assert!(!q.end(S + 3 * S / 4, 2, S));
        assert_eq!(q.next(S + 3 * S / 4), None);
        let mut bins = vec![BinRow::default(), BinRow::default()];
        let mut s = RunSummary {
            requests: 3,
            ..RunSummary::default()
        };
        q.fill(&mut bins, &mut s);
        // Bin 0: one waiting for 0.5 s of 1 s; the thread busy throughout.
        assert_eq!(bins[0].app_queue, Some(0.5));
        assert_eq!(bins[0].threads_busy, Some(1.0));
        assert_eq!(bins[0].app_wait_ms, Some(0.0));
        // Bin 1: two waiting for 0.5 s, one for 0.25 s.
        assert_eq!(bins[1].app_queue, Some(1.25));
        assert_eq!(bins[1].app_wait_ms, Some(1000.0));
        // Waits: 0, 1 s (slot 1), 0.75 s (slot 2): 1.75 s over 3 requests.
        let mean = s.app_wait_ms.unwrap();
        assert!((mean - 1750.0 / 3.0).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn a_stale_entry_is_skipped_when_its_slot_is_reused() {
        let mut q = AppQueue::new(1, S, S, 0);
        assert!(q.arrive(0, 0, 0));
        assert!(!q.arrive(1, 1, 0));
        // Slot 1's request ends waiting; the slot's next request waits too.
        assert!(!q.end(2, 1, 1));
        assert!(!q.arrive(3, 1, 1));
        assert!(q.end(4, 0, 0));
        assert_eq!(q.next(4), Some(1));
        assert_eq!((q.queued(), q.busy()), (0, 1));
    }
}
