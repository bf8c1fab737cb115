//! Invariants on randomized scenarios: every request ends exactly once, the
//! bins add up to the summary, levels stay in range. The engine's own debug
//! assertions (nothing scheduled in the past, no request ending twice) are
//! on in the test profile, so these runs check them too.

use proptest::prelude::*;
use retrysim::metrics::RunResult;
use retrysim::model::run::{simulate, RunError};
use retrysim::scenario::Scenario;
use serde_json::{json, Value};

fn dist() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..30).prop_map(|v| json!({"constant": {"value": format!("{v}ms")}})),
        (1u64..30).prop_map(|m| json!({"exponential": {"mean": format!("{m}ms")}})),
        (0u64..10, 0u64..20).prop_map(|(a, b)| json!({"uniform": {"min": format!("{a}ms"), "max": format!("{}ms", a + b)}})),
        (1u64..10, 0u64..40).prop_map(|(m, d)| json!({"lognormal": {"median": format!("{m}ms"), "p99": format!("{}ms", m + d)}})),
        (0u64..10, 0u64..5).prop_map(|(m, s)| json!({"normal": {"mean": format!("{m}ms"), "stddev": format!("{s}ms")}})),
    ]
}

fn backoff() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0u64..200).prop_map(|d| json!({"constant": {"delay": format!("{d}ms")}})),
        (1u64..100, 0u64..100).prop_map(|(i, s)| json!({"linear": {"initial": format!("{i}ms"), "step": format!("{s}ms"), "max": "1s"}})),
        (1u64..100, 1u32..6).prop_map(|(i, d)| json!({"exponential": {"initial": format!("{i}ms"), "multiplier": 2.0, "max": "2s", "max_doublings": d}})),
        (1u64..100, 0u32..4).prop_map(|(i, d)| json!({"cloud_tasks": {"min_backoff": format!("{i}ms"), "max_backoff": "1s", "max_doublings": d}})),
        (1u64..50).prop_map(|b| json!({"decorrelated": {"base": format!("{b}ms"), "max": "1s"}})),
    ]
}

fn jitter() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!("none")),
        Just(json!("full")),
        Just(json!("equal")),
        Just(json!("next_step")),
        (0.0f64..1.0).prop_map(|f| json!({"proportional": f})),
    ]
}

fn fault() -> impl Strategy<Value = Value> {
    let window = (0u64..15, 1u64..10);
    prop_oneof![
        (window.clone(), any::<bool>(), prop::sample::select(vec!["unavailable", "internal", "resource_exhausted"]))
            .prop_map(|((s, d), flush, st)| json!({"outage": {"start": s, "duration": d, "flush": flush, "status": st}})),
        window.clone().prop_map(|(s, d)| json!({"blackhole": {"start": s, "duration": d}})),
        (window.clone(), 0.2f64..5.0).prop_map(|((s, d), f)| json!({"slowdown": {"start": s, "duration": d, "factor": f}})),
        (window.clone(), 0u32..4).prop_map(|((s, d), w)| json!({"capacity": {"start": s, "duration": d, "workers": w}})),
        (window, 0.0f64..1.0, prop::sample::select(vec!["unavailable", "resource_exhausted", "internal"]))
            .prop_map(|((s, d), r, st)| json!({"errors": {"start": s, "duration": d, "rate": r, "status": st}})),
    ]
}

