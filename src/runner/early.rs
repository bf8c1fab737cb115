//! Early stopping: a run made for a search (`assess`, `map`, `tune`) ends
//! at a bin boundary as soon as its outcome for the question asked is
//! decided, instead of at the scenario's end. `run` and `sweep` never stop
//! early.
//!
//! A run with an incident (see `ScenarioSpec::incident`) may stop when:
//!
//! 1. **it has recovered and held**: goodput ≥ `recovery_threshold` ×
//!    demand in every bin for `stable_for`, starting at or after the
//!    incident's end. That is exactly where the full run's recovery time is
//!    found (the first such stretch), so the stopped run's recovery time is
//!    the full run's;
//! 2. **no recovery can start by the deadline** (with a recovery deadline
//!    only, `--recover-within W`, and a run long enough to decide it): a
//!    bin that starts at or after the deadline (`W` after the incident's
//!    end) is unhealthy, and no recovery has been seen. A recovery that
//!    starts by the deadline holds through every bin that starts in the
//!    `stable_for` after it: either it has already held (rule 1) or that
//!    unhealthy bin breaks it. Whatever the rest of the run does, it did
//!    not recover within `W`. In a storm this is the first bin after the
//!    deadline. At the latest, the run stops once the bins that could have
//!    shown a recovery (up to `W` + `stable_for`, rounded up to whole bins)
//!    are all closed;
//! 3. **a constraint is already broken** (`tune`): the caller's own check
//!    on the run so far (its bins and the figures that only grow, see
//!    `model::run::Progress`) says so (see [`run_jobs_until_broken`]).
//!
//! A stopped run is exactly the first part of the full run (the same
//! events in the same order, see `model::run::simulate_until`), so the
//! decision depends on the run alone, never on the thread count. Its
//! summary covers the part simulated: counts such as the attempts per
//! request are of that part, so callers that report them use full runs.

use super::{Job, RunError};
use crate::engine::stop;
use crate::metrics::{recovery, BinRow, RunResult};
/// What a stop check reads of a run so far (a caller's [`Broken`] too).
pub use crate::model::run::Progress;
use crate::model::run::{simulate_to, simulate_until, Paused};
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::Scenario;
use crate::time::{secs, Nanos};
use rayon::prelude::*;
use std::sync::Arc;

/// The question a search asks of each run: did it recover, and (when
/// set) within how long after the incident.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Question {
    /// Recovery must start within this long after the incident's end;
    /// `None`: any time before the run's end.
    pub recover_within: Option<Nanos>,
}

/// When one run of a scenario may stop (see the module's rules).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StopRule {
    /// The incident's end, s.
    pub fault_end_s: f64,
    /// The bin width, s.
    pub bin_s: f64,
    /// Goodput ÷ demand a healthy bin reaches.
    pub threshold: f64,
    /// How long recovery must hold, s.
    pub stable_for_s: f64,
    /// With a recovery deadline: the time by which the run's outcome is
    /// decided whatever follows ([`horizon_s`]).
    pub horizon_s: Option<f64>,
    /// With a recovery deadline whose horizon lies inside the run: the
    /// latest time a recovery may start (the incident's end + the
    /// deadline), s. An unhealthy bin starting at or after it decides the
    /// run (rule 2). `None` when the run ends before the horizon: its
    /// outcome is then undetermined, unless it recovers late, which only
    /// the whole run shows.
    pub deadline_s: Option<f64>,
}

/// The time (s) by which a run of `spec` has decided whether it recovered
/// within `within` of its incident's end: that end, plus `within`, plus
/// `stable_for` rounded up to whole bins. `None` without an incident.
pub fn horizon_s(spec: &ScenarioSpec, within: Nanos) -> Option<f64> {
    let (_, end) = spec.incident(spec.duration.ns())?;
    let bin = spec.bin.ns().max(1);
    let need = spec.report.stable_for.ns().div_ceil(bin).max(1);
    Some(secs(end) + secs(within) + secs(need * bin))
}

impl StopRule {
    /// The rule for runs of `spec` asked `question`; `None` when the
    /// scenario has no incident (nothing to recover from: it runs to its
    /// end).
    pub fn new(spec: &ScenarioSpec, question: Question) -> Option<StopRule> {
        let (_, end) = spec.incident(spec.duration.ns())?;
        let horizon = question.recover_within.and_then(|w| horizon_s(spec, w));
        let inside = horizon.is_some_and(|h| h <= spec.duration.secs() + 1e-9);
        Some(StopRule {
            fault_end_s: secs(end),
            bin_s: spec.bin.secs(),
            threshold: spec.report.recovery_threshold,
            stable_for_s: spec.report.stable_for.secs(),
            horizon_s: horizon,
            deadline_s: question
                .recover_within
                .filter(|_| inside)
                .map(|w| secs(end) + secs(w)),
        })
    }

