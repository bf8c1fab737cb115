//! Report text helpers: JSON literals under the number rule of
//! [`crate::decimal`], HTML escaping, and durations as a person says them.
//! A missing value (`None`) is an empty CSV cell and a JSON `null`.

use crate::decimal::num;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decimal::opt;

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
