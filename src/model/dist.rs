//! Random durations (service times, network hops, think times) built from
//! their scenario description, sampled in integer nanoseconds.

use crate::math::{normal_cdf, Z99};
use crate::scenario::spec::measured::{
    histogram_knots, knots_mean, knots_quantile, quantile_knots, Knot,
};
use crate::scenario::spec::DistSpec;
use crate::time::{round_ns, Nanos};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use std::sync::Arc;

/// A ready-to-sample distribution; parameters in nanoseconds.
#[derive(Clone, Debug, PartialEq)]
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
    /// A measured distribution (percentiles or a histogram): its quantile
    /// function as knots, sampled by inversion.
    Table(Arc<[Knot]>),
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
            // Validated specs build; a spec that does not is drawn as 0.
            DistSpec::Quantiles(q) => Dist::table(quantile_knots(q).ok()),
            DistSpec::Histogram(h) => Dist::table(histogram_knots(h).ok()),
        }
    }

    fn table(knots: Option<Vec<Knot>>) -> Dist {
        match knots {
            Some(k) => Dist::Table(k.into()),
            None => Dist::Constant(0.0),
        }
    }

    /// The least value drawn, ns.
    pub fn least(&self) -> f64 {
        match self {
            Dist::Constant(v) => *v,
            Dist::Uniform { min, max } => min.min(*max),
            Dist::Table(k) => k[0].x,
            _ => 0.0,
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
            Dist::Table(ref k) => knots_mean(k),
        }
    }

    /// Whether every sample is the same value (no random draw needed).
    pub fn constant_value(&self) -> Option<Nanos> {
        if let Dist::Table(k) = self {
            let (lo, hi) = (k[0].x, k[k.len() - 1].x);
            return (lo == hi).then(|| to_ns(lo));
        }
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
            Dist::Table(ref k) => knots_quantile(k, rng.random::<f64>()),
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

    /// The share of `n` draws at or below `x`.
    fn share_below(d: &Dist, x: f64, n: usize) -> f64 {
        let mut rng = stream(5, 0, Stream::Service);
        (0..n).filter(|_| d.sample(&mut rng) as f64 <= x).count() as f64 / n as f64
    }

    /// The value at share `q` of `n` sorted draws.
    fn sample_quantiles(d: &Dist, qs: &[f64], n: usize) -> Vec<f64> {
        let mut rng = stream(7, 0, Stream::Service);
        let mut v: Vec<u64> = (0..n).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        qs.iter()
            .map(|q| v[((q * n as f64) as usize).min(n - 1)] as f64)
            .collect()
    }

    #[test]
    fn percentiles_reproduce_themselves_and_their_closed_form_mean() {
        let spec: DistSpec = serde_json::from_str(
            r#"{"quantiles": {"p50": "5ms", "p90": "20ms", "p99": "120ms",
                              "p99.9": "400ms", "max": "2s"}}"#,
        )
        .unwrap();
        let d = Dist::new(&spec);
        let n = 1_000_000;
        let qs = [0.5, 0.9, 0.99, 0.999];
        let want = [5e6, 20e6, 120e6, 400e6];
        for ((q, got), want) in qs.iter().zip(sample_quantiles(&d, &qs, n)).zip(want) {
            assert!((got - want).abs() / want < 0.01, "p{q}: {got} vs {want}");
        }
        // The closed form: 0→5 ms linear over [0, .5], then log-linear
        // segments ∫ = (b − a)·Δp / ln(b/a).
        let seg = |a: f64, b: f64, dp: f64| (b - a) * dp / (b / a).ln();
        let closed = 2.5e6 * 0.5
            + seg(5e6, 20e6, 0.4)
            + seg(20e6, 120e6, 0.09)
            + seg(120e6, 400e6, 0.009)
            + seg(400e6, 2e9, 0.001);
        assert!((d.mean() - closed).abs() < 1.0, "{} vs {closed}", d.mean());
        let m = sample_mean(&d, n);
        assert!((m - closed).abs() / closed < 0.01, "{m} vs {closed}");
    }

    #[test]
    fn a_histogram_reproduces_its_bucket_shares_and_mean() {
        let spec: DistSpec = serde_json::from_str(
            r#"{"histogram": {"buckets": [
                {"le": "5ms", "count": 300}, {"le": "10ms", "count": 700},
                {"le": 0.05, "count": 950}, {"le": "250ms", "count": 990},
                {"le": "+Inf", "count": 1000}]}}"#,
        )
        .unwrap();
        let d = Dist::new(&spec);
        let n = 1_000_000;
        // The +Inf bucket's 1 % sits at 250 ms itself.
        for (le, share) in [(5e6, 0.3), (10e6, 0.7), (50e6, 0.95), (250e6 - 1.0, 0.99)] {
            let got = share_below(&d, le, n);
            assert!((got - share).abs() / share < 0.01, "le {le}: {got}");
        }
        // Linear within each bucket; the +Inf share at the last bound.
        let closed = 0.3 * 2.5e6 + 0.4 * 7.5e6 + 0.25 * 30e6 + 0.04 * 150e6 + 0.01 * 250e6;
        assert!((d.mean() - closed).abs() < 1.0, "{} vs {closed}", d.mean());
        let m = sample_mean(&d, n);
        assert!((m - closed).abs() / closed < 0.01, "{m} vs {closed}");
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
