//! Nominal backoff schedules: the delay before retry `n` before any jitter.
//!
//! Pure functions of the retry number, so schedules can be checked against
//! documented examples exactly (Cloud Tasks' 10, 20, 40, 80, 160, 240, 300).

use crate::time::Nanos;

/// A resolved backoff schedule, times in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Backoff {
    /// The same delay before every retry.
    Constant { delay: Nanos },
    /// `min(max, initial + step·(n−1))`.
    Linear {
        initial: Nanos,
        step: Nanos,
        max: Nanos,
    },
    /// `min(max, initial · multiplier^min(n−1, max_doublings))`.
    Exponential {
        initial: Nanos,
        multiplier: f64,
        max: Nanos,
        max_doublings: u32,
    },
    /// Cloud Tasks: doubles `max_doublings` times, then grows linearly by
    /// `min_backoff · 2^max_doublings` per retry, capped at `max_backoff`.
    CloudTasks {
        min_backoff: Nanos,
        max_backoff: Nanos,
        max_doublings: u32,
    },
    /// AWS "decorrelated jitter": `min(max, U(base, 3·previous))`; the
    /// nominal delay reported for schedules is the range's upper end.
    Decorrelated { base: Nanos, max: Nanos },
}

/// Saturating conversion of a float nanosecond count.
fn clamp_ns(x: f64) -> Nanos {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        x.round() as Nanos
    }
}

/// Cloud Tasks' documented schedule for retry `n` (1-based):
/// `e = min(n−1, d)`, `interval = min(max, min · 2^e · (n − e))`.
pub fn cloud_tasks_interval(
    n: u32,
    min_backoff: Nanos,
    max_backoff: Nanos,
    max_doublings: u32,
) -> Nanos {
    let n = n.max(1);
    let e = (n - 1).min(max_doublings);
    let linear = (n - e) as u128;
    let doubled = if e >= 64 {
        u128::MAX
    } else {
        (min_backoff as u128).saturating_mul(1u128 << e)
    };
    let interval = doubled.saturating_mul(linear);
    interval.min(max_backoff as u128) as Nanos
}

impl Backoff {
    /// The nominal (un-jittered) delay before retry `n`, n = 1 being the
    /// first retry. For `Decorrelated` this is the largest delay the first
    /// retries can reach, `min(max, base · 3^(n−1))`, used only for
    /// schedule tables; the simulator draws decorrelated delays with
    /// [`Backoff::decorrelated_next`].
    pub fn nominal(&self, n: u32) -> Nanos {
        let n = n.max(1);
        match *self {
            Backoff::Constant { delay } => delay,
            Backoff::Linear { initial, step, max } => {
                let d = (initial as u128)
                    .saturating_add((step as u128).saturating_mul((n - 1) as u128));
                d.min(max as u128) as Nanos
            }
            Backoff::Exponential {
                initial,
                multiplier,
                max,
                max_doublings,
            } => {
                let e = (n - 1).min(max_doublings);
                let d = initial as f64 * multiplier.powi(e.min(i32::MAX as u32) as i32);
                clamp_ns(d).min(max)
            }
            Backoff::CloudTasks {
                min_backoff,
                max_backoff,
                max_doublings,
            } => cloud_tasks_interval(n, min_backoff, max_backoff, max_doublings),
            Backoff::Decorrelated { base, max } => {
                let d = base as f64 * 3f64.powi((n - 1).min(64) as i32);
                clamp_ns(d).min(max)
            }
        }
    }

    /// Decorrelated jitter's next delay from the previous one and a uniform
    /// draw `u` in [0, 1): `min(max, base + u·(3·previous − base))`.
    pub fn decorrelated_next(base: Nanos, max: Nanos, previous: Nanos, u: f64) -> Nanos {
        let hi = (previous as f64 * 3.0).max(base as f64);
        let d = base as f64 + u * (hi - base as f64);
        clamp_ns(d).min(max)
    }

    /// Whether the delay is random by construction (decorrelated), so jitter
    /// is not applied on top.
    pub fn is_decorrelated(&self) -> bool {
        matches!(self, Backoff::Decorrelated { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_SEC as S;

    fn secs_list(b: &Backoff, n: u32) -> Vec<f64> {
        (1..=n).map(|k| b.nominal(k) as f64 / S as f64).collect()
    }

    #[test]
    fn cloud_tasks_documented_example() {
        let b = Backoff::CloudTasks {
            min_backoff: 10 * S,
            max_backoff: 300 * S,
            max_doublings: 3,
        };
        assert_eq!(
            secs_list(&b, 9),
            vec![10.0, 20.0, 40.0, 80.0, 160.0, 240.0, 300.0, 300.0, 300.0]
        );
    }

    #[test]
    fn cloud_tasks_linear_only_example() {
        let b = Backoff::CloudTasks {
            min_backoff: 10 * S,
            max_backoff: 200 * S,
            max_doublings: 0,
        };
        let got = secs_list(&b, 21);
        let want: Vec<f64> = (1..=20).map(|k| 10.0 * k as f64).chain([200.0]).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn cloud_tasks_defaults_sum_to_84_8_hours() {
        let b = Backoff::CloudTasks {
            min_backoff: S / 10,
            max_backoff: 3600 * S,
            max_doublings: 16,
        };
        let total: u128 = (1..=99).map(|k| b.nominal(k) as u128).sum();
        assert_eq!(total, 305_353_500_000_000, "0.1·(2^16−1) + 83·3600 s");
        assert_eq!(b.nominal(16), 3_276_800_000_000);
        assert_eq!(b.nominal(17), 3600 * S);
    }

    #[test]
    fn exponential_respects_doublings_and_cap() {
        let b = Backoff::Exponential {
            initial: 100_000_000,
            multiplier: 2.0,
            max: 10 * S,
            max_doublings: 3,
        };
        assert_eq!(b.nominal(1), 100_000_000);
        assert_eq!(b.nominal(4), 800_000_000);
        assert_eq!(b.nominal(9), 800_000_000, "no growth after 3 doublings");
        let capped = Backoff::Exponential {
            initial: S,
            multiplier: 2.0,
            max: 5 * S,
            max_doublings: 64,
        };
        assert_eq!(capped.nominal(10), 5 * S);
        assert_eq!(
            capped.nominal(10_000),
            5 * S,
            "huge n saturates, no overflow"
        );
    }

    #[test]
    fn linear_grows_by_step() {
        let b = Backoff::Linear {
            initial: S,
            step: 2 * S,
            max: 6 * S,
        };
        assert_eq!(secs_list(&b, 5), vec![1.0, 3.0, 5.0, 6.0, 6.0]);
    }

    #[test]
    fn decorrelated_stays_between_base_and_cap() {
        let (base, max) = (5_000_000, 2 * S);
        let mut prev = base;
        for i in 0..1000 {
            let u = (i as f64 * 0.618_033_988_7).fract();
            let d = Backoff::decorrelated_next(base, max, prev, u);
            assert!(d >= base && d <= max);
            assert!(d <= (3 * prev).max(base));
            prev = d;
        }
    }
}
