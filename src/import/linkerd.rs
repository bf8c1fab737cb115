//! Linkerd YAML → one policy per resource with a retry configuration:
//!
//! - a `ServiceProfile` with a route `isRetryable: true`: the `linkerd`
//!   preset with `spec.retryBudget` (`retryRatio` × 100 → `percent`,
//!   `minRetriesPerSecond` → `min_per_second`, `ttl` → `ttl`; absent
//!   fields take Linkerd's defaults 0.2, 10, 10 s);
//! - an `HTTPRoute`, `GRPCRoute` or `Service` with `retry.linkerd.io/*`
//!   annotations (Linkerd 2.16+): `retry.linkerd.io/limit` (default 1; 0
//!   reads as unset) + 1 → `max_attempts`, `retry.linkerd.io/http` (codes,
//!   ranges `500-504`, `5xx`, `gateway-error`; not valid on a GRPCRoute)
//!   and `retry.linkerd.io/grpc` (gRPC code names; not valid on an
//!   HTTPRoute) → `retry_on`, `retry.linkerd.io/timeout` → a retried
//!   `deadline_exceeded` (the attempt timeout itself is reported); the
//!   back-off the policy controller sends, 25 ms to 250 ms. Without
//!   conditions Linkerd retries only requests that fail without a
//!   response, imported as `unavailable`.
//!
//! A ServiceProfile route's `isRetryable` must be a boolean; its
//! `timeout` and `responseClasses` are reported, not imported.
//!
//! Annotations are parsed as the policy controller does
//! (`parse_http_retry`, `parse_grpc_retry`); other documents are ignored
//! with a warning.

use super::envoy::{envoy_policy, http_status};
use super::push_named;
use super::yaml_docs::{
    documents, duration, get, mapping, number, other_keys, shown, Doc, DurForm,
};
use super::{Imported, Refusals};
use crate::decimal::Given;
use crate::policy::budget::Deposit;
use crate::policy::{BudgetScope, BudgetSpec, PolicySpec};
use crate::scenario::error::{InvalidInput, Located};
use crate::status::Status;
use crate::time::Dur;
use serde_json::Value;
use std::collections::BTreeSet;

/// Linkerd's default retry ratio (`defaultRetryBudget`).
pub const DEFAULT_RETRY_RATIO: f64 = 0.2;
/// Linkerd's default retries per second always allowed.
pub const DEFAULT_MIN_RETRIES_PER_SECOND: f64 = 10.0;
/// Linkerd's default budget window.
pub const DEFAULT_TTL: Dur = Dur::from_secs(10);
/// The policy controller's route retry back-off: minimum.
pub const ROUTE_MIN_BACKOFF: Dur = Dur::from_millis(25);
/// The policy controller's route retry back-off: maximum.
pub const ROUTE_MAX_BACKOFF: Dur = Dur::from_millis(250);

/// The largest `retryRatio` a scenario's ratio budget takes (1000 %).
const MAX_RETRY_RATIO: f64 = 10.0;
/// The largest `minRetriesPerSecond` a scenario's ratio budget takes.
const MAX_MIN_RETRIES_PER_SECOND: f64 = 1e9;
/// The `ttl` a scenario's ratio budget takes, both ends included.
const TTL_RANGE: (Dur, Dur) = (Dur::from_secs(1), Dur::from_secs(60));

const PREFIX: &str = "retry.linkerd.io/";
const ANNOTATIONS: [&str; 4] = ["http", "grpc", "limit", "timeout"];

/// The fields of a ServiceProfile route (`RouteSpec`), in snake_case.
const ROUTE_KEYS: [&str; 5] = [
    "name",
    "condition",
    "response_classes",
    "is_retryable",
    "timeout",
];

