//! Client-side rate limiters: how fast a client may send attempts at all,
//! first attempts included. One kind, the AWS SDKs' adaptive retry mode, as
//! botocore implements it:
//!
//! - `botocore/retries/adaptive.py` (`ClientRateLimiter`, `RateClocker`):
//!   the limiter is off until the first throttling error; from then on
//!   every attempt takes a token before it is sent. After every response
//!   (and every attempt that ended without one), the measured rate is
//!   updated — answers counted in 0.5 s buckets, smoothed with weight 0.8
//!   on the newest bucket — and the bucket's fill rate is set to
//!   `min(new rate, 2 × measured rate)`.
//! - `botocore/retries/throttling.py` (`CubicCalculator`): after a
//!   throttling error at time `t_f` with rate `r` (the measured rate, or
//!   the fill rate if lower once the limiter is on), `W_max = r`,
//!   `K = ∛(W_max·(1 − β)/C)` and the new rate is `β·r`; after any other
//!   answer at `t` the rate is `C·(t − t_f − K)³ + W_max` (C = 0.4,
//!   β = 0.7): back to `W_max` after `K` seconds, and growing past it.
//! - `botocore/retries/bucket.py` (`TokenBucket`): the fill rate is never
//!   below 0.5 per second; the bucket holds `max(fill rate, 1)` tokens and
//!   starts empty; tokens accrue continuously.
//!
//! The state machine here is pure: times in, decisions out. The model
//! queues the attempts that must wait and wakes them when a token is
//! there; which of them gets it is [`LimiterOrder`] (botocore's: random).

use super::scope::BudgetScope;
use crate::check::{finite_pos, must_be, Problems};
use crate::decimal::num;
use crate::time::{Dur, Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};

/// A client-side rate limiter as written in a policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum LimiterSpec {
    /// The AWS SDKs' adaptive retry mode (botocore's constants by default).
    AwsAdaptive(AdaptiveSpec),
}

/// The adaptive limiter's constants, botocore's by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveSpec {
    /// CUBIC's scale constant C (`_SCALE_CONSTANT`).
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// CUBIC's multiplicative decrease β (`_BETA`).
    #[serde(default = "default_beta")]
    pub beta: f64,
    /// Weight of the newest bucket in the measured rate (`_DEFAULT_SMOOTHING`).
    #[serde(default = "default_smoothing")]
    pub smoothing: f64,
    /// Width of the send-rate buckets (`_TIME_BUCKET_RANGE`).
    #[serde(default = "default_bucket")]
    pub bucket: Dur,
    /// The least fill rate, tokens per second (`_MIN_RATE`).
    #[serde(default = "default_min_rate")]
    pub min_rate: f64,
    /// The fill rate is at most this many times the measured rate
    /// (`_MAX_RATE_ADJUST_SCALE`).
    #[serde(default = "default_max_scale")]
    pub max_scale: f64,
    /// Where the limiter's state lives (client, group or global; default
    /// `client`).
    #[serde(default)]
    pub scope: BudgetScope,
    /// Which waiting attempt takes a token when one comes (default
    /// `random`, as botocore's threads race for it).
    #[serde(default, skip_serializing_if = "LimiterOrder::is_random")]
    pub order: LimiterOrder,
}

/// The order in which attempts waiting for a limiter's token get it.
///
/// botocore's `TokenBucket.acquire` (`retries/bucket.py`) has no queue:
/// each waiting thread sleeps on one condition variable until its own
/// estimate of the next token's arrival, wakes, refills and takes the
/// token if a whole one is there, else sleeps again until the next one.
/// Once a token has been missed, every waiter's estimate is the same
/// instant, so which thread gets each token is whichever the scheduler
/// runs first: in no particular order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimiterOrder {
    /// Each token goes to a waiting attempt chosen uniformly at random
    /// (botocore's behaviour).
    #[default]
    Random,
    /// Each token goes to the attempt that has waited longest.
    Fifo,
}

impl LimiterOrder {
    /// Whether this is the default order (left out when a policy is
    /// written back).
    pub fn is_random(&self) -> bool {
        *self == LimiterOrder::Random
    }
}

fn default_scale() -> f64 {
    0.4
}
fn default_beta() -> f64 {
    0.7
}
fn default_smoothing() -> f64 {
    0.8
}
fn default_bucket() -> Dur {
    Dur::from_millis(500)
}
fn default_min_rate() -> f64 {
    0.5
}
fn default_max_scale() -> f64 {
    2.0
}

