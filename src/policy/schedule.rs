//! A policy's retry schedule as numbers: when each retry would go out, the
//! range jitter can move it over, and how long the whole retry window
//! lasts. Pure computation, used by `retrysim schedule` and by tests that
//! check presets against documented examples.
//!
//! Worked windows of the Cloud Tasks presets (sum of the nominal intervals
//! over the retries `max_attempts` allows):
//!
//! | preset | retries | window |
//! |---|---|---|
//! | `cloud-tasks-default` (0.1 s..3600 s, 16 doublings) | 99 | 305,353.5 s = 84.8 h |
//! | `cloud-tasks-critical` (0.1 s..10 s, 5 doublings) | 9 | 32.3 s |
//! | `cloud-tasks-batch` (1 s..3600 s, 16 doublings) | 99 | 317,295 s = 88.1 h |
//! | `cloud-tasks-transient` (10 ms..1 s, 8 doublings) | 19 | 13.27 s |
//!
//! Ages for `max_retry_duration` are measured on the nominal delays alone
//! (no service time, no jitter), so the retry count of a duration-limited
//! policy is what an idealised client would get.

use super::{Backoff, Jitter, Policy, RetryVerdict};
use crate::time::{Nanos, NS_PER_SEC};

/// Rows shown when the caller does not say (fewer when the policy allows
/// fewer retries).
pub const DEFAULT_ROWS: u32 = 20;

/// Retries walked one by one; beyond them the delays are summed in
/// closed form ([`Tail`]).
const WALK_LIMIT: u64 = 1_000_000;

/// The nominal delays of a backoff from some retry past the 64th on
/// ([`Backoff::tail`]), as a progression that grows until it reaches its cap and stays there: every
/// backoff's schedule is one from there (linear, and Cloud Tasks' after
/// its doublings, are arithmetic; exponential is geometric; doubling and
/// tripling have reached any cap within 64 retries; constant is both with
/// no growth). Sums of millions of retries without walking them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Tail {
    /// `first + i·step`, capped at `cap`.
    Arithmetic { first: f64, step: f64, cap: f64 },
    /// `first · ratio^i`, capped at `cap`.
    Geometric { first: f64, ratio: f64, cap: f64 },
}

impl Tail {
    /// The sum of its first `n` delays.
    fn sum(self, n: u64) -> f64 {
        let n = n as f64;
        match self {
            Tail::Arithmetic { first, step, cap } => {
                if step <= 0.0 || first >= cap {
                    return n * first.min(cap);
                }
                // Terms below the cap: first + i·step < cap.
                let below = ((cap - first) / step).ceil().min(n);
                below * first + step * below * (below - 1.0) / 2.0 + (n - below) * cap
            }
            Tail::Geometric { first, ratio, cap } => {
                if ratio <= 1.0 || first >= cap || first <= 0.0 {
                    return n * first.min(cap);
                }
                let below = ((cap / first).ln() / ratio.ln()).ceil().min(n);
                // first · (ratio^below − 1) / (ratio − 1), exact for a
                // ratio near 1 too.
                let grown = (below * ratio.ln()).exp_m1() / (ratio - 1.0);
                first * grown + (n - below) * cap
            }
        }
    }

    /// The fewest delays whose sum reaches `target` (> 0); `None` when the
    /// delays are all zero.
    fn count_to(self, target: f64) -> Option<u64> {
        if self.sum(u64::MAX >> 1) <= 0.0 {
            return None;
        }
        let (mut lo, mut hi) = (0u64, 1u64);
        while self.sum(hi) < target {
            lo = hi;
            hi = hi.checked_mul(2)?;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.sum(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(hi)
    }
}

/// A sum of delays in nanoseconds as [`Nanos`], saturating.
fn ns(x: f64) -> Nanos {
    if x >= Nanos::MAX as f64 {
        Nanos::MAX
    } else {
        x.round().max(0.0) as Nanos
    }
}

/// One retry of the schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The attempt this retry is (2 = the first retry).
    pub attempt: u32,
    /// The retry number k (1 = the first retry).
    pub retry: u32,
    /// The nominal delay before this retry (no jitter).
    pub delay: Nanos,
    /// The smallest delay jitter can give (decorrelated: the reachable
    /// range).
    pub min: Nanos,
    /// The largest delay jitter can give.
    pub max: Nanos,
    /// Sum of the nominal delays up to this retry.
    pub cumulative: Nanos,
    /// Sum of the smallest delays.
    pub cumulative_min: Nanos,
    /// Sum of the largest delays.
    pub cumulative_max: Nanos,
}

/// A policy's schedule: the first rows and the whole retry window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The first retries, one row each.
    pub rows: Vec<Row>,
    /// Retries the limits allow; `None` = unlimited.
    pub retries: Option<u64>,
    /// Sum of the nominal delays over every allowed retry; `None` when
    /// retries are unlimited.
    pub window: Option<Nanos>,
    /// The same sum with every delay at its smallest / largest.
    pub window_min: Option<Nanos>,
    /// Sum of the largest delays over every allowed retry; `None` when retries
    /// are unlimited.
    pub window_max: Option<Nanos>,
}

