//! `retrysim tune` finds a setting that beats a storm-prone baseline and
//! meets its constraints.

use retrysim::model::run::simulate;
use retrysim::scenario::Scenario;
use retrysim::tune::{api, no_worse, trades, tune, Budget, Candidate, Constraints, Objective};

const SCENARIO: &str = r#"{"name": "tq", "duration": "4m", "seed": 3,
 "traffic": {"rate": 200, "clients": 200, "attempt_timeout": "1s"},
 "backend": {"workers": 3, "service_time": {"exponential": {"mean": "10ms"}}, "queue_limit": 400,
             "admission_cost": "1ms", "reject_cost": "200us"},
 "faults": [{"outage": {"start": "60s", "duration": "30s"}}],
 "policies": [{"name": "queue", "preset": "cloud-tasks-default"}]}"#;

fn budget(replications: u32, max_rounds: usize, fresh: u32) -> Budget {
    Budget {
        replications,
        max_rounds,
        fresh,
    }
}

#[test]
fn tuning_escapes_the_metastable_default() {
    let s = Scenario::from_json(SCENARIO).unwrap();
    let c = Constraints {
        max_drop_rate: Some(0.05),
        must_recover: true,
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Recovery, c, budget(1, 1, 0)).expect("runs");
    assert!(
        t.baseline.score.metastable,
        "the default schedule keeps this backend in a storm"
    );
    let best = t.best.expect("a feasible setting exists");
    assert!(!best.score.metastable);
    assert!(best.score.drop_rate <= 0.05);
    assert!(best.score.amplification < t.baseline.score.amplification);
    assert!(t.evaluated > 10);
    // Deterministic: the same search gives the same answer.
    let again = tune(&s, 0, Objective::Recovery, c, budget(1, 1, 0))
        .expect("runs")
        .best
        .unwrap();
    assert_eq!(format!("{:?}", again.spec), format!("{:?}", best.spec));
}

#[test]
fn a_setting_tried_again_is_not_simulated_again() {
    let s = Scenario::from_json(SCENARIO).unwrap();
    let c = Constraints {
        max_drop_rate: Some(0.05),
        must_recover: true,
        ..Default::default()
    };
    let reps = 2;
    let t = tune(&s, 0, Objective::Recovery, c, budget(reps, 3, 0)).expect("runs");
    // Settings are told apart by what their runs depend on.
    let key = |c: &Candidate| {
        let p = retrysim::policy::resolve(&c.spec).unwrap();
        format!("{:?}", (p.behaviour(), &c.dispatcher))
    };
    let mut keys: Vec<String> = t.candidates.iter().map(key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), t.distinct);
    assert!(
        t.distinct < t.evaluated,
        "the descent comes back to settings it tried ({} of {})",
        t.distinct,
        t.evaluated
    );
    // Without a queue there is one assumption: each different setting is
    // simulated once, on each replication it needed (one alone when that
    // broke a constraint, after a best was found).
    assert_eq!(t.assumptions, 1);
    let simulated: usize = keys
        .iter()
        .map(|k| {
            let c = t.candidates.iter().find(|c| &key(c) == k).unwrap();
            c.score.spread.replications
        })
        .sum();
    assert_eq!(t.runs, simulated);
    // A setting met twice has the same runs, hence the same score.
    for a in &t.candidates {
        for b in t.candidates.iter().filter(|b| key(b) == key(a)) {
            assert_eq!(format!("{:?}", a.score), format!("{:?}", b.score));
        }
    }
}

