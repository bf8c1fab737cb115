//! Simulation time and the duration strings of scenario files.
//!
//! Time is an integer count of nanoseconds from the start of a run, so a run
//! never accumulates floating-point drift and two events at "the same" time
//! really are at the same time. Scenario files write durations as strings with
//! units (`"250us"`, `"1.5s"`, `"14m"`) or as a bare number of seconds.

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Simulation time or a span of it, in nanoseconds.
pub type Nanos = u64;

/// Nanoseconds in one second.
pub const NS_PER_SEC: u64 = 1_000_000_000;

/// Converts nanoseconds to (floating) seconds, for reports.
#[inline]
pub fn secs(ns: Nanos) -> f64 {
    ns_f64(ns) / NS_PER_SEC as f64
}

/// `ns as f64`, exactly, in one instruction on x86-64 below 2⁶³: baseline
/// x86-64 converts between floats and *signed* 64-bit integers only, so a
/// `u64` conversion is a sequence of them, and a slow one on the path from
/// a random draw to its event.
#[inline]
pub fn ns_f64(ns: Nanos) -> f64 {
    if ns <= i64::MAX as Nanos {
        ns as i64 as f64
    } else {
        ns as f64
    }
}

/// `x as Nanos` (truncating toward zero; negatives and NaN give 0, too
/// large gives `Nanos::MAX`), exactly, through `i64` below 2⁶³ as
/// [`ns_f64`].
#[inline]
pub fn trunc_ns(x: f64) -> Nanos {
    if (0.0..9_223_372_036_854_775_808.0).contains(&x) {
        x as i64 as Nanos
    } else {
        x as Nanos
    }
}

/// Converts (floating) seconds to nanoseconds, rounding to the nearest and
/// saturating at the ends of the range.
pub fn from_secs(s: f64) -> Nanos {
    if s.is_nan() || s <= 0.0 {
        return 0;
    }
    let ns = s * NS_PER_SEC as f64;
    if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        round_ns(ns)
    }
}

/// `x.round() as Nanos` for `0 ≤ x < 2⁶⁴` (halves away from zero), without
/// the library call `f64::round` becomes on baseline x86-64; random
/// durations are rounded by it on every draw. Exact: the truncation is
/// an integer the float holds exactly (below 2⁵³ any integer is
/// representable, above it `x` is itself an integer), so the fraction
/// `x − trunc(x)` is computed without rounding. Below 2⁶³ (292 years:
/// every duration a run draws) it converts through `i64`, one instruction
/// each way on x86-64. It checks that range once rather than calling
/// [`trunc_ns`] and [`ns_f64`], which check it once each: measured, the
/// second check cost about 4 % of a sweep's time.
#[inline]
pub fn round_ns(x: f64) -> Nanos {
    debug_assert!((0.0..18_446_744_073_709_551_616.0).contains(&x));
    if x < 9_223_372_036_854_775_808.0 {
        let whole = x as i64;
        return (whole + i64::from(x - whole as f64 >= 0.5)) as Nanos;
    }
    let whole = x as Nanos;
    whole + Nanos::from(x - whole as f64 >= 0.5)
}

/// A non-negative duration read from a scenario file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub Nanos);

impl Dur {
    /// The duration in nanoseconds.
    pub fn ns(self) -> Nanos {
        self.0
    }
    /// The duration in seconds.
    pub fn secs(self) -> f64 {
        secs(self.0)
    }
    /// A duration of whole seconds.
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * NS_PER_SEC)
    }
    /// A duration of whole milliseconds.
    pub const fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
}

/// The largest duration a scenario may name (about 292 years would overflow
/// u64 nanoseconds; a century is more than any retry window).
const MAX_SECS: f64 = 100.0 * 365.0 * 86_400.0;

