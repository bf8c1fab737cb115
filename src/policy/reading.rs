//! The one reading of a resolved [`Policy`]: every question the rest of
//! the crate asks of a policy — its schedule and retry window, the
//! attempts its limits allow in the worst case, whether its retries can
//! follow each other with no time passing, its description — is answered
//! here, from the policy's fields, so lint, the estimates, `assess`,
//! `tune`, `schedule` and the report never match on them. A new backoff
//! or jitter kind changes the answers by its arms in `backoff.rs` or
//! `jitter.rs` alone.
//!
//! The model keeps its own fast path ([`Policy::next_delay`],
//! [`Policy::fixed_delay`]), built from the same resolved policy.

use super::bounds::{self, Bound, Context, Limit};
use super::schedule::{self, Schedule};
use super::{Backoff, Policy, Pushback};
use crate::time::{format_duration, Nanos};

/// How a policy's retries can go out with no time passing and no limit on
/// their number (see [`Policy::zero_time_retries`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZeroTimeRetries {
    /// Every delay of its backoff is zero.
    Backoff,
    /// Its `throttling_backoff` is all zeros and throttling errors happen.
    Throttling,
    /// It waits exactly the server's pushback (gRPC), which is zero.
    Pushback,
}

/// What the failures a policy meets can do to its delays, for
/// [`Policy::zero_time_retries`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failures {
    /// Some failure carries a pushback (`retry_after`) of zero.
    pub zero_pushback: bool,
    /// Some failure is a throttling error (`resource_exhausted`).
    pub throttled: bool,
}

/// A Cloud Tasks queue's retry settings, as a policy that is one has them
/// (see [`Policy::cloud_tasks_queue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueRetry {
    /// `maxAttempts` (-1 = unlimited).
    pub max_attempts: i64,
    /// `minBackoff`, ns.
    pub min_backoff: Nanos,
    /// `maxBackoff`, ns.
    pub max_backoff: Nanos,
    /// `maxDoublings`.
    pub max_doublings: u32,
    /// `maxRetryDuration`, ns, if set.
    pub max_retry_duration: Option<Nanos>,
}

/// What a run under a policy depends on ([`Policy::behaviour`]): two
/// policies with equal behaviours make the same run from the same random
/// streams.
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviour {
    /// The policy, its backoff replaced by a constant when `delays` hold
    /// its schedule instead, and its `max_retry_duration` dropped when no
    /// attempt limit lets it count.
    policy: Policy,
    /// The kind of its backoff (the model treats kinds apart).
    kind: std::mem::Discriminant<Backoff>,
    /// Every delay that can happen, retry 1 first, up to the first that
    /// every later one repeats (or the last retry the attempt limit
    /// allows); `None` when the delays depend on more than the retry's
    /// number (decorrelated backoff, jitter that reads the next delay) or
    /// take too long to settle.
    delays: Option<Vec<Nanos>>,
}

/// Delays walked at most to find where a schedule settles.
const SETTLE_WALK: u32 = 10_000;

impl Policy {
    /// What its runs depend on: the policy with what cannot change them
    /// left out, so that settings written differently but acting the same
    /// (a `max_doublings` that the cap reaches first, a `max_backoff`
    /// equal to the `min_backoff`) are told to be the same run. Each
    /// retry's delay depends only on its number and one draw, once the
    /// backoff is not decorrelated and the jitter reads no other delay:
    /// then the list of delays stands for the backoff.
    pub fn behaviour(&self) -> Behaviour {
        let mut policy = self.clone();
        if policy.max_attempts.is_none() {
            // Without an attempt limit a request never gives up (both
            // limits must be reached), whatever its age.
            policy.max_retry_duration = None;
        }
        let kind = std::mem::discriminant(&self.backoff);
        // A constant is its own list; validation keeps every other
        // schedule from shrinking (a multiplier of at least 1), so it
        // stays at its cap once there.
        let by_number = !matches!(
            self.backoff,
            Backoff::Decorrelated { .. } | Backoff::Constant { .. }
        ) && !self.jitter.needs_next();
        let last = match (self.max_attempts, policy.max_retry_duration) {
            (Some(m), None) => m.saturating_sub(1).min(SETTLE_WALK),
            _ => SETTLE_WALK,
        };
        let delays = by_number.then(|| self.settled_delays(last)).flatten();
        if delays.is_some() {
            policy.backoff = Backoff::Constant { delay: 0 };
        }
        Behaviour {
            policy,
            kind,
            delays,
        }
    }