/// Once a best is found, a candidate that breaks a constraint steers
/// nothing, so its runs stop where they break it and its other
/// replications are not run. Each such verdict is the whole runs' own:
/// simulated to their end, the setting breaks the same constraint, by at
/// least as much.
#[test]
fn runs_stopped_at_a_broken_constraint_break_it_when_run_to_their_end() {
    let (t, c) = tuned_outage();
    let s = Scenario::from_json(&small_queue()).unwrap();
    let stopped: Vec<&Candidate> = t
        .candidates
        .iter()
        .filter(|c| c.score.stopped_at_s.is_some() || c.score.spread.replications < 2)
        .collect();
    assert!(!stopped.is_empty(), "the search stopped some runs early");
    for cand in stopped {
        assert!(cand.failed.is_some(), "{:?}", cand.score);
        let scenario = s
            .with_only_policy(cand.spec.clone())
            .unwrap()
            .with_dispatcher(cand.dispatcher.clone().unwrap());
        let whole: Vec<_> = (0..2).map(|r| simulate(&scenario, 0, r).unwrap()).collect();
        // The replications it ran, to their end: figures that only grow
        // are at least what the stopped runs showed.
        let ran = retrysim::tune::score(&whole[..cand.score.spread.replications]);
        assert_eq!(ran.stopped_at_s, None);
        assert!(ran.peak_load_ratio >= cand.score.peak_load_ratio - 1e-9);
        assert!(ran.max_task_age_s >= cand.score.max_task_age_s - 1e-9);
        assert!(ran.spread.dead_letter_rate.1 > 0.0 || cand.score.spread.dead_letter_rate.1 == 0.0);
        assert!(
            !ran.feasible(&c),
            "{:?} fails only when stopped",
            retrysim::tune::changes(&t.baseline, cand)
        );
    }
}

/// A retry put off past the end of the run leaves its request neither
/// succeeded nor dropped: the score counts those requests as unfinished,
/// as the run's summary does, so the output can say so.
#[test]
fn requests_left_unfinished_are_counted() {
    let late = SCENARIO.replace(
        r#"{"name": "queue", "preset": "cloud-tasks-default"}"#,
        r#"{"name": "late", "max_attempts": 3, "backoff": {"constant": {"delay": "3m"}}}"#,
    );
    let s = Scenario::from_json(&late).unwrap();
    let t = tune(
        &s,
        0,
        Objective::Success,
        Constraints::default(),
        budget(1, 1, 0),
    )
    .expect("runs");
    let run = simulate(&s, 0, 0).expect("runs");
    let sum = &run.summary();
    assert!(sum.unfinished > 0, "a 3 min backoff in a 4 min run");
    let base = &t.baseline.score;
    assert_eq!(
        base.unfinished_rate,
        sum.unfinished as f64 / sum.requests as f64
    );
    for c in &t.candidates {
        let s = &c.score;
        assert!(s.success_rate + s.drop_rate + s.unfinished_rate <= 1.0 + 1e-9);
    }
    assert!(retrysim::tune::describe(base).contains("unfinished when the run ended"));
}

/// `scenarios/cloud-tasks-outage.json` scaled down to run in a test: 2
/// tasks/s into a handler serving 3/s behind a queue with the API's default
/// rate limits, a 5-minute outage, the default RetryConfig.
const OUTAGE: &str = r#"{"name": "ct-small", "duration": "40m", "bin": "10s", "seed": 3,
 "traffic": {"rate": 2},
 "backend": {"workers": 3, "service_time": {"lognormal": {"mean": "1s", "stddev": "500ms"}},
             "queue_limit": 3},
 "dispatcher": {"max_dispatches_per_second": 500, "max_burst_size": 100,
                "max_concurrent_dispatches": 1000},
 "faults": [{"outage": {"start": "2m", "duration": "5m"}}],
 "policies": [{"name": "default", "preset": "cloud-tasks-default"}],
 "report": {"stable_for": "2m"}}"#;

/// The same outage behind a small queue (5/s, burst 5), as a handler of
/// 3/s would have it: a queue whose rate an update changes may get a burst
/// of up to 100 from Cloud Tasks, which this handler cannot take, so the
/// search must find its answer in the other settings.
fn small_queue() -> String {
    let small = OUTAGE.replace(
        r#""max_dispatches_per_second": 500, "max_burst_size": 100"#,
        r#""max_dispatches_per_second": 5, "max_burst_size": 5"#,
    );
    assert_ne!(small, OUTAGE);
    small
}

