//! Distributions as they are measured: percentiles from a dashboard
//! (`{"quantiles": {"p50": "5ms", "p99": "120ms", "max": "2s"}}`) and a
//! Prometheus-style cumulative histogram (`le`, `count` pairs). Both become
//! a table of knots of the quantile function, which `crate::model::dist`
//! samples by inversion and whose mean has a closed form.
//!
//! Between two percentiles the value is interpolated log-linearly in the
//! probability (`ln x` is linear in `p`), the shape of latency between
//! dashboard percentiles; a segment with a zero end is linear. Below the
//! lowest percentile the values run from `min` (0 when absent, linearly) to
//! it; above the highest, to `max` (log-linearly) or, without `max`, the
//! highest percentile is the largest value drawn.
//!
//! A histogram is interpolated linearly within each bucket, from the
//! previous bucket's bound (0 for the first), as Prometheus's
//! `histogram_quantile` does, so the percentiles a dashboard computes from
//! the same buckets are reproduced; counts above the highest finite bound
//! (the `+Inf` bucket) take that bound, as `histogram_quantile` returns it.

use crate::time::Dur;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Most knots a measured distribution may have.
pub const MAX_KNOTS: usize = 10_000;

/// One knot of a quantile function: the value `x` (ns) at probability `p`,
/// and how the segment to the next knot is interpolated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Knot {
    /// Cumulative probability, from 0 to 1.
    pub p: f64,
    /// The value there, ns.
    pub x: f64,
    /// Whether `ln x` (rather than `x`) is linear in `p` up to the next
    /// knot.
    pub log: bool,
}

/// The bound of a histogram bucket: a duration, or `+Inf` for the bucket
/// that counts everything.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Le {
    /// At most this long.
    At(Dur),
    /// Every observation (`"+Inf"`).
    Inf,
}

impl Serialize for Le {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Le::At(d) => d.serialize(s),
            Le::Inf => s.serialize_str("+Inf"),
        }
    }
}

struct LeVisitor;

