//! `retrysim assess` on the HotOS '21 toy (`scenarios/hotos21-toy.json`,
//! shortened as in `tests/it/story_hotos.rs`): the trigger threshold lands on
//! capacity/(1 + R) = 150 QPS, and the worst-case amplification the
//! closed forms give is what a whole-run outage produces.

use retrysim::assess::{assess, AssessError, Assessment, Options};
use retrysim::map::outcome::{outcome_within, Outcome};
use retrysim::runner::early::{run_jobs_until, Done, Question, Start, Work};
use retrysim::runner::{self, RunError};
use retrysim::scenario::{load_str, Scenario};

const TOY: &str = include_str!("../../scenarios/hotos21-toy.json");

/// 20 s with a 5 s stall from 5 s on and 5 s of health to call a recovery:
/// enough for the worst-case checks, which replace the stall anyway.
const SHORT: [&str; 4] = [
    "duration=20s",
    "faults.0.start=5s",
    "faults.0.duration=5s",
    "report.stable_for=5s",
];

/// Why an assessment in these tests failed, in words.
struct Failed(String);

impl From<AssessError> for Failed {
    fn from(e: AssessError) -> Failed {
        Failed(e.to_string())
    }
}

impl From<RunError> for Failed {
    fn from(e: RunError) -> Failed {
        Failed(e.to_string())
    }
}

/// Assesses `policy` of the toy with `sets` applied first.
fn run(sets: &[&str], policy: &str, replications: u32) -> Assessment {
    run_within(
        sets,
        policy,
        replications,
        Options::default().recover_within,
    )
}

/// The same, with recovery due within `within` of the fault's end.
fn run_within(
    sets: &[&str],
    policy: &str,
    replications: u32,
    within: Option<retrysim::time::Nanos>,
) -> Assessment {
    let load = |extra: &[String]| -> Result<Scenario, Failed> {
        let mut all: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        all.extend(extra.iter().cloned());
        let mut s = load_str(TOY, "hotos21-toy.json", &all).map_err(|e| Failed(e.to_string()))?;
        s.select_policies(&[policy.to_string()])
            .map_err(|e| Failed(format!("{e:?}")))?;
        Ok(s)
    };
    let base = load(&[]).unwrap_or_else(|Failed(why)| panic!("{why}"));
    let opts = Options {
        load_path: "traffic.rate".into(),
        replications,
        tolerance: 0.02,
        recover_within: within,
    };
    assess(&base, &opts, &load, &|_| {}, &|| {}).unwrap_or_else(|Failed(why)| panic!("{why}"))
}

#[test]
fn the_threshold_is_near_capacity_over_one_plus_r() {
    // 110 s with the stall at 15–25 s, as in tests/it/story_hotos.rs.
    let a = run(&["duration=110s", "faults.0.start=15s"], "retry-once", 3);
    let p = &a.policies[0];
    let (lo, hi) = (p.threshold.low.unwrap(), p.threshold.high.unwrap());
    assert!(lo < hi && hi - lo <= 0.02 * hi, "[{lo}, {hi}]");
    let mid = p.threshold.mid().unwrap();
    assert!((mid - 150.0).abs() <= 15.0, "threshold {mid}, theory 150");
    // So does the band where the replications' outcomes are mixed.
    let band = p.threshold_band;
    assert!(band.low.unwrap() <= lo && band.high.unwrap() >= hi);
    assert!(
        band.low.unwrap() >= 135.0 && band.high.unwrap() <= 165.0,
        "{band:?}"
    );
    // The analytic rule says exactly capacity / 2.
    assert_eq!(p.analytic.attempts_rule, Some(150.0));
    // The scenario's own 280 QPS is past the cliff.
    assert!(a.own_load > hi);
    // A storm the stall started dies out below about the same load.
    let s = p.sustaining.unwrap().mid().unwrap();
    assert!((s - 150.0).abs() <= 15.0, "sustaining {s}");
}