#[test]
fn tuning_a_queue_meets_its_constraints_in_every_replication_and_beats_the_default() {
    let s = Scenario::from_json(&small_queue()).unwrap();
    let c = Constraints {
        max_dead_letter_rate: Some(0.0),
        max_peak_load: Some(3.0),
        max_task_age_s: Some(3600.0),
        must_recover: true,
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Drain, c, budget(2, 3, 3)).expect("runs");
    // The queue as it is fails an assumption: with throttling on and a
    // slow ramp it has not recovered when the run ends.
    assert!(!t.baseline.robust);
    assert!(t.baseline.failed.is_some());
    let base = &t.baseline.score;
    let best = t.best.clone().expect("a feasible setting exists");
    let b = &best.score;
    assert_eq!(b.spread.replications, 2);
    assert_eq!(
        b.spread.dead_letter_rate.1, 0.0,
        "no dead letter in any run"
    );
    assert!(
        b.spread.peak_load_ratio.1 <= 3.0,
        "peak {:?}",
        b.spread.peak_load_ratio
    );
    assert!(b.spread.max_task_age_s.1 <= 3600.0);
    assert!(b.drain_s.is_some(), "drains in every replication");
    assert!(no_worse(b, base, Objective::Drain));
    // The rate limits were part of the search.
    let d = best.dispatcher.as_ref().expect("a queue");
    assert!(d.max_dispatches_per_second != 5.0 || d.max_concurrent_dispatches < 1000);
    // Every candidate is listed with its spread, the baseline first.
    assert_eq!(t.candidates.len(), t.evaluated);
    assert!(retrysim::tune::changes(&t.baseline, &t.candidates[0]).is_empty());
}

/// The small outage, tuned with every constraint the walkthrough uses.
fn tuned_outage() -> (retrysim::tune::Tuned, Constraints) {
    let s = Scenario::from_json(&small_queue()).unwrap();
    let c = Constraints {
        max_dead_letter_rate: Some(0.0),
        max_peak_load: Some(3.0),
        max_task_age_s: Some(3600.0),
        must_recover: true,
        ..Default::default()
    };
    (
        tune(&s, 0, Objective::Drain, c, budget(2, 3, 4)).expect("runs"),
        c,
    )
}

/// Nothing in any candidate is a value gcloud cannot set: no burst of our
/// choosing (the service derives it from the rate; the candidate carries
/// the high end of that range, or the queue's own when the rate does not
/// change), whole-second backoffs, rates and concurrency within the API's
/// maxima; and the gcloud line never names the burst.
#[test]
fn a_queue_is_tuned_only_on_what_gcloud_can_set() {
    let (t, _) = tuned_outage();
    let base = t.baseline.dispatcher.clone().unwrap();
    for c in &t.candidates {
        let d = c.dispatcher.as_ref().unwrap();
        let burst = if d.max_dispatches_per_second == base.max_dispatches_per_second {
            base.max_burst_size
        } else {
            api::burst_range(d.max_dispatches_per_second).1
        };
        assert_eq!(d.max_burst_size, burst, "{:?}", d);
        assert!(d.max_dispatches_per_second <= api::MAX_RATE);
        assert!(d.max_concurrent_dispatches <= api::MAX_CONCURRENT);
        let p = retrysim::policy::resolve(&c.spec).unwrap();
        if let retrysim::policy::Backoff::CloudTasks {
            min_backoff,
            max_backoff,
            ..
        } = p.backoff
        {
            let base_min = match retrysim::policy::resolve(&t.baseline.spec).unwrap().backoff {
                retrysim::policy::Backoff::CloudTasks { min_backoff, .. } => min_backoff,
                _ => unreachable!(),
            };
            assert!(
                min_backoff == base_min || min_backoff % 1_000_000_000 == 0,
                "min_backoff {min_backoff} ns is truncated by the API"
            );
            assert_eq!(max_backoff % 1_000_000_000, 0);
        }
    }
    let best = t.best.clone().expect("a recommendation");
    let (flags, _) = retrysim::tune::gcloud_update(
        (
            &retrysim::policy::resolve(&t.baseline.spec).unwrap(),
            t.baseline.dispatcher.as_ref(),
        ),
        (
            &retrysim::policy::resolve(&best.spec).unwrap(),
            best.dispatcher.as_ref(),
        ),
    )
    .unwrap();
    assert!(!flags.contains("burst"), "{flags}");
    for flag in flags.split(' ') {
        assert!(
            [
                "--max-attempts=",
                "--min-backoff=",
                "--max-backoff=",
                "--max-doublings=",
                "--max-retry-duration=",
                "--clear-max-retry-duration",
                "--max-dispatches-per-second=",
                "--max-concurrent-dispatches=",
            ]
            .iter()
            .any(|f| flag.starts_with(f)),
            "{flag} is not a gcloud tasks queues update flag"
        );
    }
}

