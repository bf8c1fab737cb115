//! Report text helpers: JSON literals under the number rule of
//! [`crate::decimal`], HTML escaping, and durations as a person says them.
//! A missing value (`None`) is an empty CSV cell and a JSON `null`.

use crate::decimal::num;
use crate::sweep::range::value_and_unit;
use crate::time::{secs, Nanos};

/// The JSON text of an optional value under the report rule: `null`, an
/// integer when the rounded value is whole, else the rounded decimal.
pub fn json_num(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => num(v),
        _ => "null".into(),
    }
}

/// A JSON string literal (quotes and escapes included).
pub fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

/// Escapes text for HTML element content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A recovery deadline in words: "within 1 min of the fault's end", or
/// (none) "before the run's end". `assess` and `map` say it alike.
pub fn deadline_words(within: Option<Nanos>) -> String {
    match within {
        Some(w) => format!("within {} of the fault's end", human_secs(secs(w))),
        None => "before the run's end".to_string(),
    }
}

/// A duration in seconds as a person would say it: `45 s`, `12.5 s`,
/// `4 min 30 s`, `1 h 5 min`.
pub fn human_secs(s: f64) -> String {
    if !s.is_finite() {
        return "?".into();
    }
    let sign = if s < 0.0 { "-" } else { "" };
    let a = s.abs();
    if a < 60.0 {
        let r = (a * 10.0).round() / 10.0;
        return format!("{sign}{} s", num(r));
    }
    let total = a.round() as u64;
    let (h, m, sec) = (total / 3600, (total % 3600) / 60, total % 60);
    let text = match (h, m, sec) {
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, 0, _) => format!("{h} h"),
        (h, m, _) => format!("{h} h {m} min"),
    };
    format!("{sign}{text}")
}

/// A share as a percentage with `decimals` decimals; a value that rounds
/// to zero prints as `0.0%`, never `-0.0%`.
pub fn percent(share: f64, decimals: usize) -> String {
    let v = 100.0 * share;
    let scale = 10f64.powi(decimals as i32);
    let v = if (v * scale).round() == 0.0 { 0.0 } else { v };
    format!("{v:.decimals$}%")
}

/// Axis labels for the values of one grid axis (`17.888889s` from a range
/// of ten steps): each number rounded to four significant digits, its unit
/// kept (`17.89s`). Values that are not a number with a unit, or whose
/// labels would then coincide, are written as given.
pub fn tick_labels(values: &[String]) -> Vec<String> {
    let short: Vec<String> = values.iter().map(|v| short_tick(v)).collect();
    let mut seen = std::collections::BTreeSet::new();
    if short.iter().all(|l| seen.insert(l.as_str())) {
        short
    } else {
        values.to_vec()
    }
}

/// One value to four significant digits (by the report's number rule), or
/// as given when that is not shorter.
fn short_tick(value: &str) -> String {
    let Some((x, unit)) = value_and_unit(value).filter(|&(x, _)| x != 0.0) else {
        return value.to_string();
    };
    let scale = 10f64.powi((3 - x.abs().log10().floor() as i32).max(0));
    let text = format!("{}{unit}", num((x * scale).round() / scale));
    if text.len() < value.len() {
        text
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decimal::opt;

    fn strings(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn tick_labels_keep_four_significant_digits_and_the_unit() {
        let range = strings(&["1s", "3.111111s", "17.888889s", "20s"]);
        assert_eq!(tick_labels(&range), ["1s", "3.111s", "17.89s", "20s"]);
        let small = strings(&["0.00123456", "0.5", "280.55555", "12345.678"]);
        assert_eq!(tick_labels(&small), ["0.001235", "0.5", "280.6", "12346"]);
        let words = strings(&["fifo", "lifo", "[1,2]", "-2.666667"]);
        assert_eq!(tick_labels(&words), ["fifo", "lifo", "[1,2]", "-2.667"]);
        // Labels that would coincide stay as given.
        let close = strings(&["1.00001s", "1.00002s"]);
        assert_eq!(tick_labels(&close), close);
    }

    #[test]
    fn percentages_have_no_negative_zero() {
        assert_eq!(percent(-0.00001, 1), "0.0%");
        assert_eq!(percent(0.1234, 1), "12.3%");
        assert_eq!(percent(-0.5, 2), "-50.00%");
    }

    #[test]
    fn numbers_follow_one_rule() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.1 + 0.2), "0.3");
        assert_eq!(num(2.0 / 3.0), "0.666667");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(123456789.0), "123456789");
        assert_eq!(num(f64::NAN), "");
        assert_eq!(opt(None), "");
        assert_eq!(json_num(None), "null");
        assert_eq!(json_num(Some(7000.0)), "7000");
    }

    #[test]
    fn escapes_html_and_says_durations() {
        assert_eq!(
            html("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(human_secs(12.0), "12 s");
        assert_eq!(human_secs(12.34), "12.3 s");
        assert_eq!(human_secs(270.0), "4 min 30 s");
        assert_eq!(human_secs(3900.0), "1 h 5 min");
    }
}