    /// Whether `bins` (every bin closed so far) decide the run's outcome.
    pub fn decided(&self, bins: &[BinRow]) -> bool {
        let Some(last) = bins.last() else {
            return false;
        };
        let end_s = last.t_s + self.bin_s;
        if let Some(d) = self.deadline_s {
            // Several bins may close at once (a stretch without events).
            let mut late = bins.iter().rev().take_while(|b| b.t_s + 1e-9 >= d);
            if late.any(|b| !recovery::healthy(b, self.threshold)) {
                return true;
            }
        }
        if end_s < self.fault_end_s + self.stable_for_s - 1e-9 {
            return false;
        }
        if self.horizon_s.is_some_and(|h| end_s + 1e-9 >= h) {
            return true;
        }
        recovery::recovered_at(
            bins,
            self.bin_s,
            self.fault_end_s,
            self.threshold,
            self.stable_for_s,
            end_s,
        )
        .is_some()
    }
}

/// A caller's constraint on a run, read at bin boundaries: `true` when the
/// run so far (of the scenario given) already breaks it. It must be a
/// function of the bins and of figures that only grow (see [`Progress`]),
/// so that the whole run breaks it too.
pub type Broken<'c> = dyn Fn(&ScenarioSpec, &Progress<'_>) -> bool + Sync + 'c;

/// One run of a search: the job, whether it may stop early, and where it
/// starts.
pub struct Work<'a, 'k> {
    /// The scenario, policy and replication.
    pub job: Job<'a>,
    /// Whether the run stops once its outcome is decided.
    pub early: bool,
    /// Where the run starts.
    pub start: Start<'k>,
}

/// Where a run of a search starts (see `model::run::resume`).
pub enum Start<'k> {
    /// At time 0.
    Fresh,
    /// The job's policy and replication of this scenario is run up to
    /// this time (ns) and kept, for the runs of the search that share that
    /// part, and the job goes on from a copy of it (or, when it cannot,
    /// from time 0: the same run either way).
    Keep(&'k Scenario, Nanos),
    /// From a copy of this paused run, when the job can go on from there;
    /// else from time 0. The same run either way.
    Resume(Arc<Paused<'k>>),
}

/// A run of [`run_jobs_until`], with the paused run it kept, if asked.
pub type Done<'k> = (RunResult, Option<Arc<Paused<'k>>>);

/// Runs `work` in parallel like [`super::run_jobs`] (results in the
/// jobs' order, time series dropped), with the paused runs that
/// [`Start::Keep`] asked for. A job marked `early` stops as soon as its
/// outcome for `question` is decided, or as soon as `broken` (when given)
/// says a constraint of the caller's is broken by the bins so far; one
/// not marked runs to its end. `broken` must be a function of the bins
/// alone.
pub fn run_jobs_until<'k>(
    work: &[Work<'_, 'k>],
    question: Question,
    broken: Option<&Broken<'_>>,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<Done<'k>>, RunError> {
    run_work(work, Some(question), broken, on_done)
}

/// [`run_jobs_until`] for a search that asks no recovery question
/// (`tune`, whose objective reads the whole run): a job marked `early`
/// stops only once `broken` says a constraint is broken (rule 3).
pub fn run_jobs_until_broken<'k>(
    work: &[Work<'_, 'k>],
    broken: &Broken<'_>,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<Done<'k>>, RunError> {
    run_work(work, None, Some(broken), on_done)
}

