//! Budgets, breakers and pushback end to end, through the simulator (the
//! claims of `docs/policies.md`, "Amplification under independent
//! failures"): an `errors` fault over the whole run
//! makes every served attempt fail independently with probability p.
//!
//! The backend has ample capacity (1000 req/s offered to 50 workers at 1 ms,
//! 50,000 req/s) and no timeouts, so the only thing that shapes the attempt
//! count is the policy: amplification = attempts / requests.

use retrysim::metrics::{RunResult, RunSummary};
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

/// Three retries (4 attempts), 10 ms constant backoff, no jitter; `extra` is
/// spliced into the policy object (a budget, a breaker).
fn policy(name: &str, extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { ", " };
    format!(
        r#"{{"name": "{name}", "max_attempts": 4,
            "backoff": {{"constant": {{"delay": "10ms"}}}}{sep}{extra}}}"#
    )
}

/// A run of `secs` seconds at `rate` req/s spread over `clients` clients,
/// every served attempt failing with probability `p` (`unavailable`).
fn scenario(p: f64, rate: f64, clients: u32, secs: u64, policies: &[String]) -> Scenario {
    let json = format!(
        r#"{{"name": "amp", "seed": 3, "duration": "{secs}s", "bin": "1s",
            "traffic": {{"rate": {rate}, "clients": {clients}}},
            "backend": {{"workers": 50, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "faults": [{{"errors": {{"start": "0s", "duration": "{secs}s", "rate": {p},
                                      "status": "unavailable"}}}}],
            "policies": [{}]}}"#,
        policies.join(", ")
    );
    Scenario::from_json(&json).unwrap_or_else(|e| panic!("test scenario: {e}\n{json}"))
}

fn run_one(s: &Scenario, i: usize) -> RunResult {
    simulate(s, i, 0).expect("runs")
}

/// Attempts per request whose first attempt was sent (Brooker's "calls to
/// the backend per request"): requests refused outright by an open breaker
/// make no call and are left out. From the bins, which count every attempt.
fn calls_per_sent_request(r: &RunResult) -> f64 {
    let first: f64 = r.bins().iter().map(|b| b.first_attempt_rps).sum();
    let retries: f64 = r.bins().iter().map(|b| b.retry_rps).sum();
    (first + retries) / first
}

fn geometric(p: f64, retries: i32) -> f64 {
    (0..=retries).map(|k| p.powi(k)).sum()
}

fn ends_once(s: &RunSummary) {
    assert_eq!(
        s.succeeded + s.failed + s.dropped + s.unfinished,
        s.requests,
        "every request ends exactly once: {s:?}"
    );
}

#[test]
fn three_retries_give_the_geometric_sum() {
    for p in [0.1, 0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("retries-3", "")]);
        let r = run_one(&s, 0).into_summary();
        ends_once(&r);
        let want = geometric(p, 3);
        let got = r.amplification();
        assert!(
            (got - want).abs() <= 0.01 * want,
            "p = {p}: amplification {got:.4}, want 1 + p + p² + p³ = {want:.4}"
        );
        // A request is dropped when all four attempts fail: p^4.
        let drop = r.dropped as f64 / r.requests as f64;
        assert!(
            (drop - p.powi(4)).abs() < 0.01,
            "p = {p}: dropped {drop:.4}"
        );
        assert_eq!(r.failed, 0, "unavailable is retryable: nothing fails");
    }
}

#[test]
fn a_ten_percent_ratio_budget_caps_amplification() {
    // Brooker's 10 % budget: no reserve, one client.
    let budget = r#""budget": {"ratio": {"percent": 10, "min_per_second": 0}}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("budget-10pct", budget)]);
        let r = run_one(&s, 0).into_summary();
        ends_once(&r);
        let a = r.amplification();
        assert!(a <= 1.12, "p = {p}: amplification {a:.4}");
        // The budget binds for every p here (1 + p + p² + p³ > 1.1), so the
        // retries it lets through are close to the full 10 %.
        assert!(a >= 1.09, "p = {p}: amplification {a:.4}");
    }
}

