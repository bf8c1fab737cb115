//! Retry budgets: per-client (or global) limits on how many retries may be
//! sent, whatever the backoff says.
//!
//! Three real-world designs, one state machine each:
//!
//! - `token_bucket`: gRPC retry throttling (gRFC A6). Tokens start at
//!   `max_tokens`; every failed attempt with a retryable status costs one
//!   (clamped at 0), every success adds `token_ratio` (clamped at the max),
//!   and a retry is allowed only while `tokens > max_tokens / 2`. Like gRPC
//!   the count is kept in thousandths of a token ("digits beyond 3 decimals
//!   are ignored"), so ten successes at ratio 0.1 add exactly one token. The
//!   simulator calls `on_failure` before `try_retry`, which is grpc-go's
//!   order (decrement, then compare).
//! - `ratio`: the Finagle `RetryBudget` / tower `TpsBudget` design. Every new
//!   request deposits, every retry withdraws `100 / percent` times as much,
//!   deposits expire after `ttl` (ten rotating slots of `ttl / 10`), and a
//!   constant reserve of `min_per_second · ttl` retries is always there.
//! - `quota`: the AWS SDK standard-mode retry quota (botocore
//!   `retries/quota.py`): capacity 500, a retry costs 5 (10 after a
//!   timeout), a success without retries refunds `refund` (1), a success
//!   after retries refunds what the last retry cost; never above capacity.

use super::scope::BudgetScope;
use crate::check::{finite_nonneg, finite_pos, Problems};
use crate::decimal::num;
use crate::time::{Dur, Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// A retry budget as written in a policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// gRPC retry throttling (gRFC A6).
    TokenBucket {
        max_tokens: f64,
        token_ratio: f64,
        #[serde(default)]
        scope: BudgetScope,
    },
    /// Finagle / Linkerd / tower retry budget.
    Ratio {
        #[serde(default = "default_ratio_percent")]
        percent: f64,
        #[serde(default = "default_min_per_second")]
        min_per_second: f64,
        #[serde(default = "default_ttl")]
        ttl: Dur,
        #[serde(default)]
        scope: BudgetScope,
    },
    /// AWS SDK standard-mode retry quota.
    Quota {
        #[serde(default = "default_quota_capacity")]
        capacity: f64,
        #[serde(default = "default_quota_cost")]
        cost: f64,
        #[serde(default = "default_quota_timeout_cost")]
        timeout_cost: f64,
        #[serde(default = "default_quota_refund")]
        refund: f64,
        #[serde(default)]
        scope: BudgetScope,
    },
}

impl BudgetSpec {
    /// Where the budget's state lives.
    pub fn scope(&self) -> BudgetScope {
        match *self {
            BudgetSpec::TokenBucket { scope, .. }
            | BudgetSpec::Ratio { scope, .. }
            | BudgetSpec::Quota { scope, .. } => scope,
        }
    }
}

fn default_ratio_percent() -> f64 {
    20.0
}
fn default_min_per_second() -> f64 {
    10.0
}
fn default_ttl() -> Dur {
    Dur::from_secs(10)
}
fn default_quota_capacity() -> f64 {
    500.0
}
fn default_quota_cost() -> f64 {
    5.0
}
fn default_quota_timeout_cost() -> f64 {
    10.0
}
fn default_quota_refund() -> f64 {
    1.0
}

