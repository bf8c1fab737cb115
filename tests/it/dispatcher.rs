//! The Cloud Tasks topology: rate limit, burst, concurrency, dispatch
//! deadline, dead-lettering and RunTask (`force_run`).

use retrysim::metrics::{Recovery, RunResult};
use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;

fn run(json: &str) -> RunResult {
    simulate(&Scenario::from_json(json).expect("valid scenario"), 0, 0).expect("runs")
}

#[test]
fn dispatch_rate_caps_offered_load_after_the_burst() {
    let r = run(r#"{"name": "rate", "duration": "60s", "seed": 4,
        "traffic": {"rate": 200},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "5ms"}}},
        "dispatcher": {"max_dispatches_per_second": 50, "max_burst_size": 20, "max_concurrent_dispatches": 1000},
        "policies": [{"name": "p"}]}"#);
    // The bucket starts with 20 tokens, then refills at 50/s.
    let first = r.bins()[0].offered_rps;
    assert!(
        (68.0..=71.0).contains(&first),
        "first second: 20 burst + 50 refill, got {first}"
    );
    for b in &r.bins()[1..] {
        assert!(
            b.offered_rps <= 50.0 + 1e-9,
            "t={} offered {}",
            b.t_s,
            b.offered_rps
        );
    }
    let s = &r.summary();
    assert_eq!(s.succeeded + s.unfinished, s.requests);
    assert!(
        (s.succeeded as f64 - 20.0 - 50.0 * 60.0).abs() <= 2.0,
        "succeeded {}",
        s.succeeded
    );
}

#[test]
fn concurrency_caps_throughput() {
    let r = run(r#"{"name": "conc", "duration": "30s",
        "traffic": {"rate": 100, "arrival": "uniform"},
        "backend": {"workers": 50, "service_time": {"constant": {"value": "200ms"}}},
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100, "max_concurrent_dispatches": 4},
        "policies": [{"name": "p"}]}"#);
    // 4 in flight × 5 per second each.
    let mean: f64 = r.bins()[5..].iter().map(|b| b.goodput_rps).sum::<f64>() / 25.0;
    assert!((mean - 20.0).abs() < 0.5, "throughput {mean}");
    for b in r.bins() {
        assert!(b.utilization * 50.0 <= 4.0 + 1e-9);
    }
}

#[test]
fn dispatch_deadline_is_the_attempt_timeout_and_exhausted_tasks_are_dead_lettered() {
    let r = run(r#"{"name": "dl", "duration": "120s",
        "traffic": {"rate": 10, "arrival": "uniform"},
        "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}},
        "faults": [{"blackhole": {"start": 0, "duration": "120s"}}],
        "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100,
                       "max_concurrent_dispatches": 1000, "dispatch_deadline": "15s"},
        "policies": [{"name": "p", "max_attempts": 3,
                      "backoff": {"cloud_tasks": {"min_backoff": "1s", "max_backoff": "10s", "max_doublings": 2}}}]}"#);
    let s = &r.summary();
    // Each attempt times out after the 15 s dispatch deadline; 3 attempts
    // + 1 s + 2 s of backoff = 48 s to dead-letter a task. (A
    // `traffic.attempt_timeout` next to a dispatcher is refused as
    // meaningless.)
    let first_drop = r.bins().iter().position(|b| b.dropped_rps > 0.0).unwrap();
    assert_eq!(first_drop, 48);
    assert_eq!(s.succeeded, 0);
    assert_eq!(s.dropped + s.unfinished, s.requests);
    assert!(s.dropped > 0 && s.attempts >= 3 * s.dropped);
}

