//! How much simulated time the runs of this process have covered, for the
//! progress display of a long run. Every run adds to it every few thousand
//! events; nothing in a run reads it, so it never changes what a run
//! computes.

use std::sync::atomic::{AtomicU64, Ordering};

static SIMULATED_NS: AtomicU64 = AtomicU64::new(0);

/// Adds `ns` of simulated time covered by one run.
#[inline]
pub fn add(ns: u64) {
    SIMULATED_NS.fetch_add(ns, Ordering::Relaxed);
}

/// Simulated time covered so far by every run of the process, ns (a
/// display subtracts the value it started from).
pub fn simulated_ns() -> u64 {
    SIMULATED_NS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds_up() {
        // Other tests' runs add concurrently: only a lower bound holds.
        let before = simulated_ns();
        add(5);
        add(7);
        assert!(simulated_ns() >= before + 12);
    }
}
