//! The pending-event set, ordered by (time, sequence number).
//!
//! (First version: one binary heap. The lanes + radix heap version keeps
//! this API.)

use crate::time::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// A handle to a fixed-delay FIFO lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneId(pub u8);

struct Entry<E> {
    time: Nanos,
    seq: u64,
    ev: E,
}
impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.seq) == (o.time, o.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(o.time, o.seq))
    }
}

/// Pending events of one run. Events at equal times pop in the order they
/// were scheduled, so a run never depends on the queue's internals.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    lanes: Vec<Nanos>,
    now: Nanos,
    seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            lanes: Vec::new(),
            now: 0,
            seq: 0,
            popped: 0,
        }
    }

    /// Declares a delay that many events will be scheduled with.
    pub fn register_lane(&mut self, delay: Nanos) -> LaneId {
        if let Some(i) = self.lanes.iter().position(|&d| d == delay) {
            return LaneId(i as u8);
        }
        self.lanes.push(delay);
        LaneId((self.lanes.len() - 1) as u8)
    }

    /// The time of the last event popped.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `ev` at absolute `time` (never before `now`).
    pub fn schedule_at(&mut self, time: Nanos, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = time.max(self.now);
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            time,
            seq: self.seq,
            ev,
        }));
    }

    /// Schedules `ev` at `now + delay`.
    pub fn schedule_after(&mut self, delay: Nanos, ev: E) {
        self.schedule_at(self.now.saturating_add(delay), ev)
    }

    /// Schedules `ev` one lane delay from now.
    pub fn schedule_in_lane(&mut self, lane: LaneId, ev: E) {
        let d = self.lanes[lane.0 as usize];
        self.schedule_after(d, ev)
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.now = e.time;
        self.popped += 1;
        Some((e.time, e.ev))
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}
