//! gRPC hedging (gRFC A6 `hedgingPolicy`) end to end: what it buys in tail
//! latency and what it costs in load, on heavy-tailed service times.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

/// 1000 req/s on a backend with ample capacity (200 workers for ~18 busy
/// on average) and lognormal service times with median 5 ms and p99
/// 200 ms: σ = ln(40)/2.326 = 1.586, so the 95th percentile is
/// 5 ms · e^(1.645·1.586) = 68 ms. No faults, no timeouts.
fn run(policy: &str) -> RunResult {
    let json = format!(
        r#"{{"name": "hedge", "seed": 11, "duration": "60s", "warmup": "5s", "bin": "1s",
            "traffic": {{"rate": 1000}},
            "backend": {{"workers": 200,
                         "service_time": {{"lognormal": {{"median": "5ms", "p99": "200ms"}}}}}},
            "policies": [{policy}]}}"#
    );
    simulate(&Scenario::from_json(&json).unwrap(), 0, 0).unwrap()
}

#[test]
fn hedging_at_the_p95_cuts_p99_by_a_third_for_a_few_percent_more_attempts() {
    let plain = run(r#"{"name": "none"}"#);
    let p95 = 5.0 * (1.645f64 * (40f64.ln() / 2.326_348)).exp();
    assert!((p95 - 68.0).abs() < 1.0, "{p95}");
    let hedged = run(&format!(
        r#"{{"name": "hedged", "hedging": {{"delay": "{}ms", "max_attempts": 2,
            "non_fatal": ["unavailable"]}}}}"#,
        p95.round()
    ));
    let (a, b) = (&plain.summary(), &hedged.summary());
    let (p99a, p99b) = (a.latency_p99_ms.unwrap(), b.latency_p99_ms.unwrap());
    // Without hedging the p99 is the service's (~200 ms).
    assert!((p99a - 200.0).abs() < 20.0, "plain p99 {p99a}");
    // With it, min(X₁, 68 ms + X₂): P(T > t) = P(X₁ > t)·P(X₂ > t − 68)
    // = 1 % at t = 82.0 ms.
    assert!(p99b <= p99a * 2.0 / 3.0, "p99 {p99a:.1} → {p99b:.1} ms");
    assert!((p99b - 82.0).abs() < 10.0, "hedged p99 {p99b:.1}");
    // One hedge for the ~5 % of requests slower than the p95.
    let extra = b.amplification() - 1.0;
    assert!(extra <= 0.15, "extra attempts {extra:.3}");
    assert!((extra - 0.05).abs() < 0.01, "extra attempts {extra:.3}");
    // The losing attempts are served anyway: wasted work.
    assert!(b.wasted > 0 && a.wasted == 0);
    // The median is untouched (hedges only go after 68 ms).
    let (m_a, m_b) = (a.latency_p50_ms.unwrap(), b.latency_p50_ms.unwrap());
    assert!((m_a - m_b).abs() < 0.2, "p50 {m_a} vs {m_b}");
}

#[test]
fn a_hedge_every_delay_until_one_answers() {
    // Constant 100 ms service, hedges every 30 ms, up to 3: the first
    // attempt answers at 100 ms, by then hedges went at 30 and 60 ms.
    // Every request: 3 attempts, latency 100 ms, two attempts wasted.
    let json = r#"{"name": "h", "seed": 1, "duration": "10s", "bin": "1s",
        "traffic": {"rate": 50, "arrival": "uniform"},
        "backend": {"workers": 100, "service_time": {"constant": {"value": "100ms"}}},
        "policies": [{"name": "h", "hedging": {"delay": "30ms", "max_attempts": 3}}]}"#;
    let r = simulate(&Scenario::from_json(json).unwrap(), 0, 0).unwrap();
    let s = &r.summary();
    assert_eq!(s.succeeded + s.unfinished, s.requests);
    // Requests still open at the end may not have sent all three yet.
    assert!(s.attempts <= 3 * s.requests && s.attempts >= 3 * s.succeeded);
    assert_eq!(s.latency_mean_ms.map(|v| v.round()), Some(100.0));
    // The two losing attempts of each request are served anyway (those of
    // the last requests may still be in service at the end).
    assert!(s.wasted <= 2 * s.succeeded && s.wasted + 6 >= 2 * s.succeeded);
}

