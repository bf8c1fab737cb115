//! The pending-event set, ordered by (time, sequence number).
//!
//! Every event gets a sequence number when it is scheduled; events pop in
//! `(time, seq)` order, so events at equal times pop in the order they were
//! scheduled, whatever structure holds them. Nothing is ever scheduled
//! before `now` (debug assertion, clamped to `now` in release builds).
//!
//! # Design
//!
//! Two structures, both relying on time never going backwards:
//!
//! - **Timer lanes**: one FIFO ([`VecDeque`]) per registered fixed delay.
//!   An event put in a lane lands at `now + delay`; since `now` never
//!   decreases and sequence numbers only grow, every lane is already sorted
//!   by `(time, seq)`. Push and pop are O(1). [`EventQueue::schedule_after`]
//!   routes to a lane by itself when the delay equals one of the first
//!   [`AUTO_LANES`] registered lanes' delays.
//! - **Monotone radix heap** for everything else, on the 64-bit time:
//!   bucket 0 holds events at exactly `last` (the time of the heap's last
//!   extracted minimum), bucket `b` in `1..=64` holds events whose time
//!   first differs from `last` at bit `b - 1`. Buckets are disjoint,
//!   increasing ranges; each keeps its minimum time and a bit mask tells
//!   which are non-empty, so the heap's minimum time is known in O(1).
//!   When bucket 0 runs dry, the first non-empty bucket becomes the new
//!   `last` and is redistributed into strictly lower buckets (all empty at
//!   that point); each event moves at most 64 times over its life, so push
//!   is O(1) and pop is amortised O(log(max time − min time)) ≤ O(64).
//!   Ties: a redistribution moves a bucket's events, in order, into empty
//!   buckets, and pushes append larger sequence numbers, so every bucket
//!   stays sorted by `seq`; bucket 0 is a FIFO that pops in `seq` order.
//!
//! A *stream* lane ([`EventQueue::register_stream`]) holds events of any
//! times that never decrease from one push to the next (a traffic
//! source's next arrival), so it stays sorted the same way.
//!
//! A lane can also hand out a [`Ticket`]: the `(time, seq)` place an
//! event scheduled in it now would take, reserved without scheduling
//! anything. Redeemed before time reaches it, the event is inserted at that
//! place (short sorted insertion from the back, since only events scheduled
//! since the ticket was taken can follow it); dropped, it never existed.
//! `OldestFirst` (`oldest.rs`) uses this for timers that are mostly stale
//! by the time they are due.
//!
//! [`EventQueue::pop`] takes the smallest `(time, seq)` among the heap's
//! minimum and the lane fronts: O(1) plus a scan over the lanes (a handful).
//! The heap only fixes its `last` to a time that is being popped at that
//! very moment, so `last <= now` always holds and anything scheduled at or
//! after `now` is a valid radix-heap key.
//!
//! Events scheduled at `now` itself go to a same-instant FIFO (`soon`),
//! behind any heap or lane event due at `now` (scheduled earlier, so
//! smaller `seq`). Once the heap and lanes are known to hold nothing at
//! `now`, that stays true for the rest of the instant (only a ticket
//! redeemed at `now` brings one back), so the FIFO then pops without
//! looking at them; [`EventQueue::pop_step`] pops only from it, for a loop
//! that follows an instant's chain of zero-delay steps.

use super::ring::Ring;
use crate::time::Nanos;

/// `schedule_after` checks the delays of this many lanes (the first
/// registered) for an automatic lane match; later lanes are only used
/// through `schedule_in_lane`.
pub const AUTO_LANES: usize = 8;

/// The earlier of two optional times.
#[inline]
fn earliest(a: Option<Nanos>, b: Option<Nanos>) -> Option<Nanos> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// A handle to a fixed-delay FIFO lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneId(pub u8);

/// A place in the pop order reserved in a lane for an event that may turn
/// out not to be needed (see [`EventQueue::reserve_in_lane`]): redeemed,
/// the event pops exactly where it would have had it been scheduled when
/// the ticket was taken; dropped, it costs nothing.
///
/// A ticket does not name its lane (16 bytes: many are held at once); it
/// is redeemed in the lane that issued it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    time: Nanos,
    seq: u64,
}

impl Ticket {
    /// When the event would pop.
    pub fn time(&self) -> Nanos {
        self.time
    }
}

#[derive(Clone, Copy)]
struct Entry<E> {
    time: Nanos,
    seq: u64,
    ev: E,
}

