//! Recovery detection: when did goodput come back and stay back?

use super::{BinRow, Recovery};

/// A bin is healthy when goodput ≥ `threshold` × demand (a bin with no
/// demand is healthy).
pub fn healthy(bin: &BinRow, threshold: f64) -> bool {
    bin.goodput_rps >= threshold * bin.demand_rps - 1e-9
}

/// The first bin start `t ≥ fault_end_s` (in seconds) from which every bin
/// that starts in `[t, t + stable_for_s)` is healthy and that whole span lies
/// inside the run (`run_end_s`); `None` when there is no such time.
pub fn recovered_at(
    bins: &[BinRow],
    bin_s: f64,
    fault_end_s: f64,
    threshold: f64,
    stable_for_s: f64,
    run_end_s: f64,
) -> Option<f64> {
    let need = ((stable_for_s / bin_s).ceil() as usize).max(1);
    let first = bins.iter().position(|b| b.t_s + 1e-9 >= fault_end_s)?;
    let mut run = 0usize;
    for (i, bin) in bins.iter().enumerate().skip(first) {
        if healthy(bin, threshold) {
            run += 1;
        } else {
            run = 0;
        }
        if run == need {
            let start = &bins[i + 1 - need];
            return (start.t_s + stable_for_s <= run_end_s + 1e-9).then_some(start.t_s);
        }
    }
    None
}

/// How long the backlog took to drain after the incident: seconds from
/// `fault_end_s` to the end of the first bin, ending at or after it, whose
/// `backlog` (read at the bin's end) is back at its healthy level (see
/// [`healthy_backlog`]) and not above it again before the run recovered
/// (`recovered_at_s`; for a run that did not, before its end). A fault
/// that empties the queue shows a low backlog at its end; the surge of
/// retries after it has to pass before the backlog counts as drained,
/// while its ups and downs once the run has recovered do not count.
/// `None` when the backlog was not back at that level by the run's end.
/// Bins are `bin_s` wide, the last one cut at `run_end_s`.
pub fn drained_after(
    bins: &[BinRow],
    bin_s: f64,
    (fault_start_s, fault_end_s): (f64, f64),
    run_end_s: f64,
    recovered_at_s: Option<f64>,
) -> Option<f64> {
    let end = |b: &BinRow| (b.t_s + bin_s).min(run_end_s);
    let before = healthy_backlog(bins, bin_s, fault_start_s, run_end_s, recovered_at_s);
    let after_fault = |b: &BinRow| end(b) + 1e-9 >= fault_end_s;
    let back = |b: &BinRow| b.backlog <= before + 1e-9;
    // The last bin above the level, after the fault and before the run
    // recovered: the backlog drains after it.
    let horizon = recovered_at_s.unwrap_or(f64::INFINITY);
    let from = bins
        .iter()
        .rposition(|b| after_fault(b) && b.t_s + 1e-9 < horizon && !back(b))
        .map_or(0, |i| i + 1);
    bins[from..]
        .iter()
        .find(|b| after_fault(b) && back(b))
        .map(|b| (end(b) - fault_end_s).max(0.0))
}

/// The backlog a healthy run keeps, which a drained one is back at: the
/// highest backlog read at the end of any bin that ended by
/// `fault_start_s`; when no bin did (a fault from the run's first bin on),
/// the median backlog read at the ends of the bins from the recovery
/// (`recovered_at_s`) on, the level the recovered run keeps (0 for a run
/// that did not recover). Tasks in service or in line at a bin's end are
/// part of any backlog, so a healthy level is seldom 0: 1 s of service
/// at 1 task a second keeps one open at every bin's end.
pub fn healthy_backlog(
    bins: &[BinRow],
    bin_s: f64,
    fault_start_s: f64,
    run_end_s: f64,
    recovered_at_s: Option<f64>,
) -> f64 {
    let end = |b: &BinRow| (b.t_s + bin_s).min(run_end_s);
    let mut before = bins
        .iter()
        .filter(|b| end(b) <= fault_start_s + 1e-9)
        .map(|b| b.backlog)
        .peekable();
    if before.peek().is_some() {
        return before.fold(0.0, f64::max);
    }
    let Some(recovered) = recovered_at_s else {
        return 0.0;
    };
    let mut after: Vec<f64> = bins
        .iter()
        .filter(|b| b.t_s + 1e-9 >= recovered)
        .map(|b| b.backlog)
        .collect();
    if after.is_empty() {
        return 0.0;
    }
    after.sort_by(f64::total_cmp);
    after[(after.len() - 1) / 2]
}

