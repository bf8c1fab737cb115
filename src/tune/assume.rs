//! The assumptions a recommendation must hold under: what the scenario
//! cannot know about a Cloud Tasks queue.
//!
//! Two things are not published: the system-throttling algorithm (retrysim
//! has an approximation, `dispatcher.throttling`, whose numbers are
//! guesses) and the rule by which Cloud Tasks picks `max_burst_size` from
//! the rate ([`super::api::burst_range`]). A candidate is simulated first
//! as the scenario says (its throttling setting, the burst at the high end
//! of its range): the objective ranks candidates there. A candidate that
//! meets the constraints there and would become the best is then checked
//! under every other assumption, one after the other, stopping at the
//! first that breaks a constraint:
//!
//! - throttling switched the other way (on with the scenario's or the
//!   default settings when the scenario has it off, off when it has it on);
//! - throttling on with the ramp divided by [`RAMP_SPREAD`] (a slow
//!   recovery: the worst case for task age) and the burst at its low end;
//! - throttling on with the ramp multiplied by [`RAMP_SPREAD`] (capped at
//!   1), the burst at its high end;
//! - the scenario's throttling with the burst at its low end (when the
//!   range has two ends).
//!
//! Without a dispatcher there is nothing unknown here: one assumption, the
//! scenario.

use super::api;
use crate::scenario::spec::{DispatcherSpec, ThrottlingSpec};

/// How far either way of the assumed ramp the check goes: a factor 5 (the
/// default 0.05 gives 0.01–0.25 of the configured rate per window).
pub const RAMP_SPREAD: f64 = 5.0;

/// Which throttling an assumption simulates.
#[derive(Clone, Debug, PartialEq)]
enum Throttle {
    AsScenario,
    Off,
    On(ThrottlingSpec),
}

/// Which end of the burst range an assumption takes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum BurstEnd {
    High,
    Low,
}

/// One assumption about the unknowns.
#[derive(Clone, Debug, PartialEq)]
pub struct Assumption {
    throttle: Throttle,
    burst: BurstEnd,
}

/// The assumptions for `dispatcher` (the scenario's), reference first;
/// one (the scenario) without a dispatcher.
pub fn assumptions(dispatcher: Option<&DispatcherSpec>) -> Vec<Assumption> {
    let reference = Assumption {
        throttle: Throttle::AsScenario,
        burst: BurstEnd::High,
    };
    let Some(d) = dispatcher else {
        return vec![reference];
    };
    let on = d.throttling.clone().unwrap_or_default();
    // Rounded to 6 decimals: 0.05 ÷ 5 is 0.01, not 0.010000000000000002.
    let with_ramp = |ramp: f64| ThrottlingSpec {
        ramp: (ramp * 1e6).round() / 1e6,
        ..on.clone()
    };
    let other = if d.throttling.is_some() {
        Throttle::Off
    } else {
        Throttle::On(on.clone())
    };
    vec![
        reference,
        Assumption {
            throttle: other,
            burst: BurstEnd::High,
        },
        Assumption {
            throttle: Throttle::On(with_ramp(on.ramp / RAMP_SPREAD)),
            burst: BurstEnd::Low,
        },
        Assumption {
            throttle: Throttle::On(with_ramp((on.ramp * RAMP_SPREAD).min(1.0))),
            burst: BurstEnd::High,
        },
        Assumption {
            throttle: Throttle::AsScenario,
            burst: BurstEnd::Low,
        },
    ]
}

/// The bursts a queue may have after the update from `baseline` to
/// `setting`, smallest and largest. An update that sets the rate makes
/// the service pick the burst: the range of [`api::burst_range`]. One that
/// keeps the rate keeps the queue's own burst, unless that burst is one
/// the service would not pick (outside that range at the rate): such a
/// burst comes from queue.yaml's `bucket_size`, and any update of a
/// queue.yaml queue resets it from the rate, so both the queue's own and
/// the range are checked.
pub fn bursts(baseline: &DispatcherSpec, setting: &DispatcherSpec) -> (u32, u32) {
    let range = api::burst_range(setting.max_dispatches_per_second);
    if setting.max_dispatches_per_second != baseline.max_dispatches_per_second {
        return range;
    }
    let own = baseline.max_burst_size;
    if (range.0..=range.1).contains(&own) {
        (own, own)
    } else {
        (own.min(range.0), own.max(range.1))
    }
}

