//! A retry policy as written in a scenario file, and its checks.

use super::backoff::BackoffSpec;
use super::breaker::BreakerSpec;
use super::budget::BudgetSpec;
use super::hedging::HedgingSpec;
use super::jitter::JitterSpec;
use super::limiter::LimiterSpec;
use super::reconnect::Reconnecting;
use super::{presets, resolve, ResolveError};
use crate::check::Problems;
use crate::status::Status;
use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// One retry policy as written; fields left out come from the preset (if
/// any) and then from the defaults of [`super::resolve`].
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    /// The policy's name, unique in the scenario; reports use it (a
    /// downstream tier's policy needs none).
    #[serde(default)]
    pub name: String,
    /// Named starting point (see `docs/policies.md`); the other fields
    /// override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Attempts in all; 0 or -1 = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<i64>,
    /// Age limit from the request's first attempt (`Dur`); absent: unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retry_duration: Option<Dur>,
    /// Delay schedule between retries; required when the policy may retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<BackoffSpec>,
    /// Randomisation of each backoff delay (default `none`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<JitterSpec>,
    /// Statuses that are retried; others end the request as `failed` (default
    /// `unavailable`, `resource_exhausted`, `deadline_exceeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<Status>>,
    /// Retry budget limiting how many retries may be sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetSpec>,
    /// Circuit breaker; refused calls end the request as `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<BreakerSpec>,
    /// Wait at least the backend's `retry_after` (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honor_retry_after: Option<bool>,
    /// How an honoured pushback combines with the backoff (default
    /// `at_least`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pushback: Option<Pushback>,
    /// The backoff after a throttling error (`resource_exhausted`), when it
    /// differs from `backoff` (the AWS SDKs' 2026 behaviour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttling_backoff: Option<BackoffSpec>,
    /// gRPC hedging instead of retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hedging: Option<HedgingSpec>,
    /// A client-side rate limiter every attempt goes through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limiter: Option<LimiterSpec>,
    /// gRPC's connection backoff after a crash (see
    /// `crate::policy::reconnect`); absent or `false`: a new connection
    /// per attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconnect: Option<Reconnecting>,
    /// gRPC's commit rule (gRFC A6): a call whose failure came after
    /// response headers is committed, never retried nor hedged. Acts only
    /// on the failures of an `outage` with `headers_first`; the `grpc*`
    /// presets set it (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_on_headers: Option<bool>,
    /// The policy this one applies at the downstream tiers whose policy
    /// is `"compared"` (default: itself), so "retries at the top only"
    /// and "retries at every layer" are two policies of one scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downstream_policy: Option<Box<PolicySpec>>,
}

/// How a policy honours the server's pushback (`retry_after`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pushback {
    /// Wait the backoff delay or the pushback, whichever is longer.
    #[default]
    AtLeast,
    /// gRPC (gRFC A6): retry after exactly the pushback, and start the
    /// backoff sequence again from `initial` for the next retry.
    Exact,
    /// The AWS SDKs' 2026 rule for `x-amz-retry-after`: the pushback, but
    /// never less than the backoff delay `t` nor more than `t` plus this
    /// much: `max(t, min(pushback, t + extra))` (botocore
    /// `retries/standard.py`, `ExponentialBackoff.delay_amount`).
    Bounded(Dur),
}

impl PolicySpec {
    /// The policy with its preset's fields written out (fields the policy
    /// sets win, `max_attempts` within the preset library's cap, see
    /// [`presets::capped_attempts`]) and the preset name dropped; the
    /// policy itself when it names no preset.
    pub fn with_preset_applied(&self) -> Result<PolicySpec, ResolveError> {
        let Some(name) = &self.preset else {
            return Ok(self.clone());
        };
        let base =
            presets::preset(name).ok_or_else(|| ResolveError::UnknownPreset(name.clone()))?;
        Ok(PolicySpec {
            name: self.name.clone(),
            preset: None,
            max_attempts: self
                .max_attempts
                .or(base.max_attempts)
                .map(|m| presets::capped_attempts(name, m)),
            max_retry_duration: self.max_retry_duration.or(base.max_retry_duration),
            backoff: self.backoff.clone().or(base.backoff),
            jitter: self.jitter.or(base.jitter),
            retry_on: self.retry_on.clone().or(base.retry_on),
            budget: self.budget.clone().or(base.budget),
            circuit_breaker: self.circuit_breaker.clone().or(base.circuit_breaker),
            honor_retry_after: self.honor_retry_after.or(base.honor_retry_after),
            pushback: self.pushback.or(base.pushback),
            throttling_backoff: self.throttling_backoff.clone().or(base.throttling_backoff),
            hedging: self.hedging.clone().or(base.hedging),
            rate_limiter: self.rate_limiter.clone().or(base.rate_limiter),
            reconnect: self.reconnect.or(base.reconnect),
            commit_on_headers: self.commit_on_headers.or(base.commit_on_headers),
            downstream_policy: self.downstream_policy.clone(),
        })
    }