#[test]
fn the_ratio_reserve_adds_min_per_second_of_retries() {
    // Finagle/Linkerd default reserve: 10 retries/s on top of the 10 %.
    // At 1000 req/s that is +0.01 per request.
    let budget = r#""budget": {"ratio": {"percent": 10, "min_per_second": 10}}"#;
    let s = scenario(0.75, 1000.0, 1, 60, &[policy("reserve", budget)]);
    let a = run_one(&s, 0).into_summary().amplification();
    assert!((1.10..=1.12).contains(&a), "amplification {a:.4}");
}

#[test]
fn per_client_budgets_with_a_reserve_do_not_bind_at_low_per_client_rates() {
    // 100 clients at 10 req/s each: each client's own reserve (10 retries/s)
    // covers all its retries, so a per-client budget limits nothing; the
    // same budget shared by all clients (`scope: global`) holds at 10 % +
    // 10/s over 1000 req/s. With one client both scopes are the same thing.
    let p = 0.5;
    let per_client = r#""budget": {"ratio": {"percent": 10, "min_per_second": 10}}"#;
    let global = r#""budget": {"ratio": {"percent": 10, "min_per_second": 10, "scope": "global"}}"#;
    let pols = [policy("client", per_client), policy("global", global)];

    let many = scenario(p, 1000.0, 100, 60, &pols);
    let a_client = run_one(&many, 0).into_summary().amplification();
    let a_global = run_one(&many, 1).into_summary().amplification();
    let free = geometric(p, 3);
    assert!(
        (a_client - free).abs() < 0.02 * free,
        "per-client: {a_client:.4} vs unbudgeted {free:.4}"
    );
    assert!(a_global <= 1.12, "global: {a_global:.4}");

    let one = scenario(p, 1000.0, 1, 60, &pols);
    let (c, g) = (
        run_one(&one, 0).into_summary(),
        run_one(&one, 1).into_summary(),
    );
    assert_eq!(
        c, g,
        "one client: per-client and global are the same budget"
    );

    // Without a reserve the ratio alone decides, per client or not.
    let no_reserve = r#""budget": {"ratio": {"percent": 10, "min_per_second": 0}}"#;
    let s = scenario(p, 1000.0, 100, 60, &[policy("client0", no_reserve)]);
    let a = run_one(&s, 0).into_summary().amplification();
    assert!((1.08..=1.11).contains(&a), "per-client, no reserve: {a:.4}");
}

#[test]
fn a_breaker_at_ten_percent_stops_almost_every_call() {
    let breaker = r#""circuit_breaker": {"failure_rate": 0.1}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("breaker-10pct", breaker)]);
        let res = run_one(&s, 0);
        let r = &res.summary();
        ends_once(r);
        let a = r.amplification();
        assert!(a <= 1.05, "p = {p}: amplification {a:.4}");
        // Refused calls are not attempts: the breaker sends far fewer
        // calls than there are requests, and the refused requests fail.
        assert!(a < 0.05, "p = {p}: amplification {a:.4}");
        assert!(r.failed as f64 > 0.95 * r.requests as f64, "{r:?}");
        // Per request that was let through, the calls stay near one
        // (Brooker's "about 1.0": he counts calls per request that calls).
        let sent = calls_per_sent_request(&res);
        assert!(sent <= 1.05, "p = {p}: calls per sent request {sent:.3}");
    }
}

#[test]
fn per_client_breakers_each_trip_on_their_own_traffic() {
    let p = 0.5;
    let client = r#""circuit_breaker": {"failure_rate": 0.1}"#;
    let global = r#""circuit_breaker": {"failure_rate": 0.1, "scope": "global"}"#;
    let s = scenario(
        p,
        1000.0,
        100,
        60,
        &[policy("client", client), policy("global", global)],
    );
    let a_client = run_one(&s, 0).into_summary().amplification();
    let a_global = run_one(&s, 1).into_summary().amplification();
    // A global breaker sends a handful of probes per open period; 100
    // per-client breakers each send their own (10 calls to trip, then a
    // probe every 5 s), so they let through many more calls, still < 1.
    assert!(a_global < 0.01, "global {a_global:.4}");
    assert!(a_client > 5.0 * a_global, "client {a_client:.4}");
    assert!(a_client < 1.0, "client {a_client:.4}");
}

