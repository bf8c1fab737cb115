//! gRPC's commit rule (gRFC A6): a call is committed once the client has
//! received the response headers, and a committed call is never retried
//! nor hedged. An `outage` with `headers_first` fails its attempts after
//! sending headers; the `grpc*` presets carry `commit_on_headers`.
//!
//! The setting is the one a real `grpcio` client was run in: 4 workers,
//! 40 ms mean (exponential) service, a 40-slot waiting room, Poisson
//! arrivals at 80 requests/s, an outage from 10 s to 20 s of a 40 s run.
//! Against a server that sent its headers before `unavailable` the real
//! client made 1.00 attempts per request.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use serde_json::{json, Value};

/// The testbed with an outage (`headers_first` as given) and one policy.
fn testbed(headers_first: bool, policy: Value) -> Scenario {
    let v = json!({
        "name": "testbed", "seed": 1, "duration": "40s", "bin": "100ms",
        "traffic": {"rate": 80, "clients": 1, "arrival": "poisson", "mode": "open"},
        "backend": {"workers": 4, "queue_limit": 40,
                    "service_time": {"exponential": {"mean": "40ms"}}},
        "faults": [{"outage": {"start": "10s", "duration": "10s",
                               "headers_first": headers_first}}],
        "policies": [policy],
    });
    Scenario::from_json(&v.to_string()).unwrap()
}

/// Attempts per request of the requests that arrived during the outage:
/// first attempts in 10–20 s and every retry until 22 s (gRPC's backoff is
/// at most 1 s, 5 attempts), over those first attempts.
fn attempts_per_outage_request(r: &RunResult) -> f64 {
    let bins = r.bins();
    let sum = |from: f64, to: f64, f: fn(&retrysim::metrics::BinRow) -> f64| -> f64 {
        bins.iter()
            .filter(|b| b.t_s >= from - 1e-9 && b.t_s < to - 1e-9)
            .map(f)
            .sum::<f64>()
            * 0.1
    };
    let first = sum(10.0, 20.0, |b| b.first_attempt_rps);
    let retries = sum(10.0, 22.0, |b| b.retry_rps);
    (first + retries) / first
}

const SEEDS: u32 = 5;

/// With headers first, the `grpc` preset makes one attempt per request:
/// every request of the outage fails at its first attempt (the real
/// client: 1.00 attempts per request).
#[test]
fn grpc_never_retries_a_failure_after_headers() {
    let s = testbed(true, json!({"name": "grpc", "preset": "grpc"}));
    for seed in 0..SEEDS {
        let r = simulate(&s, 0, seed).unwrap();
        let a = attempts_per_outage_request(&r);
        assert!((a - 1.0).abs() < 1e-9, "seed {seed}: {a} attempts/request");
        let sum = r.summary();
        let whole = sum.attempts as f64 / sum.requests as f64;
        assert!(
            (1.0..1.01).contains(&whole),
            "seed {seed}: {whole} over the run"
        );
        // About 800 requests arrive in the outage; each fails at once,
        // as a status the policy does not retry would.
        assert!((700..=900).contains(&sum.failed), "{}", sum.failed);
        assert_eq!(sum.dropped, 0);
        assert_eq!(sum.max_attempts_reached, 0);
    }
}

/// Without headers first the same client retries as before: each request
/// of the outage spends the preset's 5 attempts (a little over 5 per
/// first attempt of the window: retries of requests from just before it), about two attempts per
/// request over the run (retrysim's figure for the testbed was 1.96), and
/// the requests end at the attempt limit, not as failed.
#[test]
fn without_headers_first_grpc_retries_as_before() {
    let s = testbed(false, json!({"name": "grpc", "preset": "grpc"}));
    let mut whole = 0.0;
    for seed in 0..SEEDS {
        let r = simulate(&s, 0, seed).unwrap();
        let a = attempts_per_outage_request(&r);
        assert!(
            (4.5..=5.2).contains(&a),
            "seed {seed}: {a} attempts/request"
        );
        let sum = r.summary();
        whole += sum.attempts as f64 / sum.requests as f64 / f64::from(SEEDS);
        assert!(sum.failed < 50, "{}", sum.failed);
        // Those of its last ~1.5 s succeed once the server is back.
        assert!(
            sum.max_attempts_reached >= 550,
            "{}",
            sum.max_attempts_reached
        );
    }
    assert!((1.85..=2.1).contains(&whole), "{whole} attempts/request");
}

/// The flag and the option act only together: an outage with headers
/// first against a policy without `commit_on_headers`, and the `grpc`
/// preset against an outage without headers first, each run exactly as
/// the plain pair does (same summary, same bins: no random draw added).
#[test]
fn headers_first_changes_nothing_for_other_policies() {
    let plain = json!({"name": "grpc", "preset": "grpc", "commit_on_headers": false});
    let base = simulate(&testbed(false, plain.clone()), 0, 3).unwrap();
    let others = [
        testbed(true, plain),
        testbed(false, json!({"name": "grpc", "preset": "grpc"})),
    ];
    for s in &others {
        let r = simulate(s, 0, 3).unwrap();
        assert_eq!(
            format!("{:?}", r.summary()),
            format!("{:?}", base.summary())
        );
        assert_eq!(format!("{:?}", r.bins()), format!("{:?}", base.bins()));
    }
    // A policy outside the gRPC family retries a headers-first outage.
    let aws = simulate(
        &testbed(
            true,
            json!({"name": "aws", "preset": "aws-legacy-dynamodb"}),
        ),
        0,
        3,
    )
    .unwrap();
    assert!(aws.summary().attempts > aws.summary().requests + 1000);
}

/// Hedging: a committed attempt ends the call, so no hedge follows a
/// failure after headers (the outage answers long before the 0.5 s hedge
/// delay).
#[test]
fn a_committed_failure_ends_a_hedged_call() {
    let hedged = |hf| testbed(hf, json!({"name": "hedge", "preset": "grpc-hedging"}));
    let r = simulate(&hedged(true), 0, 0).unwrap();
    let a = attempts_per_outage_request(&r);
    assert!((a - 1.0).abs() < 1e-9, "{a} attempts/request");
    assert!(r.summary().failed >= 700, "{}", r.summary().failed);
    let r = simulate(&hedged(false), 0, 0).unwrap();
    assert!(attempts_per_outage_request(&r) > 1.5);
}
