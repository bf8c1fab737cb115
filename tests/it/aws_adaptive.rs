//! The AWS SDKs' adaptive retry mode end to end: a throttling incident
//! (`resource_exhausted` on half the answers) slows the clients' sending
//! within seconds, requests wait client-side instead, and the rate climbs
//! back along the cubic curve once the throttling stops.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(policy: &str) -> RunResult {
    let json = format!(
        r#"{{"name": "adaptive", "seed": 5, "duration": "120s", "bin": "1s",
            "traffic": {{"rate": 200, "clients": 1}},
            "backend": {{"workers": 50, "service_time": {{"constant": {{"value": "5ms"}}}}}},
            "faults": [{{"errors": {{"start": "20s", "duration": "30s", "rate": 0.5,
                                     "status": "resource_exhausted"}}}}],
            "policies": [{policy}]}}"#
    );
    simulate(&Scenario::from_json(&json).unwrap(), 0, 0).unwrap()
}

fn mean(
    r: &RunResult,
    from: usize,
    to: usize,
    f: impl Fn(&retrysim::metrics::BinRow) -> f64,
) -> f64 {
    r.bins()[from..to].iter().map(f).sum::<f64>() / (to - from) as f64
}

#[test]
fn sending_falls_within_seconds_of_throttling_and_recovers_after() {
    let adaptive = run(r#"{"name": "adaptive", "preset": "aws-adaptive"}"#);
    let standard = run(r#"{"name": "standard", "preset": "aws-standard"}"#);
    let sent = |b: &retrysim::metrics::BinRow| b.first_attempt_rps + b.retry_rps;
    // Before: both send the demand (200/s) and nothing waits.
    assert!((mean(&adaptive, 5, 20, sent) - 200.0).abs() < 10.0);
    assert_eq!(adaptive.bins()[19].client_waiting, Some(0.0));
    // Standard mode keeps sending at least the demand throughout.
    assert!(mean(&standard, 25, 50, sent) >= 200.0);
    // Adaptive: within 3 s of the first throttling error the sending rate
    // is below a quarter of the demand, and stays low while it lasts;
    // the requests wait client-side instead.
    assert!(
        mean(&adaptive, 23, 50, sent) < 50.0,
        "{}",
        mean(&adaptive, 23, 50, sent)
    );
    assert!(adaptive.bins()[45].client_waiting.unwrap() > 1000.0);
    assert!(adaptive.bins()[45].offered_rps < 0.25 * standard.bins()[45].offered_rps);
    // After: the rate climbs back and the queue drains; the last 20 s send
    // the demand again and nothing waits long.
    assert!(
        mean(&adaptive, 100, 120, sent) > 190.0,
        "{}",
        mean(&adaptive, 100, 120, sent)
    );
    assert!(adaptive.bins()[119].client_waiting.unwrap() < 50.0);
    assert!(adaptive.summary().client_wait_ms.unwrap() > 1000.0);
    assert_eq!(standard.summary().client_wait_ms, None);
}

#[test]
fn tokens_go_to_waiting_attempts_in_random_order_by_default() {
    // botocore's threads race for each token (`retries/bucket.py`): the
    // default order is random; `fifo` serves the longest waiting first.
    let random = run(r#"{"name": "random", "preset": "aws-adaptive"}"#);
    let fifo = run(r#"{"name": "fifo", "preset": "aws-adaptive",
            "rate_limiter": {"aws_adaptive": {"order": "fifo"}}}"#);
    let sent = |b: &retrysim::metrics::BinRow| b.first_attempt_rps + b.retry_rps;
    // The order changes who waits, not how fast the client sends.
    let (r, f) = (mean(&random, 23, 50, sent), mean(&fifo, 23, 50, sent));
    assert!((r / f - 1.0).abs() < 0.1, "random {r}/s, fifo {f}/s");
    // Served in random order, some requests wait far longer: the tail of
    // the latency grows (43 s against 35 s here; the real client's 26.4 s
    // against the first-come-first-served model's 23.2 s in the testbed).
    let (rs, fs) = (&random.summary(), &fifo.summary());
    let (r99, f99) = (rs.latency_p99_ms.unwrap(), fs.latency_p99_ms.unwrap());
    assert!(r99 > 1.1 * f99, "p99 random {r99} ms, fifo {f99} ms");
    // Most requests never wait: the median is the same.
    assert_eq!(rs.latency_p50_ms, fs.latency_p50_ms);
}