#[test]
fn grpc_token_bucket_drains_and_amplification_falls_to_one() {
    // gRFC A6 throttling, max 10, ratio 0.1: each failed attempt costs 1,
    // each success gives 0.1 back. For p > 1/11 the count drifts down,
    // and below max/2 = 5 no retry is allowed: after the first handful of
    // retries every request makes one attempt.
    let bucket = r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("token-bucket", bucket)]);
        let res = run_one(&s, 0);
        let r = &res.summary();
        ends_once(r);
        let retries = r.retries;
        assert!(retries < 50, "p = {p}: {retries} retries");
        // Retries only happen at the very start.
        let late: f64 = res.bins().iter().skip(5).map(|b| b.retry_rps).sum();
        assert!(late < 20.0, "p = {p}: {late} retries after 5 s");
    }
    // Below the drift point (p < 1/11) the bucket stays full and retries
    // flow as if it were not there.
    let s = scenario(0.05, 1000.0, 1, 60, &[policy("token-bucket", bucket)]);
    let a = run_one(&s, 0).into_summary().amplification();
    let free = geometric(0.05, 3);
    assert!(
        (a - free).abs() < 0.01 * free,
        "p = 0.05: {a:.4} vs {free:.4}"
    );
}

#[test]
fn grpc_token_bucket_per_client_allows_a_few_retries_per_client() {
    // 100 per-client buckets each allow their first few retries (10 → 5
    // tokens) before draining: a few hundred retries in all, where one
    // global bucket allows a few.
    let p = 0.5;
    let client = r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}"#;
    let global = r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1,
                                                "scope": "global"}}"#;
    let s = scenario(
        p,
        1000.0,
        100,
        60,
        &[policy("client", client), policy("global", global)],
    );
    let rc = run_one(&s, 0).into_summary().retries;
    let rg = run_one(&s, 1).into_summary().retries;
    assert!(rg < 50, "global {rg}");
    assert!((100..1500).contains(&rc), "client {rc}");
}

#[test]
fn aws_quota_settles_where_refunds_pay_for_retries() {
    // botocore standard mode: 500 units, a retry costs 5, a first-attempt
    // success refunds 1, a success after retries refunds the 5. Once the
    // 500 units are spent, retries are paid for by first-attempt successes:
    // a failed retry costs 5 net, so in steady state
    // retries · 5p ≈ (1 − p) and amplification ≈ 1 + (1 − p) / (5p).
    let quota = r#""budget": {"quota": {}}"#;
    for p in [0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 120, &[policy("aws-quota", quota)]);
        let res = run_one(&s, 0);
        ends_once(res.summary());
        // Steady state, after the initial 500 units are gone (bins 20 s on).
        let demand: f64 = res.bins().iter().skip(20).map(|b| b.demand_rps).sum();
        let retries: f64 = res.bins().iter().skip(20).map(|b| b.retry_rps).sum();
        let got = 1.0 + retries / demand;
        let want = 1.0 + (1.0 - p) / (5.0 * p);
        assert!(
            (got - want).abs() < 0.03,
            "p = {p}: steady amplification {got:.4}, model {want:.4}"
        );
        assert!(res.summary().amplification() < geometric(p, 3));
    }
    // At p = 0.3 the refunds (0.7 per request) outpay the net cost of the
    // failed retries (5 · (p² + p³) = 0.585): the quota never binds.
    let s = scenario(0.3, 1000.0, 1, 60, &[policy("aws-quota", quota)]);
    let a = run_one(&s, 0).into_summary().amplification();
    let free = geometric(0.3, 3);
    assert!(
        (a - free).abs() < 0.01 * free,
        "p = 0.3: {a:.4} vs {free:.4}"
    );
}

