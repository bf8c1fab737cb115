//! Bisection for a load threshold: the largest load at which a scenario
//! still recovers in at least half of its replications.
//!
//! From the start load, the search first brackets the threshold: a load
//! that recovers is doubled until one does not, a load that does not is
//! halved until one does (at most [`BRACKET_STEPS`] times each way). It
//! then halves the bracket until its width is at most `tolerance` × its
//! upper end (and at most 1 apart for whole-number loads, which cannot be
//! split further). Probing closer than the tolerance would spend runs on
//! a precision the replications' noise does not have: where outcomes are
//! mixed, [`mixed_band`] reports the band instead. Each probe's outcome is given
//! by the caller, so several searches advance together, one batch of runs
//! per step.

/// Doublings or halvings tried before a bracket is given up.
pub const BRACKET_STEPS: u32 = 10;

/// The threshold as an interval: `low` recovers in ≥ 50 % of the
/// replications, `high` does not. Either end is `None` when no probe found
/// it (every load tried recovered, or none did).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interval {
    /// The highest load seen to recover.
    pub low: Option<f64>,
    /// The lowest load seen not to recover.
    pub high: Option<f64>,
}

impl Interval {
    /// The middle of the interval, when both ends are known.
    pub fn mid(&self) -> Option<f64> {
        Some((self.low? + self.high?) / 2.0)
    }
}

/// One probe: a load and its share of recovered replications (`None`: no
/// replication could be judged, counted as not recovering).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Probe {
    /// The load tried.
    pub load: f64,
    /// Recovered ÷ judged replications.
    pub share: Option<f64>,
}

impl Probe {
    /// Whether the load recovers (at least half the judged replications).
    pub fn recovers(&self) -> bool {
        self.share.is_some_and(|s| s >= 0.5)
    }
}

/// One threshold search.
#[derive(Clone, Debug)]
pub struct Bisection {
    start: f64,
    whole: bool,
    tolerance: f64,
    ceiling: Option<f64>,
    /// The probes made, in order.
    pub probes: Vec<Probe>,
    /// The bracket so far.
    pub interval: Interval,
}

impl Bisection {
    /// A search from `start` (> 0); `whole` keeps loads whole numbers;
    /// `tolerance` is the relative width at which it stops.
    pub fn new(start: f64, whole: bool, tolerance: f64) -> Bisection {
        Bisection {
            start,
            whole,
            tolerance: tolerance.max(1e-6),
            ceiling: None,
            probes: Vec::new(),
            interval: Interval::default(),
        }
    }

    /// Stops doubling at `ceiling` (a load known not to recover, such as
    /// just above the capacity), which saves the costliest probes.
    pub fn with_ceiling(mut self, ceiling: Option<f64>) -> Bisection {
        self.ceiling = ceiling.filter(|c| *c > self.start);
        self
    }

    fn round(&self, x: f64) -> f64 {
        if self.whole {
            x.round()
        } else {
            x
        }
    }

    /// The next load to probe; `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        let Some(last) = self.probes.last() else {
            return Some(self.start);
        };
        match (self.interval.low, self.interval.high) {
            (Some(lo), Some(hi)) => {
                let narrow =
                    hi - lo <= (self.tolerance * hi).max(if self.whole { 1.0 } else { 0.0 });
                let mid = self.round((lo + hi) / 2.0);
                (!narrow && mid > lo && mid < hi).then_some(mid)
            }
            (Some(_), None) => {
                let mut up = last.load * 2.0;
                if let Some(c) = self.ceiling {
                    if last.load >= c {
                        return None;
                    }
                    up = up.min(c);
                }
                let up = self.round(up);
                // Each step must move: whole loads round, and a load that
                // rounds back to the last one would be probed for ever.
                (up > last.load && up <= self.start * 2f64.powi(BRACKET_STEPS as i32)).then_some(up)
            }
            (None, Some(_)) => {
                let down = self.round(last.load / 2.0);
                (down < last.load
                    && down >= self.start / 2f64.powi(BRACKET_STEPS as i32)
                    && down > 0.0)
                    .then_some(down)
            }
            (None, None) => None,
        }
    }

    /// Records the outcome of probing `load`.
    pub fn record(&mut self, load: f64, share: Option<f64>) {
        let p = Probe { load, share };
        if p.recovers() {
            if self.interval.low.is_none_or(|lo| load > lo) {
                self.interval.low = Some(load);
            }
        } else if self.interval.high.is_none_or(|hi| load < hi) {
            self.interval.high = Some(load);
        }
        self.probes.push(p);
    }
}

