//! Jitter: randomisation of a backoff delay so that requests that failed
//! together do not retry together. The kind as written ([`JitterSpec`]),
//! its check and wording, and the resolved form ([`Jitter`]) live here.
//!
//! `next_step` and `next_step_capped` are the kinds that look at the
//! schedule, not only at the delay: retry n waits between its own nominal
//! delay and the next one. `next_step` is the function of "Cloud Native
//! Patterns Illustrated: Retry Pattern" exactly: with `d(n)` the delay
//! before the cap, it returns the cap when `d(n)` *exceeds* it and
//! otherwise draws from `[d(n), d(n+1))` with no cap on the upper end, so
//! with 10 ms doubling and a 1 s cap retry 7 is drawn from
//! [640 ms, 1.28 s) and retry 8 and later wait exactly 1 s.
//! `next_step_capped` caps both ends: `U(min(d(n), cap), min(d(n+1), cap))`
//! (retry 7 above from [640 ms, 1 s)). Either way, once the schedule is past
//! its cap no randomness is left, so requests that fail together there
//! retry together for ever after.

use super::backoff::VariantNames;
use super::Backoff;
use crate::check::Problems;
use crate::decimal::num;
use crate::time::{ns_f64, trunc_ns, Nanos};
use serde::de;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Randomisation applied to a backoff delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterSpec {
    /// No jitter: the delay d as scheduled.
    #[default]
    None,
    /// U(0, d).
    Full,
    /// d/2 + U(0, d/2).
    Equal,
    /// d · U(1 − f, 1 + f).
    Proportional(f64),
    /// U(d(n), d(n+1)) with d before the cap; exactly the cap once d(n)
    /// exceeds it (the article's function).
    NextStep,
    /// U(min(d(n), cap), min(d(n+1), cap)): both ends capped.
    NextStepCapped,
}

impl JitterSpec {
    /// The kinds as files name them (`none`, `next_step`, ...), in
    /// declaration order, read from the deserialiser itself (as
    /// [`super::BackoffSpec::kinds`]).
    pub fn kinds() -> &'static [&'static str] {
        static KINDS: OnceLock<&'static [&'static str]> = OnceLock::new();
        KINDS.get_or_init(|| {
            let mut names = VariantNames(None);
            let _ = JitterSpec::deserialize(&mut names);
            names.0.expect("JitterSpec deserialises as an enum")
        })
    }

    /// The kinds a file (or `retrysim schedule --jitter`) names by a bare
    /// word, with their value: every kind but those that take a value
    /// (`proportional`'s factor). A new kind without fields joins it by
    /// itself.
    pub fn named() -> Vec<(&'static str, JitterSpec)> {
        JitterSpec::kinds()
            .iter()
            .filter_map(|&k| {
                let word = de::value::StrDeserializer::<de::value::Error>::new(k);
                Some((k, JitterSpec::deserialize(word).ok()?))
            })
            .collect()
    }

    /// Checks the values serde cannot; `path` ends at `jitter`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        if let JitterSpec::Proportional(f) = *self {
            c.fraction(&format!("{path}.proportional"), f, ", e.g. 0.1 for ±10%");
        }
    }
}

/// A resolved jitter mode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// The delay as computed.
    None,
    /// `U(0, d)`.
    Full,
    /// `d/2 + U(0, d/2)`.
    Equal,
    /// `d · U(1 − f, 1 + f)`.
    Proportional(f64),
    /// `U(d(n), d(n+1))`, d before the cap; the cap once d(n) exceeds it.
    NextStep,
    /// `U(min(d(n), cap), min(d(n+1), cap))`.
    NextStepCapped,
}

impl From<JitterSpec> for Jitter {
    fn from(j: JitterSpec) -> Jitter {
        match j {
            JitterSpec::None => Jitter::None,
            JitterSpec::Full => Jitter::Full,
            JitterSpec::Equal => Jitter::Equal,
            JitterSpec::Proportional(f) => Jitter::Proportional(f),
            JitterSpec::NextStep => Jitter::NextStep,
            JitterSpec::NextStepCapped => Jitter::NextStepCapped,
        }
    }
}

impl Jitter {
    /// Applies the jitter to delay `d` with a uniform draw `u` in [0, 1)
    /// (`next_step` without a next delay: `d` itself).
    pub fn apply(self, d: Nanos, u: f64) -> Nanos {
        self.apply_next(d, d, u)
    }