#[test]
fn pushback_delays_the_next_hedge_and_the_outage_multiplies_attempts() {
    // During an outage every attempt fails at once with `unavailable`:
    // without pushback each failure sends the next hedge immediately, so
    // every request makes all 4 attempts at once; with a 1 s pushback
    // honoured, the next hedge waits 1 s (A6 "Pushback: retry in n ms").
    let mk = |honor: bool| {
        format!(
            r#"{{"name": "h", "seed": 2, "duration": "20s", "bin": "100ms",
                "traffic": {{"rate": 100, "deadline": "10s"}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}},
                             "retry_after": "1s"}},
                "faults": [{{"outage": {{"start": "5s", "duration": "5s"}}}}],
                "policies": [{{"name": "h", "honor_retry_after": {honor},
                               "hedging": {{"delay": "200ms", "max_attempts": 4,
                                            "non_fatal": ["unavailable"]}}}}]}}"#
        )
    };
    let now = simulate(&Scenario::from_json(&mk(false)).unwrap(), 0, 0).unwrap();
    let later = simulate(&Scenario::from_json(&mk(true)).unwrap(), 0, 0).unwrap();
    let sent = |r: &RunResult, from: f64, to: f64| -> f64 {
        r.bins()
            .iter()
            .filter(|b| b.t_s >= from - 1e-9 && b.t_s < to - 1e-9)
            .map(|b| (b.first_attempt_rps + b.retry_rps) * 0.1)
            .sum()
    };
    // In the middle of the outage: 4 attempts per new request, at once.
    let demand: f64 = now
        .bins()
        .iter()
        .filter(|b| b.t_s >= 6.0 - 1e-9 && b.t_s < 9.0 - 1e-9)
        .map(|b| b.demand_rps * 0.1)
        .sum();
    let per_request = sent(&now, 6.0, 9.0) / demand;
    assert!((per_request - 4.0).abs() < 1e-9, "{per_request}");
    // With pushback the hedges of a request spread 1 s apart: the second
    // attempts of the first outage requests come 1 s after it began.
    let hedges_at = |r: &RunResult, from: f64, to: f64| -> f64 {
        r.bins()
            .iter()
            .filter(|b| b.t_s >= from - 1e-9 && b.t_s < to - 1e-9)
            .map(|b| b.retry_rps * 0.1)
            .sum()
    };
    assert_eq!(hedges_at(&later, 5.0, 5.2), 0.0);
    assert!(hedges_at(&later, 6.0, 6.2) > 10.0);
    assert!(later.summary().attempts < now.summary().attempts);
}

/// A hedge is a retry to the budget that goes at once or not at all: a
/// `rate` budget (1/s, burst 1) lets one through per token, none on
/// credit, so 20 s of hedging every 10 ms sends about 21 hedges, not four
/// per request.
#[test]
fn a_rate_budget_lets_a_hedge_go_only_with_a_token_in_hand() {
    let json = r#"{"name": "hr", "duration": "20s",
        "traffic": {"rate": 50, "arrival": "uniform"},
        "backend": {"workers": 100, "service_time": {"constant": {"value": "100ms"}}},
        "policies": [{"name": "h", "hedging": {"delay": "10ms", "max_attempts": 5},
            "budget": {"rate": {"per_second": 1, "burst": 1, "scope": "global"}}}]}"#;
    let r = simulate(&Scenario::from_json(json).unwrap(), 0, 0).unwrap();
    let hedges = r.summary().attempts - r.summary().requests;
    assert!((19..=21).contains(&hedges), "{hedges} hedges");
}

/// A request whose hedging was stopped ends for the reason that stopped
/// it, when its last attempt out fails: switched-off retries, or the
/// budget (not the attempt limit).
#[test]
fn stopped_hedging_ends_for_the_reason_that_stopped_it() {
    let run = |extra: &str, budget: &str| {
        let json = format!(
            r#"{{"name": "hs", "duration": "10s",
                "traffic": {{"rate": 50, "attempt_timeout": "100ms"}},
                "backend": {{"workers": 5, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "faults": [{{"blackhole": {{"start": "2s", "duration": "8s"}}}}] {extra},
                "policies": [{{"name": "h", "hedging": {{"delay": "20ms", "max_attempts": 3,
                    "non_fatal": ["deadline_exceeded"]}} {budget}}}]}}"#
        );
        simulate(&Scenario::from_json(&json).unwrap(), 0, 0)
            .unwrap()
            .into_summary()
    };
    let off = run(r#", "actions": [{"disable_retries": {"at": "0s"}}]"#, "");
    assert!(off.dropped_retries_disabled > 300, "{off:?}");
    assert_eq!(off.dropped_budget + off.max_attempts_reached, 0, "{off:?}");
    let quota = run(
        "",
        r#", "budget": {"quota": {"capacity": 5, "cost": 5, "refund": 0, "scope": "global"}}"#,
    );
    assert!(quota.dropped_budget > 300, "{quota:?}");
    assert_eq!(quota.max_attempts_reached, 0, "{quota:?}");
}

/// grpc-java's hedging in an outage over the whole run, without pushback:
/// A6's text sends the next hedge at once after each non-fatal failure, so
/// a request spends its 4 attempts in an instant and is over; grpc-java
/// keeps each hedge at its delay, so the 4 attempts take 3 × 500 ms and the
/// requests of the run's last 1.5 s are still out when it ends.
#[test]
fn grpc_java_keeps_its_hedges_at_their_delay_after_a_failure() {
    let mk = |implementation: &str| {
        let json = format!(
            r#"{{"name": "h", "seed": 4, "duration": "10s", "bin": "100ms",
                "traffic": {{"rate": 100}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "faults": [{{"outage": {{"start": "0s", "duration": "10s"}}}}],
                "policies": [{{"name": "h",
                               "hedging": {{"delay": "500ms", "max_attempts": 4,
                                            "non_fatal": ["unavailable"],
                                            "implementation": "{implementation}"}}}}]}}"#
        );
        simulate(&Scenario::from_json(&json).unwrap(), 0, 0).unwrap()
    };
    let a6 = mk("a6");
    let java = mk("grpc-java");
    assert_eq!(a6.summary().unfinished, 0);
    // About 100/s × 1.5 s still waiting for their next hedge.
    let out = java.summary().unfinished as f64;
    assert!((100.0..=200.0).contains(&out), "{out}");
    // Every finished request made its 4 attempts either way.
    let per = |r: &RunResult| {
        r.summary().attempts as f64 / (r.summary().requests - r.summary().unfinished) as f64
    };
    assert!((per(&a6) - 4.0).abs() < 1e-9, "{}", per(&a6));
    assert!(per(&java) > 3.9, "{}", per(&java));
}
