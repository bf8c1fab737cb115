//! Named starting points for policies (`"preset": "cloud-tasks-default"`),
//! so a scenario can say "what Cloud Tasks / gRPC / the AWS SDK / Envoy do
//! by default" in one word and override only what it changes.
//!
//! `docs/policies.md` gives the public source of every number; where the
//! source leaves a choice, the doc comment of [`preset`] says what was
//! chosen and why.
//! Budgets are part of a preset only when the real system has one on by
//! default (AWS standard mode), because a scenario cannot remove a preset's
//! budget, only replace it.

use super::limiter::AdaptiveSpec;
use super::{
    BackoffSpec, BudgetScope, BudgetSpec, Deposit, HedgingSpec, JitterSpec, LimiterSpec,
    PolicySpec, Pushback, ReconnectSpec, Reconnecting,
};
use crate::status::Status;
use crate::time::Dur;

/// The names `preset` accepts.
pub const NAMES: &[&str] = &[
    "cloud-tasks-default",
    "cloud-tasks-critical",
    "cloud-tasks-batch",
    "cloud-tasks-transient",
    "grpc",
    "grpc-legacy",
    "grpc-hedging",
    "aws-standard",
    "aws-standard-2026",
    "aws-adaptive",
    "aws-legacy",
    "aws-legacy-dynamodb",
    "aws-java-legacy",
    "aws-java-legacy-dynamodb",
    "aws-go-v2-standard",
    "aws-js-v3-standard",
    "envoy",
    "envoy-budget",
    "linkerd",
    "finagle",
    "client-go",
];

/// gRPC clients' cap on a retry policy's `maxAttempts`: gRFC A6 treats
/// higher values as 5 (grpc-go's `defaultMaxCallAttempts`, grpc-java's
/// `maxRetryAttempts` default).
pub const GRPC_ATTEMPTS_CAP: i64 = 5;

/// The cap the library behind preset `name` puts on `max_attempts`
/// whatever the policy says: gRPC's for `grpc` and `grpc-legacy`
/// (`grpc-hedging` caps its hedges, see `HedgingSpec`); `None` for the
/// others.
pub fn attempts_cap(name: &str) -> Option<i64> {
    matches!(name, "grpc" | "grpc-legacy").then_some(GRPC_ATTEMPTS_CAP)
}

/// `max_attempts` as preset `name`'s library takes it: above its cap, or
/// unlimited (0 or −1), it is the cap.
pub fn capped_attempts(name: &str, max_attempts: i64) -> i64 {
    match attempts_cap(name) {
        Some(cap) if max_attempts > cap || max_attempts == 0 || max_attempts == -1 => cap,
        _ => max_attempts,
    }
}

/// Every failure status: a Cloud Tasks queue retries any non-2xx answer and
/// any attempt without an answer before the dispatch deadline.
fn every_failure() -> Vec<Status> {
    Status::ALL
        .into_iter()
        .filter(|s| *s != Status::Ok)
        .collect()
}

/// What the AWS SDKs retry: 500/502/503/504 (`internal`, `unavailable`),
/// throttling (`resource_exhausted`) and timeouts (`deadline_exceeded`).
fn aws_retryable() -> Vec<Status> {
    vec![
        Status::Unavailable,
        Status::ResourceExhausted,
        Status::DeadlineExceeded,
        Status::Internal,
    ]
}

fn cloud_tasks(attempts: i64, min: Dur, max: Dur, doublings: u32) -> PolicySpec {
    PolicySpec {
        max_attempts: Some(attempts),
        backoff: Some(BackoffSpec::CloudTasks {
            min_backoff: min,
            max_backoff: max,
            max_doublings: doublings,
        }),
        jitter: Some(JitterSpec::None),
        retry_on: Some(every_failure()),
        ..Default::default()
    }
}

fn exponential(initial: Dur, multiplier: f64, max: Option<Dur>) -> Option<BackoffSpec> {
    Some(BackoffSpec::Exponential {
        initial,
        multiplier,
        max,
        max_doublings: None,
    })
}

/// The AWS standard-mode quota as botocore has it before 2026.
fn aws_quota() -> BudgetSpec {
    BudgetSpec::Quota {
        capacity: 500.0,
        cost: 5.0,
        timeout_cost: 10.0,
        refund: 1.0,
        throttling_cost: None,
        scope: BudgetScope::Client,
    }
}