#[test]
fn an_attempt_cap_bounds_amplification_exactly() {
    let a = run(&SHORT, "retry-once", 1);
    let p = &a.policies[0];
    assert_eq!(p.bound.attempts, Some(2.0));
    assert_eq!(p.bound.binding(), "max_attempts = 2");
    let sim = p.simulated_amplification;
    assert!((sim - 2.0).abs() <= 0.02 * 2.0, "simulated {sim}");
}

#[test]
fn a_token_bucket_allows_half_its_tokens_per_bucket() {
    // 100 clients, each with its own bucket of 10 tokens, unlimited
    // attempts 10 ms apart: under a whole-run outage each bucket allows
    // 4 retries, then none.
    let sets = [
        SHORT[0],
        SHORT[1],
        SHORT[2],
        SHORT[3],
        "traffic.rate=100",
        "traffic.clients=100",
        "policies.2.max_attempts=0",
        r#"policies.2.backoff={"constant": {"delay": "10ms"}}"#,
        r#"policies.2.budget={"token_bucket": {"max_tokens": 10, "token_ratio": 0.1, "scope": "client"}}"#,
    ];
    let a = run(&sets, "retry-once-throttled", 1);
    let p = &a.policies[0];
    let bound = p.bound.attempts.unwrap();
    assert!(
        p.bound.binding().starts_with("token bucket"),
        "{}",
        p.bound.binding()
    );
    // 1 + 100 × 4 / N.
    let n = p.requests as f64;
    assert!((bound - (1.0 + 400.0 / n)).abs() < 1e-9);
    let sim = p.simulated_amplification;
    assert!(
        (sim - bound).abs() <= 0.02 * bound,
        "simulated {sim}, bound {bound}"
    );
    // Exactly 400 retries: 4 per bucket.
    assert_eq!((sim * n).round() as u64 - p.requests, 400);
}

/// The toy at 240 QPS, past its cliff, whose traffic halves (to 120 QPS,
/// below capacity/(1 + R) = 150) 60 s after the stall: the storm holds until
/// then and dies out with the load, a recovery about a minute after the
/// fault that no deadline of 30 s accepts.
const LATE: [&str; 3] = [
    "traffic.rate=240",
    r#"traffic.profile=[{"at": "0s", "scale": 1}, {"at": "99s", "scale": 1}, {"at": "100s", "scale": 0.5}]"#,
    "duration=160s",
];

#[test]
fn recover_within_turns_a_late_recovery_into_a_cliff() {
    let at_any_time = run_within(&LATE, "retry-once", 1, None);
    let p = &at_any_time.policies[0];
    // Without a deadline the scenario's own load "recovers".
    assert!(
        p.threshold.low.is_some_and(|lo| lo >= 240.0),
        "{:?}",
        p.threshold_probes
    );
    let due = run_within(&LATE, "retry-once", 1, Some(30_000_000_000));
    let p = &due.policies[0];
    // Within 30 s it does not: the threshold falls to the toy's cliff.
    let hi = p.threshold.high.unwrap();
    assert!(hi <= 240.0, "{:?}", p.threshold_probes);
    let mid = p.threshold.mid().unwrap();
    assert!((mid - 150.0).abs() <= 15.0, "threshold {mid}");
    let text = retrysim::report::assess::threshold_sentence(&due, p);
    assert!(
        text.starts_with("past the cliff") && text.contains("within 30 s of the fault's end"),
        "{text}"
    );
}

/// A job that starts at time 0 and stops once its outcome is decided.
fn early(job: runner::Job<'_>) -> Work<'_, '_> {
    Work {
        job,
        early: true,
        start: Start::Fresh,
    }
}

/// The results of `run_jobs_until`, without the runs it kept.
fn results(done: Result<Vec<Done<'_>>, RunError>) -> Vec<retrysim::metrics::RunResult> {
    done.unwrap().into_iter().map(|(r, _)| r).collect()
}

