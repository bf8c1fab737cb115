//! Retry policies: what a client does after a failed attempt.
//!
//! Everything here is a pure function or a small state machine, tested
//! alone: backoff schedules, jitter, retry budgets and circuit breakers. The
//! model (`crate::model`) asks a [`Policy`] whether and when to retry; it
//! never computes a delay itself.

pub mod backoff;
pub mod bounds;
pub mod breaker;
pub mod budget;
pub mod hedging;
pub mod jitter;
pub mod limiter;
pub mod presets;
pub mod reading;
pub mod reconnect;
pub mod schedule;
pub mod scope;
pub mod spec;

pub use backoff::{Backoff, BackoffSpec};
pub use breaker::BreakerSpec;
pub use budget::{BudgetSpec, Deposit};
pub use hedging::{Hedging, HedgingSpec};
pub use jitter::{Jitter, JitterSpec};
pub use limiter::LimiterSpec;
pub use reading::{Behaviour, Failures, ZeroTimeRetries};
pub use reconnect::{Reconnect, ReconnectSpec, Reconnecting};
pub use scope::BudgetScope;
pub use spec::{PolicySpec, Pushback};

use crate::status::{Status, StatusSet};
use crate::time::Nanos;

/// A policy with its preset applied and every default filled in.
#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    /// The policy's name, unique in the scenario.
    pub name: String,
    /// The preset the policy started from, if any (for reports).
    pub preset: Option<String>,
    /// Attempts in all, the first included; `None` = unlimited.
    pub max_attempts: Option<u32>,
    /// Retry time limit from the first attempt; `None` = unlimited.
    pub max_retry_duration: Option<Nanos>,
    /// Resolved delay schedule between retries.
    pub backoff: Backoff,
    /// Randomisation of each backoff delay.
    pub jitter: Jitter,
    /// Statuses that are retried; others end the request as `failed`.
    pub retry_on: StatusSet,
    /// Retry budget, if any.
    pub budget: Option<BudgetSpec>,
    /// Circuit breaker, if any.
    pub breaker: Option<BreakerSpec>,
    /// Whether to wait at least the backend's `retry_after`.
    pub honor_retry_after: bool,
    /// How an honoured pushback combines with the backoff.
    pub pushback: Pushback,
    /// The backoff after a throttling error, when it has its own.
    pub throttling_backoff: Option<Backoff>,
    /// Hedging instead of retries.
    pub hedging: Option<Hedging>,
    /// The client-side rate limiter every attempt goes through.
    pub rate_limiter: Option<LimiterSpec>,
    /// The connection backoff after a crash (`None`: a new connection per
    /// attempt).
    pub reconnect: Option<Reconnect>,
    /// Whether a failure that came after response headers (an `outage`
    /// with `headers_first`) commits the call: no retry, no hedge.
    pub commit_on_headers: bool,
}

/// What a request remembers between its retries to compute the next delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryState {
    /// The last delay (decorrelated backoff grows from it).
    pub previous: Nanos,
    /// Attempts made before the last exact pushback: the backoff sequence
    /// counts retries from there.
    pub restart_at: u32,
}

/// Why a request stops retrying, or that it may go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryVerdict {
    /// Retry allowed (budgets and breakers are asked separately).
    Retry,
    /// The status is not in `retry_on`: the request has failed.
    NotRetryable,
    /// `max_attempts` / `max_retry_duration` ran out: the request is dropped.
    Exhausted,
}

impl Policy {
    /// Decides, from the limits alone, whether a request whose attempt number
    /// `attempts` (1-based, the one that just failed) ended with `status`
    /// `age` after its first attempt may be retried.
    ///
    /// Cloud Tasks' rule: the request is given up only when *both* limits
    /// are reached. Unlimited attempts are never reached, so with them a
    /// request never gives up, whatever its age (a queue's `maxAttempts:
    /// -1`); no age limit is reached at once, so `max_attempts` alone
    /// decides; and since the default is one attempt, a policy that sets
    /// only `max_retry_duration` gives up on age alone.
    pub fn verdict(&self, status: Status, attempts: u32, age: Nanos) -> RetryVerdict {
        if !self.retry_on.contains(status) {
            return RetryVerdict::NotRetryable;
        }
        if self.exhausted(f64::from(attempts), age) {
            RetryVerdict::Exhausted
        } else {
            RetryVerdict::Retry
        }
    }

