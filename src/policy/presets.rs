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

use super::{BackoffSpec, BudgetScope, BudgetSpec, JitterSpec, PolicySpec, Pushback};
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
    "aws-standard",
    "aws-legacy",
    "envoy",
];

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

fn grpc(jitter: JitterSpec) -> PolicySpec {
    PolicySpec {
        max_attempts: Some(5),
        backoff: exponential(Dur::from_millis(100), 2.0, Some(Dur::from_secs(1))),
        jitter: Some(jitter),
        retry_on: Some(vec![Status::Unavailable]),
        honor_retry_after: Some(true),
        pushback: Some(Pushback::Exact),
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
///   "token_ratio": 0.1}}` to model it.
/// - `grpc-legacy`: the same with full jitter `U(0, d)`, A6 before the
///   2024-08 revision (which gRPC releases still do this is UNCONFIRMED).
/// - `aws-standard`: botocore standard mode (pre-2026): 3 attempts,
///   `U(0, min(2^(k−1), 20)) s` (exponential 1 s × 2, max 20 s, full
///   jitter), the retry quota 500 / 5 / timeout 10 / refund 1 per client.
///   aws-sdk-go-v2 uses `2^k` instead (a factor of 2 longer) and is not
///   modelled here.
/// - `aws-legacy`: botocore legacy mode: 5 attempts, `rand() · 2^(k−1)` s
///   with no cap and no quota.
/// - `envoy`: a route retry policy with defaults: `num_retries` 1 (2
///   attempts), base 25 ms, max 250 ms (10 × base), full jitter, which is
///   the current code's `U(0, min(2^(k−1)·B, max))` (the docs' older
///   `(2^k − 1)·B` formula is not modelled). `retry_on` is the gRPC set
///   Envoy offers that our statuses can express: `unavailable`,
///   `resource_exhausted`, `deadline_exceeded`, `internal` (Envoy's
///   `cancelled` has no counterpart). Envoy's cluster retry budget (20 % of
///   active requests, min 3) limits *concurrent* retries, which our `ratio`
///   budget does not model exactly, and it is off by default, so the preset
///   has none; `{"ratio": {"percent": 20, "min_per_second": 3}}` is the
///   nearest stand-in.
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
        "aws-standard" => PolicySpec {
            max_attempts: Some(3),
            backoff: exponential(s(1), 2.0, Some(s(20))),
            jitter: Some(JitterSpec::Full),
            retry_on: Some(aws_retryable()),
            budget: Some(BudgetSpec::Quota {
                capacity: 500.0,
                cost: 5.0,
                timeout_cost: 10.0,
                refund: 1.0,
                scope: BudgetScope::Client,
            }),
            honor_retry_after: Some(false),
            ..Default::default()
        },
        "aws-legacy" => PolicySpec {
            max_attempts: Some(5),
            backoff: exponential(s(1), 2.0, None),
            jitter: Some(JitterSpec::Full),
            retry_on: Some(aws_retryable()),
            honor_retry_after: Some(false),
            ..Default::default()
        },
        "envoy" => PolicySpec {
            max_attempts: Some(2),
            backoff: exponential(ms(25), 2.0, Some(ms(250))),
            jitter: Some(JitterSpec::Full),
            retry_on: Some(vec![
                Status::Unavailable,
                Status::ResourceExhausted,
                Status::DeadlineExceeded,
                Status::Internal,
            ]),
            honor_retry_after: Some(false),
            ..Default::default()
        },
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
}
