//! Istio `VirtualService` YAML → one policy per `spec.http[]` route: the
//! Envoy retry policy Istio's pilot writes for it (`ConvertPolicy` in
//! `pilot/pkg/networking/core/route/retry/retry.go`):
//!
//! - no `retries`: Istio's default, 2 retries on
//!   `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes`;
//! - `retries.attempts` 0: no retries (1 attempt); negative: refused;
//! - `retries.attempts` → `num_retries`; `retryOn` → `retry_on` (its
//!   integers are HTTP status codes, as Istio reads them);
//! - `retries.backoff` → Envoy's `base_interval`; otherwise Envoy's 25 ms
//!   (max 10 × base);
//! - `perTryTimeout` and the route's `timeout` are reported, not imported.
//!
//! Documents of other kinds are ignored with a warning.

use super::envoy::{envoy_policy, per_try_warning, retry_on, DEFAULT_BASE_INTERVAL};
use super::push_named;
use super::yaml_docs::{
    documents, duration, get, mapping, other_keys, shown, string, Doc, DurForm,
};
use super::{Imported, Refusals};
use crate::policy::PolicySpec;
use crate::scenario::error::{InvalidInput, Located};
use crate::time::Dur;
use serde_json::Value;

/// Istio's default `num_retries` (`defaultPolicy` in `retry.go`).
pub const DEFAULT_ATTEMPTS: u64 = 2;
/// Istio's default `retry_on` (`defaultPolicy` in `retry.go`).
pub const DEFAULT_RETRY_ON: &str =
    "connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes";

/// The `HTTPRetry` fields read.
const RETRY_KEYS: [&str; 4] = ["attempts", "per_try_timeout", "retry_on", "backoff"];
/// `HTTPRetry` fields Istio reads that a policy cannot express.
const RETRY_UNSUPPORTED: [&str; 2] = ["retry_remote_localities", "retry_ignore_previous_hosts"];

/// Imports every `VirtualService` route of `text`; `origin` names the file.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let docs = documents(text, origin)?;
    let mut warnings = vec![];
    let mut refused = Refusals::new(origin);
    let mut policies: Vec<PolicySpec> = vec![];
    for doc in &docs {
        let Some(vs) = virtual_service(doc, &mut refused, &mut warnings) else {
            continue;
        };
        for (i, route) in vs.routes.iter().enumerate() {
            let Some(spec) = vs.route_policy(i, route, &mut refused, &mut warnings) else {
                continue;
            };
            let fallback = format!("istio-{}", policies.len() + 1);
            let raw = vs.route_name(i, route);
            push_named(&mut policies, &raw, &fallback, spec, &mut warnings);
        }
    }
    refused.check()?;
    if policies.is_empty() {
        return Err(InvalidInput::At(Located::whole(
            origin,
            "no VirtualService with HTTP routes here: expected kind: VirtualService with \
             spec.http[]",
        )));
    }
    Imported {
        policies,
        dispatcher: None,
        warnings,
    }
    .validated(origin)
}

/// A `VirtualService` document and its HTTP routes.
struct VirtualService<'a> {
    doc: &'a Doc<'a>,
    /// `metadata.name`, or `virtualservice`.
    name: &'a str,
    /// `spec.http`.
    routes: &'a [Value],
}

/// The document `doc` as a `VirtualService` with HTTP routes; `None`
/// when it is another kind or has no routes (warned), or when its
/// `spec.http` is not a list (refused).
fn virtual_service<'a>(
    doc: &'a Doc<'a>,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<VirtualService<'a>> {
    let kind = doc.value.get("kind").and_then(Value::as_str);
    if kind != Some("VirtualService") {
        warnings.push(format!(
            "document {} (line {}): {} is not a VirtualService; ignored",
            doc.index + 1,
            doc.first_line,
            kind.map_or("a document without a kind".to_string(), |k| format!(
                "kind {k}"
            ))
        ));
        return None;
    }
    let vs_name = doc
        .value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("virtualservice");
    let Some(http) = doc.value.pointer("/spec/http") else {
        warnings.push(format!(
            "document {} (line {}): VirtualService {vs_name} has no spec.http routes; ignored",
            doc.index + 1,
            doc.first_line
        ));
        return None;
    };
    let Some(routes) = http.as_array() else {
        refused.add(doc.bad("spec.http", "expected a list of HTTP routes"));
        return None;
    };
    Some(VirtualService {
        doc,
        name: vs_name,
        routes,
    })
}

