//! A random duration as written (service times, network hops, think
//! times), its checks and its wording. `crate::model::dist` samples it.

use super::measured::{histogram_knots, quantile_knots, HistogramSpec};
use crate::check::Problems;
use crate::time::Dur;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A random duration (service times, network hops, think times).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DistSpec {
    /// Always the same duration.
    Constant {
        /// The duration.
        value: Dur,
    },
    /// Exponential (memoryless), as in M/M/c queues.
    Exponential {
        /// Its mean.
        mean: Dur,
    },
    /// Uniform between two durations.
    Uniform {
        /// The shortest.
        min: Dur,
        /// The longest.
        max: Dur,
    },
    /// Either `{median, p99}` or `{mean, stddev}`.
    Lognormal {
        /// The median (with `p99`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        median: Option<Dur>,
        /// The 99th percentile (with `median`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        p99: Option<Dur>,
        /// The mean (with `stddev`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mean: Option<Dur>,
        /// The standard deviation (with `mean`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stddev: Option<Dur>,
    },
    /// Folded at zero: a negative draw counts as its absolute value.
    Normal {
        /// The mean before folding.
        mean: Dur,
        /// The standard deviation before folding.
        stddev: Dur,
    },
    /// Percentiles as a dashboard shows them, `pNN` keys with optional
    /// `min` and `max`, interpolated as `super::measured` says.
    Quantiles(BTreeMap<String, Dur>),
    /// A Prometheus-style cumulative histogram (`le`, `count` pairs).
    Histogram(HistogramSpec),
}

impl DistSpec {
    /// The quantile function's knots of a measured distribution
    /// (percentiles or a histogram); `None` for the others, or when the
    /// spec is invalid.
    pub fn knots(&self) -> Option<Vec<super::measured::Knot>> {
        match self {
            DistSpec::Quantiles(q) => quantile_knots(q).ok(),
            DistSpec::Histogram(h) => histogram_knots(h).ok(),
            _ => None,
        }
    }

    /// Checks the values serde cannot; `path` ends at the field holding
    /// the distribution.
    pub fn check(&self, path: &str, c: &mut Problems) {
        match self {
            DistSpec::Constant { .. } | DistSpec::Normal { .. } => {}
            DistSpec::Quantiles(q) => {
                if let Err((field, why)) = quantile_knots(q) {
                    let at = if field.is_empty() {
                        format!("{path}.quantiles")
                    } else {
                        format!("{path}.quantiles.{field}")
                    };
                    c.err(at, why);
                }
            }
            DistSpec::Histogram(h) => {
                if let Err((field, why)) = histogram_knots(h) {
                    c.err(format!("{path}.histogram.{field}"), why);
                }
            }
            DistSpec::Exponential { mean } => {
                c.positive_dur(&format!("{path}.exponential.mean"), *mean)
            }
            DistSpec::Uniform { min, max } => {
                if min > max {
                    c.err_with(
                        format!("{path}.uniform.min"),
                        [format!("{path}.uniform.max")],
                        format!("{min} is greater than max ({max})"),
                    );
                }
            }
            DistSpec::Lognormal {
                median,
                p99,
                mean,
                stddev,
            } => {
                let p = format!("{path}.lognormal");
                let quantiles = median.is_some() || p99.is_some();
                let moments = mean.is_some() || stddev.is_some();
                match (median, p99, mean, stddev) {
                    (Some(m), Some(q), None, None) => {
                        if m.ns() == 0 {
                            c.err(format!("{p}.median"), "must be greater than 0");
                        } else if q < m {
                            c.err_with(
                                format!("{p}.p99"),
                                [format!("{p}.median")],
                                format!("{q} is less than the median ({m})"),
                            );
                        }
                    }
                    (None, None, Some(m), Some(_)) => {
                        if m.ns() == 0 {
                            c.err(format!("{p}.mean"), "must be greater than 0");
                        }
                    }
                    _ if quantiles && moments => c.err(
                        p,
                        "give either {median, p99} or {mean, stddev}, not fields of both",
                    ),
                    _ => c.err(
                        p,
                        "needs both `median` and `p99`, or both `mean` and `stddev`",
                    ),
                }
            }
        }
    }

    /// The distribution in words: `exponential, mean 10ms`.
    pub fn describe(&self) -> String {
        match self {
            DistSpec::Constant { value } => format!("constant {value}"),
            DistSpec::Exponential { mean } => format!("exponential, mean {mean}"),
            DistSpec::Uniform { min, max } => format!("uniform {min}–{max}"),
            DistSpec::Lognormal {
                median,
                p99,
                mean,
                stddev,
            } => {
                let mut parts = vec![];
                for (k, v) in [
                    ("median", median),
                    ("p99", p99),
                    ("mean", mean),
                    ("sd", stddev),
                ] {
                    if let Some(v) = v {
                        parts.push(format!("{k} {v}"));
                    }
                }
                format!("lognormal, {}", parts.join(", "))
            }
            DistSpec::Normal { mean, stddev } => format!("normal, mean {mean}, sd {stddev}"),
            DistSpec::Quantiles(q) => {
                let mut keys: Vec<(f64, String)> = q
                    .iter()
                    .map(|(k, v)| {
                        let p = match k.as_str() {
                            "min" => 0.0,
                            "max" => 101.0,
                            _ => k[1..].parse().unwrap_or(0.0),
                        };
                        (p, format!("{k} {v}"))
                    })
                    .collect();
                keys.sort_by(|a, b| a.0.total_cmp(&b.0));
                let parts: Vec<String> = keys.into_iter().map(|(_, s)| s).collect();
                format!("percentiles {}", parts.join(", "))
            }
            DistSpec::Histogram(h) => format!("histogram of {} buckets", h.buckets.len()),
        }
    }
}