    /// The two delays `next_step` (or `next_step_capped`) draws between
    /// before retry `n` of `backoff`, for [`Jitter::apply_next`]; any
    /// other jitter: the nominal delay twice.
    pub fn next_bounds(self, backoff: &Backoff, n: u32) -> (Nanos, Nanos) {
        let next = n.saturating_add(1);
        match self {
            Jitter::NextStep => {
                let (d, cap) = (backoff.uncapped(n), backoff.cap());
                if d > cap {
                    (cap, cap)
                } else {
                    (d, backoff.uncapped(next))
                }
            }
            Jitter::NextStepCapped => (backoff.nominal(n), backoff.nominal(next)),
            _ => (backoff.nominal(n), backoff.nominal(n)),
        }
    }

    /// Applies the jitter to `d`, the nominal delay of this retry, when the
    /// next retry's nominal delay is `next`; only the next-step kinds use
    /// it (`next` from [`Jitter::next_bounds`]).
    pub fn apply_next(self, d: Nanos, next: Nanos, u: f64) -> Nanos {
        let df = ns_f64(d);
        let out = match self {
            Jitter::None => return d,
            Jitter::NextStep | Jitter::NextStepCapped => {
                if next <= d {
                    return d;
                }
                df + u * ns_f64(next - d)
            }
            Jitter::Full => u * df,
            Jitter::Equal => df / 2.0 + u * df / 2.0,
            Jitter::Proportional(f) => df * (1.0 - f + 2.0 * f * u),
        };
        trunc_ns(out)
    }

    /// The smallest and largest delay the jitter can turn `d` into.
    pub fn range(self, d: Nanos) -> (Nanos, Nanos) {
        (self.apply(d, 0.0), self.apply(d, 1.0))
    }

    /// The same when the next retry's nominal delay is `next`.
    pub fn range_next(self, d: Nanos, next: Nanos) -> (Nanos, Nanos) {
        (self.apply_next(d, next, 0.0), self.apply_next(d, next, 1.0))
    }

    /// Whether the delay depends on the next retry's nominal delay.
    pub fn needs_next(self) -> bool {
        matches!(self, Jitter::NextStep | Jitter::NextStepCapped)
    }

    /// The jitter in words: `none`, `full`, `±10%`.
    pub fn describe(self) -> String {
        match self {
            Jitter::None => "none".into(),
            Jitter::Full => "full".into(),
            Jitter::Equal => "equal".into(),
            Jitter::Proportional(f) => format!("±{}%", num(100.0 * f)),
            Jitter::NextStep => "next step".into(),
            Jitter::NextStepCapped => "next step capped".into(),
        }
    }

    /// The jitter as a formula over the nominal delay d, as `retrysim
    /// schedule` states it: `full U(0, d)`.
    pub fn formula(self) -> String {
        match self {
            Jitter::None => "none".to_string(),
            Jitter::Full => "full U(0, d)".to_string(),
            Jitter::Equal => "equal d/2 + U(0, d/2)".to_string(),
            Jitter::Proportional(f) => format!("proportional d·U({}, {})", 1.0 - f, 1.0 + f),
            Jitter::NextStep => {
                "next step U(d(n), d(n+1)) with d before the cap, the cap once d(n) exceeds it"
                    .to_string()
            }
            Jitter::NextStepCapped => {
                "next step capped U(min(d(n), cap), min(d(n+1), cap))".to_string()
            }
        }
    }