impl VirtualService<'_> {
    /// The policy of `route`, the `i`-th: the Envoy retry policy pilot
    /// writes for it (its name left empty); `None` when refused.
    fn route_policy(
        &self,
        i: usize,
        route: &Value,
        refused: &mut Refusals,
        warnings: &mut Vec<String>,
    ) -> Option<PolicySpec> {
        let (doc, vs_name) = (self.doc, self.name);
        let path = format!("spec.http[{i}]");
        if let Some(t) = route.get("timeout") {
            if let Some(d) = duration(doc, t, &format!("{path}.timeout"), DurForm::Go, refused) {
                warnings.push(format!(
                    "{vs_name}: {path}.timeout: {} not imported: a policy has no deadline; \
                     set the scenario's traffic.deadline to \"{}\" to simulate it",
                    crate::time::format_duration(d.ns()),
                    crate::time::format_duration(d.ns())
                ));
            }
        }
        let (attempts, conditions, codes, base) = match get(route, "retries") {
            None => {
                warnings.push(format!(
                    "{vs_name}: {path}: no retries: Istio's default ({DEFAULT_ATTEMPTS} \
                     retries on {DEFAULT_RETRY_ON}) is imported"
                ));
                (
                    DEFAULT_ATTEMPTS,
                    DEFAULT_RETRY_ON.to_string(),
                    vec![],
                    DEFAULT_BASE_INTERVAL,
                )
            }
            Some((k, r)) => {
                let rp = format!("{path}.{k}");
                retries(doc, r, &rp, vs_name, refused, warnings)?
            }
        };
        let here = format!("{path}.retries.retryOn");
        let mut w = vec![];
        let statuses = retry_on(doc, &conditions, &codes, &here, refused, &mut w);
        warnings.extend(w.into_iter().map(|w| format!("{vs_name}: {w}")));
        let statuses = statuses?;
        let max = Dur(base.ns().saturating_mul(10));
        Some(envoy_policy(attempts, base, max, statuses, false))
    }

    /// The name the policy of `route`, the `i`-th, is given: the
    /// VirtualService's and the route's, or its place among several.
    fn route_name(&self, i: usize, route: &Value) -> String {
        let vs_name = self.name;
        match route.get("name").and_then(Value::as_str) {
            Some(r) => format!("{vs_name}.{r}"),
            None if self.routes.len() == 1 => vs_name.to_string(),
            None => format!("{vs_name}.http{i}"),
        }
    }
}

/// An `HTTPRetry`: (retries, Envoy `retry_on`, status codes, base
/// interval), `None` when refused.
fn retries(
    doc: &Doc,
    r: &Value,
    path: &str,
    vs_name: &str,
    refused: &mut Refusals,
    warnings: &mut Vec<String>,
) -> Option<(u64, String, Vec<u64>, Dur)> {
    let what = "an HTTPRetry: attempts, perTryTimeout, retryOn";
    if !mapping(doc, r, path, what, refused) {
        return None;
    }
    let mut w = vec![];
    other_keys(
        r,
        path,
        "an Istio HTTPRetry",
        &RETRY_KEYS,
        &RETRY_UNSUPPORTED,
        &mut w,
    );
    warnings.extend(w.into_iter().map(|w| format!("{vs_name}: {w}")));
    let attempts = match get(r, "attempts") {
        None => Some(0),
        Some((k, v)) => match v.as_i64() {
            Some(n) if n < 0 => {
                refused.add(doc.bad(
                    &format!("{path}.{k}"),
                    format!("{n} is negative: Istio refuses a negative number of retries"),
                ));
                None
            }
            Some(n) if n <= i64::from(i32::MAX) => Some(n as u64),
            _ => {
                refused.add(doc.bad(
                    &format!("{path}.{k}"),
                    format!(
                        "expected a whole number of retries from 0 to {} (Istio's int32), found {}",
                        i32::MAX,
                        shown(v)
                    ),
                ));
                None
            }
        },
    };
    if let Some((k, t)) = get(r, "per_try_timeout") {
        if let Some(d) = duration(doc, t, &format!("{path}.{k}"), DurForm::Go, refused) {
            warnings.push(format!("{vs_name}: {}", per_try_warning(path, k, d)));
        }
    }
    let base = match get(r, "backoff") {
        None => Some(DEFAULT_BASE_INTERVAL),
        Some((k, v)) => duration(doc, v, &format!("{path}.{k}"), DurForm::Go, refused)
            .map(|d| Dur(d.ns().max(1_000_000))),
    };
    let (conditions, codes) = match get(r, "retry_on") {
        None => (DEFAULT_RETRY_ON.to_string(), vec![]),
        Some((k, v)) => retry_on_text(doc, v, &format!("{path}.{k}"), refused)?,
    };
    let (attempts, base) = (attempts?, base?);
    if attempts == 0 {
        warnings.push(format!(
            "{vs_name}: {path}: attempts 0 (or absent): Istio turns retries off; imported as \
             one attempt"
        ));
    }
    Some((attempts, conditions, codes, base))
}