impl Visitor<'_> for LeVisitor {
    type Value = Le;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a duration such as \"250ms\", a number of seconds, or \"+Inf\"")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Le, E> {
        if matches!(v, "+Inf" | "Inf" | "inf" | "+inf") {
            return Ok(Le::Inf);
        }
        crate::time::parse_duration(v)
            .map(Le::At)
            .map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Le, E> {
        if v == f64::INFINITY {
            return Ok(Le::Inf);
        }
        Dur::deserialize(de::value::F64Deserializer::<E>::new(v)).map(Le::At)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Le, E> {
        Dur::deserialize(de::value::I64Deserializer::<E>::new(v)).map(Le::At)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Le, E> {
        Dur::deserialize(de::value::U64Deserializer::<E>::new(v)).map(Le::At)
    }
}

impl<'de> Deserialize<'de> for Le {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Le, D::Error> {
        d.deserialize_any(LeVisitor)
    }
}

/// One cumulative bucket: `count` observations took at most `le`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    /// The bucket's upper bound.
    pub le: Le,
    /// Observations at most `le` (cumulative, as Prometheus counts them).
    pub count: u64,
}

/// A Prometheus-style cumulative histogram: its buckets written inline,
/// or read from a CSV file (`le,count`) when the scenario is loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistogramSpec {
    /// The buckets, in increasing `le` (from `file` once it is read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buckets: Vec<Bucket>,
    /// A CSV file of `le,count` rows, relative to the scenario's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Most rows a histogram file may hold.
pub const MAX_BUCKET_ROWS: usize = MAX_KNOTS;

/// The buckets of a histogram file: a header with the columns `le` and
/// `count` (in any order, among others), then one bucket a row; `le` is a
/// number of seconds (as Prometheus writes it), a duration (`"250ms"`) or
/// `+Inf`, `count` a whole number.
pub fn buckets_from_csv(text: &str) -> Result<Vec<Bucket>, super::trace::FileProblem> {
    use super::trace::{read_csv, FileProblem};
    let csv = read_csv(text, MAX_BUCKET_ROWS)?;
    let (hline, header) = &csv.header;
    let column = |name: &str| {
        header
            .iter()
            .position(|c| c.text.eq_ignore_ascii_case(name))
            .ok_or_else(|| FileProblem {
                line: *hline,
                column: 1,
                message: format!(
                    "expected a header with the columns `le` and `count`, found {}",
                    header
                        .iter()
                        .map(|c| format!("{:?}", c.text))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })
    };
    let (le, count) = (column("le")?, column("count")?);
    for (name, first) in [("le", le), ("count", count)] {
        if let Some(again) = header
            .iter()
            .skip(first + 1)
            .find(|c| c.text.eq_ignore_ascii_case(name))
        {
            return Err(FileProblem {
                line: *hline,
                column: again.column,
                message: format!(
                    "a second `{name}` column (the first is column {}): which one holds the \
                     buckets is unclear; keep one",
                    header[first].column
                ),
            });
        }
    }
    let mut out = Vec::with_capacity(csv.rows.len());
    for (line, row) in &csv.rows {
        let (l, c) = (&row[le], &row[count]);
        let bound = if matches!(l.text.as_str(), "+Inf" | "Inf" | "inf" | "+inf") {
            Le::Inf
        } else {
            Le::At(
                crate::time::parse_duration(&l.text).map_err(|e| FileProblem {
                    line: *line,
                    column: l.column,
                    message: format!("expected a bound (seconds, a duration or +Inf): {e}"),
                })?,
            )
        };
        let n: f64 = c.text.parse().unwrap_or(f64::NAN);
        if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n < 2f64.powi(63)) {
            return Err(FileProblem {
                line: *line,
                column: c.column,
                message: format!("expected a count (a whole number >= 0), found {:?}", c.text),
            });
        }
        out.push(Bucket {
            le: bound,
            count: n as u64,
        });
    }
    Ok(out)
}

/// What is wrong with a measured distribution: the field (below the
/// distribution's own path) and why.
pub type Problem = (String, String);

/// The probability a `quantiles` key stands for: `p50` → 0.5, `p99.9` →
/// 0.999, `min` → 0, `max` → 1.
fn key_probability(key: &str) -> Result<f64, String> {
    match key {
        "min" => return Ok(0.0),
        "max" => return Ok(1.0),
        _ => {}
    }
    let wrong = || {
        format!(
            "unknown key {key:?}: write a percentile as pNN (p50, p99, p99.9: above 0, below \
             100), or `min` / `max`"
        )
    };
    let digits = key.strip_prefix('p').ok_or_else(wrong)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(wrong());
    }
    let pct: f64 = digits.parse().map_err(|_| wrong())?;
    if !(pct > 0.0 && pct < 100.0) {
        return Err(wrong());
    }
    Ok(pct / 100.0)
}

/// The knots of a `quantiles` distribution, or what is wrong with it.
pub fn quantile_knots(given: &BTreeMap<String, Dur>) -> Result<Vec<Knot>, Problem> {
    let mut points = Vec::with_capacity(given.len());
    for (key, value) in given {
        let p = key_probability(key).map_err(|m| (key.clone(), m))?;
        points.push((p, value.ns() as f64, key.as_str()));
    }
    if !points.iter().any(|&(p, _, _)| p > 0.0 && p < 1.0) {
        return Err((
            String::new(),
            "needs at least one percentile (e.g. \"p50\": \"5ms\"); `min` and `max` alone \
             say nothing of the shape"
                .into(),
        ));
    }
    if points.len() > MAX_KNOTS {
        return Err((String::new(), format!("more than {MAX_KNOTS} percentiles")));
    }
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    for pair in points.windows(2) {
        let ((p0, x0, k0), (p1, x1, k1)) = (pair[0], pair[1]);
        if p0 == p1 {
            return Err((k1.into(), format!("the same percentile as {k0:?}")));
        }
        if x1 < x0 {
            return Err((
                k1.into(),
                format!(
                    "{} is less than {k0} ({}): percentiles never decrease",
                    Dur(x1 as u64),
                    Dur(x0 as u64)
                ),
            ));
        }
    }
    let mut knots: Vec<Knot> = Vec::with_capacity(points.len() + 2);
    if points[0].0 > 0.0 {
        knots.push(Knot {
            p: 0.0,
            x: 0.0,
            log: false,
        });
    }
    knots.extend(points.iter().map(|&(p, x, _)| Knot { p, x, log: false }));
    if knots.last().is_some_and(|k| k.p < 1.0) {
        let x = knots[knots.len() - 1].x;
        knots.push(Knot {
            p: 1.0,
            x,
            log: false,
        });
    }
    for i in 0..knots.len() - 1 {
        knots[i].log = knots[i].x > 0.0 && knots[i + 1].x > 0.0;
    }
    Ok(knots)
}

