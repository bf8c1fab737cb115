//! Fixed-delay timers of which only the oldest live one is an event.
//!
//! A model sets many timers of one fixed delay (an attempt timeout, a
//! request deadline) and most of them die before they are due (the attempt
//! was answered, the request ended). Timers of one fixed delay fall due in
//! the order they were set, so only the oldest live timer can be the next
//! to fire: [`OldestFirst`] keeps every timer as a reserved place in its
//! lane ([`EventQueue::reserve_in_lane`]) and makes just that one an event.
//! When the armed event pops, dead or alive, the next oldest live timer is
//! armed: at once if its place is at the same instant (it must pop next),
//! else when the model says the instant's chain of steps is over, which
//! also lets a timer die within the instant that set it. A timer that
//! fires pops in exactly the place it would have had if it had been
//! scheduled outright, so a run is the same, with fewer events.

use super::queue::{EventQueue, LaneId, Ticket};
use crate::time::Nanos;
use std::collections::VecDeque;

/// Timers of one fixed delay, keyed by `K` (what the event needs to know),
/// of which only the oldest live one is an event.
#[derive(Debug)]
pub struct OldestFirst<K> {
    lane: LaneId,
    /// Timers that are not events, in the order they were set.
    waiting: VecDeque<(Ticket, K)>,
    /// The timer that is an event in the queue, if any.
    armed: Option<K>,
}

impl<K: Copy + PartialEq> OldestFirst<K> {
    /// Timers in `lane` (whose delay is the timers' delay): a lane of their
    /// own ([`EventQueue::register_private_lane`]), so that arming one
    /// walks back past nothing.
    pub fn new(lane: LaneId) -> Self {
        OldestFirst {
            lane,
            waiting: VecDeque::new(),
            armed: None,
        }
    }

    /// Sets a timer for `key`, due one lane delay from now. Returns `false`
    /// when the lane's delay is zero: nothing is set, and the caller
    /// schedules the event itself.
    #[inline]
    pub fn set<E>(&mut self, q: &mut EventQueue<E>, key: K) -> bool {
        match q.reserve_in_lane(self.lane) {
            Some(ticket) => {
                self.waiting.push_back((ticket, key));
                true
            }
            None => false,
        }
    }

    /// Whether a timer should be armed: none is, and some are waiting.
    #[inline]
    pub fn needs_arming(&self) -> bool {
        self.armed.is_none() && !self.waiting.is_empty()
    }

    /// The event for `key` popped: returns whether it was the armed timer
    /// (then call [`OldestFirst::arm`] with `due` = now before handling it).
    #[inline]
    pub fn popped(&mut self, key: K) -> bool {
        if self.armed == Some(key) {
            self.armed = None;
            true
        } else {
            false
        }
    }

    /// Makes the oldest timer still `live` an event (`event` builds it), in
    /// the place reserved for it; dead timers on the way are forgotten.
    /// With `due`, only if that place is at instant `due`.
    pub fn arm<E>(
        &mut self,
        q: &mut EventQueue<E>,
        due: Option<Nanos>,
        live: impl Fn(K) -> bool,
        event: impl FnOnce(K) -> E,
    ) {
        while let Some(&(ticket, key)) = self.waiting.front() {
            if !live(key) {
                self.waiting.pop_front();
                continue;
            }
            if due.is_some_and(|t| ticket.time() != t) {
                return;
            }
            self.waiting.pop_front();
            q.redeem(self.lane, ticket, event(key));
            self.armed = Some(key);
            return;
        }
    }

    /// Forgets the newest timers while they are dead: called when an
    /// instant's chain of steps is over, it drops at once the timers that
    /// died within the chain that set them (an attempt answered at once),
    /// so they take no memory until the oldest timers catch up with them.
    #[inline]
    pub fn forget_dead_newest(&mut self, live: impl Fn(K) -> bool) {
        while let Some(&(_, key)) = self.waiting.back() {
            if live(key) {
                return;
            }
            self.waiting.pop_back();
        }
    }