/// How a run with an incident ending at `fault_end_s` came out of it,
/// given its recovery time (from [`recovered_at`]). Not recovered is
/// `Undetermined` when the run left less than `stable_for_s` after the
/// fault, or when its last bin is healthy (a recovery the run's end cut
/// short); otherwise `Degraded`.
pub fn outcome(
    bins: &[BinRow],
    fault_end_s: f64,
    threshold: f64,
    stable_for_s: f64,
    run_end_s: f64,
    recovered_at_s: Option<f64>,
) -> Recovery {
    if recovered_at_s.is_some() {
        return Recovery::Recovered;
    }
    let too_short = fault_end_s + stable_for_s > run_end_s + 1e-9;
    let ends_healthy = bins.last().is_some_and(|b| healthy(b, threshold));
    if too_short || ends_healthy {
        Recovery::Undetermined
    } else {
        Recovery::Degraded
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One-second bins from 0 s with a demand of 10/s and these goodputs
    /// (also the early-stop tests' bins).
    pub(crate) fn bins(goodput: &[f64]) -> Vec<BinRow> {
        goodput
            .iter()
            .enumerate()
            .map(|(i, &g)| BinRow {
                t_s: i as f64,
                demand_rps: 10.0,
                goodput_rps: g,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn finds_the_start_of_the_first_stable_healthy_run() {
        let b = bins(&[10.0, 0.0, 0.0, 9.5, 3.0, 9.0, 10.0, 10.0, 10.0, 10.0]);
        assert_eq!(recovered_at(&b, 1.0, 2.0, 0.9, 3.0, 10.0), Some(5.0));
        assert_eq!(recovered_at(&b, 1.0, 6.0, 0.9, 3.0, 10.0), Some(6.0));
    }

    #[test]
    fn never_recovering_is_none() {
        let b = bins(&[10.0, 0.0, 0.0, 0.0, 9.5, 9.5]);
        assert_eq!(recovered_at(&b, 1.0, 1.0, 0.9, 3.0, 6.0), None);
        assert_eq!(recovered_at(&b, 1.0, 1.0, 0.9, 2.0, 6.0), Some(4.0));
    }

    /// Bins of 10 s reading these backlogs at their ends.
    fn backlog_bins(backlog: &[f64]) -> Vec<BinRow> {
        backlog
            .iter()
            .enumerate()
            .map(|(i, &q)| BinRow {
                t_s: 10.0 * i as f64,
                backlog: q,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn the_backlog_drains_when_it_is_back_to_its_level_before_the_incident() {
        let backlog = [3.0, 5.0, 4.0, 40.0, 80.0, 60.0, 30.0, 6.0, 5.0, 2.0];
        let b = backlog_bins(&backlog);
        // Incident 30–50 s: before it the backlog read at most 5 (bins
        // ending at 10, 20, 30 s); it is 5 again at the end of the bin
        // 80–90 s, 40 s after the incident.
        assert_eq!(
            drained_after(&b, 10.0, (30.0, 50.0), 100.0, Some(60.0)),
            Some(40.0)
        );
        // Never back to 2 or less before the last bin, which ends at 100 s.
        let mut c = b.clone();
        c[9].backlog = 3.0;
        c[0].backlog = 0.0;
        c[1].backlog = 0.0;
        c[2].backlog = 0.0;
        assert_eq!(drained_after(&c, 10.0, (30.0, 50.0), 100.0, None), None);
    }

    #[test]
    fn without_a_bin_before_the_fault_the_level_is_the_recovered_runs() {
        // A fault from 0 s: no bin ended before it. One task in service at
        // every bin's end once healthy: drained at 1, at the end of the
        // bin ending 20 s after the fault.
        let b = backlog_bins(&[30.0, 60.0, 20.0, 1.0, 1.0, 2.0, 1.0, 1.0]);
        assert_eq!(healthy_backlog(&b, 10.0, 0.0, 80.0, Some(30.0)), 1.0);
        assert_eq!(
            drained_after(&b, 10.0, (0.0, 20.0), 80.0, Some(30.0)),
            Some(20.0)
        );
        // Not recovered: the level is 0, never reached.
        assert_eq!(drained_after(&b, 10.0, (0.0, 20.0), 80.0, None), None);
    }

    #[test]
    fn a_surge_after_an_emptied_queue_drains_when_it_has_passed() {
        // Before the fault the backlog reads at most 26; the fault (30–40 s)
        // rejects everything, so the queue is empty at its end; the
        // retries then pile up and take until the bin ending at 80 s to
        // clear. The run recovered at 60 s, while the backlog was still
        // high.
        let backlog = [20.0, 26.0, 18.0, 0.0, 300.0, 200.0, 90.0, 12.0, 25.0, 10.0];
        let b = backlog_bins(&backlog);
        let drained =
            |b: &[BinRow], recovered| drained_after(b, 10.0, (30.0, 40.0), 100.0, recovered);
        assert_eq!(drained(&b, Some(60.0)), Some(40.0));
        // A bump above the level once the run has recovered is not the
        // surge: the backlog had drained before it.
        let mut bump = b.clone();
        bump[8].backlog = 40.0;
        assert_eq!(drained(&bump, Some(60.0)), Some(40.0));
        // Had the run recovered only at 80 s, the bump came first.
        assert_eq!(drained(&bump, Some(90.0)), Some(60.0));
        // Without a fault that emptied the queue, a backlog at the level
        // at the fault's end has drained at once.
        let quiet = backlog_bins(&[20.0, 26.0, 18.0, 10.0, 22.0, 25.0, 19.0]);
        assert_eq!(drained(&quiet, Some(40.0)), Some(0.0));
    }

    #[test]
    fn a_storm_that_builds_after_an_emptied_queue_has_not_drained() {
        // The fault empties the queue (0 at its end), then a storm holds
        // the backlog at 300 against 40 before it, to the run's end.
        let backlog = [40.0, 35.0, 30.0, 0.0, 0.0, 300.0, 310.0, 305.0];
        let b = backlog_bins(&backlog);
        assert_eq!(drained_after(&b, 10.0, (30.0, 40.0), 80.0, None), None);
        // The storm gives way in the last bin: drained there, 40 s after
        // the fault, not at its end.
        let mut low = b.clone();
        low[7].backlog = 20.0;
        assert_eq!(
            drained_after(&low, 10.0, (30.0, 40.0), 80.0, None),
            Some(40.0)
        );
    }

    #[test]
    fn outcomes_are_three_way() {
        use Recovery::*;
        let stuck = bins(&[10.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(outcome(&stuck, 1.0, 0.9, 3.0, 6.0, None), Degraded);
        // The same bins, but the run ends 2 s after the fault: too soon.
        assert_eq!(outcome(&stuck[..3], 1.0, 0.9, 3.0, 3.0, None), Undetermined);
        // Healthy again at the end, but not for `stable_for` yet.
        let late = bins(&[10.0, 0.0, 0.0, 0.0, 9.5, 9.5]);
        assert_eq!(outcome(&late, 1.0, 0.9, 3.0, 6.0, None), Undetermined);
        assert_eq!(outcome(&late, 1.0, 0.9, 2.0, 6.0, Some(4.0)), Recovered);
    }
}
