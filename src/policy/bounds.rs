//! The worst-case retry amplification a policy allows when every attempt
//! fails, in closed form: attempts per request at most, and which limit
//! sets it. `retrysim assess` checks each bound against a simulation with a
//! permanent outage.
//!
//! Each limit bounds the retries per request on its own; the policy's
//! bound is one plus the smallest (a breaker that gates first attempts too
//! bounds the attempts themselves):
//!
//! | limit | retries per request at most |
//! |---|---|
//! | `max_attempts` m, `max_retry_duration` | the retries `crate::policy::schedule` allows on nominal delays (m − 1 for a cap alone) |
//! | the request's `deadline` D | the k whose smallest delays sum to less than D: attempt k + 1 cannot leave after D |
//! | `token_bucket` (T tokens) | ⌈T/2⌉ − 1 per bucket over the whole run: every failure costs a token, a retry needs more than T/2, nothing succeeds to refill it; × buckets ÷ N |
//! | `ratio` (p %, f/s floor) | p/100 + buckets × f ÷ (N / counted seconds): the deposits plus the reserve (long run) |
//! | `quota` (capacity C, cost c) | ⌊C/c⌋ per quota (no success refunds it) × quotas ÷ N |
//! | breaker (h probes per `open_for`) | buckets × (`min_calls` + h × counted seconds ÷ `open_for`) ÷ N calls get through once it has opened |
//!
//! N is the number of requests the run counts; buckets are the clients for
//! a per-client scope and 1 for a global one. With a duration limit and
//! jitter the count is on nominal delays (as `retrysim schedule` shows it),
//! so a client that draws short delays can fit a retry more.

use crate::decimal::{num, up3};
use crate::policy::budget::BudgetSpec;
use crate::policy::schedule::{delay_range, retries_allowed};
use crate::policy::{BreakerSpec, BudgetScope, Policy};
use crate::status::Status;
use crate::time::{secs, Nanos};

/// Retries walked when summing delays against a deadline.
const WALK: u64 = 1_000_000;

/// What the bound is computed for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Context {
    /// The status every attempt fails with.
    pub failure: Status,
    /// The failures are the client's own timeouts (the AWS quota charges
    /// `timeout_cost` for them).
    pub timeouts: bool,
    /// The request's deadline, if the scenario sets one.
    pub deadline: Option<Nanos>,
    /// Requests the run counts (N).
    pub requests: f64,
    /// Seconds over which they arrive.
    pub counted_s: f64,
    /// Clients sending them (buckets of a per-client scope).
    pub clients: u32,
}

/// One limit and the retries per request it allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// The limit and its arithmetic, in words.
    pub what: String,
    /// Retries per request it allows (may be fractional for budgets); for
    /// a breaker that gates every call, attempts per request − 1.
    pub retries: f64,
    /// A breaker that gates every call: it bounds attempts, first ones
    /// included.
    pub gates_all: bool,
}

/// A policy's worst-case amplification.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// Attempts per request at most; `None` = nothing bounds them.
    pub attempts: Option<f64>,
    /// Every limit that applies, the binding one first.
    pub limits: Vec<Limit>,
    /// True when a breaker that gates every call sets the bound (it bounds
    /// attempts, first ones included, so the bound may be below 1).
    pub gated: bool,
}

impl Bound {
    /// The binding limit in words (`"no limit"` when unbounded).
    pub fn binding(&self) -> String {
        self.limits
            .first()
            .map_or_else(|| "no limit".to_string(), |l| l.what.clone())
    }
}

/// The end of a limit's arithmetic: `= r retries per request`, rounded up
/// (it is an upper bound).
fn per_request(r: f64) -> String {
    format!("= {} retries per request", num(up3(r)))
}

/// How many scopes (buckets) a budget or breaker has.
fn scopes(scope: BudgetScope, ctx: &Context) -> f64 {
    match scope {
        BudgetScope::Global => 1.0,
        _ => f64::from(ctx.clients.max(1)),
    }
}

/// Retries the request's deadline leaves room for: the k whose smallest
/// delays sum to less than the deadline. `None` without a deadline, or
/// when delays can be zero for ever.
pub fn deadline_retries(policy: &Policy, deadline: Option<Nanos>) -> Option<u64> {
    let d = deadline?;
    let mut sum: Nanos = 0;
    for k in 1..=WALK {
        let (lo, _) = delay_range(policy, u32::try_from(k).unwrap_or(u32::MAX));
        sum = sum.saturating_add(lo);
        if sum >= d {
            return Some(k - 1);
        }
    }
    None
}

