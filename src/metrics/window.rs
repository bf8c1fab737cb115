//! The most events in any time window of a fixed length: the worst second
//! of a run, whatever its bins.
//!
//! A bin's rate is a mean over the bin, so a 10 s bin can hide a second at
//! twice its rate. [`PeakWindow`] keeps the times of the events of the last
//! window (a ring, oldest first) and the largest number ever held at once,
//! which is the largest count over every window `(t − len, t]`, `t` any
//! event time: the sliding-window maximum, exact, whatever the bin.

use crate::time::Nanos;
use std::collections::VecDeque;

/// The largest number of events seen within any window of `len` ns.
#[derive(Clone, Debug)]
pub struct PeakWindow {
    len: Nanos,
    times: VecDeque<Nanos>,
    max: u64,
}

impl PeakWindow {
    /// A counter over windows of `len` ns (at least 1).
    pub fn new(len: Nanos) -> PeakWindow {
        PeakWindow {
            len: len.max(1),
            times: VecDeque::new(),
            max: 0,
        }
    }

    /// Records an event at `t` (times never decrease).
    #[inline]
    pub fn hit(&mut self, t: Nanos) {
        while let Some(&first) = self.times.front() {
            if first.saturating_add(self.len) <= t {
                self.times.pop_front();
            } else {
                break;
            }
        }
        self.times.push_back(t);
        self.max = self.max.max(self.times.len() as u64);
    }

    /// The most events within one window so far.
    pub fn max(&self) -> u64 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_SEC;

    #[test]
    fn counts_the_worst_window_not_the_aligned_ones() {
        let mut w = PeakWindow::new(NS_PER_SEC);
        // 3 events late in second 0 and 3 early in second 1: no aligned
        // second holds more than 3, the window from 0.7 s holds 6.
        for ms in [700, 800, 900, 1000, 1100, 1200] {
            w.hit(ms * 1_000_000);
        }
        assert_eq!(w.max(), 6);
        // An event exactly one window after another does not share it.
        let mut w = PeakWindow::new(NS_PER_SEC);
        w.hit(0);
        w.hit(NS_PER_SEC);
        assert_eq!(w.max(), 1);
        w.hit(NS_PER_SEC);
        assert_eq!(w.max(), 2);
    }
}