impl BudgetSpec {
    /// Checks the values serde cannot; `path` ends at `budget`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        match self {
            BudgetSpec::TokenBucket {
                max_tokens,
                token_ratio,
                ..
            } => {
                let p = format!("{path}.token_bucket");
                if !(finite_pos(*max_tokens) && *max_tokens <= 1000.0) {
                    c.err(
                        format!("{p}.max_tokens"),
                        format!("{max_tokens} is out of range (0, 1000] (gRFC A6)"),
                    );
                }
                if !finite_pos(*token_ratio) {
                    c.err(
                        format!("{p}.token_ratio"),
                        format!("{token_ratio} must be a number greater than 0"),
                    );
                }
            }
            BudgetSpec::Ratio {
                percent,
                min_per_second,
                ttl,
                ..
            } => {
                let p = format!("{path}.ratio");
                if !(finite_nonneg(*percent) && *percent <= 1000.0) {
                    c.err(
                        format!("{p}.percent"),
                        format!("{percent} is out of range [0, 1000] (a percent: 20 = 20%)"),
                    );
                }
                if !finite_nonneg(*min_per_second) {
                    c.err(
                        format!("{p}.min_per_second"),
                        format!("{min_per_second} must be a number >= 0"),
                    );
                }
                if ttl.ns() < NS_PER_SEC || ttl.ns() > 60 * NS_PER_SEC {
                    c.err(
                        format!("{p}.ttl"),
                        format!("{ttl} is out of range [1s, 60s]"),
                    );
                }
            }
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                ..
            } => {
                let p = format!("{path}.quota");
                if !finite_pos(*capacity) {
                    c.err(
                        format!("{p}.capacity"),
                        format!("{capacity} must be a number greater than 0"),
                    );
                }
                for (name, v) in [
                    ("cost", cost),
                    ("timeout_cost", timeout_cost),
                    ("refund", refund),
                ] {
                    if !finite_nonneg(*v) {
                        c.err(format!("{p}.{name}"), format!("{v} must be a number >= 0"));
                    }
                }
            }
        }
    }

    /// The budget in words: `token bucket 10 tokens, +0.1 per success (per client)`.
    pub fn describe(&self) -> String {
        match self {
            BudgetSpec::TokenBucket {
                max_tokens,
                token_ratio,
                scope,
            } => format!(
                "token bucket {} tokens, +{} per success ({})",
                num(*max_tokens),
                num(*token_ratio),
                scope.describe()
            ),
            BudgetSpec::Ratio {
                percent,
                min_per_second,
                ttl,
                scope,
            } => format!(
                "ratio {}% + {}/s over {ttl} ({})",
                num(*percent),
                num(*min_per_second),
                scope.describe()
            ),
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                scope,
            } => format!(
                "quota {}, cost {} (timeout {}), refund {} ({})",
                num(*capacity),
                num(*cost),
                num(*timeout_cost),
                num(*refund),
                scope.describe()
            ),
        }
    }
}

/// Fixed-point scale of the token bucket (thousandths of a token) and of
/// the ratio budget's deposits (Finagle's `ScaleFactor`).
const SCALE: f64 = 1000.0;

/// Slots of the ratio budget's sliding window (tower and Finagle use ten).
const RATIO_SLOTS: usize = 10;

/// The live state of one budget (one per client, or one for all clients).
#[derive(Clone, Debug)]
pub struct Budget {
    state: State,
}

#[derive(Clone, Debug)]
enum State {
    /// gRPC throttling, in thousandths of a token.
    TokenBucket {
        tokens: i64,
        max: i64,
        ratio: i64,
    },
    Ratio(RatioWindow),
    Quota {
        available: f64,
        capacity: f64,
        cost: f64,
        timeout_cost: f64,
        refund: f64,
        /// What the most recent retry cost (refunded by a success after
        /// retries).
        last_cost: f64,
    },
}

/// The ratio budget's sliding window: deposits minus withdrawals per slot.
#[derive(Clone, Debug)]
struct RatioWindow {
    slots: [i64; RATIO_SLOTS],
    /// Index (time / slot width) of the newest slot.
    generation: u64,
    slot_width: Nanos,
    deposit: i64,
    withdraw: i64,
    reserve: i64,
}

impl RatioWindow {
    fn new(percent: f64, min_per_second: f64, ttl: Nanos) -> RatioWindow {
        let fraction = (percent / 100.0).max(0.0);
        // Finagle: deposit ScaleFactor, withdraw ScaleFactor / percent; with
        // a zero percent, deposits are worthless and only the reserve counts.
        let (deposit, withdraw) = if fraction == 0.0 {
            (0, 1)
        } else {
            (SCALE as i64, ((SCALE / fraction) as i64).max(1))
        };
        let ttl_secs = ttl as f64 / NS_PER_SEC as f64;
        let reserve = (min_per_second.max(0.0) * ttl_secs * withdraw as f64) as i64;
        RatioWindow {
            slots: [0; RATIO_SLOTS],
            generation: 0,
            slot_width: (ttl / RATIO_SLOTS as u64).max(1),
            deposit,
            withdraw,
            reserve,
        }
    }

    /// Expires the slots older than `ttl` at `now`.
    fn rotate(&mut self, now: Nanos) {
        let generation = now / self.slot_width;
        if generation <= self.generation {
            return;
        }
        let steps = (generation - self.generation).min(RATIO_SLOTS as u64);
        for i in 1..=steps {
            self.slots[((self.generation + i) % RATIO_SLOTS as u64) as usize] = 0;
        }
        self.generation = generation;
    }

    fn current(&mut self) -> &mut i64 {
        &mut self.slots[(self.generation % RATIO_SLOTS as u64) as usize]
    }

