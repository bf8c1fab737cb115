//! The engine against queueing theory and closed-form retry results:
//! Erlang C (M/M/c), Erlang B, M/M/1/K blocking, Little's law, and the
//! attempts per request 1 + p + … + p^N under independent failures (see
//! `docs/model.md`, "Checking the model"). Closed forms are computed here,
//! not copied, and checked against textbook table values first.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str) -> RunResult {
    let s = Scenario::from_json(json).expect("test scenario parses");
    simulate(&s, 0, 0).expect("runs")
}

/// Erlang B by the stable recursion B(k) = A·B(k−1)/(k + A·B(k−1)).
fn erlang_b(c: u32, a: f64) -> f64 {
    (1..=c).fold(1.0, |b, k| a * b / (k as f64 + a * b))
}

/// Erlang C (probability of waiting) and mean time in system for M/M/c.
fn erlang_c(c: u32, lambda: f64, mu: f64) -> (f64, f64) {
    let a = lambda / mu;
    let rho = a / c as f64;
    let b = erlang_b(c, a);
    let p_wait = b / (1.0 - rho * (1.0 - b));
    let wq = p_wait / (c as f64 * mu - lambda);
    (p_wait, wq + 1.0 / mu)
}

fn mmc(c: u32, lambda: f64, duration_s: u64, seed: u64, queue_limit: Option<u64>) -> RunResult {
    let limit = queue_limit.map_or(String::new(), |k| format!(", \"queue_limit\": {k}"));
    run(&format!(
        r#"{{"name": "mmc", "duration": {duration_s}, "warmup": "500s", "seed": {seed}, "bin": "10s",
            "traffic": {{"rate": {lambda}}},
            "backend": {{"workers": {c}, "service_time": {{"exponential": {{"mean": "1s"}}}}{limit}}},
            "policies": [{{"name": "none"}}]}}"#
    ))
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want
}

#[test]
fn closed_forms_match_the_published_tables() {
    let (p, w) = erlang_c(10, 9.0, 1.0);
    assert!((p - 0.6687).abs() < 5e-5 && (w - 1.6687).abs() < 5e-5);
    let (p, _) = erlang_c(100, 95.0, 1.0);
    assert!((p - 0.5065).abs() < 5e-5);
    assert!((erlang_b(10, 8.0) - 0.12166).abs() < 5e-6);
    assert!((erlang_b(100, 90.0) - 0.02696).abs() < 5e-6);
}

#[test]
fn mmc_latency_and_wait_probability_match_erlang_c() {
    for (c, lambda) in [(10u32, 9.0f64), (10, 8.0), (100, 95.0)] {
        let (p_wait, w) = erlang_c(c, lambda, 1.0);
        let r = mmc(c, lambda, 60_000, 11, None);
        let s = &r.summary();
        let mean = s.latency_mean_ms.unwrap() / 1000.0;
        let waited = s.waited as f64 / s.offered as f64;
        assert!(within(mean, w, 0.02), "c={c} λ={lambda}: W {mean} vs {w}");
        assert!(
            within(waited, p_wait, 0.02),
            "c={c} λ={lambda}: P(wait) {waited} vs {p_wait}"
        );
        assert_eq!(
            s.succeeded + s.unfinished,
            s.requests,
            "nothing fails without faults"
        );
    }
}

#[test]
fn littles_law_holds() {
    let r = mmc(10, 9.0, 20_000, 5, None);
    let bins = &r.bins()[50..];
    let n = bins.len() as f64;
    let l = bins
        .iter()
        .map(|b| b.queue_len_avg + 10.0 * b.utilization)
        .sum::<f64>()
        / n;
    let lambda = bins.iter().map(|b| b.demand_rps).sum::<f64>() / n;
    let w = r.summary().latency_mean_ms.unwrap() / 1000.0;
    assert!(within(l, lambda * w, 0.02), "L {l} vs λW {}", lambda * w);
}

#[test]
fn mm1k_blocking_matches_the_formula() {
    // K counts the one in service: queue_limit = K − 1.
    let (rho, k) = (0.9f64, 10i32);
    let want = (1.0 - rho) * rho.powi(k) / (1.0 - rho.powi(k + 1));
    assert!((want - 0.05081).abs() < 5e-5);
    let r = mmc(1, 0.9, 200_000, 7, Some(9));
    let got = r.summary().rejected as f64 / r.summary().offered as f64;
    assert!(within(got, want, 0.05), "blocking {got} vs {want}");
}

#[test]
fn erlang_b_blocking_without_a_waiting_room() {
    for (c, a) in [(10u32, 8.0f64), (100, 90.0)] {
        let want = erlang_b(c, a);
        let r = mmc(c, a, 40_000, 3, Some(0));
        let got = r.summary().rejected as f64 / r.summary().offered as f64;
        assert!(within(got, want, 0.05), "c={c}: blocking {got} vs {want}");
        assert_eq!(r.summary().waited, 0);
    }
}

#[test]
fn retry_amplification_with_independent_failures() {
    // p = 0.5, 3 retries: 1 + p + p² + p³ = 1.875.
    let r = run(r#"{"name": "amp", "duration": "2000s", "seed": 2,
            "traffic": {"rate": 200},
            "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
            "faults": [{"errors": {"start": 0, "duration": "2000s", "rate": 0.5, "status": "unavailable"}}],
            "policies": [{"name": "r3", "max_attempts": 4, "backoff": {"constant": {"delay": "10ms"}}}]}"#);
    let s = &r.summary();
    assert!(
        within(s.amplification(), 1.875, 0.01),
        "amplification {}",
        s.amplification()
    );
    // The share dropped after 4 failures is p⁴.
    let dropped = s.dropped as f64 / s.requests as f64;
    assert!(within(dropped, 0.0625, 0.03), "dropped {dropped}");
    assert_eq!(
        s.succeeded + s.failed + s.dropped + s.unfinished,
        s.requests
    );
    assert!(
        s.fault_start_s.is_none(),
        "a fault over the whole run is background, not an incident"
    );
}
