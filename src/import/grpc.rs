//! gRPC service config JSON → one policy per `methodConfig` entry that has
//! a `retryPolicy` or a `hedgingPolicy`, with `retryThrottling` as a
//! `token_bucket` budget (gRFC A6).
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
//! - An entry with a `hedgingPolicy` and no `retryPolicy` becomes a policy
//!   with a `hedging` block (`maxAttempts` capped at 5 as for retries,
//!   `hedgingDelay` default 0, `nonFatalStatusCodes` default none), the
//!   server's pushback honoured; `retryThrottling` applies to its hedges.
//!   An entry with neither is skipped with a warning.
//! - Durations are proto3-JSON strings ending in `s`, as gRPC reads them;
//!   a number, `"100"` or `"100ms"` is an error naming the key.
//! - A method (or service, or the empty default name) named twice is an
//!   error, as in gRPC; so is a name with a `method` and no `service`.
//! - An entry without a `name` (or with an empty list) applies to no
//!   method in gRPC: it is skipped with a warning, its values still
//!   checked.
//! - `retryThrottling` values with more than 3 decimals are cut to 3, as
//!   gRPC keeps them (A6), with a warning.
//! - An empty file, or one that is not JSON (YAML), is refused as such.
//! - What a policy cannot hold is dropped with a warning per entry: the
//!   call `timeout` and `perAttemptRecvTimeout` (scenario-wide
//!   `traffic.deadline` / `traffic.attempt_timeout`), a `hedgingPolicy`
//!   beside the `retryPolicy` (A6 allows one of them), `waitForReady`, the
//!   message size limits, and keys gRPC does not read.
//!
//! Keys are the camelCase names of the proto3-JSON form.

use super::{bad_key, closest, cut_to, placed, policy_name, Imported, Refusals};
use crate::check::MAX_NAME_BYTES;
use crate::decimal::Given;
use crate::policy::hedging::HedgingSpec;
use crate::policy::{BackoffSpec, BudgetScope, BudgetSpec, JitterSpec, PolicySpec};
use crate::scenario::error::{InvalidInput, Located};
use crate::scenario::load::{from_text_with, Format, Nulls};
use crate::status::Status;
use crate::time::Dur;
use serde::Deserialize;

/// gRPC's client-side cap on attempts.
pub const MAX_ATTEMPTS_CAP: i64 = crate::policy::presets::GRPC_ATTEMPTS_CAP;

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
    /// The call's deadline; read to be reported, a policy has none.
    #[serde(default)]
    timeout: Option<ProtoDur>,
    #[serde(default)]
    retry_policy: Option<RetryPolicy>,
    #[serde(default)]
    hedging_policy: Option<HedgingPolicy>,
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
    initial_backoff: Option<ProtoDur>,
    #[serde(default)]
    max_backoff: Option<ProtoDur>,
    #[serde(default)]
    backoff_multiplier: Option<f64>,
    #[serde(default)]
    retryable_status_codes: Option<Vec<Code>>,
    /// Each attempt's timeout; read to be reported, a policy has none.
    #[serde(default)]
    per_attempt_recv_timeout: Option<ProtoDur>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct HedgingPolicy {
    #[serde(default)]
    max_attempts: Option<i64>,
    /// Between hedges; A6's default is 0 (all at once).
    #[serde(default)]
    hedging_delay: Option<ProtoDur>,
    #[serde(default)]
    non_fatal_status_codes: Option<Vec<Code>>,
}

/// A duration as gRPC reads one: a proto3 JSON `Duration`, a string of
/// seconds with at most 9 decimals and the suffix `s` (`"0.1s"`, `"3s"`,
/// `".01s"`). A number, a bare `"100"` or another unit (`"100ms"`) is
/// refused, as gRPC refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ProtoDur(Dur);

impl<'de> Deserialize<'de> for ProtoDur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProtoDur, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ProtoDur;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a proto3 JSON duration string such as \"0.1s\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ProtoDur, E> {
                parse_proto_duration(v).map(ProtoDur).map_err(E::custom)
            }
        }
        d.deserialize_str(V)
    }
}

/// Parses a proto3 JSON duration (see [`ProtoDur`]); the error says what
/// is wrong with `text` in words.
fn parse_proto_duration(text: &str) -> Result<Dur, String> {
    let form =
        "a gRPC duration is a string of seconds ending in \"s\", such as \"0.1s\" or \"30s\"";
    let Some(number) = text.strip_suffix('s') else {
        return Err(if is_decimal(text) {
            format!("{text:?} has no unit: {form} (\"{text}s\" for {text} seconds)")
        } else {
            format!("{text:?} is not a duration gRPC reads: {form}")
        });
    };
    if !is_decimal(number) {
        return Err(format!("{text:?} is not a duration gRPC reads: {form}"));
    }
    if number.split('.').nth(1).is_some_and(|f| f.len() > 9) {
        return Err(format!(
            "{text:?} has more than 9 decimals (a proto3 duration counts nanoseconds)"
        ));
    }
    crate::time::parse_duration(text).map_err(|e| e.to_string())
}

/// `[-+]digits[.digits]` with a digit on at least one side of the point,
/// as gRPC reads the number of seconds in a duration.
fn is_decimal(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let mut parts = unsigned.splitn(2, '.');
    let whole = parts.next().unwrap_or_default();
    let frac = parts.next().unwrap_or_default();
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    digits(whole) && digits(frac) && !(whole.is_empty() && frac.is_empty())
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Code {
    Number(i64),
    Name(String),
}

/// As written in the config: `13` or `"NOT_FOUND"`.
impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Code::Number(n) => write!(f, "{n}"),
            Code::Name(s) => write!(f, "{s:?}"),
        }
    }
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
    import_placed(text, origin).map_err(|e| placed(e, text, Format::Json))
}