    fn balance(&self) -> i64 {
        self.slots.iter().sum::<i64>().saturating_add(self.reserve)
    }
}

impl Budget {
    /// A fresh budget, as at the start of a run.
    pub fn new(spec: &BudgetSpec) -> Budget {
        let state = match *spec {
            BudgetSpec::TokenBucket {
                max_tokens,
                token_ratio,
                ..
            } => {
                let max = (max_tokens.max(0.0) * SCALE).round() as i64;
                State::TokenBucket {
                    tokens: max,
                    max,
                    // gRPC ignores digits beyond the third decimal.
                    ratio: (token_ratio.max(0.0) * SCALE + 1e-9).floor() as i64,
                }
            }
            BudgetSpec::Ratio {
                percent,
                min_per_second,
                ttl,
                ..
            } => State::Ratio(RatioWindow::new(percent, min_per_second, ttl.ns())),
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                ..
            } => State::Quota {
                available: capacity,
                capacity,
                cost,
                timeout_cost,
                refund,
                last_cost: cost,
            },
        };
        Budget { state }
    }

    /// What is left, in the budget's own unit, for reports and tests:
    /// tokens (token bucket), retries that could be sent now (ratio, at the
    /// last time the budget was touched), or quota units (quota).
    pub fn level(&self) -> f64 {
        match &self.state {
            State::TokenBucket { tokens, .. } => *tokens as f64 / SCALE,
            State::Ratio(w) => (w.balance() / w.withdraw) as f64,
            State::Quota { available, .. } => *available,
        }
    }

    /// A new request's first attempt is sent at `now`.
    pub fn on_request(&mut self, now: Nanos) {
        if let State::Ratio(w) = &mut self.state {
            w.rotate(now);
            let d = w.deposit;
            *w.current() += d;
        }
    }

    /// An attempt succeeded at `now`; `was_retry` when it was not the
    /// request's first attempt.
    pub fn on_success(&mut self, _now: Nanos, was_retry: bool) {
        match &mut self.state {
            State::TokenBucket { tokens, max, ratio } => {
                *tokens = tokens.saturating_add(*ratio).min(*max);
            }
            State::Ratio(_) => {}
            State::Quota {
                available,
                capacity,
                refund,
                last_cost,
                ..
            } => {
                let back = if was_retry { *last_cost } else { *refund };
                *available = (*available + back).min(*capacity);
            }
        }
    }

    /// An attempt failed at `now` with a status the policy retries on
    /// (called before `try_retry`).
    pub fn on_failure(&mut self, _now: Nanos) {
        if let State::TokenBucket { tokens, .. } = &mut self.state {
            *tokens = (*tokens - SCALE as i64).max(0);
        }
    }

    /// Asks to send a retry at `now` (after a timeout when `timeout`);
    /// withdraws from the budget and returns true when allowed.
    pub fn try_retry(&mut self, now: Nanos, timeout: bool) -> bool {
        match &mut self.state {
            // Allowed while tokens > max/2, compared exactly in integers.
            State::TokenBucket { tokens, max, .. } => 2 * *tokens > *max,
            State::Ratio(w) => {
                w.rotate(now);
                if w.balance() >= w.withdraw {
                    let x = w.withdraw;
                    *w.current() -= x;
                    true
                } else {
                    false
                }
            }
            State::Quota {
                available,
                cost,
                timeout_cost,
                last_cost,
                ..
            } => {
                let c = if timeout { *timeout_cost } else { *cost };
                if *available < c {
                    false
                } else {
                    *available -= c;
                    *last_cost = c;
                    true
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    const S: Nanos = NS_PER_SEC;

    fn bucket(max: f64, ratio: f64) -> Budget {
        Budget::new(&BudgetSpec::TokenBucket {
            max_tokens: max,
            token_ratio: ratio,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn token_bucket_follows_grfc_a6() {
        let mut b = bucket(10.0, 0.1);
        assert_eq!(b.level(), 10.0);
        // Failures 1..4: tokens 9, 8, 7, 6 (> 5): retries allowed.
        for want in [9.0, 8.0, 7.0, 6.0] {
            b.on_failure(0);
            assert_eq!(b.level(), want);
            assert!(b.try_retry(0, false), "at {want} tokens");
        }
        // Fifth failure: 5 tokens, not > 5: throttled.
        b.on_failure(0);
        assert_eq!(b.level(), 5.0);
        assert!(!b.try_retry(0, false));
        // Ten successes at 0.1 give exactly one token back (no float drift).
        for _ in 0..10 {
            b.on_success(0, false);
        }
        assert_eq!(b.level(), 6.0);
        assert!(b.try_retry(0, false));
        // Never below 0, never above max.
        for _ in 0..50 {
            b.on_failure(0);
        }
        assert_eq!(b.level(), 0.0);
        for _ in 0..500 {
            b.on_success(0, true);
        }
        assert_eq!(b.level(), 10.0);
    }

    #[test]
    fn token_bucket_ignores_digits_beyond_three_decimals() {
        let mut b = bucket(3.0, 0.1239);
        b.on_failure(0);
        b.on_success(0, false);
        assert_eq!(b.level(), 2.123);
        // max 3: threshold 1.5; 1.123 tokens after one more failure.
        b.on_failure(0);
        assert!(!b.try_retry(0, false));
    }

    fn ratio(percent: f64, min_per_second: f64, ttl_s: u64) -> Budget {
        Budget::new(&BudgetSpec::Ratio {
            percent,
            min_per_second,
            ttl: Dur::from_secs(ttl_s),
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn ratio_allows_percent_of_requests_plus_reserve() {
        // 20 %, no reserve: 100 requests allow exactly 20 retries.
        let mut b = ratio(20.0, 0.0, 10);
        for i in 0..100 {
            b.on_request(i * 10_000_000);
        }
        let allowed = (0..100).filter(|_| b.try_retry(S, false)).count();
        assert_eq!(allowed, 20);
        // Reserve alone: min 10/s over 10 s = 100 retries with no requests.
        let mut r = ratio(20.0, 10.0, 10);
        let allowed = (0..1000).filter(|_| r.try_retry(S, false)).count();
        assert_eq!(allowed, 100);
    }

    #[test]
    fn ratio_deposits_expire_after_ttl() {
        let mut b = ratio(50.0, 0.0, 10);
        for _ in 0..10 {
            b.on_request(0);
        }
        assert_eq!(b.level(), 5.0);
        // 9.5 s later the deposits are still in the window...
        assert!(b.try_retry(9_500_000_000, false));
        // ...and after 10 s they have rotated out.
        assert!(!b.try_retry(10 * S, false));
        // The withdrawal at 9.5 s still weighs until its slot expires too.
        b.on_request(11 * S);
        b.on_request(11 * S);
        assert!(!b.try_retry(11 * S, false));
        // At 20 s it is gone; the 11 s deposits and two new ones remain.
        b.on_request(20 * S);
        b.on_request(20 * S);
        assert!(b.try_retry(20 * S, false));
        assert!(b.try_retry(20 * S, false));
        assert!(!b.try_retry(20 * S, false));
    }

    #[test]
    fn ratio_zero_percent_zero_reserve_never_retries() {
        let mut b = ratio(0.0, 0.0, 10);
        b.on_request(0);
        assert!(!b.try_retry(0, false));
    }

    fn quota() -> Budget {
        Budget::new(&BudgetSpec::Quota {
            capacity: 500.0,
            cost: 5.0,
            timeout_cost: 10.0,
            refund: 1.0,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn quota_follows_botocore() {
        let mut q = quota();
        assert!(q.try_retry(0, false));
        assert_eq!(q.level(), 495.0);
        assert!(q.try_retry(0, true));
        assert_eq!(q.level(), 485.0);
        // Success after retries refunds the last acquisition (10).
        q.on_success(0, true);
        assert_eq!(q.level(), 495.0);
        // Success without retries refunds 1, never above capacity.
        q.on_success(0, false);
        assert_eq!(q.level(), 496.0);
        for _ in 0..10 {
            q.on_success(0, false);
        }
        assert_eq!(q.level(), 500.0);
        // Failures alone cost nothing; only retries do.
        q.on_failure(0);
        assert_eq!(q.level(), 500.0);
    }

    #[test]
    fn quota_runs_dry_after_100_retries() {
        let mut q = quota();
        let allowed = (0..1000).filter(|_| q.try_retry(0, false)).count();
        assert_eq!(allowed, 100, "500 / 5");
        assert_eq!(q.level(), 0.0);
        // 4 successes without retry: 4 < 5, still denied; the fifth allows one.
        for _ in 0..4 {
            q.on_success(0, false);
        }
        assert!(!q.try_retry(0, false));
        q.on_success(0, false);
        assert!(!q.try_retry(0, true), "a timeout retry needs 10");
        assert!(q.try_retry(0, false));
    }
}
