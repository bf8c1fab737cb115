//! Client-side circuit breaker: stops sending attempts while the recent
//! failure rate is high, so a client stops feeding a backend that is down.
//!
//! Closed: every recorded outcome lands in a sliding window of `window`,
//! kept as ten buckets so memory is constant whatever the call rate. When
//! the window holds at least `min_calls` calls and the failure share is at
//! least `failure_rate`, the breaker opens. Open: `allow` is false for
//! `open_for`. Half-open: up to `half_open_probes` calls are let through; if
//! they all succeed the breaker closes with an empty window, and any failure
//! opens it again. Outcomes of attempts sent before the breaker opened that
//! arrive while it is open are ignored (resilience4j does the same).
//!
//! A probe whose outcome never comes back (its client gave up on the whole
//! request while the attempt was out, so nothing is recorded) would leave
//! the breaker half-open and refusing every call for ever. A half-open
//! breaker whose probes are all out therefore counts them as failed once
//! `window` has passed since it let the first one through, and opens again.

use super::scope::BudgetScope;
use crate::check::Problems;
use crate::decimal::{count, num, Given};
use crate::time::{Dur, Nanos};
use serde::{Deserialize, Serialize};

/// A client-side circuit breaker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSpec {
    /// Failure share (0..1) over `window` that opens the breaker.
    pub failure_rate: f64,
    /// Length of the sliding window the failure share is measured over (`Dur`,
    /// default `10s`).
    #[serde(default = "default_breaker_window")]
    pub window: Dur,
    /// How long the breaker stays open before probing (`Dur`, default `5s`).
    #[serde(default = "default_open_for")]
    pub open_for: Dur,
    /// Calls let through while half-open (default 1).
    #[serde(default = "default_probes")]
    pub half_open_probes: u32,
    /// Calls needed in the window before the rate is trusted.
    #[serde(default = "default_min_calls")]
    pub min_calls: u32,
    /// Gate only retries, never first attempts (Brooker's "stop retrying
    /// while the failure rate is high"); default false = gate every call.
    #[serde(default)]
    pub retries_only: bool,
    /// Where the breaker's state lives (client, group or global).
    #[serde(default)]
    pub scope: BudgetScope,
}

fn default_breaker_window() -> Dur {
    Dur::from_secs(10)
}
fn default_open_for() -> Dur {
    Dur::from_secs(5)
}
fn default_probes() -> u32 {
    1
}
fn default_min_calls() -> u32 {
    10
}

impl BreakerSpec {
    /// Checks the values serde cannot; `path` ends at `circuit_breaker`.
    pub fn check(&self, p: &str, c: &mut Problems) {
        if !(self.failure_rate.is_finite() && self.failure_rate > 0.0 && self.failure_rate <= 1.0) {
            c.err(
                format!("{p}.failure_rate"),
                format!(
                    "{} is out of range: a share of failures in (0, 1], e.g. 0.5",
                    Given(self.failure_rate)
                ),
            );
        }
        c.positive_dur(&format!("{p}.window"), self.window);
        c.positive_dur(&format!("{p}.open_for"), self.open_for);
        if self.half_open_probes < 1 {
            c.err(format!("{p}.half_open_probes"), "must be at least 1");
        }
        self.scope.check(&format!("{p}.scope"), c);
    }

    /// The breaker in words.
    pub fn describe(&self) -> String {
        format!(
            "opens at {}% failures over {}, open {}, {} ({})",
            num(100.0 * self.failure_rate),
            self.window,
            self.open_for,
            count(f64::from(self.half_open_probes), "probe", "probes"),
            self.scope.describe()
        )
    }
}

/// Buckets of the sliding window.
const BUCKETS: usize = 10;

