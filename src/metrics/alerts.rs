//! The alert rules an operator would have had on the queue, evaluated on a
//! run's time series: when each would have fired and when it would have
//! cleared. A pure function of the bins and the thresholds, so it is tested
//! alone and gives the same answer for the same series.
//!
//! Every rule is evaluated at the end of every bin, on the values of that
//! bin (or of the bins ending in a trailing window). A rule *fires* at the
//! first evaluation at which it holds and *clears* at the first one at
//! which it no longer does; one firing period per row of `alerts.csv`.

use super::BinRow;

/// The thresholds (`report.alerts` in a scenario).
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// `max_attempts_reached`: `dead_lettered_rps` above this.
    pub max_attempts_reached: f64,
    /// `retry_rate`: `retry_rate` above this …
    pub retry_rate: f64,
    /// … in every bin for at least this long (s).
    pub retry_rate_for_s: f64,
    /// `task_age`: `oldest_pending_age_s` above this.
    pub task_age_s: f64,
    /// `attempt_tail`: more than this share of the requests that ended …
    pub tail_share: f64,
    /// … in the bins ending within this trailing window (s) ended in the
    /// tail (`tail_finished_rps`).
    pub tail_window_s: f64,
}

impl Default for Rules {
    /// The usual rules: any request dead-lettered; more than 10 % retries
    /// for 5 minutes; a task older than an hour; more than half of the
    /// endings of the last 5 minutes in the tail.
    fn default() -> Self {
        Rules {
            max_attempts_reached: 0.0,
            retry_rate: 0.1,
            retry_rate_for_s: 300.0,
            task_age_s: 3600.0,
            tail_share: 0.5,
            tail_window_s: 300.0,
        }
    }
}

/// One alert rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// Requests given up at their retry limits (dead-lettered).
    MaxAttemptsReached,
    /// Too many of the attempts are retries, for too long.
    RetryRate,
    /// The oldest open request is too old (the queue is stuck).
    TaskAge,
    /// The attempt distribution is tail-heavy.
    AttemptTail,
}

impl Rule {
    /// Every rule, in report order.
    pub const ALL: [Rule; 4] = [
        Rule::MaxAttemptsReached,
        Rule::RetryRate,
        Rule::TaskAge,
        Rule::AttemptTail,
    ];

    /// The rule's name in `alerts.csv`.
    pub fn name(self) -> &'static str {
        match self {
            Rule::MaxAttemptsReached => "max_attempts_reached",
            Rule::RetryRate => "retry_rate",
            Rule::TaskAge => "task_age",
            Rule::AttemptTail => "attempt_tail",
        }
    }
}

/// One period during which a rule fired.
#[derive(Clone, Debug, PartialEq)]
pub struct Firing {
    /// The rule that fired.
    pub rule: Rule,
    /// When it fired (s): the end of the bin at which it first held.
    pub fired_at_s: f64,
    /// When it cleared (s); `None` if still firing when the run ended.
    pub cleared_at_s: Option<f64>,
}

