//! `retrysim tune`: a search over one policy's parameters for the best
//! setting that meets the constraints, judged by simulating the scenario.
//!
//! The search is coordinate descent over a grid of values people actually
//! configure: starting from the scenario's policy (and its dispatcher, when
//! the scenario has a Cloud Tasks queue), each round tries every candidate
//! value of one parameter at a time (all candidates of a round run in
//! parallel) and keeps the best; it stops when a full round improves
//! nothing. On a dispatcher scenario with a `cloud_tasks` backoff the
//! parameters are what `gcloud tasks queues update` can set, with values
//! the API keeps as given ([`api`]): the queue's rate limits
//! (`max_dispatches_per_second`, `max_concurrent_dispatches`; the burst is
//! the service's, derived from the rate) and its `RetryConfig`
//! (`min_backoff` in whole seconds, `max_doublings`, `max_backoff`,
//! `max_attempts`, `max_retry_duration`).
//!
//! Every candidate is a full simulation on the same traffic (common random
//! numbers: replication `r` draws the same streams for every candidate),
//! repeated over the replications, so the result is deterministic for a
//! given scenario and seed. A candidate is feasible only when every
//! replication meets the constraints under every assumption about what the
//! scenario cannot know ([`assume`]); the peak load is the worst 1 s window,
//! whatever the scenario's bin. The recommendation is then re-run on
//! replications the search never used; one that fails there is not
//! returned.

pub mod api;
pub mod assume;
pub mod broken;

use crate::decimal::count;
use crate::metrics::{Recovery, RunResult};
use crate::policy::{self, Backoff, Policy};
use crate::policy::{BackoffSpec, JitterSpec, PolicySpec};
use crate::runner::early::{run_jobs_until_broken, Progress, Start, Work};
use crate::runner::{self, Job, RunError};
use crate::scenario::spec::DispatcherSpec;
use crate::scenario::Scenario;
use crate::time::{format_duration, Dur, NS_PER_SEC};
use assume::Assumption;
use std::collections::BTreeMap;

/// What "best" means. Each objective lists its tie-breakers in the order
/// they are applied; success rates within 0.1 % and dead-letter shares
/// within 0.01 % count as equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Objective {
    /// Shortest recovery after the fault (never recovering is worst), then
    /// highest success rate, then fewest attempts per request.
    Recovery,
    /// Fewest attempts per request, then highest success rate, then
    /// shortest recovery.
    Amplification,
    /// Highest success rate, then shortest recovery, then fewest attempts
    /// per request.
    Success,
    /// Shortest time to drain the backlog after the incident (never
    /// draining is worst), then fewest dead letters, then highest success
    /// rate, then fewest attempts per request.
    Drain,
    /// Fewest requests dead-lettered (given up at their retry limits),
    /// then the shortest drain, then highest success rate, then fewest
    /// attempts per request.
    DeadLetters,
}

/// Constraints every accepted candidate meets, in every replication and
/// under every assumption.
#[derive(Clone, Copy, Debug, Default)]
pub struct Constraints {
    /// Largest share of requests dropped (limits, deadline, budget).
    pub max_drop_rate: Option<f64>,
    /// Smallest share of requests that succeed.
    pub min_success_rate: Option<f64>,
    /// The run must not stay metastable.
    pub must_recover: bool,
    /// Largest share of requests dead-lettered (given up at their retry
    /// limits).
    pub max_dead_letter_rate: Option<f64>,
    /// Longest any request may stay unfinished (s): the task-age alert's
    /// threshold.
    pub max_task_age_s: Option<f64>,
    /// Largest peak load: attempts reaching the handler (the dispatches
    /// with a queue) in the worst 1 s window ÷ its nominal capacity.
    pub max_peak_load: Option<f64>,
}

/// The smallest and largest value of a figure over the replications.
pub type Range = (f64, f64);

/// How one candidate did: means over the replications, and the spread.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Score {
    /// Succeeded ÷ requests, mean over the replications.
    pub success_rate: f64,
    /// Dropped ÷ requests, mean over the replications.
    pub drop_rate: f64,
    /// Requests still unfinished when the run ended ÷ requests, mean over
    /// the replications: neither succeeded nor dropped, so a setting that
    /// puts retries off past the end of the run looks better than it is.
    pub unfinished_rate: f64,
    /// Attempts ÷ requests, mean over the replications.
    pub amplification: f64,
    /// Seconds from the fault's end to recovery; `None` = never (metastable)
    /// in at least one replication, or no fault.
    pub recovery_after_fault_s: Option<f64>,
    /// At least one replication stayed metastable after the fault.
    pub metastable: bool,
    /// At least one replication ended too soon after the fault to tell
    /// whether it recovered.
    pub undetermined: bool,
    /// Dead-lettered ÷ requests.
    pub dead_letter_rate: f64,
    /// Seconds from the fault's end until the backlog drained; `None` =
    /// not before the run ended in at least one replication, or no fault.
    pub drain_s: Option<f64>,
    /// The longest a request stayed unfinished (s), worst replication.
    pub max_task_age_s: f64,
    /// Attempts at the handler in the worst 1 s window ÷ its nominal
    /// capacity, worst replication: what `--max-peak-load` is judged on.
    pub peak_load_ratio: f64,
    /// The same from the scenario's bins (the busiest bin's mean rate),
    /// worst replication: `summary.csv`'s `peak_load_ratio`, for
    /// comparison.
    pub peak_load_bin_ratio: f64,
    /// Each figure's spread over the replications.
    pub spread: Spread,
    /// When the first of its runs to stop at a broken constraint stopped
    /// (s), its figures covering the run up to there; `None` when every
    /// run went to the scenario's end.
    pub stopped_at_s: Option<f64>,
}

/// Smallest and largest value over the replications of a candidate.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spread {
    /// Number of replications the ranges cover.
    pub replications: usize,
    /// Succeeded ÷ requests.
    pub success_rate: Range,
    /// Dropped ÷ requests.
    pub drop_rate: Range,
    /// Dead-lettered ÷ requests.
    pub dead_letter_rate: Range,
    /// `None` when some replication never drained.
    pub drain_s: Option<Range>,
    /// The longest a request stayed unfinished, seconds.
    pub max_task_age_s: Range,
    /// Attempts in the worst 1 s window ÷ nominal capacity.
    pub peak_load_ratio: Range,
    /// `None` when some replication never recovered.
    pub recovery_after_fault_s: Option<Range>,
}

/// A candidate's score under one assumption.
#[derive(Clone, Debug)]
pub struct Check {
    /// The assumption in words (`throttling off, burst 100`).
    pub assumption: String,
    /// How the candidate did under it.
    pub score: Score,
}

/// One evaluated setting: the policy and, on a dispatcher scenario, the
/// queue's rate limits.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The policy as written.
    pub spec: PolicySpec,
    /// The queue's settings, on a dispatcher scenario (the burst at the
    /// high end of what Cloud Tasks may derive from the rate).
    pub dispatcher: Option<DispatcherSpec>,
    /// How the candidate did under the reference assumption (the scenario
    /// as written): what the objective ranks.
    pub score: Score,
    /// Every assumption it was simulated under, the reference first; the
    /// checks stop at the first assumption that breaks a constraint.
    pub checks: Vec<Check>,
    /// Every assumption was checked and met every constraint.
    pub robust: bool,
    /// It met every constraint under the reference and beat the best so
    /// far when it was simulated, so it is worth the other assumptions.
    /// The best such candidate of a step is checked under them at once;
    /// the others only if the fresh replications come to them (see
    /// `fresh_tries`): until then neither `robust` nor `failed` is set.
    pub contender: bool,
    /// The first constraint broken, and under which assumption.
    pub failed: Option<Broken>,
}

/// A constraint a candidate broke: the flag that sets it (what to relax)
/// and, in words, its value against the limit and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Broken {
    /// The flag (`--max-task-age`; `--allow-metastable` for a run that
    /// had to recover and did not).
    pub flag: &'static str,
    /// `task age (s) 9000 (limit 7200) with the scenario as written`.
    pub text: String,
}

impl Broken {
    /// The same, with where it was broken (`with LABEL`) appended.
    fn with(self, place: &str) -> Broken {
        Broken {
            text: format!("{} with {place}", self.text),
            ..self
        }
    }
}

/// The recommendation re-run on replications the search did not use.
#[derive(Clone, Debug)]
pub struct Fresh {
    /// The first fresh replication (the search used those below it).
    pub first: u32,
    /// How many fresh replications.
    pub replications: u32,
    /// How many of them met every constraint under every assumption.
    pub passed: u32,
    /// The candidate's score on them, per assumption.
    pub checks: Vec<Check>,
    /// The first constraint broken there, and under which assumption.
    pub failed: Option<String>,
}