/// Where the breaker is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    /// Calls flow; outcomes are counted.
    Closed,
    /// Calls fail fast until `until`.
    Open {
        /// When the breaker turns half-open, ns.
        until: Nanos,
    },
    /// Probing since `since`: `sent` probes let through, `ok` of them
    /// succeeded.
    HalfOpen {
        /// Probes let through so far.
        sent: u32,
        /// Probes that succeeded so far.
        ok: u32,
        /// When the breaker turned half-open, ns.
        since: Nanos,
    },
}

/// The live state of one breaker.
#[derive(Clone, Debug)]
pub struct Breaker {
    spec: BreakerSpec,
    state: BreakerState,
    /// (calls, failures) per bucket.
    buckets: [(u64, u64); BUCKETS],
    /// Index (time / bucket width) of the newest bucket.
    generation: u64,
    bucket_width: Nanos,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(spec: &BreakerSpec) -> Breaker {
        Breaker {
            spec: spec.clone(),
            state: BreakerState::Closed,
            buckets: [(0, 0); BUCKETS],
            generation: 0,
            bucket_width: (spec.window.ns() / BUCKETS as u64).max(1),
        }
    }

    /// The current state (as of the last call to `allow` or `record`).
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// May an attempt be sent at `now`? A refused call fails fast and is not
    /// an attempt at the backend.
    pub fn allow(&mut self, now: Nanos) -> bool {
        if let BreakerState::Open { until } = self.state {
            if now < until {
                return false;
            }
            self.state = BreakerState::HalfOpen {
                sent: 0,
                ok: 0,
                since: now,
            };
        }
        match &mut self.state {
            BreakerState::Closed => true,
            BreakerState::HalfOpen { sent, since, .. } => {
                if *sent < self.spec.half_open_probes.max(1) {
                    *sent += 1;
                    true
                } else {
                    // Every probe is out; one that has not come back within
                    // `window` is taken as lost (failed).
                    if now.saturating_sub(*since) >= self.spec.window.ns() {
                        self.trip(now);
                    }
                    false
                }
            }
            BreakerState::Open { .. } => unreachable!("handled above"),
        }
    }

    /// Records the outcome of an attempt that was sent.
    pub fn record(&mut self, now: Nanos, success: bool) {
        match &mut self.state {
            BreakerState::Open { .. } => {}
            BreakerState::HalfOpen { ok, .. } => {
                if !success {
                    self.trip(now);
                } else {
                    *ok += 1;
                    if *ok >= self.spec.half_open_probes.max(1) {
                        self.state = BreakerState::Closed;
                        self.buckets = [(0, 0); BUCKETS];
                        self.generation = now / self.bucket_width;
                    }
                }
            }
            BreakerState::Closed => {
                self.rotate(now);
                let b = &mut self.buckets[(self.generation % BUCKETS as u64) as usize];
                b.0 += 1;
                b.1 += u64::from(!success);
                let (calls, failures) = self
                    .buckets
                    .iter()
                    .fold((0, 0), |(c, f), b| (c + b.0, f + b.1));
                // A zero failure rate would open on success alone: at least
                // one failure is needed.
                if calls >= u64::from(self.spec.min_calls.max(1))
                    && failures > 0
                    && failures as f64 >= self.spec.failure_rate * calls as f64
                {
                    self.trip(now);
                }
            }
        }
    }

    fn trip(&mut self, now: Nanos) {
        self.state = BreakerState::Open {
            until: now.saturating_add(self.spec.open_for.ns()),
        };
        self.buckets = [(0, 0); BUCKETS];
    }

