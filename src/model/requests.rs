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
//! `token_granted`] → `begin_attempt` … → `close`. The counts derived from
//! those moves — the requests open (the backlog), those waiting out a
//! backoff or for a token, the oldest open request, the requests the
//! backend completed more than once — are kept in this file alone.
//!
//! An attempt stays *outstanding* from `begin_attempt` until the backend
//! has settled it ([`Requests::settle`]: served, failed, rejected, lost).
//! A slot whose request has ended is not reused while attempts of that
//! request are still outstanding, so a late completion of an abandoned
//! attempt is still attributed to its request (the count of duplicate
//! executions).
//!
//! Requests are numbered in creation order from 0 (kept beside the slots,
//! see [`Requests::waiting_in_creation_order`]): that is how an operator's
//! `force_run` names "task 0".
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
use std::collections::VecDeque;
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

/// Why a request was given up (it ended [`Outcome::Failed`] or
/// [`Outcome::Dropped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GiveUp {
    /// The policy's limits were reached (`max_attempts` and
    /// `max_retry_duration`, both when both are set): dead-lettered.
    Limits,
    /// The request's deadline passed.
    Deadline,
    /// The retry budget refused the retry.
    Budget,
    /// The operator had switched retries off.
    RetriesDisabled,
    /// An open circuit breaker refused the attempt.
    Breaker,
    /// The status is not one the policy retries.
    NotRetryable,
}

impl GiveUp {
    /// The outcome a request given up for this reason ends with.
    pub fn outcome(self) -> Outcome {
        match self {
            GiveUp::Breaker | GiveUp::NotRetryable => Outcome::Failed,
            GiveUp::Limits | GiveUp::Deadline | GiveUp::Budget | GiveUp::RetriesDisabled => {
                Outcome::Dropped
            }
        }
    }
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
/// Bits of [`Request::open`] that say why hedging was frozen: the index
/// in [`FROZEN_REASONS`] (see [`Requests::frozen_why`]).
const FROZEN_WHY: u8 = 0b0110_0000;
const FROZEN_WHY_SHIFT: u32 = 5;
/// What can freeze a request's hedging, by its code in [`FROZEN_WHY`].
const FROZEN_REASONS: [GiveUp; 3] = [GiveUp::Budget, GiveUp::RetriesDisabled, GiveUp::Breaker];
/// No hedge timer armed.
const NO_HEDGE: Nanos = Nanos::MAX;

/// One open request: what nearly every step reads or writes, in one cache
/// line (64 bytes, aligned); the rest is in [`Requests`]' side table.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
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
    /// The current attempt holds one of the dispatcher's concurrent slots.
    pub dispatched: bool,
    /// The request's next (or current) attempt is an operator's RunTask:
    /// if it fails, its retry is scheduled from the moment it was sent.
    pub forced: bool,
    /// Whether the backend has completed one of its attempts successfully
    /// (0 or 1): every completion after that is a duplicate execution.
    completions: u8,
    /// Attempts sent and not yet settled by the backend.
    outstanding: u32,
    /// When the request arrived (or its task was enqueued): latency and
    /// age count from here.
    pub start: Nanos,
    /// When its first attempt was sent (dispatched): the retry window
    /// (`max_retry_duration`) counts from here.
    pub first_sent: Nanos,
    /// When its latest attempt was sent.
    pub last_sent: Nanos,
    /// What the policy remembers between retries (the last delay, where an
    /// exact pushback restarted the backoff).
    pub backoff: RetryState,
    /// Hedged (several attempts may be out at once).
    pub hedged: bool,
    /// The attempts the client still waits for (bit k−1: attempt k; an
    /// ordinary request uses bit 0 for its current attempt), and
    /// `FROZEN` once no more hedges may go.
    pub open: u8,
    /// What the budget remembers for this request (see
    /// [`crate::policy::budget::Mark`]).
    pub mark: Mark,
}

const _: () = assert!(
    std::mem::size_of::<Request>() == 64,
    "a request's hot fields fill one cache line"
);

impl Request {
    /// The age the policy's retry window is measured with: the time since
    /// the first attempt was sent (Cloud Tasks: "measured from when the
    /// task was first attempted").
    pub fn retry_age(&self, now: Nanos) -> Nanos {
        now.saturating_sub(self.first_sent)
    }
}

