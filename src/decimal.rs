//! The one rule for writing numbers as text, in report files and in the
//! words that describe a scenario.
//!
//! Every float goes through [`num`]: rounded to six digits after the
//! decimal point, trailing zeros and a trailing point removed, `-0` written
//! as `0`. Rust formats a rounded float exactly, so the text depends only on
//! the value, never on the platform or the thread count. Words about a
//! value that may be tiny (a rate in the description of a scenario) use
//! [`legible`], which differs from [`num`] only below 1e-6.

/// A count written by the report rule with its noun, singular for one:
/// `1 retry`, `3 retries`, `0.5 retries`.
pub fn count(n: f64, one: &str, many: &str) -> String {
    format!("{} {}", num(n), if n == 1.0 { one } else { many })
}

/// Formats `x` by the report rule (see the module docs); non-finite values
/// have no sensible cell and are written empty.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    if x.abs() >= 1e15 {
        // Beyond any count or rate a run produces: the shortest exact
        // form in scientific notation, not hundreds of digits.
        return format!("{x:e}");
    }
    let mut s = format!("{x:.6}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

/// [`num`] for words about a value that may be tiny, such as a rate: a
/// nonzero value below 1e-6 in magnitude, which [`num`] would write as 0
/// or 0.000001, is written in scientific notation instead, in its
/// shortest exact form (`2.5e-7`), as [`Given`] writes it.
pub fn legible(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-6 {
        format!("{x:e}")
    } else {
        num(x)
    }
}

/// `x` rounded up to three significant digits, to a whole number from
/// 100 on: an upper bound written shorter stays an upper bound (1.00117
/// → 1.01, 0.0011667 → 0.00117, 1234.5 → 1235). A value already that
/// short is kept (1.5 stays 1.5, 3 stays 3).
pub fn up3(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return x;
    }
    // Binary fractions such as 1.5 × 100 may land a hair above a whole
    // number: that hair is not rounded up.
    let shave = |scaled: f64| (scaled * (1.0 - 1e-12)).ceil();
    if x >= 100.0 {
        return shave(x);
    }
    let digits = 2 - x.log10().floor() as i32;
    let s = 10f64.powi(digits);
    shave(x * s) / s
}

/// A rate for a message or a report: whole when one a second or more,
/// as it is below that ([`legible`]: scientific when tiny), so that a
/// rate under one a second does not read as 0.
pub fn rate(x: f64) -> String {
    legible(if x >= 1.0 { x.round() } else { x })
}

/// A number the user gave, for an error message: as written when of a
/// sensible size, in scientific notation when huge or tiny (`1e300`, not
/// three hundred digits).
#[derive(Clone, Copy, Debug)]
pub struct Given(pub f64);

impl std::fmt::Display for Given {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let x = self.0;
        if x.is_finite() && x != 0.0 && !(1e-6..1e15).contains(&x.abs()) {
            write!(f, "{x:e}")
        } else {
            write!(f, "{x}")
        }
    }
}

/// [`num`] for an optional value: empty when `None`.
pub fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounded up to three significant digits, never below the value, and
    /// short values kept.
    #[test]
    fn up3_never_rounds_an_upper_bound_down() {
        assert_eq!(up3(1.001167), 1.01);
        assert_eq!(up3(0.0011667), 0.00117);
        assert_eq!(up3(1234.5), 1235.0);
        for short in [1.5, 3.0, 0.25, 100.0, 12.3] {
            assert_eq!(up3(short), short);
        }
        assert_eq!(up3(0.0), 0.0);
        assert!(up3(f64::INFINITY).is_infinite());
        let mut x = 1e-4;
        while x < 1e6 {
            assert!(up3(x) >= x * (1.0 - 1e-12), "{x}");
            assert!(up3(x) <= x * 1.01 + 1.0, "{x}");
            x *= 1.37;
        }
    }

    #[test]
    fn counts_take_the_singular_for_one() {
        assert_eq!(count(0.0, "retry", "retries"), "0 retries");
        assert_eq!(count(1.0, "retry", "retries"), "1 retry");
        assert_eq!(count(2.0, "retry fits", "retries fit"), "2 retries fit");
        assert_eq!(count(0.00117, "retry", "retries"), "0.00117 retries");
    }

    #[test]
    fn given_values_short_when_huge_or_tiny() {
        let shown = |x: f64| Given(x).to_string();
        assert_eq!(shown(1e300), "1e300");
        assert_eq!(shown(-2.5e-200), "-2.5e-200");
        assert_eq!(shown(1e15), "1e15");
        assert_eq!(shown(999_999_999_999_999.0), "999999999999999");
        assert_eq!(shown(0.1), "0.1");
        assert_eq!(shown(1e-6), "0.000001");
        assert_eq!(shown(0.0), "0");
        assert_eq!(shown(f64::NAN), "NaN");
        assert_eq!(shown(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn six_decimals_without_trailing_zeros() {
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(1.0 / 3.0), "0.333333");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(f64::NAN), "");
        assert_eq!(opt(None), "");
    }

    #[test]
    fn tiny_values_stay_legible_in_words() {
        assert_eq!(legible(2.5e-7), "2.5e-7");
        assert_eq!(legible(-4e-7), "-4e-7");
        assert_eq!(legible(5e-324), "5e-324");
        // From 1e-6 on, the report rule.
        assert_eq!(legible(1e-6), "0.000001");
        assert_eq!(legible(0.25), "0.25");
        assert_eq!(legible(500.0), "500");
        assert_eq!(legible(0.0), "0");
        assert_eq!(legible(1e300), "1e300");
        assert_eq!(legible(f64::NAN), "");
    }

    #[test]
    fn huge_values_are_written_in_scientific_notation() {
        assert_eq!(num(999_999_999_999_999.0), "999999999999999");
        assert_eq!(num(1e15), "1e15");
        assert_eq!(num(-6.5e302), "-6.5e302");
        assert_eq!(num(6.5e302).parse::<f64>(), Ok(6.5e302));
    }
}
