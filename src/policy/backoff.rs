//! Backoff schedules: the kind as written in a scenario ([`BackoffSpec`]),
//! its checks and wording, and the resolved form ([`Backoff`]) whose delay
//! before retry `n` is a pure function of `n`, so schedules can be checked
//! against documented examples exactly (Cloud Tasks' 10, 20, 40, 80, 160,
//! 240, 300).
//!
//! A new backoff kind is a variant of both enums here, its arms in the
//! `match`es of this file, and a line in `docs/scenario-reference.md`
//! (`docs/architecture.md` lists every file).

use super::schedule::Tail;
use crate::check::{must_be, Problems};
use crate::decimal::num;
use crate::time::{format_duration, round_ns, Dur, Nanos};
use serde::de::{self, Visitor};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The nominal delay before retry `n` (n = 1 is the first retry).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BackoffSpec {
    /// The same delay before every retry.
    Constant {
        /// Delay before each retry (`Dur`).
        delay: Dur,
    },
    /// `min(max, initial + step·(n−1))`.
    Linear {
        /// Delay before the first retry (`Dur`).
        initial: Dur,
        /// Added to the delay at each further retry (`Dur`).
        step: Dur,
        /// Cap on the delay (`Dur`); none: uncapped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Dur>,
    },
    /// `min(max, initial · multiplier^min(n−1, max_doublings))`.
    Exponential {
        /// Delay before the first retry (`Dur`).
        initial: Dur,
        /// Growth factor per retry (default 2).
        #[serde(default = "default_multiplier")]
        multiplier: f64,
        /// Cap on the delay (`Dur`); none: uncapped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<Dur>,
        /// How many times the delay grows at most; none: no limit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_doublings: Option<u32>,
    },
    /// Cloud Tasks: doubles `max_doublings` times, then grows linearly by
    /// `min_backoff · 2^max_doublings` per retry, capped at `max_backoff`.
    CloudTasks {
        /// Delay before the first retry (`Dur`).
        min_backoff: Dur,
        /// Cap on the delay (`Dur`).
        max_backoff: Dur,
        /// Number of doublings before growth turns linear.
        max_doublings: u32,
    },
    /// AWS "decorrelated jitter": `min(max, U(base, 3·previous))`.
    Decorrelated {
        /// Smallest delay (`Dur`).
        base: Dur,
        /// Cap on the delay (`Dur`).
        max: Dur,
    },
}

fn default_multiplier() -> f64 {
    2.0
}

impl BackoffSpec {
    /// The kinds as files name them (`constant`, `cloud_tasks`, ...), in
    /// declaration order. Read from the deserialiser itself, so a command
    /// that lists or accepts kinds (`schedule --backoff`) follows a new
    /// variant without a list of its own.
    pub fn kinds() -> &'static [&'static str] {
        static KINDS: OnceLock<&'static [&'static str]> = OnceLock::new();
        KINDS.get_or_init(|| {
            let mut names = VariantNames(None);
            let _ = BackoffSpec::deserialize(&mut names);
            names.0.expect("BackoffSpec deserialises as an enum")
        })
    }

    /// The delay before the first retry as written (`delay`, `initial`,
    /// `min_backoff`, `base`), for a search that tries other values.
    pub fn first_delay_mut(&mut self) -> &mut Dur {
        match self {
            BackoffSpec::Constant { delay } => delay,
            BackoffSpec::Linear { initial, .. } | BackoffSpec::Exponential { initial, .. } => {
                initial
            }
            BackoffSpec::CloudTasks { min_backoff, .. } => min_backoff,
            BackoffSpec::Decorrelated { base, .. } => base,
        }
    }

    /// The resolved schedule in integer nanoseconds, defaults filled in.
    pub fn resolve(&self) -> Backoff {
        match *self {
            BackoffSpec::Constant { delay } => Backoff::Constant { delay: delay.ns() },
            BackoffSpec::Linear { initial, step, max } => Backoff::Linear {
                initial: initial.ns(),
                step: step.ns(),
                max: max.map_or(u64::MAX, |m| m.ns()),
            },
            BackoffSpec::Exponential {
                initial,
                multiplier,
                max,
                max_doublings,
            } => Backoff::Exponential {
                initial: initial.ns(),
                multiplier,
                max: max.map_or(u64::MAX, |m| m.ns()),
                max_doublings: max_doublings.unwrap_or(u32::MAX),
            },
            BackoffSpec::CloudTasks {
                min_backoff,
                max_backoff,
                max_doublings,
            } => Backoff::CloudTasks {
                min_backoff: min_backoff.ns(),
                max_backoff: max_backoff.ns(),
                max_doublings,
            },
            BackoffSpec::Decorrelated { base, max } => Backoff::Decorrelated {
                base: base.ns(),
                max: max.ns(),
            },
        }
    }

    /// Checks the values serde cannot; `path` ends at `backoff`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        match self {
            BackoffSpec::Constant { .. } => {}
            BackoffSpec::Linear { initial, max, .. } => {
                if let Some(max) = max {
                    if max < initial {
                        c.err_with(
                            format!("{path}.linear.max"),
                            [format!("{path}.linear.initial")],
                            format!("{max} is less than initial ({initial})"),
                        );
                    }
                }
            }
            BackoffSpec::Exponential {
                initial,
                multiplier,
                max,
                ..
            } => {
                let p = format!("{path}.exponential");
                c.positive_dur(&format!("{p}.initial"), *initial);
                if !(multiplier.is_finite() && *multiplier >= 1.0) {
                    c.err(
                        format!("{p}.multiplier"),
                        must_be(*multiplier, "a number >= 1"),
                    );
                }
                if let Some(max) = max {
                    if max < initial {
                        c.err_with(
                            format!("{p}.max"),
                            [format!("{p}.initial")],
                            format!("{max} is less than initial ({initial})"),
                        );
                    }
                }
            }
            BackoffSpec::CloudTasks {
                min_backoff,
                max_backoff,
                ..
            } => {
                if min_backoff > max_backoff {
                    c.err_with(
                        format!("{path}.cloud_tasks.min_backoff"),
                        [format!("{path}.cloud_tasks.max_backoff")],
                        format!("{min_backoff} is greater than max_backoff ({max_backoff})"),
                    );
                }
            }
            BackoffSpec::Decorrelated { base, max } => {
                let p = format!("{path}.decorrelated");
                if base.ns() == 0 {
                    c.err(format!("{p}.base"), "must be greater than 0");
                } else if base > max {
                    c.err_with(
                        format!("{p}.base"),
                        [format!("{p}.max")],
                        format!("{base} is greater than max ({max})"),
                    );
                }
            }
        }
    }
}

