//! The most events in any one-second window: the worst second of a run,
//! whatever its bins.
//!
//! A bin's rate is a mean over the bin, so a 10 s bin can hide a second at
//! twice its rate. [`PeakWindow`] counts events in 1 ms slots on a ring of
//! 1,000 slots with a running sum, and keeps the largest sum: the most
//! events in any window of 1,000 consecutive milliseconds, that is the
//! sliding 1 s maximum to the millisecond (a window's two ends are read at
//! whole milliseconds). Fixed memory (4 KB) and a few instructions per
//! event, whatever the rate.

use crate::time::Nanos;

/// Slot width, ns (1 ms).
const SLOT: Nanos = 1_000_000;
/// Slots per window (1 s).
const SLOTS: usize = 1000;

/// The largest number of events seen within any 1 s window.
#[derive(Clone, Debug)]
pub struct PeakWindow {
    counts: Box<[u32; SLOTS]>,
    /// The slot (time ÷ `SLOT`) of the latest event.
    current: u64,
    sum: u64,
    max: u64,
}

impl Default for PeakWindow {
    fn default() -> Self {
        PeakWindow::new()
    }
}

impl PeakWindow {
    /// An empty counter.
    pub fn new() -> PeakWindow {
        PeakWindow {
            counts: Box::new([0; SLOTS]),
            current: 0,
            sum: 0,
            max: 0,
        }
    }

    /// Records an event at `t` (times never decrease).
    #[inline]
    pub fn hit(&mut self, t: Nanos) {
        let slot = t / SLOT;
        if slot != self.current {
            self.advance(slot);
        }
        self.counts[(slot % SLOTS as u64) as usize] += 1;
        self.sum += 1;
        self.max = self.max.max(self.sum);
    }

    /// Moves the window's end to `slot`, emptying the slots it leaves.
    #[cold]
    fn advance(&mut self, slot: u64) {
        let gap = slot.saturating_sub(self.current).min(SLOTS as u64);
        for k in 1..=gap {
            let i = ((self.current + k) % SLOTS as u64) as usize;
            self.sum -= u64::from(self.counts[i]);
            self.counts[i] = 0;
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

    /// The ring agrees with a direct count over every window of 1,000
    /// whole milliseconds.
    #[test]
    fn agrees_with_a_direct_count() {
        let mut times = Vec::new();
        let mut t: Nanos = 0;
        let mut x: u64 = 12345;
        for _ in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            t += (x >> 33) % (3 * MS);
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
        assert_eq!(w.max(), direct);
    }
}
