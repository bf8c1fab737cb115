//! The Cloud Tasks dispatcher: tasks that are due wait in a FIFO and go to
//! the backend only while the queue's token bucket has a token
//! (`max_dispatches_per_second`, capacity `max_burst_size`, starting full)
//! and fewer than `max_concurrent_dispatches` are in flight. First attempts
//! and retries are limited alike, as the service does.

use crate::scenario::spec::DispatcherSpec;
use crate::time::{Nanos, NS_PER_SEC};
use std::collections::VecDeque;

/// Dispatcher state of one run.
#[derive(Clone, Debug)]
pub struct Dispatcher {
    /// Tokens added per nanosecond.
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Nanos,
    max_concurrent: u32,
    /// Dispatches whose answer (or deadline) has not come yet.
    pub in_flight: u32,
    /// Due tasks as (slot, generation), oldest first; entries whose task has
    /// moved on are skipped by the caller.
    pub due: VecDeque<(u32, u32)>,
    /// Whether a wake-up for the next token is already scheduled.
    pub tick_pending: bool,
}

impl Dispatcher {
    /// A dispatcher with a full bucket.
    pub fn new(spec: &DispatcherSpec) -> Dispatcher {
        let burst = spec.max_burst_size.max(1) as f64;
        Dispatcher {
            rate: spec.max_dispatches_per_second / NS_PER_SEC as f64,
            burst,
            tokens: burst,
            last: 0,
            max_concurrent: spec.max_concurrent_dispatches.max(1),
            in_flight: 0,
            due: VecDeque::new(),
            tick_pending: false,
        }
    }

    fn refill(&mut self, now: Nanos) {
        if now > self.last {
            self.tokens = (self.tokens + (now - self.last) as f64 * self.rate).min(self.burst);
            self.last = now;
        }
    }

    /// Whether another dispatch may start now by concurrency alone.
    pub fn has_slot(&self) -> bool {
        self.in_flight < self.max_concurrent
    }

    /// Takes a token for one dispatch at `now`, if there is one.
    pub fn take_token(&mut self, now: Nanos) -> bool {
        self.refill(now);
        if self.tokens >= 1.0 - 1e-9 {
            self.tokens = (self.tokens - 1.0).max(0.0);
            true
        } else {
            false
        }
    }

    /// When the next whole token will be there (after a failed `take_token`).
    pub fn next_token_at(&self, now: Nanos) -> Nanos {
        let missing = (1.0 - self.tokens).max(0.0);
        if self.rate <= 0.0 {
            return Nanos::MAX;
        }
        now.saturating_add((missing / self.rate).ceil() as Nanos)
            .max(now + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn spec(rate: f64, burst: u32, conc: u32) -> DispatcherSpec {
        DispatcherSpec {
            max_dispatches_per_second: rate,
            max_burst_size: burst,
            max_concurrent_dispatches: conc,
            dispatch_deadline: Dur::from_secs(600),
        }
    }

    #[test]
    fn bucket_starts_full_then_refills_at_the_rate() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 100));
        assert!((0..3).all(|_| d.take_token(0)));
        assert!(!d.take_token(0));
        assert_eq!(d.next_token_at(0), 100_000_000, "one token per 100 ms");
        assert!(!d.take_token(99_999_999));
        assert!(d.take_token(100_000_000));
        // A long pause refills only up to the burst size.
        assert!((0..3).all(|_| d.take_token(100 * NS_PER_SEC)));
        assert!(!d.take_token(100 * NS_PER_SEC));
    }

    #[test]
    fn concurrency_limit() {
        let mut d = Dispatcher::new(&spec(10.0, 3, 2));
        assert!(d.has_slot());
        d.in_flight = 2;
        assert!(!d.has_slot());
    }
}