/// Imports every Linkerd retry configuration of `text`.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let docs = documents(text, origin)?;
    let mut warnings = vec![];
    let mut refused = Refusals::new(origin);
    let mut policies: Vec<PolicySpec> = vec![];
    for doc in &docs {
        let kind = doc.value.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = doc
            .value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or(kind)
            .to_string();
        let spec = match kind {
            "ServiceProfile" => profile(doc, &name, &mut refused, &mut warnings),
            "HTTPRoute" | "GRPCRoute" | "Service" => {
                annotated(doc, kind, &name, &mut refused, &mut warnings)
            }
            _ => {
                warnings.push(format!(
                    "document {} (line {}): {} holds no Linkerd retry configuration; ignored",
                    doc.index + 1,
                    doc.first_line,
                    if kind.is_empty() {
                        "a document without a kind".into()
                    } else {
                        format!("kind {kind}")
                    }
                ));
                None
            }
        };
        let Some(spec) = spec else { continue };
        let fallback = format!("linkerd-{}", policies.len() + 1);
        push_named(&mut policies, &name, &fallback, spec, &mut warnings);
    }
    refused.check()?;
    if policies.is_empty() {
        // No warning is printed beside an error: the reasons each Linkerd
        // resource gave nothing (a misspelt key, most likely) go in it.
        let why: Vec<&str> = warnings
            .iter()
            .filter(|w| !w.starts_with("document "))
            .map(String::as_str)
            .collect();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(" ({})", why.join("; "))
        };
        return Err(InvalidInput::At(Located::whole(
            origin,
            format!(
                "no Linkerd retry configuration here: expected a ServiceProfile with a retryable \
                 route, or an HTTPRoute, GRPCRoute or Service with retry.linkerd.io \
                 annotations{why}"
            ),
        )));
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

