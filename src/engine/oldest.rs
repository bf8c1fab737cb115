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
//! else when the model settles it at the end of the instant's chain of
//! steps, which also lets a timer die within the instant that set it. A timer that
//! fires pops in exactly the place it would have had if it had been
//! scheduled outright, so a run is the same, with fewer events.

use super::queue::{EventQueue, LaneId, Ticket};
use super::ring::Ring;
use crate::time::Nanos;

/// Timers of one fixed delay, keyed by `K` (what the event needs to know),
/// of which only the oldest live one is an event.
#[derive(Clone, Debug)]
pub struct OldestFirst<K> {
    lane: LaneId,
    /// Timers that are not events, in the order they were set.
    waiting: Ring<(Ticket, K)>,
    /// The timer that is an event in the queue, if any.
    armed: Option<K>,
}

impl<K: Copy + PartialEq> OldestFirst<K> {
    /// Timers due `delay` after they are set, in a lane of their own in
    /// `q` ([`EventQueue::register_private_lane`]): the armed timer is
    /// alone there, so arming one never walks back past other events.
    /// `delay` must be positive (validation refuses zero timeouts and
    /// deadlines): a zero delay has no place to reserve.
    pub fn new<E: Copy>(q: &mut EventQueue<E>, delay: Nanos) -> Self {
        assert!(delay > 0, "a timer needs a positive delay");
        OldestFirst {
            lane: q.register_private_lane(delay),
            waiting: Ring::new(),
            armed: None,
        }
    }

    /// Sets a timer for `key`, due one delay from now.
    #[inline]
    pub fn set<E: Copy>(&mut self, q: &mut EventQueue<E>, key: K) {
        // `reserve_in_lane` refuses only a zero delay, which `new` refuses.
        if let Some(ticket) = q.reserve_in_lane(self.lane) {
            self.waiting.push_back((ticket, key));
        }
    }

    /// The chain of steps at the current instant is over: forgets the
    /// newest timers that died within it (an attempt answered at once), so
    /// they take no memory, and arms the oldest `live` timer if none is an
    /// event (`event` builds it).
    #[inline]
    pub fn settle<E: Copy>(
        &mut self,
        q: &mut EventQueue<E>,
        live: impl Fn(K) -> bool,
        event: impl FnOnce(K) -> E,
    ) {
        while let Some(&(_, key)) = self.waiting.back() {
            if live(key) {
                break;
            }
            self.waiting.pop_back();
        }
        if self.armed.is_none() {
            self.arm(q, None, live, event);
        }
    }

    /// The event for `key` popped at `now`. If it was the armed timer, the
    /// next oldest `live` one is armed at once when its place is at `now`
    /// too (it must pop next); a later one waits for [`OldestFirst::settle`].
    #[inline]
    pub fn popped<E: Copy>(
        &mut self,
        q: &mut EventQueue<E>,
        key: K,
        now: Nanos,
        live: impl Fn(K) -> bool,
        event: impl FnOnce(K) -> E,
    ) {
        if self.armed == Some(key) {
            self.armed = None;
            self.arm(q, Some(now), live, event);
        }
    }

    /// Makes the oldest timer still `live` an event, in the place reserved
    /// for it; dead timers on the way are forgotten. With `due`, only if
    /// that place is at instant `due`.
    fn arm<E: Copy>(
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

    /// Timers waiting (not events).
    #[cfg(test)]
    fn waiting(&self) -> usize {
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
        let mut timers = OldestFirst::new(&mut lazy, delay);
        let mut dead = vec![false; steps.len()];
        let mut set_ids: Vec<u32> = Vec::new();
        let pop_outright = |q: &mut EventQueue<Ev>, dead: &[bool]| loop {
            match q.pop() {
                Some((_, (true, id))) if dead[id as usize] => continue,
                other => return other,
            }
        };
        let pop_lazy = |q: &mut EventQueue<Ev>, t: &mut OldestFirst<u32>, dead: &[bool]| loop {
            // The model settles when an instant's chain of steps is over.
            if !q.instant_busy() {
                t.settle(q, |k| !dead[k as usize], |k| (true, k));
            }
            let popped = q.pop();
            if let Some((now, (true, id))) = popped {
                t.popped(q, id, now, |k| !dead[k as usize], |k| (true, k));
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
                    timers.set(&mut lazy, id);
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
        let mut timers = OldestFirst::new(&mut q, 10);
        for k in 0..100u32 {
            timers.set(&mut q, k);
        }
        // Only timer 50 is still live: the newer ones are forgotten from
        // the back, the older ones on the way to it.
        timers.settle(&mut q, |k| k == 50, |k| k);
        assert_eq!(q.len(), 1);
        assert_eq!(timers.waiting(), 0);
        assert_eq!(q.pop(), Some((10, 50)));
    }

    #[test]
    fn the_next_timer_of_the_same_instant_is_armed_at_once() {
        let mut q = EventQueue::<u32>::new();
        let mut timers = OldestFirst::new(&mut q, 10);
        timers.set(&mut q, 1);
        timers.set(&mut q, 2);
        timers.settle(&mut q, |_| true, |k| k);
        assert_eq!(q.len(), 1, "only the oldest is an event");
        let (now, k) = q.pop().unwrap();
        timers.popped(&mut q, k, now, |_| true, |k| k);
        assert_eq!(q.pop(), Some((10, 2)));
    }

    #[test]
    #[should_panic(expected = "positive delay")]
    fn a_zero_delay_is_refused() {
        let mut q = EventQueue::<u32>::new();
        OldestFirst::<u32>::new(&mut q, 0);
    }
}
