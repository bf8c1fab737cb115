//! Random durations (service times, network hops, think times) built from
//! their scenario description, sampled in integer nanoseconds.

use crate::math::{normal_cdf, Z99};
use crate::scenario::spec::DistSpec;
use crate::time::{round_ns, Nanos};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// A ready-to-sample distribution; parameters in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    /// Always the same value, ns.
    Constant(f64),
    /// Exponential with the given mean.
    Exponential {
        /// Mean, ns.
        mean: f64,
    },
    /// Uniform between `min` and `max`.
    Uniform {
        /// Smallest value, ns.
        min: f64,
        /// Largest value, ns.
        max: f64,
    },
    /// Log-normal: `exp(N(mu, sigma))`.
    LogNormal {
        /// Mean of the logarithm (ln of the median in ns).
        mu: f64,
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
    /// |N(mean, sd)|.
    FoldedNormal {
        /// Mean of the normal before folding, ns.
        mean: f64,
        /// Standard deviation of the normal before folding, ns.
        sd: f64,
    },
}

impl Dist {
    /// Builds the sampler for a validated spec.
    pub fn new(spec: &DistSpec) -> Dist {
        let f = |d: crate::time::Dur| d.ns() as f64;
        match spec {
            DistSpec::Constant { value } => Dist::Constant(f(*value)),
            DistSpec::Exponential { mean } => Dist::Exponential { mean: f(*mean) },
            DistSpec::Uniform { min, max } => Dist::Uniform {
                min: f(*min),
                max: f(*max),
            },
            DistSpec::Lognormal {
                median,
                p99,
                mean,
                stddev,
            } => {
                if let (Some(m), Some(sd)) = (mean, stddev) {
                    let (m, sd) = (f(*m).max(1.0), f(*sd));
                    let s2 = (1.0 + (sd / m).powi(2)).ln();
                    Dist::LogNormal {
                        mu: m.ln() - s2 / 2.0,
                        sigma: s2.sqrt(),
                    }
                } else {
                    let med = median.map_or(1.0, f).max(1.0);
                    let p = p99.map_or(med, f).max(med);
                    Dist::LogNormal {
                        mu: med.ln(),
                        sigma: (p / med).ln() / Z99,
                    }
                }
            }
            DistSpec::Normal { mean, stddev } => Dist::FoldedNormal {
                mean: f(*mean),
                sd: f(*stddev),
            },
        }
    }

    /// The distribution's mean in nanoseconds.
    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Constant(v) => v,
            Dist::Exponential { mean } => mean,
            Dist::Uniform { min, max } => (min + max) / 2.0,
            Dist::LogNormal { mu, sigma } => (mu + sigma * sigma / 2.0).exp(),
            Dist::FoldedNormal { mean, sd } => {
                if sd <= 0.0 {
                    return mean.abs();
                }
                let r = mean / sd;
                sd * (2.0 / std::f64::consts::PI).sqrt() * (-r * r / 2.0).exp()
                    + mean * (1.0 - 2.0 * normal_cdf(-r))
            }
        }
    }

    /// Whether every sample is the same value (no random draw needed).
    pub fn constant_value(&self) -> Option<Nanos> {
        match *self {
            Dist::Constant(v) => Some(to_ns(v)),
            Dist::Uniform { min, max } if min == max => Some(to_ns(min)),
            Dist::FoldedNormal { mean, sd: 0.0 } => Some(to_ns(mean.abs())),
            _ => None,
        }
    }

    /// Draws one value.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Nanos {
        let x = match *self {
            Dist::Constant(v) => v,
            Dist::Exponential { mean } => -mean * (1.0 - rng.random::<f64>()).ln(),
            Dist::Uniform { min, max } => min + (max - min) * rng.random::<f64>(),
            Dist::LogNormal { mu, sigma } => {
                let z: f64 = StandardNormal.sample(rng);
                (mu + sigma * z).exp()
            }
            Dist::FoldedNormal { mean, sd } => {
                let z: f64 = StandardNormal.sample(rng);
                (mean + sd * z).abs()
            }
        };
        to_ns(x)
    }
}

fn to_ns(x: f64) -> Nanos {
    if x.is_nan() || x <= 0.0 {
        0
    } else if x >= 1.8e19 {
        u64::MAX / 4
    } else {
        round_ns(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::{stream, Stream};
    use crate::time::Dur;

    fn sample_mean(d: &Dist, n: usize) -> f64 {
        let mut rng = stream(3, 0, Stream::Service);
        (0..n).map(|_| d.sample(&mut rng) as f64).sum::<f64>() / n as f64
    }

    #[test]
    fn sample_means_match_the_stated_means() {
        let ms = |x: u64| Dur::from_millis(x);
        let specs = [
            DistSpec::Exponential { mean: ms(10) },
            DistSpec::Uniform {
                min: ms(5),
                max: ms(15),
            },
            DistSpec::Lognormal {
                median: Some(ms(10)),
                p99: Some(ms(50)),
                mean: None,
                stddev: None,
            },
            DistSpec::Lognormal {
                median: None,
                p99: None,
                mean: Some(ms(10)),
                stddev: Some(ms(5)),
            },
            DistSpec::Normal {
                mean: ms(10),
                stddev: ms(2),
            },
            DistSpec::Normal {
                mean: ms(0),
                stddev: ms(10),
            },
        ];
        for spec in specs {
            let d = Dist::new(&spec);
            let (m, s) = (d.mean(), sample_mean(&d, 200_000));
            assert!((m - s).abs() / m < 0.01, "{spec:?}: mean {m} sample {s}");
        }
        let ln = Dist::new(&DistSpec::Lognormal {
            median: None,
            p99: None,
            mean: Some(ms(10)),
            stddev: Some(ms(5)),
        });
        assert!((ln.mean() - 10e6).abs() < 1.0);
    }

    #[test]
    fn lognormal_p99_is_where_it_was_put() {
        let d = Dist::new(&DistSpec::Lognormal {
            median: Some(Dur::from_millis(10)),
            p99: Some(Dur::from_millis(100)),
            mean: None,
            stddev: None,
        });
        let mut rng = stream(5, 0, Stream::Service);
        let mut v: Vec<u64> = (0..100_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        let p99 = v[98_999] as f64 / 1e6;
        let p50 = v[49_999] as f64 / 1e6;
        assert!((p99 - 100.0).abs() < 5.0, "p99 {p99}");
        assert!((p50 - 10.0).abs() < 0.3, "p50 {p50}");
    }

    #[test]
    fn normal_cdf_is_accurate() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959_963_985) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-Z99) - 0.01).abs() < 1e-6);
    }
}
