//! Faults and operator actions as a timeline of state changes.
//!
//! The run schedules one event per window edge ([`Timeline`]); at each
//! edge the state is recomputed from every window active at that instant,
//! so overlapping faults combine without special cases (slowdowns
//! multiply, the smallest capacity wins, error bursts apply one after
//! another).

use crate::scenario::spec::{ActionSpec, FaultSpec};
use crate::status::Status;
use crate::time::Nanos;

/// The faults and actions of a run as a sequence of edges: the instants at
/// which something starts or ends.
#[derive(Clone, Debug)]
pub struct Timeline {
    faults: Vec<FaultSpec>,
    actions: Vec<ActionSpec>,
    edges: Vec<Nanos>,
    next: usize,
    base_workers: u32,
}

/// What holds from an edge on.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The faults' effect on the backend.
    pub fault: FaultState,
    /// What the operator has switched on.
    pub actions: ActionState,
    /// An outage with `flush` starts now: the backend crashes with this
    /// status.
    pub flush: Option<Status>,
    /// The `force_run` actions taken now, in file order, each with the
    /// RunTask calls a minute it may make.
    pub force_run: Vec<(ForceRun, f64)>,
}

impl Timeline {
    /// The timeline of those of `faults` and `actions` that target `tier`
    /// (`None`: the top backend), on a backend of `base_workers` workers.
    pub fn new(
        faults: &[FaultSpec],
        actions: &[ActionSpec],
        base_workers: u32,
        tier: Option<&str>,
    ) -> Self {
        let faults: Vec<FaultSpec> = faults
            .iter()
            .filter(|f| f.tier() == tier)
            .cloned()
            .collect();
        let actions: Vec<ActionSpec> = actions
            .iter()
            .filter(|a| a.tier() == tier)
            .cloned()
            .collect();
        Timeline {
            edges: edges(&faults, &actions),
            faults,
            actions,
            next: 0,
            base_workers,
        }
    }

    /// The windows `[start, end)` in which the tier's backend is crashed,
    /// sorted by start: what its clients' connections need to know (a
    /// reconnection succeeds only outside them).
    pub fn crash_windows(&self) -> Vec<(Nanos, Nanos)> {
        let mut w: Vec<(Nanos, Nanos)> = self
            .faults
            .iter()
            .filter(|f| matches!(f, FaultSpec::Crash { .. }))
            .map(FaultSpec::window)
            .collect();
        w.sort_unstable();
        w
    }

    /// The first edge, if any.
    pub fn first(&self) -> Option<Nanos> {
        self.edges.first().copied()
    }

    /// Whether `other` holds the same faults and actions on the same
    /// backend, with the same edges (a [`Timeline::truncated`] one has
    /// fewer): a run may keep this timeline, where it has got to, in
    /// place of `other`.
    pub fn same_plan(&self, other: &Timeline) -> bool {
        (&self.faults, &self.actions, self.base_workers, &self.edges)
            == (
                &other.faults,
                &other.actions,
                other.base_workers,
                &other.edges,
            )
    }

    /// Whether a run paused before `until` with this timeline may go on
    /// under `other` instead and be exactly `other`'s run: no edge of
    /// either comes before `until`, the first edges (whose wake-up the
    /// run has queued) coincide, and the crash windows (which the
    /// clients' connections copied at the start) are the same.
    pub fn can_become(&self, other: &Timeline, until: Nanos) -> bool {
        self.next == 0
            && self.first() == other.first()
            && self.first().is_none_or(|f| f >= until)
            && self.crash_windows() == other.crash_windows()
    }

    /// This timeline with its edges from `from` on left out: a run under
    /// it makes the changes of the edges before `from` and then none, so
    /// it can stand for every timeline that makes those changes and parts
    /// from it later (see [`Timeline::can_continue_as`]).
    pub fn truncated(&self, from: Nanos) -> Timeline {
        Timeline {
            edges: self.edges.iter().copied().filter(|&e| e < from).collect(),
            ..self.clone()
        }
    }

    /// The first edge at or after `at`, if any.
    pub fn next_edge(&self, at: Nanos) -> Option<Nanos> {
        self.edges.iter().copied().find(|&e| e >= at)
    }

    /// Whether a run that has reached every edge of this timeline, has no
    /// wake-up for another queued, and paused before `at`, may go on under
    /// `other` and be exactly `other`'s run, once `other`'s wake-up at
    /// `at` is queued: this timeline has no edge from `at` on, `other` has
    /// the same edges before `at` and makes the same change at each, its
    /// next edge is `at`, and the crash windows (which the clients'
    /// connections copied at the start) are the same.
    pub fn can_continue_as(&self, other: &Timeline, at: Nanos) -> bool {
        let before =
            |t: &Timeline| -> Vec<Nanos> { t.edges.iter().copied().filter(|&e| e < at).collect() };
        let mine = before(self);
        if mine.len() != self.edges.len()
            || mine != before(other)
            || other.next_edge(at) != Some(at)
            || self.crash_windows() != other.crash_windows()
        {
            return false;
        }
        let (mut a, mut b) = (self.clone(), other.clone());
        (a.next, b.next) = (0, 0);
        mine.iter().all(|&e| a.reach(e).1 == b.reach(e).1)
    }

