//! Value ranges on the command line: `A..B:N` is N evenly spaced values
//! from A to B inclusive, for numbers (`100..300:11`) and durations
//! (`2s..60s:12`). `sweep --set`, `map --x` and `map --y` expand them into
//! the same list a person would have typed.
//!
//! Each value is written back as text the scenario loader reads: numbers by
//! the report's number rule ([`crate::decimal::num`]), durations in the
//! finer of the two ends' units (`500ms..2s:4` gives `500ms`, `1000ms`,
//! `1500ms`, `2000ms`), so the value written in an output file is exactly
//! the value the scenario was given.

use crate::decimal::num;
use crate::time::{parse_duration, NS_PER_SEC};
use std::collections::HashMap;

/// Most values one range may expand to.
pub const MAX_VALUES: usize = 10_000;

use crate::scenario::error::shown;

/// One end of a range: a plain number, or a duration with the unit it was
/// written in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// A number as written.
    Number(f64),
    /// A duration in nanoseconds, and its unit's size in nanoseconds and
    /// spelling (`"ms"`).
    Duration {
        /// The duration, ns.
        ns: u64,
        /// Size of the unit it was written in, ns.
        unit_ns: u64,
        /// The unit's spelling (`"ms"`).
        unit: &'static str,
    },
}

/// The duration units a range end may carry, as (spelling, size in ns);
/// the aliases `time::parse_duration` knows map to one spelling each.
const UNITS: [(&[&str], &str, u64); 7] = [
    (&["ns"], "ns", 1),
    (&["us", "µs"], "us", 1_000),
    (&["ms"], "ms", 1_000_000),
    (&["s", "sec", "secs"], "s", NS_PER_SEC),
    (&["m", "min", "mins"], "m", 60 * NS_PER_SEC),
    (&["h", "hr", "hours"], "h", 3600 * NS_PER_SEC),
    (&["d", "days"], "d", 86_400 * NS_PER_SEC),
];

/// Whether `text` is written as a range (`A..B:N`, or a malformed attempt
/// at one): it has `..` and is not JSON (an object, array or string).
pub fn looks_like_range(text: &str) -> bool {
    let t = text.trim();
    t.contains("..") && !t.starts_with(['{', '[', '"'])
}

/// A grid value as written (`17.888889s`, `280`): its number in the unit
/// it was written in, and that unit's spelling (empty for a plain number);
/// `None` for anything else (`fifo`, JSON).
pub fn value_and_unit(text: &str) -> Option<(f64, &'static str)> {
    match parse_end(text, text).ok()? {
        End::Number(v) => Some((v, "")),
        End::Duration { ns, unit_ns, unit } => Some((ns as f64 / unit_ns as f64, unit)),
    }
}

/// Parses one end: a number, or a number with a duration unit.
fn parse_end(text: &str, end: &str) -> Result<End, RangeError> {
    let e = end.trim();
    if let Ok(v) = e.parse::<f64>() {
        if v.is_finite() {
            return Ok(End::Number(v));
        }
    }
    let split = e
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+')))
        .unwrap_or(e.len());
    let unit_text = e[split..].trim();
    let bad_end = || RangeError::BadEnd {
        text: text.to_string(),
        end: end.to_string(),
    };
    let (_, unit, unit_ns) = UNITS
        .iter()
        .find(|(names, _, _)| names.contains(&unit_text))
        .ok_or_else(bad_end)?;
    if e[..split].trim().parse::<f64>().is_err() {
        return Err(bad_end());
    }
    let d = parse_duration(e).map_err(|why| RangeError::BadDuration {
        text: text.to_string(),
        why: why.to_string(),
    })?;
    Ok(End::Duration {
        ns: d.ns(),
        unit_ns: *unit_ns,
        unit,
    })
}