/// Why a duration string was refused; the message quotes the text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Nothing but white space.
    #[error("empty duration")]
    Empty,
    /// The part before the unit is not a number.
    #[error("invalid duration {0:?}: expected a number with a unit such as \"250ms\", \"1.5s\" or \"2m\"")]
    NotANumber(String),
    /// A unit this parser does not know.
    #[error("invalid duration {text:?}: unknown unit {unit:?} (use ns, us, ms, s, m, h or d, in lower case)")]
    UnknownUnit {
        /// The duration as written.
        text: String,
        /// The unit as written.
        unit: String,
    },
    /// Infinite or NaN.
    #[error("invalid duration {0:?}: not a finite number")]
    NotFinite(String),
    /// Less than zero.
    #[error("negative duration {0:?}: durations must be >= 0")]
    Negative(String),
    /// Longer than a century.
    #[error("duration {0:?} is too long (at most 100 years)")]
    TooLong(String),
    /// Above zero but under half a nanosecond, the clock's resolution: it
    /// would round to 0.
    #[error("duration {0:?} is below the clock's resolution of 1 ns and would round to 0; write 0s or at least 1ns")]
    BelowResolution(String),
}

/// Parses `"250us"`, `"100ms"`, `"1.5s"`, `"90s"`, `"14m"`, `"1h"`, `"2d"`,
/// `"10ns"`, or a bare number of seconds (`"0.5"`).
pub fn parse_duration(text: &str) -> Result<Dur, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    let split = t
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
        })
        .unwrap_or(t.len());
    // "1e3s" style exponents are fine, but "e" could also not be a unit, so
    // only numeric parsing decides.
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| DurationError::NotANumber(text.to_string()))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hours" => 3600.0,
        "d" | "days" => 86_400.0,
        other => {
            return Err(DurationError::UnknownUnit {
                text: text.to_string(),
                unit: other.to_string(),
            })
        }
    };
    secs_to_dur(value * scale, text)
}

fn secs_to_dur(s: f64, text: &str) -> Result<Dur, DurationError> {
    if !s.is_finite() {
        return Err(DurationError::NotFinite(text.to_string()));
    }
    if s < 0.0 {
        return Err(DurationError::Negative(text.to_string()));
    }
    if s > MAX_SECS {
        return Err(DurationError::TooLong(text.to_string()));
    }
    let ns = from_secs(s);
    if ns == 0 && s > 0.0 {
        return Err(DurationError::BelowResolution(text.to_string()));
    }
    Ok(Dur(ns))
}

