//! Retry budgets: per-client (or global, or per group of clients) limits on
//! how many retries may be sent, whatever the backoff says.
//!
//! Five real-world designs, one state machine each:
//!
//! - `token_bucket`: gRPC retry throttling (gRFC A6). Tokens start at
//!   `max_tokens`; every failed attempt with a retryable status costs one
//!   (clamped at 0), every success adds `token_ratio` (clamped at the max),
//!   and a retry is allowed only while `tokens > max_tokens / 2`. Like gRPC
//!   the count is kept in thousandths of a token ("digits beyond 3 decimals
//!   are ignored"), so ten successes at ratio 0.1 add exactly one token. The
//!   simulator calls `on_failure` before `try_retry`, which is grpc-go's
//!   order (decrement, then compare).
//! - `ratio`: the Finagle `RetryBudget` / tower `TpsBudget` design. A
//!   deposit is earned by every new request (`deposit: request`), by a
//!   request that ends in a success (`success`, Finagle's requeue filter)
//!   or by every answer the client does not retry (`not_retried`, Linkerd);
//!   every retry withdraws `100 / percent` times as much, deposits expire
//!   after `ttl` (ten rotating slots of `ttl / 10`), and a constant reserve
//!   of `min_per_second · ttl` retries is always there. `per_request` caps
//!   each request at `ceil(per_request% × balance)` retries, fixed when it
//!   starts (Finagle's `RequeueFilter`).
//! - `quota`: the AWS SDK standard-mode retry quota (botocore
//!   `retries/quota.py`): capacity 500, a retry costs 5 (10 after a
//!   timeout; `throttling_cost` after a throttling error when set, as the
//!   2026 behaviour does), a success without retries refunds `refund` (1),
//!   a success after retries refunds what that request's last retry cost
//!   (botocore keeps it in the request's context); never above capacity.
//! - `concurrency`: Envoy's cluster retry budget
//!   (`source/common/upstream/resource_manager_impl.h`, `RetryBudgetImpl`):
//!   a retry is allowed while the retries outstanding stay below
//!   `max(⌊percent/100 · active⌋, min)`, active being the attempts in
//!   flight. A retry is outstanding from the moment it is allowed (its
//!   backoff included) until its own attempt's outcome is known or its
//!   request ends (`source/common/router/retry_state_impl.cc`: `inc()` in
//!   `shouldRetry`, `dec()` in `resetRetry`).
//! - `rate`: client-go's `BucketRateLimiter` (`util/workqueue/
//!   default_rate_limiters.go`): one token bucket of `per_second` tokens
//!   per second and `burst` tokens; a retry reserves a token, going into
//!   debt if need be, and waits until it is paid for. It never refuses: it
//!   delays (the retry waits the longer of its backoff and that wait).

use super::scope::BudgetScope;
use crate::check::{finite_nonneg, finite_pos, must_be, Problems};
use crate::decimal::num;
use crate::decimal::Given;
use crate::status::Status;
use crate::time::{Dur, Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// A retry budget as written in a policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BudgetSpec {
    /// gRPC retry throttling (gRFC A6).
    TokenBucket {
        /// Tokens at the start and at most; retries only while tokens exceed half.
        max_tokens: f64,
        /// Tokens added per success.
        token_ratio: f64,
        /// Where the bucket's state lives (client, group or global).
        #[serde(default)]
        scope: BudgetScope,
    },
    /// Finagle / Linkerd / tower retry budget.
    Ratio {
        /// Retries allowed, as a percentage of deposits (default 20).
        #[serde(default = "default_ratio_percent")]
        percent: f64,
        /// Retries per second always allowed on top (default 10).
        #[serde(default = "default_min_per_second")]
        min_per_second: f64,
        /// How long a deposit lasts (`Dur`, default `10s`).
        #[serde(default = "default_ttl")]
        ttl: Dur,
        /// What earns a deposit (default `request`: every new request).
        #[serde(default, skip_serializing_if = "Deposit::is_request")]
        deposit: Deposit,
        /// The most retries one request may make, as a percentage of the
        /// budget's balance (in retries) when the request starts, rounded
        /// up: Finagle's requeue cap, `ceil(20% × balance)`. Absent: none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_request: Option<f64>,
        /// Where the budget's state lives (client, group or global).
        #[serde(default)]
        scope: BudgetScope,
    },
    /// AWS SDK standard-mode retry quota.
    Quota {
        /// Quota at the start and at most (default 500).
        #[serde(default = "default_quota_capacity")]
        capacity: f64,
        /// Cost of a retry (default 5).
        #[serde(default = "default_quota_cost")]
        cost: f64,
        /// Cost of a retry after a timeout (default 10).
        #[serde(default = "default_quota_timeout_cost")]
        timeout_cost: f64,
        /// Refunded by a success without retries (default 1).
        #[serde(default = "default_quota_refund")]
        refund: f64,
        /// Cost of a retry after a throttling error (`resource_exhausted`);
        /// absent: `cost`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        throttling_cost: Option<f64>,
        /// Where the quota's state lives (client, group or global).
        #[serde(default)]
        scope: BudgetScope,
    },
    /// Envoy's cluster retry budget: concurrent retries below
    /// `max(percent % of active attempts, min)`.
    Concurrency {
        /// Retries outstanding allowed, as a percentage of the attempts in flight
        /// (default 20).
        #[serde(default = "default_concurrency_percent")]
        percent: f64,
        /// Retries outstanding always allowed (default 3).
        #[serde(default = "default_concurrency_min")]
        min: u32,
        /// Where the budget's state lives (client, group or global).
        #[serde(default)]
        scope: BudgetScope,
    },
    /// client-go's shared token bucket: delays retries, never refuses them.
    Rate {
        /// Tokens added per second.
        per_second: f64,
        /// Tokens the bucket holds at most.
        burst: f64,
        /// Where the bucket's state lives (client, group or global).
        #[serde(default)]
        scope: BudgetScope,
    },
}