#[test]
fn force_run_dispatches_past_the_rate_limit_at_the_run_task_quota() {
    let json = |force: bool| {
        format!(
            r#"{{"name": "force", "duration": "100s",
            "traffic": {{"rate": 10, "arrival": "uniform"}},
            "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "1ms"}}}}}},
            "faults": [{{"outage": {{"start": "0s", "duration": "30s"}}}}],
            "actions": [{}],
            "dispatcher": {{"max_dispatches_per_second": 5, "max_burst_size": 5, "max_concurrent_dispatches": 1000}},
            "policies": [{{"name": "p", "max_attempts": 0,
                "backoff": {{"constant": {{"delay": "600s"}}}}}}]}}"#,
            if force {
                r#"{"force_run": {"at": "40s", "per_minute": 60000}}"#
            } else {
                r#"{"disable_retries": {"at": "99s"}}"#
            }
        )
    };
    let without = run(&json(false));
    let with = run(&json(true));
    // Tasks that failed in the outage wait 600 s; RunTask sends them from
    // 40 s on regardless of the 5/s rate limit, 1,000 calls a second at
    // this quota.
    assert!(
        with.bins()[40].offered_rps > 100.0,
        "offered at 40 s: {}",
        with.bins()[40].offered_rps
    );
    assert!(without.bins()[40].offered_rps <= 5.0 + 1e-9);
    assert!(with.summary().succeeded > without.summary().succeeded + 100);
}

mod limits {
    //! The queue's limits as properties: whatever the answers (errors,
    //! pushback, timeouts) and whether system throttling is on, dispatches
    //! in any interval of length L are at most `max_burst_size` +
    //! `max_dispatches_per_second` × L, and in-flight dispatches never
    //! exceed `max_concurrent_dispatches`.

    use proptest::prelude::*;
    use retrysim::model::dispatcher::{Dispatcher, Pump};
    use retrysim::model::requests::{Job, Requests};
    use retrysim::scenario::spec::{DispatcherSpec, ThrottlingSpec};
    use retrysim::status::Status;
    use retrysim::time::{Dur, Nanos};

    /// One step of the driver: time passes, tasks arrive, answers come.
    #[derive(Clone, Debug)]
    struct Step {
        dt_ms: u64,
        arrivals: u32,
        answers: u32,
        status: u8,
        pushback_ms: Option<u64>,
    }

    fn step() -> impl Strategy<Value = Step> {
        (
            0u64..300,
            0u32..40,
            0u32..40,
            0u8..4,
            prop::option::of(0u64..2000),
        )
            .prop_map(|(dt_ms, arrivals, answers, status, pushback_ms)| Step {
                dt_ms,
                arrivals,
                answers,
                status,
                pushback_ms,
            })
    }

