//! The `concurrency` backend (no waiting room; an attempt takes
//! `base + per_request ×` the attempts already in service) and the worker
//! pool's Universal Scalability Law slowdown, against closed forms: Little's
//! law for the mean concurrency and the saturated throughput of a USL pool.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str) -> RunResult {
    let s = Scenario::from_json(json).expect("test scenario parses");
    simulate(&s, 0, 0).expect("runs")
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want
}

/// Mean of a column over the bins from `from_s` on.
fn mean_from(r: &RunResult, from_s: f64, col: impl Fn(&retrysim::metrics::BinRow) -> f64) -> f64 {
    let bins: Vec<_> = r.bins().iter().filter(|b| b.t_s >= from_s).collect();
    bins.iter().map(|b| col(b)).sum::<f64>() / bins.len() as f64
}

#[test]
fn mean_concurrency_obeys_littles_law() {
    // N = λ·(base + per_request·N)  ⇒  N = λ·base / (1 − λ·per_request).
    for (lambda, base, per, seed) in [(40.0, 1.0, 0.010, 3u64), (100.0, 0.2, 0.004, 4)] {
        let want = lambda * base / (1.0 - lambda * per);
        let r = run(&format!(
            r#"{{"name": "little", "duration": "1200s", "warmup": "100s", "bin": "10s", "seed": {seed},
                "traffic": {{"rate": {lambda}}},
                "backend": {{"kind": "concurrency", "base": "{}ms", "per_request": "{}us",
                             "max_concurrency": 100000}},
                "policies": [{{"name": "none"}}]}}"#,
            base * 1000.0,
            per * 1e6
        ));
        let n = mean_from(&r, 100.0, |b| b.queue_len_avg);
        assert!(within(n, want, 0.05), "λ={lambda}: N {n} vs {want}");
        let u = mean_from(&r, 100.0, |b| b.utilization) * 100000.0;
        assert!(within(u, n, 1e-6), "utilization × limit is the concurrency");
        let s = &r.summary();
        assert_eq!(s.rejected, 0);
        assert_eq!(s.succeeded + s.unfinished, s.requests);
        // The mean latency is base + per_request × N as well.
        let latency = s.latency_mean_ms.unwrap() / 1000.0;
        assert!(within(latency, base + per * want, 0.05), "W {latency}");
        assert!(within(
            s.capacity_rps,
            100000.0 / (base + per * 99999.0),
            1e-9
        ));
    }
}

#[test]
fn the_concurrency_limit_rejects_and_is_the_capacity() {
    // 100/s against at most 5 in service at 100 ms each: mostly rejected.
    let r = run(r#"{"name": "limit", "duration": "100s", "bin": "10s",
            "traffic": {"rate": 100},
            "backend": {"kind": "concurrency", "base": "100ms", "per_request": "0s",
                        "max_concurrency": 5, "reject_status": "resource_exhausted"},
            "policies": [{"name": "none"}]}"#);
    let s = &r.summary();
    assert!(s.rejected > 0);
    assert!(r.bins().iter().all(|b| b.queue_len_max <= 5.0));
    assert!(within(s.capacity_rps, 50.0, 1e-9), "{}", s.capacity_rps);
    // Served ≤ capacity × duration.
    assert!(s.succeeded as f64 <= 50.0 * 100.0 + 5.0);
}

#[test]
fn fields_that_make_no_sense_for_the_kind_are_refused() {
    let bad = [
        (
            r#""workers": 3, "base": "1s", "per_request": "1ms""#,
            "backend.workers",
        ),
        (
            r#""queue_limit": 3, "base": "1s", "per_request": "1ms""#,
            "backend.queue_limit",
        ),
        (
            r#""service_time": {"constant": {"value": "1s"}}, "base": "1s", "per_request": "1ms""#,
            "backend.service_time",
        ),
        (r#""base": "1s""#, "backend.per_request"),
        (r#""per_request": "1s""#, "backend.base"),
        (
            r#""base": "1s", "per_request": "1ms", "max_concurrency": 0"#,
            "backend.max_concurrency",
        ),
    ];
    for (fields, path) in bad {
        let e = Scenario::from_json(&format!(
            r#"{{"name": "x", "duration": "10s", "traffic": {{"rate": 1}},
                "backend": {{"kind": "concurrency", {fields}}}, "policies": [{{"name": "p"}}]}}"#
        ))
        .err()
        .unwrap_or_else(|| panic!("{fields} is accepted"))
        .to_string();
        assert!(e.contains(path), "{fields}: {e}");
    }
    let e = Scenario::from_json(
        r#"{"name": "x", "duration": "10s", "traffic": {"rate": 1},
            "backend": {"workers": 1, "service_time": {"constant": {"value": "1s"}}, "base": "1s"},
            "policies": [{"name": "p"}]}"#,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("backend.base"), "{e}");
}

fn usl_pool(usl: &str, rate: f64, workers: u32) -> RunResult {
    run(&format!(
        r#"{{"name": "usl", "duration": "400s", "warmup": "100s", "bin": "10s", "seed": 9,
            "traffic": {{"rate": {rate}}},
            "backend": {{"workers": {workers}, "service_time": {{"constant": {{"value": "100ms"}}}},
                         "queue_limit": 1000 {usl}}},
            "policies": [{{"name": "none"}}]}}"#
    ))
}

#[test]
fn usl_with_zero_coefficients_changes_nothing() {
    let plain = usl_pool("", 80.0, 10);
    let zero = usl_pool(r#", "usl": {"sigma": 0, "kappa": 0}"#, 80.0, 10);
    assert_eq!(plain.bins(), zero.bins());
    assert_eq!(
        format!("{:?}", plain.summary()),
        format!("{:?}", zero.summary())
    );
}

#[test]
fn a_saturated_usl_pool_serves_n_over_s_times_the_factor() {
    // Saturated (arrivals far above capacity, a full waiting room), every
    // attempt starts with all N workers busy: throughput
    // N / (S·(1 + σ(N−1) + κN(N−1))).
    let (n, s) = (10.0f64, 0.1f64);
    let mut last = f64::INFINITY;
    for (sigma, kappa) in [(0.0, 0.0), (0.05, 0.0), (0.05, 0.01), (0.05, 0.05)] {
        let r = usl_pool(
            &format!(r#", "usl": {{"sigma": {sigma}, "kappa": {kappa}}}"#),
            1000.0,
            n as u32,
        );
        let factor = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        let want = n / (s * factor);
        let got = mean_from(&r, 100.0, |b| b.goodput_rps);
        assert!(
            within(got, want, 0.03),
            "σ={sigma} κ={kappa}: {got} vs {want}"
        );
        assert!(within(r.summary().capacity_rps, want, 1e-9));
        assert!(got < last, "more coherency cost, less throughput");
        last = got;
    }
}