/// What earns a ratio budget its deposits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Deposit {
    /// Every new request deposits when it starts.
    #[default]
    Request,
    /// A request deposits once, when it ends with a success (Finagle's
    /// `RequeueFilter`: a failed or ignorable final answer earns nothing).
    Success,
    /// Every answer the client will not retry deposits: a success, a
    /// status the policy does not retry, a request out of attempts. A
    /// retryable failure the budget refuses earns nothing (Linkerd's retry
    /// policy: `if !retryable { budget.deposit() }`).
    NotRetried,
}

impl Deposit {
    /// Whether this is the default, `request` (for serialisation).
    pub fn is_request(&self) -> bool {
        *self == Deposit::Request
    }

    /// The rule in words, for `describe`.
    fn describe(self) -> &'static str {
        match self {
            Deposit::Request => "per request",
            Deposit::Success => "per success",
            Deposit::NotRetried => "per answer not retried",
        }
    }
}

impl BudgetSpec {
    /// Where the budget's state lives.
    pub fn scope(&self) -> BudgetScope {
        match *self {
            BudgetSpec::TokenBucket { scope, .. }
            | BudgetSpec::Ratio { scope, .. }
            | BudgetSpec::Quota { scope, .. }
            | BudgetSpec::Concurrency { scope, .. }
            | BudgetSpec::Rate { scope, .. } => scope,
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
fn default_concurrency_percent() -> f64 {
    20.0
}
fn default_concurrency_min() -> u32 {
    3
}

/// Checks a gRPC token bucket's two numbers; `p` ends at `token_bucket`.
fn check_token_bucket(max_tokens: f64, token_ratio: f64, p: &str, c: &mut Problems) {
    if !(finite_pos(max_tokens) && max_tokens <= 1000.0) {
        c.err(
            format!("{p}.max_tokens"),
            format!("{} is out of range (0, 1000] (gRFC A6)", Given(max_tokens)),
        );
    }
    if !(finite_pos(token_ratio) && token_ratio <= 1000.0) {
        c.err(
            format!("{p}.token_ratio"),
            format!(
                "{} is out of range (0, 1000] (a success adds it, up to max_tokens)",
                Given(token_ratio)
            ),
        );
    }
}

/// Checks the ranges of a ratio budget (`percent` of the deposits, the
/// floor `min_per_second` over `ttl`, the `per_request` cap); `p` ends at
/// `ratio`.
fn check_ratio(
    percent: f64,
    min_per_second: f64,
    ttl: Dur,
    per_request: Option<f64>,
    p: &str,
    c: &mut Problems,
) {
    if let Some(cap) = per_request {
        if !(finite_nonneg(cap) && cap <= 1000.0) {
            c.err(
                format!("{p}.per_request"),
                format!(
                    "{} is out of range [0, 1000] (a percent of the balance: 20 = 20%)",
                    Given(cap)
                ),
            );
        }
    }
    if !(finite_nonneg(percent) && percent <= 1000.0) {
        c.err(
            format!("{p}.percent"),
            format!(
                "{} is out of range [0, 1000] (a percent: 20 = 20%)",
                Given(percent)
            ),
        );
    }
    if !(finite_nonneg(min_per_second) && min_per_second <= 1e9) {
        c.err(
            format!("{p}.min_per_second"),
            format!(
                "{} is out of range [0, 1e9] (retries per second)",
                Given(min_per_second)
            ),
        );
    }
    if ttl.ns() < NS_PER_SEC || ttl.ns() > 60 * NS_PER_SEC {
        c.err(
            format!("{p}.ttl"),
            format!("{ttl} is out of range [1s, 60s]"),
        );
    }
}

/// Checks a client-side rate limit's refill and burst; `p` ends at `rate`.
fn check_rate(per_second: f64, burst: f64, p: &str, c: &mut Problems) {
    if !finite_pos(per_second) {
        c.err(
            format!("{p}.per_second"),
            must_be(per_second, "a number greater than 0"),
        );
    }
    if !(burst.is_finite() && burst >= 1.0) {
        c.err(
            format!("{p}.burst"),
            must_be(burst, "a number >= 1 (tokens the bucket holds)"),
        );
    }
}

impl BudgetSpec {
    /// Checks the values serde cannot; `path` ends at `budget`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        let kind = match self {
            BudgetSpec::TokenBucket { .. } => "token_bucket",
            BudgetSpec::Ratio { .. } => "ratio",
            BudgetSpec::Quota { .. } => "quota",
            BudgetSpec::Concurrency { .. } => "concurrency",
            BudgetSpec::Rate { .. } => "rate",
        };
        self.scope().check(&format!("{path}.{kind}.scope"), c);
        match self {
            BudgetSpec::TokenBucket {
                max_tokens,
                token_ratio,
                ..
            } => check_token_bucket(
                *max_tokens,
                *token_ratio,
                &format!("{path}.token_bucket"),
                c,
            ),
            BudgetSpec::Ratio {
                percent,
                min_per_second,
                ttl,
                per_request,
                ..
            } => check_ratio(
                *percent,
                *min_per_second,
                *ttl,
                *per_request,
                &format!("{path}.ratio"),
                c,
            ),
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                throttling_cost,
                ..
            } => {
                let p = format!("{path}.quota");
                if !finite_pos(*capacity) {
                    c.err(
                        format!("{p}.capacity"),
                        must_be(*capacity, "a number greater than 0"),
                    );
                }
                let throttling = throttling_cost.unwrap_or(0.0);
                for (name, v) in [
                    ("cost", cost),
                    ("timeout_cost", timeout_cost),
                    ("refund", refund),
                    ("throttling_cost", &throttling),
                ] {
                    if !finite_nonneg(*v) {
                        c.err(format!("{p}.{name}"), must_be(*v, "a number >= 0"));
                    }
                }
            }
            BudgetSpec::Concurrency { percent, .. } => {
                if !finite_nonneg(*percent) {
                    c.err(
                        format!("{path}.concurrency.percent"),
                        must_be(*percent, "a number >= 0 (a percent: 20 = 20%)"),
                    );
                }
            }
            BudgetSpec::Rate {
                per_second, burst, ..
            } => check_rate(*per_second, *burst, &format!("{path}.rate"), c),
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
                deposit,
                per_request,
                scope,
            } => {
                let mut s = format!(
                    "ratio {}% + {}/s over {ttl}",
                    num(*percent),
                    num(*min_per_second)
                );
                if *deposit != Deposit::Request {
                    s.push_str(&format!(", deposits {}", deposit.describe()));
                }
                if let Some(cap) = per_request {
                    s.push_str(&format!(
                        ", at most ⌈{}% of the balance⌉ per request",
                        num(*cap)
                    ));
                }
                format!("{s} ({})", scope.describe())
            }
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                throttling_cost,
                scope,
            } => format!(
                "quota {}, cost {} (timeout {}{}), refund {} ({})",
                num(*capacity),
                num(*cost),
                num(*timeout_cost),
                throttling_cost
                    .map(|t| format!(", throttling {}", num(t)))
                    .unwrap_or_default(),
                num(*refund),
                scope.describe()
            ),
            BudgetSpec::Concurrency {
                percent,
                min,
                scope,
            } => format!(
                "concurrent retries below {}% of active attempts, at least {min} ({})",
                num(*percent),
                scope.describe()
            ),
            BudgetSpec::Rate {
                per_second,
                burst,
                scope,
            } => format!(
                "token bucket {}/s, burst {}, delays retries ({})",
                num(*per_second),
                num(*burst),
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

/// What a request remembers for its budget between attempts (one byte in
/// the request): the quota cost of its last retry (refunded if it then
/// succeeds), the number of concurrent-retry slots it holds, or the
/// retries a ratio budget's per-request cap still allows it.
pub type Mark = u8;

/// Quota marks: which cost the request's last retry took.
const MARK_COST: Mark = 1;
const MARK_TIMEOUT: Mark = 2;
const MARK_THROTTLING: Mark = 3;

/// The live state of one budget (one per client, group of clients, or one
/// for all clients).
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
        throttling_cost: f64,
        refund: f64,
    },
    Concurrency {
        /// Attempts in flight (Envoy's active plus pending requests).
        active: u64,
        /// Retries allowed and not yet resolved.
        retries: u64,
        percent: f64,
        min: u64,
    },
    Rate(RateBucket),
}

