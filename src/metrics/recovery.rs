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
mod tests {
    use super::*;

    fn bins(goodput: &[f64]) -> Vec<BinRow> {
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