/// Expands `A..B:N` into its N values, as text. `Ok(None)` when `text` is
/// not written as a range at all (see [`looks_like_range`]).
pub fn expand(text: &str) -> Result<Option<Vec<String>>, RangeError> {
    if !looks_like_range(text) {
        return Ok(None);
    }
    let t = text.trim();
    let (ends, count) = t
        .rsplit_once(':')
        .ok_or_else(|| RangeError::NoCount(t.to_string()))?;
    let (a, b) = ends
        .split_once("..")
        .ok_or_else(|| RangeError::NoCount(t.to_string()))?;
    if b.starts_with('.') {
        return Err(RangeError::BadEnd {
            text: t.to_string(),
            end: b.to_string(),
        });
    }
    let bad_count = || RangeError::BadCount {
        text: t.to_string(),
        count: count.to_string(),
        max: MAX_VALUES,
    };
    let n: usize = count.trim().parse().map_err(|_| bad_count())?;
    if n == 0 || n > MAX_VALUES {
        return Err(bad_count());
    }
    let (ea, eb) = (parse_end(t, a)?, parse_end(t, b)?);
    let values = match (ea, eb) {
        (End::Number(x), End::Number(y)) => written(&spaced(t, x, y, n)?),
        (
            End::Duration {
                ns: x,
                unit_ns: ua,
                unit: na,
            },
            End::Duration {
                ns: y,
                unit_ns: ub,
                unit: nb,
            },
        ) => {
            // The finer unit of the two, so both ends keep their value.
            let (unit_ns, unit) = if ua <= ub { (ua, na) } else { (ub, nb) };
            let scale = unit_ns as f64;
            // Whole nanoseconds, written in the chosen unit.
            let in_unit: Vec<f64> = spaced(t, x as f64, y as f64, n)?
                .into_iter()
                .map(|ns| ns.round() / scale)
                .collect();
            written(&in_unit)
                .into_iter()
                .map(|v| format!("{v}{unit}"))
                .collect()
        }
        _ => {
            return Err(RangeError::Mixed {
                text: t.to_string(),
                a: a.trim().to_string(),
                b: b.trim().to_string(),
            })
        }
    };
    Ok(Some(values))
}

/// Expands every value of a list that is written as a range, in place:
/// `["50", "100..300:3"]` becomes `["50", "100", "200", "300"]`.
pub fn expand_values(values: Vec<String>) -> Result<Vec<String>, RangeError> {
    let mut out = Vec::with_capacity(values.len());
    for v in values {
        match expand(&v)? {
            Some(list) => out.extend(list),
            None => out.push(v),
        }
    }
    // Two points at the same value would be one point run twice, and a
    // heatmap column drawn twice (one of them empty). Values are the same
    // when they name the same quantity (`1s` and `1000ms`), or, for
    // anything else, read the same.
    let key = |v: &str| match quantity(v) {
        Some(q) => format!("{:x}", (q + 0.0).to_bits()),
        None => format!("text {}", v.trim()),
    };
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(out.len());
    for (i, v) in out.iter().enumerate() {
        if let Some(first) = seen.insert(key(v), i) {
            return Err(RangeError::Duplicate {
                first: out[first].trim().to_string(),
                second: v.trim().to_string(),
            });
        }
    }
    Ok(out)
}

/// N evenly spaced values from `a` to `b`, both ends exact.
fn spaced(text: &str, a: f64, b: f64, n: usize) -> Result<Vec<f64>, RangeError> {
    if n == 1 {
        return if a == b {
            Ok(vec![a])
        } else {
            Err(RangeError::OneValue(text.to_string()))
        };
    }
    let step = (b - a) / (n - 1) as f64;
    Ok((0..n)
        .map(|i| if i + 1 == n { b } else { a + step * i as f64 })
        .collect())
}

/// `values` as text: by the report's number rule (6 decimals at most)
/// when that keeps them apart, keeps each nonzero one nonzero and writes
/// the first and last (the range's ends) exactly; else with as many more
/// decimals as that takes (`1e-7..2e-7:2` gives `0.0000001` and
/// `0.0000002`, not `0` twice).
fn written(values: &[f64]) -> Vec<String> {
    if values.iter().any(|x| x.abs() >= 1e15) {
        return values.iter().map(|&x| num(x)).collect();
    }
    let trimmed = |mut s: String| {
        if s.contains('.') {
            s.truncate(s.trim_end_matches('0').trim_end_matches('.').len());
        }
        if s == "-0" {
            s = "0".into();
        }
        s
    };
    let fits = |out: &[String]| {
        let read = |s: &String| s.parse::<f64>().unwrap_or(f64::NAN);
        let apart = out.iter().collect::<std::collections::BTreeSet<_>>().len() == out.len();
        let nonzero = values
            .iter()
            .zip(out)
            .all(|(&x, s)| x == 0.0 || read(s) != 0.0);
        let ends = [0, out.len() - 1]
            .iter()
            .all(|&i| read(&out[i]) == values[i]);
        apart && nonzero && ends
    };
    (6..=17)
        .map(|d| {
            values
                .iter()
                .map(|&x| trimmed(format!("{x:.d$}")))
                .collect::<Vec<_>>()
        })
        .find(|out| fits(out))
        .unwrap_or_else(|| values.iter().map(|&x| format!("{x}")).collect())
}

