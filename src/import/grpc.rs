//! gRPC service config JSON → one policy per `methodConfig` entry that has
//! a `retryPolicy`, with `retryThrottling` as a `token_bucket` budget
//! (gRFC A6).
//!
//! - `maxAttempts` must be an integer >= 2; values above 5 are capped at 5
//!   (the client-side limit of every gRPC implementation), with a warning.
//! - `initialBackoff`, `maxBackoff` (proto3-JSON durations such as `0.1s`)
//!   and `backoffMultiplier` are required and positive; the delay is
//!   `min(initial · multiplier^(k−1), max) · U(0.8, 1.2)` (A6 since 2024;
//!   the `grpc-legacy` preset has the older full jitter).
//! - `retryableStatusCodes` (names, any case, or integers) map onto our
//!   statuses; codes the simulator never produces (`CANCELLED`, `UNKNOWN`,
//!   `NOT_FOUND`, ...) are dropped with a warning; unknown codes are errors.
//! - Entries without `retryPolicy` (no retries, or `hedgingPolicy`, which we
//!   do not model) are skipped with a warning.
//!
//! Keys are the camelCase names of the proto3-JSON form.

use super::{bad_key, policy_name, Imported};
use crate::error::InvalidInput;
use crate::policy::{BackoffSpec, BudgetScope, BudgetSpec, JitterSpec, PolicySpec};
use crate::scenario::load::{from_text, Format};
use crate::status::Status;
use crate::time::Dur;
use serde::Deserialize;

