//! A scheduled fault as written, its checks and its wording. What a fault
//! does to the backend is `crate::model::faults`.
//!
//! A new fault kind is a variant here (with its `check`, `label`, `effect`
//! and `incident_name` arms), its effect in `crate::model::faults::state_at`,
//! and a line in `docs/scenario-reference.md`.

use crate::check::{finite_pos, must_be, Problems};
use crate::decimal::{count, num};
use crate::status::Status;
use crate::time::{secs, Dur};
use serde::{Deserialize, Serialize};

/// A scheduled fault. Each variant has its window (`start`, `duration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultSpec {
    /// Every attempt that reaches the backend fails at once with `status`.
    Outage {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The status failed attempts answer with (default `unavailable`).
        #[serde(default = "default_fault_status")]
        status: Status,
        /// Whether the waiting room is emptied (its attempts failed) at the
        /// start, as a crash would.
        #[serde(default)]
        flush: bool,
        /// Whether the backend sends response headers before each failure
        /// (default false): a policy with `commit_on_headers` (the `grpc*`
        /// presets) treats such a failure as committed and neither retries
        /// nor hedges it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        headers_first: bool,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// Attempts are swallowed: never served, never answered.
    Blackhole {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// Service times are multiplied by `factor`.
    Slowdown {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The service-time multiplier (greater than 0).
        factor: f64,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// Only `workers` workers serve (the others finish what they hold and
    /// rest).
    Capacity {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The workers left.
        workers: u32,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// The backend process is down: it refuses connections. Nothing
    /// reaches it (each attempt is refused at once with `unavailable`),
    /// the attempts it holds fail at the start and its waiting room is
    /// emptied. Unlike an `outage`, which answers, a crash also drops the
    /// clients' connections: a policy with `reconnect` reconnects on its
    /// schedule (see `crate::policy::reconnect`).
    Crash {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
    /// A share `rate` of served attempts fails with `status`.
    Errors {
        /// When the fault begins.
        start: Dur,
        /// How long it lasts.
        duration: Dur,
        /// The share of served attempts that fail, in [0, 1].
        rate: f64,
        /// The status they fail with (default `internal`).
        #[serde(default = "default_error_status")]
        status: Status,
        /// The tier it strikes, by name; absent = the top backend.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier: Option<String>,
    },
}

fn default_fault_status() -> Status {
    Status::Unavailable
}
fn default_error_status() -> Status {
    Status::Internal
}

impl FaultSpec {
    /// The tier the fault strikes, by name (`None`: the top backend).
    pub fn tier(&self) -> Option<&str> {
        match self {
            FaultSpec::Outage { tier, .. }
            | FaultSpec::Blackhole { tier, .. }
            | FaultSpec::Slowdown { tier, .. }
            | FaultSpec::Capacity { tier, .. }
            | FaultSpec::Crash { tier, .. }
            | FaultSpec::Errors { tier, .. } => tier.as_deref(),
        }
    }

    /// Forgets the `tier` when it is `name` (the top backend's).
    pub fn clear_tier_if(&mut self, name: &str) {
        let (FaultSpec::Outage { tier, .. }
        | FaultSpec::Blackhole { tier, .. }
        | FaultSpec::Slowdown { tier, .. }
        | FaultSpec::Capacity { tier, .. }
        | FaultSpec::Crash { tier, .. }
        | FaultSpec::Errors { tier, .. }) = self;
        if tier.as_deref() == Some(name) {
            *tier = None;
        }
    }

    /// Whether this fault is an incident of a run ending at `run_end`: it
    /// starts within the run and does not cover all of it (a fault over
    /// the whole run is a background condition, nothing to recover from).
    pub fn is_incident(&self, run_end: u64) -> bool {
        let (s, e) = self.window();
        !(s == 0 && e >= run_end) && s < run_end
    }

    /// The fault's window as (start, end) in nanoseconds.
    pub fn window(&self) -> (u64, u64) {
        let (s, d) = match self {
            FaultSpec::Outage {
                start, duration, ..
            }
            | FaultSpec::Blackhole {
                start, duration, ..
            }
            | FaultSpec::Slowdown {
                start, duration, ..
            }
            | FaultSpec::Capacity {
                start, duration, ..
            }
            | FaultSpec::Crash {
                start, duration, ..
            }
            | FaultSpec::Errors {
                start, duration, ..
            } => (start.ns(), duration.ns()),
        };
        (s, s.saturating_add(d))
    }

    /// How long the fault lasts, as written.
    pub fn duration(&self) -> Dur {
        match self {
            FaultSpec::Outage { duration, .. }
            | FaultSpec::Blackhole { duration, .. }
            | FaultSpec::Slowdown { duration, .. }
            | FaultSpec::Capacity { duration, .. }
            | FaultSpec::Crash { duration, .. }
            | FaultSpec::Errors { duration, .. } => *duration,
        }
    }

    /// The kind's name as written in files (`"outage"`).
    pub fn kind(&self) -> &'static str {
        match self {
            FaultSpec::Outage { .. } => "outage",
            FaultSpec::Blackhole { .. } => "blackhole",
            FaultSpec::Slowdown { .. } => "slowdown",
            FaultSpec::Capacity { .. } => "capacity",
            FaultSpec::Crash { .. } => "crash",
            FaultSpec::Errors { .. } => "errors",
        }
    }

    /// Checks the values serde cannot; `p` is the fault's path
    /// (`faults[0].outage`) and `run_end` the scenario's duration.
    pub fn check(&self, p: &str, run_end: Dur, c: &mut Problems) {
        let (start, _) = self.window();
        c.positive_dur(&format!("{p}.duration"), self.duration());
        if run_end.ns() > 0 && start >= run_end.ns() {
            c.err_with(
                format!("{p}.start"),
                ["duration"],
                format!(
                    "{} is at or after the end of the run ({run_end}); the fault would never happen",
                    Dur(start)
                ),
            );
        }
        match self {
            FaultSpec::Outage { status, .. } if *status == Status::Ok => {
                c.err(format!("{p}.status"), "an outage cannot answer `ok`")
            }
            FaultSpec::Slowdown { factor, .. } if !finite_pos(*factor) => c.err(
                format!("{p}.factor"),
                must_be(*factor, "a number greater than 0"),
            ),
            FaultSpec::Errors { rate, status, .. } => {
                c.fraction(&format!("{p}.rate"), *rate, ", e.g. 0.01");
                if *status == Status::Ok {
                    c.err(format!("{p}.status"), "injected errors cannot be `ok`");
                }
            }
            _ => {}
        }
    }

    /// A short name for plot legends: `outage`, `slowdown ×3`.
    pub fn label(&self) -> String {
        match self {
            FaultSpec::Slowdown { factor, .. } => format!("slowdown ×{}", num(*factor)),
            FaultSpec::Capacity { workers, .. } => format!("capacity: {workers} workers"),
            FaultSpec::Errors { rate, .. } => format!("errors {}%", num(100.0 * rate)),
            other => other.kind().to_string(),
        }
    }

    /// What the fault does, in a phrase: `attempts fail with unavailable`.
    pub fn effect(&self) -> String {
        match self {
            FaultSpec::Outage {
                status,
                flush,
                headers_first,
                ..
            } => format!(
                "attempts fail with {}{}{}",
                status.name(),
                if *headers_first {
                    " after response headers"
                } else {
                    ""
                },
                if *flush {
                    "; queue flushed at the start"
                } else {
                    ""
                }
            ),
            FaultSpec::Blackhole { .. } => "attempts are never answered".into(),
            FaultSpec::Crash { .. } => {
                "connections refused; attempts in flight fail with unavailable".into()
            }
            FaultSpec::Slowdown { factor, .. } => format!("service time ×{}", num(*factor)),
            FaultSpec::Capacity { workers: 0, .. } => "no workers".into(),
            FaultSpec::Capacity { workers, .. } => {
                format!("only {}", count(f64::from(*workers), "worker", "workers"))
            }
            FaultSpec::Errors { rate, status, .. } => {
                format!(
                    "{}% of served attempts fail with {}",
                    num(100.0 * rate),
                    status.name()
                )
            }
        }
    }

    /// The fault in a line: `outage 300–390 s: attempts fail with
    /// unavailable`, naming the tier it strikes when it names one
    /// (`blackhole 30–50 s on tier database: …`; a loaded scenario names
    /// none for the top backend, see
    /// [`super::ScenarioSpec::name_top_tier_none`]).
    pub fn describe(&self) -> String {
        let (s, e) = self.window();
        let on = self
            .tier()
            .map(|t| format!(" on tier {t}"))
            .unwrap_or_default();
        format!(
            "{} {}–{} s{on}: {}",
            self.kind(),
            num(secs(s)),
            num(secs(e)),
            self.effect()
        )
    }

    /// The fault as the subject of a sentence: `the outage`.
    pub fn incident_name(&self) -> &'static str {
        match self {
            FaultSpec::Outage { .. } => "the outage",
            FaultSpec::Blackhole { .. } => "the blackhole",
            FaultSpec::Slowdown { .. } => "the slowdown",
            FaultSpec::Capacity { .. } => "the capacity loss",
            FaultSpec::Crash { .. } => "the crash",
            FaultSpec::Errors { .. } => "the error burst",
        }
    }
}

/// The incident window of `faults`: from the first start to the last end
/// (cut at `run_end`) of those that are incidents
/// ([`FaultSpec::is_incident`]; a fault over the whole run, such as a
/// steady 1 % error rate, is a background condition, not an incident).
pub fn incident(faults: &[FaultSpec], run_end: u64) -> Option<(u64, u64)> {
    faults
        .iter()
        .filter(|f| f.is_incident(run_end))
        .map(|f| f.window())
        .fold(None, |acc, (s, e)| match acc {
            None => Some((s, e.min(run_end))),
            Some((a, b)) => Some((a.min(s), b.max(e.min(run_end)))),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Dur {
        Dur::from_secs(x)
    }

    /// A fault on a tier names it; one on the top backend names none.
    #[test]
    fn a_fault_names_the_tier_it_strikes() {
        let on = |tier: Option<&str>| FaultSpec::Outage {
            start: s(120),
            duration: s(60),
            status: Status::Unavailable,
            flush: false,
            headers_first: false,
            tier: tier.map(str::to_string),
        };
        assert_eq!(
            on(None).describe(),
            "outage 120–180 s: attempts fail with unavailable"
        );
        assert_eq!(
            on(Some("db")).describe(),
            "outage 120–180 s on tier db: attempts fail with unavailable"
        );
    }

    #[test]
    fn background_faults_are_not_incidents() {
        let end = 1800 * 1_000_000_000;
        let faults = vec![
            FaultSpec::Errors {
                tier: None,
                start: s(0),
                duration: s(1800),
                rate: 0.01,
                status: Status::Internal,
            },
            FaultSpec::Outage {
                tier: None,
                start: s(300),
                duration: s(90),
                status: Status::Unavailable,
                flush: false,
                headers_first: false,
            },
        ];
        assert_eq!(
            incident(&faults, end),
            Some((300_000_000_000, 390_000_000_000))
        );
        assert_eq!(incident(&faults[..1], end), None);
    }
}