/// Retries per bucket a token bucket of `max_tokens` allows under constant
/// failure: failures n = 1, 2, … leave `T − n` tokens and a retry needs
/// more than T/2, counted in thousandths as gRPC does.
pub fn token_bucket_retries(max_tokens: f64) -> u64 {
    let max = (max_tokens.max(0.0) * 1000.0).round() as u64;
    // n < max / 2000, n ≥ 1.
    max.div_ceil(2000).saturating_sub(1)
}

/// The retries per request a budget allows under constant failure, with
/// its arithmetic.
pub fn budget_limit(budget: &BudgetSpec, ctx: &Context) -> Limit {
    let n = ctx.requests.max(1.0);
    let b = scopes(budget.scope(), ctx);
    let per = |x: f64| x / n;
    match *budget {
        BudgetSpec::TokenBucket { max_tokens, .. } => {
            let k = token_bucket_retries(max_tokens);
            Limit {
                what: format!(
                    "token bucket: ⌈{}/2⌉ − 1 = {k} retries per bucket, then none; {} × {k} / {} requests {}",
                    num(max_tokens),
                    num(b),
                    num(n),
                    per_request(per(b * k as f64))
                ),
                retries: per(b * k as f64),
                gates_all: false,
            }
        }
        BudgetSpec::Ratio {
            percent,
            min_per_second,
            ..
        } => {
            let rate = n / ctx.counted_s.max(1e-9);
            Limit {
                what: format!(
                    "ratio budget: {}/100 + {} × {}/s floor / {} requests/s {}",
                    num(percent),
                    num(b),
                    num(min_per_second),
                    num(rate),
                    per_request(percent / 100.0 + b * min_per_second / rate)
                ),
                retries: percent / 100.0 + b * min_per_second / rate,
                gates_all: false,
            }
        }
        BudgetSpec::Concurrency { percent, min, .. } => Limit {
            // Envoy counts retries in flight, not retries waiting out
            // their backoff: a slow enough backoff lets every retry
            // through, so the number is not bounded.
            what: format!(
                "concurrency budget: at most max({}% of active requests, {min}) retries in flight; their number is not bounded",
                num(percent)
            ),
            retries: f64::INFINITY,
            gates_all: false,
        },
        BudgetSpec::Rate {
            per_second, burst, ..
        } => Limit {
            // A shared bucket that delays retries: no more than the burst
            // plus the refill over the counted time.
            what: format!(
                "rate budget: ({} burst + {}/s × {} s) × {} / {} requests {}",
                num(burst),
                num(per_second),
                num(ctx.counted_s),
                num(b),
                num(n),
                per_request(per(b * (burst + per_second * ctx.counted_s)))
            ),
            retries: per(b * (burst + per_second * ctx.counted_s)),
            gates_all: false,
        },
        BudgetSpec::Quota {
            capacity,
            cost,
            timeout_cost,
            ..
        } => {
            let c = if ctx.timeouts { timeout_cost } else { cost };
            quota_limit(capacity, c, b, n)
        }
    }
}

/// The retries per request an AWS-style retry quota of `capacity` allows
/// when each retry costs `c`: ⌊capacity ÷ c⌋ per quota, `b` quotas shared
/// by `n` requests.
fn quota_limit(capacity: f64, c: f64, b: f64, n: f64) -> Limit {
    if c <= 0.0 {
        return Limit {
            what: "quota: retries cost nothing".into(),
            retries: f64::INFINITY,
            gates_all: false,
        };
    }
    let k = (capacity / c + 1e-9).floor();
    Limit {
        what: format!(
            "quota: ⌊{} / {}⌋ = {} retries per quota, then none; {} × {} / {} requests {}",
            num(capacity),
            num(c),
            num(k),
            num(b),
            num(k),
            num(n),
            per_request(b * k / n)
        ),
        retries: b * k / n,
        gates_all: false,
    }
}

/// Which of `policy`'s own limits ends its `r` retries, in words.
fn retries_allowed_words(policy: &Policy, r: u64) -> String {
    match (policy.max_attempts, policy.max_retry_duration) {
        (Some(m), None) => format!("max_attempts = {m}"),
        // The attempts were reached first: the age limit ended it.
        (Some(m), Some(d)) if u64::from(m) <= r => format!(
            "{} in max_retry_duration {}",
            crate::decimal::count(r as f64, "retry fits", "retries fit"),
            crate::time::format_duration(d)
        ),
        _ => format!(
            "{}: max_attempts and max_retry_duration both reached",
            crate::decimal::count(r as f64, "retry", "retries")
        ),
    }
}