/// A deserialiser that only records the variant names an enum's derived
/// `Deserialize` passes to `deserialize_enum`, then fails.
pub(super) struct VariantNames(pub(super) Option<&'static [&'static str]>);

impl<'de> de::Deserializer<'de> for &mut VariantNames {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = Some(variants);
        Err(de::Error::custom("variant names recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// A resolved backoff schedule, times in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub enum Backoff {
    /// The same delay before every retry.
    Constant {
        /// Delay before each retry, ns.
        delay: Nanos,
    },
    /// `min(max, initial + step·(n−1))`.
    Linear {
        /// Delay before the first retry, ns.
        initial: Nanos,
        /// Added to the delay at each further retry, ns.
        step: Nanos,
        /// Cap on the delay, ns (`u64::MAX`: uncapped).
        max: Nanos,
    },
    /// `min(max, initial · multiplier^min(n−1, max_doublings))`.
    Exponential {
        /// Delay before the first retry, ns.
        initial: Nanos,
        /// Growth factor per retry.
        multiplier: f64,
        /// Cap on the delay, ns (`u64::MAX`: uncapped).
        max: Nanos,
        /// How many times the delay grows at most (`u32::MAX`: no limit).
        max_doublings: u32,
    },
    /// Cloud Tasks: doubles `max_doublings` times, then grows linearly by
    /// `min_backoff · 2^max_doublings` per retry, capped at `max_backoff`.
    CloudTasks {
        /// Delay before the first retry, ns.
        min_backoff: Nanos,
        /// Cap on the delay, ns.
        max_backoff: Nanos,
        /// Number of doublings before growth turns linear.
        max_doublings: u32,
    },
    /// AWS "decorrelated jitter": `min(max, U(base, 3·previous))`; the
    /// nominal delay reported for schedules is the range's upper end.
    Decorrelated {
        /// Smallest delay, ns.
        base: Nanos,
        /// Cap on the delay, ns.
        max: Nanos,
    },
}

/// Saturating conversion of a float nanosecond count.
fn clamp_ns(x: f64) -> Nanos {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= u64::MAX as f64 {
        u64::MAX
    } else {
        round_ns(x)
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

    /// The delay before retry `n` before the cap (`max`, `max_backoff`)
    /// clips it: the schedule's own growth, `max_doublings` included.
    /// `next_step` jitter draws between two of these (see
    /// [`crate::policy::Jitter::next_bounds`]).
    pub fn uncapped(&self, n: u32) -> Nanos {
        match *self {
            Backoff::Linear { initial, step, .. } => Backoff::Linear {
                initial,
                step,
                max: u64::MAX,
            }
            .nominal(n),
            Backoff::Exponential {
                initial,
                multiplier,
                max_doublings,
                ..
            } => Backoff::Exponential {
                initial,
                multiplier,
                max: u64::MAX,
                max_doublings,
            }
            .nominal(n),
            Backoff::CloudTasks {
                min_backoff,
                max_doublings,
                ..
            } => cloud_tasks_interval(n, min_backoff, u64::MAX, max_doublings),
            Backoff::Constant { .. } | Backoff::Decorrelated { .. } => self.nominal(n),
        }
    }

    /// The cap on the delay (`u64::MAX`: none).
    pub fn cap(&self) -> Nanos {
        match *self {
            Backoff::Constant { .. } => u64::MAX,
            Backoff::Linear { max, .. } | Backoff::Exponential { max, .. } => max,
            Backoff::CloudTasks { max_backoff, .. } => max_backoff,
            Backoff::Decorrelated { max, .. } => max,
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

    /// The delays from retry `from` (1-based, above 64) on, as a
    /// progression `retrysim schedule` sums in closed form.
    pub(super) fn tail(&self, from: u64) -> Tail {
        debug_assert!(from > 64, "doubling phases end within 64 retries");
        let k = u32::try_from(from).unwrap_or(u32::MAX);
        let here = self.nominal(k) as f64;
        let flat = Tail::Arithmetic {
            first: here,
            step: 0.0,
            cap: here,
        };
        match *self {
            Backoff::Constant { .. } => flat,
            Backoff::Linear { step, max, .. } => Tail::Arithmetic {
                first: here,
                step: step as f64,
                cap: max as f64,
            },
            Backoff::Exponential {
                initial,
                multiplier,
                max,
                max_doublings,
            } if k - 1 < max_doublings => Tail::Geometric {
                first: initial as f64 * multiplier.powf(f64::from(k - 1)),
                ratio: multiplier,
                cap: (max as f64).min(initial as f64 * multiplier.powf(f64::from(max_doublings))),
            },
            // Still doubling past the 64th retry: capped.
            Backoff::CloudTasks {
                min_backoff,
                max_backoff,
                max_doublings,
            } if k > max_doublings => Tail::Arithmetic {
                first: here,
                step: min_backoff as f64 * 2f64.powf(f64::from(max_doublings)),
                cap: max_backoff as f64,
            },
            Backoff::CloudTasks { .. }
            | Backoff::Decorrelated { .. }
            | Backoff::Exponential { .. } => flat,
        }
    }

    /// Whether every delay of the schedule is zero, so retries on it take
    /// no time at all.
    pub fn is_zero(&self) -> bool {
        match *self {
            Backoff::Constant { delay } => delay == 0,
            Backoff::Linear { initial, step, max } => max == 0 || (initial == 0 && step == 0),
            Backoff::Exponential { initial, max, .. } => initial == 0 || max == 0,
            Backoff::CloudTasks {
                min_backoff,
                max_backoff,
                ..
            } => min_backoff == 0 || max_backoff == 0,
            Backoff::Decorrelated { max, .. } => max == 0,
        }
    }

    /// The schedule in words: `exponential 100ms ×2, max 10s`.
    pub fn describe(&self) -> String {
        match *self {
            Backoff::Constant { delay } => format!("constant {}", ns(delay)),
            Backoff::Linear { initial, step, max } => {
                format!(
                    "linear {} + {} per retry, max {}",
                    ns(initial),
                    ns(step),
                    ns(max)
                )
            }
            Backoff::Exponential {
                initial,
                multiplier,
                max,
                max_doublings,
            } => {
                let mut s = format!("exponential {} ×{}", ns(initial), num(multiplier));
                if max != u64::MAX {
                    s.push_str(&format!(", max {}", ns(max)));
                }
                if max_doublings != u32::MAX {
                    s.push_str(&format!(", {max_doublings} doublings"));
                }
                s
            }
            Backoff::CloudTasks {
                min_backoff,
                max_backoff,
                max_doublings,
            } => format!(
                "Cloud Tasks {}–{}, {max_doublings} doublings",
                ns(min_backoff),
                ns(max_backoff)
            ),
            Backoff::Decorrelated { base, max } => {
                format!("decorrelated {}–{}", ns(base), ns(max))
            }
        }
    }
}

/// A delay as written, `∞` for "no cap".
fn ns(n: Nanos) -> String {
    if n == u64::MAX {
        "∞".into()
    } else {
        format_duration(n)
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
    fn kinds_are_the_names_files_use() {
        assert_eq!(
            BackoffSpec::kinds(),
            [
                "constant",
                "linear",
                "exponential",
                "cloud_tasks",
                "decorrelated"
            ]
        );
        for kind in BackoffSpec::kinds() {
            let e = serde_json::from_str::<BackoffSpec>(&format!("{{\"{kind}\": {{}}}}"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("missing field"), "{kind}: {e}");
        }
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
    fn uncapped_is_the_growth_before_the_cap() {
        let ms = 1_000_000;
        let b = Backoff::Exponential {
            initial: 10 * ms,
            multiplier: 2.0,
            max: S,
            max_doublings: u32::MAX,
        };
        assert_eq!((b.nominal(8), b.uncapped(8), b.cap()), (S, 1280 * ms, S));
        let ct = Backoff::CloudTasks {
            min_backoff: 10 * S,
            max_backoff: 300 * S,
            max_doublings: 3,
        };
        // 10, 20, 40, 80, 160, 240, 320 (capped to 300), 400 (300).
        assert_eq!((ct.uncapped(7), ct.uncapped(8)), (320 * S, 400 * S));
        let lin = Backoff::Linear {
            initial: S,
            step: 2 * S,
            max: 6 * S,
        };
        assert_eq!((lin.uncapped(5), lin.cap()), (9 * S, 6 * S));
        let c = Backoff::Constant { delay: S };
        assert_eq!((c.uncapped(9), c.cap()), (S, u64::MAX));
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