/// The knots of a cumulative histogram, or what is wrong with it (the
/// field is `buckets[i].le` or `buckets[i].count`).
pub fn histogram_knots(h: &HistogramSpec) -> Result<Vec<Knot>, Problem> {
    let field = |i: usize, f: &str| format!("buckets[{i}].{f}");
    if h.buckets.is_empty() {
        return Err((
            "buckets".into(),
            "is empty: give at least one bucket (or a `file` of them)".into(),
        ));
    }
    if h.buckets.len() > MAX_KNOTS {
        return Err(("buckets".into(), format!("more than {MAX_KNOTS} buckets")));
    }
    let mut finite: Vec<(f64, u64)> = Vec::with_capacity(h.buckets.len());
    let mut total = 0u64;
    for (i, b) in h.buckets.iter().enumerate() {
        if b.count < total {
            return Err((
                field(i, "count"),
                format!(
                    "{} is less than the bucket before ({total}): counts are cumulative \
                     (observations at most `le`) and never decrease",
                    b.count
                ),
            ));
        }
        total = b.count;
        match b.le {
            Le::Inf if i + 1 < h.buckets.len() => {
                return Err((field(i, "le"), "+Inf must be the last bucket".into()));
            }
            Le::Inf => {}
            Le::At(d) => {
                let x = d.ns() as f64;
                if finite.last().is_some_and(|&(prev, _)| x <= prev) {
                    return Err((
                        field(i, "le"),
                        format!("{d} is not above the bucket before: bounds must increase"),
                    ));
                }
                finite.push((x, b.count));
            }
        }
    }
    if total == 0 {
        return Err(("buckets".into(), "count nothing: every count is 0".into()));
    }
    if finite.is_empty() {
        return Err((
            "buckets".into(),
            "only +Inf: give at least one finite bound".into(),
        ));
    }
    let total = total as f64;
    let mut knots = vec![Knot {
        p: 0.0,
        x: 0.0,
        log: false,
    }];
    for &(x, count) in &finite {
        knots.push(Knot {
            p: count as f64 / total,
            x,
            log: false,
        });
    }
    let top = finite[finite.len() - 1].0;
    if knots.last().is_some_and(|k| k.p < 1.0) {
        knots.push(Knot {
            p: 1.0,
            x: top,
            log: false,
        });
    }
    Ok(knots)
}

/// The `k`-th raw moment (`k` ≥ 1) of a table of knots, in closed form:
/// each segment's integral of the interpolated quantile function to the
/// `k`-th power over its probabilities.
fn moment(knots: &[Knot], k: i32) -> f64 {
    let kf = f64::from(k);
    knots
        .windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            let dp = b.p - a.p;
            if dp <= 0.0 {
                0.0
            } else if a.x == b.x {
                a.x.powi(k) * dp
            } else if a.log {
                // x = a·(b/a)^t: ∫ x^k dt = (b^k − a^k) / (k·ln(b/a)).
                (b.x.powi(k) - a.x.powi(k)) * dp / (kf * (b.x / a.x).ln())
            } else {
                // x = a + (b − a)·t: ∫ x^k dt = (b^(k+1) − a^(k+1)) / ((k+1)(b − a)).
                (b.x.powi(k + 1) - a.x.powi(k + 1)) * dp / ((kf + 1.0) * (b.x - a.x))
            }
        })
        .sum()
}

