//! A crash (the server stops listening, then comes back) against clients
//! that keep a connection and reconnect on gRPC's connection backoff, and
//! against clients that open a connection per attempt.
//!
//! The setting is the one a real `grpcio` client was run in: 4 workers,
//! 40 ms mean (exponential) service, a 40-slot waiting room, Poisson
//! arrivals at 80 % of capacity (80 requests/s), the fault from 10 s to
//! 20 s of a 40 s run, gRPC's retry policy. The real client kept failing
//! for 5.3 s after the server was back and 60 % of its requests succeeded;
//! with a new connection per attempt the same storm ends at once.

use crate::invariants::{counts_add_up, run_or_predicted_stall};
use proptest::prelude::*;
use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::policy::reconnect::ReconnectSpec;
use retrysim::scenario::Scenario;
use serde_json::{json, Value};

/// The testbed with `fault` and one policy.
fn testbed(fault: Value, policy: Value) -> Scenario {
    let v = json!({
        "name": "testbed", "seed": 1, "duration": "40s", "bin": "100ms",
        "traffic": {"rate": 80, "clients": 1, "arrival": "poisson", "mode": "open"},
        "backend": {"workers": 4, "queue_limit": 40,
                    "service_time": {"exponential": {"mean": "40ms"}}},
        "faults": [fault],
        "policies": [policy],
    });
    Scenario::from_json(&v.to_string()).unwrap()
}

fn crash() -> Value {
    json!({"crash": {"start": "10s", "duration": "10s"}})
}

/// Seconds after the server is back (20 s) until the first request
/// succeeds: how long every call kept failing.
fn failing_after(r: &RunResult) -> f64 {
    let back = r
        .bins()
        .iter()
        .find(|b| b.t_s >= 20.0 - 1e-9 && b.goodput_rps > 0.0)
        .expect("the run recovers");
    back.t_s - 20.0
}

fn median(mut x: Vec<f64>) -> f64 {
    x.sort_by(f64::total_cmp);
    x[x.len() / 2]
}

const SEEDS: u32 = 7;

/// With gRPC's reconnect defaults the clients find the server again on
/// their backoff schedule: 3–8 s after it is back (the real client: 5.3 s),
/// and 55–66 % of the requests succeed (real: 0.600).
#[test]
fn a_crash_with_reconnect_backoff_recovers_seconds_late() {
    let s = testbed(crash(), json!({"name": "grpc", "preset": "grpc"}));
    let runs: Vec<RunResult> = (0..SEEDS).map(|i| simulate(&s, 0, i).unwrap()).collect();
    let late = median(runs.iter().map(failing_after).collect());
    assert!((3.0..=8.0).contains(&late), "recovered {late} s after");
    let success = runs.iter().map(|r| r.summary().success_rate()).sum::<f64>() / f64::from(SEEDS);
    assert!((0.55..=0.66).contains(&success), "success {success}");
    for r in &runs {
        // While disconnected nothing reaches the backend: its attempts
        // fail at the client, counted apart.
        let refused = r.summary().refused_locally.unwrap();
        assert!(refused > 1000, "{refused}");
        assert!(r.summary().offered + refused <= r.summary().attempts);
        for b in r.bins().iter().filter(|b| b.t_s >= 10.1 && b.t_s < 19.9) {
            assert_eq!(b.offered_rps, 0.0, "at {} s", b.t_s);
            assert!(b.refused_locally_rps.unwrap() > 0.0);
        }
        // The bins add up to the summary.
        let total: f64 = r
            .bins()
            .iter()
            .map(|b| b.refused_locally_rps.unwrap() * 0.1)
            .sum();
        assert_eq!(total.round() as u64, refused);
    }
}

/// Without `reconnect` (a new connection per attempt) the same crash
/// ends when the server is back; so does an `outage` with `flush`, which
/// answers instead of refusing — and there the preset's `reconnect`
/// changes nothing at all.
#[test]
fn without_reconnect_the_crash_ends_when_the_server_is_back() {
    let off = json!({"name": "grpc", "preset": "grpc", "reconnect": false});
    let s = testbed(crash(), off.clone());
    let runs: Vec<RunResult> = (0..SEEDS).map(|i| simulate(&s, 0, i).unwrap()).collect();
    let late = median(runs.iter().map(failing_after).collect());
    assert!(late <= 0.2, "recovered {late} s after");
    let success = runs.iter().map(|r| r.summary().success_rate()).sum::<f64>() / f64::from(SEEDS);
    assert!((0.70..=0.80).contains(&success), "success {success}");
    for r in &runs {
        assert_eq!(r.summary().refused_locally, None);
        assert!(r.bins().iter().all(|b| b.refused_locally_rps.is_none()));
    }
    let outage = json!({"outage": {"start": "10s", "duration": "10s", "flush": true}});
    let with = simulate(
        &testbed(outage.clone(), json!({"name": "grpc", "preset": "grpc"})),
        0,
        0,
    )
    .unwrap();
    let without = simulate(&testbed(outage, off), 0, 0).unwrap();
    assert_eq!(
        format!("{:?}", with.summary()),
        format!("{:?}", without.summary())
    );
    assert_eq!(
        format!("{:?}", with.bins()),
        format!("{:?}", without.bins())
    );
    assert!(failing_after(&with) <= 0.2);
}