/// Monotone radix heap on `time` with FIFO (`seq`) tie-breaking.
#[derive(Clone)]
struct RadixHeap<E> {
    /// Time of the last extracted minimum; every key is `>= last`.
    last: Nanos,
    /// Events at exactly `last`, in `seq` order.
    zero: Ring<Entry<E>>,
    /// `buckets[b - 1]` is bucket `b`, each in `seq` order.
    buckets: [Vec<Entry<E>>; 64],
    /// Smallest time in each bucket (`Nanos::MAX` when empty).
    mins: [Nanos; 64],
    /// Bit `b - 1` set when bucket `b` is non-empty.
    mask: u64,
    len: usize,
}

impl<E: Copy> RadixHeap<E> {
    fn new() -> Self {
        RadixHeap {
            last: 0,
            zero: Ring::new(),
            buckets: std::array::from_fn(|_| Vec::new()),
            mins: [Nanos::MAX; 64],
            mask: 0,
            len: 0,
        }
    }

    /// Index into `buckets` for `time != last` (`time > last`).
    #[inline]
    fn slot(last: Nanos, time: Nanos) -> usize {
        63 - (time ^ last).leading_zeros() as usize
    }

    #[inline(always)]
    fn push(&mut self, e: Entry<E>) {
        debug_assert!(e.time >= self.last);
        self.len += 1;
        if e.time == self.last {
            self.zero.push_back(e);
        } else {
            let i = Self::slot(self.last, e.time);
            if e.time < self.mins[i] {
                self.mins[i] = e.time;
            }
            self.mask |= 1 << i;
            self.buckets[i].push(e);
        }
    }

    /// The smallest pending time, without moving anything.
    #[inline]
    fn min_time(&self) -> Option<Nanos> {
        if !self.zero.is_empty() {
            Some(self.last)
        } else if self.mask != 0 {
            Some(self.mins[self.mask.trailing_zeros() as usize])
        } else {
            None
        }
    }

    /// Makes bucket 0 hold the minimum (if any), advancing `last` to it.
    /// Only call when the minimum is about to be popped (`now` becomes it).
    #[inline]
    fn settle(&mut self) {
        if self.zero.is_empty() && self.mask != 0 {
            self.redistribute();
        }
    }

    #[inline(never)]
    fn redistribute(&mut self) {
        let j = self.mask.trailing_zeros() as usize;
        let last = self.mins[j];
        self.last = last;
        self.mask &= !(1 << j);
        self.mins[j] = Nanos::MAX;
        if self.buckets[j].len() == 1 {
            // The common case on a small heap: the bucket holds just the
            // minimum.
            if let Some(e) = self.buckets[j].pop() {
                self.zero.push_back(e);
            }
            return;
        }
        let mut src = std::mem::take(&mut self.buckets[j]);
        for e in src.drain(..) {
            if e.time == last {
                self.zero.push_back(e);
            } else {
                let i = Self::slot(last, e.time);
                debug_assert!(i < j);
                if e.time < self.mins[i] {
                    self.mins[i] = e.time;
                }
                self.mask |= 1 << i;
                self.buckets[i].push(e);
            }
        }
        // Keep the allocation for the next time bucket `j` fills.
        self.buckets[j] = src;
    }

    /// The events that pop soonest, roughly in pop order: bucket 0, then
    /// each non-empty bucket in increasing order of time (each bucket's
    /// own events unsorted).
    fn ahead(&self) -> impl Iterator<Item = &Entry<E>> + '_ {
        let mask = self.mask;
        self.zero.iter().chain(
            (0..64)
                .filter(move |&i| mask & (1 << i) != 0)
                .flat_map(move |i| self.buckets[i].iter()),
        )
    }

    /// Front of bucket 0; call `settle` first.
    #[inline]
    fn front(&self) -> Option<&Entry<E>> {
        self.zero.front()
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Entry<E>> {
        let e = self.zero.pop_front()?;
        self.len -= 1;
        Some(e)
    }
}

#[derive(Clone)]
struct Lane<E> {
    delay: Nanos,
    /// Only reachable through its `LaneId` (see `register_private_lane`).
    private: bool,
    q: Ring<Entry<E>>,
}

/// Pending events of one run. Events at equal times pop in the order they
/// were scheduled, so a run never depends on the queue's internals.
#[derive(Clone)]
pub struct EventQueue<E> {
    heap: RadixHeap<E>,
    lanes: Vec<Lane<E>>,
    /// Delays and indexes of the first [`AUTO_LANES`] shared lanes, for
    /// `schedule_after`.
    auto: Vec<(Nanos, usize)>,
    /// Events scheduled at `now` itself, in schedule order (see `pop_before`).
    soon: Ring<E>,
    /// Known: neither the heap nor a lane holds an event at `now`, so
    /// `soon` pops without a look at them. Events there at `now` were
    /// scheduled while time was earlier and only leave during the instant
    /// (a ticket redeemed at `now` is the one way back, and clears this).
    now_clear: bool,
    /// The lane whose front has the smallest `(time, seq)`, with that key;
    /// only meaningful while `lane_fresh`.
    lane_min: Option<(Nanos, u64, usize)>,
    lane_fresh: bool,
    now: Nanos,
    seq: u64,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time 0.
    pub fn new() -> Self {
        EventQueue {
            heap: RadixHeap::new(),
            lanes: Vec::new(),
            auto: Vec::new(),
            soon: Ring::new(),
            now_clear: false,
            lane_min: None,
            lane_fresh: true,
            now: 0,
            seq: 0,
            popped: 0,
        }
    }