/// An outage from 10 s to 20 s; the backend asks for `retry_after`.
fn pushback(retry_after: &str, policies: &[String], fault: &str) -> Scenario {
    let json = format!(
        r#"{{"name": "pushback", "seed": 5, "duration": "30s", "bin": "100ms",
            "traffic": {{"rate": 1000, "attempt_timeout": "500ms"}},
            "backend": {{"workers": 50, "service_time": {{"constant": {{"value": "1ms"}}}},
                         "retry_after": "{retry_after}"}},
            "faults": [{fault}],
            "policies": [{}]}}"#,
        policies.join(", ")
    );
    Scenario::from_json(&json).unwrap_or_else(|e| panic!("test scenario: {e}\n{json}"))
}

const OUTAGE: &str = r#"{"outage": {"start": "10s", "duration": "10s"}}"#;

fn retries_between(r: &RunResult, from: f64, to: f64) -> f64 {
    r.bins()
        .iter()
        .filter(|b| b.t_s >= from - 1e-9 && b.t_s < to - 1e-9)
        .map(|b| b.retry_rps * 0.1)
        .sum()
}

fn unlimited(name: &str, delay: &str, honor: bool) -> String {
    format!(
        r#"{{"name": "{name}", "max_attempts": 0, "honor_retry_after": {honor},
            "backoff": {{"constant": {{"delay": "{delay}"}}}}}}"#
    )
}

#[test]
fn honored_pushback_delays_retries_by_at_least_retry_after() {
    let s = pushback(
        "2s",
        &[
            unlimited("honor", "100ms", true),
            unlimited("ignore", "100ms", false),
            unlimited("longer", "3s", true),
        ],
        OUTAGE,
    );
    let honor = run_one(&s, 0);
    let ignore = run_one(&s, 1);
    let longer = run_one(&s, 2);
    assert_eq!(retries_between(&honor, 0.0, 10.0), 0.0, "no retries before");
    // The first failure is at 10 s: no retry in the next 2 s...
    assert_eq!(retries_between(&honor, 10.0, 12.0), 0.0);
    // ...then the whole first second of failures comes back at once.
    assert!(retries_between(&honor, 12.0, 12.1) > 50.0);
    // Without honouring, retries follow the 100 ms backoff.
    assert!(retries_between(&ignore, 10.1, 10.2) > 50.0);
    // "At least": a backoff longer than the pushback wins (3 s, not 2 s).
    assert_eq!(retries_between(&longer, 10.0, 13.0), 0.0);
    assert!(retries_between(&longer, 13.0, 13.1) > 50.0);
    // Pushback spaces retries out: fewer attempts during the outage.
    assert!(honor.summary().attempts * 5 < ignore.summary().attempts);
}

#[test]
fn pushback_does_not_apply_to_timeouts() {
    // A blackhole answers nothing: attempts time out after 500 ms and the
    // retry follows the backoff alone (there is no answer to carry a
    // pushback), so the first retries come at 10.6 s.
    let s = pushback(
        "2s",
        &[unlimited("honor", "100ms", true)],
        r#"{"blackhole": {"start": "10s", "duration": "10s"}}"#,
    );
    let r = run_one(&s, 0);
    assert_eq!(retries_between(&r, 10.0, 10.6), 0.0);
    assert!(retries_between(&r, 10.6, 10.7) > 50.0);
}

#[test]
fn a_lost_half_open_probe_does_not_wedge_the_breaker() {
    // The breaker opens during an outage (10–20 s). Its half-open probe at
    // 20 s goes into a blackhole (20–25 s); with no attempt timeout the
    // client gives up on the request at its 1 s deadline and the probe's
    // outcome is never recorded. The breaker must not stay half-open
    // forever: once the backend is healthy (25 s on) requests succeed again.
    let json = r#"{"name": "probe", "seed": 9, "duration": "60s", "bin": "1s",
        "traffic": {"rate": 100, "deadline": "1s"},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}},
        "faults": [{"outage": {"start": "10s", "duration": "10s"}},
                   {"blackhole": {"start": "20s", "duration": "5s"}}],
        "policies": [{"name": "breaker",
                      "circuit_breaker": {"failure_rate": 0.5, "open_for": "5s"}}]}"#;
    let s = Scenario::from_json(json).unwrap();
    let r = run_one(&s, 0);
    let late: f64 = r.bins().iter().skip(45).map(|b| b.goodput_rps).sum::<f64>() / 15.0;
    assert!(late > 90.0, "goodput from 45 s on: {late:.1}/s");
}