/// A ServiceProfile's budget on the `linkerd` preset. Its routes and its
/// budget are both checked, whatever the other holds, so that one run
/// names every bad value.
fn profile(
    doc: &Doc,
    name: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<PolicySpec> {
    let retryable = routes(doc, name, refused, warnings);
    let budget = match doc.value.pointer("/spec/retryBudget") {
        None => Some((
            DEFAULT_RETRY_RATIO * 100.0,
            DEFAULT_MIN_RETRIES_PER_SECOND,
            DEFAULT_TTL,
        )),
        Some(b) => retry_budget(doc, b, refused, warnings),
    };
    if !retryable {
        warnings.push(format!(
            "ServiceProfile {name}: no route has isRetryable: true, so Linkerd retries nothing; \
             not imported"
        ));
        return None;
    }
    let (percent, per_second, ttl) = budget?;
    Some(PolicySpec {
        preset: Some("linkerd".into()),
        budget: Some(BudgetSpec::Ratio {
            percent,
            min_per_second: per_second,
            ttl,
            deposit: Deposit::NotRetried,
            per_request: None,
            scope: BudgetScope::Client,
        }),
        ..Default::default()
    })
}

/// Whether a route of the ServiceProfile `doc` (named `name`) is
/// retryable. Each route is checked: an `isRetryable` that is not a
/// boolean is refused (Linkerd's schema refuses it), a key a route does
/// not have is warned about with the key it most likely means, and the
/// route `timeout` and `responseClasses`, which a policy cannot hold, are
/// warned about with what the import does instead.
fn routes(doc: &Doc, name: &str, refused: &mut Refusals, warnings: &mut Vec<String>) -> bool {
    let Some(list) = doc.value.pointer("/spec/routes") else {
        return false;
    };
    let Some(list) = list.as_array() else {
        refused.add(doc.bad(
            "spec.routes",
            format!("expected a list of routes, found {}", shown(list)),
        ));
        return false;
    };
    let mut retryable = false;
    for (k, route) in list.iter().enumerate() {
        let path = format!("spec.routes[{k}]");
        let what = "a route: name, condition, isRetryable, timeout, responseClasses";
        if !mapping(doc, route, &path, what, refused) {
            continue;
        }
        let mut unknown = vec![];
        other_keys(
            route,
            &path,
            "a Linkerd ServiceProfile route",
            &ROUTE_KEYS,
            &[],
            &mut unknown,
        );
        warnings.extend(
            unknown
                .into_iter()
                .map(|w| format!("ServiceProfile {name}: {w}")),
        );
        match get(route, "is_retryable") {
            None | Some((_, Value::Bool(false))) => {}
            Some((_, Value::Bool(true))) => retryable = true,
            Some((key, v)) => refused.add(doc.bad(
                &format!("{path}.{key}"),
                format!(
                    "expected true or false, found {}: Linkerd's ServiceProfile schema takes \
                     a boolean",
                    shown(v)
                ),
            )),
        }
        if let Some((key, t)) = get(route, "timeout") {
            let at = format!("{path}.{key}");
            if let Some(d) = duration(doc, t, &at, DurForm::Go, refused) {
                warnings.push(format!(
                    "ServiceProfile {name}: {at}: {d} not imported: Linkerd bounds each request \
                     on the route, its retries included, by it, and a policy has no deadline; \
                     set the scenario's traffic.deadline to \"{d}\" to simulate it (for every \
                     policy)"
                ));
            }
        }
        if let Some((key, _)) = get(route, "response_classes") {
            warnings.push(format!(
                "ServiceProfile {name}: {path}.{key} not imported: they decide which responses \
                 Linkerd counts as failures, and so which it retries; the import retries what \
                 the linkerd preset does, Linkerd's default classes (every 5xx a failure: \
                 unavailable and internal): set the policy's retry_on to match them"
            ));
        }
    }
    retryable
}

/// A ServiceProfile's `spec.retryBudget` `b`: (percent, retries a second,
/// window), Linkerd's defaults where it is silent; `None` when a value is
/// refused (each refusal recorded).
fn retry_budget(
    doc: &Doc,
    b: &Value,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<(f64, f64, Dur)> {
    let path = "spec.retryBudget";
    if !mapping(
        doc,
        b,
        path,
        "retryRatio, minRetriesPerSecond, ttl",
        refused,
    ) {
        return None;
    }
    other_keys(
        b,
        path,
        "a Linkerd RetryBudget",
        &["retry_ratio", "min_retries_per_second", "ttl"],
        &[],
        warnings,
    );
    let mut within = |key: &str, max: f64, what: &str, default: f64| match get(b, key) {
        None => Some(default),
        Some((k, v)) => {
            let p = format!("{path}.{k}");
            number(doc, v, &p, refused).and_then(|r| {
                let why = if r < 0.0 {
                    format!("{} is negative; it is at least 0", Given(r))
                } else if r > max {
                    format!("{} is out of range [0, {}] ({what})", Given(r), Given(max))
                } else {
                    return Some(r);
                };
                refused.add(doc.bad(&p, why));
                None
            })
        }
    };
    let ratio = within(
        "retry_ratio",
        MAX_RETRY_RATIO,
        "a scenario's ratio budget allows at most 10 retries per request",
        DEFAULT_RETRY_RATIO,
    );
    let per_second = within(
        "min_retries_per_second",
        MAX_MIN_RETRIES_PER_SECOND,
        "retries per second",
        DEFAULT_MIN_RETRIES_PER_SECOND,
    );
    let ttl = match get(b, "ttl") {
        None => Some(DEFAULT_TTL),
        Some((k, v)) => {
            let p = format!("{path}.{k}");
            duration(doc, v, &p, DurForm::Go, refused).and_then(|t| {
                if (TTL_RANGE.0..=TTL_RANGE.1).contains(&t) {
                    return Some(t);
                }
                refused.add(doc.bad(
                    &p,
                    format!(
                        "{t} is out of range [{}, {}] (the window a retry budget keeps)",
                        TTL_RANGE.0, TTL_RANGE.1
                    ),
                ));
                None
            })
        }
    };
    // 0.3 × 100 is 30.000000000000004 in binary: the ratio's decimal
    // digits are kept (to 1e-9 percent).
    let percent = (ratio? * 100.0 * 1e9).round() / 1e9;
    Some((percent, per_second?, ttl?))
}

/// The retry annotations of a route or Service, as the proxy runs them.
fn annotated(
    doc: &Doc,
    kind: &str,
    name: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<PolicySpec> {
    let Some(notes) = doc
        .value
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    else {
        warnings.push(format!("{kind} {name}: no annotations; not imported"));
        return None;
    };
    let notes = Annotations {
        doc,
        kind,
        name,
        notes,
    };
    notes.warn_unread(warnings);
    if ANNOTATIONS.iter().all(|k| notes.read(k).is_none()) {
        warnings.push(format!(
            "{kind} {name}: no {PREFIX} annotations Linkerd reads on it; not imported"
        ));
        return None;
    }
    // Linkerd reads a limit of 0 as unset: alone, it is no retry.
    let limit_zero = notes
        .read("limit")
        .is_some_and(|v| v.as_str().map_or(v.to_string(), str::to_string).trim() == "0");
    if limit_zero
        && ["http", "grpc", "timeout"]
            .iter()
            .all(|k| notes.read(k).is_none())
    {
        warnings.push(format!(
            "{kind} {name}: {PREFIX}limit 0 reads as unset in Linkerd, and with no other \
             {PREFIX} annotation it configures no retry; not imported"
        ));
        return None;
    }
    let limit = notes.limit(refused, warnings)?;
    let statuses = notes.statuses(refused, warnings)?;
    if statuses.is_empty() {
        warnings.push(format!(
            "{kind} {name}: none of its retry conditions is a status the simulator produces; \
             not imported"
        ));
        return None;
    }
    Some(envoy_policy(
        limit,
        ROUTE_MIN_BACKOFF,
        ROUTE_MAX_BACKOFF,
        statuses.into_iter().collect(),
        false,
    ))
}

/// The annotations of a route or Service, with the document they are in
/// (for refusals) and its kind and name (for warnings).
struct Annotations<'a> {
    doc: &'a Doc<'a>,
    kind: &'a str,
    name: &'a str,
    notes: &'a serde_json::Map<String, Value>,
}

impl Annotations<'_> {
    /// The value of the retry annotation `key` (`limit`), if written and
    /// valid on this kind of resource.
    fn read(&self, key: &str) -> Option<&Value> {
        if !self.valid(key) {
            return None;
        }
        self.notes.get(&format!("{PREFIX}{key}"))
    }

    /// Whether the retry annotation `key` is valid on this kind: Linkerd's
    /// retries reference says `retry.linkerd.io/http` is "not valid" on a
    /// GRPCRoute and `retry.linkerd.io/grpc` on an HTTPRoute (each route
    /// kind's parser reads its own; a Service takes both).
    fn valid(&self, key: &str) -> bool {
        !matches!(
            (self.kind, key),
            ("HTTPRoute", "grpc") | ("GRPCRoute", "http")
        )
    }

    /// The retry conditions annotation valid on this kind, for messages.
    fn conditions_key(&self) -> String {
        match self.kind {
            "HTTPRoute" => format!("{PREFIX}http"),
            "GRPCRoute" => format!("{PREFIX}grpc"),
            _ => format!("{PREFIX}http or {PREFIX}grpc"),
        }
    }

    /// Where the retry annotation `key` is, for refusals.
    fn path(key: &str) -> String {
        format!("metadata.annotations.{PREFIX}{key}")
    }

    /// The retry annotation `key` as text: `Some(None)` when absent,
    /// `None` when refused (not a string or a number).
    fn text(&self, key: &str, refused: &mut Refusals) -> Option<Option<String>> {
        match self.read(key) {
            None => Some(None),
            Some(Value::String(s)) => Some(Some(s.trim().to_string())),
            Some(Value::Number(n)) => Some(Some(n.to_string())),
            Some(v) => {
                refused.add(self.doc.bad(
                    &Self::path(key),
                    format!("expected a string, found {}", super::yaml_docs::shown(v)),
                ));
                None
            }
        }
    }

    /// Warns about the annotations not imported: `retry.linkerd.io/`
    /// ones Linkerd does not have, and the `timeout.linkerd.io/`
    /// deadlines a policy cannot hold.
    fn warn_unread(&self, warnings: &mut Vec<String>) {
        let (kind, name) = (self.kind, self.name);
        for k in self.notes.keys().filter_map(|k| k.strip_prefix(PREFIX)) {
            if !ANNOTATIONS.contains(&k) {
                warnings.push(format!(
                    "{kind} {name}: {PREFIX}{k}: not a Linkerd retry annotation; ignored"
                ));
            } else if !self.valid(k) {
                let other = if k == "grpc" {
                    "GRPCRoute"
                } else {
                    "HTTPRoute"
                };
                warnings.push(format!(
                    "{kind} {name}: {PREFIX}{k} is not valid on a {kind} (Linkerd reads it on a \
                     {other} or a Service only); ignored"
                ));
            }
        }
        for k in self
            .notes
            .keys()
            .filter(|k| k.starts_with("timeout.linkerd.io/"))
        {
            warnings.push(format!(
                "{kind} {name}: {k} not imported: a policy has no deadline; set the scenario's \
                 traffic.deadline to simulate it"
            ));
        }
    }

    /// `retry.linkerd.io/limit`: the retries after the first attempt
    /// (1 when absent or 0, as in Linkerd); `None` when refused.
    fn limit(&self, refused: &mut Refusals, warnings: &mut Vec<String>) -> Option<u64> {
        let (kind, name) = (self.kind, self.name);
        Some(match self.text("limit", refused)? {
            None => 1,
            Some(s) => match s.parse::<u16>() {
                Ok(0) => {
                    warnings.push(format!(
                        "{kind} {name}: {PREFIX}limit 0 reads as unset in Linkerd: 1 retry"
                    ));
                    1
                }
                Ok(n) => u64::from(n),
                Err(_) => {
                    refused.add(self.doc.bad(
                        &Self::path("limit"),
                        format!("expected a whole number of retries from 0 to 65535, found {s:?}"),
                    ));
                    return None;
                }
            },
        })
    }

    /// The statuses retried: those of `retry.linkerd.io/http` and
    /// `retry.linkerd.io/grpc`, and `deadline_exceeded` when
    /// `retry.linkerd.io/timeout` is set; `None` when refused.
    fn statuses(
        &self,
        refused: &mut Refusals,
        warnings: &mut Vec<String>,
    ) -> Option<BTreeSet<Status>> {
        let (kind, name) = (self.kind, self.name);
        let mut statuses = BTreeSet::new();
        let mut conditions = false;
        if let Some(s) = self.text("http", refused)? {
            conditions = true;
            statuses.extend(self.http_statuses(&s, refused)?);
        }
        if let Some(s) = self.text("grpc", refused)? {
            conditions = true;
            statuses.extend(self.grpc_statuses(&s, refused, warnings)?);
        }
        if let Some(t) = self.read("timeout") {
            let d = duration(self.doc, t, &Self::path("timeout"), DurForm::Go, refused)?;
            statuses.insert(Status::DeadlineExceeded);
            warnings.push(format!(
                "{kind} {name}: {}",
                super::envoy::per_try_warning(
                    "metadata.annotations",
                    &format!("{PREFIX}timeout"),
                    d
                )
            ));
        }
        if !conditions {
            // The policy controller sends no status then, and the proxy
            // retries only the requests that fail without a response.
            statuses.insert(Status::Unavailable);
            warnings.push(format!(
                "{kind} {name}: no {}: Linkerd then retries no response status, only requests \
                 that fail without a response (a refused HTTP/2 stream, no endpoint available{}), \
                 which the simulator answers unavailable: imported as retrying unavailable{}; add \
                 {} to retry server errors",
                self.conditions_key(),
                if self.read("timeout").is_some() {
                    ", the retry timeout"
                } else {
                    ""
                },
                if self.read("timeout").is_some() {
                    " and deadline_exceeded"
                } else {
                    ""
                },
                match kind {
                    "GRPCRoute" => format!("{PREFIX}grpc: unavailable,internal"),
                    _ => format!("{PREFIX}http: 5xx"),
                },
            ));
        }
        Some(statuses)
    }

    /// The statuses of the HTTP retry conditions `s` (the text of
    /// `retry.linkerd.io/http`) that the simulator produces; `None` when
    /// refused.
    fn http_statuses(&self, s: &str, refused: &mut Refusals) -> Option<Vec<Status>> {
        let mut statuses = vec![];
        for cond in s.split(',') {
            let Some((lo, hi)) = http_range(cond) else {
                let why = spaced(cond, http_range(cond.trim()).is_some(), s).unwrap_or_else(|| {
                    format!(
                        "{cond:?} is not a retry condition Linkerd reads (5xx, gateway-error, a \
                         status code or a range such as 500-504)"
                    )
                });
                refused.add(self.doc.bad(&Self::path("http"), why));
                return None;
            };
            statuses.extend((lo..=hi).filter_map(http_status));
        }
        Some(statuses)
    }

    /// The statuses of the gRPC retry conditions `s` (the text of
    /// `retry.linkerd.io/grpc`) that the simulator produces; `None` when
    /// refused.
    fn grpc_statuses(
        &self,
        s: &str,
        refused: &mut Refusals,
        warnings: &mut Vec<String>,
    ) -> Option<Vec<Status>> {
        let (kind, name) = (self.kind, self.name);
        let mut statuses = vec![];
        for cond in s.split(',') {
            let status = match cond.to_ascii_lowercase().as_str() {
                "cancelled" => {
                    warnings.push(format!(
                        "{kind} {name}: {PREFIX}grpc: \"cancelled\" dropped: the simulator has \
                         no such answer"
                    ));
                    None
                }
                "deadline-exceeded" => Some(Status::DeadlineExceeded),
                "internal" => Some(Status::Internal),
                "resource-exhausted" => Some(Status::ResourceExhausted),
                "unavailable" => Some(Status::Unavailable),
                other => {
                    let known = GRPC_CONDITIONS.contains(&other.trim());
                    let why = spaced(cond, known, s).unwrap_or_else(|| {
                        format!(
                            "{cond:?} is not a retry condition Linkerd reads (cancelled, \
                             deadline-exceeded, internal, resource-exhausted, unavailable)"
                        )
                    });
                    refused.add(self.doc.bad(&Self::path("grpc"), why));
                    return None;
                }
            };
            statuses.extend(status);
        }
        Some(statuses)
    }
}

/// The gRPC retry conditions Linkerd reads.
const GRPC_CONDITIONS: [&str; 5] = [
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// The refusal of the retry condition `cond` of the list `list` when what
/// is wrong with it is white space around a condition Linkerd reads
/// (`known`: `cond` trimmed is one): Linkerd splits the list at each `,`
/// and reads each piece as it is, so `"5xx, 503"` holds `" 503"`, which
/// it refuses. `None` when `cond` is wrong otherwise.
fn spaced(cond: &str, known: bool, list: &str) -> Option<String> {
    if !known || cond == cond.trim() {
        return None;
    }
    let joined: Vec<&str> = list.split(',').map(str::trim).collect();
    Some(format!(
        "{cond:?} has white space around it: Linkerd splits the list at each `,` without \
         trimming, and refuses {cond:?}; write {:?}",
        joined.join(",")
    ))
}

/// An HTTP retry condition as Linkerd's policy controller reads it.
fn http_range(cond: &str) -> Option<(u64, u64)> {
    let code = |s: &str| s.parse::<u64>().ok().filter(|c| (100..600).contains(c));
    if cond.eq_ignore_ascii_case("5xx") {
        return Some((500, 599));
    }
    if cond.eq_ignore_ascii_case("gateway-error") {
        return Some((502, 504));
    }
    if let Some(c) = code(cond) {
        return Some((c, c));
    }
    let (a, b) = cond.split_once('-')?;
    let (a, b) = (code(a)?, code(b)?);
    (a <= b).then_some((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::BackoffSpec;

    /// A ServiceProfile of one route, `route` being the route's keys
    /// (indented four spaces), and `budget` the lines of a retryBudget.
    fn profile_with(route: &str, budget: &str) -> String {
        format!(
            "apiVersion: linkerd.io/v1alpha2\nkind: ServiceProfile\nmetadata:\n  name: sp\n\
             spec:\n{budget}  routes:\n  - name: GET /a\n    condition: {{method: GET}}\n{route}"
        )
    }

    /// An `isRetryable` that is not a boolean is refused where it is
    /// written, and a bad retryBudget in the same profile is refused with
    /// it.
    #[test]
    fn a_route_is_retryable_only_by_a_boolean() {
        let budget = "  retryBudget:\n    retryRatio: -1\n";
        // (A bare `yes` is YAML 1.1's true, as kubectl reads it too.)
        for value in ["\"yes\"", "1", "\"true\""] {
            let text = profile_with(&format!("    isRetryable: {value}\n"), budget);
            let msg = import_str(&text, "sp.yaml").unwrap_err().to_string();
            let lines: Vec<&str> = msg.lines().collect();
            assert_eq!(lines.len(), 2, "{value}: {msg}");
            assert!(
                lines[0].starts_with(
                    "sp.yaml:11:18: spec.routes[0].isRetryable: expected true \
                     or false, found"
                ),
                "{value}: {msg}"
            );
            assert!(
                lines[1].starts_with("sp.yaml:7:17: spec.retryBudget.retryRatio: -1 is negative"),
                "{value}: {msg}"
            );
        }
        // In the second route, placed there.
        let text = profile_with(
            "    isRetryable: true\n  - name: GET /b\n    isRetryable: 2\n",
            "",
        );
        let msg = import_str(&text, "sp.yaml").unwrap_err().to_string();
        assert!(
            msg.starts_with("sp.yaml:11:18: spec.routes[1].isRetryable: "),
            "{msg}"
        );
    }

    /// A misspelt route key is warned about with the key it most likely
    /// is; when it leaves nothing to import, the error says so, and a bad
    /// retryBudget is still refused.
    #[test]
    fn a_misspelt_route_key_is_named() {
        let text = profile_with("    isRetryabel: true\n", "");
        let msg = import_str(&text, "sp.yaml").unwrap_err().to_string();
        assert!(
            msg.starts_with("sp.yaml: no Linkerd retry configuration here")
                && msg.contains(
                    "ServiceProfile sp: spec.routes[0].isRetryabel: not a Linkerd ServiceProfile \
                     route field; ignored (did you mean `isRetryable`?)"
                )
                && msg.contains("ServiceProfile sp: no route has isRetryable: true"),
            "{msg}"
        );
        let text = profile_with("    isRetryabel: true\n", "  retryBudget:\n    ttl: 0.5s\n");
        let msg = import_str(&text, "sp.yaml").unwrap_err().to_string();
        assert!(
            msg.starts_with("sp.yaml:7:10: spec.retryBudget.ttl: 500ms is out of range"),
            "{msg}"
        );
        // Beside a retryable route, the misspelling is a warning.
        let text = profile_with("    isRetryable: true\n    timout: 2s\n", "");
        let imp = import_str(&text, "sp.yaml").unwrap();
        assert!(
            imp.warnings.iter().any(|w| w.ends_with(
                "spec.routes[0].timout: not a Linkerd ServiceProfile route \
                     field; ignored (did you mean `timeout`?)"
            )),
            "{:?}",
            imp.warnings
        );
    }

    /// A route's `timeout` and `responseClasses` cannot be held by a
    /// policy: each is warned about, with what the import does instead.
    #[test]
    fn route_timeouts_and_response_classes_are_warned_about() {
        let text = profile_with(
            "    isRetryable: true\n    timeout: 300ms\n    responseClasses:\n    - \
             condition: {status: {min: 500, max: 599}}\n      isFailure: true\n",
            "",
        );
        let imp = import_str(&text, "sp.yaml").unwrap();
        assert_eq!(imp.policies[0].preset.as_deref(), Some("linkerd"));
        let w = imp.warnings.join("\n");
        assert!(
            w.contains(
                "ServiceProfile sp: spec.routes[0].timeout: 300ms not imported: Linkerd bounds \
                 each request on the route, its retries included, by it, and a policy has no \
                 deadline; set the scenario's traffic.deadline to \"300ms\""
            ),
            "{w}"
        );
        assert!(
            w.contains(
                "ServiceProfile sp: spec.routes[0].responseClasses not imported: they decide \
                 which responses Linkerd counts as failures, and so which it retries"
            ),
            "{w}"
        );
        assert_eq!(imp.warnings.len(), 2, "{w}");
        // A timeout Linkerd would not read is refused.
        let text = profile_with("    isRetryable: true\n    timeout: soon\n", "");
        let msg = import_str(&text, "sp.yaml").unwrap_err().to_string();
        assert!(
            msg.starts_with("sp.yaml:10:14: spec.routes[0].timeout: "),
            "{msg}"
        );
    }

    /// A route with retry annotations, `notes` being its annotation lines
    /// (indented four spaces).
    fn route_with(kind: &str, notes: &str) -> String {
        format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: r\n  \
             annotations:\n{notes}spec: {{}}\n"
        )
    }

    /// A limit alone is a retry in Linkerd, on its default conditions:
    /// no response status, only requests that fail without a response,
    /// which the simulator answers `unavailable`.
    #[test]
    fn a_limit_alone_retries_requests_without_a_response() {
        for kind in ["HTTPRoute", "GRPCRoute", "Service"] {
            let imp = import_str(
                &route_with(kind, "    retry.linkerd.io/limit: \"3\"\n"),
                "r.yaml",
            )
            .unwrap();
            let p = &imp.policies[0];
            assert_eq!(p.max_attempts, Some(4), "{kind}");
            assert_eq!(p.retry_on, Some(vec![Status::Unavailable]), "{kind}");
            let w = imp.warnings.join("\n");
            assert!(
                w.contains(
                    "Linkerd then retries no response status, only requests that fail \
                     without a response"
                ) && w.contains("imported as retrying unavailable;"),
                "{kind}: {w}"
            );
        }
        // With a retry timeout, timed-out attempts are retried as well.
        let imp = import_str(
            &route_with(
                "HTTPRoute",
                "    retry.linkerd.io/limit: \"2\"\n    retry.linkerd.io/timeout: 1s\n",
            ),
            "r.yaml",
        )
        .unwrap();
        assert_eq!(
            imp.policies[0].retry_on,
            Some(vec![Status::Unavailable, Status::DeadlineExceeded])
        );
        // A limit of 0 alone reads as unset: no retry configured.
        let msg = import_str(
            &route_with("HTTPRoute", "    retry.linkerd.io/limit: \"0\"\n"),
            "r.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(msg.contains("limit 0 reads as unset in Linkerd"), "{msg}");
    }

    /// `retry.linkerd.io/grpc` on an HTTPRoute and `retry.linkerd.io/http`
    /// on a GRPCRoute are not valid there: warned about and ignored.
    #[test]
    fn a_condition_annotation_of_the_other_route_kind_is_ignored() {
        let notes = "    retry.linkerd.io/http: 5xx\n    retry.linkerd.io/grpc: internal\n";
        let imp = import_str(&route_with("HTTPRoute", notes), "r.yaml").unwrap();
        assert_eq!(
            imp.policies[0].retry_on,
            Some(vec![
                Status::Unavailable,
                Status::DeadlineExceeded,
                Status::Internal
            ])
        );
        assert!(
            imp.warnings.iter().any(|w| {
                w
                == "HTTPRoute r: retry.linkerd.io/grpc is not valid on a HTTPRoute (Linkerd reads \
                    it on a GRPCRoute or a Service only); ignored"
            }),
            "{:?}",
            imp.warnings
        );
        let imp = import_str(&route_with("GRPCRoute", notes), "r.yaml").unwrap();
        assert_eq!(imp.policies[0].retry_on, Some(vec![Status::Internal]));
        assert!(
            imp.warnings.iter().any(|w| w.starts_with(
                "GRPCRoute r: retry.linkerd.io/http is not valid on a \
                     GRPCRoute"
            )),
            "{:?}",
            imp.warnings
        );
        // A Service takes both.
        let imp = import_str(&route_with("Service", notes), "r.yaml").unwrap();
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
        // The other kind's annotation alone is no retry configuration.
        let msg = import_str(
            &route_with("HTTPRoute", "    retry.linkerd.io/grpc: internal\n"),
            "r.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("HTTPRoute r: no retry.linkerd.io/ annotations Linkerd reads on it"),
            "{msg}"
        );
    }

    /// White space around a condition is the problem named: Linkerd
    /// splits the list at `,` without trimming.
    #[test]
    fn a_space_after_a_comma_is_named_as_the_problem() {
        let msg = import_str(
            &route_with("HTTPRoute", "    retry.linkerd.io/http: \"5xx, 503\"\n"),
            "r.yaml",
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            msg,
            "r.yaml:6:28: metadata.annotations.retry.linkerd.io/http: \" 503\" has white space \
             around it: Linkerd splits the list at each `,` without trimming, and refuses \
             \" 503\"; write \"5xx,503\""
        );
        let msg = import_str(
            &route_with(
                "GRPCRoute",
                "    retry.linkerd.io/grpc: internal, unavailable\n",
            ),
            "r.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("\" unavailable\" has white space around it")
                && msg.ends_with("write \"internal,unavailable\""),
            "{msg}"
        );
        // Another mistake is named as such.
        let msg = import_str(
            &route_with("HTTPRoute", "    retry.linkerd.io/http: \"5xx, often\"\n"),
            "r.yaml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            msg.contains("\" often\" is not a retry condition Linkerd reads"),
            "{msg}"
        );
    }

    const FILE: &str = "\
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: books-create
  annotations:
    retry.linkerd.io/http: 5xx,429
    retry.linkerd.io/limit: \"3\"
    retry.linkerd.io/timeout: 300ms
    timeout.linkerd.io/request: 2s
spec:
  parentRefs: [{name: books, kind: Service, group: core}]
---
apiVersion: linkerd.io/v1alpha2
kind: ServiceProfile
metadata:
  name: authors.booksapp.svc.cluster.local
spec:
  retryBudget:
    retryRatio: 0.5
    minRetriesPerSecond: 5
    ttl: 30s
  routes:
  - name: GET /authors.json
    condition: {method: GET, pathRegex: /authors\\.json}
    isRetryable: true
";

    #[test]
    fn annotations_and_a_service_profile_give_two_policies() {
        let imp = import_str(FILE, "l.yaml").unwrap();
        let route = &imp.policies[0];
        assert_eq!(route.name, "books-create");
        assert_eq!(route.max_attempts, Some(4));
        assert_eq!(
            route.retry_on,
            Some(vec![
                Status::Unavailable,
                Status::ResourceExhausted,
                Status::DeadlineExceeded,
                Status::Internal
            ])
        );
        assert_eq!(
            route.backoff,
            Some(BackoffSpec::Exponential {
                initial: Dur::from_millis(25),
                multiplier: 2.0,
                max: Some(Dur::from_millis(250)),
                max_doublings: None
            })
        );
        let sp = &imp.policies[1];
        assert_eq!(sp.name, "authors.booksapp.svc.cluster.local");
        assert_eq!(sp.preset.as_deref(), Some("linkerd"));
        assert_eq!(
            sp.budget,
            Some(BudgetSpec::Ratio {
                percent: 50.0,
                min_per_second: 5.0,
                ttl: Dur::from_secs(30),
                deposit: Deposit::NotRetried,
                per_request: None,
                scope: BudgetScope::Client
            })
        );
        let w = imp.warnings.join("\n");
        assert!(w.contains("timeout.linkerd.io/request not imported"), "{w}");
    }

    #[test]
    fn bad_annotations_are_refused_naming_them() {
        let text = FILE
            .replace("5xx,429", "5xx,often")
            .replace("ttl: 30s", "ttl: -30s");
        let msg = import_str(&text, "l.yaml").unwrap_err().to_string();
        assert!(
            msg.contains("metadata.annotations.retry.linkerd.io/http: \"often\""),
            "{msg}"
        );
        assert!(
            msg.contains("spec.retryBudget.ttl: \"-30s\" is negative"),
            "{msg}"
        );
    }
}
