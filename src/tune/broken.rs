//! What `tune` can tell before a run ends: a constraint the run so far
//! already breaks, whatever the rest of it does.
//!
//! Only figures that can never come back under their limit decide a run
//! early: the worst second's load and the oldest task's age only grow,
//! and a request dropped, dead-lettered or failed stays so. A share limit
//! above 0 (`--max-drop-rate 0.01`) depends on how many requests the
//! whole run counts, so it waits for the run's end, and so does
//! `--allow-metastable`'s opposite (a storm is told only by the run's
//! end).

use super::Constraints;
use crate::runner::early::Progress;

/// The tolerance [`super::Score`]'s check allows a limit, so that a run
/// stopped here is one the whole-run check calls broken too.
const SLACK: f64 = 1e-12;

/// Whether the run so far breaks one of `c` for good: its worst second's
/// load or its oldest task is already over the limit, or a request has
/// been dropped (dead-lettered, failed) where the limit allows none.
pub fn already_broken(c: &Constraints, p: &Progress<'_>) -> bool {
    let s = p.summary;
    let over = |limit: Option<f64>, value: f64| limit.is_some_and(|m| value > m + SLACK);
    let none_allowed =
        |limit: Option<f64>, count: u64| limit.is_some_and(|m| m <= 0.0) && count > 0;
    let peak = if p.capacity_rps > 0.0 {
        p.peak_offered_1s as f64 / p.capacity_rps
    } else {
        0.0
    };
    let age = s.max_task_age_s.max(p.oldest_open_age_s.unwrap_or(0.0));
    over(c.max_peak_load, peak)
        || over(c.max_task_age_s, age)
        || none_allowed(c.max_drop_rate, s.dropped)
        || none_allowed(c.max_dead_letter_rate, s.dead_lettered())
        || c.min_success_rate.is_some_and(|m| m >= 1.0) && s.dropped + s.failed > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RunSummary;

    fn progress(summary: &RunSummary, peak: u64, oldest: Option<f64>) -> Progress<'_> {
        Progress {
            bins: &[],
            summary,
            peak_offered_1s: peak,
            capacity_rps: 30.0,
            oldest_open_age_s: oldest,
        }
    }

    #[test]
    fn the_worst_second_and_the_oldest_task_break_their_limits_once_past_them() {
        let c = Constraints {
            max_peak_load: Some(2.0),
            max_task_age_s: Some(7200.0),
            ..Constraints::default()
        };
        let s = RunSummary::default();
        // 60 attempts in a second is 2× a capacity of 30/s: at the limit.
        assert!(!already_broken(&c, &progress(&s, 60, None)));
        assert!(already_broken(&c, &progress(&s, 61, None)));
        // A task still open counts with its age so far.
        assert!(!already_broken(&c, &progress(&s, 0, Some(7200.0))));
        assert!(already_broken(&c, &progress(&s, 0, Some(7200.5))));
        let ended = RunSummary {
            max_task_age_s: 7300.0,
            ..RunSummary::default()
        };
        assert!(already_broken(&c, &progress(&ended, 0, None)));
    }

    #[test]
    fn a_share_decides_early_only_when_its_limit_allows_none() {
        let dead = RunSummary {
            requests: 1000,
            dropped: 1,
            max_attempts_reached: 1,
            ..RunSummary::default()
        };
        let limit = |x: f64| Constraints {
            max_dead_letter_rate: Some(x),
            ..Constraints::default()
        };
        assert!(already_broken(&limit(0.0), &progress(&dead, 0, None)));
        // 1 in 1,000 so far, but the whole run may count more requests.
        assert!(!already_broken(&limit(0.0001), &progress(&dead, 0, None)));
        let drops = Constraints {
            max_drop_rate: Some(0.0),
            ..Constraints::default()
        };
        assert!(already_broken(&drops, &progress(&dead, 0, None)));
        let all = Constraints {
            min_success_rate: Some(1.0),
            ..Constraints::default()
        };
        assert!(already_broken(&all, &progress(&dead, 0, None)));
        let most = Constraints {
            min_success_rate: Some(0.99),
            ..Constraints::default()
        };
        assert!(!already_broken(&most, &progress(&dead, 0, None)));
        // Nothing dropped, nothing broken; no constraint, nothing broken.
        let clean = RunSummary::default();
        assert!(!already_broken(&limit(0.0), &progress(&clean, 0, None)));
        assert!(!already_broken(
            &Constraints::default(),
            &progress(&dead, 1000, Some(1e9))
        ));
    }
}