    /// The run reached an edge at `now`: returns the next edge to wake up
    /// at (if any) and what holds from now on.
    pub fn reach(&mut self, now: Nanos) -> (Option<Nanos>, Change) {
        while self.next < self.edges.len() && self.edges[self.next] <= now {
            self.next += 1;
        }
        let flush = self.faults.iter().find_map(|f| match *f {
            FaultSpec::Outage {
                start,
                status,
                flush: true,
                ..
            } if start.ns() == now => Some(status),
            // A crash fails what the backend holds, as a flush would.
            FaultSpec::Crash { start, .. } if start.ns() == now => Some(Status::Unavailable),
            _ => None,
        });
        let force_run = self
            .actions
            .iter()
            .filter_map(|a| match a {
                ActionSpec::ForceRun {
                    at,
                    tasks,
                    fraction,
                    ..
                } if at.ns() == now => Some((
                    match (tasks, fraction) {
                        (Some(list), _) => ForceRun::Tasks(list.clone()),
                        (None, Some(f)) => ForceRun::Oldest(*f),
                        (None, None) => ForceRun::All,
                    },
                    a.run_task_per_minute()?,
                )),
                _ => None,
            })
            .collect();
        let change = Change {
            fault: state_at(&self.faults, self.base_workers, now),
            actions: actions_at(&self.actions, now),
            flush,
            force_run,
        };
        (self.edges.get(self.next).copied(), change)
    }
}

/// Which waiting tasks an operator's RunTask action dispatches.
#[derive(Clone, Debug, PartialEq)]
pub enum ForceRun {
    /// Every waiting task.
    All,
    /// The tasks with these creation numbers (0 = the run's first task),
    /// those of them that are waiting.
    Tasks(Vec<u64>),
    /// The oldest `⌈fraction × n⌉` of the `n` waiting tasks.
    Oldest(f64),
}

impl ForceRun {
    /// The slots to force, in creation order, out of `waiting`: the
    /// waiting tasks as (creation number, slot), in creation order.
    pub fn select(&self, waiting: &[(u64, u32)]) -> Vec<u32> {
        match self {
            ForceRun::All => waiting.iter().map(|w| w.1).collect(),
            ForceRun::Tasks(ids) => {
                let mut ids = ids.clone();
                ids.sort_unstable();
                waiting
                    .iter()
                    .filter(|w| ids.binary_search(&w.0).is_ok())
                    .map(|w| w.1)
                    .collect()
            }
            ForceRun::Oldest(f) => {
                let n = ((f * waiting.len() as f64) - 1e-9).ceil().max(0.0) as usize;
                waiting.iter().take(n).map(|w| w.1).collect()
            }
        }
    }
}

/// What the faults do to the backend right now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FaultState {
    /// Attempts reaching a worker fail with this status.
    pub outage: Option<Status>,
    /// The outage that sets `outage` sends response headers before each
    /// failure (`headers_first`).
    pub headers_first: bool,
    /// Attempts arriving now are never answered.
    pub blackhole: bool,
    /// The backend is down (a `crash`): connections are refused, so an
    /// arriving attempt fails at once with `unavailable` and never counts
    /// as offered load.
    pub crashed: bool,
    /// Service-time multiplier.
    pub slowdown: f64,
    /// Workers available (the backend's own count when no capacity fault).
    pub workers: u32,
    /// Error bursts: (share of served attempts, status), in file order.
    pub errors: Vec<(f64, Status)>,
}

impl FaultState {
    /// No fault: `workers` workers at full speed.
    pub fn healthy(workers: u32) -> FaultState {
        FaultState {
            slowdown: 1.0,
            workers,
            ..Default::default()
        }
    }
}

/// Whether a window `[start, end)` holds `t`.
fn active(window: (Nanos, Nanos), t: Nanos) -> bool {
    window.0 <= t && t < window.1
}

/// The fault state at time `t` (edges belong to the window they open).
pub fn state_at(faults: &[FaultSpec], base_workers: u32, t: Nanos) -> FaultState {
    let mut s = FaultState::healthy(base_workers);
    for f in faults.iter().filter(|f| active(f.window(), t)) {
        match *f {
            FaultSpec::Outage {
                status,
                headers_first,
                ..
            } => {
                if s.outage.is_none() {
                    s.outage = Some(status);
                    s.headers_first = headers_first;
                }
            }
            FaultSpec::Blackhole { .. } => s.blackhole = true,
            FaultSpec::Crash { .. } => s.crashed = true,
            FaultSpec::Slowdown { factor, .. } => s.slowdown *= factor,
            FaultSpec::Capacity { workers, .. } => s.workers = s.workers.min(workers),
            FaultSpec::Errors { rate, status, .. } => s.errors.push((rate, status)),
        }
    }
    s
}

