//! Envoy YAML → one policy per route (or virtual host) `retry_policy`, with
//! the cluster's `circuit_breakers` retry limit as a `concurrency` budget.
//!
//! The file may be a `RouteConfiguration`, a cluster, a bootstrap with
//! `static_resources`, or several of them as YAML documents; keys are read
//! in snake_case or in the proto's camelCase JSON form. The mapping, with
//! each default and its source, is the "Import → Envoy" table of
//! `docs/policies.md`:
//!
//! - `num_retries` (default 1) + 1 → `max_attempts`;
//! - `retry_back_off.base_interval` (default 25 ms, at least 1 ms) and
//!   `max_interval` (default 10 × base) → `backoff.exponential` with
//!   multiplier 2 and `jitter: full`;
//! - `retry_on` conditions and `retriable_status_codes` → `retry_on`
//!   statuses (an unknown condition is refused; one the simulator cannot
//!   produce is dropped with a warning);
//! - `rate_limited_retry_back_off` → `honor_retry_after: true`;
//! - the cluster's DEFAULT-priority `retry_budget` (20 %, min 3) or, without
//!   one, `max_retries` (default 3) → `budget.concurrency`.

use super::push_named;
use super::yaml_docs::{documents, duration, get, number, other_keys, string, whole, Doc, DurForm};
use super::{Imported, Refusals};
use crate::policy::{BackoffSpec, BudgetScope, BudgetSpec, JitterSpec, PolicySpec};
use crate::scenario::error::{InvalidInput, Located};
use crate::status::Status;
use crate::time::Dur;
use serde_json::Value;
use std::collections::BTreeSet;

/// Envoy's default base interval between retries (`RetryPolicy.retry_back_off`).
pub const DEFAULT_BASE_INTERVAL: Dur = Dur::from_millis(25);
/// Envoy's default number of retries (`RetryPolicy.num_retries`).
pub const DEFAULT_NUM_RETRIES: u64 = 1;
/// Envoy's default retry budget: percent of active requests.
pub const DEFAULT_BUDGET_PERCENT: f64 = 20.0;
/// Envoy's default retry budget: minimum retry concurrency.
pub const DEFAULT_MIN_RETRY_CONCURRENCY: u64 = 3;
/// Envoy's default `max_retries` circuit breaker (concurrent retries).
pub const DEFAULT_MAX_RETRIES: u64 = 3;

/// The `RetryPolicy` fields read.
const RETRY_POLICY_KEYS: [&str; 6] = [
    "retry_on",
    "num_retries",
    "per_try_timeout",
    "retry_back_off",
    "rate_limited_retry_back_off",
    "retriable_status_codes",
];
/// `RetryPolicy` fields Envoy reads that a policy cannot express.
const RETRY_POLICY_UNSUPPORTED: [&str; 7] = [
    "retry_priority",
    "retry_host_predicate",
    "retry_options_predicates",
    "host_selection_retry_max_attempts",
    "retriable_headers",
    "retriable_request_headers",
    "per_try_idle_timeout",
];

/// Where a `retry_policy` was found.
struct Site<'v> {
    doc: usize,
    path: String,
    value: &'v Value,
    /// The `name`s of the mappings around it, outermost first.
    names: Vec<String>,
    /// The `cluster` of the route action holding it.
    cluster: Option<String>,
    /// The route action's `timeout`.
    timeout: Option<&'v Value>,
}

/// A cluster (an entry of a `clusters` list, or a mapping with
/// `circuit_breakers`).
struct Cluster<'v> {
    doc: usize,
    path: String,
    name: Option<String>,
    value: &'v Value,
}