/// The recommendation met every constraint under every assumption
/// (throttling off and on, the ramp at both ends of its range, both ends
/// of the burst range), with peaks over the worst second, and again on
/// fresh replications; the binding constraint is named.
#[test]
fn a_recommendation_holds_under_every_assumption_and_on_fresh_seeds() {
    let (t, c) = tuned_outage();
    assert_eq!(t.assumptions, 5);
    let best = t.best.clone().expect("a recommendation");
    assert!(best.robust);
    let labels: Vec<&str> = best.checks.iter().map(|k| k.assumption.as_str()).collect();
    assert!(
        labels.iter().any(|l| l.starts_with("throttling off")),
        "{labels:?}"
    );
    assert!(labels.iter().any(|l| l.contains("ramp 0.01")), "{labels:?}");
    assert!(labels.iter().any(|l| l.contains("ramp 0.25")), "{labels:?}");
    for k in &best.checks {
        assert!(k.score.feasible(&c), "{}: {:?}", k.assumption, k.score);
        assert!(k.score.spread.peak_load_ratio.1 <= 3.0);
    }
    let fresh = t.fresh.as_ref().expect("checked on fresh seeds");
    assert_eq!((fresh.first, fresh.replications), (2, 4));
    assert_eq!(fresh.passed, 4);
    assert_eq!(fresh.checks.len(), best.checks.len());
    for k in &fresh.checks {
        assert!(k.score.feasible(&c), "{}: {:?}", k.assumption, k.score);
    }
    let limits = retrysim::tune::limits(&best, Some(fresh), &c);
    assert_eq!(limits.len(), 3);
    assert!(limits[0].used >= limits[1].used && limits[1].used >= limits[2].used);
    assert!(limits.iter().all(|l| l.worst <= l.limit));
    // A candidate that fails an assumption is not feasible, and says where.
    for cand in &t.candidates {
        if let Some(why) = &cand.failed {
            assert!(!cand.robust);
            assert!(why.text.contains(" with throttling"), "{}", why.text);
        }
    }
}

/// A step checks its contenders under the other assumptions best first
/// and stops at the first robust one, which becomes the best: a contender
/// left unchecked was no better than it, so none is better than the
/// recommendation, and each was left with neither verdict. Here the
/// default queue (500/s, burst 100) breaks the peak limit, and the rate
/// step finds several rates that meet it at once.
#[test]
fn contenders_left_unchecked_are_no_better_than_the_recommendation() {
    let s = Scenario::from_json(OUTAGE).unwrap();
    let c = Constraints {
        max_peak_load: Some(10.0),
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Drain, c, budget(1, 2, 2)).expect("runs");
    let best = t.best.clone().expect("a recommendation");
    let waiting: Vec<&Candidate> = t
        .candidates
        .iter()
        .filter(|c| c.contender && !c.robust && c.failed.is_none())
        .collect();
    assert!(
        waiting.len() >= 2,
        "the rate step left contenders unchecked"
    );
    for c in &waiting {
        assert_eq!(c.checks.len(), 1, "only the reference was simulated");
        assert!(no_worse(&best.score, &c.score, Objective::Drain));
    }
    // Every robust candidate was a contender.
    for c in t.candidates.iter().skip(1).filter(|c| c.robust) {
        assert!(c.contender);
    }
}

/// The peak-load constraint is judged on the worst second, which a 10 s
/// bin averages away: a limit the busiest bin meets can still be broken.
#[test]
fn peak_load_is_judged_on_the_worst_second_not_the_bin() {
    let s = Scenario::from_json(OUTAGE).unwrap();
    let run = simulate(&s, 0, 0).expect("runs");
    let sum = &run.summary();
    assert!(sum.peak_offered_1s as f64 >= sum.peak_offered_rps);
    assert!(
        sum.peak_load_ratio_1s() > sum.peak_load_ratio() * 1.5,
        "the burst of 100 lands in one second: {} vs {}",
        sum.peak_load_ratio_1s(),
        sum.peak_load_ratio()
    );
    let bin_peak = sum.peak_load_ratio();
    let c = Constraints {
        max_peak_load: Some(bin_peak),
        ..Default::default()
    };
    let t = tune(&s, 0, Objective::Drain, c, budget(1, 1, 0)).expect("runs");
    let base = &t.baseline;
    assert!(base.score.peak_load_bin_ratio <= bin_peak + 1e-9);
    assert!(
        !base.robust,
        "the bin meets the limit, the worst second does not"
    );
    assert!(
        base.failed
            .as_ref()
            .unwrap()
            .text
            .starts_with("peak load (worst 1 s)"),
        "{:?}",
        base.failed
    );
}