impl Assumption {
    /// Whether this assumption adds nothing for a setting whose burst
    /// range is `bursts` (a low end equal to the high end).
    pub fn redundant(&self, bursts: (u32, u32)) -> bool {
        self.burst == BurstEnd::Low && self.throttle == Throttle::AsScenario && bursts.0 == bursts.1
    }

    /// The queue as simulated under this assumption.
    pub fn apply(&self, d: &DispatcherSpec, bursts: (u32, u32)) -> DispatcherSpec {
        let mut d = d.clone();
        d.max_burst_size = match self.burst {
            BurstEnd::High => bursts.1,
            BurstEnd::Low => bursts.0,
        };
        match &self.throttle {
            Throttle::AsScenario => {}
            Throttle::Off => d.throttling = None,
            Throttle::On(t) => d.throttling = Some(t.clone()),
        }
        d
    }

    /// In words, for a queue simulated as `d` (after [`Assumption::apply`]):
    /// `throttling off, burst 100`, `throttling on (ramp 0.01), burst 10`.
    pub fn describe(d: &DispatcherSpec) -> String {
        let throttling = match &d.throttling {
            None => "throttling off".to_string(),
            Some(t) => format!("throttling on (ramp {})", t.ramp),
        };
        format!("{throttling}, burst {}", d.max_burst_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Dur;

    fn queue(rate: f64, throttling: Option<ThrottlingSpec>) -> DispatcherSpec {
        DispatcherSpec {
            max_dispatches_per_second: rate,
            max_burst_size: 100,
            max_concurrent_dispatches: 1000,
            dispatch_deadline: Dur::from_secs(600),
            throttling,
        }
    }

    #[test]
    fn both_throttling_states_and_both_ramp_ends_are_checked() {
        let base = queue(500.0, None);
        let all = assumptions(Some(&base));
        assert_eq!(all.len(), 5);
        let to = queue(50.0, None);
        let b = bursts(&base, &to);
        assert_eq!(b, (10, 100));
        let seen: Vec<String> = all
            .iter()
            .map(|a| Assumption::describe(&a.apply(&to, b)))
            .collect();
        assert_eq!(
            seen,
            [
                "throttling off, burst 100",
                "throttling on (ramp 0.05), burst 100",
                "throttling on (ramp 0.01), burst 10",
                "throttling on (ramp 0.25), burst 100",
                "throttling off, burst 10",
            ]
        );
        // The rate unchanged: the queue keeps its burst, one end only.
        let same = bursts(&base, &base);
        assert_eq!(same, (100, 100));
        assert!(all[4].redundant(same) && !all[2].redundant(same));
        // A burst the service would not pick at the rate (queue.yaml's
        // bucket_size) is reset by any update: both it and the range.
        let mut yaml = queue(30.0, None);
        yaml.max_burst_size = 1;
        assert_eq!(bursts(&yaml, &yaml), (1, 100));
        yaml.max_burst_size = 300;
        assert_eq!(bursts(&yaml, &yaml), (6, 300));
        yaml.max_burst_size = 20;
        assert_eq!(bursts(&yaml, &yaml), (20, 20));
        // A scenario with throttling on is also checked with it off.
        let on = queue(500.0, Some(ThrottlingSpec::default()));
        let all = assumptions(Some(&on));
        assert_eq!(
            Assumption::describe(&all[1].apply(&on, (100, 100))),
            "throttling off, burst 100"
        );
        assert_eq!(assumptions(None).len(), 1);
    }
}