prop_compose! {
    fn scenario()(
        mode in prop::sample::select(vec!["open", "open", "closed", "burst"]),
        arrival in prop::sample::select(vec!["poisson", "uniform"]),
        rate in 10.0f64..400.0,
        clients in 1u32..50,
        workers in 1u32..6,
        service in dist(),
        net in prop::option::of(dist()),
        queue_limit in prop::option::of(0u64..50),
        lifo in any::<bool>(),
        drop_expired in any::<bool>(),
        timeout in prop::option::of(5u64..300),
        deadline in prop::option::of(50u64..3000),
        admission in 0u64..3,
        reject in 0u64..3,
        faults in prop::collection::vec(fault(), 0..4),
        max_attempts in -1i64..6,
        mrd in prop::option::of(0u64..5),
        backoff in backoff(),
        jitter in jitter(),
        disable_at in prop::option::of(0u64..20),
        shed in prop::option::of((0u64..20, 0.0f64..1.0)),
        seed in 0u64..1000,
        gate in prop::sample::select(vec![
            json!(null),
            json!({"budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}}),
            json!({"budget": {"ratio": {"percent": 10, "min_per_second": 1, "ttl": "2s", "scope": "global"}}}),
            json!({"budget": {"quota": {}}}),
            json!({"circuit_breaker": {"failure_rate": 0.2, "window": "1s", "open_for": "500ms", "min_calls": 3}}),
            json!({"circuit_breaker": {"failure_rate": 0.5, "window": "2s", "open_for": "1s", "scope": "global"},
                   "budget": {"token_bucket": {"max_tokens": 5, "token_ratio": 0.5, "scope": "global"}}}),
            json!({"budget": {"concurrency": {"percent": 20, "min": 2}}}),
            json!({"budget": {"rate": {"per_second": 20, "burst": 5, "scope": {"group": 3}}}}),
            json!({"budget": {"quota": {"cost": 14, "timeout_cost": 14, "throttling_cost": 5, "scope": {"group": 4}}},
                   "circuit_breaker": {"failure_rate": 0.3, "window": "1s", "open_for": "300ms", "scope": {"group": 2}},
                   "throttling_backoff": {"exponential": {"initial": "20ms", "max": "500ms"}},
                   "honor_retry_after": true, "pushback": {"bounded": "100ms"}}),
        ]),
        client_side in prop::sample::select(vec![
            json!(null),
            json!({"rate_limiter": {"aws_adaptive": {}}, "budget": {"quota": {}}}),
            json!({"rate_limiter": {"aws_adaptive": {"scope": {"group": 5}, "bucket": "100ms"}}}),
            json!({"hedging": {"delay": "20ms", "max_attempts": 3, "non_fatal": ["unavailable", "deadline_exceeded"]}}),
            json!({"hedging": {"delay": "0s", "max_attempts": 5, "non_fatal": ["unavailable", "resource_exhausted"]},
                   "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}, "honor_retry_after": true}),
            json!({"hedging": {"delay": "5ms", "max_attempts": 2},
                   "budget": {"concurrency": {"min": 1}},
                   "circuit_breaker": {"failure_rate": 0.5, "window": "1s", "open_for": "200ms", "min_calls": 3}}),
        ]),
        retry_after in prop::option::of(1u64..300),
        contention in prop::bool::weighted(0.2),
        dispatcher in prop::option::of((1.0f64..300.0, 1u32..20, 1u32..10, 10u64..500, prop::option::of(0u64..20))),
        force in prop::sample::select(vec![json!(null), json!([0, 2, 5, 40]), json!(0.5)]),
        throttle in any::<bool>(),
    ) -> Value {
        let mut traffic = match mode {
            "open" => json!({"rate": rate, "arrival": arrival,
                "profile": [{"at": "0s", "scale": 1.0}, {"at": "10s", "scale": 1.5}, {"at": "20s", "scale": 0.5}]}),
            "closed" => json!({"think_time": {"exponential": {"mean": "20ms"}}}),
            _ => json!({"burst_spread": "2s", "burst_at": "1s"}),
        };
        traffic["mode"] = json!(mode);
        traffic["clients"] = json!(clients);
        if let Some(n) = net { traffic["network_delay"] = n; }
        if let (Some(t), None) = (timeout, dispatcher) { traffic["attempt_timeout"] = json!(format!("{t}ms")); }
        if let Some(d) = deadline { traffic["deadline"] = json!(format!("{d}ms")); }
        let mut backend = json!({"workers": workers, "service_time": service, "discipline": if lifo {"lifo"} else {"fifo"},
            "drop_expired": drop_expired, "admission_cost": format!("{admission}ms"), "reject_cost": format!("{reject}ms")});
        if let Some(k) = queue_limit { backend["queue_limit"] = json!(k); }
        if let Some(ra) = retry_after { backend["retry_after"] = json!(format!("{ra}ms")); }
        if seed % 3 == 0 {
            backend["usl"] = json!({"sigma": 0.05, "kappa": 0.02});
        }
        if contention && lifo {
            // The concurrency backend, with the queue's numbers reused.
            backend = json!({"kind": "concurrency", "base": format!("{admission}ms"), "per_request": format!("{reject}ms"),
                "drop_expired": drop_expired, "reject_status": "resource_exhausted"});
            if queue_limit.is_some() { backend["max_concurrency"] = json!(workers); }
        } else if contention {
            backend = json!({"kind": "contention", "reject_status": "resource_exhausted"});
        }
        let mut policy = json!({"name": "p", "max_attempts": max_attempts, "backoff": backoff, "jitter": jitter,
            "retry_on": ["unavailable", "aborted", "deadline_exceeded", "resource_exhausted"]});
        if let Some(m) = mrd { policy["max_retry_duration"] = json!(m); }
        if let Some(extra) = gate.as_object() {
            for (k, v) in extra { policy[k] = v.clone(); }
        }
        // Hedging and rate limiters: not with a Cloud Tasks dispatcher
        // (refused by validation).
        if let (Some(extra), None) = (client_side.as_object(), &dispatcher) {
            if extra.contains_key("hedging") {
                // Hedging replaces the retry fields.
                policy = json!({"name": "p"});
                if let Some(b) = gate.get("circuit_breaker") { policy["circuit_breaker"] = b.clone(); }
            }
            for (k, v) in extra { policy[k] = v.clone(); }
        }
        let mut actions = vec![];
        if let Some(at) = disable_at { actions.push(json!({"disable_retries": {"at": at}})); }
        if let Some((at, f)) = shed { actions.push(json!({"shed_load": {"at": at, "fraction": f, "duration": "3s"}})); }
        let mut v = json!({"name": "random", "seed": seed, "duration": "25s", "bin": "500ms", "traffic": traffic, "backend": backend,
               "faults": faults, "actions": actions, "policies": [policy]});
        if let Some((rate, burst, conc, deadline, force_at)) = dispatcher {
            v["dispatcher"] = json!({"max_dispatches_per_second": rate, "max_burst_size": burst,
                "max_concurrent_dispatches": conc, "dispatch_deadline": format!("{deadline}ms")});
            if throttle {
                v["dispatcher"]["throttling"] = json!({"window": "700ms", "start": 0.2});
            }
            if let Some(at) = force_at {
                let mut f = json!({"at": at});
                if force.is_array() { f["tasks"] = force.clone(); }
                if force.is_number() { f["fraction"] = force.clone(); }
                v["actions"].as_array_mut().unwrap().push(json!({"force_run": f}));
            }
        }
        v
    }
}

/// Runs policy 0 of `s`; `None` when the run stalls, which must be what
/// the lint predicts (a zero-time loop): a scenario whose time stops is
/// refused, and that is the only refusal allowed.
pub(crate) fn run_or_predicted_stall(s: &Scenario) -> Result<Option<RunResult>, TestCaseError> {
    match simulate(s, 0, 0) {
        Ok(r) => Ok(Some(r)),
        Err(RunError::Stalled { .. }) => {
            prop_assert!(s.zero_time_loop(0).is_some(), "an unpredicted stall");
            Ok(None)
        }
        Err(e) => panic!("{e}"),
    }
}

/// Every request ends exactly once, and the time series (bins of `bin_s`)
/// add up to the summary's counts: requests, successes, attempts, retries, offered
/// load, the requests that ended, and the backlog left at the end (the
/// scenario has no warm-up, so the backlog is what is unfinished).
pub(crate) fn counts_add_up(r: &RunResult, bin_s: f64) -> Result<(), TestCaseError> {
    let m = r.summary();
    prop_assert_eq!(
        m.succeeded + m.failed + m.dropped + m.unfinished,
        m.requests
    );
    let total = |f: fn(&retrysim::metrics::BinRow) -> f64| -> u64 {
        r.bins().iter().map(|b| (f(b) * bin_s).round() as u64).sum()
    };
    prop_assert_eq!(total(|b| b.demand_rps), m.requests);
    prop_assert_eq!(total(|b| b.goodput_rps), m.succeeded);
    prop_assert_eq!(
        total(|b| b.first_attempt_rps) + total(|b| b.retry_rps),
        m.attempts
    );
    // Retries are counted per request, whether or not every request sent
    // a first attempt (a breaker, a dispatcher or a limiter may hold it).
    prop_assert_eq!(total(|b| b.retry_rps), m.retries);
    prop_assert!(m.retries >= m.attempts.saturating_sub(m.requests));
    prop_assert_eq!(total(|b| b.offered_rps), m.offered);
    let ended: u64 = m.attempt_entries().map(|(_, c)| c[0] + c[1]).sum();
    prop_assert_eq!(ended, m.succeeded + m.failed + m.dropped);
    let last = r.bins().last().expect("a run has bins");
    prop_assert_eq!(last.backlog as u64, m.unfinished);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_request_ends_exactly_once_and_bins_add_up(v in scenario()) {
        let s = Scenario::from_json(&v.to_string()).unwrap();
        let Some(r) = run_or_predicted_stall(&s)? else { return Ok(()) };
        let m = &r.summary();
        let bin = 0.5;
        counts_add_up(&r, bin)?;
        let total = |f: fn(&retrysim::metrics::BinRow) -> f64| -> u64 {
            r.bins().iter().map(|b| (f(b) * bin).round() as u64).sum()
        };
        prop_assert_eq!(r.bins().len(), 50);
        prop_assert_eq!(total(|b| b.dropped_rps), m.dropped);
        prop_assert_eq!(total(|b| b.rejected_rps), m.rejected);
        prop_assert_eq!(total(|b| b.wasted_rps), m.wasted);
        prop_assert!(m.offered <= m.attempts);
        prop_assert!(m.wasted <= m.served);
        // Why requests were given up: the reasons add up to the outcomes.
        prop_assert_eq!(
            m.max_attempts_reached + m.dropped_deadline + m.dropped_budget + m.dropped_retries_disabled,
            m.dropped
        );
        prop_assert_eq!(m.failed_breaker + m.failed_non_retryable, m.failed);
        prop_assert_eq!(m.dead_lettered(), m.max_attempts_reached);
        // The attempt distribution covers every request that ended, and
        // the attempts they made.
        let succeeded: u64 = m.attempt_entries().map(|(_, c)| c[0]).sum();
        prop_assert_eq!(succeeded, m.succeeded);
        let made: u64 = m.attempt_entries().map(|(k, c)| k as u64 * (c[0] + c[1])).sum();
        prop_assert!(made <= m.attempts);
        prop_assert!(m.attempt_counts.first().is_none_or(|c| c[0] == 0), "nobody succeeds without an attempt");
        prop_assert_eq!(total(|b| b.dead_lettered_rps), m.max_attempts_reached);
        prop_assert_eq!(total(|b| b.finished_rps), m.succeeded + m.failed + m.dropped);
        prop_assert!(total(|b| b.tail_finished_rps) <= total(|b| b.finished_rps));
        // Each duplicate execution is an attempt beyond its request's
        // first completion, and every success is a completion.
        prop_assert!(m.duplicates + m.succeeded <= m.attempts);
        prop_assert!(m.max_task_age_s <= 25.0 + 1e-9);
        let limit = s.spec().backend.queue_limit.unwrap_or(u64::MAX) as f64;
        for b in r.bins() {
            prop_assert!(b.utilization >= 0.0 && b.utilization <= 1.0 + 1e-9, "utilization {}", b.utilization);
            prop_assert!(b.queue_len_avg <= b.queue_len_max + 1e-9);
            prop_assert!(b.queue_len_max <= limit);
            prop_assert!(b.retrying >= 0.0);
            prop_assert!(b.retrying <= b.backlog, "waiting to retry {} of {} open", b.retrying, b.backlog);
            prop_assert!(b.retry_rate.is_none_or(|r| (0.0..=1.0).contains(&r)));
            prop_assert!(b.oldest_pending_age_s >= 0.0 && b.oldest_pending_age_s <= b.t_s + bin + 1e-9);
            prop_assert_eq!(b.oldest_pending_age_s == 0.0, b.backlog == 0.0);
            if let (Some(p50), Some(p99)) = (b.retry_gap_p50_ms, b.retry_gap_p99_ms) {
                prop_assert!(p50 <= p99);
            }
        }
        if let Some(h) = s.policies()[0].hedging {
            // Never more hedges than max_attempts per request.
            prop_assert!(m.attempts <= u64::from(h.max_attempts) * m.requests);
        }
        for b in r.bins() {
            prop_assert_eq!(b.client_waiting.is_some(), s.policies()[0].rate_limiter.is_some());
        }
        if !s.policies()[0].may_retry() {
            let p = &s.policies()[0];
            if s.spec().dispatcher.is_none() && p.breaker.is_none() && p.rate_limiter.is_none() {
                prop_assert_eq!(m.attempts, m.requests);
            } else {
                // Tasks still waiting for a dispatch token, requests an
                // open breaker refused, and requests still queued in the
                // client's rate limiter at the end have no attempt.
                prop_assert!(m.attempts <= m.requests);
            }
        }
    }
}

/// A downstream tier: its backend, how the tier above calls it, and
/// whether it hears of cancellations.
fn tier_entry() -> impl Strategy<Value = Value> {
    (
        prop::bool::weighted(0.75),
        1u32..6,
        dist(),
        prop::option::of(0u64..30),
        prop::option::of(5u64..200),
        1u32..4,
        any::<bool>(),
        prop::option::of((1i64..5, backoff(), jitter())),
        any::<bool>(),
    )
        .prop_map(|(queue, workers, service, queue_limit, timeout, calls, cancel, own, drop)| {
            let mut backend = if queue {
                json!({"workers": workers, "service_time": service, "drop_expired": drop})
            } else {
                json!({"kind": "concurrency", "base": "2ms", "per_request": "1ms", "max_concurrency": workers * 4})
            };
            if let (true, Some(k)) = (queue, queue_limit) {
                backend["queue_limit"] = json!(k);
            }
            let policy = match own {
                None => json!("compared"),
                Some((m, b, j)) => json!({"max_attempts": m, "backoff": b, "jitter": j,
                    "retry_on": ["unavailable", "deadline_exceeded", "resource_exhausted", "internal"]}),
            };
            let mut e = json!({"backend": backend, "policy": policy, "calls": calls, "propagate_cancel": cancel});
            if let Some(t) = timeout {
                e["attempt_timeout"] = json!(format!("{t}ms"));
            }
            e
        })
}

prop_compose! {
    fn chain_scenario()(
        rate in 10.0f64..300.0,
        workers in 1u32..8,
        service in dist(),
        timeout in prop::option::of(5u64..300),
        tiers in prop::collection::vec(tier_entry(), 1..4),
        faults in prop::collection::vec((fault(), 0usize..4), 0..4),
        max_attempts in 1i64..5,
        backoff in backoff(),
        jitter in jitter(),
        below in prop::option::of(1i64..3),
        gate in prop::sample::select(vec![
            json!(null),
            json!({"budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}}),
            json!({"budget": {"ratio": {"percent": 10, "min_per_second": 1, "ttl": "2s", "scope": "global"}}}),
            json!({"circuit_breaker": {"failure_rate": 0.2, "window": "1s", "open_for": "500ms", "min_calls": 3}}),
        ]),
        seed in 0u64..1000,
    ) -> Value {
        let n = tiers.len();
        let downstream: Vec<Value> = tiers.into_iter().enumerate().map(|(i, mut e)| {
            e["name"] = json!(format!("t{}", i + 1));
            e
        }).collect();
        let faults: Vec<Value> = faults.into_iter().map(|(mut f, t)| {
            if t > 0 && t <= n {
                let obj = f.as_object_mut().unwrap();
                let kind = obj.keys().next().unwrap().clone();
                obj[&kind]["tier"] = json!(format!("t{t}"));
            }
            f
        }).collect();
        let mut traffic = json!({"rate": rate, "clients": 20});
        if let Some(t) = timeout { traffic["attempt_timeout"] = json!(format!("{t}ms")); }
        let mut policy = json!({"name": "p", "max_attempts": max_attempts, "backoff": backoff, "jitter": jitter,
            "retry_on": ["unavailable", "deadline_exceeded", "resource_exhausted", "internal"]});
        if let Some(extra) = gate.as_object() {
            for (k, v) in extra { policy[k] = v.clone(); }
        }
        if let Some(m) = below {
            policy["downstream_policy"] = json!({"max_attempts": m, "backoff": {"constant": {"delay": "5ms"}}});
        }
        json!({"name": "chain", "seed": seed, "duration": "15s", "bin": "500ms", "traffic": traffic,
               "backend": {"workers": workers, "service_time": service},
               "downstream": downstream, "faults": faults, "policies": [policy]})
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Every call at every tier ends exactly once, each tier's bins add up
    /// to its counts, and no tier is called more than the attempts served
    /// above it times its fan-out.
    #[test]
    fn every_call_at_every_tier_ends_exactly_once(v in chain_scenario()) {
        let s = Scenario::from_json(&v.to_string()).unwrap();
        let r = match simulate(&s, 0, 0) {
            Ok(r) => r,
            Err(RunError::Stalled { .. }) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let spec = s.spec();
        prop_assert_eq!(r.tiers.len(), spec.downstream.len() + 1);
        for (i, t) in r.tiers.iter().enumerate() {
            let m = &t.summary;
            prop_assert_eq!(m.succeeded + m.failed + m.dropped + m.unfinished, m.requests, "tier {}", i);
            let total = |f: fn(&retrysim::metrics::BinRow) -> f64| -> u64 {
                t.bins.iter().map(|b| (f(b) * 0.5).round() as u64).sum()
            };
            prop_assert_eq!(t.bins.len(), 30);
            prop_assert_eq!(total(|b| b.demand_rps), m.requests);
            prop_assert_eq!(total(|b| b.goodput_rps), m.succeeded);
            prop_assert_eq!(total(|b| b.offered_rps), m.offered);
            prop_assert_eq!(total(|b| b.wasted_rps), m.wasted);
            prop_assert_eq!(total(|b| b.first_attempt_rps) + total(|b| b.retry_rps), m.attempts);
            prop_assert!(m.offered <= m.attempts);
            prop_assert!(m.wasted <= m.served);
            prop_assert!(t.failed <= t.attempts);
            prop_assert_eq!(t.bins.last().unwrap().backlog as u64, m.unfinished);
            if i > 0 {
                let d = &spec.downstream[i - 1];
                let above = &r.tiers[i - 1].summary;
                prop_assert!(m.requests <= u64::from(d.calls) * above.served,
                    "tier {}: {} calls for {} served above", i, m.requests, above.served);
            }
            for b in &t.bins {
                prop_assert!(b.utilization >= 0.0 && b.utilization <= 1.0 + 1e-9);
                prop_assert!(b.retrying <= b.backlog);
            }
        }
    }
}

/// A breaker that refuses first attempts leaves requests without any
/// attempt; the retries the others made are still counted, each request's
/// attempts after its first, as the bins count them.
#[test]
fn retries_are_counted_when_requests_send_no_attempt() {
    let s = Scenario::from_json(
        &json!({"name": "brk", "seed": 5, "duration": "60s", "bin": "1s",
            "traffic": {"rate": 100, "clients": 1},
            "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
            "faults": [{"errors": {"start": "0s", "duration": "60s", "rate": 0.5, "status": "unavailable"}}],
            "policies": [{"name": "breaker", "max_attempts": 3,
                "backoff": {"constant": {"delay": "10ms"}}, "retry_on": ["unavailable"],
                "circuit_breaker": {"failure_rate": 0.3, "window": "10s", "open_for": "5s",
                    "half_open_probes": 1, "min_calls": 10}}]})
        .to_string(),
    )
    .unwrap();
    let r = simulate(&s, 0, 0).unwrap();
    let m = r.summary();
    assert!(
        m.attempts < m.requests,
        "the breaker refuses most first attempts"
    );
    let sent: f64 = r.bins().iter().map(|b| b.retry_rps).sum();
    assert!(m.retries > 0);
    assert_eq!(m.retries, sent.round() as u64);
    counts_add_up(&r, 1.0).unwrap();
}
