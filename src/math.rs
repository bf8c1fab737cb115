//! Special functions the model and the scenario checks share.

/// z of the standard normal distribution's 99th percentile: a log-normal
/// duration given by its median and p99 has σ = ln(p99 / median) / Z99.
pub const Z99: f64 = 2.326_347_874_040_841;

/// Standard normal CDF (Abramowitz & Stegun 7.1.26 via erf; |error| < 1.5e-7).
pub fn normal_cdf(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    let erf = if z >= 0.0 { erf } else { -erf };
    0.5 * (1.0 + erf)
}
