//! Jitter: randomisation of a backoff delay so that requests that failed
//! together do not retry together. The kind as written ([`JitterSpec`]),
//! its check and wording, and the resolved form ([`Jitter`]) live here.

use crate::check::Problems;
use crate::decimal::num;
use crate::time::Nanos;
use serde::{Deserialize, Serialize};

/// Randomisation applied to a backoff delay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JitterSpec {
    #[default]
    None,
    Full,
    Equal,
    /// d · U(1 − f, 1 + f).
    Proportional(f64),
}

impl JitterSpec {
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
}

impl From<JitterSpec> for Jitter {
    fn from(j: JitterSpec) -> Jitter {
        match j {
            JitterSpec::None => Jitter::None,
            JitterSpec::Full => Jitter::Full,
            JitterSpec::Equal => Jitter::Equal,
            JitterSpec::Proportional(f) => Jitter::Proportional(f),
        }
    }
}

impl Jitter {
    /// Applies the jitter to delay `d` with a uniform draw `u` in [0, 1).
    pub fn apply(self, d: Nanos, u: f64) -> Nanos {
        let df = d as f64;
        let out = match self {
            Jitter::None => return d,
            Jitter::Full => u * df,
            Jitter::Equal => df / 2.0 + u * df / 2.0,
            Jitter::Proportional(f) => df * (1.0 - f + 2.0 * f * u),
        };
        if out <= 0.0 {
            0
        } else if out >= u64::MAX as f64 {
            u64::MAX
        } else {
            out as Nanos
        }
    }

    /// The smallest and largest delay the jitter can turn `d` into.
    pub fn range(self, d: Nanos) -> (Nanos, Nanos) {
        (self.apply(d, 0.0), self.apply(d, 1.0))
    }

    /// The jitter in words: `none`, `full`, `±10%`.
    pub fn describe(self) -> String {
        match self {
            Jitter::None => "none".into(),
            Jitter::Full => "full".into(),
            Jitter::Equal => "equal".into(),
            Jitter::Proportional(f) => format!("±{}%", num(100.0 * f)),
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

    #[test]
    fn ten_percent_on_100ms_spans_20ms() {
        let (lo, hi) = Jitter::Proportional(0.1).range(100_000_000);
        assert_eq!((lo, hi), (90_000_000, 110_000_000));
    }
}