/// A recommendation worse than the start on what the objective does not
/// look at is said, with the flag that would prevent it.
#[test]
fn a_worse_figure_is_named_with_the_flag_that_prevents_it() {
    let cand = |dead: f64, success: f64| {
        let mut score = retrysim::tune::Score {
            dead_letter_rate: dead,
            success_rate: success,
            peak_load_ratio: 2.0,
            ..Default::default()
        };
        score.spread.dead_letter_rate = (dead, dead);
        score.spread.success_rate = (success, success);
        Candidate {
            spec: Default::default(),
            dispatcher: None,
            score,
            checks: Vec::new(),
            robust: true,
            contender: true,
            failed: None,
        }
    };
    let start = cand(0.0, 0.9975);
    let drained = cand(0.187, 0.813);
    let said = trades(&start, &drained, &Constraints::default());
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].contains("--min-success-rate 0.997 would prevent it"),
        "{}",
        said[0]
    );
    assert!(said[1].contains("18.70 %"), "{}", said[1]);
    assert!(
        said[1].contains("--max-dead-letter-rate 0 would prevent it"),
        "{}",
        said[1]
    );
    // A limit the user set that allowed it is named instead.
    let c = Constraints {
        max_dead_letter_rate: Some(0.2),
        ..Default::default()
    };
    assert!(trades(&start, &drained, &c)[1].contains("within your --max-dead-letter-rate 0.2"));
    // Within the margin: nothing to say.
    assert!(trades(&start, &cand(0.004, 0.994), &Constraints::default()).is_empty());
}

/// `retrysim tune` on a shipped Cloud Tasks scenario, end to end:
/// `tune.json` records the fresh-seed pass count, every assumption and
/// the binding constraint; the gcloud line holds only settable flags; the
/// terminal says what binds; `candidates.csv` shows what each constraint
/// was judged on.
#[test]
fn the_cli_records_fresh_seeds_and_the_binding_assumption() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args([
            "tune",
            "scenarios/cloud-tasks-herd.json",
            "--objective",
            "recovery",
            "--max-dead-letter-rate",
            "0",
            "--max-peak-load",
            "10",
            "--replications",
            "2",
            "-o",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\nbinding:  "), "{stdout}");
    assert!(
        stdout.contains("fresh seeds: 10 of 10 replications (2–11"),
        "{stdout}"
    );
    let text = std::fs::read_to_string(dir.path().join("cloud-tasks-herd/tune.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["fresh_seeds"]["passed"], 10, "{text}");
    assert_eq!(json["fresh_seeds"]["replications"], 10);
    assert_eq!(json["fresh_seeds"]["first_replication"], 2);
    let assumptions: Vec<&str> = json["assumptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(assumptions.iter().any(|a| a.starts_with("throttling off")));
    assert!(assumptions.iter().any(|a| a.starts_with("throttling on")));
    let binding = &json["binding"];
    assert!(
        binding["assumption"].as_str().unwrap().contains("burst"),
        "{text}"
    );
    assert!(binding["worst"].as_f64().unwrap() <= binding["limit"].as_f64().unwrap());
    let gcloud = json["gcloud"].as_str().unwrap();
    assert!(
        gcloud.starts_with("gcloud tasks queues update QUEUE --"),
        "{gcloud}"
    );
    assert!(!gcloud.contains("burst"), "{gcloud}");
    // The burst the recommendation carries is the high end of the range.
    let d = &json["dispatcher"];
    let rate = d["max_dispatches_per_second"].as_f64().unwrap();
    let burst = d["max_burst_size"].as_u64().unwrap() as u32;
    assert!(rate == 500.0 || burst == api::burst_range(rate).1);
    let csv = std::fs::read_to_string(dir.path().join("cloud-tasks-herd/candidates.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "judged_peak_load_1s_max",
        "judged_dead_letter_rate_max",
        "assumptions_checked",
        "failed",
        "replications",
        "stopped_at_s",
    ] {
        assert!(header.split(',').any(|c| c == col), "{header}");
    }
}

/// Settings that act the same share their runs in a search: they do make
/// the same run. A queue whose backoff is pinned (`min_backoff` =
/// `max_backoff`) runs the same whatever its `max_doublings`.
#[test]
fn settings_with_one_behaviour_make_one_run() {
    let pinned = |doublings: u32| {
        let spec = OUTAGE.replace(
            r#"{"name": "default", "preset": "cloud-tasks-default"}"#,
            &format!(
                r#"{{"name": "q", "max_attempts": 20, "backoff": {{"cloud_tasks":
                    {{"min_backoff": "20s", "max_backoff": "20s", "max_doublings": {doublings}}}}}}}"#
            ),
        );
        let s = Scenario::from_json(&spec).unwrap();
        let behaviour = retrysim::policy::resolve(&s.spec().policies[0])
            .unwrap()
            .behaviour();
        (behaviour, simulate(&s, 0, 1).unwrap())
    };
    let (a, run_a) = pinned(0);
    let (b, run_b) = pinned(16);
    assert_eq!(a, b);
    assert_eq!(run_a, run_b);
    assert!(
        run_a.summary().attempts > run_a.summary().requests,
        "it retries"
    );
}

/// Which runs stop, and which replications are skipped, depends on each
/// run alone: `tune`'s files are byte-identical on 1 and 3 threads.
#[test]
fn tune_files_do_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("ct-small.json");
    std::fs::write(&scenario, small_queue()).unwrap();
    let files = |threads: &str| {
        let out = dir.path().join(format!("t{threads}"));
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .env("RAYON_NUM_THREADS", threads)
            .arg("tune")
            .arg(&scenario)
            .args([
                "--objective",
                "drain",
                "--max-dead-letter-rate",
                "0",
                "--max-peak-load",
                "3",
                "--max-task-age",
                "1h",
                "--replications",
                "2",
                "--fresh-seeds",
                "2",
                "-q",
                "-o",
            ])
            .arg(&out)
            .status()
            .unwrap();
        assert!(status.success());
        ["candidates.csv", "tune.json", "dispatcher.json"]
            .map(|f| std::fs::read(out.join("ct-small").join(f)).unwrap())
    };
    let one = files("1");
    assert_eq!(one, files("3"));
    let csv = String::from_utf8(one[0].clone()).unwrap();
    assert!(
        csv.lines().skip(1).any(|l| !l.ends_with(',')),
        "some run stopped at a broken constraint:\n{csv}"
    );
}