/// A value of an axis read as a quantity: seconds for a duration, the
/// number itself otherwise; `None` for anything else (JSON objects,
/// names). Used to place the scenario's own operating point between an
/// axis's values.
pub fn quantity(text: &str) -> Option<f64> {
    let t = text.trim().trim_matches('"');
    if let Ok(v) = t.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    match parse_end(t, t).ok()? {
        End::Number(v) => Some(v),
        End::Duration { ns, .. } => Some(ns as f64 / NS_PER_SEC as f64),
    }
}

/// Why `A..B:N` is not a range (`sweep::range`); the message quotes the
/// range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// No `:N` after `A..B`.
    #[error("range {:?}: write A..B:N, N values from A to B inclusive (e.g. 100..300:11 or 2s..60s:12)", shown(.0))]
    NoCount(String),
    /// `N` is not a whole number in range.
    #[error(
        "range {:?}: the count {:?} must be a whole number from 2 to {max}",
        shown(.text),
        shown(.count)
    )]
    BadCount {
        /// The range as written.
        text: String,
        /// The count as written.
        count: String,
        /// The most values a range may have.
        max: usize,
    },
    /// `N` is 1 but the ends differ.
    #[error("range {:?}: one value cannot go from A to a different B; use N >= 2", shown(.0))]
    OneValue(String),
    /// An end is neither a number nor a duration.
    #[error(
        "range {:?}: {:?} is not a number or a duration such as 250ms, 2s or 1m",
        shown(.text),
        shown(.end)
    )]
    BadEnd {
        /// The range as written.
        text: String,
        /// The end at fault.
        end: String,
    },
    /// One end is a duration and the other a plain number.
    #[error(
        "range {:?}: both ends must be numbers or both durations ({:?} and {:?} differ)",
        shown(.text),
        shown(.a),
        shown(.b)
    )]
    Mixed {
        /// The range as written.
        text: String,
        /// Its first end.
        a: String,
        /// Its last end.
        b: String,
    },
    /// A duration end is negative or out of range.
    #[error("range {:?}: {why}", shown(.text))]
    BadDuration {
        /// The range as written.
        text: String,
        /// Why the duration is refused.
        why: String,
    },
    /// A value listed twice, or two that name the same quantity (a range
    /// finer than its unit rounds to repeats).
    #[error("the value {second} is given twice{}: each point of an axis must differ (a range finer than its unit repeats values)", same_as(.first, .second))]
    Duplicate {
        /// The value as first given.
        first: String,
        /// The value that repeats it.
        second: String,
    },
}