/// The search's result: the starting point, the best feasible candidate,
/// and every candidate evaluated (in order, the baseline first).
#[derive(Clone, Debug)]
pub struct Tuned {
    /// The scenario's own setting, the search's starting point (checked
    /// under every assumption).
    pub baseline: Candidate,
    /// The best candidate that met the constraints under every assumption
    /// and on the fresh replications; `None` when none did.
    pub best: Option<Candidate>,
    /// Its check on fresh replications (`None` without one).
    pub fresh: Option<Fresh>,
    /// Candidates that met the constraints in the search but not on the
    /// fresh replications, best first, with their fresh check.
    pub failed_fresh: Vec<(Candidate, Fresh)>,
    /// Number of candidates evaluated, the baseline included (a setting
    /// the search comes back to counts each time).
    pub evaluated: usize,
    /// Number of settings among them that act differently (see
    /// `Policy::behaviour`): each was simulated once.
    pub distinct: usize,
    /// Number of simulations run in all.
    pub runs: usize,
    /// Every candidate evaluated, in order, the baseline first.
    pub candidates: Vec<Candidate>,
    /// The number of assumptions a candidate can be checked under.
    pub assumptions: usize,
}

/// How the search runs: replications, rounds, fresh replications.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Replications per candidate in the search.
    pub replications: u32,
    /// Rounds of coordinate descent at most.
    pub max_rounds: usize,
    /// Fresh replications the recommendation is re-run on (0: none).
    pub fresh: u32,
}

/// Candidates that met the constraints in the search tried on the fresh
/// replications at most, best first, before giving up.
pub const FRESH_TRIES: usize = 3;

/// Which parameter a step changes.
#[derive(Clone, Copy, Debug)]
enum Knob {
    MaxAttempts,
    MinBackoff,
    MaxBackoff,
    MaxDoublings,
    Multiplier,
    Jitter,
    MaxRetryDuration,
    DispatchRate,
    Concurrency,
}

const ATTEMPTS: [i64; 7] = [2, 3, 5, 10, 20, 50, 100];
const SECS: [f64; 11] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];
const CAPS: [f64; 9] = [1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0];
const DOUBLINGS: [u32; 7] = [0, 1, 2, 3, 5, 8, 16];
const MULTIPLIERS: [f64; 4] = [1.5, 2.0, 3.0, 4.0];
/// `max_retry_duration` values (s); 0 = unset.
const WINDOWS: [f64; 9] = [
    0.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0,
];
/// Dispatches per second (500 is the API's maximum, [`api::MAX_RATE`]).
const RATES: [f64; 10] = [1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0, 200.0, 500.0];
/// Concurrent dispatches (5,000 is the API's maximum,
/// [`api::MAX_CONCURRENT`]).
const CONCURRENT: [u32; 12] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000];

fn dur(s: f64) -> Dur {
    Dur(crate::time::from_secs(s))
}

/// The knobs that exist for a policy's backoff kind, and for the queue's
/// rate limits when the scenario has a dispatcher.
fn knobs(spec: &PolicySpec, dispatcher: bool) -> Vec<Knob> {
    let mut k = if dispatcher {
        vec![Knob::DispatchRate, Knob::Concurrency]
    } else {
        vec![]
    };
    k.extend(policy_knobs(spec, dispatcher));
    k
}

fn policy_knobs(spec: &PolicySpec, dispatcher: bool) -> Vec<Knob> {
    match spec.backoff {
        Some(BackoffSpec::CloudTasks { .. }) if dispatcher => vec![
            Knob::MinBackoff,
            Knob::MaxDoublings,
            Knob::MaxBackoff,
            Knob::MaxAttempts,
            Knob::MaxRetryDuration,
        ],
        Some(BackoffSpec::CloudTasks { .. }) => {
            vec![
                Knob::MinBackoff,
                Knob::MaxDoublings,
                Knob::MaxBackoff,
                Knob::MaxAttempts,
            ]
        }
        Some(BackoffSpec::Exponential { .. }) => vec![
            Knob::MinBackoff,
            Knob::Multiplier,
            Knob::MaxBackoff,
            Knob::MaxAttempts,
            Knob::Jitter,
        ],
        _ => vec![Knob::MinBackoff, Knob::MaxAttempts, Knob::Jitter],
    }
}

/// A policy and, with a queue, its rate limits: what a candidate sets.
#[derive(Clone, Debug)]
struct Setting {
    spec: PolicySpec,
    dispatcher: Option<DispatcherSpec>,
}

/// Whether two settings are the same (as written, after the preset).
fn same(a: &Setting, b: &Setting) -> bool {
    a.key() == b.key()
}

impl Setting {
    /// What tells settings apart: the policy and queue as written.
    fn key(&self) -> String {
        format!("{:?}", (&self.spec, &self.dispatcher))
    }

    /// What tells their runs apart: the policy's behaviour (see
    /// [`Policy::behaviour`]) and the queue. Settings written differently
    /// that act the same share their runs.
    fn runs_key(&self) -> String {
        match policy::resolve(&self.spec) {
            Ok(p) => format!("{:?}", (p.behaviour(), &self.dispatcher)),
            Err(_) => self.key(),
        }
    }
}

/// Every variant of `setting` that changes `knob` to another value.
fn setting_variants(setting: &Setting, knob: Knob) -> Vec<Setting> {
    let Some(d) = &setting.dispatcher else {
        return variants(&setting.spec, knob)
            .into_iter()
            .map(|spec| Setting {
                spec,
                dispatcher: None,
            })
            .collect();
    };
    let with = |f: &dyn Fn(&mut DispatcherSpec)| {
        let mut d = d.clone();
        f(&mut d);
        Setting {
            spec: setting.spec.clone(),
            dispatcher: Some(d),
        }
    };
    match knob {
        Knob::DispatchRate => RATES
            .iter()
            .map(|&r| with(&|d| d.max_dispatches_per_second = r))
            .collect(),
        Knob::Concurrency => CONCURRENT
            .iter()
            .map(|&c| with(&|d| d.max_concurrent_dispatches = c))
            .collect(),
        _ => variants(&setting.spec, knob)
            .into_iter()
            .map(|spec| Setting {
                spec,
                dispatcher: setting.dispatcher.clone(),
            })
            .collect(),
    }
}

/// Every variant of `spec` that changes `knob` to another candidate value.
fn variants(spec: &PolicySpec, knob: Knob) -> Vec<PolicySpec> {
    let mut out = Vec::new();
    let mut push = |f: &dyn Fn(&mut PolicySpec)| {
        let mut s = spec.clone();
        f(&mut s);
        if policy::resolve(&s).is_ok() && backoff_is_sane(&s) {
            out.push(s);
        }
    };
    match knob {
        Knob::DispatchRate | Knob::Concurrency => {}
        Knob::MaxRetryDuration => WINDOWS
            .iter()
            .for_each(|&w| push(&|s| s.max_retry_duration = (w > 0.0).then(|| dur(w)))),
        Knob::MaxAttempts => ATTEMPTS
            .iter()
            .for_each(|&a| push(&|s| s.max_attempts = Some(a))),
        Knob::Jitter => [
            JitterSpec::None,
            JitterSpec::Full,
            JitterSpec::Equal,
            JitterSpec::Proportional(0.2),
        ]
        .iter()
        .for_each(|&j| push(&|s| s.jitter = Some(j))),
        // A queue truncates its backoffs to whole seconds: only those are
        // candidates for a `cloud_tasks` schedule.
        Knob::MinBackoff => SECS.iter().for_each(|&v| {
            if matches!(spec.backoff, Some(BackoffSpec::CloudTasks { .. }))
                && !api::whole_seconds(v)
            {
                return;
            }
            push(&|s| {
                if let Some(b) = s.backoff.as_mut() {
                    *b.first_delay_mut() = dur(v)
                }
            })
        }),
        Knob::MaxBackoff => CAPS.iter().for_each(|&v| {
            push(&|s| match s.backoff.as_mut() {
                Some(BackoffSpec::CloudTasks { max_backoff, .. }) => *max_backoff = dur(v),
                Some(BackoffSpec::Exponential { max, .. }) => *max = Some(dur(v)),
                _ => {}
            })
        }),
        Knob::MaxDoublings => DOUBLINGS.iter().for_each(|&v| {
            push(&|s| {
                if let Some(BackoffSpec::CloudTasks { max_doublings, .. }) = s.backoff.as_mut() {
                    *max_doublings = v
                }
            })
        }),
        Knob::Multiplier => MULTIPLIERS.iter().for_each(|&v| {
            push(&|s| {
                if let Some(BackoffSpec::Exponential { multiplier, .. }) = s.backoff.as_mut() {
                    *multiplier = v
                }
            })
        }),
    }
    out
}

/// min ≤ max for the backoff's bounds.
fn backoff_is_sane(s: &PolicySpec) -> bool {
    match &s.backoff {
        Some(BackoffSpec::CloudTasks {
            min_backoff,
            max_backoff,
            ..
        }) => min_backoff <= max_backoff,
        Some(BackoffSpec::Exponential { initial, max, .. }) => max.is_none_or(|m| *initial <= m),
        _ => true,
    }
}