    /// The delay before retry `n` (1 = first retry). `previous` holds the
    /// request's last delay (decorrelated backoff keeps it per request) and
    /// is updated; `u` is a uniform draw in [0, 1).
    pub fn retry_delay(&self, n: u32, previous: &mut Nanos, u: f64) -> Nanos {
        self.delay_on(&self.backoff, n, previous, u)
    }

    /// [`Policy::retry_delay`] on a given schedule (the policy's backoff,
    /// or its throttling backoff).
    fn delay_on(&self, backoff: &Backoff, n: u32, previous: &mut Nanos, u: f64) -> Nanos {
        let d = match *backoff {
            Backoff::Decorrelated { base, max } => {
                let prev = if *previous == 0 { base } else { *previous };
                Backoff::decorrelated_next(base, max, prev, u)
            }
            _ if self.jitter.needs_next() => {
                let (d, next) = self.jitter.next_bounds(backoff, n);
                self.jitter.apply_next(d, next, u)
            }
            _ => self.jitter.apply(backoff.nominal(n), u),
        };
        *previous = d;
        d
    }

    /// The delay before the retry of a request whose attempt `attempts`
    /// (1-based) just failed: the backoff (jittered with the uniform draw
    /// `u`; the throttling backoff after a throttling error, when the
    /// policy has one), then the server's `pushback`, when it sent one and
    /// the policy honours it. `state` is the request's own backoff memory
    /// and is updated.
    ///
    /// Pushback [`Pushback::AtLeast`] waits the longer of the two;
    /// [`Pushback::Exact`] (gRPC) waits exactly the pushback and starts the
    /// backoff sequence again for the retries after it;
    /// [`Pushback::Bounded`] (AWS 2026) waits the pushback held between the
    /// backoff delay and that delay plus the bound.
    pub fn next_delay(
        &self,
        attempts: u32,
        state: &mut RetryState,
        u: f64,
        pushback: Option<Nanos>,
        throttled: bool,
    ) -> Nanos {
        let n = attempts - state.restart_at;
        let backoff = match &self.throttling_backoff {
            Some(b) if throttled => b,
            _ => &self.backoff,
        };
        let delay = self.delay_on(backoff, n, &mut state.previous, u);
        match pushback.filter(|_| self.honor_retry_after) {
            None => delay,
            Some(ra) => match self.pushback {
                Pushback::AtLeast => delay.max(ra),
                Pushback::Exact => {
                    state.restart_at = attempts;
                    ra
                }
                Pushback::Bounded(extra) => delay.max(ra.min(delay.saturating_add(extra.ns()))),
            },
        }
    }

    /// Whether a request whose `attempts` all failed, the last one `age`
    /// after the first was sent, has reached its limits: both
    /// `max_attempts` and `max_retry_duration` ([`Policy::verdict`]'s
    /// rule for a retryable failure).
    pub fn exhausted(&self, attempts: f64, age: Nanos) -> bool {
        attempts >= self.attempt_cap() && self.max_retry_duration.is_none_or(|d| age >= d)
    }

    /// Attempts a request may still make, `delay` apart, after `attempts`
    /// that ended `age` after its first was sent: those the attempt limit
    /// leaves or those until the age limit is reached, whichever are more
    /// (both limits must be reached to give up).
    pub fn attempts_left(&self, attempts: f64, age: Nanos, delay: Nanos) -> f64 {
        let by_count = (self.attempt_cap() - attempts).max(0.0);
        let by_age = self.max_retry_duration.map_or(0.0, |d| {
            (d.saturating_sub(age) as f64 / delay.max(1) as f64).ceil()
        });
        by_count.max(by_age)
    }