/// An `HTTPRetry`'s `retryOn` `v` as Envoy's `retry_on` conditions and
/// the status codes listed among them (`503` → `retriable-status-codes`);
/// Istio's default when it is empty.
fn retry_on_text(
    doc: &Doc,
    v: &Value,
    path: &str,
    refused: &mut Refusals,
) -> Option<(String, Vec<u64>)> {
    let text = string(doc, v, path, refused)?;
    if text.trim().is_empty() {
        return Some((DEFAULT_RETRY_ON.to_string(), vec![]));
    }
    let (mut parts, mut codes) = (vec![], vec![]);
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u64>() {
            Ok(c) if (100..600).contains(&c) => codes.push(c),
            _ => parts.push(part),
        }
    }
    if !codes.is_empty() && !parts.contains(&"retriable-status-codes") {
        parts.push("retriable-status-codes");
    }
    Some((parts.join(","), codes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{BackoffSpec, JitterSpec};
    use crate::status::Status;

    const VS: &str = "\
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: ratings
spec:
  hosts: [ratings]
  http:
  - name: v1
    timeout: 10s
    route:
    - destination: {host: ratings, subset: v1}
    retries:
      attempts: 3
      perTryTimeout: 2s
      retryOn: gateway-error,connect-failure,429
  - name: default
    route:
    - destination: {host: ratings}
---
apiVersion: v1
kind: Service
metadata: {name: ratings}
";

    #[test]
    fn each_route_is_the_envoy_policy_istio_writes() {
        let imp = import_str(VS, "vs.yaml").unwrap();
        let names: Vec<&str> = imp.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["ratings.v1", "ratings.default"]);
        let p = &imp.policies[0];
        assert_eq!(p.max_attempts, Some(4));
        assert_eq!(
            p.retry_on,
            Some(vec![
                Status::Unavailable,
                Status::ResourceExhausted,
                Status::DeadlineExceeded
            ])
        );
        assert_eq!(p.jitter, Some(JitterSpec::Full));
        assert_eq!(
            p.backoff,
            Some(BackoffSpec::Exponential {
                initial: Dur::from_millis(25),
                multiplier: 2.0,
                max: Some(Dur::from_millis(250)),
                max_doublings: None
            })
        );
        // Istio's default: 2 retries, connect failures and `unavailable`.
        let d = &imp.policies[1];
        assert_eq!(d.max_attempts, Some(3));
        assert_eq!(d.retry_on, Some(vec![Status::Unavailable]));
        let w = imp.warnings.join("\n");
        for needle in [
            "timeout: 10s",
            "perTryTimeout: 2s",
            "kind Service",
            "\"cancelled\" dropped",
        ] {
            assert!(w.contains(needle), "{needle} in {w}");
        }
    }

    #[test]
    fn bad_values_name_the_field() {
        let text = VS
            .replace("attempts: 3", "attempts: three")
            .replace("2s", "-2s");
        let msg = import_str(&text, "vs.yaml").unwrap_err().to_string();
        assert!(
            msg.contains("vs.yaml:13:17: spec.http[0].retries.attempts: expected a whole number"),
            "{msg}"
        );
        assert!(
            msg.contains("spec.http[0].retries.perTryTimeout: \"-2s\" is negative"),
            "{msg}"
        );
    }
}