#[test]
fn a_retries_only_breaker_keeps_first_attempts_and_stops_retries() {
    // Brooker's breaker: stop *retrying* while the failure rate is high, so
    // amplification is about 1.0 and success stays at 1 − p.
    let breaker = r#""circuit_breaker": {"failure_rate": 0.1, "retries_only": true}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("breaker-retries-only", breaker)]);
        let m = run_one(&s, 0).into_summary();
        let a = m.amplification();
        assert!((1.0..=1.05).contains(&a), "p={p}: amplification {a:.4}");
        let success = m.success_rate();
        assert!(
            (success - (1.0 - p)).abs() < 0.02,
            "p={p}: success {success:.3}"
        );
    }
}

#[test]
fn exact_pushback_retries_after_exactly_retry_after_and_restarts_the_backoff() {
    // gRPC (gRFC A6): a 3 s backoff, but the server says 2 s: retry at 2 s.
    let exact = r#"{"name": "exact", "max_attempts": 0, "honor_retry_after": true,
        "pushback": "exact", "backoff": {"constant": {"delay": "3s"}}}"#;
    let s = pushback("2s", &[exact.to_string()], OUTAGE);
    let r = run_one(&s, 0);
    assert_eq!(retries_between(&r, 10.0, 12.0), 0.0);
    assert!(
        retries_between(&r, 12.0, 12.1) > 50.0,
        "retries come at exactly 2 s"
    );
    let p = retrysim::policy::resolve(
        &serde_json::from_str(r#"{"name": "g", "preset": "grpc"}"#).unwrap(),
    )
    .unwrap();
    assert_eq!(p.pushback, retrysim::policy::Pushback::Exact);
}

#[test]
fn after_an_exact_pushback_the_backoff_starts_again_from_initial() {
    // Requests arrive only until 10.5 s; those of 10.0–10.5 s fail in the
    // outage with a 0.5 s pushback, retry into a blackhole, time out 0.5 s
    // later, and then back off `initial` (1 s) again, not the grown 2 s.
    let json = r#"{"name": "restart", "seed": 5, "duration": "20s", "bin": "100ms",
        "traffic": {"rate": 1000, "attempt_timeout": "500ms",
                    "profile": [{"at": "0s", "scale": 1}, {"at": "10.5s", "scale": 1},
                                {"at": "10.501s", "scale": 0}]},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "1ms"}},
                    "retry_after": "500ms"},
        "faults": [{"outage": {"start": "10s", "duration": "500ms"}},
                   {"blackhole": {"start": "10.5s", "duration": "9.5s"}}],
        "policies": [{"name": "exact", "max_attempts": 0, "honor_retry_after": true,
                      "pushback": "exact",
                      "backoff": {"exponential": {"initial": "1s", "multiplier": 2, "max": "60s"}}}]}"#;
    let r = run_one(&Scenario::from_json(json).unwrap(), 0);
    // Pushback retries at 10.5–11.0 s, timeouts at 11.0–11.5 s, then
    // retries after 1 s at 12.0–12.5 s (restarted), none at 13.0–13.5 s.
    assert!(retries_between(&r, 10.5, 11.0) > 400.0);
    assert!(
        retries_between(&r, 12.0, 12.6) > 400.0,
        "{}",
        retries_between(&r, 12.0, 12.6)
    );
    assert_eq!(retries_between(&r, 13.0, 13.6), 0.0);
}

// --- The mechanisms added for the client-side features: each against the
// value its definition gives (the README's amplification table). ---