/// The AWS SDK for Java 2.x in legacy mode, its default
/// (`SdkDefaultRetrySetting`, `DynamoDbRetryPolicy`): `attempts` in all,
/// full jitter on `base · 2^(k−1)` up to 20 s, 500 ms after a throttling
/// error, a quota of 500 with a retry costing 5 and a throttled retry
/// nothing, refund 1 or the request's own cost.
fn aws_java_legacy(attempts: i64, base: Dur) -> PolicySpec {
    let max = Some(Dur::from_secs(20));
    PolicySpec {
        max_attempts: Some(attempts),
        backoff: exponential(base, 2.0, max),
        throttling_backoff: exponential(Dur::from_millis(500), 2.0, max),
        jitter: Some(JitterSpec::Full),
        retry_on: Some(aws_retryable()),
        budget: Some(BudgetSpec::Quota {
            capacity: 500.0,
            cost: 5.0,
            timeout_cost: 5.0,
            refund: 1.0,
            throttling_cost: Some(0.0),
            scope: BudgetScope::Client,
        }),
        honor_retry_after: Some(false),
        ..Default::default()
    }
}

fn aws_standard() -> PolicySpec {
    PolicySpec {
        max_attempts: Some(3),
        backoff: exponential(Dur::from_secs(1), 2.0, Some(Dur::from_secs(20))),
        jitter: Some(JitterSpec::Full),
        retry_on: Some(aws_retryable()),
        budget: Some(aws_quota()),
        honor_retry_after: Some(false),
        ..Default::default()
    }
}

/// Finagle's and Linkerd's budget: 20 % of deposits over a 10 s window,
/// plus 10 retries per second; `deposit` and `per_request` as the library
/// spends it.
fn ratio_20_10_10(deposit: Deposit, per_request: Option<f64>) -> BudgetSpec {
    BudgetSpec::Ratio {
        percent: 20.0,
        min_per_second: 10.0,
        ttl: Dur::from_secs(10),
        deposit,
        per_request,
        scope: BudgetScope::Client,
    }
}

/// Retries at once, as often as the budget allows.
fn budget_only(retry_on: Vec<Status>, budget: BudgetSpec) -> PolicySpec {
    PolicySpec {
        max_attempts: Some(0),
        backoff: Some(BackoffSpec::Constant {
            delay: Dur::default(),
        }),
        jitter: Some(JitterSpec::None),
        retry_on: Some(retry_on),
        budget: Some(budget),
        honor_retry_after: Some(false),
        ..Default::default()
    }
}

fn envoy() -> PolicySpec {
    PolicySpec {
        max_attempts: Some(2),
        backoff: exponential(Dur::from_millis(25), 2.0, Some(Dur::from_millis(250))),
        jitter: Some(JitterSpec::Full),
        retry_on: Some(vec![
            Status::Unavailable,
            Status::ResourceExhausted,
            Status::DeadlineExceeded,
            Status::Internal,
        ]),
        honor_retry_after: Some(false),
        ..Default::default()
    }
}

fn grpc(jitter: JitterSpec) -> PolicySpec {
    PolicySpec {
        max_attempts: Some(5),
        backoff: exponential(Dur::from_millis(100), 2.0, Some(Dur::from_secs(1))),
        jitter: Some(jitter),
        retry_on: Some(vec![Status::Unavailable]),
        honor_retry_after: Some(true),
        pushback: Some(Pushback::Exact),
        reconnect: Some(Reconnecting::On(ReconnectSpec::default())),
        commit_on_headers: Some(true),
        ..Default::default()
    }
}

/// `grpc-hedging`: gRFC A6 hedging (4 attempts 500 ms apart), as documented
/// above.
fn grpc_hedging() -> PolicySpec {
    let ms = Dur::from_millis;
    PolicySpec {
        hedging: Some(HedgingSpec {
            delay: ms(500),
            max_attempts: 4,
            non_fatal: vec![Status::Unavailable, Status::Internal, Status::Aborted],
            implementation: crate::policy::hedging::HedgingImpl::A6,
        }),
        honor_retry_after: Some(true),
        reconnect: Some(Reconnecting::On(ReconnectSpec::default())),
        commit_on_headers: Some(true),
        ..Default::default()
    }
}

