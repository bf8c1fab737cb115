//! Multi-tier topologies (`downstream`): retries multiply down a chain of
//! services, budgets bound that product as their definition says, fan-out
//! multiplies calls, cancellation stops wasted work below, and faults hit
//! only the tier they name.

use retrysim::metrics::{RunResult, TierRun};
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

/// frontend → service → database, each with plenty of workers and 1 ms
/// constant service; the database answers every attempt with
/// `unavailable` for the whole run (no timeouts anywhere). `policies` is
/// the JSON list; `db_policy` the database entry's policy.
fn chain(policies: &str, db_policy: &str, calls: u32) -> Scenario {
    let text = format!(
        r#"{{"name": "chain", "duration": "30s", "bin": "1s",
            "traffic": {{"rate": 100, "clients": 50}},
            "backend": {{"name": "frontend", "workers": 200,
                         "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "downstream": [
              {{"name": "service", "calls": {calls},
                "backend": {{"workers": 400, "service_time": {{"constant": {{"value": "1ms"}}}}}}}},
              {{"name": "database", "calls": {calls}, "policy": {db_policy},
                "backend": {{"workers": 2000, "service_time": {{"constant": {{"value": "1ms"}}}}}}}}
            ],
            "faults": [{{"errors": {{"start": "0s", "duration": "30s", "rate": 1.0,
                         "status": "unavailable", "tier": "database"}}}}],
            "policies": {policies}}}"#
    );
    Scenario::from_json(&text).unwrap()
}

const EVERY: &str =
    r#"{"name": "every", "max_attempts": 3, "backoff": {"constant": {"delay": "10ms"}}}"#;
const TOP: &str = r#"{"name": "top", "max_attempts": 3, "backoff": {"constant": {"delay": "10ms"}},
                      "downstream_policy": {"max_attempts": 1}}"#;

fn run(s: &Scenario, policy: usize) -> RunResult {
    simulate(s, policy, 0).unwrap()
}

fn tier<'a>(r: &'a RunResult, name: &str) -> &'a TierRun {
    r.tiers.iter().find(|t| t.name == name).unwrap()
}

/// Attempts reaching `name` per top-level request that ended (requests
/// still open at the end have not made all their attempts yet).
fn per_request(r: &RunResult, name: &str) -> f64 {
    let s = &r.summary();
    let ended = s.requests - s.unfinished;
    tier(r, name).attempts as f64 / ended as f64
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want
}

#[test]
fn attempts_at_the_bottom_are_the_product_of_the_attempt_limits() {
    let s = chain(&format!("[{EVERY}, {TOP}]"), r#""compared""#, 1);
    let every = run(&s, 0);
    let names: Vec<&str> = every.tiers.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["frontend", "service", "database"]);
    for (name, want) in [("frontend", 3.0), ("service", 9.0), ("database", 27.0)] {
        let got = per_request(&every, name);
        assert!(
            within(got, want, 0.02),
            "{name}: {got} per request, want {want}"
        );
    }
    let top = run(&s, 1);
    for name in ["frontend", "service", "database"] {
        let got = per_request(&top, name);
        assert!(within(got, 3.0, 0.02), "{name}: {got} per request, want 3");
    }
    // Every database attempt was served and failed, and so did every
    // attempt above it.
    for t in &every.tiers {
        assert!(
            t.attempts - t.failed <= 60,
            "{}: {} of {} failed",
            t.name,
            t.failed,
            t.attempts
        );
    }
    assert_eq!(every.summary().succeeded, 0);
}

#[test]
fn a_ratio_budget_at_one_layer_bounds_its_retries_by_its_percentage() {
    // Retries to the database may be at most 10 % of the calls made to it
    // (no minimum rate, deposits living longer than the run): the service
    // makes 9 calls per request, so at most 9 × 1.1 attempts reach the
    // database instead of 27.
    let budget = r#"{"max_attempts": 3, "backoff": {"constant": {"delay": "10ms"}},
        "budget": {"ratio": {"percent": 10, "min_per_second": 0, "ttl": "60s", "scope": "global"}}}"#;
    let s = chain(&format!("[{EVERY}]"), budget, 1);
    let r = run(&s, 0);
    let calls = tier(&r, "database").summary.requests as f64;
    let attempts = tier(&r, "database").attempts as f64;
    let retries = attempts - calls;
    assert!(retries > 0.0, "the budget lets some retries through");
    assert!(
        retries <= 0.10 * calls + 1.0,
        "{retries} retries for {calls} calls"
    );
    let per = per_request(&r, "database");
    assert!(
        (9.0 * 0.98..=9.0 * 1.1 * 1.02).contains(&per),
        "{per} per request"
    );
    // Every call failed: at its attempt limit, or refused a retry.
    let db = &tier(&r, "database").summary;
    assert!(db.dropped_budget > db.max_attempts_reached);
    assert_eq!(
        db.dropped_budget + db.max_attempts_reached + db.unfinished,
        db.requests
    );
}