#[test]
fn hedging_on_fast_failures_is_retrying_at_once() {
    // Answers come back in 1 ms, long before the 10 ms hedge delay, and a
    // non-fatal failure sends the next hedge at once: four attempts at most,
    // each failing with probability p, so 1 + p + p² + p³ per request.
    let hedge = r#"{"name": "hedging", "hedging": {"delay": "10ms", "max_attempts": 4,
                    "non_fatal": ["unavailable"]}}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[hedge.to_string()]);
        let r = run_one(&s, 0).into_summary();
        ends_once(&r);
        let want = geometric(p, 3);
        let got = r.amplification();
        assert!(
            (got - want).abs() <= 0.01 * want,
            "p = {p}: {got:.4} vs {want:.4}"
        );
        let drop = r.dropped as f64 / r.requests as f64;
        assert!((drop - p.powi(4)).abs() < 0.01, "all four failed: {drop}");
    }
    // A fatal status ends the request at its first failure.
    let fatal = r#"{"name": "fatal", "hedging": {"delay": "10ms", "max_attempts": 4,
                    "non_fatal": ["internal"]}}"#;
    let r = run_one(&scenario(0.5, 1000.0, 1, 30, &[fatal.to_string()]), 0).into_summary();
    assert!((r.amplification() - 1.0).abs() < 1e-9);
    assert!((r.failed as f64 / r.requests as f64 - 0.5).abs() < 0.02);
}

#[test]
fn hedges_never_exceed_max_attempts() {
    // A blackhole answers nothing: every request sends its first attempt
    // and a hedge every 20 ms until it has sent max_attempts, then waits for
    // its 1 s deadline. Exactly N attempts per request, never N + 1.
    for n in [2u32, 3, 5, 9] {
        let json = format!(
            r#"{{"name": "hedge-cap", "seed": 4, "duration": "20s", "bin": "1s",
                "traffic": {{"rate": 200, "deadline": "1s"}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "faults": [{{"blackhole": {{"start": "0s", "duration": "20s"}}}}],
                "policies": [{{"name": "h", "hedging": {{"delay": "20ms", "max_attempts": {n},
                               "non_fatal": ["unavailable"]}}}}]}}"#
        );
        let r = run_one(&Scenario::from_json(&json).unwrap(), 0).into_summary();
        ends_once(&r);
        let finished = r.requests - r.unfinished;
        let cap = n.min(5) as f64;
        // Requests still open at the end may not have sent them all yet.
        assert!(r.attempts as f64 <= cap * r.requests as f64, "n = {n}");
        assert!(
            r.attempts as f64 >= cap * finished as f64,
            "n = {n}: {} attempts for {finished} finished requests",
            r.attempts
        );
        assert_eq!(r.dropped, finished, "every one hit its deadline");
    }
}

#[test]
fn tokens_throttle_hedges() {
    // gRFC A6: a hedge needs the throttle above half, and every non-fatal
    // failure takes a token. Once the bucket drains (p > 1/11), hedges
    // stop: about one attempt per request, as the retry row.
    let hedge = r#"{"name": "throttled-hedging", "hedging": {"delay": "10ms", "max_attempts": 4,
                    "non_fatal": ["unavailable"]},
                    "budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1}}}"#;
    for p in [0.3, 0.5] {
        let s = scenario(p, 1000.0, 1, 60, &[hedge.to_string()]);
        let res = run_one(&s, 0);
        ends_once(res.summary());
        let hedges = res.summary().retries;
        assert!(hedges < 50, "p = {p}: {hedges} hedges");
        assert!(
            (res.summary().success_rate() - (1.0 - p)).abs() < 0.02,
            "success {}",
            res.summary().success_rate()
        );
    }
}

#[test]
fn ratio_budget_of_linkerd_and_finagle_allows_a_fifth_plus_ten_per_second() {
    // 20 % of requests + 10 retries/s over the 10 s window: at 1000 req/s
    // at most 0.2 + 0.01 retries per request.
    let budget = r#""budget": {"ratio": {"percent": 20, "min_per_second": 10, "ttl": "10s"}}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("ratio-20", budget)]);
        let a = run_one(&s, 0).into_summary().amplification();
        assert!(a <= 1.215, "p = {p}: {a:.4}");
        assert!(a >= 1.19, "p = {p}: {a:.4} (the budget binds)");
    }
}