    /// Drops the buckets older than `window` at `now`.
    fn rotate(&mut self, now: Nanos) {
        let generation = now / self.bucket_width;
        if generation <= self.generation {
            return;
        }
        let steps = (generation - self.generation).min(BUCKETS as u64);
        for i in 1..=steps {
            self.buckets[((self.generation + i) % BUCKETS as u64) as usize] = (0, 0);
        }
        self.generation = generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::BudgetScope;
    use crate::time::{Dur, NS_PER_SEC as S};

    fn spec(probes: u32) -> BreakerSpec {
        BreakerSpec {
            failure_rate: 0.5,
            window: Dur::from_secs(10),
            open_for: Dur::from_secs(5),
            half_open_probes: probes,
            min_calls: 4,
            scope: BudgetScope::Client,
            retries_only: false,
        }
    }

    fn breaker(probes: u32) -> Breaker {
        Breaker::new(&spec(probes))
    }

    #[test]
    fn describes_its_probes_in_words() {
        let one = spec(1).describe();
        assert!(one.contains(", 1 probe ("), "{one}");
        let three = spec(3).describe();
        assert!(three.contains(", 3 probes ("), "{three}");
    }

    #[test]
    fn opens_at_the_failure_rate_once_enough_calls() {
        let mut b = breaker(1);
        // Three failures: below min_calls, still closed.
        for _ in 0..3 {
            assert!(b.allow(0));
            b.record(0, false);
        }
        assert_eq!(b.state(), BreakerState::Closed);
        b.record(S, true); // 3 of 4 failed: 75 % >= 50 %.
        assert_eq!(b.state(), BreakerState::Open { until: 6 * S });
        assert!(!b.allow(5 * S));
    }

    #[test]
    fn stays_closed_below_the_rate() {
        let mut b = breaker(1);
        for i in 0..100 {
            b.record(i * 10_000_000, i % 4 != 0); // 25 % failures
        }
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn old_outcomes_leave_the_window() {
        let mut b = breaker(1);
        for _ in 0..3 {
            b.record(0, false);
        }
        // 10 s later those failures have expired: 1 call in the window.
        b.record(10 * S, false);
        assert_eq!(b.state(), BreakerState::Closed);
        for _ in 0..2 {
            b.record(10 * S, true);
        }
        b.record(10 * S, false); // 2 of 4: opens.
        assert!(matches!(b.state(), BreakerState::Open { .. }));
    }

    #[test]
    fn half_open_probes_close_or_reopen() {
        let mut b = breaker(2);
        for _ in 0..4 {
            b.record(0, false);
        }
        assert!(!b.allow(4 * S));
        // After open_for: two probes only.
        assert!(b.allow(5 * S));
        assert!(b.allow(5 * S));
        assert!(!b.allow(5 * S));
        b.record(5 * S, true);
        assert!(matches!(b.state(), BreakerState::HalfOpen { ok: 1, .. }));
        b.record(5 * S, false);
        assert_eq!(b.state(), BreakerState::Open { until: 10 * S });
        // Second round: both probes succeed, the breaker closes empty.
        assert!(b.allow(10 * S));
        assert!(b.allow(10 * S));
        b.record(10 * S, true);
        b.record(10 * S, true);
        assert_eq!(b.state(), BreakerState::Closed);
        b.record(10 * S, false);
        assert_eq!(b.state(), BreakerState::Closed, "window was reset");
        assert!(b.allow(10 * S));
    }

    #[test]
    fn lost_probes_reopen_the_breaker_after_a_window() {
        let mut b = breaker(1);
        for _ in 0..4 {
            b.record(0, false);
        }
        // The probe at 5 s never reports back.
        assert!(b.allow(5 * S));
        assert!(!b.allow(14 * S), "still waiting for the probe");
        assert!(matches!(b.state(), BreakerState::HalfOpen { sent: 1, .. }));
        // 10 s (the window) after the probe went out it counts as failed.
        assert!(!b.allow(15 * S));
        assert_eq!(b.state(), BreakerState::Open { until: 20 * S });
        assert!(!b.allow(19 * S));
        // A fresh probe after open_for; this one succeeds and closes it.
        assert!(b.allow(20 * S));
        b.record(20 * S, true);
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn late_outcomes_while_open_are_ignored() {
        let mut b = breaker(1);
        for _ in 0..4 {
            b.record(0, false);
        }
        b.record(S, true);
        b.record(S, false);
        assert_eq!(b.state(), BreakerState::Open { until: 5 * S });
    }
}