    fn throttling() -> impl Strategy<Value = Option<ThrottlingSpec>> {
        prop::option::of(
            (
                100u64..3000,
                0.0f64..0.5,
                0.1f64..1.0,
                0.1f64..1.0,
                0.01f64..1.0,
                0.01f64..1.0,
                any::<bool>(),
            )
                .prop_map(|(w, share, dec, odec, ramp, start, honor)| ThrottlingSpec {
                    window: Dur::from_millis(w),
                    error_share: share,
                    decrease: dec,
                    overload_decrease: odec,
                    ramp,
                    start,
                    min_rate: 0.5,
                    honor_retry_after: honor,
                }),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn dispatch_stays_within_rate_burst_and_concurrency(
            rate in 1.0f64..200.0,
            burst in 1u32..50,
            cap in 1u32..30,
            throttling in throttling(),
            steps in prop::collection::vec(step(), 1..150),
        ) {
            let spec = DispatcherSpec {
                max_dispatches_per_second: rate,
                max_burst_size: burst,
                max_concurrent_dispatches: cap,
                dispatch_deadline: Dur::from_secs(600),
                throttling,
            };
            let mut d = Dispatcher::new(&spec);
            let mut reqs = Requests::default();
            let mut now: Nanos = 0;
            let mut wake: Option<Nanos> = None;
            let mut out: Vec<Job> = Vec::new();
            let mut sent: Vec<Nanos> = Vec::new();
            for s in &steps {
                now += s.dt_ms * 1_000_000;
                if wake.is_some_and(|w| w <= now) {
                    d.on_tick();
                    wake = None;
                }
                for _ in 0..s.arrivals {
                    let slot = reqs.open(0, now, true, false);
                    d.enqueue(reqs.set_due(slot));
                }
                for _ in 0..s.answers.min(out.len() as u32) {
                    let job = out.remove(0);
                    let status = [Status::Ok, Status::Unavailable, Status::Internal, Status::ResourceExhausted][s.status as usize];
                    let timeout = s.status == 2 && s.pushback_ms.is_none();
                    d.on_result(now, status, timeout, s.pushback_ms.map(|p| p * 1_000_000));
                    prop_assert!(d.release(&mut reqs[job.slot as usize]));
                    reqs.settle(job, status == Status::Ok);
                    reqs.close(job.slot);
                }
                loop {
                    match d.next(now, &mut reqs) {
                        Pump::Send(slot) => {
                            out.push(reqs.begin_attempt(slot, now));
                            sent.push(now);
                            prop_assert!(d.in_flight() <= cap, "in flight {}", d.in_flight());
                        }
                        Pump::WakeAt(at) => {
                            prop_assert!(at > now);
                            wake = Some(at);
                            break;
                        }
                        Pump::Idle => break,
                    }
                }
                prop_assert!(d.in_flight() as usize == out.len());
            }
            // Any window [sent[i], sent[j]] holds j − i + 1 dispatches.
            for i in 0..sent.len() {
                for j in i..sent.len() {
                    let span = (sent[j] - sent[i]) as f64 / 1e9;
                    let allowed = burst as f64 + rate * span + 1e-6;
                    prop_assert!(
                        ((j - i + 1) as f64) <= allowed,
                        "{} dispatches in {span} s (burst {burst}, rate {rate})",
                        j - i + 1
                    );
                }
            }
        }
    }
}

#[test]
fn throttling_keeps_the_configured_limits_end_to_end_and_slows_into_a_failing_handler() {
    // Dispatches per 100 ms bin (first attempts and retries) over any run
    // of bins: within burst + rate × span, throttled or not; throttled,
    // far fewer attempts go into an outage.
    let json = |throttling: &str| {
        format!(
            r#"{{"name": "thr", "duration": "120s", "bin": "100ms", "seed": 2,
            "traffic": {{"rate": 80}},
            "backend": {{"workers": 4, "service_time": {{"exponential": {{"mean": "40ms"}}}}, "queue_limit": 10}},
            "faults": [{{"outage": {{"start": "30s", "duration": "30s"}}}}],
            "dispatcher": {{"max_dispatches_per_second": 120, "max_burst_size": 30,
                           "max_concurrent_dispatches": 50 {throttling}}},
            "policies": [{{"name": "p", "max_attempts": 20,
                "backoff": {{"cloud_tasks": {{"min_backoff": "100ms", "max_backoff": "5s", "max_doublings": 4}}}}}}]}}"#
        )
    };
    let off = run(&json(""));
    let on = run(&json(r#", "throttling": {}"#));
    for r in [&off, &on] {
        let per_bin: Vec<f64> = r
            .bins()
            .iter()
            .map(|b| (b.first_attempt_rps + b.retry_rps) * 0.1)
            .collect();
        for i in 0..per_bin.len() {
            let mut sum = 0.0;
            for (k, n) in per_bin[i..].iter().enumerate().take(100) {
                sum += n;
                // k + 1 bins span just under (k + 1) × 100 ms of dispatches.
                let allowed = 30.0 + 120.0 * 0.1 * (k + 1) as f64 + 1e-6;
                assert!(
                    sum <= allowed,
                    "{sum} dispatches in {} bins from bin {i}",
                    k + 1
                );
            }
        }
    }
    let during =
        |r: &RunResult| -> f64 { r.bins()[300..600].iter().map(|b| b.offered_rps * 0.1).sum() };
    assert!(
        during(&on) < 0.5 * during(&off),
        "attempts into the outage: throttled {} vs not {}",
        during(&on),
        during(&off)
    );
}

/// A rate too small for one token in the run dispatches what the full
/// bucket holds and nothing more, as `check` warns: whether its tokens per
/// nanosecond round to 0 (a subnormal rate) or are merely tiny, the next
/// token is never due within the run, and the run does not fail.
#[test]
fn a_rate_below_one_token_a_run_dispatches_the_bucket_alone() {
    for rate in ["1e-320", "1e-300", "1e-10", "0.01"] {
        let s = Scenario::from_json(&format!(
            r#"{{"name": "tiny", "duration": "60s",
                "traffic": {{"rate": 10}},
                "backend": {{"workers": 20, "service_time": {{"constant": {{"value": "5ms"}}}}}},
                "dispatcher": {{"max_dispatches_per_second": {rate}, "max_burst_size": 7}},
                "policies": [{{"name": "p"}}]}}"#
        ))
        .expect("valid scenario");
        assert!(
            s.warnings()
                .iter()
                .any(|w| w.path == "dispatcher.max_dispatches_per_second"),
            "{rate}: no warning"
        );
        let r = simulate(&s, 0, 0).expect("runs");
        assert_eq!(r.summary().attempts, 7, "{rate}");
        assert_eq!(r.summary().succeeded, 7, "{rate}");
        assert!(r.summary().requests > 500, "{rate}");
    }
    // 0.05/s: three tokens over the run, the first 20 s after the bucket
    // is empty; those that come before the end dispatch more tasks.
    let s = Scenario::from_json(
        r#"{"name": "slow", "duration": "60s",
            "traffic": {"rate": 10},
            "backend": {"workers": 20, "service_time": {"constant": {"value": "5ms"}}},
            "dispatcher": {"max_dispatches_per_second": 0.05, "max_burst_size": 7},
            "policies": [{"name": "p"}]}"#,
    )
    .expect("valid scenario");
    // Not the warning above: only that the queue falls behind.
    let w = s.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.starts_with("0.05 is below"), "{w:?}");
    let attempts = simulate(&s, 0, 0).expect("runs").summary().attempts;
    assert!((8..=10).contains(&attempts), "{attempts}");
}