    /// Declares a delay that many events will be scheduled with; the same
    /// delay registered twice gives the same lane. At most 256 lanes.
    pub fn register_lane(&mut self, delay: Nanos) -> LaneId {
        if let Some(i) = self
            .lanes
            .iter()
            .position(|l| l.delay == delay && !l.private)
        {
            return LaneId(i as u8);
        }
        let id = self.add_lane(delay, false);
        if self.auto.len() < AUTO_LANES {
            self.auto.push((delay, id.0 as usize));
        }
        id
    }

    /// A lane of its own for `delay`, never shared with another
    /// registration nor used by [`EventQueue::schedule_after`]: only what is
    /// scheduled through its `LaneId` (or redeemed there) is in it, so a
    /// ticket redeemed late walks back past nothing else.
    pub fn register_private_lane(&mut self, delay: Nanos) -> LaneId {
        self.add_lane(delay, true)
    }

    /// A lane of its own for a stream of events whose times never
    /// decrease (a traffic source's next arrival): what
    /// [`EventQueue::schedule_in_stream`] puts there pops in order without
    /// a pass through the radix heap.
    pub fn register_stream(&mut self) -> LaneId {
        self.add_lane(0, true)
    }

    fn add_lane(&mut self, delay: Nanos, private: bool) -> LaneId {
        assert!(self.lanes.len() < 256, "at most 256 lanes");
        self.lanes.push(Lane {
            delay,
            private,
            q: Ring::new(),
        });
        LaneId((self.lanes.len() - 1) as u8)
    }

    /// The time of the last event popped.
    pub fn now(&self) -> Nanos {
        self.now
    }

    #[inline]
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Schedules `ev` at absolute `time` (never before `now`).
    #[inline(always)]
    pub fn schedule_at(&mut self, time: Nanos, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        if time <= self.now {
            self.soon.push_back(ev);
            return;
        }
        let seq = self.next_seq();
        self.heap.push(Entry { time, seq, ev });
    }

    /// Schedules `ev` at `now + delay` (saturating). Goes to a lane when
    /// `delay` is one of the first [`AUTO_LANES`] lanes' delays.
    #[inline(always)]
    pub fn schedule_after(&mut self, delay: Nanos, ev: E) {
        if delay == 0 {
            self.soon.push_back(ev);
        } else {
            self.schedule_later(delay, ev);
        }
    }

    /// [`Self::schedule_after`] for a delay that is not zero. Inlined, as
    /// is every push: an event then goes from its fields straight into its
    /// slot (see `ring.rs`) instead of through a copy on the stack.
    #[inline(always)]
    fn schedule_later(&mut self, delay: Nanos, ev: E) {
        if let Some(&(_, i)) = self.auto.iter().find(|&&(d, _)| d == delay) {
            self.push_lane(i, ev);
        } else {
            self.schedule_at(self.now.saturating_add(delay), ev)
        }
    }

    /// The events of `lane` from its `skip`-th on, in pop order: what
    /// will happen soon, for a model that wants to fetch their data ahead.
    #[inline]
    pub fn lane_ahead(&self, lane: LaneId, skip: usize) -> impl Iterator<Item = &E> {
        self.lanes[lane.0 as usize].q.iter_from(skip).map(|e| &e.ev)
    }

    /// The heap's events from its `skip`-th soonest on, roughly in pop
    /// order (exact between buckets of the radix heap, not within one):
    /// what will happen soon, for a model that wants to fetch their data
    /// ahead. Lanes are not included.
    #[inline]
    pub fn heap_ahead(&self, skip: usize) -> impl Iterator<Item = &E> {
        self.heap.ahead().skip(skip).map(|e| &e.ev)
    }

    /// Schedules `ev` one lane delay from now (saturating).
    #[inline(always)]
    pub fn schedule_in_lane(&mut self, lane: LaneId, ev: E) {
        self.push_lane(lane.0 as usize, ev)
    }

    #[inline(always)]
    fn push_lane(&mut self, i: usize, ev: E) {
        let time = self.now.saturating_add(self.lanes[i].delay);
        self.push_lane_at(i, time, ev);
    }