/// The standard mode as the newer AWS SDKs write it: 3 attempts, full
/// jitter on `initial · 2^(k−1)` up to 20 s (`throttling` · 2^(k−1) after a
/// throttling error), a quota of 500 where a retry or a timeout costs
/// `cost` and a throttled retry 5, and the server's pushback honoured as
/// `pushback` says.
fn aws_newer_standard(initial: Dur, throttling: Dur, cost: f64, pushback: Pushback) -> PolicySpec {
    let max = Some(Dur::from_secs(20));
    PolicySpec {
        max_attempts: Some(3),
        backoff: exponential(initial, 2.0, max),
        throttling_backoff: exponential(throttling, 2.0, max),
        jitter: Some(JitterSpec::Full),
        retry_on: Some(aws_retryable()),
        budget: Some(BudgetSpec::Quota {
            capacity: 500.0,
            cost,
            timeout_cost: cost,
            refund: 1.0,
            throttling_cost: Some(5.0),
            scope: BudgetScope::Client,
        }),
        honor_retry_after: Some(true),
        pushback: Some(pushback),
        ..Default::default()
    }
}

/// `client-go`: a workqueue's default controller rate limiter, as
/// documented above.
fn client_go() -> PolicySpec {
    let ms = Dur::from_millis;
    let s = Dur::from_secs;
    PolicySpec {
        max_attempts: Some(0),
        backoff: exponential(ms(5), 2.0, Some(s(1000))),
        jitter: Some(JitterSpec::None),
        retry_on: Some(every_failure()),
        budget: Some(BudgetSpec::Rate {
            per_second: 10.0,
            burst: 100.0,
            scope: BudgetScope::Client,
        }),
        honor_retry_after: Some(false),
        ..Default::default()
    }
}