impl Default for AdaptiveSpec {
    fn default() -> AdaptiveSpec {
        AdaptiveSpec {
            scale: default_scale(),
            beta: default_beta(),
            smoothing: default_smoothing(),
            bucket: default_bucket(),
            min_rate: default_min_rate(),
            max_scale: default_max_scale(),
            scope: BudgetScope::Client,
            order: LimiterOrder::Random,
        }
    }
}

impl LimiterSpec {
    /// Where the limiter's state lives.
    pub fn scope(&self) -> BudgetScope {
        match self {
            LimiterSpec::AwsAdaptive(a) => a.scope,
        }
    }

    /// Checks the values serde cannot; `path` ends at `rate_limiter`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        let LimiterSpec::AwsAdaptive(a) = self;
        let p = format!("{path}.aws_adaptive");
        for (name, v) in [
            ("scale", a.scale),
            ("min_rate", a.min_rate),
            ("max_scale", a.max_scale),
        ] {
            if !finite_pos(v) {
                c.err(format!("{p}.{name}"), must_be(v, "a number greater than 0"));
            }
        }
        for (name, v) in [("beta", a.beta), ("smoothing", a.smoothing)] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                c.err(format!("{p}.{name}"), format!("{v} is out of range (0, 1]"));
            }
        }
        c.positive_dur(&format!("{p}.bucket"), a.bucket);
        a.scope.check(&format!("{p}.scope"), c);
    }

    /// The limiter in words.
    pub fn describe(&self) -> String {
        let LimiterSpec::AwsAdaptive(a) = self;
        format!(
            "AWS adaptive (CUBIC C {}, β {}, rate measured over {} smoothed {}, at least {}/s{}) ({})",
            num(a.scale),
            num(a.beta),
            a.bucket,
            num(a.smoothing),
            num(a.min_rate),
            match a.order {
                LimiterOrder::Random => "",
                LimiterOrder::Fifo => ", waiting attempts served first come first served",
            },
            a.scope.describe()
        )
    }
}

/// The live state of one adaptive limiter. Times are seconds as `f64`, as
/// in botocore, derived from the simulation's nanoseconds.
#[derive(Clone, Debug)]
pub struct Adaptive {
    spec: AdaptiveSpec,
    /// On after the first throttling error.
    enabled: bool,
    // CUBIC.
    w_max: f64,
    k: f64,
    last_fail: f64,
    // Measured rate.
    measured: f64,
    last_bucket: f64,
    count: u64,
    // Token bucket.
    fill_rate: f64,
    capacity: f64,
    tokens: f64,
    last_refill: Option<f64>,
}

fn secs(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_SEC as f64
}

impl Adaptive {
    /// A limiter as a client starts with it: off, nothing measured, a
    /// bucket of rate 1 and no tokens (botocore's `register_retry_handler`).
    pub fn new(spec: &AdaptiveSpec) -> Adaptive {
        let mut a = Adaptive {
            spec: spec.clone(),
            enabled: false,
            w_max: 0.0,
            k: 0.0,
            last_fail: 0.0,
            measured: 0.0,
            last_bucket: 0.0,
            count: 0,
            fill_rate: 0.0,
            capacity: 1.0,
            tokens: 0.0,
            last_refill: None,
        };
        a.k = a.zero_point();
        a.set_max_rate(0.0, 1.0);
        a
    }

    /// Whether the limiter has switched on (after a throttling error).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bucket's fill rate (tokens per second).
    pub fn fill_rate(&self) -> f64 {
        self.fill_rate
    }

    /// The measured send rate (answers per second, smoothed).
    pub fn measured_rate(&self) -> f64 {
        self.measured
    }

    /// Tokens in the bucket (as of the last refill).
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    fn zero_point(&self) -> f64 {
        (self.w_max * (1.0 - self.spec.beta) / self.spec.scale).cbrt()
    }

    /// Tops the bucket up to time `t` (seconds) at the current fill rate.
    fn refill(&mut self, t: f64) {
        match self.last_refill {
            None => self.last_refill = Some(t),
            Some(last) => {
                let fill = (t - last).max(0.0) * self.fill_rate;
                self.tokens = (self.tokens + fill).min(self.capacity);
                self.last_refill = Some(t.max(last));
            }
        }
    }

    /// botocore's `TokenBucket.max_rate` setter at time `t`: the tokens due
    /// at the old rate first, then the new rate (at least `min_rate`) and
    /// capacity (`max(rate, 1)`).
    fn set_max_rate(&mut self, t: f64, value: f64) {
        self.refill(t);
        self.fill_rate = value.max(self.spec.min_rate);
        self.capacity = if value >= 1.0 { value } else { 1.0 };
        self.tokens = self.tokens.min(self.capacity);
    }