    /// Schedules `ev` at absolute `time` (never before `now`, nor before
    /// the last event scheduled in this stream) in stream `lane` (see
    /// [`EventQueue::register_stream`]).
    #[inline(always)]
    pub fn schedule_in_stream(&mut self, lane: LaneId, time: Nanos, ev: E) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        self.push_lane_at(lane.0 as usize, time.max(self.now), ev);
    }

    /// Moves the one event pending in stream `lane` to `time`, keeping
    /// its sequence number, so it pops where an event scheduled at `time`
    /// back then would have: for a run resumed under a traffic source that
    /// places its next arrival elsewhere (`model::run::resume`). Returns
    /// `false`, and changes nothing, unless exactly one event is pending
    /// there and `time` is after `now`.
    pub fn retime_stream(&mut self, lane: LaneId, time: Nanos) -> bool {
        let q = &mut self.lanes[lane.0 as usize].q;
        if q.len() != 1 || time <= self.now {
            return false;
        }
        if let Some(mut e) = q.pop_front() {
            e.time = time;
            q.push_back(e);
        }
        // The lanes' minimum is found again at the next pop.
        self.lane_fresh = false;
        true
    }

    #[inline(always)]
    fn push_lane_at(&mut self, i: usize, time: Nanos, ev: E) {
        if time == self.now {
            self.soon.push_back(ev);
            return;
        }
        let seq = self.next_seq();
        let lane = &mut self.lanes[i];
        debug_assert!(lane.q.back().is_none_or(|b| b.time <= time));
        if lane.q.is_empty()
            && self.lane_fresh
            && self.lane_min.is_none_or(|(t, s, _)| (time, seq) < (t, s))
        {
            self.lane_min = Some((time, seq, i));
        }
        lane.q.push_back(Entry { time, seq, ev });
    }

    /// Reserves the place an event scheduled in `lane` now would take,
    /// without scheduling anything: a timer that is stale by the time it is
    /// due need not become an event at all. `None`
    /// when the lane's delay is zero (such an event goes to the same-instant
    /// FIFO, which has no place to reserve: schedule it directly).
    #[inline]
    pub fn reserve_in_lane(&mut self, lane: LaneId) -> Option<Ticket> {
        let time = self.now.saturating_add(self.lanes[lane.0 as usize].delay);
        if time == self.now {
            return None;
        }
        let seq = self.next_seq();
        Some(Ticket { time, seq })
    }

    /// Schedules `ev` in the place `ticket` reserved in `lane` (the lane
    /// that issued it). Redeem a ticket before
    /// its place is passed: before time reaches it, or at its very instant
    /// while the event popping comes before it (the event just before it
    /// in its lane, say). The sorted insertion walks back past the events
    /// scheduled in the lane since the ticket was taken.
    #[inline]
    pub fn redeem(&mut self, lane: LaneId, ticket: Ticket, ev: E) {
        debug_assert!(ticket.time >= self.now, "ticket redeemed too late");
        if ticket.time == self.now {
            self.now_clear = false;
        }
        let i = lane.0 as usize;
        let key = (ticket.time, ticket.seq);
        let q = &mut self.lanes[i].q;
        let mut at = q.len();
        while at > 0 && q.get(at - 1).is_some_and(|e| (e.time, e.seq) > key) {
            at -= 1;
        }
        q.insert(
            at,
            Entry {
                time: ticket.time,
                seq: ticket.seq,
                ev,
            },
        );
        if at == 0 && self.lane_fresh && self.lane_min.is_none_or(|(t, s, _)| key < (t, s)) {
            self.lane_min = Some((ticket.time, ticket.seq, i));
        }
    }

    /// The lane whose front has the smallest `(time, seq)`, with that key.
    fn scan_lanes(&self) -> Option<(Nanos, u64, usize)> {
        let mut best: Option<(Nanos, u64, usize)> = None;
        for (i, l) in self.lanes.iter().enumerate() {
            if let Some(f) = l.q.front() {
                if best.is_none_or(|(t, s, _)| (f.time, f.seq) < (t, s)) {
                    best = Some((f.time, f.seq, i));
                }
            }
        }
        best
    }

    /// [`Self::scan_lanes`], cached between lane pops.
    #[inline]
    fn best_lane(&mut self) -> Option<(Nanos, u64, usize)> {
        if !self.lane_fresh {
            self.lane_min = self.scan_lanes();
            self.lane_fresh = true;
        }
        self.lane_min
    }

    /// Removes and returns the earliest event, advancing `now` to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        self.pop_until(Nanos::MAX)
    }

    /// Removes and returns the earliest event if its time is before
    /// `limit`, advancing `now` to its time; `None` (and nothing changes)
    /// when nothing is pending before `limit`: `peek_time` and `pop` in
    /// one step.
    #[inline]
    pub fn pop_before(&mut self, limit: Nanos) -> Option<(Nanos, E)> {
        self.pop_until(limit.checked_sub(1)?)
    }

    /// Pops the earliest event if its time is at most `last`.
    ///
    /// Events scheduled at `now` itself wait in `soon`, outside the heap and
    /// the lanes. A heap or lane event at time `now` was scheduled while
    /// time was still earlier, hence before everything in `soon`, so it
    /// pops first; `soon` is always empty when time advances.
    #[inline]
    fn pop_until(&mut self, last: Nanos) -> Option<(Nanos, E)> {
        if !self.soon.is_empty() {
            // The earliest event is at `now`, in `soon` or before it.
            if self.now > last {
                return None;
            }
            if let Some(ev) = self.pop_step() {
                return Some((self.now, ev));
            }
        }
        let lane = self.best_lane();
        let ht = self.heap.min_time();
        let t = earliest(ht, lane.map(|(t, _, _)| t))?;
        if t > last {
            return None;
        }
        let from_heap = match (ht, lane) {
            (Some(_), None) => true,
            (None, _) => false,
            (Some(ht), Some((lt, ls, _))) => {
                if ht != lt {
                    ht < lt
                } else {
                    // Same time: `now` becomes `ht` either way, so the heap
                    // may settle there; the sequence number decides.
                    self.heap.settle();
                    self.heap.front().is_some_and(|f| f.seq < ls)
                }
            }
        };
        let e = if from_heap {
            self.heap.settle();
            self.heap.pop_front()
        } else {
            self.lane_fresh = false;
            lane.and_then(|(_, _, i)| self.lanes[i].q.pop_front())
        }?;
        debug_assert!(e.time >= self.now);
        self.now = e.time;
        self.now_clear = false;
        self.popped += 1;
        Some((e.time, e.ev))
    }

    /// The next event of the current instant's chain of zero-delay steps,
    /// when it is the next event at all: `None` when the chain is over, or
    /// when an event scheduled earlier for this instant comes first (pop
    /// that with [`EventQueue::pop_before`]).
    #[inline(always)]
    pub fn pop_step(&mut self) -> Option<E> {
        if self.soon.is_empty() {
            return None;
        }
        if !self.now_clear {
            self.now_clear = self.scheduled_min_time() != Some(self.now);
            if !self.now_clear {
                return None;
            }
        }
        let ev = self.soon.pop_front()?;
        self.popped += 1;
        Some(ev)
    }

    /// The earliest time in the heap and the lanes (`soon` aside).
    #[inline]
    fn scheduled_min_time(&mut self) -> Option<Nanos> {
        let lane = self.best_lane().map(|(t, _, _)| t);
        earliest(self.heap.min_time(), lane)
    }

    /// The time of the earliest pending event.
    pub fn peek_time(&self) -> Option<Nanos> {
        if !self.soon.is_empty() {
            return Some(self.now);
        }
        let lanes = self
            .lanes
            .iter()
            .filter_map(|l| l.q.front().map(|f| f.time));
        self.heap.min_time().into_iter().chain(lanes).min()
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len + self.soon.len() + self.lanes.iter().map(|l| l.q.len()).sum::<usize>()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether events scheduled at the current instant itself are still
    /// waiting: the chain of zero-delay steps started by the last event
    /// popped is not over.
    #[inline]
    pub fn instant_busy(&self) -> bool {
        !self.soon.is_empty()
    }

    /// Events popped so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Reference: a binary heap on (time, seq), with the same lane rules.
    struct Reference {
        heap: BinaryHeap<Reverse<(Nanos, u64, u32)>>,
        lanes: Vec<Nanos>,
        now: Nanos,
        seq: u64,
    }

    impl Reference {
        fn new() -> Self {
            Reference {
                heap: BinaryHeap::new(),
                lanes: Vec::new(),
                now: 0,
                seq: 0,
            }
        }
        fn at(&mut self, time: Nanos, id: u32) {
            self.seq += 1;
            self.heap.push(Reverse((time.max(self.now), self.seq, id)));
        }
        /// A reservation: the place `at` would give, returned, not filled.
        fn reserve(&mut self, time: Nanos) -> (Nanos, u64) {
            self.seq += 1;
            (time, self.seq)
        }
        fn pop(&mut self) -> Option<(Nanos, u32)> {
            let Reverse((t, _, id)) = self.heap.pop()?;
            self.now = t;
            Some((t, id))
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        At(Nanos),
        After(Nanos),
        InLane(usize),
        /// Reserves a place in a lane; resolved (redeemed or dropped)
        /// before the next pop, as the model does by the instant's end.
        Reserve(usize),
        Pop,
        /// `pop_step`: pops only a same-instant step, and only one that is
        /// the next event.
        Step,
        /// Schedules in the stream lane, this much after the later of
        /// `now` and the stream's last time.
        InStream(Nanos),
    }

    fn op(max_delay: Nanos) -> impl Strategy<Value = Op> {
        prop_oneof![
            2 => (0..=max_delay).prop_map(Op::At),
            2 => (0..=max_delay).prop_map(Op::After),
            // Delays that collide with lane delays (routing + ties).
            1 => prop::sample::select(vec![0, 5, 10, 1000]).prop_map(Op::After),
            2 => (0usize..4).prop_map(Op::InLane),
            2 => (0usize..4).prop_map(Op::Reserve),
            3 => Just(Op::Pop),
            1 => Just(Op::Step),
            2 => prop_oneof![Just(0), 0..=max_delay].prop_map(Op::InStream),
        ]
    }

    /// Runs `ops` on both queues, checking every pop and the invariants.
    fn check(lane_delays: &[Nanos], start: Nanos, ops: &[Op]) -> Result<(), TestCaseError> {
        let mut q = EventQueue::<u32>::new();
        let mut r = Reference::new();
        let lanes: Vec<LaneId> = lane_delays.iter().map(|&d| q.register_lane(d)).collect();
        r.lanes = lane_delays.to_vec();
        let stream = q.register_stream();
        let mut stream_last = 0;
        if start > 0 {
            // Move `now` to `start` through a pop.
            q.schedule_at(start, u32::MAX);
            r.at(start, u32::MAX);
            prop_assert_eq!(q.pop(), r.pop());
        }
        let mut id = 0u32;
        let mut tickets: Vec<(LaneId, Ticket, (Nanos, u64), u32)> = Vec::new();
        for o in ops {
            id += 1;
            if matches!(o, Op::Pop | Op::Step) {
                // Redeem odd ids, drop even ones, newest first (any order
                // must do).
                for (lane, t, (time, seq), tid) in tickets.drain(..).rev() {
                    if tid % 2 == 1 {
                        q.redeem(lane, t, tid);
                        r.heap.push(Reverse((time, seq, tid)));
                    }
                }
            }
            match *o {
                Op::At(off) => {
                    let t = q.now().saturating_add(off);
                    q.schedule_at(t, id);
                    r.at(t, id);
                }
                Op::After(d) => {
                    q.schedule_after(d, id);
                    r.at(r.now.saturating_add(d), id);
                }
                Op::InLane(i) => {
                    if lanes.is_empty() {
                        continue;
                    }
                    let i = i % lanes.len();
                    q.schedule_in_lane(lanes[i], id);
                    r.at(r.now.saturating_add(r.lanes[i]), id);
                }
                Op::Reserve(i) => {
                    if lanes.is_empty() {
                        continue;
                    }
                    let i = i % lanes.len();
                    if let Some(t) = q.reserve_in_lane(lanes[i]) {
                        let place = r.reserve(r.now.saturating_add(r.lanes[i]));
                        prop_assert_eq!(t.time(), place.0);
                        tickets.push((lanes[i], t, place, id));
                    } else {
                        prop_assert_eq!(r.lanes[i].min(u64::MAX - r.now), 0);
                    }
                }
                Op::Pop => {
                    let before = q.now();
                    prop_assert_eq!(q.peek_time(), r.heap.peek().map(|x| x.0 .0));
                    let got = q.pop();
                    prop_assert_eq!(got, r.pop());
                    prop_assert!(q.now() >= before);
                }
                Op::Step => {
                    let now = q.now();
                    if let Some(ev) = q.pop_step() {
                        prop_assert_eq!(Some((now, ev)), r.pop());
                    }
                }
                Op::InStream(off) => {
                    let t = stream_last.max(q.now()).saturating_add(off);
                    stream_last = t;
                    q.schedule_in_stream(stream, t, id);
                    r.at(t, id);
                }
            }
            prop_assert_eq!(q.len(), r.heap.len());
            prop_assert_eq!(q.is_empty(), r.heap.is_empty());
        }
        for (lane, t, (time, seq), tid) in tickets.drain(..) {
            q.redeem(lane, t, tid);
            r.heap.push(Reverse((time, seq, tid)));
        }
        // Drain.
        loop {
            prop_assert_eq!(q.peek_time(), r.heap.peek().map(|x| x.0 .0));
            let before = q.now();
            let got = q.pop();
            prop_assert_eq!(got, r.pop());
            prop_assert!(q.now() >= before);
            if got.is_none() {
                break;
            }
        }
        prop_assert!(q.is_empty());
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn matches_reference_small_times(
            lanes in prop::collection::vec(prop::sample::select(vec![0u64, 5, 10, 1000, 7]), 0..4),
            ops in prop::collection::vec(op(20), 0..300),
        ) {
            check(&lanes, 0, &ops)?;
        }

        #[test]
        fn matches_reference_wide_times(
            lanes in prop::collection::vec(prop::sample::select(vec![0u64, 5, 10, 1000, 1 << 40]), 0..4),
            ops in prop::collection::vec(op(u64::MAX >> 1), 0..300),
        ) {
            check(&lanes, 0, &ops)?;
        }

        #[test]
        fn matches_reference_near_max(
            lanes in prop::collection::vec(prop::sample::select(vec![0u64, 5, 10, 1000, u64::MAX]), 0..4),
            back in 0u64..2000,
            ops in prop::collection::vec(op(3000), 0..300),
        ) {
            check(&lanes, u64::MAX - back, &ops)?;
        }
    }

    #[test]
    fn ties_pop_fifo_across_heap_and_lanes() {
        let mut q = EventQueue::new();
        let a = q.register_lane(10);
        let b = q.register_lane(20);
        q.schedule_at(20, 0);
        q.schedule_in_lane(b, 1);
        q.schedule_after(20, 2); // routed to lane b
        q.schedule_at(10, 3);
        q.schedule_in_lane(a, 4);
        q.schedule_after(10, 5); // routed to lane a
        q.schedule_after(20, 6);
        q.schedule_at(20, 7);
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            got,
            vec![
                (10, 3),
                (10, 4),
                (10, 5),
                (20, 0),
                (20, 1),
                (20, 2),
                (20, 6),
                (20, 7)
            ]
        );
        assert_eq!(q.popped(), 8);
        assert_eq!(q.now(), 20);
    }

    #[test]
    fn a_retimed_stream_event_keeps_its_place_among_equal_times() {
        let mut q = EventQueue::new();
        let s = q.register_stream();
        q.schedule_at(5, 0);
        q.schedule_in_stream(s, 50, 1); // scheduled second
        q.schedule_at(30, 2);
        q.schedule_at(30, 3);
        assert_eq!(q.pop(), Some((5, 0)));
        // Moved to 30, it pops where an event scheduled at 30 back then
        // would have: before the two scheduled after it.
        assert!(q.retime_stream(s, 30));
        assert_eq!(q.pop(), Some((30, 1)));
        assert_eq!(q.pop(), Some((30, 2)));
        // Nothing pending there, or a time not after `now`: refused.
        assert!(!q.retime_stream(s, 40));
        q.schedule_in_stream(s, 40, 4);
        assert!(!q.retime_stream(s, 30));
        assert!(q.retime_stream(s, 35));
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, vec![(30, 3), (35, 4)]);
    }

    #[test]
    fn the_heap_ahead_holds_every_heap_event_bucket_by_bucket() {
        // Times spread over a millisecond fill many buckets; pops in
        // between move `last`, so buckets are redistributed on the way.
        let mut q = EventQueue::new();
        let mut x: u64 = 7;
        let mut next = |bound: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % bound
        };
        for id in 0..2000u32 {
            q.schedule_at(q.now() + next(1 << 20), id);
            if id % 5 == 0 {
                q.pop();
            }
        }
        let last = q.heap.last;
        let ahead: Vec<u32> = q.heap_ahead(0).copied().collect();
        let skipped: Vec<u32> = q.heap_ahead(7).copied().collect();
        assert_eq!(skipped, ahead[7..]);
        let times: std::collections::HashMap<u32, Nanos> =
            q.heap.ahead().map(|e| (e.ev, e.time)).collect();
        assert_eq!(ahead.len(), q.len(), "every pending event, once");
        // The order of buckets: bucket 0 (time `last`), then by the first
        // bit where the time differs from `last`. Buckets are increasing
        // ranges of time, so an event is never later than one in a later
        // bucket.
        let bucket = |t: Nanos| {
            if t == last {
                0
            } else {
                1 + RadixHeap::<u32>::slot(last, t)
            }
        };
        let buckets: Vec<usize> = ahead.iter().map(|id| bucket(times[id])).collect();
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
        // What pops is exactly what was ahead.
        let mut popped = Vec::new();
        while let Some((_, id)) = q.pop() {
            popped.push(id);
        }
        let (mut a, mut p) = (ahead.clone(), popped);
        a.sort_unstable();
        p.sort_unstable();
        assert_eq!(a, p);
    }

    #[test]
    fn equal_times_in_heap_pop_in_schedule_order() {
        let mut q = EventQueue::new();
        // Mixed with other times so that redistributions happen.
        for i in 0..1000u32 {
            q.schedule_at(1000 - (i as u64 % 7) * 100, i);
        }
        let mut last = (0, 0);
        let mut n = 0;
        while let Some((t, i)) = q.pop() {
            if t == last.0 {
                assert!(i > last.1);
            } else {
                assert!(t > last.0);
            }
            last = (t, i);
            n += 1;
        }
        assert_eq!(n, 1000);
    }

    #[test]
    fn same_delay_registered_twice_is_one_lane() {
        let mut q = EventQueue::<()>::new();
        let a = q.register_lane(5);
        let b = q.register_lane(6);
        assert_ne!(a, b);
        assert_eq!(q.register_lane(5), a);
    }

    #[test]
    fn a_private_lane_is_never_shared() {
        let mut q = EventQueue::<u32>::new();
        let private = q.register_private_lane(10);
        let shared = q.register_lane(10);
        assert_ne!(private, shared);
        assert_eq!(q.register_lane(10), shared);
        q.schedule_after(10, 1); // the shared lane
        let t = q.reserve_in_lane(private).unwrap();
        q.schedule_after(10, 2);
        q.schedule_in_lane(shared, 3);
        q.redeem(private, t, 4);
        assert_eq!(q.lanes[private.0 as usize].q.len(), 1);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec![1, 4, 2, 3]);
    }

    #[test]
    fn lanes_beyond_auto_limit_still_work() {
        let mut q = EventQueue::new();
        let ids: Vec<LaneId> = (1..=12).map(|d| q.register_lane(d * 10)).collect();
        for (k, &l) in ids.iter().enumerate().rev() {
            q.schedule_in_lane(l, k as u32);
            q.schedule_after((k as u64 + 1) * 10, 100 + k as u32);
        }
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let want: Vec<_> = (0..12u32)
            .flat_map(|k| [((k as u64 + 1) * 10, k), ((k as u64 + 1) * 10, 100 + k)])
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn huge_times_do_not_overflow() {
        let mut q = EventQueue::new();
        let l = q.register_lane(u64::MAX);
        q.schedule_at(u64::MAX - 1, 0);
        q.schedule_at(u64::MAX, 1);
        q.schedule_after(u64::MAX, 2); // lane, saturates to MAX
        assert_eq!(q.pop(), Some((u64::MAX - 1, 0)));
        q.schedule_after(5, 3); // saturates
        q.schedule_in_lane(l, 4);
        q.schedule_at(u64::MAX, 5);
        assert_eq!(q.peek_time(), Some(u64::MAX));
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let want: Vec<_> = [1, 2, 3, 4, 5].iter().map(|&i| (u64::MAX, i)).collect();
        assert_eq!(got, want);
        assert_eq!(q.now(), u64::MAX);
        // Still usable at the end of time.
        q.schedule_after(1, 6);
        assert_eq!(q.pop(), Some((u64::MAX, 6)));
    }

    #[test]
    fn a_ticket_redeemed_at_its_instant_pops_before_that_instants_later_steps() {
        let mut q = EventQueue::new();
        let lane = q.register_private_lane(10);
        q.schedule_in_lane(lane, 'a');
        let ticket = q.reserve_in_lane(lane).unwrap();
        assert_eq!(q.pop(), Some((10, 'a')));
        // Zero-delay steps of the instant; the first pops while nothing
        // else is due now.
        q.schedule_after(0, 'b');
        q.schedule_after(0, 'c');
        assert_eq!(q.pop(), Some((10, 'b')));
        // The ticket's place is before every zero-delay step: redeemed now,
        // its event comes next.
        q.redeem(lane, ticket, 't');
        assert_eq!(q.pop(), Some((10, 't')));
        assert_eq!(q.pop(), Some((10, 'c')));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn empty_queue() {
        let mut q = EventQueue::<u8>::default();
        assert!(q.is_empty());
        assert_eq!(q.len(), 0);
        assert_eq!(q.peek_time(), None);
        assert_eq!(q.pop(), None);
        assert_eq!(q.popped(), 0);
    }

    #[test]
    fn million_pending() {
        const N: u64 = 1_000_000;
        let mut q = EventQueue::new();
        let lane = q.register_lane(1_000_000);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..N {
            if i % 4 == 0 {
                q.schedule_in_lane(lane, i);
            } else {
                q.schedule_at(next() % 10_000_000, i);
            }
        }
        assert_eq!(q.len(), N as usize);
        // Hold model for a while, then drain; order must never go back.
        let mut last = 0;
        let mut check = |t: Nanos, q: &EventQueue<u64>| {
            assert!(t >= last);
            assert_eq!(q.now(), t);
            last = t;
        };
        for i in 0..N {
            let (t, _) = q.pop().unwrap();
            check(t, &q);
            if i % 3 == 0 {
                q.schedule_in_lane(lane, N + i);
            } else {
                q.schedule_after(next() % 1_000_000, N + i);
            }
        }
        assert_eq!(q.len(), N as usize);
        let mut n = 0;
        while let Some((t, _)) = q.pop() {
            check(t, &q);
            n += 1;
        }
        assert_eq!(n, N);
        assert_eq!(q.popped(), 2 * N);
    }
}
