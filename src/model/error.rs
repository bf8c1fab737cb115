//! Why a run could not finish.

/// Why a run could not finish.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunError {
    /// Events kept happening at one instant without time passing: the run
    /// would never end.
    #[error(
        "simulated time stopped advancing at t = {at_s} s (policy {policy:?}, replication \
         {replication}): {events} events happened at that instant and the run would never end; {why}"
    )]
    Stalled {
        /// The policy simulated.
        policy: String,
        /// The replication.
        replication: u32,
        /// When time stopped, in seconds.
        at_s: f64,
        /// Events handled at that instant before the run gave up.
        events: u64,
        /// Which settings allow it, and how to fix them.
        why: String,
    },
    /// A stop was requested (Ctrl-C) before the run finished.
    #[error("interrupted")]
    Interrupted,
}