/// The band of loads where the outcomes of `probes` are mixed, around the
/// threshold `interval`: from the highest load below which every probe
/// recovered in all its judged replications, to the lowest load above
/// which no probe recovered in any (an undetermined probe, with no judged
/// replication, is neither). When the probes are clean on both sides (a
/// monotone step), the band is the interval itself; an end no clean probe
/// bounds is the interval's.
pub fn mixed_band(probes: &[Probe], interval: Interval) -> Interval {
    let all = |p: &Probe| p.share.is_some_and(|s| s >= 1.0);
    let none = |p: &Probe| p.share.is_some_and(|s| s <= 0.0);
    // The lowest load that is not a clean recovery, and the highest that
    // is not a clean failure.
    let first_unclean = probes
        .iter()
        .filter(|p| !all(p))
        .map(|p| p.load)
        .fold(f64::INFINITY, f64::min);
    let last_unclean = probes
        .iter()
        .filter(|p| !none(p))
        .map(|p| p.load)
        .fold(f64::NEG_INFINITY, f64::max);
    let low = probes
        .iter()
        .filter(|p| all(p) && p.load < first_unclean)
        .map(|p| p.load)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
    let high = probes
        .iter()
        .filter(|p| none(p) && p.load > last_unclean)
        .map(|p| p.load)
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))));
    Interval {
        low: interval.low.map(|b| low.map_or(b, |a| a.min(b))),
        high: interval.high.map(|b| high.map_or(b, |a| a.max(b))),
    }
}

/// Evaluates one batch of (search index, load) probes: the share of
/// recovering replications at each (`None`: undetermined); `None` for the
/// whole batch when the runs failed or were interrupted, which ends every
/// search.
pub type Eval<'a> = dyn FnMut(&[(usize, f64)]) -> Option<Vec<Option<f64>>> + 'a;