#[test]
fn envoy_concurrency_budget_follows_littles_law() {
    // Envoy's retry budget counts a retry from the decision to retry (its
    // backoff included) to its outcome: 10 ms + 1 ms here. Active attempts
    // are ~1 (1000/s × 1 ms), so the floor of 3 is the limit, and by
    // Little's law retries/s ≤ 3 / 0.011 s = 273: amplification ≤ 1.273.
    let budget = r#""budget": {"concurrency": {"percent": 20, "min": 3}}"#;
    let cap = 1.0 + 3.0 / (0.011 * 1000.0);
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 60, &[policy("envoy", budget)]);
        let r = run_one(&s, 0).into_summary();
        ends_once(&r);
        let a = r.amplification();
        assert!(a <= cap + 0.005, "p = {p}: {a:.4} > {cap:.4}");
        assert!(
            a >= 1.15,
            "p = {p}: {a:.4} (the budget lets the floor through)"
        );
        assert!(a < geometric(p, 3), "p = {p}: binds");
    }
}

#[test]
fn envoy_budget_floor_lets_three_concurrent_retries_through_at_low_load() {
    // What the floor lets through: 10 req/s, every attempt fails, 1 s
    // backoff. Active attempts are ~0, so 20 % allows nothing, but the
    // floor keeps 3 retries outstanding at all times: 3 per second, or
    // 0.3 retries per request, whatever the percent.
    let slow = r#"{"name": "floor", "max_attempts": 4,
        "backoff": {"constant": {"delay": "1s"}}, "budget": {"concurrency": {"percent": 20, "min": 3}}}"#;
    let s = scenario(1.0, 10.0, 1, 120, &[slow.to_string()]);
    let res = run_one(&s, 0);
    let retries: f64 = res.bins().iter().skip(10).map(|b| b.retry_rps).sum::<f64>() / 110.0;
    assert!((retries - 3.0).abs() < 0.15, "retries/s {retries:.3}");
}

#[test]
fn client_go_bucket_delays_instead_of_refusing() {
    // One bucket, 10 tokens/s, burst 100, and retries never refused: over
    // T = 120 s at most 100 + 10·T retries go out whatever p is; the rest
    // wait their turn (in debt) and are still waiting at the end.
    let budget = r#""budget": {"rate": {"per_second": 10, "burst": 100}}"#;
    for p in [0.3, 0.75] {
        let s = scenario(p, 1000.0, 1, 120, &[policy("client-go", budget)]);
        let r = run_one(&s, 0).into_summary();
        ends_once(&r);
        let retries = r.retries as f64;
        assert!(retries <= 100.0 + 10.0 * 120.0 + 1.0, "p = {p}: {retries}");
        assert!(retries >= 100.0 + 10.0 * 119.0, "p = {p}: {retries}");
        // The bucket never refuses: the only drops are the few requests that
        // got all four attempts (out of the early burst) and failed them.
        assert!(r.dropped < 50, "dropped {}", r.dropped);
        assert!(r.unfinished > 0, "the waiting retries are still open");
    }
}

#[test]
fn aws_2026_quota_settles_where_refunds_pay_for_retries() {
    // The same balance as the pre-2026 quota with a retry costing 14:
    // amplification ≈ 1 + (1 − p) / (14 p) once the 500 units are gone.
    let quota = r#""budget": {"quota": {"cost": 14, "timeout_cost": 14, "throttling_cost": 5}}"#;
    for p in [0.3, 0.5, 0.75] {
        let s = scenario(p, 1000.0, 1, 120, &[policy("aws-2026", quota)]);
        let res = run_one(&s, 0);
        let demand: f64 = res.bins().iter().skip(20).map(|b| b.demand_rps).sum();
        let retries: f64 = res.bins().iter().skip(20).map(|b| b.retry_rps).sum();
        let got = 1.0 + retries / demand;
        let want = 1.0 + (1.0 - p) / (14.0 * p);
        assert!((got - want).abs() < 0.02, "p = {p}: {got:.4} vs {want:.4}");
    }
}