/// The queue a setting asks for, as Cloud Tasks would have it: the burst
/// at the high end of what the service may derive from the rate.
fn settled(mut setting: Setting, baseline: Option<&DispatcherSpec>) -> Setting {
    if let (Some(d), Some(b)) = (setting.dispatcher.as_mut(), baseline) {
        d.max_burst_size = assume::bursts(b, d).1;
    }
    setting
}

/// The runs of one setting under one assumption: its label and one run
/// per replication.
type Runs = (String, Vec<RunResult>);

/// Simulates each of `settings` under `assumption` (with the bursts the
/// baseline queue `queue` leads to) on replications `reps`, in the order
/// given; `None` for a setting the assumption adds nothing to.
fn run_under(
    base: &Scenario,
    queue: Option<&DispatcherSpec>,
    settings: &[&Setting],
    assumption: &Assumption,
    reps: std::ops::Range<u32>,
    need: Need<'_>,
) -> Result<Vec<Option<Runs>>, RunError> {
    let mut scenarios: Vec<Option<(String, Scenario)>> = Vec::with_capacity(settings.len());
    for s in settings {
        let one = base
            .with_only_policy(s.spec.clone())
            .expect("variants resolve");
        scenarios.push(match (&s.dispatcher, queue) {
            (Some(d), Some(b)) => {
                let bursts = assume::bursts(b, d);
                if assumption.redundant(bursts) {
                    None
                } else {
                    let simulated = assumption.apply(d, bursts);
                    Some((
                        Assumption::describe(&simulated),
                        one.with_dispatcher(simulated),
                    ))
                }
            }
            _ => Some(("the scenario as written".to_string(), one)),
        });
    }
    let runs = match need {
        Need::Figures => whole_runs(&scenarios, reps)?,
        Need::Verdict(c, first_alone) => runs_until_broken(&scenarios, reps, c, first_alone)?,
    };
    Ok(scenarios
        .into_iter()
        .zip(runs)
        .map(|(s, runs)| s.map(|(label, _)| (label, runs)))
        .collect())
}

/// Every replication of `reps` of each scenario given, run to its end.
fn whole_runs(
    scenarios: &[Option<(String, Scenario)>],
    reps: std::ops::Range<u32>,
) -> Result<Vec<Vec<RunResult>>, RunError> {
    let jobs: Vec<Job<'_>> = scenarios
        .iter()
        .flatten()
        .flat_map(|(_, scenario)| {
            reps.clone().map(move |replication| Job {
                scenario,
                policy: 0,
                replication,
            })
        })
        .collect();
    let mut results = runner::run_jobs(&jobs, false, &|| {})?.into_iter();
    Ok(scenarios
        .iter()
        .map(|s| match s {
            Some(_) => results.by_ref().take(reps.len()).collect(),
            None => Vec::new(),
        })
        .collect())
}

/// What a search needs of a candidate's runs.
#[derive(Clone, Copy)]
enum Need<'c> {
    /// Its figures: every run goes to the scenario's end.
    Figures,
    /// Only whether it meets the constraints (its figures matter only if
    /// it does): [`runs_until_broken`], the first replication alone when
    /// `true`.
    Verdict(&'c Constraints, bool),
}

/// The runs of `reps` of each scenario given, for a candidate whose
/// figures matter only if it meets `c`: each run stops once it breaks a
/// constraint for good ([`broken::already_broken`]). With `first_alone`,
/// the first replication runs before the others: when it breaks a
/// constraint, the candidate fails whatever they do, and they are not
/// run (worth it where many candidates fail; otherwise every replication
/// runs at once).
fn runs_until_broken(
    scenarios: &[Option<(String, Scenario)>],
    reps: std::ops::Range<u32>,
    c: &Constraints,
    first_alone: bool,
) -> Result<Vec<Vec<RunResult>>, RunError> {
    let check =
        |_: &crate::scenario::spec::ScenarioSpec, p: &Progress<'_>| broken::already_broken(c, p);
    let run = |jobs: Vec<(usize, u32)>| -> Result<Vec<(usize, RunResult)>, RunError> {
        let work: Vec<Work<'_, '_>> = jobs
            .iter()
            .map(|&(i, replication)| Work {
                job: Job {
                    scenario: &scenarios[i].as_ref().expect("only simulated ones").1,
                    policy: 0,
                    replication,
                },
                early: true,
                start: Start::Fresh,
            })
            .collect();
        let done = run_jobs_until_broken(&work, &check, &|| {})?;
        Ok(jobs
            .iter()
            .map(|j| j.0)
            .zip(done.into_iter().map(|d| d.0))
            .collect())
    };
    let simulated = || (0..scenarios.len()).filter(|&i| scenarios[i].is_some());
    let mut runs: Vec<Vec<RunResult>> = vec![Vec::new(); scenarios.len()];
    let first = if first_alone { 1 } else { reps.len() as u32 };
    let now: Vec<(usize, u32)> = simulated()
        .flat_map(|i| (reps.start..(reps.start + first).min(reps.end)).map(move |k| (i, k)))
        .collect();
    for (i, r) in run(now)? {
        runs[i].push(r);
    }
    let rest: Vec<(usize, u32)> = simulated()
        .filter(|&i| score(&runs[i]).broken(c).is_none())
        .flat_map(|i| ((reps.start + first).min(reps.end)..reps.end).map(move |k| (i, k)))
        .collect();
    for (i, r) in run(rest)? {
        runs[i].push(r);
    }
    Ok(runs)
}

/// Scores one candidate from its runs (one per replication).
pub fn score(runs: &[RunResult]) -> Score {
    let n = runs.len() as f64;
    let mean = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let range = |f: &dyn Fn(&RunResult) -> f64| -> Range {
        runs.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let all = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Option<Vec<f64>> {
        runs.iter().map(f).collect()
    };
    let metastable = runs.iter().any(|r| r.summary().metastable());
    let undetermined = runs
        .iter()
        .any(|r| r.summary().recovery == Recovery::Undetermined);
    let recovery = all(&|r| r.summary().recovery_after_fault_s());
    let drain = all(&|r| r.summary().drain_s);
    let span = |v: &[f64]| {
        v.iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            })
    };
    let mean_of = |v: &[f64]| v.iter().sum::<f64>() / n;
    let stopped_at_s = runs.iter().filter_map(|r| r.stopped_at_s).reduce(f64::min);
    Score {
        success_rate: mean(&|r| r.summary().success_rate()),
        drop_rate: mean(&|r| share(r, r.summary().dropped)),
        unfinished_rate: mean(&|r| share(r, r.summary().unfinished)),
        amplification: mean(&|r| r.summary().amplification()),
        recovery_after_fault_s: recovery.as_deref().map(mean_of),
        metastable,
        undetermined,
        dead_letter_rate: mean(&|r| share(r, r.summary().dead_lettered())),
        drain_s: drain.as_deref().map(mean_of),
        max_task_age_s: range(&|r| r.summary().max_task_age_s).1,
        peak_load_ratio: range(&|r| r.summary().peak_load_ratio_1s()).1,
        peak_load_bin_ratio: range(&|r| r.summary().peak_load_ratio()).1,
        spread: Spread {
            replications: runs.len(),
            success_rate: range(&|r| r.summary().success_rate()),
            drop_rate: range(&|r| share(r, r.summary().dropped)),
            dead_letter_rate: range(&|r| share(r, r.summary().dead_lettered())),
            drain_s: drain.as_deref().map(span),
            max_task_age_s: range(&|r| r.summary().max_task_age_s),
            peak_load_ratio: range(&|r| r.summary().peak_load_ratio_1s()),
            recovery_after_fault_s: recovery.as_deref().map(span),
        },
        stopped_at_s,
    }
}

/// `k` ÷ the run's requests (0 without requests).
fn share(r: &RunResult, k: u64) -> f64 {
    let s = &r.summary();
    if s.requests == 0 {
        0.0
    } else {
        k as f64 / s.requests as f64
    }
}

/// The figures the constraints are judged on, in the order they are
/// checked: name, the worst value over the replications, the limit, and
/// whether a larger value is worse.
fn judged(s: &Score, c: &Constraints) -> Vec<(&'static str, f64, f64, bool)> {
    let mut out = Vec::new();
    for (name, limit, worst, larger_worse) in [
        ("drop rate", c.max_drop_rate, s.spread.drop_rate.1, true),
        (
            "success rate",
            c.min_success_rate,
            s.spread.success_rate.0,
            false,
        ),
        (
            "dead-letter rate",
            c.max_dead_letter_rate,
            s.spread.dead_letter_rate.1,
            true,
        ),
        ("task age (s)", c.max_task_age_s, s.max_task_age_s, true),
        (
            "peak load (worst 1 s)",
            c.max_peak_load,
            s.peak_load_ratio,
            true,
        ),
    ] {
        if let Some(m) = limit {
            out.push((name, worst, m, larger_worse));
        }
    }
    out
}