    /// The nominal delays of retries 1 to `last`, stopping at the first
    /// that equals the cap (every later one does); `None` when neither
    /// happens within [`SETTLE_WALK`].
    fn settled_delays(&self, last: u32) -> Option<Vec<Nanos>> {
        let cap = self.backoff.cap();
        let mut delays = Vec::new();
        for n in 1..=last {
            let d = self.backoff.nominal(n);
            delays.push(d);
            if d >= cap {
                return Some(delays);
            }
        }
        (last < SETTLE_WALK).then_some(delays)
    }

    /// Attempts in all, the first included, as a number: infinite when
    /// unlimited.
    pub fn attempt_cap(&self) -> f64 {
        self.max_attempts.map_or(f64::INFINITY, f64::from)
    }

    /// Whether the number of attempts is limited.
    pub fn limits_attempts(&self) -> bool {
        self.max_attempts.is_some()
    }

    /// Whether an age limit is set beside unlimited attempts, so that it
    /// never ends a request's retries (hedging aside, which has its own
    /// limit).
    pub fn age_limit_never_ends(&self) -> bool {
        !self.limits_attempts() && self.max_retry_duration.is_some() && self.hedging.is_none()
    }

    /// The nominal (un-jittered) delay before retry `n` (1 = the first).
    pub fn nominal_delay(&self, n: u32) -> Nanos {
        self.backoff.nominal(n)
    }

    /// The schedule: its first `rows` retries (default
    /// [`schedule::DEFAULT_ROWS`]) and its whole retry window.
    pub fn schedule(&self, rows: Option<u32>) -> Schedule {
        schedule::schedule(self, rows)
    }

    /// The retries the limits allow, judged on nominal delays; `None`
    /// when unlimited.
    pub fn retries_allowed(&self) -> Option<u64> {
        schedule::retries_allowed(self)
    }

    /// The smallest and largest delay before retry `k` (1-based), jitter
    /// included.
    pub fn delay_range(&self, k: u32) -> (Nanos, Nanos) {
        schedule::delay_range(self, k)
    }

    /// The worst-case attempts per request under each of the policy's
    /// limits when every attempt fails, the binding one first.
    pub fn worst_case(&self, ctx: &Context) -> Bound {
        bounds::worst_case(self, ctx)
    }

    /// The retries per request the policy's budget allows under constant
    /// failure, if it has a budget.
    pub fn budget_limit(&self, ctx: &Context) -> Option<Limit> {
        self.budget.as_ref().map(|b| bounds::budget_limit(b, ctx))
    }

    /// Whether a budget or a breaker bounds the retries over the whole
    /// run (not per request).
    pub fn bounds_retries_per_run(&self) -> bool {
        self.budget.is_some() || self.breaker.is_some()
    }

    /// How the policy's retries can go out with no time passing and
    /// nothing limiting their number (no attempt limit, no budget), given
    /// what its `failures` can be; `None` when they cannot. The first that
    /// applies of: a zero backoff, a zero throttling backoff, a zero
    /// pushback waited exactly.
    pub fn zero_time_retries(&self, failures: Failures) -> Option<ZeroTimeRetries> {
        if self.limits_attempts() || self.budget.is_some() {
            return None;
        }
        let zero_throttled = self
            .throttling_backoff
            .as_ref()
            .is_some_and(|b| b.is_zero());
        if self.backoff.is_zero() {
            Some(ZeroTimeRetries::Backoff)
        } else if zero_throttled && failures.throttled {
            Some(ZeroTimeRetries::Throttling)
        } else if self.honor_retry_after
            && self.pushback == Pushback::Exact
            && failures.zero_pushback
        {
            Some(ZeroTimeRetries::Pushback)
        } else {
            None
        }
    }

    /// The policy as a Cloud Tasks queue's retry settings: `None` unless
    /// its backoff is Cloud Tasks' and it has no jitter (a queue has none).
    pub fn cloud_tasks_queue(&self) -> Option<QueueRetry> {
        let super::Backoff::CloudTasks {
            min_backoff,
            max_backoff,
            max_doublings,
        } = self.backoff
        else {
            return None;
        };
        (self.jitter == super::Jitter::None).then(|| QueueRetry {
            max_attempts: self.max_attempts.map_or(-1, i64::from),
            min_backoff,
            max_backoff,
            max_doublings,
            max_retry_duration: self.max_retry_duration,
        })
    }