/// All request slots of a run.
#[derive(Clone, Debug, Default)]
pub struct Requests {
    slots: Vec<Request>,
    /// Per slot, what few steps read (see [`Aside`]).
    aside: Vec<Aside>,
    free: Vec<u32>,
    /// Requests open now.
    open: u64,
    /// Requests in [`Phase::Backoff`].
    retrying: u64,
    /// Requests in [`Phase::Waiting`].
    waiting: u64,
    /// When each hedged request's next hedge is due ([`NO_HEDGE`]: none);
    /// indexed by slot, allocated by hedged runs only.
    hedge_at: Vec<Nanos>,
    /// Requests created so far (the next one's creation number).
    created: u64,
    /// Open requests as (slot, generation) in creation order; entries of
    /// requests that ended are removed lazily (at the front when the oldest
    /// is asked for, everywhere when they outnumber the open ones).
    order: VecDeque<(u32, u32)>,
    /// Slots beyond which they no longer fit a core's cache (see
    /// [`Requests::outgrow_cache`]).
    cache_slots: CacheSlots,
    /// Slots read ahead so far, so that a test can tell that it ran.
    #[cfg(test)]
    slots_read_ahead: ReadCount,
}

/// Slots read ahead (tests only): counted from `&self`, and copied with
/// the table (a paused run is, see `model::run::resume`).
#[cfg(test)]
#[derive(Debug, Default)]
struct ReadCount(std::sync::atomic::AtomicU64);

#[cfg(test)]
impl Clone for ReadCount {
    fn clone(&self) -> ReadCount {
        ReadCount(self.0.load(Ordering::Relaxed).into())
    }
}

#[cfg(test)]
use std::sync::atomic::Ordering;

/// How many request slots the caches are assumed to keep warm: 8 Ki slots
/// of 64 bytes, 512 KiB, half the second-level cache per core of the
/// machine this was measured on. `storm.json` (under 3 k requests open)
/// stays below it; `outage_storm` (over 200 k) is far above.
#[derive(Clone, Copy, Debug)]
struct CacheSlots(usize);

impl Default for CacheSlots {
    fn default() -> Self {
        CacheSlots(8 << 10)
    }
}

/// How far a queue of work on requests (timers in a lane, jobs in a
/// waiting room) has had its requests' slots read ahead
/// ([`Requests::read_ahead`]): the entries at its front that were.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadAhead {
    read: usize,
}

impl ReadAhead {
    /// Entries whose slots are read in one batch.
    const BATCH: usize = 64;

    /// One entry left the queue's front. When few read ones are left,
    /// returns the entries to read now, as (skip, count) from the front.
    #[inline]
    pub fn took_one(&mut self) -> Option<(usize, usize)> {
        let read = self.read.saturating_sub(1);
        if read > Self::BATCH / 4 {
            self.read = read;
            return None;
        }
        self.read = Self::BATCH;
        Some((read, Self::BATCH - read))
    }
}

/// The fields of a request that only a few steps read, beside its slot
/// so that [`Request`] stays one cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Aside {
    /// Creation number in the run, from 0 (RunTask forces in this order).
    id: u64,
    /// When it started waiting for a rate-limiter token.
    since: Nanos,
    /// When its retry is due (set only in runs with a dispatcher, which
    /// force tasks in this order: see [`Requests::next_attempt_at`]).
    due: Nanos,
}