#[test]
fn sustaining_probes_go_on_from_one_shared_first_part_and_are_the_same_runs() {
    // The toy's rate steps to each load tried 1 s after the stall ends at
    // 40 s, as the sustaining search's probes do: the first probe keeps
    // the runs' part before 40 s, the others go on from copies of it.
    let probe = |scale: &str| {
        let profile = format!(
            r#"traffic.profile=[{{"at": "40s", "scale": 1}}, {{"at": "41s", "scale": {scale}}}]"#
        );
        load_str(TOY, "hotos21-toy.json", &[profile]).unwrap()
    };
    let q = Question {
        recover_within: Some(30_000_000_000),
    };
    let shared = probe("1");
    let scales = ["1", "0.4", "0.6", "0.9"];
    let probes: Vec<Scenario> = scales.iter().map(|x| probe(x)).collect();
    for policy in 0..shared.policies().len() {
        let jobs = |s| -> Vec<runner::Job<'_>> {
            (0..2)
                .map(|replication| runner::Job {
                    scenario: s,
                    policy,
                    replication,
                })
                .collect()
        };
        let keep: Vec<_> = jobs(&probes[0])
            .into_iter()
            .map(|job| Work {
                start: Start::Keep(&shared, 40_000_000_000),
                ..early(job)
            })
            .collect();
        let done = run_jobs_until(&keep, q, None, &|| {}).unwrap();
        let kept: Vec<_> = done.iter().map(|(_, k)| k.clone().unwrap()).collect();
        for (s, x) in probes.iter().zip(scales) {
            let fresh = results(run_jobs_until(
                &jobs(s).into_iter().map(early).collect::<Vec<_>>(),
                q,
                None,
                &|| {},
            ));
            let resumed: Vec<_> = jobs(s)
                .into_iter()
                .map(|job| Work {
                    start: Start::Resume(kept[job.replication as usize].clone()),
                    ..early(job)
                })
                .collect();
            let resumed = results(run_jobs_until(&resumed, q, None, &|| {}));
            assert_eq!(fresh, resumed, "policy {policy}, × {x}");
            // They went on from the shared part: it does not decline them.
            let direct = kept[1].resume(s, policy, 1, None).unwrap();
            assert!(direct.is_some(), "policy {policy}, × {x}");
            if x == "1" {
                let kept_runs: Vec<_> = done.iter().map(|(r, _)| r.clone()).collect();
                assert_eq!(fresh, kept_runs, "the keeping runs, policy {policy}");
            }
        }
    }
}

/// Runs of the toy, full and stopped as soon as decided, for `within`.
fn outcomes_full_and_stopped(
    sets: &[String],
    within: Option<retrysim::time::Nanos>,
) -> (Vec<Outcome>, Vec<Outcome>, u64, u64) {
    let s = load_str(TOY, "hotos21-toy.json", sets).unwrap();
    let jobs = runner::jobs_of(&s, 2);
    let full = runner::run_jobs(&jobs, false, &|| {}).unwrap();
    let q = Question {
        recover_within: within,
    };
    let marked: Vec<_> = jobs.iter().map(|&job| early(job)).collect();
    let stopped = results(run_jobs_until(&marked, q, None, &|| {}));
    let judge = |rs: &[retrysim::metrics::RunResult]| {
        rs.iter()
            .map(|r| outcome_within(r.summary(), s.spec(), within))
            .collect::<Vec<_>>()
    };
    let events = |rs: &[retrysim::metrics::RunResult]| rs.iter().map(|r| r.events).sum();
    (
        judge(&full),
        judge(&stopped),
        events(&full),
        events(&stopped),
    )
}

#[test]
fn stopping_early_never_changes_a_runs_outcome() {
    let mut saved = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for rate in ["100", "145", "155", "200", "280"] {
        for stall in ["2s", "10s", "25s"] {
            let sets = vec![
                format!("traffic.rate={rate}"),
                format!("faults.0.duration={stall}"),
            ];
            // 100 s puts the horizon past the run's end (150 s), where a
            // late recovery still counts and no deadline may stop a run.
            let deadlines = [10, 60, 100].map(|s| Some(s * 1_000_000_000));
            for within in std::iter::once(None).chain(deadlines) {
                let (full, stopped, e_full, e_stopped) = outcomes_full_and_stopped(&sets, within);
                assert_eq!(full, stopped, "{sets:?} within {within:?}");
                assert!(e_stopped <= e_full);
                saved += e_full - e_stopped;
                for o in full {
                    kinds.insert(format!("{o:?}").chars().take(9).collect::<String>());
                }
            }
        }
    }
    // The cases cover both outcomes, and stopping saved work.
    assert!(
        kinds.contains("Recovered") && kinds.contains("Degraded"),
        "{kinds:?}"
    );
    assert!(saved > 0);
}

