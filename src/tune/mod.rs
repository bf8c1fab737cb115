//! `retrysim tune`: a search over one policy's parameters for the best
//! setting that meets the constraints, judged by simulating the scenario.
//!
//! The search is coordinate descent over a grid of values people actually
//! configure: starting from the scenario's policy, each round tries every
//! candidate value of one parameter at a time (all candidates of a round run
//! in parallel) and keeps the best; it stops when a full round improves
//! nothing. Every candidate is a full simulation on the same traffic, so the
//! result is deterministic for a given scenario and seed.

use crate::metrics::{Recovery, RunResult};
use crate::policy::{self, Backoff, Jitter, Policy};
use crate::policy::{BackoffSpec, JitterSpec, PolicySpec};
use crate::runner::{self, Job, RunError};
use crate::scenario::Scenario;
use crate::time::{format_duration, Dur, NS_PER_SEC};

/// What "best" means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Objective {
    /// Shortest recovery after the fault (never recovering is worst), then
    /// fewest retries.
    Recovery,
    /// Fewest attempts per request, then highest success rate.
    Amplification,
    /// Highest success rate, then fewest attempts per request.
    Success,
}

/// Constraints every accepted candidate meets.
#[derive(Clone, Copy, Debug)]
pub struct Constraints {
    /// Largest share of requests dropped (limits, deadline, budget).
    pub max_drop_rate: Option<f64>,
    /// The run must not stay metastable.
    pub must_recover: bool,
}

/// How one candidate did (means over replications).
#[derive(Clone, Debug, PartialEq)]
pub struct Score {
    pub success_rate: f64,
    pub drop_rate: f64,
    pub amplification: f64,
    /// Seconds from the fault's end to recovery; `None` = never (metastable)
    /// in at least one replication, or no fault.
    pub recovery_after_fault_s: Option<f64>,
    pub metastable: bool,
    /// At least one replication ended too soon after the fault to tell
    /// whether it recovered.
    pub undetermined: bool,
}

/// One evaluated policy.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub spec: PolicySpec,
    pub score: Score,
}

/// The search's result: the starting point and the best feasible candidate.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub baseline: Candidate,
    pub best: Option<Candidate>,
    pub evaluated: usize,
}

/// Which parameter a step changes.
#[derive(Clone, Copy, Debug)]
enum Knob {
    MaxAttempts,
    MinBackoff,
    MaxBackoff,
    MaxDoublings,
    Multiplier,
    Jitter,
}

const ATTEMPTS: [i64; 7] = [2, 3, 5, 10, 20, 50, 100];
const SECS: [f64; 11] = [0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];
const CAPS: [f64; 9] = [1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0];
const DOUBLINGS: [u32; 7] = [0, 1, 2, 3, 5, 8, 16];
const MULTIPLIERS: [f64; 4] = [1.5, 2.0, 3.0, 4.0];

fn dur(s: f64) -> Dur {
    Dur(crate::time::from_secs(s))
}