    /// Timers waiting (not events); for tests and memory estimates.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a step of the test does.
    #[derive(Clone, Debug)]
    enum Step {
        /// Sets a timer (id = step index).
        Set,
        /// Kills the timer set `back` steps ago, if any.
        Kill(usize),
        /// Schedules an unrelated event `after` from now.
        Other(Nanos),
        /// Pops one event.
        Pop,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => Just(Step::Set),
            3 => (0usize..8).prop_map(Step::Kill),
            1 => (0u64..30).prop_map(Step::Other),
            4 => Just(Step::Pop),
        ]
    }

    /// Event payload: (is a timer, id).
    type Ev = (bool, u32);

    /// Runs `steps` on two queues: every timer scheduled outright (dead
    /// ones popped and skipped), and through `OldestFirst`. Each `Pop`
    /// takes the next live event from both: they must be the same event at
    /// the same time.
    fn check(delay: Nanos, steps: &[Step]) -> Result<(), TestCaseError> {
        let mut outright = EventQueue::<Ev>::new();
        let lane_a = outright.register_lane(delay);
        let mut lazy = EventQueue::<Ev>::new();
        let lane_b = lazy.register_private_lane(delay);
        let mut timers = OldestFirst::new(lane_b);
        let mut dead = vec![false; steps.len()];
        let mut set_ids: Vec<u32> = Vec::new();
        let pop_outright = |q: &mut EventQueue<Ev>, dead: &[bool]| loop {
            match q.pop() {
                Some((_, (true, id))) if dead[id as usize] => continue,
                other => return other,
            }
        };
        let pop_lazy = |q: &mut EventQueue<Ev>, t: &mut OldestFirst<u32>, dead: &[bool]| loop {
            // The model arms when an instant's chain of steps is over.
            if !q.instant_busy() {
                t.forget_dead_newest(|k| !dead[k as usize]);
                if t.needs_arming() {
                    t.arm(q, None, |k| !dead[k as usize], |k| (true, k));
                }
            }
            let popped = q.pop();
            if let Some((now, (true, id))) = popped {
                if t.popped(id) {
                    t.arm(q, Some(now), |k| !dead[k as usize], |k| (true, k));
                }
                if dead[id as usize] {
                    continue;
                }
            }
            return popped;
        };
        for (i, s) in steps.iter().enumerate() {
            let id = i as u32;
            match *s {
                Step::Set => {
                    outright.schedule_in_lane(lane_a, (true, id));
                    prop_assert!(timers.set(&mut lazy, id));
                    set_ids.push(id);
                }
                Step::Kill(back) => {
                    if let Some(&id) = set_ids.iter().rev().nth(back) {
                        dead[id as usize] = true;
                    }
                }
                Step::Other(after) => {
                    outright.schedule_after(after, (false, id));
                    lazy.schedule_after(after, (false, id));
                }
                Step::Pop => {
                    let a = pop_outright(&mut outright, &dead);
                    let b = pop_lazy(&mut lazy, &mut timers, &dead);
                    prop_assert_eq!(a, b);
                    if a.is_none() {
                        // A run ends when nothing live is left (the clocks
                        // may differ by the dead timers popped).
                        return Ok(());
                    }
                }
            }
        }
        loop {
            let a = pop_outright(&mut outright, &dead);
            let b = pop_lazy(&mut lazy, &mut timers, &dead);
            prop_assert_eq!(a, b);
            if a.is_none() {
                break;
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn live_timers_pop_as_if_scheduled_outright(
            delay in prop::sample::select(vec![1u64, 5, 10, 20]),
            steps in prop::collection::vec(step(), 0..200),
        ) {
            check(delay, &steps)?;
        }
    }

    #[test]
    fn dead_timers_never_become_events() {
        let mut q = EventQueue::<u32>::new();
        let lane = q.register_private_lane(10);
        let mut timers = OldestFirst::new(lane);
        for k in 0..100u32 {
            assert!(timers.set(&mut q, k));
        }
        // Only timer 99 is still live.
        timers.arm(&mut q, None, |k| k == 99, |k| k);
        assert_eq!(q.len(), 1);
        assert_eq!(timers.waiting(), 0);
        assert_eq!(q.pop(), Some((10, 99)));
        assert!(timers.popped(99));
    }

    #[test]
    fn zero_delay_lane_sets_nothing() {
        let mut q = EventQueue::<u32>::new();
        let lane = q.register_lane(0);
        let mut timers = OldestFirst::new(lane);
        assert!(!timers.set(&mut q, 1));
        assert!(!timers.needs_arming());
    }
}