#[test]
fn a_run_not_marked_to_stop_is_the_full_run() {
    let s = load_str(TOY, "hotos21-toy.json", &["traffic.rate=200".to_string()]).unwrap();
    let jobs = runner::jobs_of(&s, 1);
    let full = runner::run_jobs(&jobs, false, &|| {}).unwrap();
    let q = Question {
        recover_within: Some(10_000_000_000),
    };
    let to_end = |job| Work {
        early: false,
        ..early(job)
    };
    let unstopped = results(run_jobs_until(
        &jobs.iter().map(|&j| to_end(j)).collect::<Vec<_>>(),
        q,
        None,
        &|| {},
    ));
    let stopped = results(run_jobs_until(
        &jobs.iter().map(|&j| early(j)).collect::<Vec<_>>(),
        q,
        None,
        &|| {},
    ));
    for ((f, u), st) in full.iter().zip(&unstopped).zip(&stopped) {
        assert_eq!(f.events, u.events);
        assert_eq!(f.summary(), u.summary());
        assert!(st.events < f.events, "{} {}", st.events, f.events);
    }
}

#[test]
fn the_assessment_is_the_same_on_one_thread_and_two() {
    let dir = tempfile::tempdir().unwrap();
    let mut outs = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.path().join(threads);
        let st = std::process::Command::new(env!("CARGO_BIN_EXE_retrysim"))
            .args([
                "assess",
                "--quiet",
                "--replications",
                "2",
                "--set",
                "duration=110s",
                "-o",
            ])
            .arg(&out)
            .arg("scenarios/hotos21-toy.json")
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        crate::support::assert_ok(&st);
        outs.push(std::fs::read(out.join("hotos21-toy/assess.json")).unwrap());
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn the_worst_case_run_is_as_long_as_the_check_needs() {
    use retrysim::assess::worst_case_end;
    const S: u64 = 1_000_000_000;
    let spanner = Scenario::from_json(include_str!("../../scenarios/spanner-90s.json")).unwrap();
    let end = |s: &Scenario, name: &str| {
        let p = s.policies().iter().find(|p| p.name == name).unwrap();
        worst_case_end(s.spec(), p) / S
    };
    // Every attempt ends within the 2 s deadline: the 1 min warm-up, then
    // max(1 min, 20 × 2 s).
    assert_eq!(end(&spanner, "no-jitter"), 120);
    assert_eq!(end(&spanner, "jitter-10"), 120);
    // A token bucket carries over between requests: the whole 20 min.
    assert_eq!(end(&spanner, "platform"), 1200);
    // No deadline: at most 2 attempts of 1 s each, no backoff, + 1 s.
    let toy = load_str(TOY, "hotos21-toy.json", &[]).unwrap();
    assert_eq!(end(&toy, "retry-once"), 60);
    let long = load_str(
        TOY,
        "hotos21-toy.json",
        &["traffic.attempt_timeout=10s".into()],
    )
    .unwrap();
    assert_eq!(
        end(&long, "retry-once"),
        150,
        "20 × 21 s is past the run's end"
    );
    // A queue's dispatcher holds tasks back for a time no schedule bounds:
    // the whole run, even for a policy whose schedule is 32 s.
    let queue =
        Scenario::from_json(include_str!("../../scenarios/cloud-tasks-outage.json")).unwrap();
    assert_eq!(end(&queue, "strict-slo"), queue.spec().duration.ns() / S);
    // Over a whole run the figure is attempts ÷ requests, as before.
    let a = run(&SHORT, "retry-once", 1);
    assert_eq!(a.policies[0].simulated_amplification, 2.0);
}