    /// `RateClocker.record`: counts one answer at `t` and returns the
    /// measured rate.
    fn record(&mut self, t: f64) -> f64 {
        let width = secs(self.spec.bucket.ns());
        let bucket = (t / width).floor() * width;
        self.count += 1;
        if bucket > self.last_bucket {
            let current = self.count as f64 / (bucket - self.last_bucket);
            self.measured =
                current * self.spec.smoothing + self.measured * (1.0 - self.spec.smoothing);
            self.count = 0;
            self.last_bucket = bucket;
        }
        self.measured
    }

    /// An attempt ended at `now` (an answer, or a timeout: botocore's
    /// `needs-retry` runs for both); `throttled` when the answer was a
    /// throttling error. Updates the rate; returns the new fill rate.
    pub fn on_response(&mut self, now: Nanos, throttled: bool) -> f64 {
        let t = secs(now);
        let measured = self.record(t);
        let new_rate = if !throttled {
            // CubicCalculator.success_received
            let dt = t - self.last_fail;
            self.spec.scale * (dt - self.k).powi(3) + self.w_max
        } else {
            let rate = if self.enabled {
                measured.min(self.fill_rate)
            } else {
                measured
            };
            // CubicCalculator.error_received
            self.w_max = rate;
            self.k = self.zero_point();
            self.last_fail = t;
            self.enabled = true;
            rate * self.spec.beta
        };
        self.set_max_rate(t, new_rate.min(self.spec.max_scale * measured));
        self.fill_rate
    }

    /// How long from `now` until a token is there (0: one is, or the
    /// limiter is off); takes nothing.
    pub fn time_to_token(&mut self, now: Nanos) -> Nanos {
        if !self.enabled {
            return 0;
        }
        self.refill(secs(now));
        if self.tokens >= 1.0 {
            return 0;
        }
        let wait = (1.0 - self.tokens) / self.fill_rate;
        ((wait * NS_PER_SEC as f64).ceil() as Nanos).max(1)
    }

