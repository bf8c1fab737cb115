//! `gcloud tasks queues describe` YAML → a `cloud_tasks` policy and a
//! `dispatcher` block.
//!
//! The output uses proto3-JSON camelCase keys and `"<decimal>s"` durations
//! (`0.100s`, `3600s`), the one form the API takes (gcloud passes its
//! duration flags to it as they are): `100ms`, `1h`, a bare `3600` or
//! `10 s` are refused. `maxDoublings` is an int32, from 0 to 2147483647.
//! Fields at their zero value are left out. Absent keys
//! take the API defaults (maxAttempts 100, minBackoff 0.1 s, maxBackoff
//! 3600 s, maxDoublings 16, 500 dispatches/s, burst 100, 1000 concurrent);
//! absent `maxRetryDuration` means unlimited. Unknown keys (`state`,
//! `stackdriverLoggingConfig`, `httpTarget`, ...) are ignored.

use super::{bad_key, closest, placed_by, policy_name, same_word, Imported, Refusals};
use crate::decimal::Given;
use crate::policy::{BackoffSpec, PolicySpec};
use crate::scenario::error::{InvalidInput, Located};
use crate::scenario::spec::DispatcherSpec;
use crate::status::Status;
use crate::time::Dur;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Queue {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    rate_limits: Option<RateLimits>,
    #[serde(default)]
    retry_config: Option<RetryConfig>,
    /// The other keys `describe` prints (`stackdriverLoggingConfig`,
    /// `purgeTime`, ...), and misspellings of the two blocks read here.
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateLimits {
    #[serde(default)]
    max_dispatches_per_second: Option<f64>,
    #[serde(default)]
    max_burst_size: Option<u32>,
    #[serde(default)]
    max_concurrent_dispatches: Option<u32>,
    /// Keys Cloud Tasks does not have here (a typo), warned about.
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryConfig {
    #[serde(default)]
    max_attempts: Option<i64>,
    #[serde(default)]
    max_retry_duration: Option<ApiDur>,
    #[serde(default)]
    min_backoff: Option<ApiDur>,
    #[serde(default)]
    max_backoff: Option<ApiDur>,
    /// An int32 in RetryConfig: read wider, so that a value out of its
    /// range is refused with that range.
    #[serde(default)]
    max_doublings: Option<i64>,
    /// Keys Cloud Tasks does not have here (a typo), warned about.
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

/// The note an imported queue carries: the deadline is not the queue's.
/// `gate` puts it otherwise when its template gives a deadline.
pub const DEADLINE_ASSUMED: &str =
    "dispatch_deadline is set per task, not per queue: the HTTP default 10m is assumed";

/// The forms of a duration the Cloud Tasks API takes, for messages.
const DURATION_FORMS: &str = "a duration is seconds ending in \"s\", such as \"0.100s\" or \
    \"3600s\" (digits, an optional fraction of up to 9 digits, then s), as `gcloud tasks queues \
    describe` prints it and `gcloud tasks queues create --min-backoff` takes it";

/// A duration of `retryConfig` as the Cloud Tasks API takes it: a proto3
/// JSON `Duration`, whole seconds with an optional fraction and the
/// suffix `s` (`0.100s`, `3600s`). gcloud passes its `--min-backoff`,
/// `--max-backoff` and `--max-retry-duration` text to the API as it is,
/// so no other form (`100ms`, `1h`, a bare `3600`, `10 s`) sets a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ApiDur(Dur);

impl<'de> Deserialize<'de> for ApiDur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ApiDur, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ApiDur;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(DURATION_FORMS)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ApiDur, E> {
                parse_api_duration(v).map(ApiDur).map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ApiDur, E> {
                Err(E::custom(format!(
                    "{v} has no unit: {DURATION_FORMS} (\"{v}s\")"
                )))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ApiDur, E> {
                Err(E::custom(format!("{v} has no unit: {DURATION_FORMS}")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<ApiDur, E> {
                Err(E::custom(format!(
                    "{} has no unit: {DURATION_FORMS}",
                    Given(v)
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// Parses a duration as the Cloud Tasks API reads one (see [`ApiDur`]);
/// the error quotes `text` and says which forms are taken.
fn parse_api_duration(text: &str) -> Result<Dur, String> {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    let number = text.strip_suffix('s').unwrap_or_default();
    let (whole, fraction) = number.split_once('.').unwrap_or((number, "0"));
    if !(digits(whole) && digits(fraction)) {
        let why = if text.trim_start().starts_with('-') {
            "is negative"
        } else {
            "is not a duration Cloud Tasks takes"
        };
        return Err(format!("{text:?} {why}: {DURATION_FORMS}"));
    }
    if fraction.len() > 9 {
        return Err(format!(
            "{text:?} has more than 9 decimals (a proto3 duration counts nanoseconds): \
             {DURATION_FORMS}"
        ));
    }
    crate::time::parse_duration(text).map_err(|e| e.to_string())
}

/// The largest `maxDoublings`: an int32 in RetryConfig.
const MAX_DOUBLINGS: i64 = i32::MAX as i64;

/// The refusal text for a `maxDoublings` of `found` (as written), which
/// is out of RetryConfig's int32 or negative.
fn doublings_out_of_range(found: &str) -> String {
    format!(
        "{found} is out of range: expected a whole number from 0 to {MAX_DOUBLINGS} \
         (RetryConfig's maxDoublings is an int32, and a count of doublings is never negative)"
    )
}

/// Cloud Tasks API default: attempts per task.
pub const DEFAULT_MAX_ATTEMPTS: i64 = 100;
/// Cloud Tasks API default: dispatch rate (also the maximum).
pub const DEFAULT_RATE: f64 = 500.0;

/// Imports one queue from `describe` YAML; `origin` names the file in
/// errors, each refused value with the line and column where it is
/// written.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    import_unplaced(text, origin).map_err(|e| placed_by(e, |key| position(text, key)))
}

/// [`import_str`] before its refusals are placed: values are refused
/// after reading, when the parser's positions are gone.
fn import_unplaced(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let q = read_queue(text, origin)?;
    let mut warnings = unknown_keys(&q);
    // Every value refused, so that one run names them all.
    let mut refused = Refusals::new(origin);
    let name = policy_name(
        q.name
            .as_deref()
            .and_then(|n| n.rsplit('/').next())
            .unwrap_or(""),
        "queue",
        &mut warnings,
    );
    let rc = q.retry_config.unwrap_or_default();
    let policy = retry_policy(name, rc, origin, &mut refused, &mut warnings);
    let rl = q.rate_limits.unwrap_or_default();
    let dispatcher = dispatcher(rl, origin, &mut refused, &mut warnings);
    refused.check()?;
    if q.state.as_deref().is_some_and(|s| s != "RUNNING") {
        warnings.push(format!(
            "the queue's state is {}; the scenario simulates it running",
            q.state.as_deref().unwrap_or_default()
        ));
    }
    warnings.push(DEADLINE_ASSUMED.into());
    let mut imported = Imported {
        policies: vec![policy],
        dispatcher: Some(dispatcher),
        warnings,
    }
    .validated(origin)?;
    let beyond = api_limits(&imported);
    imported.warnings.extend(beyond);
    Ok(imported)
}

/// The documented API limits the queue goes beyond, as `check` warns
/// about them in a scenario, each named by the queue's own key. The
/// dispatch rate is warned about as it is read; the dispatch deadline is
/// not the queue's (see the warning about it).
fn api_limits(imported: &Imported) -> Vec<String> {
    let Ok(spec) = imported.as_scenario() else {
        return vec![];
    };
    let Ok(scenario) = crate::scenario::Scenario::from_spec(spec) else {
        return vec![];
    };
    let key = |path: &str| -> Option<&'static str> {
        let field = path.rsplit('.').next().unwrap_or(path);
        match field {
            "max_burst_size" => Some("rateLimits.maxBurstSize"),
            "max_concurrent_dispatches" => Some("rateLimits.maxConcurrentDispatches"),
            "max_attempts" => Some("retryConfig.maxAttempts"),
            "max_retry_duration" => Some("retryConfig.maxRetryDuration"),
            "min_backoff" => Some("retryConfig.minBackoff"),
            "max_backoff" => Some("retryConfig.maxBackoff"),
            _ => None,
        }
    };
    crate::scenario::cloud_tasks::warnings(scenario.spec(), scenario.policies())
        .into_iter()
        .filter_map(|(path, why)| key(&path).map(|k| format!("{k}: {why}")))
        .collect()
}

/// The queue `describe` printed in `text`; refused when the YAML does
/// not read as one, or holds nothing a queue description has.
fn read_queue(text: &str, origin: &str) -> Result<Queue, InvalidInput> {
    let mut path = String::new();
    let parsed: Result<Queue, _> = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    });
    let q = parsed.map_err(|e| InvalidInput::At(yaml_error(&e, text, origin, &path)))?;
    let queue_name = q.name.as_deref().is_some_and(|n| n.contains("/queues/"));
    if !queue_name && q.rate_limits.is_none() && q.retry_config.is_none() {
        // An empty file, or some other YAML (a scenario, a manifest):
        // every key would take its default and the import would describe
        // a queue nobody configured.
        return Err(InvalidInput::At(Located::whole(
            origin,
            "no Cloud Tasks queue here: expected the output of `gcloud tasks queues describe` \
             (rateLimits, retryConfig, or a name projects/.../queues/...)",
        )));
    }
    Ok(q)
}

/// The `cloud_tasks` policy named `name` that the queue's `retryConfig`
/// `rc` describes, the API defaults where it is silent; bad values are
/// added to `refused`.
fn retry_policy(
    name: String,
    rc: RetryConfig,
    origin: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> PolicySpec {
    let max_attempts = max_attempts(rc.max_attempts, origin, refused, warnings);
    let max_retry_duration = rc.max_retry_duration.map(|d| d.0).filter(|d| d.ns() > 0);
    if let (-1, Some(d)) = (max_attempts, max_retry_duration) {
        warnings.push(format!(
            "retryConfig.maxAttempts is -1 (unlimited): a task is given up only when both \
             limits are reached, so maxRetryDuration {d} never ends its retries; it is retried \
             until it expires"
        ));
    }
    let min_backoff = rc.min_backoff.map_or(Dur::from_millis(100), |d| d.0);
    let max_backoff = rc.max_backoff.map_or(Dur::from_secs(3600), |d| d.0);
    if min_backoff > max_backoff {
        refused.add(bad_key(
            origin,
            "retryConfig.minBackoff",
            format!("{min_backoff} is above maxBackoff {max_backoff}"),
        ));
    }
    let max_doublings = match rc.max_doublings {
        None => 16,
        Some(n) => u32::try_from(n)
            .ok()
            .filter(|&n| i64::from(n) <= MAX_DOUBLINGS)
            .unwrap_or_else(|| {
                refused.add(bad_key(
                    origin,
                    "retryConfig.maxDoublings",
                    doublings_out_of_range(&n.to_string()),
                ));
                16
            }),
    };
    PolicySpec {
        name,
        max_attempts: Some(max_attempts),
        max_retry_duration,
        backoff: Some(BackoffSpec::CloudTasks {
            min_backoff,
            max_backoff,
            max_doublings,
        }),
        // A queue retries every non-2xx answer and every attempt without one.
        retry_on: Some(
            Status::ALL
                .into_iter()
                .filter(|s| *s != Status::Ok)
                .collect(),
        ),
        ..Default::default()
    }
}

/// `retryConfig.maxAttempts` as the queue runs it: 0 and absent read as
/// the API default, -1 as unlimited; below -1 refused.
fn max_attempts(
    given: Option<i64>,
    origin: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> i64 {
    match given {
        None => DEFAULT_MAX_ATTEMPTS,
        Some(0) => {
            warnings.push(
                "retryConfig.maxAttempts is 0, which the API treats as unset: using 100".into(),
            );
            DEFAULT_MAX_ATTEMPTS
        }
        Some(n) if n < -1 => {
            refused.add(bad_key(
                origin,
                "retryConfig.maxAttempts",
                format!("{n} is not allowed (>= -1; -1 = unlimited)"),
            ));
            DEFAULT_MAX_ATTEMPTS
        }
        Some(n) if n > i64::from(i32::MAX) => {
            refused.add(bad_key(
                origin,
                "retryConfig.maxAttempts",
                format!(
                    "{n} is above what RetryConfig's 32-bit maxAttempts holds ({}); -1 is the \
                     API's way to say unlimited",
                    i32::MAX
                ),
            ));
            DEFAULT_MAX_ATTEMPTS
        }
        Some(n) => n,
    }
}

/// The `dispatcher` block the queue's `rateLimits` `rl` describes, the
/// API defaults where it is silent; bad values are added to `refused`.
fn dispatcher(
    rl: RateLimits,
    origin: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> DispatcherSpec {
    let rate = rl.max_dispatches_per_second.unwrap_or(DEFAULT_RATE);
    let key = "rateLimits.maxDispatchesPerSecond";
    if !rate.is_finite() {
        refused.add(bad_key(
            origin,
            key,
            format!("{rate} is not a finite number"),
        ));
    } else if rate <= 0.0 {
        refused.add(bad_key(
            origin,
            key,
            format!("{} must be greater than 0", Given(rate)),
        ));
    } else if rate > DEFAULT_RATE {
        warnings.push(format!(
            "rateLimits.maxDispatchesPerSecond {} is above the API maximum of 500: Cloud Tasks \
             would refuse it; simulated as written",
            Given(rate)
        ));
    }
    let burst = rl.max_burst_size.unwrap_or(100);
    let concurrent = rl.max_concurrent_dispatches.unwrap_or(1000);
    for (key, v) in [
        ("rateLimits.maxBurstSize", burst),
        ("rateLimits.maxConcurrentDispatches", concurrent),
    ] {
        if v == 0 {
            refused.add(bad_key(origin, key, "must be at least 1"));
        }
    }
    DispatcherSpec {
        max_dispatches_per_second: rate,
        max_burst_size: burst,
        max_concurrent_dispatches: concurrent,
        dispatch_deadline: Dur::from_secs(600),
        throttling: None,
    }
}

/// A warning for each key of `rateLimits` and `retryConfig` that Cloud
/// Tasks does not have: most likely a typo, whose value would otherwise
/// be replaced by the default without a word.
fn unknown_keys(q: &Queue) -> Vec<String> {
    let rate = q
        .rate_limits
        .iter()
        .flat_map(|r| r.other.keys().map(|k| ("rateLimits", k)));
    let retry = q
        .retry_config
        .iter()
        .flat_map(|r| r.other.keys().map(|k| ("retryConfig", k)));
    let misspelt_blocks = q.other.keys().filter_map(|key| {
        let block = ["rateLimits", "retryConfig"]
            .into_iter()
            .find(|block| same_word(key, block))?;
        Some(format!(
            "{key}: not a key of a queue; did you mean {block}? ignored, the defaults are used"
        ))
    });
    rate.chain(retry)
        .map(|(block, key)| {
            let known: &[&str] = if block == "rateLimits" {
                &[
                    "maxDispatchesPerSecond",
                    "maxBurstSize",
                    "maxConcurrentDispatches",
                ]
            } else {
                &[
                    "maxAttempts",
                    "maxRetryDuration",
                    "minBackoff",
                    "maxBackoff",
                    "maxDoublings",
                ]
            };
            match closest(key, known) {
                Some(k) => format!(
                    "{block}.{key}: not a Cloud Tasks setting; did you mean {k}? ignored, the \
                     default is used"
                ),
                None => format!(
                    "{block}.{key}: not a Cloud Tasks setting (a typo?); ignored, the default \
                     is used"
                ),
            }
        })
        .chain(misspelt_blocks)
        .collect()
}

/// Line and column (1-based) where the value of `key`
/// (`rateLimits.maxBurstSize`) is written in the YAML `text`, or, when
/// the text leaves it out, where its block is: a refusal points at the
/// value as a parse error does.
fn position(text: &str, key: &str) -> Option<(usize, usize)> {
    let steps: Vec<&str> = key.split('.').collect();
    (1..=steps.len()).rev().find_map(|n| {
        // Values of any kind are passed over, `.inf` and `.nan` included
        // (which the parser refuses by default where no type asks for a
        // number).
        let options = serde_saphyr::options! {
            non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        };
        let at = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
            Find(&steps[..n]).deserialize(de)
        })
        .ok()??;
        Some((
            usize::try_from(at.line()).ok()?,
            usize::try_from(at.column()).ok()?,
        ))
    })
}

/// Follows the keys of a path down nested mappings and gives where the
/// value at its end is written (`None` when a key is missing).
struct Find<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for Find<'_> {
    type Value = Option<serde_saphyr::Location>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        if self.0.is_empty() {
            let value = serde_saphyr::Spanned::<IgnoredAny>::deserialize(d)?;
            Ok(Some(value.referenced))
        } else {
            d.deserialize_map(self)
        }
    }
}

impl<'de> Visitor<'de> for Find<'_> {
    type Value = Option<serde_saphyr::Location>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some((want, rest)) = self.0.split_first() else {
            return Ok(None);
        };
        let mut found = None;
        // Every entry is read, so that the document ends where the parser
        // expects it to.
        while let Some(key) = map.next_key::<String>()? {
            if found.is_none() && key == *want {
                found = map.next_value_seed(Find(rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// A YAML error as a [`Located`] problem of `origin`: the position taken
/// from the error, the field path from `path` (as `serde_path_to_error`
/// writes it), and the message in the user's terms rather than the
/// parser's (no type names, no advice about the parser's options, no
/// source snippet).
fn yaml_error(e: &serde_saphyr::Error, text: &str, origin: &str, path: &str) -> Located {
    use serde_saphyr::{Error as E, MessageFormatter, UserMessageFormatter};
    let e = e.without_snippet();
    let location = e.location().filter(|l| l.line() > 0);
    // The scalar the error points at, as written, when it is on one line.
    let found = location.and_then(|l| {
        let start = usize::try_from(l.span().byte_offset()?).ok()?;
        let len = usize::try_from(l.span().byte_len()?).ok()?;
        let s = text.get(start..start.checked_add(len)?)?.trim();
        (!s.is_empty() && !s.contains('\n')).then_some(s)
    });
    // The path up to the step the deserialiser could not name (`?`).
    let mut field = path.split(".?").next().unwrap_or_default().to_string();
    if field == "." || field == "?" {
        field.clear();
    }
    let message = match e {
        // Read wider than its int32, so that the range said is its own.
        E::InvalidScalar { .. }
            if field == "retryConfig.maxDoublings" && found.is_some_and(is_integer) =>
        {
            doublings_out_of_range(found.unwrap_or_default())
        }
        E::InvalidScalar { ty, .. } => scalar_message(ty, found),
        E::DuplicateMappingKey { key, .. } => {
            let key = key.as_deref().or(found).unwrap_or("a key");
            if path.ends_with('?') {
                field = if field.is_empty() {
                    key.to_string()
                } else {
                    format!("{field}.{key}")
                };
            }
            format!("{key} appears twice; each key may be given once")
        }
        E::MultipleDocuments { .. } => {
            field.clear();
            "the file holds several YAML documents (separated by `---`); expected one queue \
             description, as `gcloud tasks queues describe` prints it: import each queue from \
             a file of its own"
                .into()
        }
        E::Unexpected {
            expected: "mapping start",
            ..
        } => "expected a mapping (`key: value` lines)".into(),
        E::Unexpected {
            expected: "sequence start",
            ..
        } => "expected a list".into(),
        E::Unexpected {
            expected: "string scalar" | "scalar" | "str expected",
            ..
        } => "expected a single value here, not a list or a mapping".into(),
        other => {
            let message = UserMessageFormatter.format_message(other).into_owned();
            // The parser's limits (nodes, aliases, nesting), reached
            // wherever in the file: said in words, not as its debug dump.
            if matches!(other, E::Budget { .. }) || message.contains("limits breached") {
                field.clear();
                "too large or too deeply aliased for a queue description (the parser's limits \
                 on nodes, aliases and nesting were reached); expected the output of `gcloud \
                 tasks queues describe`"
                    .into()
            } else {
                message
            }
        }
    };
    Located {
        origin: origin.to_string(),
        line: location.and_then(|l| usize::try_from(l.line()).ok()),
        column: location.and_then(|l| usize::try_from(l.column()).ok()),
        path: (!field.is_empty()).then_some(field),
        message,
    }
}

/// What is wrong with a scalar the parser could not read as `ty` (a Rust
/// type name), `found` as written when known.
fn scalar_message(ty: &str, found: Option<&str>) -> String {
    let range: Option<(i128, i128)> = match ty {
        "i64" => Some((i64::MIN.into(), i64::MAX.into())),
        "i32" => Some((i32::MIN.into(), i32::MAX.into())),
        "u64" => Some((0, u64::MAX.into())),
        "u32" => Some((0, u32::MAX.into())),
        "u16" => Some((0, u16::MAX.into())),
        "u8" => Some((0, u8::MAX.into())),
        _ => None,
    };
    let expected = match (ty, range) {
        (_, Some((0, max))) => format!("expected a whole number up to {max}"),
        (_, Some(_)) => "expected a whole number".to_string(),
        ("floating point" | "f64" | "f32", None) => "expected a number".to_string(),
        ("boolean" | "bool", None) => "expected true or false".to_string(),
        (_, None) => format!("cannot be read as {ty}"),
    };
    match (found, range) {
        // Digits alone, yet not read: out of the type's range.
        // Not "from 0" for an unsigned field: `maxBurstSize` starts at 1,
        // and its own check says so.
        (Some(f), Some((0, _))) if is_integer(f) => format!("{f} is out of range: {expected}"),
        (Some(f), Some((min, max))) if is_integer(f) => {
            format!("{f} is out of range: expected a whole number from {min} to {max}")
        }
        (Some(f), _) => format!("{expected}, found {f:?}"),
        (None, _) => expected,
    }
}

/// Digits, with a sign or not.
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
    !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::resolve;
    use crate::policy::schedule::schedule;

    /// The sample `gcloud tasks queues describe` output in the Cloud Tasks
    /// docs (https://cloud.google.com/tasks/docs/creating-queues).
    const SAMPLE: &str = "\
name: projects/PROJECT_ID/locations/LOCATION/queues/QUEUE_ID
rateLimits:
  maxBurstSize: 100
  maxConcurrentDispatches: 1000
  maxDispatchesPerSecond: 500.0
retryConfig:
  maxAttempts: 100
  maxBackoff: 3600s
  maxDoublings: 16
  minBackoff: 0.100s
state: RUNNING
";

    fn preset_schedule(name: &str) -> crate::policy::schedule::Schedule {
        let p = resolve(&PolicySpec {
            name: name.into(),
            preset: Some(name.into()),
            ..Default::default()
        })
        .unwrap();
        schedule(&p, Some(200))
    }

    #[test]
    fn documented_sample_is_the_default_queue() {
        let imp = import_str(SAMPLE, "q.yaml").unwrap();
        let p = &imp.policies[0];
        assert_eq!(p.name, "QUEUE_ID");
        let resolved = resolve(p).unwrap();
        assert_eq!(
            schedule(&resolved, Some(200)),
            preset_schedule("cloud-tasks-default")
        );
        let d = imp.dispatcher.as_ref().unwrap();
        assert_eq!(
            (
                d.max_dispatches_per_second,
                d.max_burst_size,
                d.max_concurrent_dispatches
            ),
            (500.0, 100, 1000)
        );
        // The printed block parses back as scenario fields.
        let v: serde_json::Value = serde_json::from_str(&imp.to_json()).unwrap();
        let back: PolicySpec = serde_json::from_value(v["policies"][0].clone()).unwrap();
        assert_eq!(resolve(&back).unwrap(), resolved);
        assert_eq!(
            v["policies"][0]["backoff"]["cloud_tasks"]["min_backoff"],
            "100ms"
        );
    }

    /// A queue ID a policy cannot be named (a device name Windows
    /// reserves) is replaced, with a warning that says why.
    #[test]
    fn a_queue_id_that_cannot_name_a_policy_is_replaced_with_a_warning() {
        let text = "name: projects/p/locations/l/queues/CON\nretryConfig:\n  maxAttempts: 3\n";
        let imp = import_str(text, "q.yaml").unwrap();
        assert_eq!(imp.policies[0].name, "queue");
        let renamed = warnings_with(&imp, "\"CON\" cannot be a policy name");
        assert_eq!(renamed.len(), 1, "{:?}", imp.warnings);
        assert!(
            renamed[0].contains("Windows reserves") && renamed[0].ends_with("imported as queue"),
            "{renamed:?}"
        );
    }

    #[test]
    fn absent_keys_are_api_defaults_and_unknown_keys_are_ignored() {
        let text = "name: projects/p/locations/l/queues/q\nstackdriverLoggingConfig:\n  samplingRatio: 1.0\npurgeTime: '2024-01-01T00:00:00Z'\n";
        let imp = import_str(text, "q.yaml").unwrap();
        let resolved = resolve(&imp.policies[0]).unwrap();
        assert_eq!(
            schedule(&resolved, Some(200)),
            preset_schedule("cloud-tasks-default")
        );
    }

    /// The import's warnings that say `needle`.
    fn warnings_with<'a>(imp: &'a Imported, needle: &str) -> Vec<&'a String> {
        imp.warnings.iter().filter(|w| w.contains(needle)).collect()
    }

    /// A misspelt key in `retryConfig` or `rateLimits` is warned about:
    /// its value is not used and the default takes its place.
    #[test]
    fn a_misspelt_setting_is_warned_about() {
        let text = "retryConfig:\n  maxAttemps: 5\nrateLimits:\n  maxBurst: 3\n  maxBurstSize: 4\n";
        let imp = import_str(text, "q.yaml").unwrap();
        assert_eq!(imp.policies[0].max_attempts, Some(DEFAULT_MAX_ATTEMPTS));
        assert_eq!(imp.dispatcher.as_ref().map(|d| d.max_burst_size), Some(4));
        let typos = warnings_with(&imp, "not a Cloud Tasks setting");
        assert_eq!(typos.len(), 2, "{:?}", imp.warnings);
        assert!(typos[0].starts_with("rateLimits.maxBurst:"), "{typos:?}");
        assert!(typos[1].starts_with("retryConfig.maxAttemps:"), "{typos:?}");
        // A block under another spelling, beside the keys describe prints.
        let text = "name: projects/p/locations/l/queues/q\nretryconfig:\n  maxAttempts: 5\n\
                    rate_limit:\n  maxBurstSize: 3\npurgeTime: '2024-01-01T00:00:00Z'\n";
        let imp = import_str(text, "q.yaml").unwrap();
        let misspelt = warnings_with(&imp, "did you mean");
        assert_eq!(misspelt.len(), 2, "{:?}", imp.warnings);
        assert!(
            misspelt[0].starts_with("rate_limit: not a key of a queue; did you mean rateLimits?"),
            "{misspelt:?}"
        );
        assert!(misspelt[1].starts_with("retryconfig:"), "{misspelt:?}");
    }

    #[test]
    fn an_alias_bomb_is_refused_in_words() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 0..8 {
            let prev = if i == 0 {
                "a".to_string()
            } else {
                format!("b{}", i - 1)
            };
            text.push_str(&format!(
                "b{i}: &b{i} [{}]\n",
                vec![format!("*{prev}"); 10].join(", ")
            ));
        }
        let msg = import_str(&text, "q.yaml").unwrap_err().to_string();
        assert!(
            msg.starts_with("q.yaml") && msg.contains("too large"),
            "{msg}"
        );
        assert!(!msg.contains('{'), "no debug dump: {msg}");
    }

    #[test]
    fn critical_pattern_imports() {
        let text = "retryConfig:\n  maxAttempts: 10\n  minBackoff: 0.100s\n  maxBackoff: 10s\n  maxDoublings: 5\n  maxRetryDuration: 60s\nrateLimits:\n  maxDispatchesPerSecond: 20.0\n";
        let imp = import_str(text, "q.yaml").unwrap();
        let p = &imp.policies[0];
        assert_eq!(p.name, "queue");
        assert_eq!(p.max_retry_duration, Some(Dur::from_secs(60)));
        let s = schedule(&resolve(p).unwrap(), None);
        assert_eq!(s.rows[8].cumulative, 32_300_000_000);
        // Both limits set: retries go on past 10 attempts until the task is
        // 60 s old (failures at 42.3 and 52.3 s retry, 62.3 s does not).
        assert_eq!(s.retries, Some(12));
        assert_eq!(imp.dispatcher.unwrap().max_dispatches_per_second, 20.0);
    }

    #[test]
    fn unlimited_attempts_never_give_up_whatever_the_retry_duration() {
        let text = "retryConfig:\n  maxAttempts: -1\n  maxRetryDuration: 3600s\n  minBackoff: 10s\n  maxBackoff: 10s\n";
        let imp = import_str(text, "q.yaml").unwrap();
        assert!(
            imp.warnings
                .iter()
                .any(|w| w.contains("maxAttempts is -1") && w.contains("never ends")),
            "{:?}",
            imp.warnings
        );
        let p = resolve(&imp.policies[0]).unwrap();
        assert_eq!(p.max_attempts, None);
        // Two hours in, the thousandth attempt still retries.
        assert_eq!(
            p.verdict(Status::Unavailable, 1000, 7200 * 1_000_000_000),
            crate::policy::RetryVerdict::Retry
        );
        assert_eq!(schedule(&p, None).retries, None);
    }

    #[test]
    fn malformed_yaml_is_invalid_input() {
        for (text, needle) in [
            (
                "retryConfig:\n  maxAttempts: many\n",
                "retryConfig.maxAttempts",
            ),
            (
                "retryConfig:\n  minBackoff: fast\n",
                "retryConfig.minBackoff",
            ),
            ("retryConfig: [1, 2\n", "q.yaml"),
            (
                "retryConfig:\n  maxAttempts: -5\n",
                "retryConfig.maxAttempts",
            ),
            (
                "retryConfig:\n  minBackoff: 10s\n  maxBackoff: 1s\n",
                "retryConfig.minBackoff",
            ),
            (
                "rateLimits:\n  maxBurstSize: 0\n",
                "rateLimits.maxBurstSize",
            ),
            ("", "no Cloud Tasks queue"),
            ("\n# nothing\n", "no Cloud Tasks queue"),
            (
                "{\"name\": \"s\", \"policies\": []}",
                "no Cloud Tasks queue",
            ),
        ] {
            let msg = import_str(text, "q.yaml").unwrap_err().to_string();
            assert!(
                msg.contains("q.yaml") && msg.contains(needle),
                "{text}: {msg}"
            );
        }
    }

    /// Durations are taken in the one form the Cloud Tasks API takes,
    /// seconds ending in `s`; every other form is refused naming the
    /// forms taken.
    #[test]
    fn durations_are_read_as_the_api_takes_them() {
        let with = |d: &str| format!("retryConfig:\n  minBackoff: {d}\n");
        for (d, ns) in [
            ("0.100s", 100_000_000),
            ("3600s", 3_600_000_000_000),
            ("\"2.5s\"", 2_500_000_000),
            ("0.000000001s", 1),
        ] {
            let imp = import_str(&with(d), "q.yaml").unwrap();
            let Some(BackoffSpec::CloudTasks { min_backoff, .. }) = &imp.policies[0].backoff else {
                panic!("{d}: {:?}", imp.policies[0].backoff);
            };
            assert_eq!(min_backoff.ns(), ns, "{d}");
        }
        for (d, needle) in [
            ("100ms", "\"100ms\" is not a duration Cloud Tasks takes"),
            ("1h", "\"1h\" is not a duration Cloud Tasks takes"),
            ("PT1H", "\"PT1H\" is not a duration Cloud Tasks takes"),
            ("\"10 s\"", "\"10 s\" is not a duration Cloud Tasks takes"),
            ("1e3s", "\"1e3s\" is not a duration Cloud Tasks takes"),
            ("-1s", "\"-1s\" is negative"),
            ("3600", "3600 has no unit"),
            ("0.5", "0.5 has no unit"),
            ("0.0000000001s", "has more than 9 decimals"),
        ] {
            let msg = import_str(&with(d), "q.yaml").unwrap_err().to_string();
            assert!(
                msg.starts_with("q.yaml:2:15: retryConfig.minBackoff: ") && msg.contains(needle),
                "{d}: {msg}"
            );
            assert!(
                msg.contains(
                    "a duration is seconds ending in \"s\", such as \"0.100s\" or \"3600s\" \
                     (digits, an optional fraction of up to 9 digits, then s)"
                ),
                "{d}: {msg}"
            );
            assert!(!msg.contains("with a unit such as"), "{d}: {msg}");
        }
    }

    /// `maxDoublings` is an int32 in RetryConfig: a value beyond it, or
    /// negative, is refused with the range it may take.
    #[test]
    fn max_doublings_is_an_int32() {
        let with = |n: &str| format!("retryConfig:\n  maxDoublings: {n}\n");
        let imp = import_str(&with("2147483647"), "q.yaml").unwrap();
        let Some(BackoffSpec::CloudTasks { max_doublings, .. }) = &imp.policies[0].backoff else {
            panic!("{:?}", imp.policies[0].backoff);
        };
        assert_eq!(*max_doublings, 2_147_483_647);
        for n in ["2147483648", "4294967296", "-3", "99999999999999999999"] {
            let msg = import_str(&with(n), "q.yaml").unwrap_err().to_string();
            assert_eq!(
                msg,
                format!(
                    "q.yaml:2:17: retryConfig.maxDoublings: {n} is out of range: expected a whole \
                     number from 0 to 2147483647 (RetryConfig's maxDoublings is an int32, and a \
                     count of doublings is never negative)"
                ),
                "{n}"
            );
        }
    }

    #[test]
    fn dispatch_rates_are_said_in_plain_numbers() {
        let rate = |r: &str| format!("rateLimits:\n  maxDispatchesPerSecond: {r}\n");
        let err = |r: &str| import_str(&rate(r), "q.yaml").unwrap_err().to_string();
        assert_eq!(
            err(".inf"),
            "q.yaml:2:27: rateLimits.maxDispatchesPerSecond: inf is not a finite number"
        );
        assert_eq!(
            err("-5"),
            "q.yaml:2:27: rateLimits.maxDispatchesPerSecond: -5 must be greater than 0"
        );
        let imp = import_str(&rate("1e308"), "q.yaml").unwrap();
        assert!(
            imp.warnings.iter().any(|w| w.starts_with(
                "rateLimits.maxDispatchesPerSecond 1e308 is above the API maximum of 500"
            )),
            "{:?}",
            imp.warnings
        );
    }

    /// Every refused value is named in one run, one per line, in the
    /// order of the file.
    #[test]
    fn every_refused_value_is_named_at_once() {
        let text = "retryConfig:\n  maxAttempts: -5\n  minBackoff: 10s\n  maxBackoff: 1s\n\
                    rateLimits:\n  maxDispatchesPerSecond: 0\n  maxBurstSize: 0\n  \
                    maxConcurrentDispatches: 0\n";
        let msg = import_str(text, "q.yaml").unwrap_err().to_string();
        let keys = super::super::refused_keys(&msg);
        assert_eq!(
            keys,
            [
                "retryConfig.maxAttempts",
                "retryConfig.minBackoff",
                "rateLimits.maxDispatchesPerSecond",
                "rateLimits.maxBurstSize",
                "rateLimits.maxConcurrentDispatches"
            ],
            "{msg}"
        );
        let places: Vec<&str> = msg.lines().map(|l| l.split(": ").next().unwrap()).collect();
        assert_eq!(
            places,
            [
                "q.yaml:2:16",
                "q.yaml:3:15",
                "q.yaml:6:27",
                "q.yaml:7:17",
                "q.yaml:8:28"
            ],
            "{msg}"
        );
    }

    /// A refused value is placed where it is written, as a value the
    /// parser could not read is: `FILE:LINE:COL`, the column its first
    /// character's, in either block.
    #[test]
    fn a_refused_value_is_placed_where_it_is_written() {
        let err = |text: &str| import_str(text, "q.yaml").unwrap_err().to_string();
        // The parser's own error and a refusal, for one key.
        let unread = err("rateLimits:\n  maxBurstSize: -1\n");
        let refused = err("rateLimits:\n  maxBurstSize: 0\n");
        assert!(unread.starts_with("q.yaml:2:17: rateLimits.maxBurstSize: "));
        assert_eq!(
            refused,
            "q.yaml:2:17: rateLimits.maxBurstSize: must be at least 1"
        );
        // Among other keys, in another order, after comments and blank
        // lines; the column follows the indentation.
        let text = "name: projects/p/locations/l/queues/q\n# limits\nrateLimits:\n\n    \
                    maxBurstSize: 10\n    maxConcurrentDispatches: 0\n    \
                    maxDispatchesPerSecond: .nan\nretryConfig:\n  maxAttempts: -2\n";
        assert_eq!(
            err(text),
            "q.yaml:9:16: retryConfig.maxAttempts: -2 is not allowed (>= -1; -1 = unlimited)\n\
             q.yaml:7:29: rateLimits.maxDispatchesPerSecond: NaN is not a finite number\n\
             q.yaml:6:30: rateLimits.maxConcurrentDispatches: must be at least 1"
        );
        // A flow mapping: the value within its line.
        assert_eq!(
            err("rateLimits: {maxDispatchesPerSecond: 5, maxBurstSize: 0}\n"),
            "q.yaml:1:55: rateLimits.maxBurstSize: must be at least 1"
        );
        // A key left out, refused for another's sake: its block.
        assert_eq!(
            err("retryConfig:\n  maxAttempts: 3\n  maxBackoff: 0.05s\n"),
            "q.yaml:2:3: retryConfig.minBackoff: 100ms is above maxBackoff 50ms"
        );
    }

    /// A YAML error is one line: the file, line and column, the field,
    /// and what is wrong in words, with neither the parser's type names
    /// and advice nor a source snippet.
    #[test]
    fn yaml_errors_are_one_line_in_plain_words() {
        for (text, expected) in [
            (
                "retryConfig:\n  maxAttempts: 1e9\n",
                "q.yaml:2:16: retryConfig.maxAttempts: expected a whole number, found \"1e9\"",
            ),
            (
                "retryConfig:\n  maxAttempts: 3.5\n",
                "q.yaml:2:16: retryConfig.maxAttempts: expected a whole number, found \"3.5\"",
            ),
            (
                "retryConfig:\n  maxAttempts: 99999999999999999999\n",
                "q.yaml:2:16: retryConfig.maxAttempts: 99999999999999999999 is out of range: \
                 expected a whole number from -9223372036854775808 to 9223372036854775807",
            ),
            (
                "rateLimits:\n  maxBurstSize: -1\n",
                "q.yaml:2:17: rateLimits.maxBurstSize: -1 is out of range: expected a whole \
                 number up to 4294967295",
            ),
            (
                "rateLimits:\n  maxDispatchesPerSecond: fast\n",
                "q.yaml:2:27: rateLimits.maxDispatchesPerSecond: expected a number, found \"fast\"",
            ),
            (
                "retryConfig:\n  maxAttempts: 3\n  maxAttempts: 4\n",
                "q.yaml:3:3: retryConfig.maxAttempts: maxAttempts appears twice; each key may be \
                 given once",
            ),
            (
                "retryConfig:\n  maxAttempts: 3\nretryConfig:\n  maxAttempts: 4\n",
                "q.yaml:3:1: retryConfig: retryConfig appears twice; each key may be given once",
            ),
            (
                "retryConfig:\n  maxAttempts: 3\n---\nretryConfig:\n  maxAttempts: 4\n",
                "q.yaml:4:1: the file holds several YAML documents (separated by `---`); \
                 expected one queue description, as `gcloud tasks queues describe` prints it: \
                 import each queue from a file of its own",
            ),
            (
                "retryConfig: 7\n",
                "q.yaml:1:14: retryConfig: expected a mapping (`key: value` lines)",
            ),
            (
                "retryConfig:\n  maxAttempts: [3]\n",
                "q.yaml:2:16: retryConfig.maxAttempts: expected a single value here, not a list \
                 or a mapping",
            ),
        ] {
            let msg = import_str(text, "q.yaml").unwrap_err().to_string();
            assert_eq!(msg, expected, "{text:?}");
        }
        // Whatever the parser says, the line stays one line of words.
        for text in [
            "retryConfig: [1, 2\n",
            "retryConfig: {maxAttempts: 3\n",
            "a: \"unterminated\n",
            "retryConfig:\n\tmaxAttempts: 3\n",
            "retryConfig:\n  maxAttempts: *x\n",
            "name: {a: 1}\n",
        ] {
            let msg = import_str(text, "q.yaml").unwrap_err().to_string();
            assert!(msg.starts_with("q.yaml:"), "{text:?}: {msg}");
            for bad in ["\n", "\\n", "-->", "<input>", "Options", "i64", "u32"] {
                assert!(!msg.contains(bad), "{text:?}: {bad:?} in {msg}");
            }
        }
    }
}