    /// Attempts a request makes when each fails `floor` after it is sent
    /// (and at once when the pushback or throttling applies: each failure
    /// brings the server's `pushback`, if any, and counts as a throttling
    /// error when `throttled`), retried on the schedule (jitter at its
    /// middle) until `life` has passed or the limits are reached (see
    /// [`Policy::exhausted`]), and the time they take; infinite when
    /// retries take no time and nothing caps them. What a storm can cost,
    /// for the run's estimate and the warnings.
    pub fn walk(
        &self,
        life: Nanos,
        floor: Nanos,
        pushback: Option<Nanos>,
        throttled: bool,
    ) -> (f64, Nanos) {
        let (mut attempts, mut waited) = (1.0, 0u64);
        let mut state = RetryState::default();
        // The age of a request when its latest attempt fails: the first
        // failed `floor` after it was sent.
        let age = |waited: Nanos| waited.saturating_add(floor);
        for n in 1..=64u32 {
            if self.exhausted(attempts, age(waited)) {
                return (attempts, waited);
            }
            let delay = self
                .next_delay(n, &mut state, 0.5, pushback, throttled)
                .saturating_add(floor);
            if delay == 0 {
                // No time passes: a finite attempt limit is reached at
                // once, an age limit never.
                let limit = self.attempt_cap();
                let cap = if self.exhausted(limit, age(waited)) {
                    limit
                } else {
                    f64::INFINITY
                };
                return (cap, waited);
            }
            if waited.saturating_add(delay) > life {
                return (attempts, waited);
            }
            waited += delay;
            attempts += 1.0;
            if n == 64 {
                // The schedule has reached its cap: the rest at that delay.
                let more = ((life - waited) / delay) as f64;
                let more = more.min(self.attempts_left(attempts, age(waited), delay));
                return (attempts + more, waited + (more * delay as f64) as Nanos);
            }
        }
        (attempts, waited)
    }

    /// [`Policy::walk`] of a request whose attempts fail at once: the
    /// attempts it makes in `life`. Retries that take no time and never
    /// end stop the clock, which the run reports itself, better than any
    /// count: they count as the first attempt alone here.
    pub fn attempts_within(&self, life: Nanos, pushback: Option<Nanos>, throttled: bool) -> f64 {
        let (attempts, _) = self.walk(life, 0, pushback, throttled);
        if attempts.is_finite() {
            attempts
        } else {
            1.0
        }
    }

    /// Whether `retry_delay` consumes its random draw.
    pub fn delay_is_random(&self) -> bool {
        self.backoff.is_decorrelated() || self.jitter.is_random()
    }

    /// The one delay every retry waits when nothing about a failure can
    /// change it (a constant backoff without random jitter or a throttling
    /// backoff of its own): [`Policy::next_delay`] without a pushback, for
    /// any attempt and retry state. Lets a run skip the schedule's
    /// arithmetic on every retry of the commonest policy.
    pub fn fixed_delay(&self) -> Option<Nanos> {
        match self.backoff {
            Backoff::Constant { delay }
                if !self.delay_is_random() && self.throttling_backoff.is_none() =>
            {
                Some(self.jitter.apply(delay, 0.0))
            }
            _ => None,
        }
    }

    /// Whether this policy ever retries or hedges (more than one attempt
    /// allowed).
    pub fn may_retry(&self) -> bool {
        self.max_attempts != Some(1) || self.max_retry_duration.is_some_and(|d| d > 0)
    }
}

/// Why a policy as written cannot be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// `preset` names no known preset.
    #[error("unknown preset {0:?}; known presets: {known}", known = presets::NAMES.join(", "))]
    UnknownPreset(String),
    /// The policy may retry but says nothing of when.
    #[error("a policy that may retry needs a `backoff` or a `preset`")]
    NeedsBackoff,
}