#[test]
fn adaptive_limiter_stays_off_without_throttling_errors() {
    // `unavailable` is not a throttling error: the limiter never switches
    // on, so aws-adaptive is exactly the standard quota.
    let quota = r#""budget": {"quota": {}}"#;
    let adaptive = r#""budget": {"quota": {}}, "rate_limiter": {"aws_adaptive": {}}"#;
    let s = scenario(
        0.5,
        1000.0,
        1,
        60,
        &[policy("q", quota), policy("a", adaptive)],
    );
    let (q, a) = (run_one(&s, 0), run_one(&s, 1));
    assert_eq!(q.summary().attempts, a.summary().attempts);
    assert_eq!(q.summary().succeeded, a.summary().succeeded);
    assert_eq!(a.summary().client_wait_ms, Some(0.0));
}

#[test]
fn next_step_jitter_moves_retries_not_their_number() {
    let p = 0.5;
    let j = r#"{"name": "next-step", "max_attempts": 4, "jitter": "next_step",
                "backoff": {"exponential": {"initial": "10ms", "max": "80ms"}}}"#;
    let r = run_one(&scenario(p, 1000.0, 1, 60, &[j.to_string()]), 0).into_summary();
    let want = geometric(p, 3);
    assert!((r.amplification() - want).abs() < 0.01 * want);
}

/// One scenario, two scopes: the runs must be the same run.
fn same_run(clients: u32, a: &str, b: &str) {
    let s = scenario(0.5, 1000.0, clients, 30, &[policy("a", a), policy("b", b)]);
    let (ra, rb) = (run_one(&s, 0), run_one(&s, 1));
    assert_eq!(ra.summary(), rb.summary(), "{a} vs {b}");
    assert_eq!(ra.bins(), rb.bins(), "{a} vs {b}");
}

#[test]
fn a_group_of_one_is_per_client_and_a_group_of_everyone_is_global() {
    let kinds = [
        r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1, "scope": SCOPE}}"#,
        r#""budget": {"ratio": {"percent": 10, "min_per_second": 1, "scope": SCOPE}}"#,
        r#""budget": {"quota": {"scope": SCOPE}}"#,
        r#""budget": {"concurrency": {"scope": SCOPE}}"#,
        r#""circuit_breaker": {"failure_rate": 0.4, "scope": SCOPE}"#,
        r#""budget": {"quota": {}}, "rate_limiter": {"aws_adaptive": {"scope": SCOPE}}"#,
    ];
    for k in kinds {
        same_run(
            100,
            &k.replace("SCOPE", r#""client""#),
            &k.replace("SCOPE", r#"{"group": 1}"#),
        );
        same_run(
            100,
            &k.replace("SCOPE", r#""global""#),
            &k.replace("SCOPE", r#"{"group": 100}"#),
        );
        // Groups larger than the client count are one group too.
        same_run(
            100,
            &k.replace("SCOPE", r#""global""#),
            &k.replace("SCOPE", r#"{"group": 1000}"#),
        );
    }
    // And a group in between is neither.
    let b = r#""budget": {"token_bucket": {"max_tokens": 10, "token_ratio": 0.1, "scope": SCOPE}}"#;
    let s = scenario(
        0.5,
        1000.0,
        100,
        30,
        &[
            policy("client", &b.replace("SCOPE", r#""client""#)),
            policy("g10", &b.replace("SCOPE", r#"{"group": 10}"#)),
            policy("global", &b.replace("SCOPE", r#""global""#)),
        ],
    );
    let r: Vec<u64> = (0..3)
        .map(|i| run_one(&s, i).into_summary().retries)
        .collect();
    assert!(r[0] > r[1] && r[1] > r[2], "retries by scope: {r:?}");
}