/// New tasks above the dispatch rate leave the queue further behind all
/// run, as `check` warns, and its verdict on the recovery is the report's:
/// with goodput held to 10/s against 12/s of demand, a threshold of 0.9
/// leaves every policy degraded, one of 0.8 reads as recovered while the
/// backlog grows. At the dispatch rate itself there is no warning.
#[test]
fn new_tasks_above_the_dispatch_rate_pile_up_as_check_warns() {
    let scenario = |rate: u32, threshold: f64| {
        Scenario::from_json(&format!(
            r#"{{"name": "behind", "duration": "180s", "bin": "10s", "seed": 5,
                "traffic": {{"rate": {rate}, "arrival": "uniform"}},
                "backend": {{"workers": 20, "service_time": {{"constant": {{"value": "5ms"}}}}}},
                "dispatcher": {{"max_dispatches_per_second": 10, "max_burst_size": 5}},
                "faults": [{{"outage": {{"start": "30s", "duration": "30s"}}}}],
                "policies": [{{"name": "p"}}],
                "report": {{"recovery_threshold": {threshold}, "stable_for": "30s"}}}}"#
        ))
        .expect("valid scenario")
    };
    let warning = |s: &Scenario| {
        s.warnings()
            .into_iter()
            .find(|w| w.path == "dispatcher.max_dispatches_per_second")
            .map(|w| w.message)
    };
    let strict = scenario(12, 0.9);
    let why = warning(&strict).expect("a warning");
    assert!(
        why.contains("so no policy can recover from the incident"),
        "{why}"
    );
    let r = simulate(&strict, 0, 0).expect("runs");
    assert!(r.summary().metastable(), "{:?}", r.summary().recovery);
    // 2/s more than dispatched for three minutes, and the outage's.
    assert!(r.summary().unfinished > 300, "{}", r.summary().unfinished);

    let lenient = scenario(12, 0.8);
    let why = warning(&lenient).expect("a warning");
    assert!(
        why.contains("bins can still read as healthy while the backlog grows"),
        "{why}"
    );
    let r = simulate(&lenient, 0, 0).expect("runs");
    assert_eq!(r.summary().recovery, Recovery::Recovered);
    assert!(r.summary().unfinished > 300, "{}", r.summary().unfinished);

    let even = scenario(10, 0.9);
    assert_eq!(warning(&even), None);
    let r = simulate(&even, 0, 0).expect("runs");
    assert_eq!(r.summary().recovery, Recovery::Recovered);
}