    /// Whether the jitter draws a random number at all.
    pub fn is_random(self) -> bool {
        !matches!(self, Jitter::None) && self != Jitter::Proportional(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_the_names_files_use() {
        assert_eq!(
            JitterSpec::kinds(),
            [
                "none",
                "full",
                "equal",
                "proportional",
                "next_step",
                "next_step_capped"
            ]
        );
        let named: Vec<&str> = JitterSpec::named().iter().map(|&(k, _)| k).collect();
        assert_eq!(
            named,
            ["none", "full", "equal", "next_step", "next_step_capped"]
        );
        for (k, j) in JitterSpec::named() {
            let json = serde_json::to_value(j).unwrap();
            assert_eq!(json, serde_json::Value::String(k.into()), "{k}");
        }
    }
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_jitter_stays_in_its_range(d in 0u64..10_000_000_000_000, u in 0.0f64..1.0, f in 0.0f64..1.0) {
            let full = Jitter::Full.apply(d, u);
            prop_assert!(full <= d);
            let equal = Jitter::Equal.apply(d, u);
            prop_assert!(equal >= d / 2 && equal <= d);
            let p = Jitter::Proportional(f).apply(d, u);
            let lo = (d as f64 * (1.0 - f)).floor() as u64;
            let hi = (d as f64 * (1.0 + f)).ceil() as u64;
            prop_assert!(p >= lo.saturating_sub(1) && p <= hi);
            prop_assert_eq!(Jitter::None.apply(d, u), d);
        }
    }

    proptest! {
        #[test]
        fn next_step_stays_between_this_delay_and_the_next(
            initial in 1u64..1_000_000_000, doublings in 0u32..12, n in 1u32..20, u in 0.0f64..1.0,
        ) {
            // Exponential ×2 capped after `doublings` doublings.
            let b = crate::policy::Backoff::Exponential {
                initial, multiplier: 2.0, max: initial << doublings, max_doublings: u32::MAX,
            };
            let cap = initial << doublings;
            let (d, next) = (b.nominal(n), b.nominal(n + 1));
            let got = Jitter::NextStepCapped.apply_next(d, next, u);
            if d == cap {
                // At the cap: exactly the cap, whatever the draw.
                prop_assert_eq!(got, cap);
            } else {
                prop_assert!(got >= d && got < next, "{} not in [{}, {})", got, d, next);
            }
            // The article's function: the cap only once the uncapped delay
            // exceeds it, otherwise [d(n), 2·d(n)) even past the cap.
            let (lo, hi) = Jitter::NextStep.next_bounds(&b, n);
            let got = Jitter::NextStep.apply_next(lo, hi, u);
            let raw = u128::from(initial) << (n - 1);
            if raw > u128::from(cap) {
                prop_assert_eq!(got, cap);
            } else {
                let got = u128::from(got);
                prop_assert!(got >= raw && got < 2 * raw, "{} not in [{}, {})", got, raw, 2 * raw);
            }
        }
    }

    #[test]
    fn next_step_is_the_articles_function() {
        // 10 ms doubling, cap 1 s: retry 7 from [640 ms, 1.28 s), retry 8
        // (1.28 s > 1 s) exactly the cap.
        let ms = 1_000_000;
        let b = |cap| Backoff::Exponential {
            initial: 10 * ms,
            multiplier: 2.0,
            max: cap,
            max_doublings: u32::MAX,
        };
        let j = Jitter::NextStep;
        let (lo, hi) = j.next_bounds(&b(1000 * ms), 7);
        assert_eq!((lo, hi), (640 * ms, 1280 * ms));
        assert_eq!(j.range_next(lo, hi), (640 * ms, 1280 * ms));
        assert_eq!(j.next_bounds(&b(1000 * ms), 8), (1000 * ms, 1000 * ms));
        // Cap 1.28 s: retry 8's 1.28 s does not exceed it, so it is drawn
        // from [1.28 s, 2.56 s); retry 9 is the cap.
        assert_eq!(j.next_bounds(&b(1280 * ms), 8), (1280 * ms, 2560 * ms));
        assert_eq!(j.next_bounds(&b(1280 * ms), 9), (1280 * ms, 1280 * ms));
        // The capped variant keeps both ends under the cap.
        let c = Jitter::NextStepCapped;
        assert_eq!(c.next_bounds(&b(1000 * ms), 7), (640 * ms, 1000 * ms));
        assert_eq!(c.next_bounds(&b(1280 * ms), 8), (1280 * ms, 1280 * ms));
        assert_eq!(c.describe(), "next step capped");
    }

    #[test]
    fn next_step_by_hand() {
        // 100 ms, 200 ms, 400 ms (cap): U(100, 200), U(200, 400), 400, 400.
        let j = Jitter::NextStep;
        let ms = 1_000_000;
        assert_eq!(j.apply_next(100 * ms, 200 * ms, 0.0), 100 * ms);
        assert_eq!(j.apply_next(100 * ms, 200 * ms, 0.25), 125 * ms);
        assert_eq!(j.apply_next(200 * ms, 400 * ms, 0.5), 300 * ms);
        assert_eq!(j.apply_next(400 * ms, 400 * ms, 0.999), 400 * ms);
        assert_eq!(j.range_next(400 * ms, 400 * ms), (400 * ms, 400 * ms));
        assert_eq!(j.describe(), "next step");
    }

    #[test]
    fn ten_percent_on_100ms_spans_20ms() {
        let (lo, hi) = Jitter::Proportional(0.1).range(100_000_000);
        assert_eq!((lo, hi), (90_000_000, 110_000_000));
    }
}