/// Evaluates every rule on `bins` (`bin_s` wide, the last one cut at
/// `run_end_s`); the firing periods sorted by time, then rule.
pub fn evaluate(bins: &[BinRow], bin_s: f64, run_end_s: f64, rules: &Rules) -> Vec<Firing> {
    let end = |b: &BinRow| (b.t_s + bin_s).min(run_end_s);
    let mut out = Vec::new();
    for rule in Rule::ALL {
        let mut firing: Option<f64> = None;
        // Retry rate: start of the current run of bins above the threshold.
        let mut held_since: Option<f64> = None;
        // Attempt tail: the trailing window's first bin and its sums.
        let (mut lo, mut ended, mut tail) = (0usize, 0.0f64, 0.0f64);
        for (i, b) in bins.iter().enumerate() {
            let at = end(b);
            let holds = match rule {
                Rule::MaxAttemptsReached => b.dead_lettered_rps > rules.max_attempts_reached,
                Rule::TaskAge => b.oldest_pending_age_s > rules.task_age_s,
                Rule::RetryRate => {
                    if b.retry_rate.is_some_and(|r| r > rules.retry_rate) {
                        let since = *held_since.get_or_insert(b.t_s);
                        at - since >= rules.retry_rate_for_s - 1e-9
                    } else {
                        held_since = None;
                        false
                    }
                }
                Rule::AttemptTail => {
                    let width = at - b.t_s;
                    ended += b.finished_rps * width;
                    tail += b.tail_finished_rps * width;
                    while lo < i && end(&bins[lo]) <= at - rules.tail_window_s + 1e-9 {
                        let w = end(&bins[lo]) - bins[lo].t_s;
                        ended -= bins[lo].finished_rps * w;
                        tail -= bins[lo].tail_finished_rps * w;
                        lo += 1;
                    }
                    ended > 0.5 && tail > rules.tail_share * ended + 1e-9
                }
            };
            match (firing, holds) {
                (None, true) => firing = Some(at),
                (Some(from), false) => {
                    out.push(Firing {
                        rule,
                        fired_at_s: from,
                        cleared_at_s: Some(at),
                    });
                    firing = None;
                }
                _ => {}
            }
        }
        if let Some(from) = firing {
            out.push(Firing {
                rule,
                fired_at_s: from,
                cleared_at_s: None,
            });
        }
    }
    out.sort_by(|a, b| {
        a.fired_at_s
            .total_cmp(&b.fired_at_s)
            .then(a.rule.cmp(&b.rule))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` healthy one-second bins: 100 new requests/s, all first
    /// attempts, nothing old, nothing given up.
    fn healthy(n: usize) -> Vec<BinRow> {
        (0..n)
            .map(|i| BinRow {
                t_s: i as f64,
                first_attempt_rps: 100.0,
                retry_rps: 2.0,
                retry_rate: Some(2.0 / 102.0),
                backlog: 5.0,
                oldest_pending_age_s: 0.4,
                finished_rps: 100.0,
                tail_finished_rps: 0.0,
                ..Default::default()
            })
            .collect()
    }

    fn run(b: &[BinRow]) -> Vec<Firing> {
        evaluate(b, 1.0, b.len() as f64, &Rules::default())
    }

    #[test]
    fn a_healthy_series_pages_nobody() {
        assert_eq!(run(&healthy(4000)), vec![]);
    }

    #[test]
    fn dead_letters_fire_at_once_and_clear_with_the_first_quiet_bin() {
        let mut b = healthy(100);
        b[10].dead_lettered_rps = 1.0;
        b[11].dead_lettered_rps = 3.0;
        b[50].dead_lettered_rps = 0.5;
        let f = run(&b);
        assert_eq!(
            f,
            vec![
                Firing {
                    rule: Rule::MaxAttemptsReached,
                    fired_at_s: 11.0,
                    cleared_at_s: Some(13.0)
                },
                Firing {
                    rule: Rule::MaxAttemptsReached,
                    fired_at_s: 51.0,
                    cleared_at_s: Some(52.0)
                },
            ]
        );
    }

    #[test]
    fn retries_must_stay_above_ten_percent_for_five_minutes() {
        let mut b = healthy(1000);
        // 299 s above the threshold: not long enough.
        for x in &mut b[100..399] {
            x.retry_rate = Some(0.5);
        }
        // From 500 s to the end (1000 s): fires at 800 s, never clears.
        for x in &mut b[500..] {
            x.retry_rate = Some(0.11);
        }
        // A bin without attempts breaks the run.
        b[600].retry_rate = None;
        let f = run(&b);
        assert_eq!(
            f,
            vec![Firing {
                rule: Rule::RetryRate,
                fired_at_s: 901.0,
                cleared_at_s: None
            }]
        );
        // Exactly 300 s held is enough.
        for x in &mut b[100..400] {
            x.retry_rate = Some(0.5);
        }
        assert_eq!(run(&b)[0].fired_at_s, 400.0);
        assert_eq!(run(&b)[0].cleared_at_s, Some(401.0));
    }

    #[test]
    fn an_old_task_fires_while_it_is_older_than_an_hour() {
        let mut b = healthy(5000);
        for (i, x) in b.iter_mut().enumerate().skip(100).take(4000) {
            // One task stuck from 100 s to 4100 s.
            x.oldest_pending_age_s = (i + 1 - 100) as f64;
        }
        let f = run(&b);
        assert_eq!(
            f,
            vec![Firing {
                rule: Rule::TaskAge,
                fired_at_s: 3701.0,
                cleared_at_s: Some(4101.0)
            }]
        );
    }

    #[test]
    fn a_tail_heavy_attempt_distribution_over_the_window() {
        let mut b = healthy(1000);
        // From 200 s to 600 s, 60 of the 100 endings per second are at
        // attempt 20 or later.
        for x in &mut b[200..600] {
            x.tail_finished_rps = 60.0;
        }
        let f = run(&b);
        // Window (t−300, t]: tail = 60·(t−200), ended = 100·300 = 30000;
        // above half when t − 200 > 250, i.e. at t = 451 (first bin end
        // with 60·251 > 15000). It clears when the tail bins leaving the
        // window bring it back: 60·(600 − (t − 300)) ≤ 15000 ⇔ t ≥ 650.
        assert_eq!(
            f,
            vec![Firing {
                rule: Rule::AttemptTail,
                fired_at_s: 451.0,
                cleared_at_s: Some(650.0)
            }]
        );
    }
}