/// The calls a circuit breaker lets through while every call fails: its
/// minimum calls before it opens, then its half-open probes once per
/// `open_for`, per breaker scope.
fn breaker_limit(br: &BreakerSpec, ctx: &Context) -> Limit {
    let b = scopes(br.scope, ctx);
    let through = b
        * (f64::from(br.min_calls)
            + f64::from(br.half_open_probes) * ctx.counted_s / br.open_for.secs());
    let per = through / ctx.requests.max(1.0);
    let what = format!(
        "breaker: {} × ({} + {} probes × {} s / {} s) calls get through / {} requests",
        num(b),
        br.min_calls,
        br.half_open_probes,
        num(ctx.counted_s),
        num(br.open_for.secs()),
        num(ctx.requests)
    );
    // A breaker gating every call bounds attempts: compare it as
    // retries (attempts − 1).
    Limit {
        what,
        retries: if br.retries_only { per } else { per - 1.0 },
        gates_all: !br.retries_only,
    }
}

/// The worst-case attempts per request of `policy` when every attempt
/// fails with `ctx.failure`.
pub fn worst_case(policy: &Policy, ctx: &Context) -> Bound {
    if !policy.retry_on.contains(ctx.failure) {
        return Bound {
            attempts: Some(1.0),
            limits: vec![Limit {
                what: format!("{} is not retried", ctx.failure.name()),
                retries: 0.0,
                gates_all: false,
            }],
            gated: false,
        };
    }
    let mut limits = Vec::new();
    if let Some(r) = retries_allowed(policy) {
        limits.push(Limit {
            what: retries_allowed_words(policy, r),
            retries: r as f64,
            gates_all: false,
        });
    }
    if let Some(r) = deadline_retries(policy, ctx.deadline) {
        limits.push(Limit {
            what: format!(
                "{} before the {} s deadline",
                crate::decimal::count(r as f64, "retry leaves", "retries leave"),
                num(secs(ctx.deadline.unwrap_or(0)))
            ),
            retries: r as f64,
            gates_all: false,
        });
    }
    if let Some(b) = &policy.budget {
        limits.push(budget_limit(b, ctx));
    }
    if let Some(br) = &policy.breaker {
        limits.push(breaker_limit(br, ctx));
    }
    limits.sort_by(|a, b| a.retries.total_cmp(&b.retries));
    let attempts = limits
        .first()
        .map(|l| 1.0 + l.retries)
        .filter(|a| a.is_finite());
    Bound {
        attempts,
        gated: limits.first().is_some_and(|l| l.gates_all),
        limits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{resolve, BackoffSpec, BreakerSpec, JitterSpec, PolicySpec};
    use crate::time::{Dur, NS_PER_SEC};

    fn ctx(requests: f64, clients: u32, deadline: Option<u64>) -> Context {
        Context {
            failure: Status::Unavailable,
            timeouts: false,
            deadline: deadline.map(|s| s * NS_PER_SEC),
            requests,
            counted_s: 100.0,
            clients,
        }
    }

    fn policy(edit: impl FnOnce(&mut PolicySpec)) -> Policy {
        let mut spec = PolicySpec {
            name: "p".into(),
            max_attempts: Some(0),
            backoff: Some(BackoffSpec::Constant {
                delay: Dur::from_millis(100),
            }),
            ..Default::default()
        };
        edit(&mut spec);
        resolve(&spec).unwrap()
    }

    #[test]
    fn an_attempt_cap_is_the_bound() {
        let p = policy(|s| s.max_attempts = Some(5));
        let b = worst_case(&p, &ctx(1000.0, 10, None));
        assert_eq!(b.attempts, Some(5.0));
        assert_eq!(b.binding(), "max_attempts = 5");
    }

    #[test]
    fn nothing_bounds_unlimited_retries_without_a_deadline() {
        let b = worst_case(&policy(|_| {}), &ctx(1000.0, 10, None));
        assert_eq!(b.attempts, None);
        assert_eq!(b.binding(), "no limit");
    }

    #[test]
    fn a_deadline_bounds_by_the_smallest_delays() {
        // Every 100 ms within 2 s: retries at 0.1 … 1.9 s, 20 attempts.
        let p = policy(|_| {});
        assert_eq!(deadline_retries(&p, Some(2 * NS_PER_SEC)), Some(19));
        assert_eq!(worst_case(&p, &ctx(1.0, 1, Some(2))).attempts, Some(20.0));
        // ±10 % jitter: the smallest delay is 90 ms, 22 fit before 2 s.
        let j = policy(|s| s.jitter = Some(JitterSpec::Proportional(0.1)));
        assert_eq!(deadline_retries(&j, Some(2 * NS_PER_SEC)), Some(22));
        // Full jitter can draw zero for ever: no bound from the deadline.
        let f = policy(|s| s.jitter = Some(JitterSpec::Full));
        assert_eq!(deadline_retries(&f, Some(2 * NS_PER_SEC)), None);
    }

    #[test]
    fn a_duration_limit_counts_the_schedule() {
        // One attempt is reached at once: the age limit alone decides.
        let by_age = |d| {
            move |s: &mut PolicySpec| {
                s.max_attempts = Some(1);
                s.max_retry_duration = Some(Dur::from_millis(d));
            }
        };
        let p = policy(by_age(350));
        // Failures at ages 0, 0.1, 0.2, 0.3 retry; at 0.4 s it stops.
        assert_eq!(worst_case(&p, &ctx(1.0, 1, None)).attempts, Some(5.0));
        assert_eq!(
            worst_case(&p, &ctx(1.0, 1, None)).binding(),
            "4 retries fit in max_retry_duration 350ms"
        );
        let one = policy(by_age(50));
        assert_eq!(
            worst_case(&one, &ctx(1.0, 1, None)).binding(),
            "1 retry fits in max_retry_duration 50ms"
        );
    }

    #[test]
    fn one_retry_before_a_deadline_is_singular() {
        let p = policy(|s| {
            s.backoff = Some(BackoffSpec::Constant {
                delay: Dur::from_millis(600),
            })
        });
        assert_eq!(deadline_retries(&p, Some(NS_PER_SEC)), Some(1));
        assert_eq!(
            worst_case(&p, &ctx(1.0, 1, Some(1))).binding(),
            "1 retry leaves before the 1 s deadline"
        );
    }

    #[test]
    fn token_buckets_allow_half_their_tokens_then_nothing() {
        assert_eq!(token_bucket_retries(10.0), 4);
        assert_eq!(token_bucket_retries(100.0), 49);
        assert_eq!(token_bucket_retries(1.0), 0);
        assert_eq!(token_bucket_retries(3.0), 1);
        let p = policy(|s| {
            s.budget = Some(BudgetSpec::TokenBucket {
                max_tokens: 10.0,
                token_ratio: 0.1,
                scope: BudgetScope::Client,
            })
        });
        // 100 clients × 4 retries over 2,000 requests.
        let b = worst_case(&p, &ctx(2000.0, 100, None));
        assert!((b.attempts.unwrap() - 1.2).abs() < 1e-12);
        assert!(b.binding().starts_with("token bucket"));
        // A cap below the budget binds first.
        let capped = policy(|s| {
            s.max_attempts = Some(2);
            s.budget = Some(BudgetSpec::TokenBucket {
                max_tokens: 10.0,
                token_ratio: 0.1,
                scope: BudgetScope::Client,
            })
        });
        assert_eq!(
            worst_case(&capped, &ctx(100.0, 100, None)).attempts,
            Some(2.0)
        );
    }

    #[test]
    fn ratio_and_quota_budgets() {
        let ratio = policy(|s| {
            s.budget = Some(BudgetSpec::Ratio {
                percent: 10.0,
                min_per_second: 0.0,
                ttl: Dur::from_secs(10),
                deposit: Default::default(),
                per_request: None,
                scope: BudgetScope::Global,
            })
        });
        let b = worst_case(&ratio, &ctx(100_000.0, 1, None));
        assert!((b.attempts.unwrap() - 1.1).abs() < 1e-12);
        let quota = policy(|s| {
            s.budget = Some(BudgetSpec::Quota {
                capacity: 500.0,
                cost: 5.0,
                timeout_cost: 10.0,
                throttling_cost: None,
                refund: 1.0,
                scope: BudgetScope::Global,
            })
        });
        let b = worst_case(&quota, &ctx(1000.0, 1, None));
        assert!((b.attempts.unwrap() - 1.1).abs() < 1e-12);
        let timeouts = Context {
            timeouts: true,
            ..ctx(1000.0, 1, None)
        };
        assert!((worst_case(&quota, &timeouts).attempts.unwrap() - 1.05).abs() < 1e-12);
    }

    #[test]
    fn statuses_not_retried_and_gating_breakers() {
        let p = policy(|s| s.retry_on = Some(vec![Status::Internal]));
        assert_eq!(worst_case(&p, &ctx(10.0, 1, None)).attempts, Some(1.0));
        let gate = policy(|s| {
            s.max_attempts = Some(4);
            s.circuit_breaker = Some(BreakerSpec {
                failure_rate: 0.1,
                window: Dur::from_secs(10),
                open_for: Dur::from_secs(5),
                half_open_probes: 1,
                min_calls: 10,
                retries_only: false,
                scope: BudgetScope::Global,
            })
        });
        // 10 + 1 × 100 / 5 = 30 calls over 100,000 requests.
        let b = worst_case(&gate, &ctx(100_000.0, 1, None));
        assert!(b.gated);
        assert!((b.attempts.unwrap() - 30.0 / 100_000.0).abs() < 1e-12);
    }
}