/// Imports every Envoy retry policy of `text`; `origin` names the file.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let docs = documents(text, origin)?;
    let mut warnings = vec![];
    let (sites, clusters) = sites_and_clusters(&docs, &mut warnings);
    let mut refused = Refusals::new(origin);
    let budgets: Vec<Option<BudgetSpec>> = clusters
        .iter()
        .map(|c| cluster_budget(&docs[c.doc], c, &mut refused, &mut warnings))
        .collect();
    let mut policies: Vec<PolicySpec> = vec![];
    for (n, site) in sites.iter().enumerate() {
        let doc = &docs[site.doc];
        let Some(mut spec) = policy(doc, site.value, &site.path, &mut refused, &mut warnings)
        else {
            continue;
        };
        if let Some(t) = site.timeout {
            let route = site.path.trim_end_matches(".retry_policy");
            let at = format!("{route}.timeout");
            // "0s" turns Envoy's route timeout off: nothing to warn about.
            let off = t.as_str().map(str::trim).is_some_and(|s| {
                !s.starts_with('-')
                    && s.ends_with('s')
                    && crate::time::parse_duration(s).is_ok_and(|d| d.ns() == 0)
            });
            let timeout = (!off)
                .then(|| duration(doc, t, &at, DurForm::Proto, &mut refused))
                .flatten();
            if let Some(d) = timeout {
                let d = crate::time::format_duration(d.ns());
                warnings.push(format!(
                    "{at}: {d} not imported: a policy has no deadline; set the scenario's \
                     traffic.deadline to \"{d}\" to simulate it"
                ));
            }
        }
        if let Some(k) = site_cluster(site, &clusters, &mut warnings) {
            spec.budget = budgets[k].clone();
        }
        let raw = site
            .names
            .iter()
            .rev()
            .take(2)
            .rev()
            .cloned()
            .collect::<Vec<_>>()
            .join(".");
        push_named(
            &mut policies,
            &raw,
            &format!("envoy-{}", n + 1),
            spec,
            &mut warnings,
        );
    }
    if sites.is_empty() {
        cluster_policies(&clusters, &budgets, &mut policies, &mut warnings);
    }
    refused.check()?;
    if policies.is_empty() {
        let why = if sites.is_empty() {
            "no Envoy retry configuration here: expected a route's retry_policy \
             (RouteConfiguration, virtual host, route) or a cluster's circuit_breakers"
        } else {
            "nothing to import: every retry_policy here retries only on conditions the \
             simulator does not produce (see the warnings)"
        };
        return Err(InvalidInput::At(Located::whole(origin, why)));
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

/// The retry policies and clusters of every document of `docs`, with a
/// warning for each document that has neither.
fn sites_and_clusters<'v>(
    docs: &'v [Doc],
    warnings: &mut Vec<String>,
) -> (Vec<Site<'v>>, Vec<Cluster<'v>>) {
    let mut sites = vec![];
    let mut clusters = vec![];
    for (i, doc) in docs.iter().enumerate() {
        let (before, cl) = (sites.len(), clusters.len());
        let mut hedges = vec![];
        walk(
            &doc.value,
            "",
            i,
            &mut vec![],
            &mut sites,
            &mut clusters,
            &mut hedges,
        );
        for h in hedges {
            warnings.push(format!(
                "{h}: not imported: Envoy's hedging (a retry sent on a per-try timeout while \
                 the first attempt goes on) is not simulated for an Envoy policy; a scenario \
                 policy's `hedging` block sends hedges on a fixed delay instead"
            ));
        }
        if sites.len() == before && clusters.len() == cl {
            warnings.push(format!(
                "document {} (line {}): no Envoy retry_policy or cluster; ignored",
                doc.index + 1,
                doc.first_line
            ));
        }
    }
    (sites, clusters)
}