/// client-go's bucket (golang.org/x/time/rate semantics): tokens refill
/// continuously up to `burst`; a reservation takes one token even when
/// there is none, and the debt sets the wait.
#[derive(Clone, Debug)]
struct RateBucket {
    tokens: f64,
    burst: f64,
    /// Tokens per nanosecond.
    rate: f64,
    last: Nanos,
}

impl RateBucket {
    /// Adds the tokens accrued since the last call, up to `burst`.
    fn refill(&mut self, now: Nanos) {
        if now > self.last {
            self.tokens = (self.tokens + (now - self.last) as f64 * self.rate).min(self.burst);
            self.last = now;
        }
    }

    /// Reserves a token at `now`; returns how long until it is there.
    fn reserve(&mut self, now: Nanos) -> Nanos {
        self.refill(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 {
            0
        } else {
            (-self.tokens / self.rate).ceil() as Nanos
        }
    }

    /// Takes a token at `now` only when one is there (x/time/rate's
    /// `Allow`): no debt, no wait.
    fn allow(&mut self, now: Nanos) -> bool {
        self.refill(now);
        let allowed = self.tokens >= 1.0;
        if allowed {
            self.tokens -= 1.0;
        }
        allowed
    }
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
    /// What earns a deposit.
    rule: Deposit,
    /// Finagle's per-request cap, a fraction of the balance; `None`: none.
    per_request: Option<f64>,
}

impl RatioWindow {
    fn new(
        percent: f64,
        min_per_second: f64,
        ttl: Nanos,
        rule: Deposit,
        per_request: Option<f64>,
    ) -> RatioWindow {
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
            rule,
            per_request: per_request.map(|p| p.max(0.0) / 100.0),
        }
    }

    /// Deposits at `now` what the rule says an event earns.
    fn deposit_at(&mut self, now: Nanos) {
        self.rotate(now);
        let d = self.deposit;
        *self.current() += d;
    }