/// The longer the crash, the later the clients find the server again:
/// the gap follows the backoff schedule (median of 5 seeds; without
/// jitter 0.16 s after a 5 s crash, 61.5 s after a 120 s one), and never
/// exceeds its longest wait (120 s, +20 % jitter).
#[test]
fn the_gap_grows_with_the_crash() {
    let gap = |secs: u64| {
        let v = json!({
            "name": "long", "seed": 3, "duration": format!("{}s", 10 + secs + 200), "bin": "100ms",
            "traffic": {"rate": 20, "clients": 1},
            "backend": {"workers": 4, "service_time": {"exponential": {"mean": "40ms"}}},
            "faults": [{"crash": {"start": "10s", "duration": format!("{secs}s")}}],
            "policies": [{"name": "grpc", "preset": "grpc"}],
        });
        let s = Scenario::from_json(&v.to_string()).unwrap();
        let end = (10 + secs) as f64;
        let gaps = (0..5)
            .map(|i| {
                let r = simulate(&s, 0, i).unwrap();
                let back = r
                    .bins()
                    .iter()
                    .find(|b| b.t_s >= end - 1e-9 && b.goodput_rps > 0.0);
                back.unwrap().t_s - end
            })
            .collect::<Vec<f64>>();
        assert!(gaps.iter().all(|&g| g <= 144.0), "{gaps:?}");
        median(gaps)
    };
    let short = gap(5);
    let long = gap(120);
    assert!(short < 4.0, "{short}");
    assert!(long > 30.0, "{long}");
}

/// The schedule a channel follows is the closed form of gRPC's
/// connection-backoff document at the middle of its jitter: attempts at
/// the drop, then after 1, 1.6, 2.56, … s, capped at 120 s.
#[test]
fn the_reconnect_schedule_is_grpcs() {
    let r = ReconnectSpec::default().resolve();
    let t = r.attempts(0, 20, || 0.5);
    let mut expect = 0.0f64;
    for (k, &got) in t.iter().enumerate() {
        assert!((got as f64 / 1e9 - expect).abs() < 1e-6, "{k}: {got}");
        expect += 1.6f64.powi(k as i32).min(120.0);
    }
}

fn random_scenario() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["open", "closed", "burst"]),
        1u32..20,
        prop::option::of(5u64..300),
        prop::option::of(50u64..3000),
        prop::option::of(1u64..20),
        (0u64..15, 1u64..10),
        prop::sample::select(vec![
            json!({"preset": "grpc"}),
            json!({"preset": "grpc-legacy", "reconnect": {"initial": "200ms", "scope": "global"}}),
            json!({"preset": "grpc-hedging"}),
            json!({"preset": "grpc", "reconnect": {"initial": "100ms", "multiplier": 1.0, "jitter": 0.0, "max": "100ms", "scope": {"group": 3}}}),
            json!({"max_attempts": -1, "backoff": {"constant": {"delay": "50ms"}}, "reconnect": true,
                   "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}}),
            json!({"preset": "grpc", "reconnect": false}),
        ]),
        any::<bool>(),
        0u64..1000,
    )
        .prop_map(|(mode, clients, timeout, deadline, net, (start, len), policy, below, seed)| {
            let mut traffic = match mode {
                "open" => json!({"rate": 100}),
                "closed" => json!({"think_time": {"exponential": {"mean": "20ms"}}}),
                _ => json!({"burst_spread": "2s", "burst_at": "1s"}),
            };
            traffic["mode"] = json!(mode);
            traffic["clients"] = json!(clients);
            if let Some(t) = timeout {
                traffic["attempt_timeout"] = json!(format!("{t}ms"));
            }
            if let Some(d) = deadline {
                traffic["deadline"] = json!(format!("{d}ms"));
            }
            if let Some(n) = net {
                traffic["network_delay"] = json!({"exponential": {"mean": format!("{n}ms")}});
            }
            let mut p = policy;
            p["name"] = json!("p");
            let mut fault = json!({"crash": {"start": start, "duration": len}});
            let mut v = json!({"name": "random", "seed": seed, "duration": "25s", "bin": "500ms",
                "traffic": traffic,
                "backend": {"workers": 3, "queue_limit": 20, "service_time": {"exponential": {"mean": "10ms"}}},
                "policies": [p]});
            if below {
                fault["crash"]["tier"] = json!("db");
                // Calls with gRPC's policy, reconnect included.
                v["downstream"] = json!([{"name": "db", "backend": {"workers": 2,
                    "service_time": {"constant": {"value": "2ms"}}}, "attempt_timeout": "100ms",
                    "policy": "grpc"}]);
            }
            v["faults"] = json!([fault]);
            v
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 60, ..ProptestConfig::default() })]

    /// With a crash, whatever the clients do, every request ends exactly
    /// once, the bins add up to the summary, and the attempts that failed
    /// at the client never reached the backend.
    #[test]
    fn every_request_ends_once_through_a_crash(v in random_scenario()) {
        let s = Scenario::from_json(&v.to_string()).unwrap();
        let Some(r) = run_or_predicted_stall(&s)? else { return Ok(()) };
        counts_add_up(&r, 0.5)?;
        let m = &r.summary();
        let total = |f: fn(&retrysim::metrics::BinRow) -> f64| -> u64 {
            r.bins().iter().map(|b| (f(b) * 0.5).round() as u64).sum()
        };
        let channels = s.policies()[0].reconnect.is_some() && v["faults"][0]["crash"].get("tier").is_none();
        prop_assert_eq!(m.refused_locally.is_some(), channels);
        let refused = m.refused_locally.unwrap_or(0);
        prop_assert_eq!(total(|b| b.refused_locally_rps.unwrap_or(0.0)), refused);
        prop_assert!(m.offered + refused <= m.attempts);
    }
}