/// The smallest and largest delay before retry `k` (1-based).
///
/// For decorrelated backoff the policy starts from `previous = base`, so
/// retry k can reach `min(max, base · 3^k)` and never goes below
/// `min(base, max)`.
pub fn delay_range(policy: &Policy, k: u32) -> (Nanos, Nanos) {
    match policy.backoff {
        Backoff::Decorrelated { base, max } => {
            let hi = base as f64 * 3f64.powi(k.min(64) as i32);
            let hi = if hi >= max as f64 { max } else { hi as Nanos };
            (base.min(max), hi.max(base.min(max)))
        }
        _ => {
            let (d, next) = policy.jitter.next_bounds(&policy.backoff, k);
            policy.jitter.range_next(d, next)
        }
    }
}

/// What `next_step`'s ranges over retries `from..from + count` reach above
/// the sums of the capped next delays: only the last retry m whose
/// uncapped delay does not exceed the cap while the next one's does draws
/// above the cap, up to `d(m+1)`. The uncapped delays never decrease, so m
/// is found by bisection.
fn next_step_overshoot(b: &Backoff, from: u64, count: u64) -> u64 {
    let at = |n: u64| b.uncapped(u32::try_from(n).unwrap_or(u32::MAX));
    let cap = b.cap();
    let (mut lo, mut hi) = (from, from + count.max(1) - 1);
    if at(lo) > cap {
        return 0;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if at(mid) <= cap {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    at(lo + 1).saturating_sub(cap)
}

/// How many retries the policy's limits allow, judged on nominal delays;
/// `None` when they are unlimited (no attempt limit, or a duration limit
/// that delays of zero never reach).
pub fn retries_allowed(policy: &Policy) -> Option<u64> {
    let Some(status) = policy.retry_on.to_vec().into_iter().next() else {
        return Some(0);
    };
    match (policy.max_attempts, policy.max_retry_duration) {
        (None, _) => return None,
        (Some(m), None) => return Some(u64::from(m.saturating_sub(1))),
        _ => {}
    }
    let mut age: Nanos = 0;
    for k in 1..=WALK_LIMIT {
        // Attempt k just failed at `age`; may retry k follow?
        let attempts = u32::try_from(k).unwrap_or(u32::MAX);
        if policy.verdict(status, attempts, age) != RetryVerdict::Retry {
            return Some(k - 1);
        }
        age = age.saturating_add(policy.backoff.nominal(attempts));
    }
    // Attempt W + 1 + n fails at age + (the first n delays from retry
    // W + 1); it ends the request once both limits are reached.
    let limit = policy.max_retry_duration.unwrap_or(0);
    let by_age = if age >= limit {
        0
    } else {
        policy
            .backoff
            .tail(WALK_LIMIT + 1)
            .count_to((limit - age) as f64)?
    };
    let by_attempts = policy
        .max_attempts
        .map_or(0, |m| u64::from(m).saturating_sub(WALK_LIMIT + 1));
    Some(WALK_LIMIT + by_age.max(by_attempts))
}

/// The schedule of `policy`, with up to `rows` rows (default
/// [`DEFAULT_ROWS`]), never more than the policy allows.
pub fn schedule(policy: &Policy, rows: Option<u32>) -> Schedule {
    // A hedge goes after its delay while no attempt has succeeded, whether
    // or not a failure would let the others go on (`non_fatal`).
    let retries = match &policy.hedging {
        Some(h) => Some(u64::from(h.max_attempts.saturating_sub(1))),
        None => retries_allowed(policy),
    };
    let wanted = u64::from(rows.unwrap_or(DEFAULT_ROWS));
    let shown = retries.map_or(wanted, |r| r.min(wanted));
    let walk = retries.map_or(shown, |r| r.min(WALK_LIMIT)).max(shown);
    let (mut cum, mut lo_sum, mut hi_sum) = (0u64, 0u64, 0u64);
    let mut out = Vec::with_capacity(shown as usize);
    let mut last = (0, 0, 0);
    for k in 1..=walk {
        let k32 = u32::try_from(k).unwrap_or(u32::MAX);
        let delay = policy.backoff.nominal(k32);
        let (lo, hi) = delay_range(policy, k32);
        cum = cum.saturating_add(delay);
        lo_sum = lo_sum.saturating_add(lo);
        hi_sum = hi_sum.saturating_add(hi);
        last = (delay, lo, hi);
        if k <= shown {
            out.push(Row {
                attempt: k32.saturating_add(1),
                retry: k32,
                delay,
                min: lo,
                max: hi,
                cumulative: cum,
                cumulative_min: lo_sum,
                cumulative_max: hi_sum,
            });
        }
    }
    // The retries past the walk, summed in closed form; jitter's range is
    // linear in the nominal delays (and the next retry's, for next_step),
    // so it applies to their sums as to one delay.
    let rest = retries.map_or(0, |r| r.saturating_sub(walk));
    let (tail, tail_lo, tail_hi) = if rest == 0 {
        (0, 0, 0)
    } else if policy.backoff.is_decorrelated() {
        // Its range is capped long before the walk ends.
        (
            ns(last.0 as f64 * rest as f64),
            ns(last.1 as f64 * rest as f64),
            ns(last.2 as f64 * rest as f64),
        )
    } else {
        let sum = ns(policy.backoff.tail(walk + 1).sum(rest));
        let next = if policy.jitter.needs_next() {
            ns(policy.backoff.tail(walk + 2).sum(rest))
        } else {
            sum
        };
        let (lo, hi) = policy.jitter.range_next(sum, next);
        let over = if policy.jitter == Jitter::NextStep {
            next_step_overshoot(&policy.backoff, walk + 1, rest)
        } else {
            0
        };
        (sum, lo, hi.saturating_add(over))
    };
    let total = |sum: u64, tail: Nanos| retries.map(|_| sum.saturating_add(tail));
    Schedule {
        rows: out,
        retries,
        window: total(cum, tail),
        window_min: total(lo_sum, tail_lo),
        window_max: total(hi_sum, tail_hi),
    }
}

/// A duration in the unit a person would say it in, to three significant
/// digits: "250 ms", "32.3 s", "54.6 min", "84.8 h", "12.5 d".
pub fn human(ns: Nanos) -> String {
    if ns == 0 {
        return "0 s".into();
    }
    if ns == Nanos::MAX {
        // Sums saturate here: more than simulated time can hold (584
        // years), not this value.
        return format!("> {:.0} d", ns as f64 / (86_400 * NS_PER_SEC) as f64);
    }
    let s = ns as f64 / NS_PER_SEC as f64;
    let (v, unit) = if s < 1e-6 {
        (ns as f64, "ns")
    } else if s < 1e-3 {
        (s * 1e6, "µs")
    } else if s < 1.0 {
        (s * 1e3, "ms")
    } else if s < 60.0 {
        (s, "s")
    } else if s < 3600.0 {
        (s / 60.0, "min")
    } else if s < 100.0 * 3600.0 {
        (s / 3600.0, "h")
    } else {
        (s / 86_400.0, "d")
    };
    let text = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{presets, resolve};
    use crate::policy::{BackoffSpec, PolicySpec};
    use crate::time::Dur;
    use proptest::prelude::*;

    const S: Nanos = NS_PER_SEC;

    fn preset(name: &str) -> Policy {
        resolve(&PolicySpec {
            name: name.into(),
            preset: Some(name.into()),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn every_hedge_is_listed_whatever_the_non_fatal_statuses() {
        for non_fatal in [vec![], vec![crate::status::Status::Unavailable]] {
            let p: PolicySpec = serde_json::from_value(serde_json::json!({
                "name": "h",
                "hedging": {"delay": "100ms", "max_attempts": 3, "non_fatal": non_fatal}
            }))
            .unwrap();
            let s = schedule(&resolve(&p).unwrap(), None);
            assert_eq!(s.retries, Some(2), "{non_fatal:?}");
            let at: Vec<Nanos> = s.rows.iter().map(|r| r.cumulative).collect();
            assert_eq!(at, [S / 10, S / 5], "{non_fatal:?}");
        }
    }

    fn cloud_tasks(min: Dur, max: Dur, doublings: u32, attempts: i64) -> Policy {
        resolve(&PolicySpec {
            name: "ct".into(),
            max_attempts: Some(attempts),
            backoff: Some(BackoffSpec::CloudTasks {
                min_backoff: min,
                max_backoff: max,
                max_doublings: doublings,
            }),
            ..Default::default()
        })
        .unwrap()
    }

    fn delays_s(s: &Schedule) -> Vec<f64> {
        s.rows.iter().map(|r| r.delay as f64 / S as f64).collect()
    }

    #[test]
    fn cloud_tasks_documented_example() {
        let p = cloud_tasks(Dur::from_secs(10), Dur::from_secs(300), 3, 9);
        let s = schedule(&p, None);
        assert_eq!(
            delays_s(&s),
            vec![10.0, 20.0, 40.0, 80.0, 160.0, 240.0, 300.0, 300.0]
        );
        let cum: Vec<u64> = s.rows.iter().map(|r| r.cumulative / S).collect();
        assert_eq!(cum, vec![10, 30, 70, 150, 310, 550, 850, 1150]);
        assert_eq!(s.window, Some(1150 * S));
        assert!(s.rows.iter().all(|r| r.min == r.delay && r.max == r.delay));
    }

    #[test]
    fn cloud_tasks_linear_only_example() {
        let p = cloud_tasks(Dur::from_secs(10), Dur::from_secs(200), 0, 23);
        let got = delays_s(&schedule(&p, Some(22)));
        let want: Vec<f64> = (1..=20)
            .map(|k| 10.0 * k as f64)
            .chain([200.0, 200.0])
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn preset_windows() {
        let cases = [
            ("cloud-tasks-default", 99, 305_353_500_000_000u64, "84.8 h"),
            ("cloud-tasks-critical", 9, 32_300_000_000, "32.3 s"),
            ("cloud-tasks-batch", 99, 317_295 * S, "88.1 h"),
            ("cloud-tasks-transient", 19, 13_270_000_000, "13.3 s"),
        ];
        for (name, retries, window, text) in cases {
            let s = schedule(&preset(name), None);
            assert_eq!(s.retries, Some(retries), "{name}");
            assert_eq!(s.window, Some(window), "{name}");
            assert_eq!(human(window), text, "{name}");
            assert_eq!(s.rows.len() as u64, retries.min(20), "{name}");
        }
        let s = schedule(&preset("cloud-tasks-default"), Some(200));
        assert_eq!(s.rows.len(), 99);
        assert_eq!(s.rows[98].cumulative, 305_353_500_000_000);
        assert_eq!(s.rows[98].attempt, 100);
    }

    #[test]
    fn unlimited_attempts_show_the_asked_rows_and_no_window() {
        let p = cloud_tasks(Dur::from_secs(1), Dur::from_secs(2), 1, -1);
        let s = schedule(&p, Some(5));
        assert_eq!(s.rows.len(), 5);
        assert_eq!((s.retries, s.window), (None, None));
    }

    #[test]
    fn huge_attempt_counts_are_extrapolated() {
        let p = cloud_tasks(Dur::from_secs(1), Dur::from_secs(2), 1, i64::from(u32::MAX));
        let s = schedule(&p, None);
        let r = u64::from(u32::MAX) - 1;
        assert_eq!(s.retries, Some(r));
        assert_eq!(s.window, Some(S + (r - 1) * 2 * S));
    }

    /// Every kind of backoff, in a phase that still grows and one capped.
    fn growing_backoffs() -> Vec<Backoff> {
        vec![
            Backoff::Constant { delay: 7 },
            Backoff::Linear {
                initial: 3,
                step: 5,
                max: 400,
            },
            Backoff::Exponential {
                initial: 10,
                multiplier: 1.5,
                max: 1_000_000,
                max_doublings: 20,
            },
            Backoff::Exponential {
                initial: 1_000,
                multiplier: 1.001,
                max: u64::MAX,
                max_doublings: u32::MAX,
            },
            Backoff::Linear {
                initial: 3,
                step: 5,
                max: 4_000,
            },
            Backoff::CloudTasks {
                min_backoff: 10,
                max_backoff: 500_000,
                max_doublings: 3,
            },
            Backoff::CloudTasks {
                min_backoff: 10,
                max_backoff: 5_000,
                max_doublings: 100,
            },
            Backoff::Decorrelated { base: 5, max: 900 },
        ]
    }

    #[test]
    fn closed_form_sums_match_the_walk() {
        for b in growing_backoffs() {
            for from in [65u64, 66, 70, 100, 1_000] {
                let tail = b.tail(from);
                let mut walked = 0u64;
                for n in 0..300u64 {
                    let sum = tail.sum(n);
                    // Within the rounding of each walked delay to whole ns.
                    assert!(
                        (sum - walked as f64).abs() <= 0.5 * n as f64 + 1e-6 * walked as f64,
                        "{b:?} from {from}, {n} delays: {sum} against {walked}"
                    );
                    let k = u32::try_from(from + n).unwrap();
                    walked += b.nominal(k);
                }
            }
        }
    }

    #[test]
    fn retries_past_the_walk_are_summed_in_closed_form() {
        let policy = |backoff: BackoffSpec, attempts: i64, limit: Option<Dur>| {
            resolve(&PolicySpec {
                name: "p".into(),
                max_attempts: Some(attempts),
                max_retry_duration: limit,
                backoff: Some(backoff),
                ..Default::default()
            })
            .unwrap()
        };
        // A linear schedule of 1 ns steps is nowhere near its cap after
        // ten million retries: Σ k for k = 1..=9,999,999.
        let linear = BackoffSpec::Linear {
            initial: Dur(1),
            step: Dur(1),
            max: Some(Dur::from_secs(86_400)),
        };
        let s = schedule(&policy(linear, 10_000_000, None), Some(1));
        let r = 9_999_999u64;
        assert_eq!(s.retries, Some(r));
        assert_eq!(s.window, Some(r * (r + 1) / 2));
        // Both limits, the age last: a constant 1 ms for an hour is
        // 3.6 million retries, past the walk (it had read as unlimited).
        let constant = BackoffSpec::Constant {
            delay: Dur::from_millis(1),
        };
        let s = schedule(&policy(constant, 2, Some(Dur::from_secs(3_600))), Some(1));
        assert_eq!(s.retries, Some(3_600_000));
        assert_eq!(s.window, Some(3_600 * S));
        // A slow exponential: 1.00001 per retry from 1 ns reaches its
        // 1 h cap at retry ln(3.6e12)/ln(1.00001) + 1 = 2,891,233; the
        // window is the geometric sum below it plus the cap after it.
        let slow = BackoffSpec::Exponential {
            initial: Dur(1),
            multiplier: 1.00001,
            max: Some(Dur::from_secs(3_600)),
            max_doublings: None,
        };
        let s = schedule(&policy(slow, 3_000_000, None), Some(1));
        let (cap, r) = (3.6e12f64, 1.00001f64);
        let below = (cap.ln() / r.ln()).ceil();
        // Σ r^(k−1) over the retries below the cap, r^below within a
        // factor r of the cap.
        let want = (cap - 1.0) / (r - 1.0) + (2_999_999.0 - below) * cap;
        let got = s.window.unwrap() as f64;
        assert!((got / want - 1.0).abs() < 1e-3, "{got} against {want}");
    }

    #[test]
    fn duration_limit_counts_retries_on_nominal_ages() {
        // Constant 10 s, one attempt (reached at once), 35 s limit:
        // failures at ages 0, 10, 20, 30 retry; the one at 40 s does not.
        let limits = |max_attempts| {
            resolve(&PolicySpec {
                name: "d".into(),
                max_attempts: Some(max_attempts),
                max_retry_duration: Some(Dur::from_secs(35)),
                backoff: Some(BackoffSpec::Constant {
                    delay: Dur::from_secs(10),
                }),
                ..Default::default()
            })
            .unwrap()
        };
        let s = schedule(&limits(1), None);
        assert_eq!(s.retries, Some(4));
        assert_eq!(s.window, Some(40 * S));
        // Two attempts are reached before the age: the age still decides.
        assert_eq!(schedule(&limits(2), None).retries, Some(4));
        // Ten are not: the tenth attempt's failure, at 90 s, is the last.
        assert_eq!(schedule(&limits(10), None).retries, Some(9));
        // Unlimited attempts are never reached: no end at all.
        let s = schedule(&limits(-1), None);
        assert_eq!((s.retries, s.window), (None, None));
    }

    #[test]
    fn jitter_ranges_show() {
        let s = schedule(&preset("grpc"), None);
        assert_eq!(s.retries, Some(4));
        let r = &s.rows[0];
        assert_eq!(
            (r.delay, r.min, r.max),
            (100_000_000, 80_000_000, 120_000_000)
        );
        assert_eq!(s.rows[3].delay, 800_000_000, "100 ms doubled three times");
        let aws = schedule(&preset("aws-standard"), None);
        assert_eq!(aws.rows[1].min, 0);
        assert_eq!(aws.rows[1].max, 2 * S);
        assert_eq!(aws.window_max, Some(3 * S));
    }

    #[test]
    fn decorrelated_range_is_reachable_range() {
        let p = resolve(&PolicySpec {
            name: "d".into(),
            max_attempts: Some(5),
            backoff: Some(BackoffSpec::Decorrelated {
                base: Dur::from_millis(5),
                max: Dur::from_millis(100),
            }),
            ..Default::default()
        })
        .unwrap();
        let s = schedule(&p, None);
        let ranges: Vec<(u64, u64)> = s.rows.iter().map(|r| (r.min, r.max)).collect();
        let ms = 1_000_000;
        assert_eq!(
            ranges,
            vec![
                (5 * ms, 15 * ms),
                (5 * ms, 45 * ms),
                (5 * ms, 100 * ms),
                (5 * ms, 100 * ms)
            ]
        );
        // Every delay the policy draws stays inside its row's range.
        let mut prev = 0;
        for (k, row) in s.rows.iter().enumerate() {
            let d = p.retry_delay(k as u32 + 1, &mut prev, 0.999_999);
            assert!(d >= row.min && d <= row.max, "retry {}", k + 1);
        }
    }

    #[test]
    fn human_units() {
        assert_eq!(human(0), "0 s");
        assert_eq!(human(250_000_000), "250 ms");
        assert_eq!(human(1_600_000_000), "1.6 s");
        assert_eq!(human(3_276_800_000_000), "54.6 min");
        assert_eq!(human(400 * 3600 * S), "16.7 d");
        assert_eq!(human(1500), "1.5 µs");
    }

    #[test]
    fn every_preset_has_a_schedule() {
        for name in presets::NAMES {
            let p = preset(name);
            let s = schedule(&p, None);
            assert!(!s.rows.is_empty(), "{name}");
            // Presets that never give up (linkerd, finagle, client-go) have
            // no finite window.
            assert_eq!(s.window.is_some(), p.max_attempts.is_some(), "{name}");
        }
    }

    proptest! {
        #[test]
        fn grpc_delays_stay_within_a6_bounds(k in 1u32..40, u in 0.0f64..1.0) {
            let p = preset("grpc");
            let nominal = (100_000_000f64 * 2f64.powi(k as i32 - 1)).min(1e9);
            let mut prev = 0;
            let d = p.retry_delay(k, &mut prev, u) as f64;
            prop_assert!(d >= (0.8 * nominal).floor() - 1.0 && d <= 1.2 * nominal + 1.0,
                "retry {}: {} vs nominal {}", k, d, nominal);
        }

        #[test]
        fn aws_standard_delays_stay_within_botocore_bounds(k in 1u32..40, u in 0.0f64..1.0) {
            let p = preset("aws-standard");
            let cap = 2f64.powi(k as i32 - 1).min(20.0) * 1e9;
            let mut prev = 0;
            let d = p.retry_delay(k, &mut prev, u) as f64;
            prop_assert!((0.0..=cap).contains(&d), "retry {}: {} > {}", k, d, cap);
        }

        #[test]
        fn rows_lie_inside_the_window(attempts in 2i64..200, rows in 1u32..300) {
            let p = cloud_tasks(Dur::from_millis(100), Dur::from_secs(60), 4, attempts);
            let s = schedule(&p, Some(rows));
            let last = s.rows.last().unwrap();
            prop_assert!(last.cumulative <= s.window.unwrap());
            prop_assert!(last.cumulative_min <= last.cumulative && last.cumulative <= last.cumulative_max);
            prop_assert_eq!(s.rows.len() as u64, (attempts as u64 - 1).min(u64::from(rows)));
        }
    }
}