    /// The balance in whole retries (Finagle's `balance`: the tokens
    /// divided by a withdrawal, rounded down; never below 0 here).
    fn retries(&self) -> i64 {
        (self.balance() / self.withdraw).max(0)
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
                deposit,
                per_request,
                ..
            } => State::Ratio(RatioWindow::new(
                percent,
                min_per_second,
                ttl.ns(),
                deposit,
                per_request,
            )),
            BudgetSpec::Quota {
                capacity,
                cost,
                timeout_cost,
                refund,
                throttling_cost,
                ..
            } => State::Quota {
                available: capacity,
                capacity,
                cost,
                timeout_cost,
                throttling_cost: throttling_cost.unwrap_or(cost),
                refund,
            },
            BudgetSpec::Concurrency { percent, min, .. } => State::Concurrency {
                active: 0,
                retries: 0,
                percent,
                min: u64::from(min),
            },
            BudgetSpec::Rate {
                per_second, burst, ..
            } => State::Rate(RateBucket {
                tokens: burst,
                burst,
                rate: per_second / NS_PER_SEC as f64,
                last: 0,
            }),
        };
        Budget { state }
    }

    /// What is left, in the budget's own unit, for reports and tests:
    /// tokens (token bucket, rate), retries that could be sent now (ratio,
    /// at the last time the budget was touched; concurrency), or quota
    /// units (quota).
    pub fn level(&self) -> f64 {
        match &self.state {
            State::TokenBucket { tokens, .. } => *tokens as f64 / SCALE,
            State::Ratio(w) => (w.balance() / w.withdraw) as f64,
            State::Quota { available, .. } => *available,
            State::Concurrency { retries, .. } => {
                self.concurrency_limit().saturating_sub(*retries) as f64
            }
            State::Rate(b) => b.tokens,
        }
    }

    /// Concurrency budget: the most retries that may be outstanding now,
    /// `max(⌊percent/100 · active⌋, min)` (Envoy truncates to an integer).
    pub fn concurrency_limit(&self) -> u64 {
        match self.state {
            State::Concurrency {
                active,
                percent,
                min,
                ..
            } => concurrency_limit(percent, active, min),
            _ => u64::MAX,
        }
    }

    /// Concurrency budget: (attempts in flight, retries outstanding).
    pub fn concurrency(&self) -> (u64, u64) {
        match self.state {
            State::Concurrency {
                active, retries, ..
            } => (active, retries),
            _ => (0, 0),
        }
    }

    /// A new request starts at `now`; `mark` is its own memory, fresh.
    /// A ratio budget deposits for it (rule `request`) and fixes its
    /// per-request cap, `ceil(fraction × balance)` retries, from the
    /// balance before that deposit (Finagle reads the balance as the
    /// request enters its requeue filter). The cap is held in the mark's
    /// byte, so it counts at most 255 retries.
    pub fn on_request(&mut self, now: Nanos, mark: &mut Mark) {
        if let State::Ratio(w) = &mut self.state {
            w.rotate(now);
            if let Some(f) = w.per_request {
                let cap = (f * w.retries() as f64).ceil();
                *mark = cap.clamp(0.0, f64::from(Mark::MAX)) as Mark;
            }
            if w.rule == Deposit::Request {
                w.deposit_at(now);
            }
        }
    }

    /// An answer at `now` ends its request without a retry for a reason
    /// other than the budget: a status the policy does not retry, or no
    /// attempts left. A ratio budget with the `not_retried` rule deposits
    /// (a success is [`Budget::on_success`]).
    pub fn on_not_retried(&mut self, now: Nanos) {
        if let State::Ratio(w) = &mut self.state {
            if w.rule == Deposit::NotRetried {
                w.deposit_at(now);
            }
        }
    }

    /// An attempt goes out (first attempt, retry or hedge).
    #[inline]
    pub fn on_send(&mut self) {
        if let State::Concurrency { active, .. } = &mut self.state {
            *active += 1;
        }
    }

    /// The client stops waiting for `n` attempts (answered, timed out,
    /// cancelled, or abandoned with their request).
    #[inline]
    pub fn on_attempts_over(&mut self, n: u32) {
        if let State::Concurrency { active, .. } = &mut self.state {
            *active = active.saturating_sub(u64::from(n));
        }
    }

    /// An attempt numbered 2 or more ended for the client: a retry the
    /// request held is resolved (concurrency budget; Envoy's `resetRetry`
    /// when the retry's outcome comes in).
    #[inline]
    pub fn on_retry_over(&mut self, mark: &mut Mark) {
        if let State::Concurrency { retries, .. } = &mut self.state {
            if *mark > 0 {
                *mark -= 1;
                *retries = retries.saturating_sub(1);
            }
        }
    }

    /// The request ended: whatever it still holds is given back
    /// (concurrency budget; Envoy's `resetRetry` in the destructor).
    #[inline]
    pub fn on_request_end(&mut self, mark: &mut Mark) {
        if let State::Concurrency { retries, .. } = &mut self.state {
            *retries = retries.saturating_sub(u64::from(*mark));
            *mark = 0;
        }
    }

    /// An attempt of a request succeeded at `now`; `was_retry` when it was
    /// not the request's first attempt, `mark` what the request remembers
    /// (the quota refunds that request's own last retry cost).
    /// A ratio budget with the `success` or `not_retried` rule deposits.
    pub fn on_success(&mut self, now: Nanos, was_retry: bool, mark: Mark) {
        match &mut self.state {
            State::TokenBucket { tokens, max, ratio } => {
                *tokens = tokens.saturating_add(*ratio).min(*max);
            }
            State::Quota {
                available,
                capacity,
                refund,
                cost,
                timeout_cost,
                throttling_cost,
            } => {
                let back = if !was_retry {
                    *refund
                } else {
                    match mark {
                        MARK_COST => *cost,
                        MARK_TIMEOUT => *timeout_cost,
                        MARK_THROTTLING => *throttling_cost,
                        // Every retry takes a cost, so a request that
                        // retried always has a mark; nothing to give back
                        // otherwise.
                        _ => 0.0,
                    }
                };
                *available = (*available + back).min(*capacity);
            }
            State::Ratio(w) => {
                if w.rule != Deposit::Request {
                    w.deposit_at(now);
                }
            }
            State::Concurrency { .. } | State::Rate(_) => {}
        }
    }

    /// An attempt failed at `now` with a status the policy retries on
    /// (called before `try_retry`).
    pub fn on_failure(&mut self, _now: Nanos) {
        if let State::TokenBucket { tokens, .. } = &mut self.state {
            *tokens = (*tokens - SCALE as i64).max(0);
        }
    }

    /// Whether a token-bucket throttle is at its threshold or below (no
    /// retry or hedge may go); false for every other kind, which has no
    /// threshold to be under without being asked.
    pub fn throttled(&self) -> bool {
        match &self.state {
            State::TokenBucket { tokens, max, .. } => 2 * *tokens <= *max,
            _ => false,
        }
    }

    /// Asks to send a hedge at `now`: a retry to the budget that goes at
    /// once or not at all, so a `rate` budget lets it go only when a token
    /// is there now (a hedge that waited for one would be no hedge).
    pub fn try_hedge(&mut self, now: Nanos, mark: &mut Mark) -> bool {
        match &mut self.state {
            State::Rate(b) => b.allow(now),
            _ => self
                .try_retry(now, Status::Unavailable, false, mark)
                .is_some(),
        }
    }

    /// Asks to send a retry at `now` after a failure with `status`
    /// (`timeout`: the client gave up on the attempt). `None`: refused.
    /// `Some(wait)`: allowed and withdrawn from the budget; the retry may
    /// not leave before `wait` (only the `rate` budget waits). `mark` is the
    /// request's own memory and is updated.
    pub fn try_retry(
        &mut self,
        now: Nanos,
        status: Status,
        timeout: bool,
        mark: &mut Mark,
    ) -> Option<Nanos> {
        match &mut self.state {
            // Allowed while tokens > max/2, compared exactly in integers.
            State::TokenBucket { tokens, max, .. } => (2 * *tokens > *max).then_some(0),
            State::Ratio(w) => {
                w.rotate(now);
                // Finagle asks the request's own cap first: a request out
                // of retries withdraws nothing.
                if w.per_request.is_some() && *mark == 0 {
                    return None;
                }
                if w.balance() >= w.withdraw {
                    if w.per_request.is_some() {
                        *mark -= 1;
                    }
                    let x = w.withdraw;
                    *w.current() -= x;
                    Some(0)
                } else {
                    None
                }
            }
            State::Quota {
                available,
                cost,
                timeout_cost,
                throttling_cost,
                ..
            } => {
                let (c, m) = if timeout {
                    (*timeout_cost, MARK_TIMEOUT)
                } else if status == Status::ResourceExhausted {
                    (*throttling_cost, MARK_THROTTLING)
                } else {
                    (*cost, MARK_COST)
                };
                if *available < c {
                    None
                } else {
                    *available -= c;
                    *mark = m;
                    Some(0)
                }
            }
            State::Concurrency {
                active,
                retries,
                percent,
                min,
            } => {
                if *retries < concurrency_limit(*percent, *active, *min) {
                    *retries += 1;
                    *mark = mark.saturating_add(1);
                    Some(0)
                } else {
                    None
                }
            }
            State::Rate(b) => Some(b.reserve(now)),
        }
    }
}