    /// Hedging replaces the retry fields, and is not modelled together with
    /// a rate limiter; checked once the preset is applied.
    fn check_combinations(&self, path: &str, c: &mut Problems) {
        if self.hedging.is_none() {
            return;
        }
        let retry_fields = [
            ("max_attempts", self.max_attempts.is_some()),
            ("max_retry_duration", self.max_retry_duration.is_some()),
            ("backoff", self.backoff.is_some()),
            ("jitter", self.jitter.is_some()),
            ("retry_on", self.retry_on.is_some()),
            ("pushback", self.pushback.is_some()),
            ("throttling_backoff", self.throttling_backoff.is_some()),
        ];
        // Either field may come from the preset.
        let related = [format!("{path}.hedging"), format!("{path}.preset")];
        for (field, set) in retry_fields {
            if set {
                c.err_with(
                    format!("{path}.{field}"),
                    related.clone(),
                    "a hedging policy does not retry (gRFC A6: one or the other); \
                     hedging has its own max_attempts and non_fatal statuses",
                );
            }
        }
        if self.rate_limiter.is_some() {
            c.err_with(
                format!("{path}.rate_limiter"),
                related,
                "hedging behind a client-side rate limiter is not modelled; use one or the other",
            );
        }
    }

    /// Checks every field and that the policy resolves; `path` is the
    /// policy's own (`policies[1]`).
    pub fn check(&self, path: &str, c: &mut Problems) {
        let before = c.len();
        if let Some(name) = &self.preset {
            if presets::preset(name).is_none() {
                c.err(
                    format!("{path}.preset"),
                    format!(
                        "unknown preset {name:?}; known presets: {}",
                        presets::NAMES.join(", ")
                    ),
                );
            }
        }
        if let Some(m) = self.max_attempts {
            if m < -1 {
                c.err(
                    format!("{path}.max_attempts"),
                    format!("{m} is not allowed: attempts in all, the first included (0 or -1 = unlimited)"),
                );
            } else if m > i64::from(u32::MAX) {
                c.err(
                    format!("{path}.max_attempts"),
                    format!(
                        "{m} is more than the {} attempts a request can count \
                         (0 or -1 = unlimited)",
                        u32::MAX
                    ),
                );
            }
        }
        if let Some(b) = &self.backoff {
            b.check(&format!("{path}.backoff"), c);
        }
        if let Some(i) = self
            .retry_on
            .as_ref()
            .and_then(|list| list.iter().position(|s| *s == Status::Ok))
        {
            c.err(
                format!("{path}.retry_on[{i}]"),
                "`ok` is a success, never retried; list the failure statuses to retry",
            );
        }
        if let Some(j) = &self.jitter {
            j.check(&format!("{path}.jitter"), c);
        }
        if let Some(b) = &self.budget {
            b.check(&format!("{path}.budget"), c);
        }
        if let Some(b) = &self.circuit_breaker {
            b.check(&format!("{path}.circuit_breaker"), c);
        }
        if let Some(b) = &self.throttling_backoff {
            b.check(&format!("{path}.throttling_backoff"), c);
        }
        if let Some(h) = &self.hedging {
            h.check(&format!("{path}.hedging"), c);
        }
        if let Some(l) = &self.rate_limiter {
            l.check(&format!("{path}.rate_limiter"), c);
        }
        if let Some(r) = self.reconnect.as_ref().and_then(Reconnecting::spec) {
            r.check(&format!("{path}.reconnect"), c);
        }
        if let Ok(applied) = self.with_preset_applied() {
            applied.check_combinations(path, c);
        }
        // Only ask the resolver once the fields themselves are sound, so a
        // bad preset name is not reported twice.
        if c.len() == before {
            if let Err(e) = resolve(self) {
                c.err(path, e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The problems `check` finds in a policy with `max_attempts`.
    fn attempts_problems(max_attempts: i64) -> Vec<String> {
        let spec = PolicySpec {
            name: "p".into(),
            max_attempts: Some(max_attempts),
            backoff: Some(BackoffSpec::Constant {
                delay: Dur::from_millis(100),
            }),
            ..Default::default()
        };
        let mut c = Problems::default();
        spec.check("policies[0]", &mut c);
        match c.into_result() {
            Ok(()) => Vec::new(),
            Err(list) => list.iter().map(|p| p.to_string()).collect(),
        }
    }

    /// Attempt limits a request can count pass; past them they are
    /// refused, not cut down to the largest.
    #[test]
    fn an_attempt_limit_past_what_is_counted_is_refused() {
        for ok in [-1, 0, 1, 5, i64::from(u32::MAX)] {
            assert_eq!(attempts_problems(ok), Vec::<String>::new(), "{ok}");
        }
        let big = attempts_problems(i64::from(u32::MAX) + 1);
        assert_eq!(big.len(), 1, "{big:?}");
        assert!(
            big[0].starts_with("policies[0].max_attempts: 4294967296 is more than the 4294967295"),
            "{big:?}"
        );
        assert_eq!(attempts_problems(-2).len(), 1);
    }
}