/// The index in `clusters` of the cluster whose retry limit applies to
/// the route of `site`: the one its route action names, or, when it names
/// none, the file's only cluster; `None`, with a warning, when there is no
/// such cluster.
fn site_cluster(site: &Site, clusters: &[Cluster], warnings: &mut Vec<String>) -> Option<usize> {
    let named = site
        .cluster
        .as_ref()
        .and_then(|c| clusters.iter().position(|k| k.name.as_ref() == Some(c)));
    // A route that names its cluster takes that cluster's limit only:
    // Envoy applies a cluster's circuit breakers to that cluster.
    let which = match site.cluster {
        Some(_) => named,
        None => (clusters.len() == 1).then_some(0),
    };
    match which {
        Some(k) => return Some(k),
        None if clusters.is_empty() => warnings.push(format!(
            "{}: no cluster in the file: its circuit breaker (Envoy's default max_retries \
             {DEFAULT_MAX_RETRIES} concurrent retries, or a retry_budget) is not imported",
            site.path
        )),
        None => warnings.push(format!(
            "{}: the route's cluster {} is not in the file: no retry budget imported",
            site.path,
            site.cluster.as_deref().unwrap_or("(none named)")
        )),
    }
    None
}

/// For a file of clusters only: their budgets (`budgets`, one per
/// cluster) on the `envoy` preset, one policy per cluster with a budget.
fn cluster_policies(
    clusters: &[Cluster],
    budgets: &[Option<BudgetSpec>],
    policies: &mut Vec<PolicySpec>,
    warnings: &mut Vec<String>,
) {
    for (c, budget) in clusters.iter().zip(budgets) {
        let Some(budget) = budget else { continue };
        warnings.push(format!(
            "{}: no route retry_policy in the file: the `envoy` preset's retry settings \
             are assumed beside the cluster's retry limit",
            c.path
        ));
        let raw = c.name.as_deref().unwrap_or("");
        let spec = PolicySpec {
            preset: Some("envoy".into()),
            budget: Some(budget.clone()),
            ..Default::default()
        };
        push_named(policies, raw, "envoy-cluster", spec, warnings);
    }
}

/// Collects the retry policies, clusters and the paths of hedge policies
/// under `v`.
fn walk<'v>(
    v: &'v Value,
    path: &str,
    doc: usize,
    names: &mut Vec<String>,
    sites: &mut Vec<Site<'v>>,
    clusters: &mut Vec<Cluster<'v>>,
    hedges: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let named = map.get("name").and_then(Value::as_str);
            if let Some(n) = named {
                names.push(n.to_string());
            }
            let breakers = map
                .keys()
                .any(|k| super::yaml_docs::snake(k) == "circuit_breakers");
            if breakers || last_is_clusters(path) {
                clusters.push(Cluster {
                    doc,
                    path: if path.is_empty() {
                        "(top)".into()
                    } else {
                        path.into()
                    },
                    name: named.map(str::to_string),
                    value: v,
                });
            }
            for (k, child) in map {
                let here = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if super::yaml_docs::snake(k) == "retry_policy" && child.is_object() {
                    sites.push(Site {
                        doc,
                        path: here,
                        value: child,
                        names: names.clone(),
                        cluster: map
                            .get("cluster")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        timeout: map.get("timeout"),
                    });
                } else if super::yaml_docs::snake(k) == "hedge_policy" {
                    hedges.push(here);
                } else if super::yaml_docs::snake(k) != "circuit_breakers" {
                    walk(child, &here, doc, names, sites, clusters, hedges);
                }
            }
            if named.is_some() {
                names.pop();
            }
        }
        Value::Array(list) => {
            for (i, child) in list.iter().enumerate() {
                walk(
                    child,
                    &format!("{path}[{i}]"),
                    doc,
                    names,
                    sites,
                    clusters,
                    hedges,
                );
            }
        }
        _ => {}
    }
}

/// Whether `path` ends in an entry of a `clusters` list.
fn last_is_clusters(path: &str) -> bool {
    path.rsplit('.')
        .next()
        .is_some_and(|last| last.starts_with("clusters["))
}