#[test]
fn fan_out_multiplies_calls_and_every_call_must_succeed() {
    let text = r#"{"name": "fan", "duration": "20s", "bin": "1s",
        "traffic": {"rate": 50, "clients": 10},
        "backend": {"workers": 100, "service_time": {"constant": {"value": "2ms"}}},
        "downstream": [
          {"name": "mid", "calls": 2, "backend": {"workers": 200, "service_time": {"constant": {"value": "2ms"}}}},
          {"name": "leaf", "calls": 3, "backend": {"workers": 400, "service_time": {"constant": {"value": "2ms"}}}}
        ],
        "policies": [{"name": "once"}]}"#;
    let r = run(&Scenario::from_json(text).unwrap(), 0);
    let s = &r.summary();
    assert_eq!(s.succeeded + s.unfinished, s.requests);
    assert!(within(per_request(&r, "mid"), 2.0, 0.01));
    assert!(within(per_request(&r, "leaf"), 6.0, 0.01));
    // Latency: the top's 2 ms, then the middle's 2 ms and its leaves' 2 ms
    // (in parallel), plus the clients' hops (none here): 6 ms.
    assert_eq!(s.latency_p50_ms.map(|v| v.round()), Some(6.0));
}

/// A chain whose database swallows every attempt (blackhole): the service
/// calls it with a 50 ms attempt timeout and retries, while the frontend
/// gives up on the service after 100 ms.
fn blackhole(propagate: bool) -> RunResult {
    let text = format!(
        r#"{{"name": "cancel", "duration": "20s", "bin": "1s",
            "traffic": {{"rate": 100, "clients": 10}},
            "backend": {{"workers": 100, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "downstream": [
              {{"name": "service", "attempt_timeout": "100ms", "propagate_cancel": {propagate},
                "policy": {{"max_attempts": 1}},
                "backend": {{"workers": 100, "service_time": {{"constant": {{"value": "1ms"}}}}}}}},
              {{"name": "database", "attempt_timeout": "50ms", "propagate_cancel": {propagate},
                "policy": {{"max_attempts": 10, "backoff": {{"constant": {{"delay": "20ms"}}}}}},
                "backend": {{"workers": 100, "service_time": {{"constant": {{"value": "1ms"}}}}}}}}
            ],
            "faults": [{{"blackhole": {{"start": "0s", "duration": "20s", "tier": "database"}}}}],
            "policies": [{{"name": "once"}}]}}"#
    );
    run(&Scenario::from_json(&text).unwrap(), 0)
}

#[test]
fn cancellation_stops_the_retries_below_a_caller_that_gave_up() {
    let on = blackhole(true);
    let off = blackhole(false);
    // Each database call: attempts at 0, 70, 140, … ms (50 ms timeout +
    // 20 ms backoff). Cancelled when the service's caller gives up at
    // 100 ms: 2 attempts. Left alone: all 10.
    let per_on = per_request(&on, "database");
    let per_off = per_request(&off, "database");
    assert!(within(per_on, 2.0, 0.02), "with cancellation: {per_on}");
    assert!(within(per_off, 10.0, 0.02), "without: {per_off}");
    assert_eq!(on.summary().succeeded, 0);
    // The service's workers are freed at the caller's timeout either way.
    assert_eq!(
        tier(&on, "service").attempts,
        tier(&off, "service").attempts
    );
}