/// Formats a duration the way a person would write it in a scenario file.
pub fn format_duration(ns: Nanos) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let units: [(u64, &str); 6] = [
        (3600 * NS_PER_SEC, "h"),
        (60 * NS_PER_SEC, "m"),
        (NS_PER_SEC, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (size, name) in units {
        if ns.is_multiple_of(size) {
            return format!("{}{}", ns / size, name);
        }
    }
    unreachable!("1 divides everything")
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_duration(self.0))
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

struct DurVisitor;

impl Visitor<'_> for DurVisitor {
    type Value = Dur;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"250ms\", \"1.5s\", \"2m\" or a number of seconds")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
        parse_duration(v).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
        // A huge number of seconds is quoted in exponent form, not as its
        // thirty digits.
        secs_to_dur(v, &crate::decimal::Given(v).to_string()).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
        secs_to_dur(v as f64, &v.to_string()).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Dur, E> {
        secs_to_dur(v as f64, &v.to_string()).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        d.deserialize_any(DurVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_ns_rounds_like_f64_round_at_the_edges() {
        let below_half = 0.5 - f64::EPSILON / 4.0; // 0.49999999999999994
        let cases = [
            0.0,
            below_half,
            0.5,
            1.5,
            2.5,
            1.0 - f64::EPSILON / 2.0,
            4_503_599_627_370_495.5, // 2^52 - 0.5: the last half
            4_503_599_627_370_497.0,
            9_007_199_254_740_993.0,     // above 2^53
            9_223_372_036_854_774_784.0, // the last float below 2^63
            9_223_372_036_854_775_808.0, // 2^63: the u64 path
            1.8e19,
        ];
        for x in cases {
            assert_eq!(round_ns(x), x.round() as Nanos, "{x:e}");
        }
        assert_eq!(round_ns(below_half), 0);
        assert_eq!(round_ns(2.5), 3);
    }

    #[test]
    fn conversions_match_as_at_the_edges() {
        let two63 = 9_223_372_036_854_775_808.0;
        for x in [
            -1.0,
            -0.5,
            f64::NAN,
            0.0,
            0.99,
            1.0,
            two63 - 1024.0,
            two63,
            1.8e19,
            1e30,
        ] {
            assert_eq!(trunc_ns(x), x as Nanos, "{x:e}");
        }
        let max_i = i64::MAX as Nanos;
        for ns in [0, 1, (1 << 53) + 1, max_i, max_i + 1, Nanos::MAX] {
            assert_eq!(ns_f64(ns).to_bits(), (ns as f64).to_bits(), "{ns}");
        }
    }

    proptest! {
        #[test]
        fn ns_f64_is_as_f64(ns in any::<u64>(), shift in 0u32..64) {
            let ns = ns >> shift; // every magnitude
            prop_assert_eq!(ns_f64(ns).to_bits(), (ns as f64).to_bits());
        }

        #[test]
        fn trunc_ns_is_as_nanos(bits in any::<u64>()) {
            // Every float, negatives, infinities and NaNs included.
            let x = f64::from_bits(bits);
            prop_assert_eq!(trunc_ns(x), x as Nanos);
        }

        #[test]
        fn round_ns_is_f64_round(bits in 0u64..0x43F0_0000_0000_0000) {
            // Every non-negative float below 2^64, uniform over its bits
            // so every magnitude is tried.
            let x = f64::from_bits(bits);
            prop_assert_eq!(round_ns(x), x.round() as Nanos);
        }

        #[test]
        fn round_ns_is_f64_round_near_halves(n in 0u64..1 << 52, ulps in -2i64..=2) {
            let x = f64::from_bits(((n as f64) + 0.5).to_bits().wrapping_add_signed(ulps));
            prop_assert_eq!(round_ns(x), x.round() as Nanos);
        }
    }

    #[test]
    fn a_duration_under_the_clocks_resolution_is_refused() {
        assert!(matches!(
            parse_duration("0.4ns"),
            Err(DurationError::BelowResolution(_))
        ));
        assert_eq!(parse_duration("0.5ns").unwrap().ns(), 1);
        assert_eq!(parse_duration("0ns").unwrap().ns(), 0);
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_duration("250us").unwrap().ns(), 250_000);
        assert_eq!(parse_duration("100ms").unwrap().ns(), 100_000_000);
        assert_eq!(parse_duration("1.5s").unwrap().ns(), 1_500_000_000);
        assert_eq!(parse_duration("90s").unwrap().ns(), 90 * NS_PER_SEC);
        assert_eq!(parse_duration("14m").unwrap().ns(), 840 * NS_PER_SEC);
        assert_eq!(parse_duration("1h").unwrap().ns(), 3600 * NS_PER_SEC);
        assert_eq!(parse_duration("0.100s").unwrap().ns(), 100_000_000);
        assert_eq!(parse_duration("2").unwrap().ns(), 2 * NS_PER_SEC);
        assert_eq!(parse_duration("10ns").unwrap().ns(), 10);
    }

    #[test]
    fn rejects_bad_durations() {
        for bad in ["", "-1s", "abc", "10 parsecs", "1.2.3s", "NaNs", "inf"] {
            assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
        }
        assert_eq!(
            parse_duration("-5ms").unwrap_err().to_string(),
            "negative duration \"-5ms\": durations must be >= 0"
        );
        assert!(matches!(
            parse_duration("10 parsecs"),
            Err(DurationError::UnknownUnit { unit, .. }) if unit == "parsecs"
        ));
    }

    #[test]
    fn formats_round_trip() {
        for text in ["0s", "250us", "100ms", "90s", "14m", "1h", "1500ms", "7ns"] {
            let d = parse_duration(text).unwrap();
            assert_eq!(format_duration(d.ns()), text);
        }
    }

    #[test]
    fn deserializes_numbers_as_seconds() {
        let d: Dur = serde_json::from_str("1.5").unwrap();
        assert_eq!(d.ns(), 1_500_000_000);
        let d: Dur = serde_json::from_str("\"2m\"").unwrap();
        assert_eq!(d.ns(), 120 * NS_PER_SEC);
        assert!(serde_json::from_str::<Dur>("-3").is_err());
        // Too long, and quoted as written, not as thirty-one digits.
        let err = serde_json::from_str::<Dur>("1e30").unwrap_err().to_string();
        assert!(err.contains("\"1e30\" is too long"), "{err}");
    }
}