/// Advances every search until all are over or `eval` gives up: each step
/// asks `eval` for the shares of one batch of (search index, load) probes,
/// in search order.
pub fn run_all(searches: &mut [Bisection], eval: &mut Eval<'_>) {
    loop {
        let batch: Vec<(usize, f64)> = searches
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.next().map(|l| (i, l)))
            .collect();
        if batch.is_empty() {
            return;
        }
        let Some(shares) = eval(&batch) else {
            return;
        };
        for (&(i, load), share) in batch.iter().zip(shares) {
            searches[i].record(load, share);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recovers below `threshold`.
    fn step(threshold: f64) -> impl Fn(f64) -> Option<f64> {
        move |x| Some(if x < threshold { 1.0 } else { 0.0 })
    }

    fn search(start: f64, whole: bool, f: impl Fn(f64) -> Option<f64>) -> Bisection {
        let mut s = vec![Bisection::new(start, whole, 0.02)];
        run_all(&mut s, &mut |batch| {
            Some(batch.iter().map(|&(_, x)| f(x)).collect())
        });
        s.pop().unwrap()
    }

    #[test]
    fn brackets_downwards_then_narrows() {
        let s = search(280.0, true, step(151.0));
        let (lo, hi) = (s.interval.low.unwrap(), s.interval.high.unwrap());
        assert!(
            lo < 151.0 && hi >= 151.0 && hi - lo <= 0.02 * hi,
            "{lo} {hi}"
        );
        assert_eq!(s.probes[0].load, 280.0);
        assert_eq!(s.probes[1].load, 140.0);
    }

    #[test]
    fn brackets_upwards_to_relative_tolerance() {
        let s = search(100.0, false, step(1234.5));
        let (lo, hi) = (s.interval.low.unwrap(), s.interval.high.unwrap());
        assert!(lo < 1234.5 && hi >= 1234.5);
        assert!(hi - lo <= 0.02 * hi);
        assert!(s.probes.len() < 15, "{}", s.probes.len());
    }

    #[test]
    fn a_ceiling_caps_the_doubling() {
        let mut s = vec![Bisection::new(100.0, false, 0.02).with_ceiling(Some(330.0))];
        run_all(&mut s, &mut |b| {
            Some(b.iter().map(|&(_, x)| step(1e9)(x)).collect())
        });
        let loads: Vec<f64> = s[0].probes.iter().map(|p| p.load).collect();
        assert_eq!(loads, [100.0, 200.0, 330.0]);
        assert_eq!(s[0].interval.high, None);
    }

    #[test]
    fn gives_up_when_nothing_or_everything_recovers() {
        let s = search(100.0, false, |_| Some(1.0));
        assert_eq!(s.interval.high, None);
        assert_eq!(s.probes.len() as u32, 1 + BRACKET_STEPS);
        let s = search(100.0, false, |_| None);
        assert_eq!(s.interval.low, None);
        assert_eq!(s.interval.high, Some(100.0 / 1024.0));
    }

    #[test]
    fn whole_loads_that_never_recover_end_at_one() {
        // Halving 100 rounds to 50, 25, 13, 7, 4, 2, 1; half of 1 rounds
        // back to 1, which must not be probed again.
        for share in [None, Some(0.0)] {
            let s = search(100.0, true, |_| share);
            let loads: Vec<f64> = s.probes.iter().map(|p| p.load).collect();
            assert_eq!(loads, [100.0, 50.0, 25.0, 13.0, 7.0, 4.0, 2.0, 1.0]);
        }
        // Upwards, whole loads from 1 double without repeating.
        let s = search(1.0, true, |_| Some(1.0));
        let loads: Vec<f64> = s.probes.iter().map(|p| p.load).collect();
        assert!(loads.windows(2).all(|w| w[1] > w[0]), "{loads:?}");
    }

    fn probe(load: f64, share: Option<f64>) -> Probe {
        Probe { load, share }
    }

    #[test]
    fn the_band_is_the_interval_when_outcomes_are_clean() {
        let probes = [
            probe(280.0, Some(0.0)),
            probe(140.0, Some(1.0)),
            probe(210.0, Some(0.0)),
            probe(175.0, Some(0.0)),
            probe(158.0, Some(0.0)),
            probe(149.0, Some(1.0)),
        ];
        let i = Interval {
            low: Some(149.0),
            high: Some(158.0),
        };
        assert_eq!(mixed_band(&probes, i), i);
    }

    #[test]
    fn recovered_undetermined_recovered_is_a_band() {
        // The probes of a noisy edge: 2200 all recover, 2300 two of three,
        // 2347 undetermined, 2348 one of three, 2400 none.
        let probes = [
            probe(2000.0, Some(1.0)),
            probe(2400.0, Some(0.0)),
            probe(2200.0, Some(1.0)),
            probe(2300.0, Some(2.0 / 3.0)),
            probe(2350.0, Some(1.0 / 3.0)),
            probe(2325.0, None),
            probe(2337.0, Some(1.0)),
            probe(2343.0, Some(0.0)),
        ];
        let i = Interval {
            low: Some(2337.0),
            high: Some(2343.0),
        };
        let band = mixed_band(&probes, i);
        assert_eq!((band.low, band.high), (Some(2200.0), Some(2400.0)));
    }

    #[test]
    fn whole_loads_stop_at_the_relative_tolerance() {
        let s = search(2000.0, true, step(2347.5));
        let (lo, hi) = (s.interval.low.unwrap(), s.interval.high.unwrap());
        assert!(
            lo < 2347.5 && hi > 2347.5 && hi - lo <= 0.02 * hi,
            "{lo} {hi}"
        );
        assert!(hi - lo > 1.0, "no run spent below the tolerance: {lo} {hi}");
    }

    #[test]
    fn a_failed_batch_ends_every_search() {
        let mut s = vec![Bisection::new(100.0, true, 0.02)];
        let mut calls = 0;
        run_all(&mut s, &mut |_| {
            calls += 1;
            None
        });
        assert_eq!(calls, 1);
        assert!(s[0].probes.is_empty());
    }

    #[test]
    fn searches_advance_together() {
        let mut s = vec![
            Bisection::new(280.0, true, 0.02),
            Bisection::new(280.0, true, 0.02),
        ];
        let mut batches = Vec::new();
        run_all(&mut s, &mut |batch| {
            batches.push(batch.len());
            Some(
                batch
                    .iter()
                    .map(|&(i, x)| Some(if x < [150.0, 300.0][i] { 1.0 } else { 0.0 }))
                    .collect(),
            )
        });
        assert_eq!(batches[0], 2);
        assert!(s[1].interval.low.unwrap() >= 300.0 * 0.98 - 1.0);
        assert!(s[0].interval.high.unwrap() <= 150.0 * 1.02 + 1.0);
    }
}