    /// An attempt wants to go at `now`: `None` when it may (a token is
    /// taken, or the limiter is still off), else how long until the next
    /// token is there (asking again then takes it, unless the rate fell).
    pub fn acquire(&mut self, now: Nanos) -> Option<Nanos> {
        if !self.enabled {
            return None;
        }
        self.refill(secs(now));
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return None;
        }
        let wait = (1.0 - self.tokens) / self.fill_rate;
        Some(((wait * NS_PER_SEC as f64).ceil() as Nanos).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = NS_PER_SEC;
    const MS: Nanos = 1_000_000;

    fn limiter() -> Adaptive {
        Adaptive::new(&AdaptiveSpec::default())
    }

    #[test]
    fn off_until_the_first_throttling_error() {
        let mut a = limiter();
        for i in 0..100 {
            assert_eq!(a.acquire(i * 10 * MS), None);
            a.on_response(i * 10 * MS, false);
        }
        assert!(!a.enabled());
        a.on_response(S, true);
        assert!(a.enabled());
    }

    #[test]
    fn measured_rate_is_smoothed_over_half_second_buckets() {
        // 10 answers in [0, 0.5 s); the first answer in the next bucket
        // closes it: 11 answers over 0.5 s = 22/s, weighted 0.8 → 17.6.
        let mut a = limiter();
        for i in 0..10 {
            a.on_response(i * 50 * MS, false);
        }
        assert_eq!(a.measured_rate(), 0.0);
        a.on_response(500 * MS, false);
        assert!((a.measured_rate() - 17.6).abs() < 1e-9);
        // Another 20 in the next bucket, closed at 1.0 s: 21 / 0.5 = 42,
        // 0.8 · 42 + 0.2 · 17.6 = 37.12.
        for i in 0..20 {
            a.on_response(500 * MS + i * 25 * MS, false);
        }
        a.on_response(S, false);
        assert!((a.measured_rate() - 37.12).abs() < 1e-9);
    }

    /// Drives the limiter with answers every 10 ms from `from_ms` to
    /// `to_ms` (exclusive), throttled when `throttled(i)` for the i-th.
    fn drive(a: &mut Adaptive, from_ms: u64, to_ms: u64, throttled: impl Fn(u64) -> bool) {
        for (i, ms) in (from_ms..to_ms).step_by(10).enumerate() {
            a.on_response(ms * MS, throttled(i as u64));
        }
    }

    #[test]
    fn a_throttling_error_cuts_the_rate_to_beta_times_measured() {
        // 100 answers/s for 5 s: measured → 100. One throttling error at
        // 5 s: W_max = measured, rate 0.7 · measured, K = ∛(W_max·0.3/0.4).
        let mut a = limiter();
        drive(&mut a, 0, 5000, |_| false);
        let m = a.measured_rate();
        assert!((m - 100.0).abs() < 1e-3, "measured {m}");
        let fill = a.on_response(5 * S, true);
        let m = a.measured_rate();
        assert!((fill - 0.7 * m).abs() < 1e-9, "fill {fill} vs 0.7 × {m}");
    }

    #[test]
    fn sustained_throttling_drives_the_rate_down_and_it_recovers_after() {
        // 100 answers/s, every tenth throttled from 5 s to 15 s: each
        // throttling error takes the rate to 0.7 × (at most) what it was,
        // and 0.1 s of successes barely lift it, so within two seconds the
        // fill rate is a few per second; once the errors stop it climbs
        // back along the cubic, capped at twice the measured rate.
        let mut a = limiter();
        drive(&mut a, 0, 5000, |_| false);
        drive(&mut a, 5000, 7000, |i| i % 10 == 9);
        let at_7 = a.fill_rate();
        assert!(at_7 < 5.0, "fill rate 2 s into the throttling: {at_7}");
        drive(&mut a, 7000, 15000, |i| i % 10 == 9);
        assert!(a.fill_rate() < 5.0, "at 15 s: {}", a.fill_rate());
        drive(&mut a, 15000, 30000, |_| false);
        let back = a.fill_rate();
        assert!(
            (back - 200.0).abs() < 1e-6,
            "15 s after: {back} (2 × 100/s)"
        );
    }

    #[test]
    fn cubic_curve_matches_a_hand_made_trace() {
        // One client answering exactly 100/s: measured = 100 when a
        // throttling error comes at 10 s, so W_max = 100, the rate drops
        // to 70, K = ∛(100 · 0.3 / 0.4) = ∛75 = 4.2172 s, and the fill
        // rate follows 0.4·(t − 10 − K)³ + 100:
        //   t = 11 s: 0.4 · (1 − 4.2172)³ + 100 = 86.68
        //   t = 14.2172 s: 100 (back at W_max)
        //   t = 16 s: 0.4 · (6 − 4.2172)³ + 100 = 102.27
        //   t = 18 s: 0.4 · (8 − 4.2172)³ + 100 = 121.65
        let mut b = limiter();
        drive(&mut b, 0, 10_000, |_| false);
        assert!((b.on_response(10 * S, true) - 70.0).abs() < 1e-9);
        let mut last = 10_010;
        let mut fill_at = |ms: u64| {
            drive(&mut b, last, ms, |_| false);
            last = ms + 10;
            b.on_response(ms * MS, false)
        };
        for (ms, want) in [
            (11_000, 86.68),
            (14_217, 100.0),
            (16_000, 102.27),
            (18_000, 121.65),
        ] {
            let got = fill_at(ms);
            assert!(
                (got - want).abs() < 0.02,
                "t = {ms} ms: {got}, curve {want}"
            );
        }
    }

    #[test]
    fn tokens_pace_the_sends_once_on() {
        // 100/s for 3 s, then a throttling error: fill rate 0.7 × the
        // measured ~100/s. Sends at one instant take what the bucket holds,
        // then each waits for the next token.
        let mut a = limiter();
        drive(&mut a, 0, 3000, |_| false);
        let fill = a.on_response(3 * S, true);
        assert!((fill - 0.7 * a.measured_rate()).abs() < 1e-9 && (fill - 70.0).abs() < 0.1);
        let mut taken = 0;
        let wait = loop {
            match a.acquire(3 * S) {
                None => taken += 1,
                Some(w) => break w,
            }
        };
        assert!(taken <= 70, "{taken} sends went at once");
        let expect = (1.0 - a.tokens()) / a.fill_rate();
        assert!((wait as f64 / 1e9 - expect).abs() < 1e-8);
        assert_eq!(a.acquire(3 * S + wait), None);
        assert!(a.acquire(3 * S + wait).is_some());
        // Never below 0.5/s: a first answer that is throttled, with nothing
        // measured yet, sets the floor; the bucket got 0.1 token at the
        // initial rate 1/s, so the next token is 0.9 / 0.5 = 1.8 s away.
        let mut b = limiter();
        assert_eq!(b.on_response(100 * MS, true), 0.5);
        assert_eq!(b.acquire(100 * MS), Some(1_800_000_000));
    }
}