/// The knobs that exist for a policy's backoff kind.
fn knobs(spec: &PolicySpec) -> Vec<Knob> {
    match spec.backoff {
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
        Knob::MinBackoff => SECS.iter().for_each(|&v| {
            push(&|s| match s.backoff.as_mut() {
                Some(BackoffSpec::CloudTasks { min_backoff, .. }) => *min_backoff = dur(v),
                Some(BackoffSpec::Exponential { initial, .. })
                | Some(BackoffSpec::Linear { initial, .. }) => *initial = dur(v),
                Some(BackoffSpec::Constant { delay }) => *delay = dur(v),
                Some(BackoffSpec::Decorrelated { base, .. }) => *base = dur(v),
                None => {}
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

/// Simulates each of `specs` in place of the scenario's policies,
/// `replications` times, and scores them (in the order given).
fn evaluate_all(
    base: &Scenario,
    specs: &[PolicySpec],
    replications: u32,
) -> Result<Vec<Score>, RunError> {
    let scenarios: Vec<Scenario> = specs
        .iter()
        .map(|spec| {
            base.with_only_policy(spec.clone())
                .expect("variants resolve")
        })
        .collect();
    let jobs: Vec<Job<'_>> = scenarios
        .iter()
        .flat_map(|s| runner::jobs_of(s, replications))
        .collect();
    let results = runner::run_jobs(&jobs, false, &|| {})?;
    Ok(results.chunks(replications as usize).map(score).collect())
}

/// Scores one candidate from its runs (one per replication).
fn score(runs: &[RunResult]) -> Score {
    let n = runs.len() as f64;
    let mean = |f: &dyn Fn(&RunResult) -> f64| runs.iter().map(f).sum::<f64>() / n;
    let metastable = runs.iter().any(|r| r.summary.metastable());
    let undetermined = runs
        .iter()
        .any(|r| r.summary.recovery == Recovery::Undetermined);
    let recovery = if runs
        .iter()
        .all(|r| r.summary.recovery_after_fault_s().is_some())
    {
        Some(mean(&|r| r.summary.recovery_after_fault_s().unwrap_or(0.0)))
    } else {
        None
    };
    Score {
        success_rate: mean(&|r| r.summary.success_rate()),
        drop_rate: mean(&|r| {
            let s = &r.summary;
            if s.requests == 0 {
                0.0
            } else {
                s.dropped as f64 / s.requests as f64
            }
        }),
        amplification: mean(&|r| r.summary.amplification()),
        recovery_after_fault_s: recovery,
        metastable,
        undetermined,
    }
}

impl Score {
    fn feasible(&self, c: &Constraints) -> bool {
        c.max_drop_rate.is_none_or(|m| self.drop_rate <= m + 1e-12)
            && !(c.must_recover && (self.metastable || self.undetermined))
    }

    /// A sort key: smaller is better.
    fn key(&self, objective: Objective) -> [f64; 3] {
        let recovery = self.recovery_after_fault_s.unwrap_or(f64::INFINITY);
        // Success rates within 0.1 % count as equal, so the tie-breakers matter.
        let success = -(self.success_rate * 1000.0).round();
        match objective {
            Objective::Recovery => [recovery, success, self.amplification],
            Objective::Amplification => [self.amplification, success, recovery],
            Objective::Success => [success, recovery, self.amplification],
        }
    }
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

/// Runs the search from the scenario's policy `policy_index`.
pub fn tune(
    scenario: &Scenario,
    policy_index: usize,
    objective: Objective,
    constraints: Constraints,
    replications: u32,
    max_rounds: usize,
) -> Result<Tuned, RunError> {
    let start = scenario.spec().policies[policy_index].clone();
    let start = start.with_preset_applied().unwrap_or(start);
    let baseline = Candidate {
        score: evaluate_all(scenario, std::slice::from_ref(&start), replications)?.remove(0),
        spec: start.clone(),
    };
    let mut evaluated = 1;
    let mut current = baseline.clone();
    let mut best = baseline
        .score
        .feasible(&constraints)
        .then(|| baseline.clone());
    for _ in 0..max_rounds {
        let mut improved = false;
        for knob in knobs(&current.spec) {
            let candidates = variants(&current.spec, knob);
            evaluated += candidates.len();
            let scores = evaluate_all(scenario, &candidates, replications)?;
            let scored: Vec<Candidate> = candidates
                .into_iter()
                .zip(scores)
                .map(|(spec, score)| Candidate { spec, score })
                .collect();
            for c in scored {
                let feasible = c.score.feasible(&constraints);
                let beats_current = match (&best, feasible) {
                    (_, false) => false,
                    (None, true) => true,
                    (Some(b), true) => better(&c.score, &b.score, objective),
                };
                if beats_current {
                    best = Some(c.clone());
                    current = c;
                    improved = true;
                }
            }
        }
        if !improved {
            break;
        }
    }
    Ok(Tuned {
        baseline,
        best,
        evaluated,
    })
}

/// `gcloud tasks queues update` flags for a Cloud Tasks policy.
pub fn gcloud_flags(p: &Policy) -> Option<String> {
    let Backoff::CloudTasks {
        min_backoff,
        max_backoff,
        max_doublings,
    } = p.backoff
    else {
        return None;
    };
    if p.jitter != Jitter::None {
        return None;
    }
    let secs = |ns: u64| {
        let s = ns as f64 / NS_PER_SEC as f64;
        format!("{}s", trim(s))
    };
    let mut flags = format!(
        "--max-attempts={} --min-backoff={} --max-backoff={} --max-doublings={}",
        p.max_attempts.map_or(-1, |a| a as i64),
        secs(min_backoff),
        secs(max_backoff),
        max_doublings
    );
    if let Some(d) = p.max_retry_duration {
        flags.push_str(&format!(" --max-retry-duration={}", secs(d)));
    }
    Some(flags)
}

fn trim(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A one-line description of a score.
pub fn describe(s: &Score) -> String {
    let rec = match (s.metastable, s.recovery_after_fault_s) {
        (true, _) => "stays metastable".to_string(),
        (false, None) if s.undetermined => {
            "recovery undetermined (the run ends too soon after the fault)".to_string()
        }
        (false, Some(r)) => format!(
            "recovers {} after the fault",
            format_duration((r * 1e9) as u64)
        ),
        (false, None) => "no fault to recover from".to_string(),
    };
    format!(
        "success {:.2} %, dropped {:.2} %, {:.3} attempts/request, {rec}",
        100.0 * s.success_rate,
        100.0 * s.drop_rate,
        s.amplification
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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
