//! An operator action as written, its checks and its wording. What an
//! action does is `crate::model::faults` (the timeline) and the model's
//! run loop.
//!
//! A new action kind is a variant here (with its `check` and `describe`
//! arms), its effect in `crate::model::faults::actions_at` (and the run
//! loop when it acts at an instant), and a line in
//! `docs/scenario-reference.md`.

use crate::check::Problems;
use crate::decimal::num;
use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// An operator action taken mid-incident.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionSpec {
    /// Every client stops retrying (for `duration`, default: until the end).
    DisableRetries {
        /// When the operator acts.
        at: Dur,
        /// How long retries stay off; absent = until the end of the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
        /// The tier it acts on, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// The backend rejects `fraction` of arrivals at no cost (for
    /// `duration`, default: until the end).
    ShedLoad {
        /// When the operator acts.
        at: Dur,
        /// The share of arrivals rejected, in [0, 1].
        fraction: f64,
        /// How long the shedding lasts; absent = until the end of the run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration: Option<Dur>,
        /// The tier it acts on, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// Waiting tasks of the dispatcher queue are forced to run (RunTask):
    /// every one, the ones named by creation number (`tasks`), or the
    /// oldest `fraction` of them, one RunTask call each, paced at the
    /// project's RunTask quota (`per_minute`) in order of their next
    /// attempt.
    ForceRun {
        /// When the operator acts.
        at: Dur,
        /// Creation numbers (0 = the run's first task) of the tasks to run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tasks: Option<Vec<u64>>,
        /// Share of the waiting tasks to run, oldest first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fraction: Option<f64>,
        /// RunTask calls a minute at most (the project's quota); absent =
        /// the documented default,
        /// [`crate::scenario::cloud_tasks::RUN_TASK_PER_MINUTE`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        per_minute: Option<f64>,
    },
}

impl ActionSpec {
    /// The tier the action acts on, by name (`None`: the top backend;
    /// `force_run` always acts on the dispatcher in front of it).
    pub fn tier(&self) -> Option<&str> {
        match self {
            ActionSpec::DisableRetries { tier, .. } | ActionSpec::ShedLoad { tier, .. } => {
                tier.as_deref()
            }
            ActionSpec::ForceRun { .. } => None,
        }
    }

    /// Forgets the `tier` when it is `name` (the top backend's).
    pub fn clear_tier_if(&mut self, name: &str) {
        if let ActionSpec::DisableRetries { tier, .. } | ActionSpec::ShedLoad { tier, .. } = self {
            if tier.as_deref() == Some(name) {
                *tier = None;
            }
        }
    }

    /// When the action is taken.
    pub fn at(&self) -> Dur {
        match self {
            ActionSpec::DisableRetries { at, .. }
            | ActionSpec::ShedLoad { at, .. }
            | ActionSpec::ForceRun { at, .. } => *at,
        }
    }

    /// Checks the values serde cannot; `p` is the action's path
    /// (`actions[0]`); `has_dispatcher` whether the scenario has one and
    /// `run_end` the scenario's duration.
    pub fn check(&self, p: &str, has_dispatcher: bool, run_end: Dur, c: &mut Problems) {
        if run_end.ns() > 0 && self.at() >= run_end {
            let kind = match self {
                ActionSpec::DisableRetries { .. } => "disable_retries",
                ActionSpec::ShedLoad { .. } => "shed_load",
                ActionSpec::ForceRun { .. } => "force_run",
            };
            c.err_with(
                format!("{p}.{kind}.at"),
                ["duration"],
                format!(
                    "{} is at or after the end of the run ({run_end}); the action would never be taken",
                    self.at()
                ),
            );
        }
        match self {
            ActionSpec::DisableRetries { duration, .. } => {
                if let Some(d) = duration {
                    c.positive_dur(&format!("{p}.disable_retries.duration"), *d);
                }
            }
            ActionSpec::ShedLoad {
                fraction, duration, ..
            } => {
                let p = format!("{p}.shed_load");
                c.fraction(&format!("{p}.fraction"), *fraction, "");
                if let Some(d) = duration {
                    c.positive_dur(&format!("{p}.duration"), *d);
                }
            }
            ActionSpec::ForceRun {
                tasks,
                fraction,
                per_minute,
                ..
            } => {
                let p = format!("{p}.force_run");
                if let Some(q) = per_minute {
                    if !(q.is_finite() && *q > 0.0) {
                        c.err(
                            format!("{p}.per_minute"),
                            format!(
                                "{} is not a quota: RunTask calls a minute, greater than 0 \
                                 (Cloud Tasks' default is {})",
                                crate::decimal::Given(*q),
                                num(crate::scenario::cloud_tasks::RUN_TASK_PER_MINUTE)
                            ),
                        );
                    }
                }
                if !has_dispatcher {
                    c.err_with(
                        p.clone(),
                        ["dispatcher"],
                        "needs a `dispatcher` block (it runs the dispatcher's waiting tasks)",
                    );
                }
                if tasks.is_some() && fraction.is_some() {
                    c.err(
                        p.clone(),
                        "give `tasks` or `fraction`, not both (neither = every waiting task)",
                    );
                }
                if let Some(f) = fraction {
                    c.fraction(
                        &format!("{p}.fraction"),
                        *f,
                        ", e.g. 0.5 for the older half",
                    );
                }
            }
        }
    }

    /// The RunTask calls a minute a `force_run` may make (its
    /// `per_minute`, or the documented quota); `None` for other actions.
    pub fn run_task_per_minute(&self) -> Option<f64> {
        match self {
            ActionSpec::ForceRun { per_minute, .. } => {
                Some(per_minute.unwrap_or(crate::scenario::cloud_tasks::RUN_TASK_PER_MINUTE))
            }
            _ => None,
        }
    }

    /// The action in a line: `at 6m: retries disabled until the end`,
    /// naming the tier it acts on when it names one (`at 6m on tier db:
    /// …`).
    pub fn describe(&self) -> String {
        let on = self
            .tier()
            .map(|t| format!(" on tier {t}"))
            .unwrap_or_default();
        let until = |d: &Option<Dur>| {
            d.map(|d| format!(" for {d}"))
                .unwrap_or_else(|| " until the end".into())
        };
        let quota = self
            .run_task_per_minute()
            .map(|q| format!(" (RunTask, {} a minute at most)", num(q)))
            .unwrap_or_default();
        match self {
            ActionSpec::DisableRetries { at, duration, .. } => {
                format!("at {at}{on}: retries disabled{}", until(duration))
            }
            ActionSpec::ShedLoad {
                at,
                fraction,
                duration,
                ..
            } => format!(
                "at {at}{on}: {}% of arrivals shed{}",
                num(100.0 * fraction),
                until(duration)
            ),
            ActionSpec::ForceRun {
                at,
                tasks: Some(list),
                ..
            } => {
                let names: Vec<String> = list.iter().map(|t| t.to_string()).collect();
                format!("at {at}: tasks {} forced to run{quota}", names.join(", "))
            }
            ActionSpec::ForceRun {
                at,
                fraction: Some(f),
                ..
            } => format!(
                "at {at}: the oldest {}% of the waiting tasks forced to run{quota}",
                num(100.0 * f)
            ),
            ActionSpec::ForceRun { at, .. } => {
                format!("at {at}: every waiting task forced to run{quota}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An action on a tier names it; one on the top backend names none.
    #[test]
    fn an_action_names_the_tier_it_acts_on() {
        let off = |tier: Option<&str>| ActionSpec::DisableRetries {
            at: Dur::from_secs(360),
            duration: None,
            tier: tier.map(str::to_string),
        };
        assert_eq!(
            off(None).describe(),
            "at 6m: retries disabled until the end"
        );
        assert_eq!(
            off(Some("db")).describe(),
            "at 6m on tier db: retries disabled until the end"
        );
        let shed = ActionSpec::ShedLoad {
            at: Dur::from_secs(360),
            fraction: 0.5,
            duration: Some(Dur::from_secs(60)),
            tier: Some("db".into()),
        };
        assert_eq!(
            shed.describe(),
            "at 6m on tier db: 50% of arrivals shed for 1m"
        );
    }
}