/// What settling an attempt found (see [`Requests::settle`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The backend had already completed the request once: this completion
    /// is a duplicate execution.
    pub duplicate: bool,
    /// The request counts in the summary.
    pub counted: bool,
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
            dispatched: false,
            forced: false,
            completions: 0,
            outstanding: 0,
            start: now,
            first_sent: now,
            last_sent: now,
            backoff: RetryState::default(),
            hedged,
            open: 0,
            mark: 0,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                let r = &mut self.slots[s as usize];
                debug_assert!(r.phase == Phase::Free && r.outstanding == 0);
                *r = Request {
                    gen: r.gen,
                    ..fresh
                };
                s
            }
            None => {
                self.slots.push(fresh);
                self.aside.push(Aside::default());
                (self.slots.len() - 1) as u32
            }
        };
        // `since` is written when the request starts waiting for a token.
        self.aside[slot as usize].id = self.created;
        self.created += 1;
        self.open += 1;
        if self.order.len() as u64 >= 2 * self.open + 64 {
            let slots = &self.slots;
            self.order.retain(|&(s, g)| {
                slots[s as usize].gen == g && slots[s as usize].phase != Phase::Free
            });
        }
        self.order.push_back((slot, self.slots[slot as usize].gen));
        slot
    }

    /// Sends the request's next attempt at `now`: counts it and returns the
    /// job that travels to the backend.
    #[inline]
    pub fn begin_attempt(&mut self, slot: u32, now: Nanos) -> Job {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase != Phase::Free && r.phase != Phase::Backoff);
        r.attempts += 1;
        r.outstanding += 1;
        r.phase = Phase::InFlight;
        if r.attempts == 1 {
            r.first_sent = now;
        }
        r.last_sent = now;
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

    /// The backend is done with `job` (served it, failed it, rejected it,
    /// or lost it); `completed`: it served the attempt successfully (the
    /// handler's work was done, whether or not its client still waited).
    /// Frees the slot of an ended request once nothing of it is left.
    pub fn settle(&mut self, job: Job, completed: bool) -> Settled {
        let r = &mut self.slots[job.slot as usize];
        let ended = r.phase == Phase::Free;
        // The slot is not reused while an attempt is outstanding, so the
        // job belongs to the open request or to the one that just ended.
        debug_assert!(
            if ended {
                job.gen.wrapping_add(1) == r.gen
            } else {
                job.gen == r.gen
            },
            "an attempt settled for a request that is gone"
        );
        debug_assert!(r.outstanding > 0, "an attempt settled twice");
        r.outstanding -= 1;
        let mut duplicate = false;
        if completed {
            // Each execution after the first is one more duplicate: a task
            // run three times counts two.
            duplicate = r.completions > 0;
            r.completions = 1;
        }
        let counted = r.counted;
        if ended && r.outstanding == 0 {
            self.free.push(job.slot);
        }
        Settled { duplicate, counted }
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

    /// No more hedges may go for this request: `why` refused one (the
    /// budget, retries switched off, or an open breaker), which is how the
    /// request ends once its last attempt out fails.
    pub fn freeze_hedging(&mut self, slot: u32, why: GiveUp) {
        let code = FROZEN_REASONS.iter().position(|&r| r == why).unwrap_or(0) as u8;
        let r = &mut self.slots[slot as usize];
        r.open = (r.open & !FROZEN_WHY) | FROZEN | (code << FROZEN_WHY_SHIFT);
        if let Some(at) = self.hedge_at.get_mut(slot as usize) {
            *at = NO_HEDGE;
        }
    }

    /// Why hedging was frozen for the request in `slot`, if it was.
    pub fn frozen_why(&self, slot: u32) -> Option<GiveUp> {
        let open = self.slots[slot as usize].open;
        let code = usize::from((open & FROZEN_WHY) >> FROZEN_WHY_SHIFT);
        (open & FROZEN != 0).then(|| FROZEN_REASONS[code])
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

    /// The attempt that failed at `now` is followed by a retry `delay`
    /// later: the request waits out its backoff. Returns the key its timer
    /// carries (the request and its attempt count, so a timer left behind
    /// by an attempt an operator forced is recognised as stale) and the
    /// delay to wait from now. After a forced attempt (RunTask) the retry
    /// is due `delay` after the moment it was forced, not after its failure.
    pub fn wait_backoff(&mut self, slot: u32, now: Nanos, delay: Nanos) -> (Job, Nanos) {
        let r = &mut self.slots[slot as usize];
        debug_assert_eq!(r.phase, Phase::InFlight);
        r.phase = Phase::Backoff;
        self.retrying += 1;
        let delay = if r.forced {
            r.forced = false;
            r.last_sent.saturating_add(delay).saturating_sub(now)
        } else {
            delay
        };
        let key = Job {
            slot,
            gen: r.gen,
            attempt: r.attempts,
        };
        (key, delay)
    }

    /// Whether there are more slots than the caches keep warm (see
    /// `CacheSlots`): below that, a slot is rarely cold and reading ahead
    /// ([`Requests::read_ahead`]) would only add work.
    #[inline]
    pub fn outgrow_cache(&self) -> bool {
        self.slots.len() >= self.cache_slots.0
    }

    /// Pretends the cache holds `slots` slots (0: read ahead always), so a
    /// test can check that reading ahead changes nothing.
    #[cfg(test)]
    pub fn set_cache_slots(&mut self, slots: usize) {
        self.cache_slots = CacheSlots(slots);
    }

    /// Reads the slots of `slots` ahead of the steps that will need them,
    /// all at once: in a storm the open requests outgrow the caches, and a
    /// request's slot is cold when its backoff timer fires. Loads that do
    /// not depend on each other overlap, so the batch costs about one
    /// memory latency instead of one per step. Changes nothing.
    #[inline]
    pub fn read_ahead(&self, slots: impl Iterator<Item = u32>) {
        let mut acc = 0u32;
        for s in slots {
            if let Some(r) = self.slots.get(s as usize) {
                acc ^= r.gen;
                #[cfg(test)]
                self.slots_read_ahead.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        std::hint::black_box(acc);
    }

    /// Slots read ahead so far.
    #[cfg(test)]
    pub fn slots_read_ahead(&self) -> u64 {
        self.slots_read_ahead.0.load(Ordering::Relaxed)
    }

    /// A backoff timer fired: true (and the request is now due) when it is
    /// still the request's current timer.
    #[inline]
    pub fn backoff_over(&mut self, key: Job) -> bool {
        let r = &mut self.slots[key.slot as usize];
        if r.gen == key.gen && r.attempts == key.attempt && r.phase == Phase::Backoff {
            r.phase = Phase::Due;
            self.retrying -= 1;
            true
        } else {
            false
        }
    }

    /// An operator forces the request's next attempt now (RunTask): a
    /// request that waits (backoff or due) becomes due, its backoff cut
    /// short, and its next attempt is marked forced; false when it was not
    /// waiting.
    pub fn hurry(&mut self, slot: u32) -> bool {
        let r = &mut self.slots[slot as usize];
        match r.phase {
            Phase::Backoff => {
                r.phase = Phase::Due;
                r.forced = true;
                self.retrying -= 1;
                true
            }
            Phase::Due => {
                r.forced = true;
                true
            }
            _ => false,
        }
    }

    /// The retry of the request in `slot`, waiting out its backoff, is due
    /// at `at` (noted only where the order of next attempts is needed: a
    /// dispatcher's RunTask).
    pub fn note_due(&mut self, slot: u32, at: Nanos) {
        self.aside[slot as usize].due = at;
    }

    /// When the waiting request in `slot` makes its next attempt by its own
    /// schedule: its retry's due time ([`Requests::note_due`]), or its
    /// arrival before its first attempt.
    pub fn next_attempt_at(&self, slot: u32) -> Nanos {
        let r = &self.slots[slot as usize];
        if r.attempts == 0 {
            r.start
        } else {
            self.aside[slot as usize].due
        }
    }

    /// Marks the request due (waiting for the dispatcher); returns the key
    /// its place in line carries.
    pub fn set_due(&mut self, slot: u32) -> Job {
        let r = &mut self.slots[slot as usize];
        r.phase = Phase::Due;
        Job {
            slot,
            gen: r.gen,
            attempt: r.attempts,
        }
    }

    /// Whether `key` (from [`Requests::set_due`]) is still the request's
    /// place in line: the same request, due, with no attempt since.
    #[inline]
    pub fn is_due(&self, key: Job) -> bool {
        let r = &self.slots[key.slot as usize];
        r.gen == key.gen && r.attempts == key.attempt && r.phase == Phase::Due
    }

    /// The request waits from `now` for a token of its client's rate
    /// limiter.
    pub fn wait_token(&mut self, slot: u32, now: Nanos) {
        let r = &mut self.slots[slot as usize];
        debug_assert!(r.phase == Phase::InFlight || r.phase == Phase::Due);
        r.phase = Phase::Waiting;
        self.aside[slot as usize].since = now;
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
        let waited = self.waited(slot, now);
        self.slots[slot as usize].phase = Phase::Due;
        self.waiting -= 1;
        waited
    }

    /// Requests open now (arrived, not ended): the backlog.
    #[inline]
    pub fn open_count(&self) -> u64 {
        self.open
    }

    /// When the oldest request still open arrived, if any is open,
    /// without forgetting the ended ones ahead of it ([`Self::oldest_start`]
    /// does, so right after it this is one step).
    pub fn peek_oldest_start(&self) -> Option<Nanos> {
        self.order
            .iter()
            .find(|&&(slot, gen)| self.is_open(slot, gen))
            .map(|&(slot, _)| self.slots[slot as usize].start)
    }

    /// When the oldest request still open arrived, if any is open.
    pub fn oldest_start(&mut self) -> Option<Nanos> {
        while let Some(&(slot, gen)) = self.order.front() {
            if self.is_open(slot, gen) {
                return Some(self.slots[slot as usize].start);
            }
            self.order.pop_front();
        }
        None
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
        self.open -= 1;
        if r.outstanding == 0 {
            self.free.push(slot);
        }
    }

    /// The requests waiting (in backoff or due) in creation order, as
    /// (creation number, slot): those an operator's RunTask may force.
    pub fn waiting_in_creation_order(&self) -> Vec<(u64, u32)> {
        let mut v: Vec<(u64, u32)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(r.phase, Phase::Backoff | Phase::Due))
            .map(|(slot, _)| (self.aside[slot].id, slot as u32))
            .collect();
        v.sort_unstable();
        v
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

    /// How long the request in `slot`, waiting for a rate-limiter token,
    /// has waited at `now`.
    pub fn waited(&self, slot: u32, now: Nanos) -> Nanos {
        debug_assert_eq!(self.slots[slot as usize].phase, Phase::Waiting);
        now.saturating_sub(self.aside[slot as usize].since)
    }

    /// The time the counted requests still waiting for a token at `end`
    /// have waited.
    pub fn counted_wait_at(&self, end: Nanos) -> Nanos {
        self.slots
            .iter()
            .zip(&self.aside)
            .filter(|(r, _)| r.counted && r.phase == Phase::Waiting)
            .map(|(_, a)| end.saturating_sub(a.since))
            .sum()
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
    fn read_ahead_batches_follow_each_other_without_gaps() {
        // Entry `k` of a queue leaves its front at the k-th `took_one`;
        // every batch must start where the previous one ended, so each
        // entry is read once, before it leaves.
        let mut r = ReadAhead::default();
        let (mut read_to, mut batches) = (0, 0);
        for taken in 1..=1000 {
            if let Some((skip, n)) = r.took_one() {
                assert_eq!(taken + skip, read_to.max(taken), "at entry {taken}");
                read_to = taken + skip + n;
                batches += 1;
            }
            assert!(read_to > taken, "entry {taken} left unread");
        }
        // 64 entries a batch, a new one when 16 read ones are left.
        assert_eq!((ReadAhead::BATCH, batches), (64, 1 + (1000 - 1) / 48));
    }

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
    fn a_slot_is_kept_until_the_backend_settles_its_attempts() {
        let mut t = Requests::default();
        let a = t.open(0, 0, true, false);
        let first = t.begin_attempt(a, 0);
        // The client gives up on attempt 1 and retries; both are out.
        t.wait_backoff(a, 5, 10);
        assert!(t.backoff_over(Job {
            attempt: 1,
            ..first
        }));
        let second = t.begin_attempt(a, 15);
        assert!(!t.settle(second, true).duplicate);
        t.close(a);
        assert_eq!(t.open_count(), 0);
        // Attempt 1 is still at the backend: the slot is not reused.
        let b = t.open(1, 20, true, false);
        assert_ne!(b, a);
        // Its late completion is the request's second: a duplicate.
        let late = t.settle(first, true);
        assert!(late.duplicate && late.counted);
        let c = t.open(2, 30, true, false);
        assert_eq!(c, a, "free again once nothing of the old request is out");
    }

    #[test]
    fn every_execution_after_the_first_is_a_duplicate() {
        // Three attempts out (each abandoned at its deadline), all three
        // completed by the handler: two duplicate executions, not one
        // duplicated task.
        let mut t = Requests::default();
        let a = t.open(0, 0, true, false);
        let mut jobs = vec![];
        for k in 0..3u64 {
            jobs.push(t.begin_attempt(a, 10 * k));
            if k < 2 {
                t.wait_backoff(a, 10 * k + 5, 1);
                assert!(t.backoff_over(*jobs.last().unwrap()));
            }
        }
        let dup: Vec<bool> = jobs.iter().map(|&j| t.settle(j, true).duplicate).collect();
        assert_eq!(dup, vec![false, true, true]);
    }

    #[test]
    fn a_failed_or_lost_attempt_is_no_completion() {
        let mut t = Requests::default();
        let a = t.open(0, 0, true, false);
        let j1 = t.begin_attempt(a, 0);
        t.wait_backoff(a, 0, 1);
        t.backoff_over(j1);
        let j2 = t.begin_attempt(a, 1);
        assert!(!t.settle(j1, false).duplicate);
        assert!(!t.settle(j2, true).duplicate);
        t.close(a);
    }

    #[test]
    fn the_oldest_open_request_is_found_past_ended_ones() {
        let mut t = Requests::default();
        assert_eq!(t.oldest_start(), None);
        let slots: Vec<u32> = (0..5)
            .map(|i| t.open(i, 100 * i as u64, true, false))
            .collect();
        assert_eq!(t.oldest_start(), Some(0));
        t.close(slots[0]);
        t.close(slots[2]);
        assert_eq!(t.oldest_start(), Some(100));
        t.close(slots[1]);
        assert_eq!(t.oldest_start(), Some(300), "slot 2 ended too");
        // Slots are reused by newer requests: their old entries stay stale.
        let n = t.open(9, 900, true, false);
        assert!(n == slots[1] || n == slots[0] || n == slots[2]);
        t.close(slots[3]);
        t.close(slots[4]);
        assert_eq!(t.oldest_start(), Some(900));
        assert_eq!(t.open_count(), 1);
        // Many ended requests do not pile up in the creation-order list.
        for i in 0..10_000 {
            let s = t.open(0, 1000 + i, true, false);
            t.close(s);
        }
        assert!(t.order.len() < 100, "{}", t.order.len());
        assert_eq!(t.oldest_start(), Some(900));
    }

    #[test]
    fn a_forced_attempt_that_fails_retries_from_the_moment_it_was_forced() {
        let mut t = Requests::default();
        let a = t.open(0, 0, true, false);
        let j1 = t.begin_attempt(a, 0);
        let (timer, d) = t.wait_backoff(a, 0, 100);
        assert_eq!((timer, d), (j1, 100));
        // RunTask at 10: the old timer is left behind.
        assert!(t.hurry(a));
        t.begin_attempt(a, 10);
        // The forced attempt fails at 12; the next is due at 10 + 100.
        let (timer2, d2) = t.wait_backoff(a, 12, 100);
        assert_eq!(d2, 98);
        assert!(!t.backoff_over(timer), "the timer of attempt 1 is stale");
        assert!(t.backoff_over(timer2));
        // An attempt that was not forced counts its delay from its failure.
        t.begin_attempt(a, 110);
        assert_eq!(t.wait_backoff(a, 111, 100).1, 100);
        assert_eq!(t[a as usize].retry_age(111), 111);
        assert_eq!(t.waiting_in_creation_order(), vec![(0, a)]);
    }

    #[test]
    fn hedged_attempts_are_current_until_each_is_over() {
        let mut t = Requests::default();
        let s = t.open(0, 0, true, true);
        let a1 = t.begin_attempt(s, 0);
        let a2 = t.begin_attempt(s, 0);
        let a3 = t.begin_attempt(s, 0);
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
        assert_eq!(t.frozen_why(s), None);
        t.freeze_hedging(s, GiveUp::Budget);
        assert!(!t.hedge_due(s, 0, 90));
        // The reason is kept beside the attempt bits, which it leaves alone.
        for why in [GiveUp::RetriesDisabled, GiveUp::Breaker, GiveUp::Budget] {
            t.freeze_hedging(s, why);
            assert_eq!(t.frozen_why(s), Some(why));
            assert_eq!(t.open_attempts(s), 2);
        }
        t.close(s);
        assert!(!t.is_current(a1) && !t.is_current(a3));
        // An ordinary request: only its latest attempt, once.
        let o = t.open(0, 0, true, false);
        let b1 = t.begin_attempt(o, 0);
        t.attempt_over(b1);
        assert!(!t.is_current(b1));
        let b2 = t.begin_attempt(o, 0);
        assert!(t.is_current(b2) && !t.is_current(b1));
    }
}
