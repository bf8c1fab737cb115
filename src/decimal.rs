//! The one rule for writing numbers as text, in report files and in the
//! words that describe a scenario.
//!
//! Every float goes through [`num`]: rounded to six digits after the
//! decimal point, trailing zeros and a trailing point removed, `-0` written
//! as `0`. Rust formats a rounded float exactly, so the text depends only on
//! the value, never on the platform or the thread count.

/// Formats `x` by the report rule (see the module docs); non-finite values
/// have no sensible cell and are written empty.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
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

/// [`num`] for an optional value: empty when `None`.
pub fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}