/// Applies the preset named in `spec` (if any) and the defaults: one
/// attempt, no jitter, retry on `unavailable`, `resource_exhausted` and
/// `deadline_exceeded`, no budget, no breaker, pushback ignored. Errors are
/// about the policy's own fields (the caller adds the path); the values
/// themselves are checked by [`PolicySpec::check`].
pub fn resolve(written: &PolicySpec) -> Result<Policy, ResolveError> {
    let spec = written.with_preset_applied()?;
    // What a hedged and a retrying policy resolve alike.
    let reconnect = spec
        .reconnect
        .as_ref()
        .and_then(Reconnecting::spec)
        .map(ReconnectSpec::resolve);
    let commit_on_headers = spec.commit_on_headers.unwrap_or(false);
    if let Some(h) = &spec.hedging {
        let hedging = h.resolve();
        return Ok(Policy {
            name: spec.name,
            preset: written.preset.clone(),
            max_attempts: Some(hedging.max_attempts),
            max_retry_duration: None,
            // Not used to schedule anything: a hedged request's timers
            // follow `hedging`. It makes `retrysim schedule` show the
            // hedges, `delay` apart.
            backoff: Backoff::Constant {
                delay: hedging.delay,
            },
            jitter: Jitter::None,
            retry_on: hedging.non_fatal,
            budget: spec.budget,
            breaker: spec.circuit_breaker,
            honor_retry_after: spec.honor_retry_after.unwrap_or(false),
            pushback: Pushback::AtLeast,
            throttling_backoff: None,
            hedging: Some(hedging),
            rate_limiter: spec.rate_limiter,
            reconnect,
            commit_on_headers,
        });
    }
    let max_attempts = spec.max_attempts.unwrap_or(1);
    let max_attempts = if max_attempts <= 0 {
        None
    } else {
        // Validation refuses more than `u32::MAX`.
        Some(u32::try_from(max_attempts).unwrap_or(u32::MAX))
    };
    let max_retry_duration = spec.max_retry_duration.map(|d| d.ns()).filter(|&d| d > 0);
    let backoff = match &spec.backoff {
        Some(b) => b.resolve(),
        None => {
            let retries = max_attempts != Some(1) || max_retry_duration.is_some();
            if retries {
                return Err(ResolveError::NeedsBackoff);
            }
            Backoff::Constant { delay: 0 }
        }
    };
    let retry_on = match &spec.retry_on {
        Some(list) => StatusSet::of(list),
        None => StatusSet::default_retry_on(),
    };
    Ok(Policy {
        name: spec.name,
        preset: written.preset.clone(),
        max_attempts,
        max_retry_duration,
        backoff,
        jitter: spec.jitter.unwrap_or_default().into(),
        retry_on,
        budget: spec.budget,
        breaker: spec.circuit_breaker,
        honor_retry_after: spec.honor_retry_after.unwrap_or(false),
        pushback: spec.pushback.unwrap_or_default(),
        throttling_backoff: spec.throttling_backoff.as_ref().map(BackoffSpec::resolve),
        hedging: None,
        rate_limiter: spec.rate_limiter,
        reconnect,
        commit_on_headers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Dur, NS_PER_SEC as S};

    fn policy(max_attempts: Option<i64>, mrd: Option<u64>) -> Policy {
        resolve(&PolicySpec {
            name: "p".into(),
            max_attempts,
            max_retry_duration: mrd.map(Dur::from_secs),
            backoff: Some(BackoffSpec::Constant {
                delay: Dur::from_secs(1),
            }),
            ..Default::default()
        })
        .unwrap()
    }

    /// A fixed delay is what the schedule gives every retry, whatever
    /// the attempt, the state and the failure; policies whose delay can
    /// vary have none.
    #[test]
    fn a_fixed_delay_is_the_schedule_of_every_retry() {
        let spec = |backoff: BackoffSpec, jitter: Option<JitterSpec>| {
            resolve(&PolicySpec {
                name: "p".into(),
                backoff: Some(backoff),
                jitter,
                ..Default::default()
            })
            .unwrap()
        };
        let constant = || BackoffSpec::Constant {
            delay: Dur::from_millis(50),
        };
        let fixed = [
            spec(constant(), None),
            spec(constant(), Some(JitterSpec::Proportional(0.0))),
            policy(Some(3), None),
        ];
        for p in &fixed {
            let d = p.fixed_delay().expect("a constant, unjittered backoff");
            for attempts in [1, 2, 7, 1000] {
                for throttled in [false, true] {
                    let mut state = RetryState {
                        previous: 123,
                        restart_at: 0,
                    };
                    assert_eq!(p.next_delay(attempts, &mut state, 0.0, None, throttled), d);
                    assert_eq!(state.previous, d);
                }
            }
        }
        let exponential = BackoffSpec::Exponential {
            initial: Dur::from_millis(50),
            multiplier: 2.0,
            max: None,
            max_doublings: None,
        };
        assert_eq!(spec(exponential, None).fixed_delay(), None);
        assert_eq!(spec(constant(), Some(JitterSpec::Full)).fixed_delay(), None);
        let mut throttling = spec(constant(), None);
        throttling.throttling_backoff = Some(Backoff::Constant { delay: S });
        assert_eq!(throttling.fixed_delay(), None);
    }

    #[test]
    fn both_limits_must_be_reached_when_both_are_set() {
        let p = policy(Some(3), Some(60));
        let u = Status::Unavailable;
        assert_eq!(
            p.verdict(u, 3, 10 * S),
            RetryVerdict::Retry,
            "age not reached"
        );
        assert_eq!(
            p.verdict(u, 2, 70 * S),
            RetryVerdict::Retry,
            "attempts not reached"
        );
        assert_eq!(p.verdict(u, 3, 60 * S), RetryVerdict::Exhausted);
    }

    #[test]
    fn one_limit_alone_decides_when_the_other_is_reached_at_once() {
        assert_eq!(
            policy(Some(3), None).verdict(Status::Unavailable, 3, 0),
            RetryVerdict::Exhausted
        );
        // The default is one attempt, reached at once: age alone decides.
        let by_age = policy(None, Some(5));
        assert_eq!(
            by_age.verdict(Status::Unavailable, 99, 4 * S),
            RetryVerdict::Retry
        );
        assert_eq!(
            by_age.verdict(Status::Unavailable, 2, 5 * S),
            RetryVerdict::Exhausted
        );
    }

    #[test]
    fn unlimited_attempts_are_never_reached_whatever_the_age() {
        // Cloud Tasks: `maxAttempts: -1` with a `maxRetryDuration` retries
        // until the task's retention ends.
        for unlimited in [0, -1] {
            let p = policy(Some(unlimited), Some(5));
            assert_eq!(
                p.verdict(Status::Unavailable, 99, 4 * S),
                RetryVerdict::Retry
            );
            assert_eq!(
                p.verdict(Status::Unavailable, 1_000_000, 3600 * S),
                RetryVerdict::Retry
            );
        }
        assert_eq!(
            policy(Some(0), None).verdict(Status::Unavailable, 1_000_000, u64::MAX),
            RetryVerdict::Retry
        );
    }

    #[test]
    fn statuses_outside_retry_on_fail() {
        let p = policy(Some(5), None);
        assert_eq!(
            p.verdict(Status::Internal, 1, 0),
            RetryVerdict::NotRetryable
        );
        assert_eq!(
            p.verdict(Status::DeadlineExceeded, 1, 0),
            RetryVerdict::Retry
        );
    }

    #[test]
    fn default_is_one_attempt_and_needs_no_backoff() {
        let p = resolve(&PolicySpec {
            name: "once".into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p.max_attempts, Some(1));
        assert!(!p.may_retry());
        let err = resolve(&PolicySpec {
            name: "x".into(),
            max_attempts: Some(3),
            ..Default::default()
        });
        assert_eq!(err.unwrap_err(), ResolveError::NeedsBackoff);
    }
}
