//! Arrivals replayed from a trace (`traffic.trace` of kind `arrivals`):
//! one request at each time of the file, exactly, in order. The times are
//! the scenario's (read once when it is loaded and shared by every run),
//! so every policy and every replication sees the same arrivals; only the
//! client each one comes from is drawn.

use crate::time::Nanos;
use std::sync::Arc;

/// The arrival times still to come.
#[derive(Clone, Debug)]
pub struct Replay {
    times: Arc<[Nanos]>,
    next: usize,
}

impl Replay {
    /// Replays `times` (in order, from the run's start).
    pub fn new(times: Arc<[Nanos]>) -> Replay {
        Replay { times, next: 0 }
    }

    /// The next arrival time, or `None` after the last one.
    pub fn next_time(&mut self) -> Option<Nanos> {
        let t = self.times.get(self.next).copied()?;
        self.next += 1;
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_time_once_in_order_then_none() {
        let mut r = Replay::new(vec![0, 0, 5, 1_000_000_007].into());
        let got: Vec<Nanos> = std::iter::from_fn(|| r.next_time()).collect();
        assert_eq!(got, vec![0, 0, 5, 1_000_000_007]);
        assert_eq!(r.next_time(), None);
    }
}
