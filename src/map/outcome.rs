//! How one run ended, for the map and the assessment: it recovered after
//! its fault, it stayed degraded, or it cannot be told.
//!
//! "Undetermined" covers the runs whose outcome the run itself cannot
//! settle: no incident at all (nothing to recover from), or a run that ends
//! less than `stable_for` after the fault's end (recovery needs that long a
//! healthy stretch inside the run, so a missing recovery means nothing).
//! Undetermined runs count neither as recovered nor as degraded: shares are
//! taken over the runs that were determined. This is the one place the rule
//! lives.

use crate::metrics::RunSummary;

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

/// The outcome of a run of `run_end_s` seconds whose recovery needs
/// `stable_for_s` seconds of health.
pub fn outcome(s: &RunSummary, run_end_s: f64, stable_for_s: f64) -> Outcome {
    let Some(fault_end) = s.fault_end_s else {
        return Outcome::Undetermined;
    };
    if let Some(after) = s.recovery_after_fault_s() {
        return Outcome::Recovered(after);
    }
    if run_end_s - fault_end < stable_for_s - 1e-9 {
        Outcome::Undetermined
    } else {
        Outcome::Degraded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(fault_end: Option<f64>, recovered_at: Option<f64>) -> RunSummary {
        RunSummary {
            fault_start_s: fault_end.map(|e| e - 10.0),
            fault_end_s: fault_end,
            recovered_at_s: recovered_at,
            ..Default::default()
        }
    }

    #[test]
    fn three_ways() {
        assert_eq!(
            outcome(&run(Some(40.0), Some(45.0)), 150.0, 30.0),
            Outcome::Recovered(5.0)
        );
        assert_eq!(
            outcome(&run(Some(40.0), None), 150.0, 30.0),
            Outcome::Degraded
        );
        // 20 s left after the fault, 30 s of health needed: cannot tell.
        assert_eq!(
            outcome(&run(Some(130.0), None), 150.0, 30.0),
            Outcome::Undetermined
        );
        // Exactly stable_for left: a recovery could have been seen.
        assert_eq!(
            outcome(&run(Some(120.0), None), 150.0, 30.0),
            Outcome::Degraded
        );
        assert_eq!(
            outcome(&run(None, None), 150.0, 30.0),
            Outcome::Undetermined
        );
    }
}
