//! `retrysim import envoy|istio|aws|linkerd` end to end: the policies of
//! the sample files in `tests/good/import/`, checked field by field against
//! the mapping in docs/policies.md, each block loading in a scenario that
//! `retrysim check` accepts, and bad files refused with exit 2 and the
//! field named.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

fn retrysim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The printed block of a successful import, and its warnings.
fn imported(args: &[&str]) -> (Value, String) {
    let o = retrysim(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
    let block: Value = serde_json::from_slice(&o.stdout).expect("stdout is JSON");
    // The block loads in a scenario.
    let dir = tempfile::tempdir().unwrap();
    let mut scenario = json!({
        "name": "imported",
        "duration": "10s",
        "traffic": {"rate": 10.0},
        "backend": {"workers": 2, "service_time": {"constant": {"value": "10ms"}}},
    });
    scenario["policies"] = block["policies"].clone();
    let path = dir.path().join("s.json");
    std::fs::write(&path, scenario.to_string()).unwrap();
    let c = retrysim(&["check", path.to_str().unwrap()]);
    assert_eq!(
        c.status.code(),
        Some(0),
        "{args:?}: check refused the block: {}",
        String::from_utf8_lossy(&c.stderr)
    );
    (block, err)
}

/// The stderr of a refused import (exit 2).
fn refused(tool: &str, name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let o = retrysim(&["import", tool, path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{tool} {name}: {err}");
    assert!(err.starts_with("error: "), "{err}");
    err
}

fn good(name: &str) -> String {
    Path::new("tests/good/import")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

#[test]
fn envoy_route_and_cluster() {
    let (v, warnings) = imported(&["import", "envoy", &good("envoy-bootstrap.yaml")]);
    let p = &v["policies"];
    assert_eq!(p.as_array().unwrap().len(), 2);
    assert_eq!(
        p[0],
        json!({
            "name": "shop.orders",
            "max_attempts": 3,
            "backoff": {"exponential": {"initial": "100ms", "multiplier": 2.0, "max": "1s"}},
            "jitter": "full",
            "retry_on": ["unavailable", "resource_exhausted", "deadline_exceeded"],
            "budget": {"concurrency": {"percent": 25.0, "min": 5, "scope": "client"}},
            "honor_retry_after": true
        })
    );
    // Defaults: 1 retry, 25 ms to 250 ms; a cluster without circuit
    // breakers keeps Envoy's max_retries of 3 concurrent retries.
    assert_eq!(
        p[1],
        json!({
            "name": "shop.catalog",
            "max_attempts": 2,
            "backoff": {"exponential": {"initial": "25ms", "multiplier": 2.0, "max": "250ms"}},
            "jitter": "full",
            "retry_on": ["unavailable", "deadline_exceeded", "internal"],
            "budget": {"concurrency": {"percent": 0.0, "min": 3, "scope": "client"}},
            "honor_retry_after": false
        })
    );
    for needle in [
        "retry_host_predicate: not imported",
        "per_try_timeout: 500ms not imported",
        "route.timeout: 3s not imported",
        "priority HIGH not imported",
        "max_requests: not imported",
    ] {
        assert!(warnings.contains(needle), "{needle} in {warnings}");
    }
}

#[test]
fn istio_virtual_service() {
    let (v, warnings) = imported(&["import", "istio", &good("istio-virtualservice.yaml")]);
    let p = &v["policies"];
    assert_eq!(
        p[0],
        json!({
            "name": "reviews.v2",
            "max_attempts": 5,
            "backoff": {"exponential": {"initial": "25ms", "multiplier": 2.0, "max": "250ms"}},
            "jitter": "full",
            "retry_on": ["unavailable", "deadline_exceeded", "aborted", "internal"],
            "honor_retry_after": false
        })
    );
    // No retries block: Istio's default policy.
    assert_eq!(p[1]["name"], "reviews.v1");
    assert_eq!(p[1]["max_attempts"], 3);
    assert_eq!(p[1]["retry_on"], json!(["unavailable"]));
    for needle in [
        "timeout: 10s not imported",
        "perTryTimeout: 2s",
        "kind DestinationRule",
    ] {
        assert!(warnings.contains(needle), "{needle} in {warnings}");
    }
}

#[test]
fn aws_config_profiles() {
    let config = good("aws-config");
    let (v, warnings) = imported(&["import", "aws", &config]);
    assert_eq!(
        v["policies"],
        json!([
            {"name": "default", "preset": "aws-standard", "max_attempts": 4},
            {"name": "batch", "preset": "aws-adaptive", "max_attempts": 10},
            {"name": "legacy-app", "preset": "aws-legacy"}
        ])
    );
    assert!(
        warnings.contains("[profile readonly] (line 15): no retry_mode"),
        "{warnings}"
    );
    assert!(warnings.contains("[sso-session corp]"), "{warnings}");
    let (v, _) = imported(&["import", "aws", &config, "--profile", "batch"]);
    assert_eq!(
        v["policies"],
        json!([{"name": "batch", "preset": "aws-adaptive", "max_attempts": 10}])
    );
    let o = retrysim(&["import", "aws", &config, "--profile", "prod"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no profile \"prod\""));
}

#[test]
fn linkerd_annotations_and_service_profile() {
    let (v, warnings) = imported(&["import", "linkerd", &good("linkerd.yaml")]);
    let p = &v["policies"];
    assert_eq!(
        p[0],
        json!({
            "name": "books-create",
            "max_attempts": 3,
            "backoff": {"exponential": {"initial": "25ms", "multiplier": 2.0, "max": "250ms"}},
            "jitter": "full",
            "retry_on": ["unavailable", "deadline_exceeded", "internal"],
            "honor_retry_after": false
        })
    );
    assert_eq!(
        p[1],
        json!({
            "name": "authors.booksapp.svc.cluster.local",
            "preset": "linkerd",
            "budget": {"ratio": {"percent": 30.0, "min_per_second": 20.0, "ttl": "15s",
                                 "deposit": "not_retried", "scope": "client"}}
        })
    );
    assert!(
        warnings.contains("timeout: 400ms not imported"),
        "{warnings}"
    );
}

#[test]
fn bad_files_exit_2_naming_the_field() {
    let e = refused(
        "envoy",
        "e.yaml",
        "retry_policy:\n  retry_on: 5xx,whenever\n  num_retries: many\n",
    );
    assert!(
        e.contains(
            "e.yaml:2:13: retry_policy.retry_on: \"whenever\" is not an Envoy retry_on condition"
        ),
        "{e}"
    );
    assert!(
        e.contains("e.yaml:3:16: retry_policy.num_retries: expected a whole number"),
        "{e}"
    );
    let e = refused(
        "envoy",
        "e.yaml",
        "retry_policy:\n  retry_on: 5xx\n  retry_back_off: {base_interval: -0.1s}\n",
    );
    assert!(
        e.contains("retry_policy.retry_back_off.base_interval: \"-0.1s\" is negative"),
        "{e}"
    );
    let e = refused("envoy", "e.yaml", "kind: Nothing\n");
    assert!(e.contains("no Envoy retry configuration here"), "{e}");
    let e = refused(
        "istio",
        "vs.yaml",
        "kind: VirtualService\nmetadata: {name: r}\nspec:\n  http:\n  - retries:\n      attempts: [3]\n      perTryTimeout: -1s\n",
    );
    assert!(
        e.contains("spec.http[0].retries.attempts: expected a whole number"),
        "{e}"
    );
    assert!(
        e.contains("spec.http[0].retries.perTryTimeout: \"-1s\" is negative"),
        "{e}"
    );
    let e = refused("aws", "config", "[default]\nretry_mode = turbo\n");
    assert!(
        e.contains("config:2:1: [default].retry_mode: \"turbo\" is not a retry mode"),
        "{e}"
    );
    let e = refused("aws", "config", "[profile x]\nmax_attempts = -1\n");
    assert!(e.contains("[profile x].max_attempts"), "{e}");
    let e = refused(
        "linkerd",
        "l.yaml",
        "kind: Service\nmetadata:\n  name: s\n  annotations:\n    retry.linkerd.io/limit: lots\n",
    );
    assert!(
        e.contains(
            "l.yaml:5:29: metadata.annotations.retry.linkerd.io/limit: expected a whole number"
        ),
        "{e}"
    );
}

/// What `kubectl get … -o yaml` prints for several resources: a `List`
/// whose items are imported as the documents of a multi-document file
/// would be, a refusal inside one naming its own line.
#[test]
fn a_kubectl_list_is_read_item_by_item() {
    let text = std::fs::read_to_string(good("linkerd.yaml")).unwrap();
    let items: Vec<String> = text
        .split("\n---\n")
        .map(|doc| {
            let body: Vec<String> = doc
                .trim()
                .lines()
                .enumerate()
                .map(|(i, l)| format!("{}{l}", if i == 0 { "- " } else { "  " }))
                .collect();
            body.join("\n")
        })
        .collect();
    let list = format!(
        "apiVersion: v1\nitems:\n{}\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
        items.join("\n")
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("list.yaml");
    std::fs::write(&path, &list).unwrap();
    let (from_list, _) = imported(&["import", "linkerd", path.to_str().unwrap()]);
    let (from_docs, _) = imported(&["import", "linkerd", &good("linkerd.yaml")]);
    assert_eq!(from_list, from_docs);

    let e = refused(
        "istio",
        "vs.yaml",
        "apiVersion: v1\nitems:\n- kind: VirtualService\n  metadata: {name: a}\n  spec:\n    http:\n    - retries: {attempts: 2}\n\
         - kind: VirtualService\n  metadata: {name: b}\n  spec:\n    http:\n    - retries: {attempts: -1}\nkind: List\n",
    );
    assert!(
        e.contains("vs.yaml:12:27: spec.http[0].retries.attempts: -1 is negative"),
        "{e}"
    );
}

/// Values of the wrong kind or beyond what a scenario takes are refused
/// at their line, in the source's own terms, never passed on.
#[test]
fn values_out_of_range_or_of_the_wrong_kind_are_refused_at_their_line() {
    let e = refused(
        "linkerd",
        "sp.yaml",
        "kind: ServiceProfile\nmetadata: {name: sp}\nspec:\n  retryBudget:\n    retryRatio: 1e300\n    ttl: 500ms\n  routes:\n  - {name: r, isRetryable: true}\n",
    );
    assert!(
        e.contains("sp.yaml:5:17: spec.retryBudget.retryRatio: 1e300 is out of range [0, 10]"),
        "{e}"
    );
    assert!(
        e.contains("sp.yaml:6:10: spec.retryBudget.ttl: 500ms is out of range"),
        "{e}"
    );
    let e = refused(
        "linkerd",
        "sp.yaml",
        "kind: ServiceProfile\nmetadata: {name: sp}\nspec:\n  retryBudget: 5\n  routes:\n  - {name: r, isRetryable: true}\n",
    );
    assert!(
        e.contains("sp.yaml:4:16: spec.retryBudget: expected a mapping"),
        "{e}"
    );
    let e = refused(
        "istio",
        "vs.yaml",
        "kind: VirtualService\nmetadata: {name: r}\nspec:\n  http:\n  - retries: 5\n",
    );
    assert!(
        e.contains("spec.http[0].retries: expected a mapping"),
        "{e}"
    );
    let e = refused(
        "envoy",
        "e.yaml",
        "routes:\n- route:\n    timeout: -3s\n    retry_policy: {retry_on: 5xx}\n",
    );
    assert!(
        e.contains("e.yaml:3:14: routes[0].route.timeout: \"-3s\" is negative"),
        "{e}"
    );
    // Envoy's "0s" turns the route timeout off: nothing to refuse.
    let dir = tempfile::tempdir().unwrap();
    let off = dir.path().join("off.yaml");
    std::fs::write(
        &off,
        "routes:\n- route:\n    timeout: 0s\n    retry_policy: {retry_on: 5xx}\n",
    )
    .unwrap();
    let (_, warnings) = imported(&["import", "envoy", off.to_str().unwrap()]);
    assert!(!warnings.contains("timeout"), "{warnings}");
}
