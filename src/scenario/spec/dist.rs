//! A random duration as written (service times, network hops, think
//! times), its checks and its wording. `crate::model::dist` samples it.

use crate::check::Problems;
use crate::time::Dur;
use serde::{Deserialize, Serialize};

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
}

impl DistSpec {
    /// Checks the values serde cannot; `path` ends at the field holding
    /// the distribution.
    pub fn check(&self, path: &str, c: &mut Problems) {
        match self {
            DistSpec::Constant { .. } | DistSpec::Normal { .. } => {}
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
        }
    }
}