/// The mean of a table of knots, in its closed form.
pub fn knots_mean(knots: &[Knot]) -> f64 {
    moment(knots, 1)
}

/// The standard deviation of a table of knots, from its closed-form
/// moments.
pub fn knots_stddev(knots: &[Knot]) -> f64 {
    let mean = moment(knots, 1);
    (moment(knots, 2) - mean * mean).max(0.0).sqrt()
}

/// The value of the quantile function at probability `u` (0 ≤ u ≤ 1).
pub fn knots_quantile(knots: &[Knot], u: f64) -> f64 {
    // The segment whose start is the last knot at or below u.
    let i = knots
        .partition_point(|k| k.p <= u)
        .clamp(1, knots.len() - 1)
        - 1;
    let (a, b) = (knots[i], knots[i + 1]);
    let dp = b.p - a.p;
    if dp <= 0.0 {
        return b.x;
    }
    let t = ((u - a.p) / dp).clamp(0.0, 1.0);
    if a.log {
        a.x * (b.x / a.x).powf(t)
    } else {
        a.x + (b.x - a.x) * t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Dur {
        Dur::from_millis(x)
    }

    fn quantiles(pairs: &[(&str, u64)]) -> BTreeMap<String, Dur> {
        pairs.iter().map(|&(k, v)| (k.to_string(), ms(v))).collect()
    }

    /// A header naming `le` or `count` twice is refused, at the second.
    #[test]
    fn a_bucket_column_given_twice_is_refused() {
        let e = buckets_from_csv("le,count,LE\n0.1,10,0.2\n").unwrap_err();
        assert_eq!((e.line, e.column), (1, 10));
        assert!(
            e.message
                .contains("a second `le` column (the first is column 1)"),
            "{}",
            e.message
        );
        assert_eq!(
            buckets_from_csv("le,count\n0.1,10\n+Inf,12\n")
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn percentiles_sit_where_they_were_put_and_interpolate_log_linearly() {
        let k = quantile_knots(&quantiles(&[("p50", 5), ("p90", 20), ("p99", 120)])).unwrap();
        for (u, want) in [(0.5, 5e6), (0.9, 20e6), (0.99, 120e6)] {
            assert!((knots_quantile(&k, u) - want).abs() < 1.0, "{u}");
        }
        // Halfway between p50 and p90 in probability: the geometric mean.
        let mid = knots_quantile(&k, 0.7);
        assert!((mid - (5e6f64 * 20e6).sqrt()).abs() < 1.0, "{mid}");
        // Below p50 without `min`: linear from 0.
        assert!((knots_quantile(&k, 0.25) - 2.5e6).abs() < 1.0);
        // Above p99 without `max`: p99 is the largest value.
        assert_eq!(knots_quantile(&k, 0.999_999), 120e6);
    }

    #[test]
    fn the_mean_is_the_integral_of_the_segments() {
        // Constant 5 ms from min to max: a flat table.
        let flat = quantile_knots(&quantiles(&[("min", 5), ("p50", 5), ("max", 5)])).unwrap();
        assert!((knots_mean(&flat) - 5e6).abs() < 1e-3);
        // Linear 0 → 10 ms over p 0 → 1: mean 5 ms.
        let lin = quantile_knots(&quantiles(&[("p50", 5), ("max", 10)])).unwrap();
        // 0→5 linear over [0, .5] (mean 2.5), 5→10 log-linear over [.5, 1].
        let log_part = (10e6 - 5e6) * 0.5 / 2f64.ln();
        assert!((knots_mean(&lin) - (2.5e6 * 0.5 + log_part)).abs() < 1e-3);
    }

    #[test]
    fn the_spread_is_the_closed_form_of_the_segments() {
        // Uniform 0–10 ms (linear from 0 to max): sd = 10 ms / √12.
        let k = quantile_knots(&quantiles(&[("p50", 5), ("max", 10)])).unwrap();
        let lin = Knot {
            p: 0.0,
            x: 0.0,
            log: false,
        };
        let uniform = [
            lin,
            Knot {
                p: 1.0,
                x: 10e6,
                log: false,
            },
        ];
        assert!((knots_stddev(&uniform) - 10e6 / 12f64.sqrt()).abs() < 1.0);
        assert!(knots_stddev(&k) > 0.0);
    }

    #[test]
    fn bad_percentiles_are_named() {
        let e = quantile_knots(&quantiles(&[("p50", 30), ("p90", 20)])).unwrap_err();
        assert_eq!(e.0, "p90");
        assert!(e.1.contains("never decrease"), "{e:?}");
        let e = quantile_knots(&quantiles(&[("p100", 30)])).unwrap_err();
        assert_eq!(e.0, "p100");
        let e = quantile_knots(&quantiles(&[("median", 30)])).unwrap_err();
        assert!(e.1.contains("pNN"), "{e:?}");
        let e = quantile_knots(&quantiles(&[("min", 1), ("max", 30)])).unwrap_err();
        assert!(e.1.contains("at least one percentile"), "{e:?}");
        assert!(quantile_knots(&BTreeMap::new()).is_err());
        let e = quantile_knots(&quantiles(&[("p99.9", 30), ("p99.90", 40)])).unwrap_err();
        assert!(e.1.contains("same percentile"), "{e:?}");
    }

    fn bucket(le: Option<u64>, count: u64) -> Bucket {
        Bucket {
            le: le.map_or(Le::Inf, |v| Le::At(ms(v))),
            count,
        }
    }

    #[test]
    fn a_histogram_interpolates_as_histogram_quantile_does() {
        let h = HistogramSpec {
            file: None,
            buckets: vec![
                bucket(Some(10), 50),
                bucket(Some(20), 90),
                bucket(Some(100), 99),
                bucket(None, 100),
            ],
        };
        let k = histogram_knots(&h).unwrap();
        // histogram_quantile(0.5) = 10 ms; (0.7) = 10 + 10·(20/40) = 15 ms;
        // above the last finite bound: that bound.
        assert!((knots_quantile(&k, 0.5) - 10e6).abs() < 1.0);
        assert!((knots_quantile(&k, 0.7) - 15e6).abs() < 1.0);
        assert_eq!(knots_quantile(&k, 0.995), 100e6);
        let mean = 0.5 * 5e6 + 0.4 * 15e6 + 0.09 * 60e6 + 0.01 * 100e6;
        assert!((knots_mean(&k) - mean).abs() < 1e-3);
    }

    #[test]
    fn bad_histograms_are_named() {
        let e = histogram_knots(&HistogramSpec {
            buckets: vec![],
            file: None,
        })
        .unwrap_err();
        assert_eq!(e.0, "buckets");
        let h = HistogramSpec {
            file: None,
            buckets: vec![bucket(Some(10), 50), bucket(Some(20), 40)],
        };
        assert_eq!(histogram_knots(&h).unwrap_err().0, "buckets[1].count");
        let h = HistogramSpec {
            file: None,
            buckets: vec![bucket(Some(20), 50), bucket(Some(10), 60)],
        };
        assert_eq!(histogram_knots(&h).unwrap_err().0, "buckets[1].le");
        let h = HistogramSpec {
            file: None,
            buckets: vec![bucket(None, 50), bucket(Some(10), 60)],
        };
        assert_eq!(histogram_knots(&h).unwrap_err().0, "buckets[0].le");
        let h = HistogramSpec {
            file: None,
            buckets: vec![bucket(Some(10), 0)],
        };
        assert!(histogram_knots(&h)
            .unwrap_err()
            .1
            .contains("every count is 0"));
    }
}