/// The flag that sets the constraint `name` (as [`judged`] names it).
fn flag_of(name: &str) -> &'static str {
    match name {
        "drop rate" => "--max-drop-rate",
        "success rate" => "--min-success-rate",
        "dead-letter rate" => "--max-dead-letter-rate",
        "task age (s)" => "--max-task-age",
        _ => "--max-peak-load",
    }
}

/// How many of `candidates` broke each constraint first, as the flags
/// that set them, most often broken first (ties in flag order).
pub fn broken_tally(candidates: &[Candidate]) -> Vec<(&'static str, usize)> {
    let mut tally: Vec<(&'static str, usize)> = Vec::new();
    for c in candidates {
        if let Some(Broken { flag, .. }) = c.failed {
            match tally.iter_mut().find(|(g, _)| *g == flag) {
                Some((_, n)) => *n += 1,
                None => tally.push((flag, 1)),
            }
        }
    }
    tally.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    tally
}

/// One constraint as the recommendation met it: its worst value over
/// every replication and assumption checked, and where.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// The figure (`peak load (worst 1 s)`, `dead-letter rate`…).
    pub name: &'static str,
    /// The flag that set it.
    pub flag: &'static str,
    /// The limit.
    pub limit: f64,
    /// The worst value seen.
    pub worst: f64,
    /// The assumption it was seen under (`throttling off, burst 100`),
    /// and whether on the fresh replications.
    pub assumption: String,
    /// How much of the limit the worst value uses (1 = exactly at it; a
    /// limit of 0 met exactly counts as 1).
    pub used: f64,
}

/// Each constraint's worst value for `c` over its checks (and the fresh
/// ones), the most used first: the first is the binding one.
pub fn limits(c: &Candidate, fresh: Option<&Fresh>, constraints: &Constraints) -> Vec<Limit> {
    let mut out: Vec<Limit> = Vec::new();
    let searched = c.checks.iter().map(|k| (k, ""));
    let again = fresh
        .into_iter()
        .flat_map(|f| f.checks.iter().map(|k| (k, ", fresh replications")));
    for (check, when) in searched.chain(again) {
        for (name, worst, limit, larger_worse) in judged(&check.score, constraints) {
            let used = match (larger_worse, limit > 0.0, worst > 0.0) {
                (true, true, _) => worst / limit,
                (true, false, true) => f64::INFINITY,
                (true, false, false) => 1.0,
                (false, _, true) => limit / worst,
                (false, _, false) => f64::INFINITY,
            };
            let at = format!("{}{when}", check.assumption);
            match out.iter_mut().find(|l| l.name == name) {
                Some(l) if used > l.used + 1e-12 => {
                    l.worst = worst;
                    l.used = used;
                    l.assumption = at;
                }
                Some(_) => {}
                None => out.push(Limit {
                    name,
                    flag: flag_of(name),
                    limit,
                    worst,
                    assumption: at,
                    used,
                }),
            }
        }
    }
    out.sort_by(|a, b| b.used.total_cmp(&a.used));
    out
}

/// The share-of-requests margin past which a recommendation worse than
/// the starting point on success, dead letters or drops is said (0.5
/// percentage points).
pub const TRADE_MARGIN_SHARE: f64 = 0.005;
/// The relative margin for peak load (10 %).
pub const TRADE_MARGIN_PEAK: f64 = 0.10;

/// Where `best` is worse than `baseline` (both under the reference
/// assumption) by more than the margins, each with the constraint that
/// would prevent it, or the one the user set that allowed it.
pub fn trades(baseline: &Candidate, best: &Candidate, c: &Constraints) -> Vec<String> {
    let (a, b) = (&baseline.score, &best.score);
    let pct = |x: f64| format!("{:.2} %", 100.0 * x);
    let mut out = Vec::new();
    let mut say =
        |what: &str, now: String, was: String, set: Option<f64>, flag: &str, value: f64| {
            let fix = match set {
                Some(limit) => format!("within your {flag} {}", trim(limit)),
                None => format!("{flag} {} would prevent it", trim(value)),
            };
            out.push(format!("{what}: {now}, was {was} ({fix})"));
        };
    if b.success_rate < a.success_rate - TRADE_MARGIN_SHARE {
        say(
            "lower success",
            pct(b.success_rate),
            pct(a.success_rate),
            c.min_success_rate,
            "--min-success-rate",
            (a.spread.success_rate.0 * 1000.0).floor() / 1000.0,
        );
    }
    if b.dead_letter_rate > a.dead_letter_rate + TRADE_MARGIN_SHARE {
        say(
            "more dead letters",
            pct(b.dead_letter_rate),
            pct(a.dead_letter_rate),
            c.max_dead_letter_rate,
            "--max-dead-letter-rate",
            (a.spread.dead_letter_rate.1 * 1000.0).ceil() / 1000.0,
        );
    }
    if b.drop_rate > a.drop_rate + TRADE_MARGIN_SHARE {
        say(
            "more drops",
            pct(b.drop_rate),
            pct(a.drop_rate),
            c.max_drop_rate,
            "--max-drop-rate",
            (a.spread.drop_rate.1 * 1000.0).ceil() / 1000.0,
        );
    }
    if b.peak_load_ratio > a.peak_load_ratio * (1.0 + TRADE_MARGIN_PEAK) {
        say(
            "higher peak load (worst 1 s)",
            format!("{:.2}×", b.peak_load_ratio),
            format!("{:.2}×", a.peak_load_ratio),
            c.max_peak_load,
            "--max-peak-load",
            (a.peak_load_ratio * 100.0).ceil() / 100.0,
        );
    }
    out
}

impl Score {
    /// Whether every replication met the constraints.
    pub fn feasible(&self, c: &Constraints) -> bool {
        self.broken(c).is_none()
    }

    /// The first constraint some replication broke.
    fn broken(&self, c: &Constraints) -> Option<Broken> {
        for (name, worst, limit, larger_worse) in judged(self, c) {
            let over = if larger_worse {
                worst > limit + 1e-12
            } else {
                worst < limit - 1e-12
            };
            if over {
                return Some(Broken {
                    flag: flag_of(name),
                    text: format!("{name} {} (limit {})", precise(worst), precise(limit)),
                });
            }
        }
        if c.must_recover && (self.metastable || self.undetermined) {
            return Some(Broken {
                flag: "--allow-metastable",
                text: if self.metastable {
                    "stays metastable".into()
                } else {
                    "recovery undetermined".into()
                },
            });
        }
        None
    }

    /// How far the worst replication is from the constraints: the sum of
    /// each limit's relative excess, plus 1 for a run that must recover and
    /// does not (0 when feasible).
    fn violation(&self, c: &Constraints) -> f64 {
        judged(self, c)
            .into_iter()
            .map(|(_, worst, limit, larger_worse)| {
                let excess = if larger_worse {
                    worst - limit
                } else {
                    limit - worst
                };
                (excess / limit.max(1e-3)).max(0.0)
            })
            .sum::<f64>()
            + if c.must_recover && (self.metastable || self.undetermined) {
                1.0
            } else {
                0.0
            }
    }

    /// A sort key: smaller is better.
    fn key(&self, objective: Objective) -> [f64; 4] {
        let recovery = self.recovery_after_fault_s.unwrap_or(f64::INFINITY);
        let drain = self.drain_s.unwrap_or(f64::INFINITY);
        // Success rates within 0.1 % count as equal, so the tie-breakers matter.
        let success = -(self.success_rate * 1000.0).round();
        // Dead-letter shares within 0.01 % count as equal.
        let dead = (self.dead_letter_rate * 10_000.0).round();
        match objective {
            Objective::Recovery => [recovery, success, self.amplification, 0.0],
            Objective::Amplification => [self.amplification, success, recovery, 0.0],
            Objective::Success => [success, recovery, self.amplification, 0.0],
            // Among candidates that never drain, the one that finishes more.
            Objective::Drain => [drain, dead, success, self.amplification],
            Objective::DeadLetters => [dead, drain, success, self.amplification],
        }
    }
}

/// Whether `a` is at least as good as `b` on `objective` (equal keys
/// count as no worse).
pub fn no_worse(a: &Score, b: &Score, objective: Objective) -> bool {
    !better(b, a, objective)
}

/// Lexicographic comparison of the objective keys (smaller is better).
fn better(a: &Score, b: &Score, objective: Objective) -> bool {
    for (x, y) in a.key(objective).iter().zip(b.key(objective)) {
        if *x < y - 1e-9 {
            return true;
        }
        if *x > y + 1e-9 {
            return false;
        }
    }
    false
}

/// Which runs: a setting's [`Setting::runs_key`], the assumption (its
/// index) and the replications (first, end).
type RunsKey = (String, usize, u32, u32);