/// [`run_jobs_until`], with rules 1 and 2 only when `question` is given.
fn run_work<'k>(
    work: &[Work<'_, 'k>],
    question: Option<Question>,
    broken: Option<&Broken<'_>>,
    on_done: &(dyn Fn() + Sync),
) -> Result<Vec<Done<'k>>, RunError> {
    work.par_iter()
        .map(|w| {
            if stop::requested() {
                return Err(RunError::Interrupted);
            }
            let job = &w.job;
            let spec = job.scenario.spec();
            let rule = question.and_then(|q| StopRule::new(spec, q));
            let mut decided = |p: &Progress<'_>| {
                rule.is_some_and(|r| r.decided(p.bins)) || broken.is_some_and(|b| b(spec, p))
            };
            let (policy, rep) = (job.policy, job.replication);
            let kept = match &w.start {
                Start::Keep(shared, until) => {
                    Some(Arc::new(simulate_to(shared, policy, rep, *until)?))
                }
                _ => None,
            };
            let from = match &w.start {
                Start::Resume(paused) => Some(paused),
                _ => kept.as_ref(),
            };
            let resumed = match from {
                Some(paused) => {
                    paused.resume(job.scenario, policy, rep, w.early.then_some(&mut decided))?
                }
                None => None,
            };
            let mut res = match resumed {
                Some(res) => res,
                None => simulate_until(job.scenario, policy, rep, w.early.then_some(&mut decided))?,
            };
            res.tiers[0].bins = Vec::new();
            on_done();
            Ok((res, kept))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::recovery::tests::bins;

    fn rule(horizon_s: Option<f64>) -> StopRule {
        StopRule {
            fault_end_s: 2.0,
            bin_s: 1.0,
            threshold: 0.9,
            stable_for_s: 3.0,
            horizon_s,
            deadline_s: None,
        }
    }

    /// Recovery must start within 4 s of the fault's end at 2 s, and hold 3 s.
    fn with_deadline() -> StopRule {
        StopRule {
            deadline_s: Some(6.0),
            ..rule(Some(9.0))
        }
    }

    #[test]
    fn decided_once_recovery_has_held_for_stable_for() {
        let b = bins(&[10.0, 0.0, 0.0, 9.5, 3.0, 9.0, 10.0, 10.0, 10.0]);
        // Healthy from 5 s: decided when the bin 7–8 s closes.
        assert!(!rule(None).decided(&b[..7]));
        assert!(rule(None).decided(&b[..8]));
    }

    #[test]
    fn a_deadline_decides_a_storm_at_its_horizon_and_not_before() {
        let b = bins(
            &[10.0; 3]
                .iter()
                .chain(&[0.0; 10])
                .copied()
                .collect::<Vec<_>>(),
        );
        assert!(!rule(None).decided(&b));
        // Within 4 s of 2 s, held 3 s: decided once the bins to 9 s close.
        assert!(!rule(Some(9.0)).decided(&b[..8]));
        assert!(rule(Some(9.0)).decided(&b[..9]));
    }

    #[test]
    fn a_storm_is_decided_by_its_first_unhealthy_bin_after_the_deadline() {
        let storm: Vec<f64> = [10.0; 3].iter().chain(&[0.0; 10]).copied().collect();
        let b = bins(&storm);
        // The bins from 3 s to 6 s are unhealthy but start before the
        // deadline (6 s): a recovery could still start at 6 s.
        assert!(!with_deadline().decided(&b[..6]));
        // The bin 6–7 s is unhealthy: no recovery starts by 6 s.
        assert!(with_deadline().decided(&b[..7]));
        // Several bins closing at once are all read.
        let mut late = bins(&[10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 10.0]);
        assert!(with_deadline().decided(&late));
        late[6].goodput_rps = 10.0;
        late[7].goodput_rps = 10.0;
        assert!(!with_deadline().decided(&late[..8]));
    }

    #[test]
    fn a_recovery_starting_by_the_deadline_is_waited_for() {
        // Healthy from 6 s, the deadline: it holds to 9 s, so the bins
        // after the deadline never decide a failure before it is seen.
        let b = bins(&[10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 10.0, 10.0, 10.0, 0.0]);
        assert!(!with_deadline().decided(&b[..8]));
        assert!(with_deadline().decided(&b[..9]));
        let ok = recovery::recovered_at(&b[..9], 1.0, 2.0, 0.9, 3.0, 9.0);
        assert_eq!(ok, Some(6.0));
    }

    #[test]
    fn the_deadline_rule_needs_a_horizon_inside_the_run() {
        let scenario = |duration: &str| {
            crate::scenario::Scenario::from_json(&format!(
                r#"{{"name": "h", "duration": "{duration}", "bin": "1s",
                    "traffic": {{"rate": 10}},
                    "backend": {{"workers": 1, "service_time": {{"constant": {{"value": "1ms"}}}}}},
                    "faults": [{{"outage": {{"start": "10s", "duration": "5s"}}}}],
                    "policies": [{{"name": "p", "max_attempts": 1}}],
                    "report": {{"stable_for": "3s"}}}}"#
            ))
            .unwrap()
        };
        let q = Question {
            recover_within: Some(20_000_000_000),
        };
        let long = StopRule::new(scenario("100s").spec(), q).unwrap();
        assert_eq!(long.deadline_s, Some(35.0));
        assert_eq!(long.horizon_s, Some(38.0));
        // A run that ends before its horizon may still recover late,
        // which only the whole run shows: no deadline rule.
        let short = StopRule::new(scenario("30s").spec(), q).unwrap();
        assert_eq!(short.deadline_s, None);
        let none = StopRule::new(scenario("100s").spec(), Question::default()).unwrap();
        assert_eq!((none.horizon_s, none.deadline_s), (None, None));
    }

    #[test]
    fn horizons_round_stable_for_up_to_whole_bins() {
        let s = crate::scenario::Scenario::from_json(
            r#"{"name": "h", "duration": "100s", "bin": "2s",
                "traffic": {"rate": 10},
                "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}},
                "faults": [{"outage": {"start": "10s", "duration": "5s"}}],
                "policies": [{"name": "p", "max_attempts": 1}],
                "report": {"stable_for": "3s"}}"#,
        )
        .unwrap();
        assert_eq!(horizon_s(s.spec(), 20_000_000_000), Some(15.0 + 20.0 + 4.0));
    }
}