/// The retry limit of a cluster's DEFAULT-priority thresholds, as a
/// `concurrency` budget.
fn cluster_budget(
    doc: &Doc,
    c: &Cluster,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<BudgetSpec> {
    let Some((here, t)) = default_thresholds(doc, c, refused, warnings)? else {
        return Some(BudgetSpec::Concurrency {
            percent: 0.0,
            min: DEFAULT_MAX_RETRIES as u32,
            scope: BudgetScope::Client,
        });
    };
    other_keys(
        t,
        &here,
        "an Envoy Thresholds",
        &["priority", "max_retries", "retry_budget"],
        &[
            "max_connections",
            "max_pending_requests",
            "max_requests",
            "track_remaining",
            "max_connection_pools",
        ],
        warnings,
    );
    if let Some((rb_key, rb)) = get(t, "retry_budget") {
        let budget = retry_budget(doc, rb, &format!("{here}.{rb_key}"), refused, warnings);
        if get(t, "max_retries").is_some() {
            warnings.push(format!(
                "{here}.max_retries: not imported: the retry_budget beside it overrides it \
                 (as in Envoy)"
            ));
        }
        return budget;
    }
    let max = match get(t, "max_retries") {
        None => Some(DEFAULT_MAX_RETRIES),
        Some((k, v)) => whole(doc, v, &format!("{here}.{k}"), u64::from(u32::MAX), refused),
    }?;
    Some(BudgetSpec::Concurrency {
        percent: 0.0,
        min: max as u32,
        scope: BudgetScope::Client,
    })
}

/// The first DEFAULT-priority thresholds of the cluster `c`'s
/// `circuit_breakers`, with where they are, the others named in a
/// warning: `Some(None)` when it has none, `None` when refused.
fn default_thresholds<'v>(
    doc: &Doc,
    c: &Cluster<'v>,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<Option<(String, &'v Value)>> {
    let base = if c.path == "(top)" {
        String::new()
    } else {
        format!("{}.", c.path)
    };
    let mut chosen: Option<(String, &Value)> = None;
    if let Some((cb_key, cb)) = get(c.value, "circuit_breakers") {
        other_keys(
            cb,
            &format!("{base}{cb_key}"),
            "an Envoy CircuitBreakers",
            &["thresholds"],
            &["per_host_thresholds"],
            warnings,
        );
        if let Some((t_key, list)) = get(cb, "thresholds") {
            let Some(list) = list.as_array() else {
                refused.add(doc.bad(
                    &format!("{base}{cb_key}.{t_key}"),
                    "expected a list of thresholds, one per priority",
                ));
                return None;
            };
            for (i, t) in list.iter().enumerate() {
                let here = format!("{base}{cb_key}.{t_key}[{i}]");
                let priority = get(t, "priority")
                    .and_then(|(_, p)| p.as_str())
                    .unwrap_or("DEFAULT");
                if priority != "DEFAULT" || chosen.is_some() {
                    warnings.push(format!(
                        "{here}: priority {priority} not imported: the simulator's requests \
                         all have the DEFAULT priority (the first DEFAULT thresholds apply)"
                    ));
                    continue;
                }
                chosen = Some((here, t));
            }
        }
    }
    Some(chosen)
}