/// What the search shares between its steps: the scenario, the baseline
/// queue, the assumptions, the constraints, the replications, and a count
/// of the simulations run.
struct Search<'a> {
    scenario: &'a Scenario,
    queue: Option<DispatcherSpec>,
    assumptions: Vec<Assumption>,
    constraints: Constraints,
    replications: u32,
    runs: usize,
    /// The runs made so far, by setting, assumption (its index) and
    /// replications: the descent comes back to settings it has tried
    /// (a knob's variants in the next round), which are not simulated
    /// again. Each with whether its runs may have stopped at a broken
    /// constraint (see [`runs_until_broken`]): such runs answer only a
    /// later question of the same kind. Looked up, never iterated.
    made: BTreeMap<RunsKey, (bool, Option<Runs>)>,
}

impl Search<'_> {
    /// [`run_under`] with assumption `assumption` (an index), simulating
    /// only what has not been (and each setting once); `runs` counts what
    /// it simulates. With `verdict`, only whether the settings meet the
    /// constraints matters, not their figures when they do not, so their
    /// runs stop at a broken constraint ([`Need::Verdict`], the first
    /// replication alone when `first_alone`).
    fn runs_of(
        &mut self,
        settings: &[&Setting],
        assumption: usize,
        reps: std::ops::Range<u32>,
        verdict: Option<bool>,
    ) -> Result<Vec<Option<Runs>>, RunError> {
        // Each setting's key once: it resolves the policy.
        let keys: Vec<RunsKey> = settings
            .iter()
            .map(|s| (s.runs_key(), assumption, reps.start, reps.end))
            .collect();
        let until_broken = verdict.is_some();
        let usable = |made: &(bool, Option<Runs>)| until_broken || !made.0;
        let mut missing: Vec<(&Setting, &RunsKey)> = Vec::new();
        for (&s, k) in settings.iter().zip(&keys) {
            if !self.made.get(k).is_some_and(usable) && !missing.iter().any(|m| m.1 == k) {
                missing.push((s, k));
            }
        }
        let (missing, missing_keys): (Vec<&Setting>, Vec<&RunsKey>) = missing.into_iter().unzip();
        let made = run_under(
            self.scenario,
            self.queue.as_ref(),
            &missing,
            &self.assumptions[assumption],
            reps.clone(),
            match verdict {
                None => Need::Figures,
                Some(first_alone) => Need::Verdict(&self.constraints, first_alone),
            },
        )?;
        for (k, r) in missing_keys.into_iter().zip(made) {
            self.runs += r.as_ref().map_or(0, |(_, runs)| runs.len());
            self.made.insert(k.clone(), (until_broken, r));
        }
        Ok(keys.iter().map(|k| self.made[k].1.clone()).collect())
    }

    /// Simulates `settings` under the reference assumption: candidates
    /// with only that check (`until_broken`: only whether they meet the
    /// constraints matters, see [`Self::runs_of`]).
    fn reference(
        &mut self,
        settings: Vec<Setting>,
        until_broken: bool,
    ) -> Result<Vec<Candidate>, RunError> {
        let refs: Vec<&Setting> = settings.iter().collect();
        let runs = self.runs_of(&refs, 0, 0..self.replications, until_broken.then_some(true))?;
        Ok(settings
            .into_iter()
            .zip(runs)
            .map(|(s, r)| {
                let (label, runs) = r.expect("the reference is never redundant");
                let score = score(&runs);
                let failed = score.broken(&self.constraints).map(|b| b.with(&label));
                Candidate {
                    spec: s.spec,
                    dispatcher: s.dispatcher,
                    robust: failed.is_none() && self.assumptions.len() == 1,
                    contender: false,
                    checks: vec![Check {
                        assumption: label,
                        score: score.clone(),
                    }],
                    score,
                    failed,
                }
            })
            .collect())
    }

    /// Checks `candidates` (met the constraints under the reference) under
    /// every other assumption in turn, each assumption for all of them at
    /// once, dropping a candidate at its first broken constraint.
    /// `until_broken`: only whether they meet the constraints matters
    /// (see [`Self::runs_of`]; every replication at once: they met them
    /// under the reference, so most do).
    fn robustness(
        &mut self,
        candidates: &mut [&mut Candidate],
        until_broken: bool,
    ) -> Result<(), RunError> {
        let mut alive: Vec<usize> = (0..candidates.len())
            .filter(|&i| candidates[i].failed.is_none())
            .collect();
        for assumption in 1..self.assumptions.len() {
            if alive.is_empty() {
                break;
            }
            let settings: Vec<Setting> = alive
                .iter()
                .map(|&i| Setting {
                    spec: candidates[i].spec.clone(),
                    dispatcher: candidates[i].dispatcher.clone(),
                })
                .collect();
            let refs: Vec<&Setting> = settings.iter().collect();
            let verdict = until_broken.then_some(false);
            let runs = self.runs_of(&refs, assumption, 0..self.replications, verdict)?;
            let mut next = Vec::new();
            for (&i, r) in alive.iter().zip(runs) {
                let Some((label, runs)) = r else {
                    next.push(i);
                    continue;
                };
                let score = score(&runs);
                let broken = score.broken(&self.constraints);
                let c = &mut candidates[i];
                c.checks.push(Check {
                    assumption: label.clone(),
                    score,
                });
                match broken {
                    Some(why) => c.failed = Some(why.with(&label)),
                    None => next.push(i),
                }
            }
            alive = next;
        }
        for i in alive {
            candidates[i].robust = true;
        }
        Ok(())
    }

    /// Re-runs `c` on `n` replications the search did not use, under every
    /// assumption.
    fn fresh(&mut self, c: &Candidate, n: u32) -> Result<Fresh, RunError> {
        let first = self.replications;
        let setting = Setting {
            spec: c.spec.clone(),
            dispatcher: c.dispatcher.clone(),
        };
        let mut passed = vec![true; n as usize];
        let mut checks = Vec::new();
        let mut failed = None;
        for assumption in 0..self.assumptions.len() {
            let runs = self.runs_of(&[&setting], assumption, first..first + n, None)?;
            let Some((label, runs)) = runs.into_iter().next().flatten() else {
                continue;
            };
            for (k, run) in runs.iter().enumerate() {
                if let Some(why) = score(std::slice::from_ref(run)).broken(&self.constraints) {
                    passed[k] = false;
                    failed.get_or_insert_with(|| {
                        format!(
                            "{} with {label}, replication {}",
                            why.text,
                            first + k as u32
                        )
                    });
                }
            }
            checks.push(Check {
                assumption: label,
                score: score(&runs),
            });
        }
        Ok(Fresh {
            first,
            replications: n,
            passed: passed.iter().filter(|&&p| p).count() as u32,
            checks,
            failed,
        })
    }
}

/// Runs the search from the scenario's policy `policy_index`.
pub fn tune(
    scenario: &Scenario,
    policy_index: usize,
    objective: Objective,
    constraints: Constraints,
    budget: Budget,
) -> Result<Tuned, RunError> {
    let start = start_setting(scenario, policy_index);
    let queue = scenario.spec().dispatcher.clone();
    let mut search = Search {
        scenario,
        assumptions: assume::assumptions(queue.as_ref()),
        queue,
        constraints,
        replications: budget.replications,
        runs: 0,
        made: BTreeMap::new(),
    };
    let baseline = search.baseline(start)?;
    let mut descent = Descent::starting_at(&baseline, objective);
    for _ in 0..max_rounds(budget) {
        if !descent.round(&mut search)? {
            break;
        }
    }
    let Descent {
        evaluated,
        mut all,
        best,
        ..
    } = descent;
    // The recommendation on replications the search never saw; the next
    // best feasible candidates if it fails there.
    let Confirmed {
        best,
        fresh,
        failed_fresh,
    } = match (best, budget.fresh > 0) {
        (Some(b), true) => search.confirm(b, &mut all, objective, budget.fresh)?,
        (best, _) => Confirmed {
            best,
            fresh: None,
            failed_fresh: Vec::new(),
        },
    };
    Ok(Tuned {
        baseline,
        best,
        fresh,
        failed_fresh,
        evaluated,
        distinct: search.made.keys().filter(|k| k.1 == 0 && k.2 == 0).count(),
        runs: search.runs,
        candidates: all,
        assumptions: search.assumptions.len(),
    })
}