/// Envoy's `max(⌊percent/100 · active⌋, min)`.
fn concurrency_limit(percent: f64, active: u64, min: u64) -> u64 {
    ((percent / 100.0 * active as f64) as u64).max(min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    /// try_retry after an `unavailable` answer (or a timeout), with a
    /// throwaway mark.
    fn ask(b: &mut Budget, now: Nanos, timeout: bool) -> bool {
        let mut m = 0;
        b.try_retry(now, Status::Unavailable, timeout, &mut m)
            .is_some()
    }

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
            assert!(ask(&mut b, 0, false), "at {want} tokens");
        }
        // Fifth failure: 5 tokens, not > 5: throttled.
        b.on_failure(0);
        assert_eq!(b.level(), 5.0);
        assert!(!ask(&mut b, 0, false));
        // Ten successes at 0.1 give exactly one token back (no float drift).
        for _ in 0..10 {
            b.on_success(0, false, 0);
        }
        assert_eq!(b.level(), 6.0);
        assert!(ask(&mut b, 0, false));
        // Never below 0, never above max.
        for _ in 0..50 {
            b.on_failure(0);
        }
        assert_eq!(b.level(), 0.0);
        for _ in 0..500 {
            b.on_success(0, true, 0);
        }
        assert_eq!(b.level(), 10.0);
    }

    #[test]
    fn token_bucket_ignores_digits_beyond_three_decimals() {
        let mut b = bucket(3.0, 0.1239);
        b.on_failure(0);
        b.on_success(0, false, 0);
        assert_eq!(b.level(), 2.123);
        // max 3: threshold 1.5; 1.123 tokens after one more failure.
        b.on_failure(0);
        assert!(!ask(&mut b, 0, false));
    }

    fn ratio(percent: f64, min_per_second: f64, ttl_s: u64) -> Budget {
        Budget::new(&BudgetSpec::Ratio {
            percent,
            min_per_second,
            ttl: Dur::from_secs(ttl_s),
            deposit: Deposit::Request,
            per_request: None,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn ratio_allows_percent_of_requests_plus_reserve() {
        // 20 %, no reserve: 100 requests allow exactly 20 retries.
        let mut b = ratio(20.0, 0.0, 10);
        for i in 0..100 {
            b.on_request(i * 10_000_000, &mut 0);
        }
        let allowed = (0..100).filter(|_| ask(&mut b, S, false)).count();
        assert_eq!(allowed, 20);
        // Reserve alone: min 10/s over 10 s = 100 retries with no requests.
        let mut r = ratio(20.0, 10.0, 10);
        let allowed = (0..1000).filter(|_| ask(&mut r, S, false)).count();
        assert_eq!(allowed, 100);
    }

    #[test]
    fn ratio_deposits_expire_after_ttl() {
        let mut b = ratio(50.0, 0.0, 10);
        for _ in 0..10 {
            b.on_request(0, &mut 0);
        }
        assert_eq!(b.level(), 5.0);
        // 9.5 s later the deposits are still in the window...
        assert!(ask(&mut b, 9_500_000_000, false));
        // ...and after 10 s they have rotated out.
        assert!(!ask(&mut b, 10 * S, false));
        // The withdrawal at 9.5 s still weighs until its slot expires too.
        b.on_request(11 * S, &mut 0);
        b.on_request(11 * S, &mut 0);
        assert!(!ask(&mut b, 11 * S, false));
        // At 20 s it is gone; the 11 s deposits and two new ones remain.
        b.on_request(20 * S, &mut 0);
        b.on_request(20 * S, &mut 0);
        assert!(ask(&mut b, 20 * S, false));
        assert!(ask(&mut b, 20 * S, false));
        assert!(!ask(&mut b, 20 * S, false));
    }

    fn ratio_with(min_per_second: f64, deposit: Deposit, per_request: Option<f64>) -> Budget {
        Budget::new(&BudgetSpec::Ratio {
            percent: 20.0,
            min_per_second,
            ttl: Dur::from_secs(10),
            deposit,
            per_request,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn ratio_deposit_rules_earn_credit_only_where_the_library_does() {
        // `success` (Finagle): starting a request or an answer not retried
        // earns nothing; five successes earn one retry at 20 %.
        let mut f = ratio_with(0.0, Deposit::Success, None);
        for _ in 0..10 {
            f.on_request(0, &mut 0);
            f.on_not_retried(0);
        }
        assert_eq!(f.level(), 0.0);
        for _ in 0..5 {
            f.on_success(0, false, 0);
        }
        assert_eq!(f.level(), 1.0);
        // `not_retried` (Linkerd): successes and answers not retried both
        // count; starting a request does not.
        let mut l = ratio_with(0.0, Deposit::NotRetried, None);
        for _ in 0..10 {
            l.on_request(0, &mut 0);
        }
        assert_eq!(l.level(), 0.0);
        for _ in 0..3 {
            l.on_success(0, true, 0);
        }
        for _ in 0..2 {
            l.on_not_retried(0);
        }
        assert_eq!(l.level(), 1.0);
        // `request`: only starting a request counts.
        let mut r = ratio_with(0.0, Deposit::Request, None);
        for _ in 0..5 {
            r.on_success(0, false, 0);
            r.on_not_retried(0);
        }
        assert_eq!(r.level(), 0.0);
        for _ in 0..5 {
            r.on_request(0, &mut 0);
        }
        assert_eq!(r.level(), 1.0);
        // Deposits still expire with the window, whatever earned them.
        assert!(!ask(&mut l, 10 * S, false));
    }

    #[test]
    fn ratio_per_request_cap_is_fixed_when_the_request_starts() {
        // Reserve 10/s over 10 s = 100 retries; a request may take
        // ceil(20 % × 100) = 20 of them, and asking beyond withdraws
        // nothing.
        let mut b = ratio_with(10.0, Deposit::Success, Some(20.0));
        let mut first = 0;
        b.on_request(0, &mut first);
        assert_eq!(first, 20);
        // A second request starting now has its cap from the same balance,
        // however much the first then takes.
        let mut second = 0;
        b.on_request(0, &mut second);
        assert_eq!(second, 20);
        let took = (0..100)
            .filter(|_| {
                b.try_retry(0, Status::Unavailable, false, &mut first)
                    .is_some()
            })
            .count();
        assert_eq!((took, first, b.level()), (20, 0, 80.0));
        // A third sees 80 left: ceil(16) = 16.
        let mut third = 0;
        b.on_request(0, &mut third);
        assert_eq!(third, 16);
        // The cap rounds up: one retry in the balance allows one; none, none.
        let mut one = ratio_with(0.1, Deposit::Success, Some(20.0));
        let mut m = 0;
        one.on_request(0, &mut m);
        assert_eq!(m, 1);
        let mut none = ratio_with(0.0, Deposit::Success, Some(20.0));
        let mut m = 0;
        none.on_request(0, &mut m);
        assert_eq!(m, 0);
        // A cap above what one byte holds counts as 255.
        let mut big = ratio_with(1000.0, Deposit::Success, Some(20.0));
        let mut m = 0;
        big.on_request(0, &mut m);
        assert_eq!(m, 255);
        // Without per_request the mark is left alone.
        let mut free = ratio_with(10.0, Deposit::Success, None);
        let mut m = 0;
        free.on_request(0, &mut m);
        assert_eq!(m, 0);
        assert_eq!((0..200).filter(|_| ask(&mut free, 0, false)).count(), 100);
    }

    #[test]
    fn ratio_rules_are_described_and_checked() {
        let spec = BudgetSpec::Ratio {
            percent: 20.0,
            min_per_second: 10.0,
            ttl: Dur::from_secs(10),
            deposit: Deposit::Success,
            per_request: Some(20.0),
            scope: BudgetScope::Client,
        };
        assert_eq!(
            spec.describe(),
            "ratio 20% + 10/s over 10s, deposits per success, at most ⌈20% of the \
             balance⌉ per request (per client)"
        );
        let json: BudgetSpec =
            serde_json::from_str(r#"{"ratio": {"deposit": "not_retried", "per_request": 20}}"#)
                .unwrap();
        assert!(matches!(
            json,
            BudgetSpec::Ratio {
                deposit: Deposit::NotRetried,
                per_request: Some(p),
                ..
            } if p == 20.0
        ));
        let mut c = Problems::default();
        BudgetSpec::Ratio {
            percent: 20.0,
            min_per_second: 10.0,
            ttl: Dur::from_secs(10),
            deposit: Deposit::Success,
            per_request: Some(-1.0),
            scope: BudgetScope::Client,
        }
        .check("policies[0].budget", &mut c);
        let text = format!("{c:?}");
        assert!(
            text.contains("policies[0].budget.ratio.per_request"),
            "{text}"
        );
    }

    #[test]
    fn ratio_zero_percent_zero_reserve_never_retries() {
        let mut b = ratio(0.0, 0.0, 10);
        b.on_request(0, &mut 0);
        assert!(!ask(&mut b, 0, false));
    }

    fn quota() -> Budget {
        Budget::new(&BudgetSpec::Quota {
            capacity: 500.0,
            cost: 5.0,
            timeout_cost: 10.0,
            refund: 1.0,
            throttling_cost: None,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn quota_follows_botocore() {
        let mut q = quota();
        let mut m = 0;
        assert!(q.try_retry(0, Status::Unavailable, false, &mut m).is_some());
        assert_eq!(q.level(), 495.0);
        assert!(q.try_retry(0, Status::Unavailable, true, &mut m).is_some());
        assert_eq!(q.level(), 485.0);
        // Success after retries refunds the request's last acquisition (10).
        q.on_success(0, true, m);
        assert_eq!(q.level(), 495.0);
        // Success without retries refunds 1, never above capacity.
        q.on_success(0, false, 0);
        assert_eq!(q.level(), 496.0);
        for _ in 0..10 {
            q.on_success(0, false, 0);
        }
        assert_eq!(q.level(), 500.0);
        // Failures alone cost nothing; only retries do.
        q.on_failure(0);
        assert_eq!(q.level(), 500.0);
    }

    #[test]
    fn quota_refunds_each_request_its_own_retry_cost() {
        // Two requests interleave: A's retry follows a timeout (10), B's an
        // error (5). Each success gives back its own request's cost, in
        // whatever order they succeed (a budget-wide "last cost" would give
        // back 5 twice here, or 10 twice the other way round).
        let mut q = quota();
        let (mut a, mut b) = (0, 0);
        assert!(q.try_retry(0, Status::Unavailable, true, &mut a).is_some());
        assert!(q.try_retry(0, Status::Unavailable, false, &mut b).is_some());
        assert_eq!(q.level(), 485.0);
        q.on_success(0, true, a);
        assert_eq!(q.level(), 495.0, "A's 10 back");
        q.on_success(0, true, b);
        assert_eq!(q.level(), 500.0, "B's 5 back");
        // A request that retried twice (5, then a timeout's 10) gets its
        // last acquisition back, as botocore's request context holds.
        let mut c = 0;
        q.try_retry(0, Status::Internal, false, &mut c);
        q.try_retry(0, Status::Internal, true, &mut c);
        assert_eq!(q.level(), 485.0);
        q.on_success(0, true, c);
        assert_eq!(q.level(), 495.0);
    }

    #[test]
    fn quota_2026_costs_follow_the_sdk_test_table() {
        // aws-sdk-go-v2 aws/retry/retry2026_test.go, "retry eventually
        // succeeds" and "throttling error token bucket drain": 500 → 486 →
        // 472 → (success) 486; a throttling error costs 5 and its success
        // gives the 5 back.
        let mut q = Budget::new(&BudgetSpec::Quota {
            capacity: 500.0,
            cost: 14.0,
            timeout_cost: 14.0,
            refund: 1.0,
            throttling_cost: Some(5.0),
            scope: BudgetScope::Client,
        });
        let mut m = 0;
        q.try_retry(0, Status::Internal, false, &mut m);
        assert_eq!(q.level(), 486.0);
        q.try_retry(0, Status::Unavailable, false, &mut m);
        assert_eq!(q.level(), 472.0);
        q.on_success(0, true, m);
        assert_eq!(q.level(), 486.0);
        let mut t = 0;
        q.try_retry(0, Status::ResourceExhausted, false, &mut t);
        assert_eq!(q.level(), 481.0);
        q.on_success(0, true, t);
        assert_eq!(q.level(), 486.0);
        // "retry quota reached after a single retry": 14 units allow one.
        let mut small = Budget::new(&BudgetSpec::Quota {
            capacity: 14.0,
            cost: 14.0,
            timeout_cost: 14.0,
            refund: 1.0,
            throttling_cost: Some(5.0),
            scope: BudgetScope::Client,
        });
        let mut m = 0;
        assert!(small
            .try_retry(0, Status::Internal, false, &mut m)
            .is_some());
        assert!(small
            .try_retry(0, Status::Internal, false, &mut m)
            .is_none());
    }

    fn concurrency(percent: f64, min: u32) -> Budget {
        Budget::new(&BudgetSpec::Concurrency {
            percent,
            min,
            scope: BudgetScope::Client,
        })
    }

    #[test]
    fn concurrency_budget_admits_below_max_of_percent_and_floor() {
        // 20 % of 30 active attempts = 6 retries; the floor (3) does not
        // bind. A seventh is refused until one resolves.
        let mut b = concurrency(20.0, 3);
        for _ in 0..30 {
            b.on_send();
        }
        let mut marks = [0u8; 8];
        let allowed: Vec<bool> = marks
            .iter_mut()
            .map(|m| b.try_retry(0, Status::Unavailable, false, m).is_some())
            .collect();
        assert_eq!(allowed, [true, true, true, true, true, true, false, false]);
        assert_eq!(b.concurrency(), (30, 6));
        b.on_retry_over(&mut marks[0]);
        assert_eq!((b.concurrency(), marks[0]), ((30, 5), 0));
        assert!(b
            .try_retry(0, Status::Unavailable, false, &mut marks[6])
            .is_some());
        // 29 active: ⌊5.8⌋ = 5 < 6 outstanding: refused.
        b.on_attempts_over(1);
        assert_eq!(b.concurrency_limit(), 5);
        assert!(b
            .try_retry(0, Status::Unavailable, false, &mut marks[7])
            .is_none());
        // Few active attempts: the floor of 3 holds.
        let mut f = concurrency(20.0, 3);
        f.on_send();
        let mut m = 0;
        let n = (0..10)
            .filter(|_| f.try_retry(0, Status::Unavailable, false, &mut m).is_some())
            .count();
        assert_eq!((n, m), (3, 3));
        f.on_request_end(&mut m);
        assert_eq!((f.concurrency(), m), ((1, 0), 0));
    }

    proptest::proptest! {
        /// Whatever the order of sends, answers, retries and request ends,
        /// an admitted retry never takes the outstanding retries above
        /// `max(⌊percent/100 · active⌋, min)`, and the count is exactly what
        /// the requests hold.
        #[test]
        fn concurrency_budget_never_exceeds_its_limit(
            percent in 0.0f64..100.0,
            min in 0u32..5,
            ops in proptest::collection::vec((0u8..5, 0usize..8), 1..400),
        ) {
            let mut b = concurrency(percent, min);
            let mut marks = [0u8; 8];
            let mut active = 0u64;
            for (op, r) in ops {
                match op {
                    0 => { b.on_send(); active += 1; }
                    1 if active > 0 => { b.on_attempts_over(1); active -= 1; }
                    2 => {
                        if b.try_retry(0, Status::Unavailable, false, &mut marks[r]).is_some() {
                            let (_, retries) = b.concurrency();
                            let limit = ((percent / 100.0 * active as f64) as u64).max(u64::from(min));
                            proptest::prop_assert!(retries <= limit, "{} > {}", retries, limit);
                        }
                    }
                    3 => b.on_retry_over(&mut marks[r]),
                    _ => b.on_request_end(&mut marks[r]),
                }
                let held: u64 = marks.iter().map(|&m| u64::from(m)).sum();
                proptest::prop_assert_eq!(b.concurrency(), (active, held));
            }
        }
    }

    #[test]
    fn rate_budget_delays_once_the_burst_is_spent() {
        // client-go's default bucket: 10/s, burst 100. 100 retries at once
        // go now; the 101st waits 100 ms, the 110th 1 s; 2 s later 20
        // tokens are back, minus the 10 owed.
        let mut r = Budget::new(&BudgetSpec::Rate {
            per_second: 10.0,
            burst: 100.0,
            scope: BudgetScope::Client,
        });
        let mut m = 0;
        let waits: Vec<Nanos> = (0..110)
            .map(|_| r.try_retry(0, Status::Unavailable, false, &mut m).unwrap())
            .collect();
        assert!(waits[..100].iter().all(|&w| w == 0));
        assert_eq!(waits[100], S / 10);
        assert_eq!(waits[109], S);
        assert_eq!(
            r.try_retry(2 * S, Status::Unavailable, false, &mut m),
            Some(0)
        );
        assert!((r.level() - 9.0).abs() < 1e-9, "{}", r.level());
    }

    #[test]
    fn a_rate_budget_hedges_only_with_a_token_in_hand() {
        // 10/s, burst 3: three hedges at once, then none on credit; a
        // token is back 100 ms later, and a refusal took nothing.
        let mut r = Budget::new(&BudgetSpec::Rate {
            per_second: 10.0,
            burst: 3.0,
            scope: BudgetScope::Client,
        });
        let mut m = 0;
        let now: Vec<bool> = (0..5).map(|_| r.try_hedge(0, &mut m)).collect();
        assert_eq!(now, [true, true, true, false, false]);
        assert!(r.level().abs() < 1e-9, "no debt: {}", r.level());
        assert!(!r.try_hedge(S / 20, &mut m));
        assert!(r.try_hedge(S / 10, &mut m));
        // Other budgets decide a hedge as a retry.
        let mut q = quota();
        assert_eq!((0..200).filter(|_| q.try_hedge(0, &mut m)).count(), 100);
    }

    #[test]
    fn quota_runs_dry_after_100_retries() {
        let mut q = quota();
        let allowed = (0..1000).filter(|_| ask(&mut q, 0, false)).count();
        assert_eq!(allowed, 100, "500 / 5");
        assert_eq!(q.level(), 0.0);
        // 4 successes without retry: 4 < 5, still denied; the fifth allows one.
        for _ in 0..4 {
            q.on_success(0, false, 0);
        }
        assert!(!ask(&mut q, 0, false));
        q.on_success(0, false, 0);
        assert!(!ask(&mut q, 0, true), "a timeout retry needs 10");
        assert!(ask(&mut q, 0, false));
    }
}