/// What the operator's actions have switched on right now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActionState {
    /// Clients do not retry.
    pub retries_disabled: bool,
    /// Share of arrivals the backend rejects at no cost.
    pub shed: f64,
}

/// The action state at time `t`.
pub fn actions_at(actions: &[ActionSpec], t: Nanos) -> ActionState {
    let mut s = ActionState::default();
    for a in actions {
        match *a {
            ActionSpec::DisableRetries { at, duration, .. } => {
                if active(window(at.ns(), duration.map(|d| d.ns())), t) {
                    s.retries_disabled = true;
                }
            }
            ActionSpec::ShedLoad {
                at,
                fraction,
                duration,
                ..
            } => {
                if active(window(at.ns(), duration.map(|d| d.ns())), t) {
                    s.shed = s.shed.max(fraction);
                }
            }
            ActionSpec::ForceRun { .. } => {}
        }
    }
    s
}

fn window(at: Nanos, duration: Option<Nanos>) -> (Nanos, Nanos) {
    (at, duration.map_or(Nanos::MAX, |d| at.saturating_add(d)))
}

/// Every instant at which the fault or action state may change, sorted and
/// without repeats.
pub fn edges(faults: &[FaultSpec], actions: &[ActionSpec]) -> Vec<Nanos> {
    let mut e: Vec<Nanos> = faults
        .iter()
        .flat_map(|f| {
            let (s, end) = f.window();
            [s, end]
        })
        .collect();
    for a in actions {
        let (s, end) = match *a {
            ActionSpec::DisableRetries { at, duration, .. }
            | ActionSpec::ShedLoad { at, duration, .. } => {
                window(at.ns(), duration.map(|d| d.ns()))
            }
            ActionSpec::ForceRun { at, .. } => (at.ns(), Nanos::MAX),
        };
        e.push(s);
        e.push(end);
    }
    e.retain(|&t| t != Nanos::MAX);
    e.sort_unstable();
    e.dedup();
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn force_run_picks_tasks_by_creation_number() {
        // (creation number, slot), in creation order.
        let waiting = [(2, 7), (3, 1), (5, 4), (9, 0)];
        assert_eq!(ForceRun::All.select(&waiting), vec![7, 1, 4, 0]);
        assert_eq!(ForceRun::Tasks(vec![9, 2, 4]).select(&waiting), vec![7, 0]);
        assert_eq!(ForceRun::Oldest(0.5).select(&waiting), vec![7, 1]);
        assert_eq!(
            ForceRun::Oldest(0.3).select(&waiting),
            vec![7, 1],
            "rounded up"
        );
        assert_eq!(ForceRun::Oldest(0.0).select(&waiting), Vec::<u32>::new());
        assert_eq!(ForceRun::Oldest(1.0).select(&waiting).len(), 4);
    }
    use crate::time::Dur;

    fn s(x: u64) -> Dur {
        Dur::from_secs(x)
    }

    #[test]
    fn overlapping_faults_combine() {
        let faults = vec![
            FaultSpec::Slowdown {
                tier: None,
                start: s(0),
                duration: s(10),
                factor: 2.0,
            },
            FaultSpec::Slowdown {
                tier: None,
                start: s(5),
                duration: s(10),
                factor: 3.0,
            },
            FaultSpec::Capacity {
                tier: None,
                start: s(5),
                duration: s(1),
                workers: 4,
            },
            FaultSpec::Capacity {
                tier: None,
                start: s(5),
                duration: s(2),
                workers: 7,
            },
            FaultSpec::Outage {
                tier: None,
                start: s(8),
                duration: s(1),
                status: Status::Internal,
                flush: false,
                headers_first: false,
            },
        ];
        let at = |t: u64| state_at(&faults, 10, t * 1_000_000_000);
        assert_eq!(at(1).slowdown, 2.0);
        assert_eq!(at(6).slowdown, 6.0);
        assert_eq!(at(5).workers, 4);
        assert_eq!(at(6).workers, 7);
        assert_eq!(at(7).workers, 10, "window end is exclusive");
        assert_eq!(at(8).outage, Some(Status::Internal));
        assert_eq!(
            edges(&faults, &[]),
            [0, 5, 6, 7, 8, 9, 10, 15].map(|s| s * 1_000_000_000)
        );
    }

    #[test]
    fn actions_switch_on_and_off() {
        let actions = vec![
            ActionSpec::DisableRetries {
                tier: None,
                at: s(10),
                duration: Some(s(5)),
            },
            ActionSpec::ShedLoad {
                tier: None,
                at: s(12),
                fraction: 0.5,
                duration: None,
            },
        ];
        let at = |t: u64| actions_at(&actions, t * 1_000_000_000);
        assert!(!at(9).retries_disabled);
        assert!(at(10).retries_disabled);
        assert!(!at(15).retries_disabled);
        assert_eq!(at(100).shed, 0.5);
    }
}