    /// The policy's settings in words, one `(label, value)` row each, as
    /// the HTML report lists them.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let mut rows = vec![];
        if let Some(preset) = &self.preset {
            rows.push(("preset", preset.to_string()));
        }
        rows.push((
            "max attempts",
            self.max_attempts
                .map(|m| m.to_string())
                .unwrap_or_else(|| "unlimited".into()),
        ));
        rows.push((
            "max retry duration",
            self.max_retry_duration
                .map(format_duration)
                .unwrap_or_else(|| "none".into()),
        ));
        if let Some(h) = &self.hedging {
            rows.push(("hedging", h.describe()));
        } else if self.may_retry() {
            rows.push(("backoff", self.backoff.describe()));
            rows.push(("jitter", self.jitter.describe()));
            let on: Vec<&str> = self.retry_on.to_vec().iter().map(|s| s.name()).collect();
            rows.push(("retry on", on.join(", ")));
        }
        rows.push((
            "budget",
            self.budget
                .as_ref()
                .map(|b| b.describe())
                .unwrap_or_else(|| "none".into()),
        ));
        if let Some(b) = &self.breaker {
            rows.push(("circuit breaker", b.describe()));
        }
        if let Some(l) = &self.rate_limiter {
            rows.push(("rate limiter", l.describe()));
        }
        if self.honor_retry_after {
            rows.push(("retry-after", "honoured".into()));
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{resolve, BackoffSpec, PolicySpec};
    use crate::time::Dur;

    fn policy(edit: impl FnOnce(&mut PolicySpec)) -> Policy {
        let mut spec = PolicySpec {
            name: "p".into(),
            backoff: Some(BackoffSpec::Constant {
                delay: Dur::from_millis(0),
            }),
            max_attempts: Some(0),
            ..Default::default()
        };
        edit(&mut spec);
        resolve(&spec).unwrap()
    }

    fn cloud_tasks(min_s: u64, max_s: u64, doublings: u32) -> impl FnOnce(&mut PolicySpec) {
        move |s: &mut PolicySpec| {
            s.max_attempts = Some(50);
            s.backoff = Some(BackoffSpec::CloudTasks {
                min_backoff: Dur::from_secs(min_s),
                max_backoff: Dur::from_secs(max_s),
                max_doublings: doublings,
            });
        }
    }

    /// Settings written differently that act the same have one behaviour;
    /// any difference in a delay or a limit that can count tells them
    /// apart.
    #[test]
    fn behaviours_are_equal_exactly_when_every_delay_and_limit_is() {
        let b = |min_s, max_s, d| policy(cloud_tasks(min_s, max_s, d)).behaviour();
        // With min = max every delay is the cap, however many doublings.
        assert_eq!(b(60, 60, 0), b(60, 60, 16));
        // From 1 s, five doublings reach 32 s at retry 6; retry 7 is 64 s
        // by doubling or by the linear step of 32 s, capped at 60 s: from 5
        // doublings on the schedule is 1, 2, 4, …, 32, 60 s. With 4 the
        // step is 16 s: 16, 32, 48, 60 s.
        assert_eq!(b(1, 60, 5), b(1, 60, 10));
        assert_ne!(b(1, 60, 4), b(1, 60, 5));
        assert_ne!(b(1, 60, 10), b(2, 60, 10));
        assert_ne!(b(1, 60, 10), b(1, 120, 10));
        // Beyond the last retry the attempt limit allows, delays do not
        // count: 2 attempts retry once, after min_backoff.
        let twice = |max_s| {
            policy(|s| {
                cloud_tasks(1, max_s, 10)(s);
                s.max_attempts = Some(2);
            })
            .behaviour()
        };
        assert_eq!(twice(60), twice(3600));
        // An age limit counts only beside an attempt limit.
        let aged = |attempts, secs| {
            policy(|s| {
                cloud_tasks(1, 60, 10)(s);
                s.max_attempts = Some(attempts);
                s.max_retry_duration = Some(Dur::from_secs(secs));
            })
            .behaviour()
        };
        assert_eq!(aged(0, 60), aged(0, 3600));
        assert_ne!(aged(50, 60), aged(50, 3600));
        assert_ne!(aged(50, 60), aged(40, 60));
    }

    /// Where a delay depends on more than its retry's number, the backoff
    /// is kept as written.
    #[test]
    fn delays_that_read_more_than_their_number_keep_the_backoff() {
        let next_step = |doublings| {
            policy(|s| {
                cloud_tasks(60, 60, doublings)(s);
                s.jitter = Some(crate::policy::JitterSpec::NextStep);
            })
            .behaviour()
        };
        assert!(next_step(3).delays.is_none());
        assert_ne!(next_step(3), next_step(16));
        let full = policy(|s| {
            cloud_tasks(60, 60, 3)(s);
            s.jitter = Some(crate::policy::JitterSpec::Full);
        });
        assert!(full.behaviour().delays.is_some());
        let constant = policy(|s| s.max_attempts = Some(3));
        assert!(constant.behaviour().delays.is_none());
        assert_eq!(constant.behaviour().policy.backoff, constant.backoff);
    }

    /// A request gives up once both limits are reached; an age limit
    /// beside unlimited attempts never ends its retries.
    #[test]
    fn an_age_limit_needs_an_attempt_limit_to_end_retries() {
        let d = Dur::from_secs(5);
        let aged = policy(|s| s.max_retry_duration = Some(d));
        assert!(!aged.exhausted(1e9, Nanos::MAX));
        assert!(aged.age_limit_never_ends());
        let both = policy(|s| {
            s.max_retry_duration = Some(d);
            s.max_attempts = Some(3);
        });
        assert!(!both.exhausted(3.0, d.ns() - 1));
        assert!(!both.exhausted(2.0, d.ns()));
        assert!(both.exhausted(3.0, d.ns()));
        // 2 s apart, at 1 s of age: 2 more by the count, 2 by the age.
        assert_eq!(
            both.attempts_left(1.0, Dur::from_secs(1).ns(), Dur::from_secs(2).ns()),
            2.0
        );
        // Past the count, retries go on until the age limit.
        assert_eq!(
            both.attempts_left(7.0, Dur::from_secs(1).ns(), Dur::from_millis(500).ns()),
            8.0
        );
        assert!(!both.age_limit_never_ends());
        assert_eq!(both.attempt_cap(), 3.0);
        assert!(policy(|_| {}).attempt_cap().is_infinite());
    }

    /// Zero-time retries need no attempt limit and no budget, and then
    /// the first way that applies is named.
    #[test]
    fn zero_time_retries_name_the_delay_that_is_zero() {
        let all = Failures {
            zero_pushback: true,
            throttled: true,
        };
        assert_eq!(
            policy(|_| {}).zero_time_retries(Failures::default()),
            Some(ZeroTimeRetries::Backoff)
        );
        assert_eq!(
            policy(|s| s.max_attempts = Some(5)).zero_time_retries(all),
            None
        );
        let second = || BackoffSpec::Constant {
            delay: Dur::from_secs(1),
        };
        let throttling = policy(|s| {
            s.backoff = Some(second());
            s.throttling_backoff = Some(BackoffSpec::Constant {
                delay: Dur::from_millis(0),
            });
        });
        assert_eq!(
            throttling.zero_time_retries(all),
            Some(ZeroTimeRetries::Throttling)
        );
        assert_eq!(throttling.zero_time_retries(Failures::default()), None);
        let exact = policy(|s| {
            s.backoff = Some(second());
            s.honor_retry_after = Some(true);
            s.pushback = Some(Pushback::Exact);
        });
        assert_eq!(
            exact.zero_time_retries(all),
            Some(ZeroTimeRetries::Pushback)
        );
        assert_eq!(exact.zero_time_retries(Failures::default()), None);
    }

    /// A hedging policy's settings name hedging once, in the label: the
    /// value does not repeat it ("hedging: hedging: up to 4 attempts").
    #[test]
    fn hedging_is_named_once_in_the_settings() {
        let p = policy(|s| {
            s.hedging = Some(crate::policy::HedgingSpec {
                delay: Dur::from_millis(50),
                max_attempts: 4,
                non_fatal: vec![],
                implementation: Default::default(),
            });
        });
        let rows = p.settings();
        let (_, value) = rows.iter().find(|(k, _)| *k == "hedging").expect("a row");
        assert_eq!(value, "up to 4 attempts, one every 50ms, non-fatal: none");
    }

    /// Only an unjittered Cloud Tasks schedule is a queue's.
    #[test]
    fn a_cloud_tasks_queue_is_read_from_its_preset() {
        let q = policy(|s| {
            s.backoff = None;
            s.max_attempts = None;
            s.preset = Some("cloud-tasks-default".into());
        })
        .cloud_tasks_queue()
        .expect("a queue");
        assert_eq!(q.max_attempts, 100);
        assert_eq!(q.max_doublings, 16);
        assert_eq!(q.min_backoff, Dur::from_millis(100).ns());
        assert_eq!(policy(|_| {}).cloud_tasks_queue(), None);
    }
}