/// The policy a preset stands for (its `name` is left empty).
///
/// - `cloud-tasks-default`: the API defaults of a queue (`gcloud tasks
///   queues describe`): 100 attempts, `cloud_tasks` 0.1 s..3600 s with 16
///   doublings, no jitter (none is documented; whether the service adds any
///   is UNCONFIRMED), retries every failure status. Retry window: the 99
///   intervals sum to 305,353.5 s = 84.8 h. Cloud Tasks considers
///   `Retry-After` in its system throttling, but how is UNCONFIRMED, so
///   `honor_retry_after` is off.
/// - `cloud-tasks-critical`: 10 attempts, 0.1 s..10 s, 5 doublings
///   (0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 9.6, 10 s): window 32.3 s.
/// - `cloud-tasks-batch`: 100 attempts, 1 s..1 h, 16 doublings (1 s
///   doubling to 2048 s, then 87 × 3600 s): window 317,295 s = 88.1 h.
/// - `cloud-tasks-transient`: 20 attempts, 10 ms..1 s, 8 doublings (10 ms
///   doubling to 640 ms, then 12 × 1 s): window 13.27 s.
/// - `grpc`: gRFC A6 as revised in 2024: `min(initial·mult^(k−1), max) ·
///   U(0.8, 1.2)`. A6 has no defaults (every field is required), so the
///   values are a choice: 5 attempts (the client-side cap), initial 100 ms,
///   multiplier 2, max 1 s, `retry_on: [unavailable]` (UNCONFIRMED: these
///   are the values usually shown in A6-style examples, not a default of
///   any gRPC release). Pushback is honoured. No throttling: A6's
///   `retryThrottling` is opt-in; add `{"token_bucket": {"max_tokens": 10,
///   "token_ratio": 0.1}}` to model it. Every `grpc*` preset carries
///   gRPC's connection backoff (`reconnect`: 1 s, × 1.6, ±20 %, 120 s,
///   min connect timeout 20 s), which acts only when a `crash` refuses
///   connections, and A6's commit rule (`commit_on_headers`: no retry or
///   hedge once response headers arrived), which acts only on an `outage`
///   with `headers_first`.
/// - `grpc-legacy`: the same with full jitter `U(0, d)`, A6 before the
///   2024-08 revision (which gRPC releases still do this is UNCONFIRMED).
/// - `aws-standard`: botocore standard mode (pre-2026): 3 attempts,
///   `U(0, min(2^(k−1), 20)) s` (exponential 1 s × 2, max 20 s, full
///   jitter), the retry quota 500 / 5 / timeout 10 / refund 1 per client.
///   aws-sdk-go-v2 uses `2^k` instead (a factor of 2 longer): that is
///   `aws-go-v2-standard`.
/// - `grpc-hedging`: A6's `hedgingPolicy` example, the only values the
///   source gives: 4 attempts, a hedge every 0.5 s, `unavailable`,
///   `internal` and `aborted` non-fatal. 0.5 s is long for most services:
///   the usual advice ("The Tail at Scale", Dean and Barroso, 2013) is a
///   delay near the 95th percentile of the service's own latency, which
///   only the scenario knows, so write a `hedging` block with that delay.
///   No throttling (opt-in in A6, as for `grpc`).
/// - `aws-standard-2026`: botocore's standard mode with
///   `AWS_NEW_RETRIES_2026=true` (`retries/standard.py`, `configprovider.py`):
///   3 attempts; `U(0, min(b · 2^(k−1), 20 s))` with b = 50 ms after a
///   transient error and 1 s after a throttling error; quota 500 with a
///   retry costing 14 (5 after a throttling error; timeouts are transient:
///   14), refund 1 or the request's own cost; `x-amz-retry-after` honoured
///   as `max(t, min(retry_after, t + 5 s))`. DynamoDB's 25 ms / 4 attempts
///   are not modelled.
/// - `aws-adaptive`: `aws-standard` plus the adaptive client-side rate
///   limiter (botocore `retries/adaptive.py`, `throttling.py`, `bucket.py`
///   with their constants), per client.
/// - `aws-legacy`: botocore legacy mode: 5 attempts, `rand() · 2^(k−1)` s
///   with no cap and no quota.
/// - `aws-legacy-dynamodb`: botocore legacy mode as configured for DynamoDB
///   (`_retry.json`'s `dynamodb` entry): 10 attempts, `50 ms · 2^(k−1)`
///   with no jitter and no cap; the default DynamoDB client's settings.
/// - `aws-java-legacy`: the AWS SDK for Java 2.x's default, legacy mode
///   (`SdkDefaultRetrySetting`): 4 attempts; `U(0, min(100 ms · 2^(k−1),
///   20 s))`, with 500 ms for b after a throttling error (Java draws that
///   one with equal jitter, `d/2 + U(0, d/2)`: modelled with full jitter);
///   quota 500, a retry costing 5, a throttled retry 0, refund 1 or the
///   request's own cost (`TokenBucketRetryCondition`).
/// - `aws-java-legacy-dynamodb`: the same for a DynamoDB client
///   (`DynamoDbRetryPolicy`): 9 attempts (8 retries), b = 25 ms.
/// - `aws-go-v2-standard`: the AWS SDK for Go v2's default, standard mode
///   (`aws/retry/standard.go`, `jitter_backoff.go`): 3 attempts;
///   `U(0, 2^k) s` before retry k (`rand · 2^attempt` with the failed
///   attempt's number, so twice botocore's `2^(k−1)`): exponential 2 s × 2
///   with full jitter, max 20 s (go-v2 waits exactly 20 s from retry 5 on,
///   which only an override of `max_attempts` above 5 reaches); no throttling
///   base and no retry-after; the quota 500 / 5 / timeout 10 / refund 1 per
///   client, as `aws-standard`.
/// - `aws-js-v3-standard`: the AWS SDK for JavaScript v3's default, standard
///   mode (`@aws-sdk/util-retry`: `constants.ts`, `defaultRetryToken.ts`,
///   `defaultRetryBackoffStrategy.ts`): 3 attempts; `U(0, min(b · 2^(k−1),
///   20 s))` with b = 100 ms, 500 ms after a throttling error; quota 500, a
///   retry after a transient error (500/502/503/504 and timeouts:
///   `service-error-classification`'s `isTransientError`) costing 10, after
///   a throttling error 5, refund 1 or the request's own cost; a
///   `retry-after` answer waits `max(backoff, retry_after)`.
/// - `envoy`: a route retry policy with defaults: `num_retries` 1 (2
///   attempts), base 25 ms, max 250 ms (10 × base), full jitter, which is
///   the current code's `U(0, min(2^(k−1)·B, max))` (the docs' older
///   `(2^k − 1)·B` formula is not modelled). `retry_on` is the gRPC set
///   Envoy offers that our statuses can express: `unavailable`,
///   `resource_exhausted`, `deadline_exceeded`, `internal` (Envoy's
///   `cancelled` has no counterpart). Envoy's cluster retry budget (20 % of
///   active requests, min 3) limits *concurrent* retries, which our `ratio`
///   budget does not model exactly, and it is off by default, so the preset
///   has none; `envoy-budget` adds it.
/// - `envoy-budget`: `envoy` with the cluster retry budget at its defaults
///   (`budget_percent` 20, `min_retry_concurrency` 3:
///   `api/envoy/config/cluster/v3/circuit_breaker.proto`), per client (one
///   Envoy).
/// - `linkerd`: a ServiceProfile `retryBudget` at Linkerd's defaults (ratio
///   0.2, 10 per second, ttl 10 s: `defaultRetryBudget` in
///   `controller/api/destination/profile_translator.go`), spent as
///   linkerd2-proxy's retry policy does (`linkerd/app/outbound/src/http/
///   retry.rs`): an answer it will not retry deposits, a failure withdraws
///   or ends the request (`deposit: not_retried`); retries go at once and
///   only the budget bounds them (no backoff, no per-request limit in that
///   code); `retry_on` the 5xx statuses, `unavailable` and `internal`.
/// - `finagle`: `RetryBudget()` (ttl 10 s, 10 per second, 20 %:
///   `RetryBudget.scala`) spent as the requeue filter does
///   (`RequeueFilter.scala`): a deposit when a request ends in a success
///   (`deposit: success`), at most `ceil(0.2 × balance)` retries per
///   request fixed when it starts (`per_request: 20`, `MaxRequeuesPerReq`
///   in `Retries.scala`), zero backoff
///   (`Retries.Budget.emptyBackoffSchedule`); Finagle requeues only
///   requests that never reached the server (`unavailable` here).
/// - `client-go`: a workqueue's `DefaultControllerRateLimiter()`
///   (`util/workqueue/default_rate_limiters.go`): per item 5 ms × 2^k up to
///   1000 s, the larger of that and the wait for a token of one bucket of
///   10 per second, burst 100 (the `rate` budget); no jitter; the queue
///   never gives up on an item (unlimited attempts) and retries any error.
pub fn preset(name: &str) -> Option<PolicySpec> {
    let ms = Dur::from_millis;
    let s = Dur::from_secs;
    let spec = match name {
        "cloud-tasks-default" => cloud_tasks(100, ms(100), s(3600), 16),
        "cloud-tasks-critical" => cloud_tasks(10, ms(100), s(10), 5),
        "cloud-tasks-batch" => cloud_tasks(100, s(1), s(3600), 16),
        "cloud-tasks-transient" => cloud_tasks(20, ms(10), s(1), 8),
        "grpc" => grpc(JitterSpec::Proportional(0.2)),
        "grpc-legacy" => grpc(JitterSpec::Full),
        "grpc-hedging" => grpc_hedging(),
        "aws-standard" => aws_standard(),
        "aws-standard-2026" => aws_newer_standard(ms(50), s(1), 14.0, Pushback::Bounded(s(5))),
        "aws-adaptive" => PolicySpec {
            rate_limiter: Some(LimiterSpec::AwsAdaptive(AdaptiveSpec::default())),
            ..aws_standard()
        },
        "aws-legacy" => PolicySpec {
            max_attempts: Some(5),
            backoff: exponential(s(1), 2.0, None),
            jitter: Some(JitterSpec::Full),
            retry_on: Some(aws_retryable()),
            honor_retry_after: Some(false),
            ..Default::default()
        },
        "aws-legacy-dynamodb" => PolicySpec {
            max_attempts: Some(10),
            backoff: exponential(Dur::from_millis(50), 2.0, None),
            jitter: Some(JitterSpec::None),
            retry_on: Some(aws_retryable()),
            honor_retry_after: Some(false),
            ..Default::default()
        },
        "aws-java-legacy" => aws_java_legacy(4, Dur::from_millis(100)),
        "aws-java-legacy-dynamodb" => aws_java_legacy(9, Dur::from_millis(25)),
        "aws-go-v2-standard" => PolicySpec {
            backoff: exponential(s(2), 2.0, Some(s(20))),
            ..aws_standard()
        },
        "aws-js-v3-standard" => aws_newer_standard(ms(100), ms(500), 10.0, Pushback::AtLeast),
        "envoy" => envoy(),
        "envoy-budget" => PolicySpec {
            budget: Some(BudgetSpec::Concurrency {
                percent: 20.0,
                min: 3,
                scope: BudgetScope::Client,
            }),
            ..envoy()
        },
        "linkerd" => budget_only(
            vec![Status::Unavailable, Status::Internal],
            ratio_20_10_10(Deposit::NotRetried, None),
        ),
        "finagle" => budget_only(
            vec![Status::Unavailable],
            ratio_20_10_10(Deposit::Success, Some(20.0)),
        ),
        "client-go" => client_go(),
        _ => return None,
    };
    Some(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::resolve;

    #[test]
    fn every_name_resolves() {
        for name in NAMES {
            let spec = PolicySpec {
                name: (*name).into(),
                preset: Some((*name).into()),
                ..Default::default()
            };
            let p = resolve(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(p.may_retry(), "{name}");
        }
        assert!(preset("nope").is_none());
    }

    /// The names an unknown preset's error lists are every preset the
    /// lookup knows: those of the preset table in docs/policies.md.
    #[test]
    fn the_names_are_the_documented_presets() {
        let doc = include_str!("../../docs/policies.md");
        let start = doc.find("| Preset |").expect("the preset table");
        let documented: Vec<&str> = doc[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        assert_eq!(documented, NAMES);
        for name in documented {
            assert!(preset(name).is_some(), "{name}");
        }
    }

    /// The AWS SDK for Java 2.x's legacy defaults: 4 attempts (9 for
    /// DynamoDB), full jitter on 100 ms (25 ms) · 2^(k−1) to 20 s, 500 ms
    /// after a throttling error, a quota of 500 / 5 / throttled 0.
    #[test]
    fn the_java_sdk_legacy_defaults_field_by_field() {
        for (name, attempts, base_ms) in [
            ("aws-java-legacy", 4, 100u64),
            ("aws-java-legacy-dynamodb", 9, 25),
        ] {
            let spec = PolicySpec {
                name: "j".into(),
                preset: Some(name.into()),
                ..Default::default()
            };
            let p = resolve(&spec).unwrap();
            assert_eq!(p.max_attempts, Some(attempts), "{name}");
            assert!(!p.honor_retry_after, "{name}");
            let state = crate::policy::RetryState::default();
            for n in 1..=12u32 {
                let cap = |b: u64| ((b * 1_000_000) << (n - 1).min(20)).min(20_000_000_000);
                // Full jitter: u = 0.5 is half the nominal delay.
                let mut s = state;
                assert_eq!(p.next_delay(n, &mut s, 0.5, None, false), cap(base_ms) / 2);
                let mut s = state;
                assert_eq!(p.next_delay(n, &mut s, 0.5, None, true), cap(500) / 2);
            }
            let spec = preset(name).unwrap();
            assert_eq!(
                spec.budget,
                Some(BudgetSpec::Quota {
                    capacity: 500.0,
                    cost: 5.0,
                    timeout_cost: 5.0,
                    refund: 1.0,
                    throttling_cost: Some(0.0),
                    scope: BudgetScope::Client,
                })
            );
        }
    }

    /// aws-sdk-go-v2's standard retryer (`standard.go`: `DefaultMaxAttempts`
    /// 3, `DefaultMaxBackoff` 20 s, tokens 500 / cost 5 / timeout 10 /
    /// increment 1; `jitter_backoff.go`: `rand · 2^attempt` s with the
    /// failed attempt's number): full jitter on 2 s · 2^(k−1) = 2^k s, the
    /// same after a throttling error, no retry-after.
    #[test]
    fn the_go_v2_sdk_standard_defaults_field_by_field() {
        let spec = PolicySpec {
            name: "g".into(),
            preset: Some("aws-go-v2-standard".into()),
            ..Default::default()
        };
        let p = resolve(&spec).unwrap();
        assert_eq!(p.max_attempts, Some(3));
        assert!(!p.honor_retry_after);
        let state = crate::policy::RetryState::default();
        for n in 1..=8u32 {
            // 2^n s, held at 20 s; u = 0.5 is half of it, throttled or not.
            let nominal = (1_000_000_000u64 << n).min(20_000_000_000);
            for throttled in [false, true] {
                let mut s = state;
                let d = p.next_delay(n, &mut s, 0.5, Some(60_000_000_000), throttled);
                assert_eq!(d, nominal / 2, "retry {n}, throttled {throttled}");
            }
            let mut s = state;
            assert_eq!(p.next_delay(n, &mut s, 0.0, None, false), 0);
        }
        assert_eq!(
            preset("aws-go-v2-standard").unwrap().budget,
            Some(aws_quota())
        );
        // Twice botocore's standard-mode delays (`aws-standard`).
        let botocore = resolve(&PolicySpec {
            name: "b".into(),
            preset: Some("aws-standard".into()),
            ..Default::default()
        })
        .unwrap();
        for n in 1..=3u32 {
            let (mut a, mut b) = (state, state);
            assert_eq!(
                p.next_delay(n, &mut a, 0.5, None, false),
                2 * botocore.next_delay(n, &mut b, 0.5, None, false)
            );
        }
    }

    /// aws-sdk-js-v3's standard strategy (`@aws-sdk/util-retry`:
    /// `DEFAULT_MAX_ATTEMPTS` 3, `DEFAULT_RETRY_DELAY_BASE` 100 ms,
    /// `THROTTLING_RETRY_DELAY_BASE` 500 ms, `MAXIMUM_RETRY_DELAY` 20 s,
    /// `INITIAL_RETRY_TOKENS` 500, `RETRY_COST` 5 for throttling,
    /// `TIMEOUT_RETRY_COST` 10 for transient errors, `NO_RETRY_INCREMENT`
    /// 1; a retry-after hint waits the longer of the two).
    #[test]
    fn the_js_v3_sdk_standard_defaults_field_by_field() {
        let spec = PolicySpec {
            name: "j".into(),
            preset: Some("aws-js-v3-standard".into()),
            ..Default::default()
        };
        let p = resolve(&spec).unwrap();
        assert_eq!(p.max_attempts, Some(3));
        assert!(p.honor_retry_after);
        let state = crate::policy::RetryState::default();
        for n in 1..=12u32 {
            let cap = |b: u64| ((b * 1_000_000) << (n - 1)).min(20_000_000_000);
            let mut s = state;
            assert_eq!(p.next_delay(n, &mut s, 0.5, None, false), cap(100) / 2);
            let mut s = state;
            assert_eq!(p.next_delay(n, &mut s, 0.5, None, true), cap(500) / 2);
            // retry-after: the longer of it and the drawn delay.
            let mut s = state;
            let long = 30_000_000_000;
            assert_eq!(p.next_delay(n, &mut s, 0.5, Some(long), false), long);
            let mut s = state;
            assert_eq!(p.next_delay(n, &mut s, 0.5, Some(1), true), cap(500) / 2);
        }
        assert_eq!(
            preset("aws-js-v3-standard").unwrap().budget,
            Some(BudgetSpec::Quota {
                capacity: 500.0,
                cost: 10.0,
                timeout_cost: 10.0,
                refund: 1.0,
                throttling_cost: Some(5.0),
                scope: BudgetScope::Client,
            })
        );
    }

    /// botocore's `_retry.json` for DynamoDB: `max_attempts` 10, delay
    /// `base · growth_factor^(attempts − 1)` with base 0.05 and factor 2, no
    /// random base: 50 ms, 100 ms, …, 12.8 s before the tenth attempt.
    #[test]
    fn the_default_dynamodb_client_waits_50ms_doubling_for_10_attempts() {
        let spec = PolicySpec {
            name: "d".into(),
            preset: Some("aws-legacy-dynamodb".into()),
            ..Default::default()
        };
        let p = resolve(&spec).unwrap();
        assert_eq!(p.max_attempts, Some(10));
        let mut state = crate::policy::RetryState::default();
        for n in 1..=9u32 {
            for u in [0.0, 0.99] {
                let mut s = state;
                let d = p.next_delay(n, &mut s, u, None, false);
                assert_eq!(d, 50_000_000 << (n - 1), "retry {n}, u {u}");
            }
            p.next_delay(n, &mut state, 0.5, None, false);
        }
    }
}