/// [`import_str`], its refusals without positions.
fn import_placed(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    refuse_not_json(text, origin)?;
    refuse_not_service_config(text, origin)?;
    // Protobuf's JSON mapping reads `null` as the field's default.
    let cfg: ServiceConfig = from_text_with(
        text,
        origin,
        Format::Json,
        "a service config",
        Nulls::AsAbsent,
    )
    .map_err(InvalidInput::At)?;
    let mut warnings = vec![];
    // Every value refused, so that one run names them all.
    let mut refused = Refusals::new(origin);
    let budget = cfg
        .retry_throttling
        .as_ref()
        .and_then(|t| refused.keep(throttling(t, origin, &mut warnings)));
    refuse_method_without_service(&cfg, origin, &mut refused);
    refuse_repeated_names(&cfg, origin, &mut refused);
    // The keys of each entry as written, for what is not carried over.
    let raw: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let mut policies: Vec<PolicySpec> = vec![];
    // The methodConfig entry each policy comes from.
    let mut entries: Vec<usize> = vec![];
    // The entries with a policy and no name, which gRPC applies to no
    // method.
    let mut unnamed: Vec<usize> = vec![];
    for (i, mc) in cfg.method_config.iter().enumerate() {
        // An entry's own warnings, kept only when it is imported.
        let mut entry_warnings = vec![];
        let Some(spec) = entry_spec(mc, i, origin, &mut entry_warnings) else {
            warnings.extend(entry_warnings);
            warnings.extend(other_keys(&raw["methodConfig"][i], i));
            continue;
        };
        // Its values are checked all the same: gRPC refuses a service
        // config with a bad policy, named or not.
        let Some(spec) = refused.keep(spec) else {
            continue;
        };
        if mc.name.is_empty() {
            warnings.push(format!(
                "methodConfig[{i}] skipped: it has no name, and gRPC applies an entry without \
                 a name to no method (\"name\": [{{}}] applies it to every method)"
            ));
            unnamed.push(i);
            continue;
        }
        warnings.extend(entry_warnings);
        if let Some(ProtoDur(t)) = mc.timeout {
            warnings.push(deadline_warning(i, t));
        }
        warnings.extend(other_keys(&raw["methodConfig"][i], i));
        let name = unique_name(mc, i, &policies, &entries, &mut warnings);
        entries.push(i);
        policies.push(PolicySpec {
            name,
            budget: budget.clone(),
            ..spec
        });
    }
    warnings.extend(other_top_keys(&raw));
    refused.check()?;
    if policies.is_empty() {
        return Err(if unnamed.is_empty() {
            nothing_imported(&warnings, origin)
        } else {
            none_named(&unnamed, origin)
        });
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

/// Refuses, before anything is read, a file that is empty or is not
/// JSON at all (YAML, most likely): the JSON parser's own words (`EOF
/// while parsing a value`, `expected ident`) would not say so. A file
/// that starts as JSON is left to the readings that follow, which place
/// its syntax errors.
fn refuse_not_json(text: &str, origin: &str) -> Result<(), InvalidInput> {
    let body = text.trim_start();
    if body.is_empty() {
        return Err(InvalidInput::Empty {
            origin: origin.to_string(),
        });
    }
    if body.starts_with(['{', '[']) || serde_json::from_str::<serde_json::Value>(text).is_ok() {
        return Ok(());
    }
    let yaml = super::yaml_docs::documents(text, origin)
        .is_ok_and(|docs| docs.iter().any(|d| d.value.is_object()));
    let why = if yaml {
        "this reads as YAML, and gRPC reads a service config as JSON only: write it as JSON"
    } else {
        "this is not JSON"
    };
    let before = &text[..text.len() - body.len()];
    Err(InvalidInput::At(Located {
        line: Some(before.matches('\n').count() + 1),
        column: Some(before.rsplit('\n').next().unwrap_or(before).chars().count() + 1),
        ..Located::whole(
            origin,
            format!(
                "expected a gRPC service config in JSON, an object such as \
                 {{\"methodConfig\": [...]}}; {why}"
            ),
        )
    }))
}

/// The refusal of a service config whose only policies are in the
/// entries `unnamed`, which have no name: gRPC applies them to no method.
fn none_named(unnamed: &[usize], origin: &str) -> InvalidInput {
    let list: Vec<String> = unnamed
        .iter()
        .map(|i| format!("methodConfig[{i}]"))
        .collect();
    let (has, it) = if list.len() == 1 {
        ("has", "it")
    } else {
        ("have", "them")
    };
    bad_key(
        origin,
        &format!("methodConfig[{}]", unnamed[0]),
        format!(
            "nothing to import: {} {has} a policy but no name, and gRPC applies an entry \
             without a name to no method (\"name\": [{{}}] applies {it} to every method)",
            list.join(", ")
        ),
    )
}

/// Refuses a name with a `method` and no `service` (or an empty one):
/// gRPC refuses the service config ("cannot combine empty 'service' and
/// non-empty 'method'", grpc-go), since a method is named within its
/// service.
fn refuse_method_without_service(cfg: &ServiceConfig, origin: &str, refused: &mut Refusals) {
    for (i, mc) in cfg.method_config.iter().enumerate() {
        for (j, n) in mc.name.iter().enumerate() {
            let service = n.service.as_deref().unwrap_or_default();
            let Some(method) = n.method.as_deref().filter(|m| !m.is_empty()) else {
                continue;
            };
            if service.is_empty() {
                refused.add(bad_key(
                    origin,
                    &format!("methodConfig[{i}].name[{j}].method"),
                    format!(
                        "{method:?} is named without its service; gRPC refuses a service \
                         config that names a method with an empty or absent service (\"cannot \
                         combine empty 'service' and non-empty 'method'\"): add the service \
                         it belongs to"
                    ),
                ));
            }
        }
    }
}

/// Refuses, before the typed reading, JSON that cannot be a service
/// config: nested past the parser's limit, not an object at the top, or
/// without a `methodConfig`.
fn refuse_not_service_config(text: &str, origin: &str) -> Result<(), InvalidInput> {
    // A list or a plain value at the top is not a service config, whatever
    // it holds; serde would read a list as the fields in order.
    let top = serde_json::from_str::<serde_json::Value>(text);
    if let Err(e) = &top {
        // Syntax errors are left to the typed reading, which reports
        // them with their place; nesting past the parser's limit would
        // be read as whatever part of the file the typed reading gets to.
        if e.to_string().starts_with("recursion limit exceeded") {
            return Err(InvalidInput::At(Located {
                line: Some(e.line()),
                column: Some(e.column()),
                ..Located::whole(
                    origin,
                    "nested more than 128 levels deep, which no service config is; \
                     nothing to import",
                )
            }));
        }
    }
    if let Ok(top) = top {
        if !top.is_object() {
            return Err(InvalidInput::At(Located::whole(
                origin,
                "the top level must be an object, a service config with a methodConfig list",
            )));
        }
        if top.get("methodConfig").is_none() {
            return Err(no_method_config(&top, origin));
        }
    }
    Ok(())
}

/// The refusal of a service config `top` without a `methodConfig`,
/// naming the keys it has that gRPC does not read.
fn no_method_config(top: &serde_json::Value, origin: &str) -> InvalidInput {
    let others: Vec<String> = unread_keys(top, &SERVICE_CONFIG_KEYS)
        .map(|(k, hint)| format!("`{k}`{hint}"))
        .collect();
    let found = if others.is_empty() {
        String::new()
    } else {
        format!(
            " (the file has {}, which gRPC does not read)",
            others.join(", ")
        )
    };
    bad_key(
        origin,
        "methodConfig",
        format!(
            "missing: a service config lists its retry and hedging policies there; \
             nothing to import{found}"
        ),
    )
}

/// Refuses every method name after its first: gRPC refuses a service
/// config that names a method (or a service's default, or the default)
/// twice.
fn refuse_repeated_names(cfg: &ServiceConfig, origin: &str, refused: &mut Refusals) {
    let mut named: Vec<((&str, &str), String)> = vec![];
    for (i, mc) in cfg.method_config.iter().enumerate() {
        for (j, n) in mc.name.iter().enumerate() {
            let key = (
                n.service.as_deref().unwrap_or_default(),
                n.method.as_deref().unwrap_or_default(),
            );
            let here = format!("methodConfig[{i}].name[{j}]");
            if let Some((_, first)) = named.iter().find(|(k, _)| *k == key) {
                refused.add(bad_key(
                    origin,
                    &here,
                    format!(
                        "{} is named again (first in {first}); gRPC refuses a service config \
                         that names a method twice",
                        describe_name(key)
                    ),
                ));
                continue;
            }
            named.push((key, here));
        }
    }
}

/// The policy of entry `i` (without its name and budget) from the block
/// it has, a `retryPolicy` before a `hedgingPolicy`; `None`, with a
/// warning, when it has neither.
fn entry_spec(
    mc: &MethodConfig,
    i: usize,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Option<Result<PolicySpec, InvalidInput>> {
    match (&mc.retry_policy, &mc.hedging_policy) {
        (Some(rp), hedging) => {
            if hedging.is_some() {
                warnings.push(format!(
                    "methodConfig[{i}].hedgingPolicy: not imported: gRPC allows retryPolicy \
                     or hedgingPolicy in one methodConfig, not both (gRFC A6), and a client \
                     either refuses the config or ignores the hedgingPolicy; the retryPolicy \
                     is imported"
                ));
            }
            Some(retried(rp, i, origin, warnings))
        }
        (None, Some(hp)) => Some(hedged(hp, i, origin, warnings)),
        (None, None) => {
            warnings.push(format!(
                "methodConfig[{i}] skipped: no retryPolicy or hedgingPolicy"
            ));
            None
        }
    }
}

/// The warning for entry `i`'s call `timeout` `t`, which a policy cannot
/// hold.
fn deadline_warning(i: usize, t: Dur) -> String {
    if t.ns() == 0 {
        format!("methodConfig[{i}].timeout: 0s not imported: a deadline of 0 would end every call at once")
    } else {
        format!(
            "methodConfig[{i}].timeout: {t} not imported: a policy has no deadline; set the \
             scenario's traffic.deadline to \"{t}\" to simulate it (for every policy)"
        )
    }
}

/// The refusal of a service config none of whose entries is imported. A
/// misspelt key is the likely cause: named in the error, since no warning
/// is printed beside it.
fn nothing_imported(warnings: &[String], origin: &str) -> InvalidInput {
    let misspelt: Vec<String> = warnings
        .iter()
        .filter_map(|w| {
            let (_, hint) = w.split_once(DID_YOU_MEAN)?;
            let key = w.split(": ").next()?;
            Some(format!(
                "{key}: {DID_YOU_MEAN}{}",
                hint.trim_end_matches(')')
            ))
        })
        .collect();
    let why = if misspelt.is_empty() {
        String::new()
    } else {
        format!("; {}", misspelt.join("; "))
    };
    bad_key(
        origin,
        "methodConfig",
        format!("no entry has a retryPolicy or a hedgingPolicy: nothing to import{why}"),
    )
}

/// `retryThrottling` as a `token_bucket` budget; every bad value refused.
fn throttling(
    t: &Throttling,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<BudgetSpec, InvalidInput> {
    let mut refused = Refusals::new(origin);
    let key = "retryThrottling.maxTokens";
    let max = refused.keep(
        t.max_tokens
            .ok_or_else(|| bad_key(origin, key, "required"))
            .and_then(|m| match m > 0.0 && m <= 1000.0 {
                true => Ok(m),
                false => Err(bad_key(
                    origin,
                    key,
                    format!("{} must be in (0, 1000]", Given(m)),
                )),
            }),
    );
    let key = "retryThrottling.tokenRatio";
    let ratio = refused.keep(
        t.token_ratio
            .ok_or_else(|| bad_key(origin, key, "required"))
            .and_then(|r| match r > 0.0 && r.is_finite() {
                true => Ok(r),
                false => Err(bad_key(origin, key, format!("{} must be > 0", Given(r)))),
            }),
    );
    refused.check()?;
    let (Some(max), Some(ratio)) = (max, ratio) else {
        unreachable!("a value missing was refused above")
    };
    let mut refused = Refusals::new(origin);
    let max = refused.keep(thousandths(
        max,
        "retryThrottling.maxTokens",
        origin,
        warnings,
    ));
    let ratio = refused.keep(thousandths(
        ratio,
        "retryThrottling.tokenRatio",
        origin,
        warnings,
    ));
    refused.check()?;
    let (Some(max), Some(ratio)) = (max, ratio) else {
        unreachable!("a value cut to nothing was refused above")
    };
    // A success refills at most to `maxTokens`: a larger ratio behaves
    // exactly as `maxTokens` does.
    if ratio > max {
        warnings.push(format!(
            "retryThrottling.tokenRatio: {} is above maxTokens ({max}); a success \
             refills the bucket either way: imported as {max}",
            Given(ratio)
        ));
    }
    Ok(BudgetSpec::TokenBucket {
        max_tokens: max,
        token_ratio: ratio.min(max),
        scope: BudgetScope::Client,
    })
}

/// `v` (the value of `key`, `retryThrottling.maxTokens` or `.tokenRatio`)
/// as gRPC keeps it: gRFC A6 supports "up to 3 decimal places", and
/// grpc-java (both keys) and gRPC C-core (`tokenRatio`) drop the digits
/// past the third, so a value with more is cut to 3, with a warning that
/// says so. A value with nothing left once cut is refused: gRPC would
/// keep no token.
fn thousandths(
    v: f64,
    key: &str,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<f64, InvalidInput> {
    // Rust writes a float in its shortest exact decimal form, never with
    // an exponent: the digits as the file gave them.
    let written = v.to_string();
    let Some((whole, decimals)) = written.split_once('.') else {
        return Ok(v);
    };
    if decimals.len() <= 3 {
        return Ok(v);
    }
    let cut: f64 = format!("{whole}.{}", &decimals[..3])
        .parse()
        .map_err(|_| bad_key(origin, key, format!("{written} is not a number gRPC reads")))?;
    let who = if key.ends_with("tokenRatio") {
        "grpc-java and gRPC C-core drop the digits past the third, grpc-go uses the value as \
         written"
    } else {
        "grpc-java drops the digits past the third, grpc-go uses the value as written, and \
         gRPC C-core reads a whole number of tokens only"
    };
    if cut <= 0.0 {
        return Err(bad_key(
            origin,
            key,
            format!(
                "{written} is below 0.001: gRPC keeps 3 decimals (gRFC A6), which leave \
                 nothing of it ({who}); use 0.001 or more"
            ),
        ));
    }
    warnings.push(format!(
        "{key}: {written} has more than 3 decimals, and gRPC keeps 3 (gRFC A6: \"Up to 3 \
         decimal places are supported\"; {who}): imported as {cut}"
    ));
    Ok(cut)
}

/// A `retryPolicy` (entry `i`) as a policy without its name and budget;
/// every bad value refused.
fn retried(
    rp: &RetryPolicy,
    i: usize,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<PolicySpec, InvalidInput> {
    let at = |key: &str| format!("methodConfig[{i}].retryPolicy.{key}");
    if let Some(ProtoDur(t)) = rp.per_attempt_recv_timeout {
        warnings.push(attempt_timeout_warning(&at("perAttemptRecvTimeout"), t));
    }
    let mut refused = Refusals::new(origin);
    let attempts = refused.keep(attempts(
        rp.max_attempts,
        &at("maxAttempts"),
        origin,
        warnings,
    ));
    let positive = |v: Option<Dur>, key: &str| -> Result<Dur, InvalidInput> {
        let d = v.ok_or_else(|| bad_key(origin, &at(key), "required"))?;
        if d.ns() == 0 {
            return Err(bad_key(origin, &at(key), "must be > 0"));
        }
        Ok(d)
    };
    let initial = refused.keep(positive(rp.initial_backoff.map(|d| d.0), "initialBackoff"));
    let max = refused.keep(positive(rp.max_backoff.map(|d| d.0), "maxBackoff"));
    let multiplier = refused.keep(multiplier(
        rp.backoff_multiplier,
        &at("backoffMultiplier"),
        origin,
    ));
    let codes = rp
        .retryable_status_codes
        .as_ref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad_key(origin, &at("retryableStatusCodes"), "required, non-empty"));
    let retry_on = refused.keep(
        codes.and_then(|codes| statuses(codes, &at("retryableStatusCodes"), origin, warnings)),
    );
    refused.check()?;
    let (Some(attempts), Some(mut initial), Some(max), Some(multiplier), Some(retry_on)) =
        (attempts, initial, max, multiplier, retry_on)
    else {
        unreachable!("a value missing was refused above")
    };
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
    Ok(PolicySpec {
        max_attempts: Some(attempts),
        backoff: Some(BackoffSpec::Exponential {
            initial,
            multiplier,
            max: Some(max),
            max_doublings: None,
        }),
        jitter: Some(JitterSpec::Proportional(0.2)),
        retry_on: Some(retry_on),
        honor_retry_after: Some(true),
        // gRPC retries after exactly the server's pushback (gRFC A6).
        pushback: Some(crate::policy::Pushback::Exact),
        ..Default::default()
    })
}

/// The warning for a `perAttemptRecvTimeout` `t` (at `key`), which a
/// policy cannot hold.
fn attempt_timeout_warning(key: &str, t: Dur) -> String {
    if t.ns() == 0 {
        format!("{key}: 0s not imported: an attempt timeout of 0 would end every attempt at once")
    } else {
        format!(
            "{key}: {t} not imported: a policy has no attempt timeout; set the scenario's \
             traffic.attempt_timeout to \"{t}\" to simulate it (for every policy)"
        )
    }
}

/// `backoffMultiplier` (at `key`): required, finite and at least 1.
fn multiplier(given: Option<f64>, key: &str, origin: &str) -> Result<f64, InvalidInput> {
    let m = given.ok_or_else(|| bad_key(origin, key, "required"))?;
    if !(m > 0.0 && m.is_finite()) {
        return Err(bad_key(origin, key, format!("{m} must be > 0")));
    }
    if m < 1.0 {
        // gRPC takes it: delays that shrink from one retry to the next.
        return Err(bad_key(
            origin,
            key,
            format!(
                "{m} is below 1 (a backoff that shrinks); the simulator's exponential backoff \
                 grows or stays: use 1 or more"
            ),
        ));
    }
    Ok(m)
}

/// A `hedgingPolicy` (entry `i`) as a policy without its name and budget:
/// a `hedging` block, with the server's pushback honoured (A6: it delays
/// the next hedge) and retry throttling applying to hedges.
fn hedged(
    hp: &HedgingPolicy,
    i: usize,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<PolicySpec, InvalidInput> {
    let at = |key: &str| format!("methodConfig[{i}].hedgingPolicy.{key}");
    let mut refused = Refusals::new(origin);
    let attempts = refused.keep(attempts(
        hp.max_attempts,
        &at("maxAttempts"),
        origin,
        warnings,
    ));
    let non_fatal = match &hp.non_fatal_status_codes {
        Some(codes) => refused.keep(statuses(
            codes,
            &at("nonFatalStatusCodes"),
            origin,
            warnings,
        )),
        None => Some(vec![]),
    };
    refused.check()?;
    let (Some(attempts), Some(non_fatal)) = (attempts, non_fatal) else {
        unreachable!("a value missing was refused above")
    };
    warnings.push(format!(
        "methodConfig[{i}].hedgingPolicy: simulated as gRFC A6's text; grpc-java hedges a \
         little differently (add \"implementation\": \"grpc-java\" to `hedging` to simulate \
         it), and grpc-go and gRPC C-core (Python, C++, Ruby, PHP) ignore hedgingPolicy: \
         their calls make one attempt (simulate them with \"max_attempts\": 1 and no \
         `hedging`)"
    ));
    Ok(PolicySpec {
        hedging: Some(HedgingSpec {
            delay: hp.hedging_delay.map_or(Dur(0), |d| d.0),
            max_attempts: u32::try_from(attempts).expect("capped at 5"),
            non_fatal,
            implementation: crate::policy::hedging::HedgingImpl::A6,
        }),
        honor_retry_after: Some(true),
        ..Default::default()
    })
}

/// `maxAttempts` of a retry or hedging policy (at `key`): required, 2 or
/// more, capped at [`MAX_ATTEMPTS_CAP`] with a warning as gRPC clients cap it.
fn attempts(
    given: Option<i64>,
    key: &str,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<i64, InvalidInput> {
    let attempts = given.ok_or_else(|| bad_key(origin, key, "required"))?;
    if attempts < 2 {
        return Err(bad_key(
            origin,
            key,
            format!("{attempts} must be 2 or more"),
        ));
    }
    if attempts > MAX_ATTEMPTS_CAP {
        warnings.push(format!(
            "{key}: {attempts} capped at {MAX_ATTEMPTS_CAP}, as gRPC clients do"
        ));
    }
    Ok(attempts.min(MAX_ATTEMPTS_CAP))
}

/// A list of gRPC status codes (at `key`) as our statuses, each once; a
/// code the simulator never produces is dropped with a warning.
fn statuses(
    codes: &[Code],
    key: &str,
    origin: &str,
    warnings: &mut Vec<String>,
) -> Result<Vec<Status>, InvalidInput> {
    let mut out = vec![];
    let mut refused = Refusals::new(origin);
    for (j, code) in codes.iter().enumerate() {
        let key = format!("{key}[{j}]");
        match refused.keep(map_code(code, origin, &key)) {
            Some(Some(s)) if !out.contains(&s) => out.push(s),
            Some(Some(_)) | None => {}
            Some(None) => warnings.push(format!(
                "{key}: {code} is never produced by the simulator; dropped"
            )),
        }
    }
    refused.check().map(|()| out)
}

/// The policy name of entry `i`: `service.method` from its first name,
/// told apart by a suffix (with a warning) from the names already taken
/// by `policies`, which came from the entries `entries`.
fn unique_name(
    mc: &MethodConfig,
    i: usize,
    policies: &[PolicySpec],
    entries: &[usize],
    warnings: &mut Vec<String>,
) -> String {
    let source_name = match mc.name.first().map(|n| (&n.service, &n.method)) {
        // `service.method`: a policy name must not hold a `/`.
        Some((Some(s), Some(m))) if !s.is_empty() && !m.is_empty() => format!("{s}.{m}"),
        Some((Some(s), _)) => s.clone(),
        _ => String::new(),
    };
    let base_name = policy_name(&source_name, &format!("grpc-{i}"), warnings);
    // Names gRPC tells apart can make one policy name (`a.B` + `C`
    // and `a.B.C`, `a/B` and `a.B`).
    let mut name = base_name.clone();
    let mut suffix = i;
    while policies.iter().any(|p| p.name == name) {
        // The suffix is kept whole: a long name gives way to it.
        let tail = format!("-{suffix}");
        let mut head = base_name.clone();
        cut_to(&mut head, MAX_NAME_BYTES - tail.len());
        name = head + &tail;
        suffix += 1;
    }
    if let Some(k) = policies.iter().position(|p| p.name == base_name) {
        warnings.push(format!(
            "methodConfig[{i}]: its policy name {base_name} is already methodConfig[{}]'s: \
             imported as {name}",
            entries[k]
        ));
    }
    name
}

/// A method name as a person reads it: `service/method`, a service's
/// default, or the default of every service.
fn describe_name((service, method): (&str, &str)) -> String {
    match (service, method) {
        ("", "") => "the empty name {} (the default for every method)".to_string(),
        (s, "") => format!("service {s} (all its methods)"),
        (s, m) => format!("{s}/{m}"),
    }
}

/// The keys gRPC reads at the top of a service config.
const SERVICE_CONFIG_KEYS: [&str; 5] = [
    "methodConfig",
    "retryThrottling",
    "loadBalancingPolicy",
    "loadBalancingConfig",
    "healthCheckConfig",
];

/// How a warning about a key gRPC does not read names the key it is
/// most likely a misspelling of.
const DID_YOU_MEAN: &str = "did you mean";

/// ` (did you mean `word`?)` when `key` is one of `known` written another
/// way (another case, `_` between its parts), else nothing.
fn did_you_mean(key: &str, known: &[&str]) -> String {
    closest(key, known)
        .map(|k| format!(" ({DID_YOU_MEAN} `{k}`?)"))
        .unwrap_or_default()
}

/// The keys gRPC reads in `retryThrottling`.
const RETRY_THROTTLING_KEYS: [&str; 2] = ["maxTokens", "tokenRatio"];

/// Warnings for the keys at the top of the service config `raw`, and in
/// its `retryThrottling`, that gRPC does not read: a misspelt
/// `retryThrottling` (or `maxTokens`) would otherwise drop the budget (or
/// take a default) without a word.
fn other_top_keys(raw: &serde_json::Value) -> Vec<String> {
    let Some(top) = raw.as_object() else {
        return vec![];
    };
    let throttling = top
        .get("retryThrottling")
        .into_iter()
        .flat_map(|t| unread_keys(t, &RETRY_THROTTLING_KEYS))
        .map(|(k, hint)| {
            format!("retryThrottling.{k}: not a retryThrottling key gRPC reads; ignored{hint}")
        });
    unread_keys(raw, &SERVICE_CONFIG_KEYS)
        .map(|(k, hint)| format!("{k}: not a service config key gRPC reads; ignored{hint}"))
        .chain(throttling)
        .collect()
}

/// The keys of the object `v` that are not among `known`, each escaped
/// for printing, with its [`did_you_mean`] hint.
fn unread_keys<'a>(
    v: &'a serde_json::Value,
    known: &'a [&'a str],
) -> impl Iterator<Item = (String, String)> + 'a {
    v.as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| (k.escape_debug().to_string(), did_you_mean(k, known)))
}

/// The keys gRPC reads in a `methodConfig` entry.
const METHOD_CONFIG_KEYS: [&str; 7] = [
    "name",
    "waitForReady",
    "timeout",
    "maxRequestMessageBytes",
    "maxResponseMessageBytes",
    "retryPolicy",
    "hedgingPolicy",
];

/// The keys gRPC reads in a `retryPolicy`.
const RETRY_POLICY_KEYS: [&str; 6] = [
    "maxAttempts",
    "initialBackoff",
    "maxBackoff",
    "backoffMultiplier",
    "retryableStatusCodes",
    "perAttemptRecvTimeout",
];

/// The keys gRPC reads in a `hedgingPolicy`.
const HEDGING_POLICY_KEYS: [&str; 3] = ["maxAttempts", "hedgingDelay", "nonFatalStatusCodes"];

/// Warnings for the keys of the entry `mc` (the `i`-th, as written)
/// that the import neither converts nor reports elsewhere: the message
/// size limits and `waitForReady`, which the simulator has no use for,
/// and keys gRPC does not read (a misspelling, most likely).
fn other_keys(mc: &serde_json::Value, i: usize) -> Vec<String> {
    let mut out = vec![];
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    for key in keys(mc) {
        let path = format!("methodConfig[{i}].{}", key.escape_debug());
        match key.as_str() {
            "waitForReady" | "maxRequestMessageBytes" | "maxResponseMessageBytes" => {
                out.push(format!("{path}: not simulated; dropped"));
            }
            k if METHOD_CONFIG_KEYS.contains(&k) => {}
            k => out.push(format!(
                "{path}: not a methodConfig key gRPC reads; ignored{}",
                did_you_mean(k, &METHOD_CONFIG_KEYS)
            )),
        }
    }
    // Only the block imported is read: a hedgingPolicy beside a
    // retryPolicy is dropped whole.
    let (block, known) = if mc.get("retryPolicy").is_some() {
        ("retryPolicy", &RETRY_POLICY_KEYS[..])
    } else {
        ("hedgingPolicy", &HEDGING_POLICY_KEYS[..])
    };
    for key in keys(&mc[block]) {
        if !known.contains(&key.as_str()) {
            out.push(format!(
                "methodConfig[{i}].{block}.{}: not a {block} key gRPC reads (gRFC A6); ignored{}",
                key.escape_debug(),
                did_you_mean(&key, known)
            ));
        }
    }
    out
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
        assert_eq!(imp.policies.len(), 3);
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
        // The hedging entry: A6's default delay (0) and no non-fatal codes.
        let h = resolve(&imp.policies[1]).unwrap();
        assert_eq!(h.name, "echo.Echo");
        let hedging = imp.policies[1].hedging.as_ref().unwrap();
        assert_eq!((hedging.delay.ns(), hedging.max_attempts), (0, 3));
        assert!(hedging.non_fatal.is_empty());
        assert_eq!(h.budget, p.budget, "throttling applies to hedges");
        assert_eq!(imp.policies[2].name, "grpc-2");
        // 2 status codes never produced, the timeout, what clients do
        // with hedging.
        assert_eq!(imp.warnings.len(), 4, "{:?}", imp.warnings);
        assert!(imp.warnings[3].contains("grpc-go and gRPC C-core"));
        // The printed block reads back as the same policies.
        let v: serde_json::Value = serde_json::from_str(&imp.to_json()).unwrap();
        for (i, spec) in imp.policies.iter().enumerate() {
            let back: PolicySpec = serde_json::from_value(v["policies"][i].clone()).unwrap();
            assert_eq!(resolve(&back).unwrap(), resolve(spec).unwrap());
        }
        assert!(v.get("dispatcher").is_none());
    }

    /// Protobuf's JSON mapping reads `null` as the field's default, so a
    /// service config may hold one where retrysim's own files may not.
    #[test]
    fn a_null_field_is_the_field_left_out() {
        let rp = r#""retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
            "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
        let without = format!(r#"{{"methodConfig": [{{"name": [{{"service": "a.B"}}], {rp}}}]}}"#);
        let with = format!(
            r#"{{"methodConfig": [{{"name": [{{"service": "a.B"}}], "timeout": null, {rp}}}],
            "retryThrottling": null}}"#
        );
        let policies = |text: &str| {
            let imp = import_str(text, "sc.json").unwrap();
            serde_json::to_string(&imp.policies).unwrap()
        };
        assert_eq!(policies(&with), policies(&without));
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

    /// Every refused value is named in one run, one per line, across the
    /// budget, the names and every entry.
    #[test]
    fn misspelt_keys_and_other_shapes_are_named() {
        let rp = r#"{"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
        let err = |text: &str| import_str(text, "sc.json").unwrap_err().to_string();
        // A misspelt retryThrottling would drop the budget without a word.
        let imp = import_str(
            &format!(
                r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {rp}}}],
                "retry_throttling": {{"maxTokens": 10, "tokenRatio": 0.1}}}}"#
            ),
            "sc.json",
        )
        .unwrap();
        assert!(imp.policies[0].budget.is_none());
        assert_eq!(
            imp.warnings,
            [
                "retry_throttling: not a service config key gRPC reads; ignored \
              (did you mean `retryThrottling`?)"
            ]
        );
        // With nothing imported, the error names the likely misspelling.
        assert_eq!(
            err(&format!(r#"{{"methodconfig": [{{"retryPolicy": {rp}}}]}}"#)),
            "sc.json: methodConfig: missing: a service config lists its retry and hedging \
             policies there; nothing to import (the file has `methodconfig` (did you mean \
             `methodConfig`?), which gRPC does not read)"
        );
        // A slip of the keyboard, inside retryThrottling too.
        let imp = import_str(
            &format!(
                r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {rp}}}],
                "retryThrottling": {{"maxTokens": 10, "tokenRatio": 0.1, "tokenRatoi": 1}}}}"#
            ),
            "sc.json",
        )
        .unwrap();
        assert_eq!(
            imp.warnings,
            [
                "retryThrottling.tokenRatoi: not a retryThrottling key gRPC reads; ignored (did \
              you mean `tokenRatio`?)"
            ]
        );
        assert_eq!(
            err(&format!(r#"{{"methodConfig": [{{"RetryPolicy": {rp}}}]}}"#)),
            "sc.json:1:18: methodConfig: no entry has a retryPolicy or a hedgingPolicy: nothing to \
             import; methodConfig[0].RetryPolicy: did you mean `retryPolicy`?"
        );
        // Not a service config at all.
        assert_eq!(
            err(&format!(
                r#"[{{"methodConfig": [{{"retryPolicy": {rp}}}]}}]"#
            )),
            "sc.json: the top level must be an object, a service config with a methodConfig list"
        );
        assert!(err("{}").starts_with("sc.json: methodConfig: missing"));
        // A refused value is placed in the file.
        assert!(
            err("{\"methodConfig\": [\n{\"retryPolicy\": {\"maxAttempts\": 0}}]}")
                .starts_with("sc.json:2:33: methodConfig[0].retryPolicy.maxAttempts: "),
        );
    }

    #[test]
    fn every_refused_value_is_named_at_once() {
        let text = r#"{"retryThrottling": {"maxTokens": 0, "tokenRatio": -1},
            "methodConfig": [
              {"name": [{"service": "a"}], "retryPolicy": {"maxAttempts": 1,
                "initialBackoff": "0s", "maxBackoff": "1s", "backoffMultiplier": 0.5,
                "retryableStatusCodes": ["NOPE", "UNAVAILABLE", 99]}},
              {"name": [{"service": "a"}], "hedgingPolicy": {"maxAttempts": 0}},
              {"retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s", "maxBackoff": "2s",
                "backoffMultiplier": 2, "retryableStatusCodes": [14]}}]}"#;
        let msg = import_str(text, "sc.json").unwrap_err().to_string();
        let keys = super::super::refused_keys(&msg);
        assert_eq!(
            keys,
            [
                "retryThrottling.maxTokens",
                "retryThrottling.tokenRatio",
                "methodConfig[1].name[0]",
                "methodConfig[0].retryPolicy.maxAttempts",
                "methodConfig[0].retryPolicy.initialBackoff",
                "methodConfig[0].retryPolicy.backoffMultiplier",
                "methodConfig[0].retryPolicy.retryableStatusCodes[0]",
                "methodConfig[0].retryPolicy.retryableStatusCodes[2]",
                "methodConfig[1].hedgingPolicy.maxAttempts",
            ],
            "{msg}"
        );
        // Each placed in the file.
        assert!(
            msg.lines()
                .all(|l| l.starts_with("sc.json:") && !l.starts_with("sc.json: ")),
            "{msg}"
        );
    }

    /// An error's lines without their line and column: `sc.json:3:30: x`
    /// as `sc.json: x`.
    fn unplaced(msg: &str) -> String {
        msg.lines()
            .map(|l| match l.split_once(": ") {
                Some((head, rest)) => format!("{}: {rest}", head.split(':').next().unwrap()),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
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

    /// `{"methodConfig": [<entry>, ...]}` where each `{RP}` in `entries`
    /// is a valid retryPolicy.
    fn config(entries: &str) -> String {
        let rp = r#""retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s",
            "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]}"#;
        format!(r#"{{"methodConfig": [{}]}}"#, entries.replace("{RP}", rp))
    }

    #[test]
    fn durations_are_read_as_grpc_reads_them() {
        let with_initial = |d: &str| {
            format!(
                r#"{{"methodConfig": [{{"name": [{{}}], "retryPolicy": {{"maxAttempts": 3, "initialBackoff": {d},
                "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]}}}}]}}"#
            )
        };
        for (d, needle) in [
            (r#""100""#, r#"initialBackoff: "100" has no unit: a gRPC duration is a string of seconds ending in "s""#),
            (r#""0.5""#, r#"initialBackoff: "0.5" has no unit"#),
            ("0.1", "initialBackoff: invalid type: floating point `0.1`, expected a proto3 JSON duration"),
            (r#""100ms""#, r#"initialBackoff: "100ms" is not a duration gRPC reads"#),
            (r#""1e3s""#, r#"initialBackoff: "1e3s" is not a duration gRPC reads"#),
            (r#""1.5 s""#, r#"initialBackoff: "1.5 s" is not a duration gRPC reads"#),
            (r#""0.0000000001s""#, "has more than 9 decimals"),
        ] {
            let msg = import_str(&with_initial(d), "sc.json").unwrap_err().to_string();
            assert!(msg.starts_with("sc.json:1:") && msg.contains(needle), "{d}: {msg}");
        }
        for (d, ns) in [
            (r#""0.1s""#, 100_000_000),
            (r#"".01s""#, 10_000_000),
            (r#""1s""#, 1_000_000_000),
            (r#""0.000000001s""#, 1),
        ] {
            let imp = import_str(&with_initial(d), "sc.json").unwrap();
            let Some(BackoffSpec::Exponential { initial, .. }) = &imp.policies[0].backoff else {
                panic!("{d}: {:?}", imp.policies[0].backoff);
            };
            assert_eq!(initial.ns(), ns, "{d}");
        }
        // A timeout gRPC would refuse is refused too.
        let msg = import_str(&config(r#"{"timeout": "2", {RP}}"#), "sc.json")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains(r#"methodConfig[0].timeout: "2" has no unit"#),
            "{msg}"
        );
    }

    #[test]
    fn every_setting_not_carried_over_is_warned_about() {
        let text = config(
            r#"{"name": [{"service": "a", "method": "B"}], "timeout": "2s", "waitForReady": true,
            "maxRequestMessageBytes": 1024, "retrypolicy": {},
            "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.5s"},
            "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": [14],
            "perAttemptRecvTimeout": "0.25s", "jitter": 0.2}}"#,
        );
        let imp = import_str(&text, "sc.json").unwrap();
        let warnings = imp.warnings.join("\n");
        for needle in [
            "methodConfig[0].hedgingPolicy: not imported: gRPC allows retryPolicy or hedgingPolicy \
             in one methodConfig, not both (gRFC A6)",
            "methodConfig[0].timeout: 2s not imported: a policy has no deadline; set the \
             scenario's traffic.deadline to \"2s\"",
            "methodConfig[0].retryPolicy.perAttemptRecvTimeout: 250ms not imported: a policy has \
             no attempt timeout; set the scenario's traffic.attempt_timeout to \"250ms\"",
            "methodConfig[0].waitForReady: not simulated; dropped",
            "methodConfig[0].maxRequestMessageBytes: not simulated; dropped",
            "methodConfig[0].retrypolicy: not a methodConfig key gRPC reads; ignored",
            "methodConfig[0].retryPolicy.jitter: not a retryPolicy key gRPC reads",
        ] {
            assert!(warnings.contains(needle), "{needle}\n in\n{warnings}");
        }
        assert_eq!(imp.warnings.len(), 7, "{warnings}");
        // The retry policy itself is imported as it stands.
        assert_eq!(imp.policies.len(), 1);
        assert!(imp.policies[0].hedging.is_none());
        // Zero timeouts are no advice to follow: a scenario refuses them.
        let zero = text
            .replace(r#""timeout": "2s""#, r#""timeout": "0s""#)
            .replace(
                r#""perAttemptRecvTimeout": "0.25s""#,
                r#""perAttemptRecvTimeout": "0s""#,
            );
        let warnings = import_str(&zero, "sc.json").unwrap().warnings.join("\n");
        assert!(
            warnings.contains("timeout: 0s not imported: a deadline of 0 would end every call")
                && warnings
                    .contains("perAttemptRecvTimeout: 0s not imported: an attempt timeout of 0")
                && !warnings.contains("to \"0s\""),
            "{warnings}"
        );
        // Nothing to report, nothing reported.
        let plain = config(r#"{"name": [{"service": "a"}], {RP}}"#);
        assert_eq!(
            import_str(&plain, "sc.json").unwrap().warnings,
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_hedging_policy_alone_is_imported_as_a_hedging_block() {
        let text = config(
            r#"{"name": [{"service": "kv.Store", "method": "Get"}], "timeout": "1s",
            "hedgingPolicy": {"maxAttempts": 9, "hedgingDelay": "0.05s",
            "nonFatalStatusCodes": ["UNAVAILABLE", 13, "NOT_FOUND", "unavailable"],
            "hedgeDelay": "1s"}}"#,
        );
        let imp = import_str(&text, "sc.json").unwrap();
        assert_eq!(imp.policies.len(), 1);
        let p = &imp.policies[0];
        assert_eq!(p.name, "kv.Store.Get");
        assert_eq!(
            p.hedging,
            Some(HedgingSpec {
                delay: Dur(50_000_000),
                max_attempts: 5,
                non_fatal: vec![Status::Unavailable, Status::Internal],
                implementation: crate::policy::hedging::HedgingImpl::A6,
            })
        );
        assert_eq!(p.honor_retry_after, Some(true));
        assert!(p.backoff.is_none() && p.max_attempts.is_none());
        let warnings = imp.warnings.join("\n");
        for needle in [
            "methodConfig[0].hedgingPolicy.maxAttempts: 9 capped at 5",
            "methodConfig[0].hedgingPolicy.nonFatalStatusCodes[2]: \"NOT_FOUND\" is never produced",
            "methodConfig[0].timeout: 1s not imported",
            "methodConfig[0].hedgingPolicy.hedgeDelay: not a hedgingPolicy key gRPC reads",
            "ignore hedgingPolicy: their calls make one attempt",
            "\"implementation\": \"grpc-java\"",
        ] {
            assert!(warnings.contains(needle), "{needle}\n in\n{warnings}");
        }
        assert_eq!(imp.warnings.len(), 5, "{warnings}");
        // The printed block is a policy a scenario accepts, and reads back
        // as the same hedging.
        let v: serde_json::Value = serde_json::from_str(&imp.to_json()).unwrap();
        let back: PolicySpec = serde_json::from_value(v["policies"][0].clone()).unwrap();
        assert_eq!(back.hedging, p.hedging);
        // A6's checks: maxAttempts is required and at least 2.
        for (body, needle) in [
            (r#"{}"#, "hedgingPolicy.maxAttempts: required"),
            (
                r#"{"maxAttempts": 1}"#,
                "hedgingPolicy.maxAttempts: 1 must be 2 or more",
            ),
            (
                r#"{"maxAttempts": 2, "hedgingDelay": "5ms"}"#,
                "hedgingPolicy.hedgingDelay",
            ),
            (
                r#"{"maxAttempts": 2, "nonFatalStatusCodes": [99]}"#,
                "99 is not a gRPC status code",
            ),
        ] {
            let text = config(&format!(r#"{{"name": [{{}}], "hedgingPolicy": {body}}}"#));
            let e = import_str(&text, "sc.json").unwrap_err().to_string();
            assert!(e.contains(needle), "{needle}\n in\n{e}");
        }
    }

    #[test]
    fn a_method_named_twice_is_refused() {
        for (entries, needle) in [
            (
                r#"{"name": [{"service": "a", "method": "B"}], {RP}},
                   {"name": [{"service": "a", "method": "B"}], {RP}}"#,
                "sc.json: methodConfig[1].name[0]: a/B is named again (first in \
                 methodConfig[0].name[0]); gRPC refuses a service config that names a method twice",
            ),
            (
                r#"{"name": [{"service": "a"}, {"service": "a", "method": ""}], {RP}}"#,
                "sc.json: methodConfig[0].name[1]: service a (all its methods) is named again \
                 (first in methodConfig[0].name[0])",
            ),
            (
                // An entry without a retryPolicy names its methods too.
                r#"{"name": [{}], "timeout": "1s"}, {"name": [{"service": ""}], {RP}}"#,
                "sc.json: methodConfig[1].name[0]: the empty name {} (the default for every \
                 method) is named again (first in methodConfig[0].name[0])",
            ),
        ] {
            let msg = unplaced(
                &import_str(&config(entries), "sc.json")
                    .unwrap_err()
                    .to_string(),
            );
            assert!(msg.starts_with(needle), "{needle}\n{msg}");
        }
    }

    /// A name with a method and no service is refused, as gRPC refuses
    /// the whole service config for it, placed at the method.
    #[test]
    fn a_method_named_without_its_service_is_refused() {
        for name in [
            r#"{"method": "Foo"}"#,
            r#"{"service": "", "method": "Foo"}"#,
        ] {
            let text = config(&format!(
                r#"{{"name": [{{"service": "a.B"}}, {name}], {{RP}}}}"#
            ));
            let msg = import_str(&text, "sc.json").unwrap_err().to_string();
            assert!(
                msg.starts_with("sc.json:1:")
                    && msg.contains(
                        "methodConfig[0].name[1].method: \"Foo\" is named without its service; \
                         gRPC refuses"
                    )
                    && msg.contains("cannot combine empty 'service' and non-empty 'method'"),
                "{name}: {msg}"
            );
        }
        // A service alone, or the empty default name, is a name gRPC reads.
        for name in [
            r#"{"service": "a.B"}"#,
            r#"{"service": "", "method": ""}"#,
            "{}",
        ] {
            let text = config(&format!(r#"{{"name": [{name}], {{RP}}}}"#));
            assert!(import_str(&text, "sc.json").is_ok(), "{name}");
        }
    }

    /// An entry without a name applies to no method in gRPC: it is
    /// skipped with a warning, its values still checked; when it was all
    /// there was, the error says why nothing is imported.
    #[test]
    fn an_entry_without_a_name_is_skipped_with_a_warning() {
        let text = config(r#"{"name": [{"service": "a.B"}], {RP}}, {RP2}"#).replace(
            "{RP2}",
            r#"{"retryPolicy": {"maxAttempts": 3, "initialBackoff": "1s",
                "maxBackoff": "2s", "backoffMultiplier": 2, "retryableStatusCodes": [14]}}"#,
        );
        let imp = import_str(&text, "sc.json").unwrap();
        let names: Vec<&str> = imp.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a.B"]);
        assert_eq!(
            imp.warnings,
            ["methodConfig[1] skipped: it has no name, and gRPC applies an entry without a name \
              to no method (\"name\": [{}] applies it to every method)"]
        );
        // `"name": []` names no method either.
        for entries in [r#"{ {RP} }"#, r#"{"name": [], {RP}}"#] {
            let msg = unplaced(
                &import_str(&config(entries), "sc.json")
                    .unwrap_err()
                    .to_string(),
            );
            assert_eq!(
                msg,
                "sc.json: methodConfig[0]: nothing to import: methodConfig[0] has a policy but \
                 no name, and gRPC applies an entry without a name to no method (\"name\": \
                 [{}] applies it to every method)",
                "{entries}"
            );
        }
        // Its values are still checked, as gRPC checks them.
        let msg = import_str(
            &config(r#"{"name": [{}], {RP}}, {"retryPolicy": {"maxAttempts": 1}}"#),
            "sc.json",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("methodConfig[1].retryPolicy.maxAttempts"),
            "{msg}"
        );
    }

    /// `retryThrottling` values with more than 3 decimals are cut to 3,
    /// as gRPC keeps them, with a warning; one that leaves nothing is
    /// refused.
    #[test]
    fn throttling_values_keep_three_decimals_as_in_grpc() {
        let throttled = |max: &str, ratio: &str| {
            let c = config(r#"{"name": [{}], {RP}}"#);
            format!(
                r#"{}, "retryThrottling": {{"maxTokens": {max}, "tokenRatio": {ratio}}}}}"#,
                &c[..c.len() - 1]
            )
        };
        let imp = import_str(&throttled("10.12345", "0.12345"), "sc.json").unwrap();
        assert_eq!(
            imp.policies[0].budget,
            Some(BudgetSpec::TokenBucket {
                max_tokens: 10.123,
                token_ratio: 0.123,
                scope: BudgetScope::Client
            })
        );
        let w = imp.warnings.join("\n");
        assert!(
            w.contains(
                "retryThrottling.maxTokens: 10.12345 has more than 3 decimals, and gRPC keeps 3 \
                 (gRFC A6: \"Up to 3 decimal places are supported\"; grpc-java drops the digits \
                 past the third"
            ) && w.contains("): imported as 10.123"),
            "{w}"
        );
        assert!(
            w.contains("retryThrottling.tokenRatio: 0.12345 has more than 3 decimals")
                && w.contains("grpc-java and gRPC C-core drop the digits past the third")
                && w.contains("imported as 0.123"),
            "{w}"
        );
        assert_eq!(imp.warnings.len(), 2, "{w}");
        // Three decimals or fewer: as written, without a word.
        let imp = import_str(&throttled("10.5", "0.125"), "sc.json").unwrap();
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
        // Nothing left once cut.
        let msg = import_str(&throttled("10", "0.0004"), "sc.json")
            .unwrap_err()
            .to_string();
        assert!(
            msg.starts_with("sc.json:2:")
                && msg.contains("retryThrottling.tokenRatio: 0.0004 is below 0.001"),
            "{msg}"
        );
    }

    /// An empty file and a file that is not JSON are said as such, not in
    /// the JSON parser's words.
    #[test]
    fn an_empty_or_yaml_file_is_said_as_such() {
        for text in ["", "  \n\n"] {
            let msg = import_str(text, "sc.json").unwrap_err().to_string();
            assert_eq!(msg, "sc.json: the file is empty");
        }
        let yaml = "\nmethodConfig:\n- name: [{service: a.B}]\n  retryPolicy: {maxAttempts: 3}\n";
        let msg = import_str(yaml, "sc.yaml").unwrap_err().to_string();
        assert_eq!(
            msg,
            "sc.yaml:2:1: expected a gRPC service config in JSON, an object such as \
             {\"methodConfig\": [...]}; this reads as YAML, and gRPC reads a service config \
             as JSON only: write it as JSON"
        );
        let msg = import_str("<config/>", "sc.xml").unwrap_err().to_string();
        assert!(
            msg.starts_with("sc.xml:1:1: expected a gRPC service config in JSON")
                && msg.ends_with("this is not JSON"),
            "{msg}"
        );
        // JSON with a syntax error keeps the parser's place.
        let msg = import_str("{\"methodConfig\": [", "sc.json")
            .unwrap_err()
            .to_string();
        assert!(msg.starts_with("sc.json:1:18: "), "{msg}");
    }

    /// Nesting past the parser's limit is said as such, for objects and
    /// lists alike, instead of being read as a config without policies.
    #[test]
    fn nesting_too_deep_is_refused_as_such() {
        for (open, close) in [("{\"a\":", "}"), ("[", "]")] {
            let text = format!("{}{{}}{}", open.repeat(200), close.repeat(200));
            let msg = import_str(&text, "deep.json").unwrap_err().to_string();
            assert!(
                msg.starts_with("deep.json:1:") && msg.contains("nested more than 128 levels deep"),
                "{msg}"
            );
        }
        // 100 levels are read, and found to be no service config.
        let text = format!("{}{{}}{}", "{\"a\":".repeat(100), "}".repeat(100));
        let msg = import_str(&text, "deep.json").unwrap_err().to_string();
        assert!(msg.contains("methodConfig: missing"), "{msg}");
    }

    #[test]
    fn names_that_make_the_same_policy_name_are_told_apart_with_a_warning() {
        let text = config(
            r#"{"name": [{"service": "a", "method": "B"}], {RP}},
               {"name": [{"service": "a.B"}], {RP}},
               {"name": [{"service": "a/B"}], {RP}},
               {"name": [{"service": "a.B-1"}], {RP}}"#,
        );
        let imp = import_str(&text, "sc.json").unwrap();
        let names: Vec<&str> = imp.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a.B", "a.B-1", "a.B-2", "a.B-1-3"]);
        assert_eq!(
            imp.warnings,
            [
                "methodConfig[1]: its policy name a.B is already methodConfig[0]'s: imported as a.B-1",
                "methodConfig[2]: its policy name a.B is already methodConfig[0]'s: imported as a.B-2",
                "methodConfig[3]: its policy name a.B-1 is already methodConfig[1]'s: imported as a.B-1-3",
            ]
        );
    }

    /// Service names past the longest policy name that differ only at
    /// their end make distinct names, suffix included, within the limit.
    #[test]
    fn long_names_cut_to_the_same_prefix_are_told_apart_within_the_limit() {
        let long = "s".repeat(250);
        let text = config(&format!(
            r#"{{"name": [{{"service": "{long}A"}}], {{RP}}}},
               {{"name": [{{"service": "{long}B"}}], {{RP}}}},
               {{"name": [{{"service": "{long}C"}}], {{RP}}}}"#
        ));
        let imp = import_str(&text, "sc.json").unwrap();
        let names: Vec<&str> = imp.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names[0], &long[..MAX_NAME_BYTES]);
        assert_eq!(names[1], format!("{}-1", &long[..MAX_NAME_BYTES - 2]));
        assert_eq!(names[2], format!("{}-2", &long[..MAX_NAME_BYTES - 2]));
        assert!(names.iter().all(|n| n.len() <= MAX_NAME_BYTES));
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

        /// Every hedging policy gRPC accepts imports as a hedging block a
        /// scenario accepts, with its attempts capped at 5 and its delay
        /// to the nanosecond.
        #[test]
        fn hedging_policies_grpc_accepts_import(
            attempts in 2i64..10,
            delay_ns in 0u64..10_000_000_000,
            codes in proptest::collection::vec(0i64..=16, 0..6),
        ) {
            let text = format!(
                r#"{{"methodConfig": [{{"name": [{{"service": "s.S"}}],
                    "hedgingPolicy": {{"maxAttempts": {attempts},
                    "hedgingDelay": "{}.{:09}s", "nonFatalStatusCodes": {codes:?}}}}}]}}"#,
                delay_ns / 1_000_000_000, delay_ns % 1_000_000_000
            );
            let imp = import_str(&text, "sc.json");
            proptest::prop_assert!(imp.is_ok(), "{text}: {imp:?}");
            let imp = imp.unwrap();
            let h = imp.policies[0].hedging.clone().unwrap();
            proptest::prop_assert_eq!(i64::from(h.max_attempts), attempts.min(5));
            proptest::prop_assert_eq!(h.delay.ns(), delay_ns);
            proptest::prop_assert!(h.non_fatal.len() <= codes.len());
            proptest::prop_assert!(resolve(&imp.policies[0]).is_ok());
        }
    }
}
