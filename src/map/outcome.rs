//! How one run ended, for the map and the assessment: it recovered after
//! its fault, it stayed degraded, or it cannot be told.
//!
//! The run's own three-way `metastable` ([`Recovery`]) decides, with one
//! difference: a run with no incident at all is undetermined here (there
//! was nothing to recover from, so it says nothing about the cliff).
//! Undetermined runs — no incident, a run that ends less than `stable_for`
//! after the fault, or a recovery the run's end cut short — count neither
//! as recovered nor as degraded: shares are taken over the runs that were
//! determined.

//!
//! With a recovery deadline `W` ([`outcome_within`], `--recover-within`),
//! "recovered" means recovered within `W` of the fault's end: a run that
//! recovered later, or not at all while its run lasted past the horizon
//! (`runner::early::horizon_s`: the fault's end + `W` + `stable_for`), is
//! degraded; one that ended before the horizon without recovering is
//! judged as without a deadline.

use crate::metrics::{Recovery, RunSummary};
use crate::runner::early::horizon_s;
use crate::scenario::spec::ScenarioSpec;
use crate::time::{secs, Nanos};

/// How a run ended with respect to its incident.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// Recovered this many seconds after the fault's end.
    Recovered(f64),
    /// Ran long enough after the fault and never recovered.
    Degraded,
    /// No incident, or the run ended too soon after it to tell.
    Undetermined,
}

/// The outcome of a run.
pub fn outcome(s: &RunSummary) -> Outcome {
    if s.fault_end_s.is_none() {
        return Outcome::Undetermined;
    }
    match (s.recovery, s.recovery_after_fault_s()) {
        (Recovery::Recovered, Some(after)) => Outcome::Recovered(after),
        (Recovery::Degraded, _) => Outcome::Degraded,
        _ => Outcome::Undetermined,
    }
}

/// The outcome of a run of `spec` when recovery must come within
/// `within` of the fault's end (`None`: [`outcome`]). A run stopped early
/// (`runner::early`) gets the outcome of its full run.
pub fn outcome_within(s: &RunSummary, spec: &ScenarioSpec, within: Option<Nanos>) -> Outcome {
    let Some(w) = within else {
        return outcome(s);
    };
    let Some(fault_end) = s.fault_end_s else {
        return Outcome::Undetermined;
    };
    match outcome(s) {
        Outcome::Recovered(after) if after <= secs(w) + 1e-9 => Outcome::Recovered(after),
        Outcome::Recovered(_) => Outcome::Degraded,
        o => {
            let decided = horizon_s(spec, w)
                .is_some_and(|h| h <= secs(spec.duration.ns()) + 1e-9 && h >= fault_end);
            if decided {
                Outcome::Degraded
            } else {
                o
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fault_end: Option<f64>, recovered_at: Option<f64>, recovery: Recovery) -> RunSummary {
        RunSummary {
            fault_start_s: fault_end.map(|e| e - 10.0),
            fault_end_s: fault_end,
            recovered_at_s: recovered_at,
            recovery,
            ..Default::default()
        }
    }

    #[test]
    fn three_ways() {
        use Recovery::*;
        assert_eq!(
            outcome(&run(Some(40.0), Some(45.0), Recovered)),
            Outcome::Recovered(5.0)
        );
        assert_eq!(outcome(&run(Some(40.0), None, Degraded)), Outcome::Degraded);
        assert_eq!(
            outcome(&run(Some(130.0), None, Undetermined)),
            Outcome::Undetermined
        );
        // No incident: the run's own label is "recovered", but it says
        // nothing about the cliff.
        assert_eq!(outcome(&run(None, None, Recovered)), Outcome::Undetermined);
    }
}