/// The resource guard counts a search's runs: its first round's
/// candidates on every replication and the fresh replications, on top of
/// the baseline. A one-round search makes no more than that (its fresh
/// replications may be tried on up to FRESH_TRIES candidates).
#[test]
fn the_guard_counts_the_runs_of_a_search_s_first_round() {
    let s = Scenario::from_json(SCENARIO).unwrap();
    let (reps, fresh) = (2u32, 3u32);
    let b = budget(reps, 1, fresh);
    let planned = retrysim::tune::planned_runs(&s, 0, b);
    let t = tune(&s, 0, Objective::Recovery, Constraints::default(), b).expect("runs");
    assert!(
        planned >= (1 + t.distinct as u64) * u64::from(reps) + u64::from(fresh),
        "{planned} runs planned for {} settings",
        t.distinct
    );
    let tries = retrysim::tune::FRESH_TRIES as u64 - 1;
    assert!(
        t.runs as u64 <= planned + tries * u64::from(fresh),
        "{} > {planned}",
        t.runs
    );
}

/// The stderr of `retrysim ARGS` run from the repository, which must
/// exit 2 (invalid input).
fn refused(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    err
}

/// A search far beyond the guard's limit is refused before it starts,
/// though one run of its policy is cheap.
#[test]
fn a_search_of_too_many_runs_is_refused_up_front() {
    let err = refused(&[
        "tune",
        "scenarios/hotos21-toy.json",
        "--replications",
        "10000",
        "-q",
    ]);
    assert!(err.contains("the limit is 30 min"), "{err}");
}

/// A hedging policy has nothing `tune` searches: refused, not "tuned" to
/// itself.
#[test]
fn a_hedging_policy_is_not_tuned() {
    let err = refused(&[
        "tune",
        "scenarios/hedging.json",
        "--policy",
        "hedge-p95-x2",
        "-q",
    ]);
    assert!(err.contains("a hedging policy has no backoff"), "{err}");
}