/// A thresholds' `retry_budget` `rb` (at `rb_path`) as a `concurrency`
/// budget, Envoy's defaults where absent; `None` when refused.
fn retry_budget(
    doc: &Doc,
    rb: &Value,
    rb_path: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<BudgetSpec> {
    other_keys(
        rb,
        rb_path,
        "an Envoy RetryBudget",
        &["budget_percent", "min_retry_concurrency"],
        &[],
        warnings,
    );
    let percent = match get(rb, "budget_percent") {
        None => Some(DEFAULT_BUDGET_PERCENT),
        Some((k, v)) => {
            let p = format!("{rb_path}.{k}");
            // A `type.v3.Percent`: `{value: 25}`.
            let inner = get(v, "value").map(|(_, x)| x).unwrap_or(v);
            number(doc, inner, &p, refused).and_then(|x| {
                if (0.0..=100.0).contains(&x) {
                    Some(x)
                } else {
                    refused.add(doc.bad(&p, format!("{x} is not a percentage (0 to 100)")));
                    None
                }
            })
        }
    };
    let min = match get(rb, "min_retry_concurrency") {
        None => Some(DEFAULT_MIN_RETRY_CONCURRENCY),
        Some((k, v)) => whole(
            doc,
            v,
            &format!("{rb_path}.{k}"),
            u64::from(u32::MAX),
            refused,
        ),
    };
    Some(BudgetSpec::Concurrency {
        percent: percent?,
        min: min? as u32,
        scope: BudgetScope::Client,
    })
}

/// An Envoy `RetryPolicy` at `path` of `doc` as a policy (its name left
/// empty); `None` when refused (recorded) or when it retries nothing
/// (warned).
fn policy(
    doc: &Doc,
    rp: &Value,
    path: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<PolicySpec> {
    other_keys(
        rp,
        path,
        "an Envoy RetryPolicy",
        &RETRY_POLICY_KEYS,
        &RETRY_POLICY_UNSUPPORTED,
        warnings,
    );
    let num_retries = match get(rp, "num_retries") {
        None => Some(DEFAULT_NUM_RETRIES),
        // Envoy takes any uint32; the simulator counts attempts (retries
        // + 1) in one.
        Some((k, v)) => whole(
            doc,
            v,
            &format!("{path}.{k}"),
            u64::from(u32::MAX) - 1,
            refused,
        ),
    };
    let codes = match get(rp, "retriable_status_codes") {
        None => Some(vec![]),
        Some((k, v)) => status_codes(doc, v, &format!("{path}.{k}"), refused),
    };
    let (base, max) = back_off(doc, rp, path, refused, warnings);
    if let Some((k, t)) = get(rp, "per_try_timeout") {
        if let Some(d) = duration(doc, t, &format!("{path}.{k}"), DurForm::Proto, refused) {
            warnings.push(per_try_warning(path, k, d));
        }
    }
    let rate_limited = get(rp, "rate_limited_retry_back_off")
        .map(|(k, v)| rate_limited(doc, v, &format!("{path}.{k}"), refused, warnings));
    let statuses = match get(rp, "retry_on") {
        None => {
            warnings.push(format!(
                "{path}: no retry_on, so Envoy retries nothing (unless a request carries \
                 x-envoy-retry-on): imported as one attempt"
            ));
            return Some(PolicySpec {
                max_attempts: Some(1),
                ..Default::default()
            });
        }
        Some((k, v)) => {
            let p = format!("{path}.{k}");
            let text = string(doc, v, &p, refused)?;
            retry_on(
                doc,
                text,
                codes.as_deref().unwrap_or_default(),
                &p,
                refused,
                warnings,
            )?
        }
    };
    let (num_retries, _, base, max) = (num_retries?, codes?, base?, max?);
    if statuses.is_empty() {
        warnings.push(format!(
            "{path}: skipped: none of its retry_on conditions is a status the simulator \
             produces"
        ));
        return None;
    }
    Some(envoy_policy(
        num_retries,
        base,
        max,
        statuses,
        rate_limited.flatten().is_some(),
    ))
}

/// The warning for an attempt timeout a policy cannot hold.
pub(crate) fn per_try_warning(path: &str, key: &str, d: Dur) -> String {
    format!(
        "{path}.{key}: {} not imported: a policy has no attempt timeout; set the scenario's \
         traffic.attempt_timeout to \"{}\" to simulate it (for every policy)",
        crate::time::format_duration(d.ns()),
        crate::time::format_duration(d.ns())
    )
}

/// The policy Envoy runs: `num_retries` + 1 attempts, `U(0, min(base ·
/// 2^(k−1), max))`, on `statuses`.
pub(crate) fn envoy_policy(
    num_retries: u64,
    base: Dur,
    max: Dur,
    statuses: Vec<Status>,
    honor_retry_after: bool,
) -> PolicySpec {
    PolicySpec {
        max_attempts: Some(
            i64::try_from(num_retries)
                .unwrap_or(i64::MAX)
                .saturating_add(1),
        ),
        backoff: Some(BackoffSpec::Exponential {
            initial: base,
            multiplier: 2.0,
            max: Some(max),
            max_doublings: None,
        }),
        jitter: Some(JitterSpec::Full),
        retry_on: Some(statuses),
        honor_retry_after: Some(honor_retry_after),
        ..Default::default()
    }
}

/// `retry_back_off`: the base and the maximum interval, Envoy's defaults
/// where absent.
fn back_off(
    doc: &Doc,
    rp: &Value,
    path: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> (Option<Dur>, Option<Dur>) {
    let Some((k, bo)) = get(rp, "retry_back_off") else {
        return (
            Some(DEFAULT_BASE_INTERVAL),
            Some(Dur(DEFAULT_BASE_INTERVAL.ns() * 10)),
        );
    };
    let bo_path = format!("{path}.{k}");
    other_keys(
        bo,
        &bo_path,
        "an Envoy RetryBackOff",
        &["base_interval", "max_interval"],
        &[],
        warnings,
    );
    let base = match get(bo, "base_interval") {
        None => {
            // Placed on the retry_back_off itself: a missing key has no line.
            refused.add(doc.bad(
                &bo_path,
                "base_interval is missing: Envoy requires it in a retry_back_off",
            ));
            None
        }
        Some((k, v)) => duration(doc, v, &format!("{bo_path}.{k}"), DurForm::Proto, refused)
            .map(|d| Dur(d.ns().max(1_000_000))),
    };
    let max = match get(bo, "max_interval") {
        None => base.map(|b| Dur(b.ns().saturating_mul(10))),
        Some((k, v)) => {
            let p = format!("{bo_path}.{k}");
            let m = duration(doc, v, &p, DurForm::Proto, refused);
            match (base, m) {
                (Some(b), Some(m)) if m < b => {
                    refused.add(doc.bad(
                        &p,
                        "must be at least base_interval (Envoy refuses a smaller max_interval)",
                    ));
                    None
                }
                _ => m,
            }
        }
    };
    (base, max)
}

/// `rate_limited_retry_back_off`: `Some` when Envoy would honour the
/// reset headers.
fn rate_limited(
    doc: &Doc,
    v: &Value,
    path: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<()> {
    other_keys(
        v,
        path,
        "an Envoy RateLimitedRetryBackOff",
        &["reset_headers", "max_interval"],
        &[],
        warnings,
    );
    let headers = get(v, "reset_headers");
    if headers.is_none_or(|(_, h)| h.as_array().is_none_or(|h| h.is_empty())) {
        // A missing key has no line: the refusal is placed on its parent.
        let at = match headers {
            Some((k, _)) => format!("{path}.{k}"),
            None => path.to_string(),
        };
        refused.add(doc.bad(
            &at,
            "reset_headers: Envoy requires at least one reset header (such as Retry-After)",
        ));
        return None;
    }
    let max = match get(v, "max_interval") {
        None => Some(Dur::from_secs(300)),
        Some((k, m)) => duration(doc, m, &format!("{path}.{k}"), DurForm::Proto, refused),
    }?;
    warnings.push(format!(
        "{path}: imported as honor_retry_after: true (the wait is at least the server's \
         retry_after); Envoy's jitter of the header's interval (× U(1, 1.5)) and its \
         max_interval {} (a longer interval falls back to the back-off) are not modelled",
        crate::time::format_duration(max.ns())
    ));
    Some(())
}

/// HTTP status codes, each 100..=599.
fn status_codes(doc: &Doc, v: &Value, path: &str, refused: &mut Refusals) -> Option<Vec<u64>> {
    let Some(list) = v.as_array() else {
        refused.add(doc.bad(path, "expected a list of HTTP status codes"));
        return None;
    };
    let mut out = vec![];
    for (i, c) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        let n = whole(doc, c, &p, 599, refused)?;
        if n < 100 {
            refused.add(doc.bad(&p, format!("{n} is not an HTTP status code (100 to 599)")));
            return None;
        }
        out.push(n);
    }
    Some(out)
}

/// The status an HTTP status code stands for in the simulator, if any.
pub(crate) fn http_status(code: u64) -> Option<Status> {
    Some(match code {
        400 => Status::InvalidArgument,
        401 => Status::Unauthenticated,
        403 => Status::PermissionDenied,
        409 => Status::Aborted,
        429 => Status::ResourceExhausted,
        500 => Status::Internal,
        502 | 503 => Status::Unavailable,
        504 => Status::DeadlineExceeded,
        _ => return None,
    })
}

/// Envoy's `retry_on` conditions (`x-envoy-retry-on` and
/// `x-envoy-retry-grpc-on`), each with the statuses it retries.
const CONDITIONS: [(&str, &[Status]); 16] = [
    (
        "5xx",
        &[
            Status::Unavailable,
            Status::DeadlineExceeded,
            Status::Internal,
        ],
    ),
    (
        "gateway-error",
        &[Status::Unavailable, Status::DeadlineExceeded],
    ),
    ("reset", &[Status::Unavailable]),
    ("reset-before-request", &[Status::Unavailable]),
    ("connect-failure", &[Status::Unavailable]),
    ("refused-stream", &[Status::Unavailable]),
    ("http3-post-connect-failure", &[Status::Unavailable]),
    ("retriable-4xx", &[Status::Aborted]),
    ("envoy-ratelimited", &[]),
    ("retriable-headers", &[]),
    ("retriable-status-codes", &[]),
    ("cancelled", &[]),
    ("deadline-exceeded", &[Status::DeadlineExceeded]),
    ("internal", &[Status::Internal]),
    ("resource-exhausted", &[Status::ResourceExhausted]),
    ("unavailable", &[Status::Unavailable]),
];

/// The statuses a comma-separated `retry_on` retries; `codes` are the
/// `retriable_status_codes`, used when `retriable-status-codes` is on.
pub(crate) fn retry_on(
    doc: &Doc,
    text: &str,
    codes: &[u64],
    path: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<Vec<Status>> {
    let mut out = BTreeSet::new();
    let mut ok = true;
    let mut with_codes = false;
    for cond in text.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let Some((_, statuses)) = CONDITIONS.iter().find(|(n, _)| *n == cond) else {
            let names: Vec<&str> = CONDITIONS.iter().map(|(n, _)| *n).collect();
            let hint = super::closest(cond, &names)
                .map(|w| format!(" (did you mean `{w}`?)"))
                .unwrap_or_default();
            refused.add(doc.bad(
                path,
                format!(
                    "{cond:?} is not an Envoy retry_on condition{hint}; Envoy knows {}",
                    names.join(", ")
                ),
            ));
            ok = false;
            continue;
        };
        match cond {
            "retriable-status-codes" => with_codes = true,
            "envoy-ratelimited" | "retriable-headers" | "cancelled" => warnings.push(format!(
                "{path}: {cond:?} dropped: the simulator has no such answer"
            )),
            _ => {}
        }
        out.extend(statuses.iter().copied());
    }
    if with_codes {
        for &c in codes {
            match http_status(c) {
                Some(s) => {
                    out.insert(s);
                }
                None => warnings.push(format!(
                    "{path}: status code {c} dropped: the simulator has no such answer"
                )),
            }
        }
    } else if !codes.is_empty() {
        warnings.push(format!(
            "{path}: retriable_status_codes not imported: Envoy reads them only when retry_on \
             has retriable-status-codes"
        ));
    }
    ok.then(|| out.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str = "\
name: local_route
virtual_hosts:
- name: backend
  domains: [\"*\"]
  routes:
  - name: orders
    match: {prefix: /orders}
    route:
      cluster: orders
      timeout: 2s
      retry_policy:
        retry_on: 5xx,reset,retriable-status-codes
        num_retries: 3
        per_try_timeout: 0.5s
        retriable_status_codes: [429, 404]
        retry_back_off: {base_interval: 0.05s, max_interval: 1s}
---
name: orders
connect_timeout: 1s
circuit_breakers:
  thresholds:
  - priority: DEFAULT
    max_connections: 100
    retry_budget:
      budget_percent: {value: 25}
      min_retry_concurrency: 5
";

    #[test]
    fn a_route_and_its_cluster_give_one_policy_with_the_budget() {
        let imp = import_str(ROUTE, "e.yaml").unwrap();
        assert_eq!(imp.policies.len(), 1);
        let p = &imp.policies[0];
        assert_eq!(p.name, "backend.orders");
        assert_eq!(p.max_attempts, Some(4));
        assert_eq!(
            p.backoff,
            Some(BackoffSpec::Exponential {
                initial: Dur::from_millis(50),
                multiplier: 2.0,
                max: Some(Dur::from_secs(1)),
                max_doublings: None
            })
        );
        assert_eq!(p.jitter, Some(JitterSpec::Full));
        assert_eq!(
            p.retry_on,
            Some(vec![
                Status::Unavailable,
                Status::ResourceExhausted,
                Status::DeadlineExceeded,
                Status::Internal
            ])
        );
        assert_eq!(
            p.budget,
            Some(BudgetSpec::Concurrency {
                percent: 25.0,
                min: 5,
                scope: BudgetScope::Client
            })
        );
        let w = imp.warnings.join("\n");
        for needle in [
            "404 dropped",
            "per_try_timeout: 500ms",
            "timeout",
            "max_connections",
        ] {
            assert!(w.contains(needle), "{needle} in {w}");
        }
    }

    #[test]
    fn absent_fields_take_envoys_defaults() {
        let text = "retry_policy: {retry_on: gateway-error}\n---\nclusters:\n- name: c\n";
        let p = &import_str(text, "e.yaml").unwrap().policies[0];
        assert_eq!(p.max_attempts, Some(2));
        assert_eq!(
            p.backoff,
            Some(BackoffSpec::Exponential {
                initial: Dur::from_millis(25),
                multiplier: 2.0,
                max: Some(Dur::from_millis(250)),
                max_doublings: None
            })
        );
        // No retry_budget: the max_retries circuit breaker, 3 at once.
        assert_eq!(
            p.budget,
            Some(BudgetSpec::Concurrency {
                percent: 0.0,
                min: 3,
                scope: BudgetScope::Client
            })
        );
    }

    #[test]
    fn unknown_fields_are_named_in_a_warning() {
        let text = "retry_policy:\n  retry_on: 5xx\n  num_retrys: 4\n  retry_back_off: {base_interval: 0.01s, jitter: 0.5}\n";
        let imp = import_str(text, "e.yaml").unwrap();
        let w = imp.warnings.join("\n");
        assert!(
            w.contains("retry_policy.num_retrys: not an Envoy RetryPolicy field; ignored (did you mean `num_retries`?)"),
            "{w}"
        );
        assert!(
            w.contains("retry_policy.retry_back_off.jitter: not an Envoy RetryBackOff field"),
            "{w}"
        );
        assert_eq!(imp.policies[0].max_attempts, Some(2));
    }

    #[test]
    fn bad_values_are_refused_naming_the_field_and_line() {
        let text =
            "retry_policy:\n  retry_on: 5xx,sometimes\n  num_retries: -2\n  per_try_timeout: -1s\n";
        let msg = import_str(text, "e.yaml").unwrap_err().to_string();
        assert!(
            msg.contains("e.yaml:2:13: retry_policy.retry_on: \"sometimes\""),
            "{msg}"
        );
        assert!(
            msg.contains("e.yaml:3:16: retry_policy.num_retries: expected a whole number"),
            "{msg}"
        );
        assert!(
            msg.contains("e.yaml:4:20: retry_policy.per_try_timeout: \"-1s\" is negative"),
            "{msg}"
        );
    }
}