impl Search<'_> {
    /// The scenario's own setting `start` as a candidate, checked under
    /// every assumption.
    fn baseline(&mut self, start: Setting) -> Result<Candidate, RunError> {
        let mut baseline = self.reference(vec![start], false)?.remove(0);
        // The baseline is checked under every assumption, for the record,
        // whether it meets the constraints or not.
        let failed = baseline.failed.take();
        self.robustness(&mut [&mut baseline], false)?;
        if failed.is_some() {
            baseline.failed = failed;
            baseline.robust = false;
        }
        Ok(baseline)
    }

    /// Tries the recommendation `best`, then the candidates of `all` in
    /// [`fresh_tries`]'s order (each setting once, [`FRESH_TRIES`] at
    /// most, a contender only once checked robust) on `n` fresh
    /// replications: the first that passes them all is the
    /// recommendation, with its check; those before it failed, and are
    /// listed with theirs.
    fn confirm(
        &mut self,
        best: Candidate,
        all: &mut [Candidate],
        objective: Objective,
        n: u32,
    ) -> Result<Confirmed, RunError> {
        let setting = |c: &Candidate| Setting {
            spec: c.spec.clone(),
            dispatcher: c.dispatcher.clone(),
        };
        let mut next = fresh_tries(all, objective).into_iter();
        let mut tried: Vec<Setting> = Vec::new();
        let mut failed_fresh = Vec::new();
        let mut candidate = Some(best);
        while let Some(c) = candidate.take() {
            tried.push(setting(&c));
            let check = self.fresh(&c, n)?;
            if check.passed == check.replications {
                return Ok(Confirmed {
                    best: Some(c),
                    fresh: Some(check),
                    failed_fresh,
                });
            }
            failed_fresh.push((c, check));
            while tried.len() < FRESH_TRIES {
                let Some(i) = next.next() else { break };
                if tried.iter().any(|t| same(t, &setting(&all[i]))) {
                    continue;
                }
                if !all[i].robust {
                    self.robustness(&mut [&mut all[i]], true)?;
                }
                if all[i].robust {
                    candidate = Some(all[i].clone());
                    break;
                }
            }
        }
        Ok(Confirmed {
            best: None,
            fresh: None,
            failed_fresh,
        })
    }
}

/// The recommendation after the fresh replications, as [`Tuned`] holds
/// it: the first candidate tried that passed them (with its check), and
/// those that failed before it.
struct Confirmed {
    best: Option<Candidate>,
    fresh: Option<Fresh>,
    failed_fresh: Vec<(Candidate, Fresh)>,
}

/// Where the coordinate descent stands: the candidate it moves from, the
/// best robust one so far, and every candidate evaluated.
struct Descent {
    objective: Objective,
    current: Candidate,
    best: Option<Candidate>,
    /// Every candidate evaluated, in order, the baseline first.
    all: Vec<Candidate>,
    /// How many (a setting come back to counts each time).
    evaluated: usize,
}

impl Descent {
    /// A descent from `baseline`, the best so far if it is robust.
    fn starting_at(baseline: &Candidate, objective: Objective) -> Descent {
        Descent {
            objective,
            current: baseline.clone(),
            best: baseline.robust.then(|| baseline.clone()),
            all: vec![baseline.clone()],
            evaluated: 1,
        }
    }

    /// One round: a step along each knob of the current setting in turn.
    /// Whether any step moved.
    fn round(&mut self, search: &mut Search<'_>) -> Result<bool, RunError> {
        let mut improved = false;
        for knob in knobs(&self.current.spec, self.current.dispatcher.is_some()) {
            improved |= self.step(search, knob)?;
        }
        Ok(improved)
    }

    /// Evaluates the other values of `knob` from the current setting and
    /// moves to the better ones. Whether it moved.
    fn step(&mut self, search: &mut Search<'_>, knob: Knob) -> Result<bool, RunError> {
        let objective = self.objective;
        let here = Setting {
            spec: self.current.spec.clone(),
            dispatcher: self.current.dispatcher.clone(),
        };
        let settings = candidates(&here, knob, search.queue.as_ref());
        self.evaluated += settings.len();
        // Once a candidate is the best, one that breaks a constraint moves
        // nothing (only the best and, before there is one, how far each
        // is from the constraints steer the descent): its runs stop there.
        let mut scored = search.reference(settings, self.best.is_some())?;
        // Only a candidate that would become the best is worth the other
        // assumptions, and only until one is found robust: it is then the
        // step's best (those before it in this order are not robust, those
        // after it are no better). The others wait ([`fresh_tries`]).
        let mut contenders: Vec<&mut Candidate> = scored
            .iter_mut()
            .filter(|c| {
                c.failed.is_none()
                    && self
                        .best
                        .as_ref()
                        .is_none_or(|b| better(&c.score, &b.score, objective))
            })
            .collect();
        contenders.sort_by(|x, y| best_first(&x.score, &y.score, objective));
        for c in contenders.iter_mut() {
            c.contender = true;
        }
        for c in contenders {
            if !c.robust {
                search.robustness(&mut [&mut *c], true)?;
            }
            if c.robust {
                break;
            }
        }
        self.all.extend(scored.iter().cloned());
        let mut improved = false;
        for c in scored {
            improved |= self.take(c, &search.constraints);
        }
        Ok(improved)
    }

    /// Moves to `c` if it beats the best so far, or, with nothing feasible
    /// yet, if it comes closer to meeting `constraints`. Whether it moved.
    fn take(&mut self, c: Candidate, constraints: &Constraints) -> bool {
        let beats_current = match (&self.best, c.robust) {
            (_, false) => false,
            (None, true) => true,
            (Some(b), true) => better(&c.score, &b.score, self.objective),
        };
        if beats_current {
            self.best = Some(c.clone());
            self.current = c;
            true
        } else if self.best.is_none()
            && c.score.violation(constraints) < self.current.score.violation(constraints) - 1e-12
        {
            // Nothing feasible yet: move towards the constraints,
            // so two knobs that must both change (a rate and a
            // concurrency) can get there one after the other.
            self.current = c;
            true
        } else {
            false
        }
    }
}