/// ` (as X)` when a repeated value was written differently the first time.
fn same_as(first: &str, second: &str) -> String {
    if first == second {
        String::new()
    } else {
        format!(" (as {first})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<String> {
        expand(text).unwrap().unwrap()
    }

    #[test]
    fn numbers_are_evenly_spaced_with_exact_ends() {
        assert_eq!(
            ok("100..300:11"),
            ["100", "120", "140", "160", "180", "200", "220", "240", "260", "280", "300"]
        );
        assert_eq!(ok("0..1:5"), ["0", "0.25", "0.5", "0.75", "1"]);
        assert_eq!(ok("0.1..0.3:3"), ["0.1", "0.2", "0.3"]);
        assert_eq!(ok("300..100:3"), ["300", "200", "100"]);
        assert_eq!(ok("5..5:1"), ["5"]);
        assert_eq!(ok(" 1..2:2 "), ["1", "2"]);
        // As many decimals as keep the values apart and the ends exact.
        assert_eq!(ok("1e-7..2e-7:2"), ["0.0000001", "0.0000002"]);
        assert_eq!(
            ok("0.0000004..0.0000016:3"),
            ["0.0000004", "0.000001", "0.0000016"]
        );
        assert_eq!(
            ok("1234567.1234567..1234567.1234568:2"),
            ["1234567.1234567", "1234567.1234568"]
        );
        assert_eq!(ok("100..200:4"), ["100", "133.333333", "166.666667", "200"]);
        assert_eq!(ok("1.0000001s..1.0000002s:2"), ["1.0000001s", "1.0000002s"]);
    }

    #[test]
    fn durations_keep_their_unit() {
        assert_eq!(ok("2s..60s:3"), ["2s", "31s", "60s"]);
        assert_eq!(ok("500ms..2s:4"), ["500ms", "1000ms", "1500ms", "2000ms"]);
        assert_eq!(ok("1m..3m:3"), ["1m", "2m", "3m"]);
        assert_eq!(ok("0s..1s:4"), ["0s", "0.333333s", "0.666667s", "1s"]);
        let twelve = ok("2s..60s:12");
        assert_eq!(twelve.len(), 12);
        assert_eq!(twelve[1], "7.272727s");
        assert_eq!(twelve[11], "60s");
        // Every value reads back as the duration it names.
        for v in &twelve {
            assert!(parse_duration(v).is_ok(), "{v}");
        }
    }

    #[test]
    fn lists_expand_their_ranges_in_place() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            expand_values(v(&["50", "100..300:3", "1s"])).unwrap(),
            v(&["50", "100", "200", "300", "1s"])
        );
        assert!(expand_values(v(&["1..2"])).is_err());
    }

    #[test]
    fn a_value_given_twice_is_refused() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        for (values, first, second) in [
            (&["10", "10"][..], "10", "10"),
            (&["10", "10.0"][..], "10", "10.0"),
            (&["1s", "1000ms"][..], "1s", "1000ms"),
            (&["1ns..2ns:5"][..], "1ns", "1ns"),
            (&["50", "0..100:3"][..], "50", "50"),
            (
                &["\"none\"", "\"full\"", " \"none\""][..],
                "\"none\"",
                "\"none\"",
            ),
        ] {
            let err = expand_values(v(values)).unwrap_err();
            assert_eq!(
                err,
                RangeError::Duplicate {
                    first: first.into(),
                    second: second.into()
                },
                "{values:?}"
            );
        }
        assert!(
            expand_values(v(&["0", "-0"])).is_err(),
            "0 and -0 are one value"
        );
        assert_eq!(
            expand_values(v(&["none", "full"])).unwrap(),
            v(&["none", "full"])
        );
    }

    #[test]
    fn non_ranges_are_left_alone() {
        for text in ["100", "2s", r#"{"a": "1..2:3"}"#, r#""x..y""#, "[1,2]"] {
            assert_eq!(expand(text).unwrap(), None, "{text}");
        }
    }

    #[test]
    fn bad_ranges_say_why() {
        let err = |t: &str| expand(t).unwrap_err().to_string();
        assert!(err("1..2").contains("write A..B:N"));
        assert!(err("1..2:0").contains("whole number from 2"));
        assert!(err("1..2:x").contains("whole number"));
        assert!(err("1..2:100001").contains("whole number"));
        assert!(err("1..2:1").contains("N >= 2"));
        assert!(err("a..2:3").contains("\"a\" is not a number"));
        assert!(err("1..2parsecs:3").contains("is not a number or a duration"));
        assert!(err("2..60s:3").contains("both ends"));
        assert!(err("-1s..2s:3").contains("negative"));
        assert!(err("1...2:3").contains("is not a number"));
    }

    #[test]
    fn quantities_read_numbers_and_durations() {
        assert_eq!(quantity("280"), Some(280.0));
        assert_eq!(quantity("1500ms"), Some(1.5));
        assert_eq!(quantity("2m"), Some(120.0));
        assert_eq!(quantity(r#"{"a": 1}"#), None);
        assert_eq!(quantity("fifo"), None);
    }
}
