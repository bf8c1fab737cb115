//! The most events in any one-second window: the worst second of a run,
//! whatever its bins.
//!
//! A bin's rate is a mean over the bin, so a 10 s bin can hide a second at
//! twice its rate. [`PeakWindow`] counts events in 1 ms slots and keeps a
//! running sum of the last 1,000 slots and the largest sum seen: the most
//! events in any window of 1,000 consecutive milliseconds, that is the
//! sliding 1 s maximum to the millisecond (a window's two ends are read at
//! whole milliseconds). Only slots that hold events are kept (at most
//! 1,000, so memory is bounded whatever the rate), which makes an event
//! cost a few instructions at 10,000 events a second and at 20 alike: a
//! quiet stretch between two events is not walked slot by slot.

use std::collections::VecDeque;

use crate::time::Nanos;

/// Slot width, ns (1 ms).
const SLOT: Nanos = 1_000_000;
/// Slots per window (1 s).
const SLOTS: u64 = 1000;

/// The largest number of events seen within any 1 s window.
#[derive(Clone, Debug, Default)]
pub struct PeakWindow {
    /// The window's earlier non-empty slots, oldest first: (slot, events).
    earlier: VecDeque<(u64, u32)>,
    /// The slot (time ÷ `SLOT`) of the latest event.
    current: u64,
    /// Events in the slot `current`.
    in_current: u32,
    /// Events in the window ending at `current` (all of `earlier` and
    /// `in_current`).
    sum: u64,
    max: u64,
}

impl PeakWindow {
    /// An empty counter.
    pub fn new() -> PeakWindow {
        PeakWindow::default()
    }

    /// Records an event at `t` (times never decrease).
    #[inline]
    pub fn hit(&mut self, t: Nanos) {
        let slot = t / SLOT;
        if slot != self.current {
            self.advance(slot);
        }
        self.in_current += 1;
        self.sum += 1;
        self.max = self.max.max(self.sum);
    }

    /// Moves the window's end to `slot`, dropping the slots it leaves.
    #[cold]
    fn advance(&mut self, slot: u64) {
        if self.in_current > 0 {
            self.earlier.push_back((self.current, self.in_current));
            self.in_current = 0;
        }
        while let Some(&(s, n)) = self.earlier.front() {
            if s + SLOTS > slot {
                break;
            }
            self.sum -= u64::from(n);
            self.earlier.pop_front();
        }
        self.current = slot;
    }

    /// The most events within one window so far.
    pub fn max(&self) -> u64 {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn counts_the_worst_window_not_the_aligned_ones() {
        let mut w = PeakWindow::new();
        // 3 events late in second 0 and 3 early in second 1: no aligned
        // second holds more than 3, the window from 0.7 s holds 6.
        for ms in [700, 800, 900, 1000, 1100, 1200] {
            w.hit(ms * MS);
        }
        assert_eq!(w.max(), 6);
        // An event a whole second after another does not share its window.
        let mut w = PeakWindow::new();
        w.hit(0);
        w.hit(1000 * MS);
        assert_eq!(w.max(), 1);
        w.hit(1000 * MS);
        assert_eq!(w.max(), 2);
        // A long gap empties the window.
        w.hit(60_000 * MS);
        assert_eq!(w.max(), 2);
        for _ in 0..5 {
            w.hit(60_500 * MS);
        }
        assert_eq!(w.max(), 6);
    }

    /// The counter agrees with a direct count over every window of 1,000
    /// whole milliseconds, for dense events (up to 3 ms apart), sparse
    /// ones (up to 1.5 s apart: slots dropped between two events) and
    /// bursts between quiet stretches.
    #[test]
    fn agrees_with_a_direct_count() {
        for (gap, burst_every) in [(3 * MS, 0), (1500 * MS, 0), (400 * MS, 7)] {
            let mut times = Vec::new();
            let mut t: Nanos = 0;
            let mut x: u64 = 12345;
            for i in 0..5000u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if burst_every == 0 || i % burst_every == 0 {
                    t += (x >> 33) % gap;
                }
                times.push(t);
            }
            let mut w = PeakWindow::new();
            for &t in &times {
                w.hit(t);
            }
            let direct = times
                .iter()
                .map(|&end| {
                    let last = end / MS;
                    times
                        .iter()
                        .filter(|&&s| s / MS <= last && s / MS + 1000 > last)
                        .count() as u64
                })
                .max()
                .unwrap();
            assert_eq!(w.max(), direct, "gap {gap} ns, bursts every {burst_every}");
        }
    }
}