/// gRPC's client-side cap on attempts.
pub const MAX_ATTEMPTS_CAP: i64 = 5;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ServiceConfig {
    #[serde(default)]
    method_config: Vec<MethodConfig>,
    #[serde(default)]
    retry_throttling: Option<Throttling>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MethodConfig {
    #[serde(default)]
    name: Vec<MethodName>,
    #[serde(default)]
    retry_policy: Option<RetryPolicy>,
    #[serde(default)]
    hedging_policy: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
struct MethodName {
    #[serde(default)]
    service: Option<String>,
    #[serde(default)]
    method: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryPolicy {
    #[serde(default)]
    max_attempts: Option<i64>,
    #[serde(default)]
    initial_backoff: Option<Dur>,
    #[serde(default)]
    max_backoff: Option<Dur>,
    #[serde(default)]
    backoff_multiplier: Option<f64>,
    #[serde(default)]
    retryable_status_codes: Option<Vec<Code>>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Code {
    Number(i64),
    Name(String),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Throttling {
    max_tokens: Option<f64>,
    token_ratio: Option<f64>,
}

/// gRPC's canonical codes, by number.
const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// Maps a gRPC code to our status: `Ok(Some)` when we model it, `Ok(None)`
/// for a real code we never produce, `Err` (about `key` of `origin`) for no
/// gRPC code at all.
fn map_code(code: &Code, origin: &str, key: &str) -> Result<Option<Status>, InvalidInput> {
    let name = match code {
        Code::Number(n) => usize::try_from(*n)
            .ok()
            .and_then(|i| CODES.get(i))
            .ok_or_else(|| {
                bad_key(
                    origin,
                    key,
                    format!("{n} is not a gRPC status code (0..16)"),
                )
            })?
            .to_string(),
        Code::Name(s) => {
            let up = s.trim().to_ascii_uppercase();
            if !CODES.contains(&up.as_str()) {
                return Err(bad_key(
                    origin,
                    key,
                    format!("{s:?} is not a gRPC status code name"),
                ));
            }
            up
        }
    };
    if name == "OK" {
        return Ok(None);
    }
    Ok(Status::parse(&name))
}

/// Imports a service config; `origin` names the file in errors.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let cfg: ServiceConfig = from_text(text, origin, Format::Json).map_err(InvalidInput::At)?;
    let mut warnings = vec![];
    let budget = match &cfg.retry_throttling {
        None => None,
        Some(t) => {
            let max = t
                .max_tokens
                .ok_or_else(|| bad_key(origin, "retryThrottling.maxTokens", "required"))?;
            let ratio = t
                .token_ratio
                .ok_or_else(|| bad_key(origin, "retryThrottling.tokenRatio", "required"))?;
            if !(max > 0.0 && max <= 1000.0) {
                return Err(bad_key(
                    origin,
                    "retryThrottling.maxTokens",
                    format!("{max} must be in (0, 1000]"),
                ));
            }
            if !(ratio > 0.0 && ratio.is_finite()) {
                return Err(bad_key(
                    origin,
                    "retryThrottling.tokenRatio",
                    format!("{ratio} must be > 0"),
                ));
            }
            // A success refills at most to `maxTokens`: a larger ratio
            // behaves exactly as `maxTokens` does.
            if ratio > max {
                warnings.push(format!(
                    "retryThrottling.tokenRatio: {ratio} is above maxTokens ({max}); a success \
                     refills the bucket either way: imported as {max}"
                ));
            }
            Some(BudgetSpec::TokenBucket {
                max_tokens: max,
                token_ratio: ratio.min(max),
                scope: BudgetScope::Client,
            })
        }
    };
    let mut policies: Vec<PolicySpec> = vec![];
    for (i, mc) in cfg.method_config.iter().enumerate() {
        let at = |key: &str| format!("methodConfig[{i}].retryPolicy.{key}");
        let Some(rp) = &mc.retry_policy else {
            let why = if mc.hedging_policy.is_some() {
                "hedgingPolicy is not modelled"
            } else {
                "no retryPolicy"
            };
            warnings.push(format!("methodConfig[{i}] skipped: {why}"));
            continue;
        };
        let attempts = rp
            .max_attempts
            .ok_or_else(|| bad_key(origin, &at("maxAttempts"), "required"))?;
        if attempts < 2 {
            return Err(bad_key(
                origin,
                &at("maxAttempts"),
                format!("{attempts} must be 2 or more"),
            ));
        }
        if attempts > MAX_ATTEMPTS_CAP {
            warnings.push(format!(
                "{}: {attempts} capped at {MAX_ATTEMPTS_CAP}, as gRPC clients do",
                at("maxAttempts")
            ));
        }
        let positive = |v: Option<Dur>, key: &str| -> Result<Dur, InvalidInput> {
            let d = v.ok_or_else(|| bad_key(origin, &at(key), "required"))?;
            if d.ns() == 0 {
                return Err(bad_key(origin, &at(key), "must be > 0"));
            }
            Ok(d)
        };
        let mut initial = positive(rp.initial_backoff, "initialBackoff")?;
        let max = positive(rp.max_backoff, "maxBackoff")?;
        let multiplier = rp
            .backoff_multiplier
            .ok_or_else(|| bad_key(origin, &at("backoffMultiplier"), "required"))?;
        if !(multiplier > 0.0 && multiplier.is_finite()) {
            return Err(bad_key(
                origin,
                &at("backoffMultiplier"),
                format!("{multiplier} must be > 0"),
            ));
        }
        if multiplier < 1.0 {
            // gRPC takes it: delays that shrink from one retry to the next.
            return Err(bad_key(
                origin,
                &at("backoffMultiplier"),
                format!(
                    "{multiplier} is below 1 (a backoff that shrinks); the simulator's \
                     exponential backoff grows or stays: use 1 or more"
                ),
            ));
        }
        if max < initial {
            // With a multiplier of 1 or more, `min(initial · m^(k−1), max)`
            // is `max` at every retry.
            warnings.push(format!(
                "{}: {max} is below initialBackoff ({initial}), so gRPC waits {max} before \
                 every retry: imported with initialBackoff {max}",
                at("maxBackoff")
            ));
            initial = max;
        }
        let codes = rp
            .retryable_status_codes
            .as_ref()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| bad_key(origin, &at("retryableStatusCodes"), "required, non-empty"))?;
        let mut retry_on = vec![];
        for (j, code) in codes.iter().enumerate() {
            let key = format!("{}[{j}]", at("retryableStatusCodes"));
            match map_code(code, origin, &key)? {
                Some(s) if !retry_on.contains(&s) => retry_on.push(s),
                Some(_) => {}
                None => warnings.push(format!(
                    "{key}: {code:?} is never produced by the simulator; dropped"
                )),
            }
        }
        let source_name = match mc.name.first().map(|n| (&n.service, &n.method)) {
            // `service.method`: a policy name must not hold a `/`.
            Some((Some(s), Some(m))) if !s.is_empty() && !m.is_empty() => format!("{s}.{m}"),
            Some((Some(s), _)) => s.clone(),
            _ => String::new(),
        };
        let base_name = policy_name(&source_name, &format!("grpc-{i}"));
        let name = if policies.iter().any(|p| p.name == base_name) {
            format!("{base_name}-{i}")
        } else {
            base_name
        };
        policies.push(PolicySpec {
            name,
            max_attempts: Some(attempts.min(MAX_ATTEMPTS_CAP)),
            backoff: Some(BackoffSpec::Exponential {
                initial,
                multiplier,
                max: Some(max),
                max_doublings: None,
            }),
            jitter: Some(JitterSpec::Proportional(0.2)),
            retry_on: Some(retry_on),
            budget: budget.clone(),
            honor_retry_after: Some(true),
            // gRPC retries after exactly the server's pushback (gRFC A6).
            pushback: Some(crate::policy::Pushback::Exact),
            ..Default::default()
        });
    }
    if policies.is_empty() {
        return Err(bad_key(
            origin,
            "methodConfig",
            "no entry has a retryPolicy: nothing to import",
        ));
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::schedule::schedule;
    use crate::policy::{resolve, Backoff, Jitter};
    use crate::status::StatusSet;

    const CONFIG: &str = r#"{
      "loadBalancingConfig": [{"round_robin": {}}],
      "methodConfig": [
        {
          "name": [{"service": "helloworld.Greeter", "method": "SayHello"}],
          "timeout": "2s",
          "retryPolicy": {
            "maxAttempts": 7,
            "initialBackoff": "0.1s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", 8, "cancelled"]
          }
        },
        {"name": [{"service": "echo.Echo"}], "hedgingPolicy": {"maxAttempts": 3}},
        {"name": [{}], "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.5s",
          "maxBackoff": "30s", "backoffMultiplier": 1.3, "retryableStatusCodes": [14]}}
      ],
      "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}
    }"#;

    #[test]
    fn service_config_round_trips() {
        let imp = import_str(CONFIG, "sc.json").unwrap();
        assert_eq!(imp.policies.len(), 2);
        let p = resolve(&imp.policies[0]).unwrap();
        assert_eq!(p.name, "helloworld.Greeter.SayHello");
        assert_eq!(p.max_attempts, Some(5), "capped");
        assert_eq!(
            p.backoff,
            Backoff::Exponential {
                initial: 100_000_000,
                multiplier: 2.0,
                max: 1_000_000_000,
                max_doublings: u32::MAX
            }
        );
        assert_eq!(p.jitter, Jitter::Proportional(0.2));
        assert_eq!(
            p.retry_on,
            StatusSet::of(&[Status::Unavailable, Status::ResourceExhausted])
        );
        assert_eq!(
            p.budget,
            Some(BudgetSpec::TokenBucket {
                max_tokens: 10.0,
                token_ratio: 0.1,
                scope: BudgetScope::Client
            })
        );
        assert_eq!(imp.policies[1].name, "grpc-2");
        assert_eq!(imp.warnings.len(), 3, "{:?}", imp.warnings);
        // The printed block reads back as the same policies.
        let v: serde_json::Value = serde_json::from_str(&imp.to_json()).unwrap();
        for (i, spec) in imp.policies.iter().enumerate() {
            let back: PolicySpec = serde_json::from_value(v["policies"][i].clone()).unwrap();
            assert_eq!(resolve(&back).unwrap(), resolve(spec).unwrap());
        }
        assert!(v.get("dispatcher").is_none());
    }

    #[test]
    fn malformed_configs_are_invalid_input() {
        let rp = |body: &str| format!(r#"{{"methodConfig": [{{"retryPolicy": {body}}}]}}"#);
        let ok = r#""initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]"#;
        for (text, needle) in [
            // Syntax errors point at the line and column, as in scenarios.
            ("{\"methodConfig\": [".to_string(), "sc.json:1:18: "),
            (
                rp(&format!(r#"{{"maxAttempts": "x", {ok}}}"#)),
                "methodConfig[0].retryPolicy.maxAttempts",
            ),
            (
                rp(&format!(r#"{{"maxAttempts": 1, {ok}}}"#)),
                "retryPolicy.maxAttempts",
            ),
            (
                rp(r#"{"maxAttempts": 2, "initialBackoff": "soon"}"#),
                "retryPolicy.initialBackoff",
            ),
            (
                rp(
                    r#"{"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["NOPE"]}"#,
                ),
                "retryableStatusCodes[0]",
            ),
            (
                rp(
                    r#"{"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [99]}"#,
                ),
                "retryableStatusCodes[0]",
            ),
            (
                rp(
                    r#"{"maxAttempts": 2, "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]}"#,
                ),
                "initialBackoff",
            ),
            (r#"{"methodConfig": []}"#.to_string(), "methodConfig"),
            (
                format!(
                    r#"{{"methodConfig": [{{"retryPolicy": {{"maxAttempts": 2, {ok}}}}}], "retryThrottling": {{"maxTokens": 0, "tokenRatio": 1}}}}"#
                ),
                "retryThrottling.maxTokens",
            ),
            (
                rp(
                    r#"{"maxAttempts": 2, "initialBackoff": "1s", "maxBackoff": "9s", "backoffMultiplier": 0.5, "retryableStatusCodes": [14]}"#,
                ),
                "backoffMultiplier: 0.5 is below 1",
            ),
        ] {
            let msg = import_str(&text, "sc.json").unwrap_err().to_string();
            assert!(
                msg.contains("sc.json") && msg.contains(needle),
                "{text}: {msg}"
            );
        }
    }

    /// What gRPC accepts and runs the same way under other values is
    /// imported as those values, with a warning; the block always passes
    /// a scenario's checks.
    #[test]
    fn settings_grpc_takes_are_imported_as_their_equivalents() {
        let text = r#"{"methodConfig": [{"name": [{"service": "a.B", "method": "C"}],
            "retryPolicy": {"maxAttempts": 4, "initialBackoff": "5s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": [14]}}],
            "retryThrottling": {"maxTokens": 10, "tokenRatio": 4096}}"#;
        let imp = import_str(text, "sc.json").unwrap();
        let p = resolve(&imp.policies[0]).unwrap();
        // min(5 s · 2^(k−1), 1 s) is 1 s at every retry.
        let one_s = 1_000_000_000;
        assert_eq!(
            p.backoff,
            Backoff::Exponential {
                initial: one_s,
                multiplier: 2.0,
                max: one_s,
                max_doublings: u32::MAX
            }
        );
        let s = schedule(&p, Some(4));
        assert_eq!(s.rows.len(), 3);
        assert!(s.rows.iter().all(|r| r.delay == one_s), "{:?}", s.rows);
        // A success adds at most up to maxTokens either way.
        assert_eq!(
            p.budget,
            Some(BudgetSpec::TokenBucket {
                max_tokens: 10.0,
                token_ratio: 10.0,
                scope: BudgetScope::Client
            })
        );
        assert_eq!(imp.warnings.len(), 2, "{:?}", imp.warnings);
        assert_eq!(p.name, "a.B.C");
    }

    proptest::proptest! {
        /// Every service config gRPC accepts with a growing backoff
        /// imports (no false refusal), and its delays stay within
        /// `maxBackoff` and gRPC's ±20 % jitter.
        #[test]
        fn configs_grpc_accepts_import(
            attempts in 2i64..10,
            initial_ms in 1u64..3_600_000,
            max_ms in 1u64..3_600_000,
            multiplier in 1.0f64..10.0,
            max_tokens in 1u32..=1000,
            token_ratio in 0.001f64..5000.0,
        ) {
            let text = format!(
                r#"{{"methodConfig": [{{"name": [{{"service": "s.S", "method": "M"}}],
                    "retryPolicy": {{"maxAttempts": {attempts},
                    "initialBackoff": "{}.{:03}s", "maxBackoff": "{}.{:03}s",
                    "backoffMultiplier": {multiplier}, "retryableStatusCodes": ["UNAVAILABLE"]}}}}],
                    "retryThrottling": {{"maxTokens": {max_tokens}, "tokenRatio": {token_ratio}}}}}"#,
                initial_ms / 1000, initial_ms % 1000, max_ms / 1000, max_ms % 1000
            );
            let imp = import_str(&text, "sc.json");
            proptest::prop_assert!(imp.is_ok(), "{text}: {imp:?}");
            let p = resolve(&imp.unwrap().policies[0]).unwrap();
            for row in schedule(&p, None).rows {
                proptest::prop_assert!(row.delay <= max_ms * 1_000_000, "{row:?}");
                proptest::prop_assert!(row.max <= max_ms * 1_200_000 + 1, "{row:?}");
            }
        }
    }
}