/// The order that puts the better score first (for a stable sort: equal
/// ones keep their order).
fn best_first(x: &Score, y: &Score, objective: Objective) -> std::cmp::Ordering {
    if better(x, y, objective) {
        std::cmp::Ordering::Less
    } else if better(y, x, objective) {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

/// The candidates that may be tried on the fresh replications after the
/// recommendation, in the order they are tried: the robust ones of `all`
/// and the contenders not yet checked (a contender is checked under every
/// assumption when its turn comes, and tried only if robust), from the
/// best down. Indices into `all`.
fn fresh_tries(all: &[Candidate], objective: Objective) -> Vec<usize> {
    let mut order: Vec<usize> = (0..all.len())
        .filter(|&i| all[i].robust || all[i].contender && all[i].failed.is_none())
        .collect();
    order.sort_by(|&x, &y| best_first(&all[x].score, &all[y].score, objective));
    order
}

/// The rounds of coordinate descent (at least one).
/// The settings a step along `knob` from `here` evaluates: the knob's
/// other values, their burst settled against the scenario's `queue`; the
/// current value itself is not simulated again.
fn candidates(here: &Setting, knob: Knob, queue: Option<&DispatcherSpec>) -> Vec<Setting> {
    setting_variants(here, knob)
        .into_iter()
        .map(|s| settled(s, queue))
        .filter(|c| !same(c, here))
        .collect()
}

/// Where the search of policy `policy_index` of `scenario` starts: the
/// policy with its preset written out, under the scenario's queue.
fn start_setting(scenario: &Scenario, policy_index: usize) -> Setting {
    let start = scenario.spec().policies[policy_index].clone();
    Setting {
        spec: start.with_preset_applied().unwrap_or(start),
        dispatcher: scenario.spec().dispatcher.clone(),
    }
}

/// The runs the resource guard judges a search of policy `policy_index`
/// of `scenario` with `budget` by: the baseline and the first round's
/// candidates (each value of each setting from the start, those that act
/// the same once), each on every replication, and the recommendation's
/// fresh replications. The search itself stops a candidate's runs once
/// it cannot win, and later rounds and other assumptions add runs, so the
/// count it ends with (its `runs`) differs either way.
pub fn planned_runs(scenario: &Scenario, policy_index: usize, budget: Budget) -> u64 {
    let start = start_setting(scenario, policy_index);
    let queue = scenario.spec().dispatcher.as_ref();
    // Settings that act the same share their runs.
    let first_round: std::collections::BTreeSet<String> = knobs(&start.spec, queue.is_some())
        .into_iter()
        .flat_map(|knob| candidates(&start, knob, queue))
        .map(|c| c.runs_key())
        .chain([start.runs_key()])
        .collect();
    (first_round.len() as u64)
        .saturating_mul(u64::from(budget.replications))
        .saturating_add(u64::from(budget.fresh))
}

fn max_rounds(b: Budget) -> usize {
    b.max_rounds.max(1)
}

/// `gcloud tasks queues update` flags for a Cloud Tasks policy.
pub fn gcloud_flags(p: &Policy) -> Option<String> {
    let q = p.cloud_tasks_queue()?;
    let secs = |ns: u64| {
        let s = ns as f64 / NS_PER_SEC as f64;
        format!("{}s", trim(s))
    };
    let mut flags = format!(
        "--max-attempts={} --min-backoff={} --max-backoff={} --max-doublings={}",
        q.max_attempts,
        secs(q.min_backoff),
        secs(q.max_backoff),
        q.max_doublings
    );
    if let Some(d) = q.max_retry_duration {
        flags.push_str(&format!(" --max-retry-duration={}", secs(d)));
    }
    Some(flags)
}

/// The `gcloud tasks queues update QUEUE` flags that turn the `from`
/// setting into the `to` one: every flag whose value changed, rate limits
/// included, in the order of the gcloud reference. `None` when `to` is not
/// a Cloud Tasks schedule (another backoff, or jitter, which a queue does
/// not have). The second value lists what gcloud cannot set:
/// `max_burst_size` is output-only (Cloud Tasks derives it from the rate),
/// said when the rate changes. `max_burst_size` itself is never a flag.
pub fn gcloud_update(
    from: (&Policy, Option<&DispatcherSpec>),
    to: (&Policy, Option<&DispatcherSpec>),
) -> Option<(String, Vec<String>)> {
    let all = gcloud_flags(to.0)?;
    let old = gcloud_flags(from.0).unwrap_or_default();
    let old_flags: Vec<&str> = old.split(' ').collect();
    let mut flags: Vec<String> = all
        .split(' ')
        .filter(|f| !old_flags.contains(f))
        .map(str::to_string)
        .collect();
    if from.0.max_retry_duration.is_some() && to.0.max_retry_duration.is_none() {
        flags.push("--clear-max-retry-duration".into());
    }
    let mut notes = Vec::new();
    if let (Some(a), Some(b)) = (from.1, to.1) {
        if a.max_dispatches_per_second != b.max_dispatches_per_second {
            flags.push(format!(
                "--max-dispatches-per-second={}",
                trim(b.max_dispatches_per_second)
            ));
        }
        if a.max_concurrent_dispatches != b.max_concurrent_dispatches {
            flags.push(format!(
                "--max-concurrent-dispatches={}",
                b.max_concurrent_dispatches
            ));
        }
        if a.max_dispatches_per_second != b.max_dispatches_per_second {
            let (low, high) = api::burst_range(b.max_dispatches_per_second);
            notes.push(format!(
                "max_burst_size is Cloud Tasks' to set (output only): it derives it from \
                 --max-dispatches-per-second by an unpublished rule; this setting was checked \
                 with bursts of {low} to {high}"
            ));
        }
    }
    Some((flags.join(" "), notes))
}

/// A figure to 6 decimals, trailing zeros trimmed: a dead-letter share of
/// 0.00004 does not read as 0.
fn precise(x: f64) -> String {
    let s = format!("{x:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// What `c` changes from `base`, as `name=value` pairs in search order
/// (empty for the baseline itself).
pub fn changes(base: &Candidate, c: &Candidate) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (&base.dispatcher, &c.dispatcher) {
        if a.max_dispatches_per_second != b.max_dispatches_per_second {
            out.push(format!(
                "max_dispatches_per_second={}",
                trim(b.max_dispatches_per_second)
            ));
        }
        if a.max_concurrent_dispatches != b.max_concurrent_dispatches {
            out.push(format!(
                "max_concurrent_dispatches={}",
                b.max_concurrent_dispatches
            ));
        }
        if a.max_burst_size != b.max_burst_size {
            out.push(format!(
                "max_burst_size={} (Cloud Tasks')",
                b.max_burst_size
            ));
        }
    }
    let (Ok(a), Ok(b)) = (policy::resolve(&base.spec), policy::resolve(&c.spec)) else {
        return out;
    };
    let shown = written(c);
    match (&a.backoff, &b.backoff) {
        (
            Backoff::CloudTasks {
                min_backoff: a_min,
                max_backoff: a_max,
                max_doublings: a_d,
            },
            Backoff::CloudTasks {
                min_backoff,
                max_backoff,
                max_doublings,
            },
        ) => {
            if a_min != min_backoff {
                out.push(format!("min_backoff={}", format_duration(*min_backoff)));
            }
            if a_max != max_backoff {
                out.push(format!("max_backoff={}", format_duration(*max_backoff)));
            }
            if a_d != max_doublings {
                out.push(format!("max_doublings={max_doublings}"));
            }
        }
        (x, y) if x != y => out.push(format!("backoff={}", as_written(&shown.backoff))),
        _ => {}
    }
    if a.max_attempts != b.max_attempts {
        out.push(format!(
            "max_attempts={}",
            b.max_attempts.map_or(-1, i64::from)
        ));
    }
    if a.max_retry_duration != b.max_retry_duration {
        out.push(format!(
            "max_retry_duration={}",
            b.max_retry_duration.map_or("none".into(), format_duration)
        ));
    }
    if a.jitter != b.jitter {
        out.push(format!("jitter={}", as_written(&shown.jitter)));
    }
    out
}

/// The candidate's policy as a scenario file would hold it (its preset's
/// settings filled in).
fn written(c: &Candidate) -> PolicySpec {
    c.spec
        .with_preset_applied()
        .unwrap_or_else(|_| c.spec.clone())
}

/// A setting as a scenario file writes it, in compact JSON (`"full"` as
/// `full`, `{"constant":{"delay":"1m"}}`); `none` when unset.
fn as_written<T: serde::Serialize>(setting: &Option<T>) -> String {
    match serde_json::to_value(setting) {
        Ok(serde_json::Value::String(name)) => name,
        Ok(serde_json::Value::Null) | Err(_) => "none".into(),
        Ok(value) => crate::json_text::compact(&value).unwrap_or_else(|_| value.to_string()),
    }
}

/// The spread of a score over its replications, in a line (empty with one
/// replication): `min–max` of the figures that vary between seeds.
pub fn describe_spread(s: &Score, queue: bool) -> String {
    let p = &s.spread;
    if p.replications < 2 {
        return String::new();
    }
    let pct = |(a, b): Range| format!("{:.2}–{:.2} %", 100.0 * a, 100.0 * b);
    let secs = |(a, b): Range| format!("{a:.0}–{b:.0} s");
    let mut parts = vec![format!("dropped {}", pct(p.drop_rate))];
    if let Some(r) = p.recovery_after_fault_s {
        parts.push(format!("recovery {}", secs(r)));
    }
    if queue {
        parts.push(format!("dead-lettered {}", pct(p.dead_letter_rate)));
        parts.push(match p.drain_s {
            Some(r) => format!("drain {}", secs(r)),
            None => "drain: not in every run".into(),
        });
        parts.push(format!("oldest task {}", secs(p.max_task_age_s)));
        parts.push(format!(
            "peak load (worst 1 s) {:.2}–{:.2}×",
            p.peak_load_ratio.0, p.peak_load_ratio.1
        ));
    }
    format!(
        "over {}: {}",
        count(p.replications as f64, "replication", "replications"),
        parts.join(", ")
    )
}

/// What a queue-tuning score adds to [`describe`]: dead letters, drain,
/// oldest task, peak load.
pub fn describe_queue(s: &Score) -> String {
    let drain = match s.drain_s {
        Some(d) => format!("drains {} after the fault", whole_secs(d)),
        None => "does not drain in every run".into(),
    };
    format!(
        "dead-lettered {:.2} %, {drain}, oldest task {}, peak load {:.2}× capacity \
         in the worst second ({:.2}× in the busiest bin)",
        100.0 * s.dead_letter_rate,
        whole_secs(s.max_task_age_s),
        s.peak_load_ratio,
        s.peak_load_bin_ratio
    )
}

/// A duration in seconds rounded to the second, as a duration string.
fn whole_secs(s: f64) -> String {
    format_duration((s.max(0.0).round() as u64).saturating_mul(NS_PER_SEC))
}

/// A duration in seconds to the tenth (a mean over replications need not
/// be whole): `16.3s`, and whole values as duration strings (`0s`, `2m`).
fn tenth_secs(s: f64) -> String {
    let tenths = (s.max(0.0) * 10.0).round();
    if tenths % 10.0 == 0.0 {
        whole_secs(tenths / 10.0)
    } else {
        format!("{:.1}s", tenths / 10.0)
    }
}

/// A one-line description of a score.
pub fn describe(s: &Score) -> String {
    let rec = match (s.metastable, s.recovery_after_fault_s) {
        (true, _) => "stays metastable".to_string(),
        (false, Some(r)) => format!("recovers {} after the fault", tenth_secs(r)),
        (false, None) if s.undetermined => {
            "recovery undetermined (the run ends too soon after the fault)".to_string()
        }
        (false, None) => "no fault to recover from".to_string(),
    };
    // Requests the run ended before (in a backoff longer than what was
    // left of it, or queued) are neither successes nor drops: said when
    // they are enough to change the verdict, not for the few in flight at
    // the end of any run.
    let unfinished = if s.unfinished_rate >= UNFINISHED_NOTED {
        format!(
            ", {:.2} % unfinished when the run ended (lengthen `duration` to judge them)",
            100.0 * s.unfinished_rate
        )
    } else {
        String::new()
    };
    format!(
        "success {:.2} %, dropped {:.2} %, {:.3} attempts/request, {rec}{unfinished}",
        100.0 * s.success_rate,
        100.0 * s.drop_rate,
        s.amplification
    )
}

/// The share of requests unfinished at the end from which [`describe`]
/// mentions them.
const UNFINISHED_NOTED: f64 = 0.05;

#[cfg(test)]
mod tests {
    use super::*;

    /// A broken constraint carries the flag that sets it, and the tally
    /// counts candidates by it, most often broken first.
    #[test]
    fn broken_constraints_are_tallied_by_their_flags() {
        let c = Constraints {
            max_drop_rate: None,
            min_success_rate: Some(0.999),
            max_dead_letter_rate: None,
            max_task_age_s: Some(7200.0),
            max_peak_load: None,
            must_recover: true,
        };
        let score = |success: f64, age: f64, metastable: bool| {
            let mut s = Score {
                max_task_age_s: age,
                metastable,
                ..Score::default()
            };
            s.spread.success_rate = (success, success);
            s
        };
        let broken = |s: Score| s.broken(&c).map(|b| (b.flag, b.text));
        assert_eq!(broken(score(1.0, 60.0, false)), None);
        assert_eq!(
            broken(score(0.83, 60.0, false)),
            Some((
                "--min-success-rate",
                "success rate 0.83 (limit 0.999)".into()
            ))
        );
        assert_eq!(
            broken(score(1.0, 9000.0, false)).map(|b| b.0),
            Some("--max-task-age")
        );
        assert_eq!(
            broken(score(1.0, 60.0, true)),
            Some(("--allow-metastable", "stays metastable".into()))
        );
        let candidate = |s: Score| Candidate {
            spec: PolicySpec::default(),
            dispatcher: None,
            failed: s.broken(&c).map(|b| b.with("the scenario as written")),
            score: s,
            checks: Vec::new(),
            robust: false,
            contender: false,
        };
        let all: Vec<Candidate> = [
            score(0.83, 60.0, false),
            score(1.0, 9000.0, false),
            score(0.5, 9000.0, false),
            score(1.0, 60.0, false),
        ]
        .into_iter()
        .map(candidate)
        .collect();
        assert_eq!(
            all[0].failed.as_ref().unwrap().text,
            "success rate 0.83 (limit 0.999) with the scenario as written"
        );
        assert_eq!(
            broken_tally(&all),
            [("--min-success-rate", 2), ("--max-task-age", 1)]
        );
    }

    #[test]
    fn a_score_with_requests_left_unfinished_says_so() {
        let mut s = Score {
            success_rate: 0.6076,
            amplification: 1.163,
            ..Score::default()
        };
        let finished = describe(&s);
        assert!(!finished.contains("unfinished"), "{finished}");
        s.unfinished_rate = 0.3924;
        assert!(
            describe(&s).contains("39.24 % unfinished when the run ended"),
            "{}",
            describe(&s)
        );
        s.unfinished_rate = 0.0069;
        assert_eq!(describe(&s), finished);
    }

    /// Each objective breaks ties in the order its help gives.
    #[test]
    fn ties_are_broken_in_the_documented_order() {
        let s = |recovery: f64, success_rate: f64, amplification: f64| Score {
            recovery_after_fault_s: Some(recovery),
            success_rate,
            amplification,
            ..Score::default()
        };
        // Same recovery: the higher success rate wins over fewer attempts.
        let sure = s(5.0, 0.99, 1.4);
        let lean = s(5.0, 0.90, 1.1);
        assert!(better(&sure, &lean, Objective::Recovery));
        // Within 0.1 % of success, fewer attempts win.
        let close = s(5.0, 0.9895, 1.2);
        assert!(better(&close, &sure, Objective::Recovery));
        // Amplification first, then success, then recovery.
        assert!(better(&lean, &sure, Objective::Amplification));
        let slow = s(9.0, 0.90, 1.1);
        assert!(better(&lean, &slow, Objective::Amplification));
        // Success first, then recovery, then attempts.
        let quick = s(2.0, 0.99, 1.9);
        assert!(better(&quick, &sure, Objective::Success));
        assert!(better(&sure, &lean, Objective::Success));
    }

    #[test]
    fn a_mean_recovery_time_reads_in_seconds() {
        let rec = |r: f64| {
            describe(&Score {
                recovery_after_fault_s: Some(r),
                ..Score::default()
            })
        };
        // The mean of 15, 16 and 18 s.
        assert!(
            rec(49.0 / 3.0).contains("recovers 16.3s after"),
            "{}",
            rec(49.0 / 3.0)
        );
        assert!(rec(0.0).contains("recovers 0s after"));
        assert!(rec(120.0).contains("recovers 2m after"));
        assert!(rec(0.04).contains("recovers 0s after"));
    }

    #[test]
    fn changes_are_written_as_in_a_scenario_file() {
        let candidate = |backoff, jitter| Candidate {
            spec: PolicySpec {
                name: "p".into(),
                max_attempts: Some(3),
                backoff: Some(backoff),
                jitter,
                ..Default::default()
            },
            dispatcher: None,
            score: Score::default(),
            checks: Vec::new(),
            robust: false,
            contender: false,
            failed: None,
        };
        let base = candidate(
            BackoffSpec::Constant {
                delay: Dur::from_millis(100),
            },
            None,
        );
        let longer = candidate(
            BackoffSpec::Constant {
                delay: Dur::from_secs(60),
            },
            Some(JitterSpec::Full),
        );
        assert_eq!(
            changes(&base, &longer),
            [r#"backoff={"constant":{"delay":"1m"}}"#, "jitter=full"]
        );
        let proportional = candidate(
            BackoffSpec::Constant {
                delay: Dur::from_millis(100),
            },
            Some(JitterSpec::Proportional(0.1)),
        );
        assert_eq!(
            changes(&base, &proportional),
            [r#"jitter={"proportional":0.1}"#]
        );
        assert_eq!(changes(&longer, &base)[1], "jitter=none");
    }

    #[test]
    fn gcloud_flags_for_the_defaults() {
        let p = policy::resolve(&PolicySpec {
            name: "q".into(),
            preset: Some("cloud-tasks-default".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            gcloud_flags(&p).unwrap(),
            "--max-attempts=100 --min-backoff=0.1s --max-backoff=3600s --max-doublings=16"
        );
    }

    #[test]
    fn the_gcloud_line_lists_every_changed_flag_and_says_what_gcloud_cannot_set() {
        let p = |attempts: i64, min_s: u64, window: Option<u64>| {
            policy::resolve(&PolicySpec {
                name: "q".into(),
                max_attempts: Some(attempts),
                max_retry_duration: window.map(Dur::from_secs),
                backoff: Some(BackoffSpec::CloudTasks {
                    min_backoff: Dur::from_secs(min_s),
                    max_backoff: Dur::from_secs(3600),
                    max_doublings: 16,
                }),
                ..Default::default()
            })
            .unwrap()
        };
        let q = |rate: f64, burst: u32, conc: u32| DispatcherSpec {
            max_dispatches_per_second: rate,
            max_burst_size: burst,
            max_concurrent_dispatches: conc,
            dispatch_deadline: Dur::from_secs(600),
            throttling: None,
        };
        let (from, to) = (p(100, 1, Some(600)), p(20, 1, None));
        let (flags, notes) = gcloud_update(
            (&from, Some(&q(500.0, 100, 1000))),
            (&to, Some(&q(30.0, 10, 1000))),
        )
        .unwrap();
        assert_eq!(
            flags,
            "--max-attempts=20 --clear-max-retry-duration --max-dispatches-per-second=30"
        );
        assert!(!flags.contains("burst"), "{flags}");
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("checked with bursts of 6 to 100"),
            "{}",
            notes[0]
        );
        let (flags, notes) = gcloud_update(
            (&from, Some(&q(500.0, 100, 1000))),
            (&from, Some(&q(500.0, 100, 50))),
        )
        .unwrap();
        assert_eq!(flags, "--max-concurrent-dispatches=50");
        assert!(notes.is_empty());
    }

    #[test]
    fn variants_keep_min_below_max() {
        let spec = PolicySpec {
            name: "q".into(),
            max_attempts: Some(5),
            backoff: Some(BackoffSpec::CloudTasks {
                min_backoff: Dur::from_secs(1),
                max_backoff: Dur::from_secs(10),
                max_doublings: 3,
            }),
            ..Default::default()
        };
        let v = variants(&spec, Knob::MinBackoff);
        assert!(!v.is_empty());
        assert!(v.iter().all(backoff_is_sane));
        assert!(v.len() < SECS.len(), "60 s and 30 s exceed the 10 s cap");
    }
}