#[test]
fn a_fault_strikes_only_the_tier_it_names() {
    // The database is down, not the frontend: the frontend's capacity
    // series never drops, the database's does.
    let s = chain(&format!("[{EVERY}]"), r#""compared""#, 1);
    let r = run(&s, 0);
    assert!(r.bins().iter().all(|b| b.capacity_rps > 0.0));
    let front = tier(&r, "frontend");
    assert_eq!(front.bins, r.bins(), "the top tier's series is the run's");
    let text = r#"{"name": "x", "duration": "10s",
        "traffic": {"rate": 10, "clients": 1},
        "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}},
        "downstream": [{"name": "db", "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}}}],
        "faults": [{"outage": {"start": "1s", "duration": "1s", "tier": "dbx"}}],
        "policies": [{"name": "p"}]}"#;
    let err = Scenario::from_json(text).unwrap_err().to_string();
    assert!(err.contains("faults[0].outage.tier"), "{err}");
    assert!(err.contains("backend, db"), "{err}");
}

#[test]
fn bad_tier_definitions_are_refused_with_their_field() {
    let base = |downstream: &str, policies: &str| {
        format!(
            r#"{{"name": "x", "duration": "10s",
                "traffic": {{"rate": 10, "clients": 1}},
                "backend": {{"workers": 1, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "downstream": {downstream}, "policies": {policies}}}"#
        )
    };
    let ok_backend = r#"{"workers": 1, "service_time": {"constant": {"value": "1ms"}}}"#;
    let cases = [
        (
            base(
                &format!(r#"[{{"name": "backend", "backend": {ok_backend}}}]"#),
                r#"[{"name": "p"}]"#,
            ),
            "downstream[0].name",
        ),
        (
            base(
                &format!(r#"[{{"name": "db", "calls": 0, "backend": {ok_backend}}}]"#),
                r#"[{"name": "p"}]"#,
            ),
            "downstream[0].calls",
        ),
        (
            base(
                &format!(r#"[{{"name": "db", "policy": "grpcc", "backend": {ok_backend}}}]"#),
                r#"[{"name": "p"}]"#,
            ),
            "downstream[0].policy",
        ),
        (
            base(
                &format!(r#"[{{"name": "db", "backend": {ok_backend}}}]"#),
                r#"[{"name": "h", "hedging": {"delay": "10ms", "max_attempts": 2}}]"#,
            ),
            "policies[0]",
        ),
        (
            base(
                r#"[]"#,
                r#"[{"name": "p", "downstream_policy": {"max_attempts": 1}}]"#,
            ),
            "policies[0].downstream_policy",
        ),
        (
            base(
                r#"[{"name": "db", "backend": {"kind": "contention"}}]"#,
                r#"[{"name": "p"}]"#,
            ),
            "downstream[0].backend.kind",
        ),
    ];
    for (text, field) in cases {
        let err = Scenario::from_json(&text).unwrap_err().to_string();
        assert!(err.contains(field), "want {field} in: {err}");
    }

    // Tiers are numbered in one byte: 255 below the top, no more.
    let tiers = |n: usize| {
        let list: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"name": "t{i}", "backend": {ok_backend}}}"#))
            .collect();
        base(&format!("[{}]", list.join(", ")), r#"[{"name": "p"}]"#)
    };
    assert!(Scenario::from_json(&tiers(255)).is_ok());
    let err = Scenario::from_json(&tiers(256)).unwrap_err().to_string();
    assert!(err.contains("downstream: 256 tiers; at most 255"), "{err}");
    // A tier's own policy is one whatever the policies compared: its error
    // is reported once, not once per compared policy.
    let text = base(
        &format!(
            r#"[{{"name": "db", "policy": {{"name": "h", "hedging": {{"delay": "10ms", "max_attempts": 2}}}}, "backend": {ok_backend}}}]"#
        ),
        r#"[{"name": "a"}, {"name": "b"}, {"name": "c"}]"#,
    );
    let err = Scenario::from_json(&text).unwrap_err().to_string();
    assert_eq!(err.matches("downstream[0].policy").count(), 1, "{err}");
    assert!(err.contains("hedging is modelled at the top only"), "{err}");
    // What only the top models is refused below by one rule, which gives
    // its reason: hedging, a client-side rate limiter (an AWS adaptive
    // one), a contention backend.
    let refused = [
        (
            r#"{"name": "h", "hedging": {"delay": "10ms", "max_attempts": 2}}"#,
            ok_backend.to_string(),
            "hedging",
        ),
        (
            r#"{"name": "a", "rate_limiter": {"aws_adaptive": {}}}"#,
            ok_backend.to_string(),
            "a client-side rate limiter",
        ),
        (
            r#""compared""#,
            r#"{"kind": "contention"}"#.to_string(),
            "a contention backend",
        ),
    ];
    for (policy, backend, what) in refused {
        let text = base(
            &format!(r#"[{{"name": "db", "policy": {policy}, "backend": {backend}}}]"#),
            r#"[{"name": "p"}]"#,
        );
        let err = Scenario::from_json(&text).unwrap_err().to_string();
        let why = format!(
            "{what} is modelled at the top only, not at the \"db\" tier: a tier below is \
             called by the workers of the tier above, with no network between them and no \
             clients of its own"
        );
        assert!(err.contains(&why), "want {why:?} in: {err}");
    }
}

/// Wasted work is part of the served work at every tier, across the
/// warm-up's end too: an attempt that calls a tier below counts as wasted
/// (when its calls end) only if its service counted as served.
#[test]
fn wasted_never_exceeds_served_at_any_tier() {
    let s = Scenario::from_json(
        r#"{"name": "wf", "duration": "10s", "warmup": "5s",
            "traffic": {"rate": 100, "attempt_timeout": "500ms"},
            "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
            "downstream": [{"name": "db",
                "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}}}],
            "faults": [{"blackhole": {"start": "0s", "duration": "10s", "tier": "db"}}],
            "policies": [{"name": "p"}]}"#,
    )
    .unwrap();
    let r = run(&s, 0);
    for t in &r.tiers {
        assert!(
            t.wasted <= t.served,
            "{}: {} wasted, {} served",
            t.name,
            t.wasted,
            t.served
        );
    }
    let top = &r.summary();
    assert!(top.wasted > 400 && top.wasted <= top.served, "{top:?}");
}

/// report.html describes every tier, names the tier a fault strikes, and
/// says when a tier below the top peaked above it, with the figure of
/// `tiers.csv`.
#[test]
fn the_page_describes_every_tier_and_the_one_that_peaked() {
    let s = Scenario::from_json(
        r#"{"name": "page", "duration": "20s", "bin": "1s",
            "traffic": {"rate": 300, "clients": 50},
            "backend": {"name": "frontend", "workers": 200,
                        "service_time": {"constant": {"value": "1ms"}}},
            "downstream": [
              {"name": "database", "attempt_timeout": "200ms",
               "backend": {"workers": 10, "service_time": {"constant": {"value": "10ms"}}}}
            ],
            "faults": [{"errors": {"start": "5s", "duration": "5s", "rate": 1.0,
                        "status": "unavailable", "tier": "database"}}],
            "policies": [{"name": "every", "max_attempts": 3,
                          "backoff": {"constant": {"delay": "10ms"}}}]}"#,
    )
    .unwrap();
    let results = vec![run(&s, 0)];
    let dir = tempfile::tempdir().unwrap();
    let perf = retrysim::report::Perf {
        events: 1,
        wall_s: 1.0,
        events_per_s: 1.0,
        threads: 1,
        runs: 1,
        requests: 1,
    };
    let opts = retrysim::report::ReportOptions {
        no_plots: true,
        ..Default::default()
    };
    let report = retrysim::report::RunReport::new(&s, &results);
    retrysim::report::write_all(dir.path(), &report, &perf, &opts).unwrap();
    let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    let csv = std::fs::read_to_string(dir.path().join("tiers.csv")).unwrap();
    assert!(
        page.contains("<th>backend</th><td>tier frontend: 200 workers,"),
        "{page}"
    );
    assert!(
        page.contains(
            "<th>downstream tier</th><td>tier database: 10 workers, service time constant 10ms"
        ),
        "{page}"
    );
    assert!(
        page.contains(
            "; nominal capacity 1000 requests/s; called by frontend, attempt timeout 200ms"
        ),
        "{page}"
    );
    assert!(
        page.contains("<th>fault</th><td>errors 5–10 s on tier database:"),
        "{page}"
    );
    // The database's peak, as tiers.csv gives it.
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let db: Vec<&str> = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|row| row[col("tier")] == "database")
        .unwrap();
    let peak: f64 = db[col("peak_load_ratio")].parse().unwrap();
    assert!(peak > 1.0, "{peak}");
    let said = format!(
        "Tier database peaked at {}× its capacity.",
        retrysim::decimal::num((peak * 10.0).round() / 10.0)
    );
    assert!(page.contains(&said), "{said} not in {page}");
}
