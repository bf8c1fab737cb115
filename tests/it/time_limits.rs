//! `check` warns that a time limit leaves no attempt a chance exactly when
//! the model lets none succeed: every limit (a client's attempt timeout
//! and deadline, a Cloud Tasks dispatch deadline, a tier's attempt
//! timeout) is simulated at the least time an attempt takes, where no
//! request succeeds and the warning is given, and a nanosecond above it,
//! where requests succeed and it is not.

use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use retrysim::time::Dur;

/// A scenario of 5 s at 20 requests a second, one attempt each; `LIMIT`
/// in `body` (the fields after `traffic`'s rate) stands for the limit.
fn scenario(body: &str, limit: Dur) -> Scenario {
    let body = body.replace("LIMIT", &limit.to_string());
    Scenario::from_json(&format!(
        r#"{{"name": "limits", "duration": "5s", "seed": 3,
            "traffic": {{"rate": 20, {body},
            "policies": [{{"name": "once"}}]}}"#
    ))
    .unwrap()
}

/// Whether `check` names `path`, and how many requests succeeded.
fn verdict(s: &Scenario, path: &str) -> (bool, u64) {
    // Only the warning about the limit being too short to meet (a queue's
    // deadline is also warned about when outside the API's range).
    let warned = s
        .warnings()
        .iter()
        .any(|w| w.path == path && w.message.contains("least time an attempt takes"));
    (warned, simulate(s, 0, 0).unwrap().summary().succeeded)
}

/// `path` is warned about with the limit at `least` and no request
/// succeeds; one nanosecond longer, requests succeed and no warning is
/// given.
fn agrees(body: &str, path: &str, least: Dur) {
    let (warned, succeeded) = verdict(&scenario(body, least), path);
    assert!(warned, "{path} at {least}: no warning");
    assert_eq!(succeeded, 0, "{path} at {least}");
    let above = Dur(least.ns() + 1);
    let (warned, succeeded) = verdict(&scenario(body, above), path);
    assert!(!warned, "{path} at {above}: a warning");
    assert!(succeeded > 50, "{path} at {above}: {succeeded} succeeded");
}

/// 1 ms of network each way around a backend of 1 ms admission and 2 ms
/// service: 5 ms.
const QUEUE: &str = r#""network_delay": {"constant": {"value": "1ms"}}},
    "backend": {"workers": 20, "admission_cost": "1ms",
                "service_time": {"constant": {"value": "2ms"}}}"#;

#[test]
fn a_clients_limits_meet_the_least_attempt_time() {
    agrees(
        &format!(r#""attempt_timeout": "LIMIT", {QUEUE}"#),
        "traffic.attempt_timeout",
        Dur::from_millis(5),
    );
    agrees(
        &format!(r#""deadline": "LIMIT", {QUEUE}"#),
        "traffic.deadline",
        Dur::from_millis(5),
    );
    // A concurrency backend takes `base` at least, beside admission.
    agrees(
        r#""attempt_timeout": "LIMIT", "network_delay": {"constant": {"value": "1ms"}}},
           "backend": {"kind": "concurrency", "admission_cost": "1ms", "base": "3ms",
                       "per_request": "1us"}"#,
        "traffic.attempt_timeout",
        Dur::from_millis(6),
    );
}

#[test]
fn a_dispatch_deadline_meets_the_least_attempt_time() {
    agrees(
        &format!(r#"{QUEUE}, "dispatcher": {{"dispatch_deadline": "LIMIT"}}"#),
        "dispatcher.dispatch_deadline",
        Dur::from_millis(5),
    );
}

#[test]
fn a_contention_record_takes_four_hops() {
    agrees(
        r#""attempt_timeout": "LIMIT", "network_delay": {"constant": {"value": "2ms"}}},
           "backend": {"kind": "contention"}"#,
        "traffic.attempt_timeout",
        Dur::from_millis(8),
    );
}

/// frontend (2 ms) → service (1 ms admission, 3 ms) → database (5 ms),
/// with `top`, `service` and `database` as the three attempt timeouts.
fn chain(top: &str, service: &str, database: &str) -> String {
    format!(
        r#""attempt_timeout": "{top}", "network_delay": {{"constant": {{"value": "1ms"}}}}}},
           "backend": {{"name": "frontend", "workers": 20,
                        "service_time": {{"constant": {{"value": "2ms"}}}}}},
           "downstream": [
             {{"name": "service", "attempt_timeout": "{service}",
               "backend": {{"workers": 20, "admission_cost": "1ms",
                            "service_time": {{"constant": {{"value": "3ms"}}}}}}}},
             {{"name": "database", "attempt_timeout": "{database}",
               "backend": {{"kind": "concurrency", "base": "5ms", "per_request": "1us"}}}}]"#
    )
}

#[test]
fn a_tiers_limit_counts_the_tiers_below_it() {
    // A call to the database: 5 ms; to the service: 1 + 3 + 5 ms; an
    // attempt at the top: 2 ms of network, 2 ms of its own and 9 ms.
    agrees(
        &chain("1s", "1s", "LIMIT"),
        "downstream[1].attempt_timeout",
        Dur::from_millis(5),
    );
    agrees(
        &chain("1s", "LIMIT", "1s"),
        "downstream[0].attempt_timeout",
        Dur::from_millis(9),
    );
    agrees(
        &chain("LIMIT", "1s", "1s"),
        "traffic.attempt_timeout",
        Dur::from_millis(13),
    );
}
