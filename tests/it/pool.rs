//! Pool-mode traffic: open arrivals into an application queue served by a
//! fixed number of client threads, each holding its request from the
//! first attempt to the end. Checked against queueing theory (Little's law
//! and the M/M/c queue), against open mode when threads never run out,
//! and against the real-client testbed: a blocking legacy-mode DynamoDB
//! client on 400 threads through a 10 s outage.

use retrysim::metrics::RunResult;
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str, seed_replication: u32) -> RunResult {
    simulate(&Scenario::from_json(json).unwrap(), 0, seed_replication).unwrap()
}

/// The testbed: 4 workers, 40 ms mean exponential service, a 40-slot
/// waiting room, Poisson arrivals at 80 requests/s, an outage from 10 s to
/// 20 s, a default (legacy-mode) DynamoDB client; `mode` is the traffic's
/// mode and extra fields. Arrivals stop at 36 s and the run goes on until
/// every request has ended, so attempts per request are those of whole
/// requests; open mode gives 4.1 of them, as the open-loop model did in
/// the comparison with the real client (4.09).
fn testbed(seed: u64, mode: &str) -> String {
    format!(
        r#"{{"name": "testbed", "seed": {seed}, "duration": "120s", "bin": "1s",
            "traffic": {{"rate": 80, {mode},
                         "profile": [{{"at": "0s", "scale": 1}}, {{"at": "36s", "scale": 1}},
                                     {{"at": "36.001s", "scale": 0}}]}},
            "backend": {{"workers": 4, "queue_limit": 40,
                         "service_time": {{"exponential": {{"mean": "40ms"}}}}}},
            "faults": [{{"outage": {{"start": "10s", "duration": "10s",
                                     "status": "unavailable"}}}}],
            "policies": [{{"name": "dynamodb", "preset": "aws-legacy-dynamodb"}}]}}"#
    )
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn a_400_thread_pool_moves_the_storm_into_the_application() {
    let seeds = [1, 2, 3, 4];
    let mut pool_amp = Vec::new();
    let mut open_amp = Vec::new();
    for seed in seeds {
        let pool = run(&testbed(seed, r#""mode": "pool", "threads": 400"#), 0);
        let open = run(&testbed(seed, r#""mode": "open""#), 0);
        pool_amp.push(pool.summary().amplification());
        open_amp.push(open.summary().amplification());
        // Before the outage no request waits for a thread.
        assert!(pool.bins()[..9].iter().all(|b| b.app_queue == Some(0.0)));
        assert!(pool.bins()[..9].iter().all(|b| b.app_wait_ms == Some(0.0)));
        // During and after it the threads run out: requests wait in the
        // application, started up to seconds late.
        let busy = pool.bins().iter().filter_map(|b| b.threads_busy);
        assert!(busy.fold(0.0, f64::max) > 399.0, "seed {seed}");
        let late = pool.bins().iter().filter_map(|b| b.app_wait_ms);
        let late = late.fold(0.0, f64::max);
        assert!(late > 1000.0, "seed {seed}: waited at most {late} ms");
        assert!(pool.summary().app_wait_ms.unwrap() > 0.0);
        // Open mode has none of these columns.
        assert_eq!(open.bins()[15].app_queue, None);
        assert_eq!(open.summary().app_wait_ms, None);
        eprintln!(
            "seed {seed}: pool {:.3} attempts/request, peak offered {:.0}/s, \
             latest start {:.2} s, mean wait {:.0} ms; open {:.3}, peak {:.0}/s",
            pool.summary().amplification(),
            pool.summary().peak_offered_rps,
            late / 1000.0,
            pool.summary().app_wait_ms.unwrap(),
            open.summary().amplification(),
            open.summary().peak_offered_rps,
        );
    }
    // The real client: 2.61 attempts per request; open-loop model 4.09.
    let (pool, open) = (mean(pool_amp.into_iter()), mean(open_amp.into_iter()));
    eprintln!("mean: pool {pool:.3}, open {open:.3}");
    assert!((2.2..=3.1).contains(&pool), "pool: {pool}");
    assert!((3.7..=4.5).contains(&open), "open: {open}");
}

/// Every bin but the pool's own columns.
fn without_pool(mut r: RunResult) -> RunResult {
    for b in &mut r.tiers[0].bins {
        (b.app_queue, b.threads_busy, b.app_wait_ms) = (None, None, None);
    }
    r.tiers[0].summary.app_wait_ms = None;
    r
}

#[test]
fn with_threads_to_spare_pool_mode_is_open_mode() {
    // A deadline, timeouts and jittered retries: every stream is used.
    for seed in [1, 2] {
        let spare = run(&testbed(seed, r#""mode": "pool", "threads": 100000"#), 0);
        assert!(spare.bins().iter().all(|b| b.app_queue == Some(0.0)));
        let open = run(&testbed(seed, r#""mode": "open""#), 0);
        assert_eq!(without_pool(spare), open);
    }
    let with = |mode: &str| {
        format!(
            r#"{{"name": "t", "seed": 3, "duration": "40s", "bin": "1s",
                "traffic": {{"rate": 200, "clients": 10, "deadline": "3s",
                             "attempt_timeout": "200ms", {mode}}},
                "backend": {{"workers": 8, "queue_limit": 20,
                             "service_time": {{"exponential": {{"mean": "30ms"}}}}}},
                "faults": [{{"outage": {{"start": "10s", "duration": "5s"}}}}],
                "policies": [{{"name": "std", "preset": "aws-standard"}}]}}"#
        )
    };
    let spare = run(&with(r#""mode": "pool", "threads": 1000000"#), 1);
    assert_eq!(without_pool(spare), run(&with(r#""mode": "open""#), 1));
}

/// An M/M/c queue: `c` threads, Poisson arrivals at `lambda`, each
/// request holding its thread for an exponential time of mean `1/mu` (a
/// backend with workers to spare, no network, no retries).
fn mmc(c: u32, lambda: f64, mu_ms: u32, seed: u64) -> RunResult {
    let json = format!(
        r#"{{"name": "mmc", "seed": {seed}, "duration": "4000s", "bin": "100s",
            "traffic": {{"rate": {lambda}, "mode": "pool", "threads": {c}}},
            "backend": {{"workers": 1000,
                         "service_time": {{"exponential": {{"mean": "{mu_ms}ms"}}}}}},
            "policies": [{{"name": "none", "max_attempts": 1}}]}}"#
    );
    run(&json, 0)
}

/// Erlang C: the mean wait in queue of an M/M/c queue, seconds.
fn erlang_c_wait(c: u32, lambda: f64, mu: f64) -> f64 {
    let a = lambda / mu;
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 0..c {
        if k > 0 {
            term *= a / f64::from(k);
        }
        sum += term;
    }
    let top = term * a / f64::from(c) * f64::from(c) / (f64::from(c) - a);
    let p_wait = top / (sum + top);
    p_wait / (f64::from(c) * mu - lambda)
}

#[test]
fn threads_are_servers_of_an_m_m_c_queue() {
    // c = 4 threads, a = λ/μ = 3: P(wait) = 0.509, Wq = 50.9 ms,
    // Lq = λ·Wq = 1.53, busy threads = a = 3.
    let wq = erlang_c_wait(4, 30.0, 10.0);
    assert!((wq - 0.050_943).abs() < 1e-5, "{wq}");
    let r = mmc(4, 30.0, 100, 11);
    let s = &r.summary();
    let wait = s.app_wait_ms.unwrap() / 1000.0;
    assert!(
        (wait / wq - 1.0).abs() < 0.08,
        "mean wait {wait} s, Erlang C {wq} s"
    );
    let lq = mean(r.bins().iter().map(|b| b.app_queue.unwrap()));
    let busy = mean(r.bins().iter().map(|b| b.threads_busy.unwrap()));
    assert!((busy / 3.0 - 1.0).abs() < 0.03, "busy threads {busy}");
    // Little's law on the application queue: Lq = throughput × mean wait
    // (every request counts: no warm-up), here to the bookkeeping's
    // precision, since both sides count the same waits.
    let throughput = s.requests as f64 / 4000.0;
    assert!((lq / (throughput * wait) - 1.0).abs() < 1e-3, "Lq {lq}");
    // … and on the busy threads: throughput × mean holding time, which is
    // the latency less the wait (every request succeeds).
    assert_eq!(s.succeeded, s.requests - s.unfinished);
    let hold = s.latency_mean_ms.unwrap() / 1000.0 - wait;
    assert!(
        (busy / (throughput * hold) - 1.0).abs() < 0.03,
        "busy {busy}, hold {hold}"
    );
    eprintln!("M/M/4: wait {wait:.4} s (Erlang C {wq:.4}), Lq {lq:.3}, busy {busy:.3}");
}

#[test]
fn waiting_for_a_thread_counts_toward_the_deadline_and_latency() {
    // One thread, 100 ms per request, 20 arrivals a second, a 1 s
    // deadline: the queue fills until each request gets its thread just
    // before its deadline, which then ends it in service — the thread's
    // work is wasted and almost nothing succeeds (a metastable pool).
    let json = r#"{"name": "d", "seed": 1, "duration": "30s", "bin": "1s",
        "traffic": {"rate": 20, "arrival": "uniform", "mode": "pool", "threads": 1,
                    "deadline": "1s"},
        "backend": {"workers": 1, "service_time": {"constant": {"value": "100ms"}}},
        "policies": [{"name": "none", "max_attempts": 1}]}"#;
    let r = run(json, 0);
    let s = &r.summary();
    assert_eq!(s.succeeded + s.dropped_deadline + s.unfinished, s.requests);
    assert!(s.dropped_deadline > 500 && s.succeeded < 50, "{s:?}");
    // Served after the request had given up: wasted.
    assert!(s.wasted > 250, "{s:?}");
    // The few successes waited for their thread, and their latency says
    // so: more than their 100 ms of service, never more than the deadline.
    assert!(s.latency_mean_ms.unwrap() > 200.0);
    assert!(s.latency_p99_ms.unwrap() <= 1000.0);
    // In steady state about 19 requests wait, each for about 950 ms.
    let b = &r.bins()[20];
    assert!((15.0..=21.0).contains(&b.app_queue.unwrap()), "{b:?}");
    assert_eq!(b.threads_busy, Some(1.0));
    assert!(b.app_wait_ms.unwrap() > 800.0);
    assert!(s.app_wait_ms.unwrap() > 800.0);
}

#[test]
fn threads_are_checked() {
    let with = |traffic: &str| {
        let json = format!(
            r#"{{"name": "t", "duration": "10s",
                "traffic": {traffic},
                "backend": {{"workers": 1, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                "policies": [{{"name": "none", "max_attempts": 1}}]}}"#
        );
        Scenario::from_json(&json).err().map(|e| e.to_string())
    };
    let missing = with(r#"{"rate": 5, "mode": "pool"}"#).unwrap();
    assert!(missing.contains("traffic.threads"), "{missing}");
    let zero = with(r#"{"rate": 5, "mode": "pool", "threads": 0}"#).unwrap();
    assert!(zero.contains("traffic.threads"), "{zero}");
    let misplaced = with(r#"{"rate": 5, "threads": 4}"#).unwrap();
    assert!(misplaced.contains("outside pool mode"), "{misplaced}");
    let no_rate = with(r#"{"mode": "pool", "threads": 4}"#).unwrap();
    assert!(no_rate.contains("traffic.rate"), "{no_rate}");
    assert_eq!(with(r#"{"rate": 5, "mode": "pool", "threads": 4}"#), None);
}
