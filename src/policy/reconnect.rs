//! A client's connection after its backend crashed: gRPC's connection
//! backoff (`doc/connection-backoff.md` in grpc/grpc, as C-core's
//! subchannel implements it), as a pure schedule and a small state
//! machine per channel.
//!
//! The written form is a policy's `"reconnect"` block; every field
//! defaults to gRPC's value. The schedule: the channel learns of the crash
//! when it starts (the server's death closes its connections) and tries to
//! reconnect at once (C-core resets its backoff when a connection drops);
//! a refused attempt at `t₀` is followed by one at `t₁ = t₀ + initial`,
//! and from then on `t_{k+1} = t_k + b_k + U(−jitter·b_k, jitter·b_k)`
//! with `b_k = min(initial · multiplier^k, max)`. An attempt succeeds when
//! the backend is not crashed at that instant; until then every attempt of
//! a request fails at the client with `unavailable`.

use super::scope::BudgetScope;
use crate::check::{must_be, Problems};
use crate::time::{ns_f64, trunc_ns, Dur, Nanos};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A policy's `"reconnect"` as written: `true` (gRPC's defaults), an
/// object (gRPC's defaults but for the fields it sets), or `false` (a new
/// connection per attempt, e.g. to take a `grpc*` preset's away).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reconnecting {
    /// A new connection per attempt.
    Off,
    /// A channel that reconnects on this schedule.
    On(ReconnectSpec),
}

impl Reconnecting {
    /// The schedule, when on.
    pub fn spec(&self) -> Option<&ReconnectSpec> {
        match self {
            Reconnecting::Off => None,
            Reconnecting::On(r) => Some(r),
        }
    }
}

impl Serialize for Reconnecting {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reconnecting::Off => s.serialize_bool(false),
            Reconnecting::On(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Reconnecting {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Reconnecting;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("true, false or an object with initial, multiplier, jitter, max, min_connect_timeout, scope")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Reconnecting, E> {
                Ok(if v {
                    Reconnecting::On(ReconnectSpec::default())
                } else {
                    Reconnecting::Off
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Reconnecting, A::Error> {
                let spec = ReconnectSpec::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Reconnecting::On(spec))
            }
        }
        d.deserialize_any(V)
    }
}

/// gRPC's connection backoff as written in a policy (`"reconnect"`); each
/// field left out takes gRPC's default.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconnectSpec {
    /// The wait after the first refused attempt (`INITIAL_BACKOFF`, 1 s).
    #[serde(default = "default_initial")]
    pub initial: Dur,
    /// The growth of the wait after each refused attempt (`MULTIPLIER`,
    /// 1.6).
    #[serde(default = "default_multiplier")]
    pub multiplier: f64,
    /// The share of each wait drawn at random either way (`JITTER`, 0.2).
    #[serde(default = "default_jitter")]
    pub jitter: f64,
    /// The longest wait before jitter (`MAX_BACKOFF`, 120 s).
    #[serde(default = "default_max")]
    pub max: Dur,
    /// The least time a connection attempt is given (`MIN_CONNECT_TIMEOUT`,
    /// 20 s). A crashed backend refuses at once, so it bounds nothing in
    /// this model; it is kept so that a configuration reads in whole.
    #[serde(default = "default_min_connect_timeout")]
    pub min_connect_timeout: Dur,
    /// Who shares a connection (a channel): each client its own (the
    /// default), every client one, or each group of clients one.
    #[serde(default)]
    pub scope: BudgetScope,
}

fn default_initial() -> Dur {
    Dur::from_secs(1)
}
fn default_multiplier() -> f64 {
    1.6
}
fn default_jitter() -> f64 {
    0.2
}
fn default_max() -> Dur {
    Dur::from_secs(120)
}
fn default_min_connect_timeout() -> Dur {
    Dur::from_secs(20)
}

impl Default for ReconnectSpec {
    /// gRPC's defaults.
    fn default() -> Self {
        ReconnectSpec {
            initial: default_initial(),
            multiplier: default_multiplier(),
            jitter: default_jitter(),
            max: default_max(),
            min_connect_timeout: default_min_connect_timeout(),
            scope: BudgetScope::Client,
        }
    }
}

impl ReconnectSpec {
    /// Checks the values serde cannot; `path` ends at `reconnect`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        c.positive_dur(&format!("{path}.initial"), self.initial);
        c.positive_dur(
            &format!("{path}.min_connect_timeout"),
            self.min_connect_timeout,
        );
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            c.err(
                format!("{path}.multiplier"),
                must_be(self.multiplier, "a number of at least 1"),
            );
        }
        if !(self.jitter.is_finite() && (0.0..1.0).contains(&self.jitter)) {
            c.err(
                format!("{path}.jitter"),
                must_be(self.jitter, "a share in [0, 1), e.g. 0.2"),
            );
        }
        if self.max.ns() < self.initial.ns() {
            c.err_with(
                format!("{path}.max"),
                [format!("{path}.initial")],
                format!("{} is less than `initial` ({})", self.max, self.initial),
            );
        }
        self.scope.check(&format!("{path}.scope"), c);
    }

    /// The schedule in nanoseconds.
    pub fn resolve(&self) -> Reconnect {
        Reconnect {
            initial: self.initial.ns(),
            multiplier: self.multiplier,
            jitter: self.jitter,
            max: self.max.ns(),
            scope: self.scope,
        }
    }
}

/// The connection backoff of a resolved policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reconnect {
    /// The wait after the first refused attempt (ns).
    pub initial: Nanos,
    /// The growth of the wait after each refused attempt.
    pub multiplier: f64,
    /// The share of each wait drawn at random either way.
    pub jitter: f64,
    /// The longest wait before jitter (ns).
    pub max: Nanos,
    /// Who shares a channel.
    pub scope: BudgetScope,
}

impl Reconnect {
    /// The wait before attempt `k + 1` after refused attempt `k` (0 = the
    /// first, made when the connection dropped), the previous wait before
    /// jitter being `backoff`: returns (the wait, the new `backoff`). The
    /// first wait is `initial` and draws nothing (C-core's
    /// `BackOff::NextAttemptTime` jitters only from its second call);
    /// later ones take `u`, a uniform draw in [0, 1).
    pub fn wait(&self, k: u32, backoff: Nanos, u: impl FnOnce() -> f64) -> (Nanos, Nanos) {
        if k == 0 {
            return (self.initial, self.initial);
        }
        let b = trunc_ns(ns_f64(backoff) * self.multiplier).min(self.max);
        let spread = self.jitter * ns_f64(b);
        let wait = trunc_ns(ns_f64(b) + spread * (2.0 * u() - 1.0)).max(1);
        (wait, b)
    }

    /// The instants of the first `n` connection attempts after a drop at
    /// `drop`, when every one is refused; `u` gives the uniform draws.
    pub fn attempts(&self, drop: Nanos, n: usize, mut u: impl FnMut() -> f64) -> Vec<Nanos> {
        let (mut t, mut b) = (drop, 0);
        let mut out = Vec::with_capacity(n);
        for k in 0..n {
            out.push(t);
            let (wait, next) = self.wait(k as u32, b, &mut u);
            t = t.saturating_add(wait);
            b = next;
        }
        out
    }
}

/// One channel's connection: up, or down and waiting for its next
/// connection attempt. The state is brought up to date lazily, when an
/// attempt wants to go out, from the backend's crash windows (known for
/// the whole run), so that idle channels cost nothing and random draws
/// happen only for refused reconnections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Channel {
    down: bool,
    /// Up: when it connected (crashes that start at or after it drop it).
    since: Nanos,
    /// Down: the next connection attempt.
    next_try: Nanos,
    /// Down: refused attempts so far.
    refused: u32,
    /// Down: the last wait before jitter.
    backoff: Nanos,
}

impl Channel {
    /// Whether the channel is connected at `now`, the backend being
    /// crashed in `crashes` (`[start, end)`, sorted by start): plays every
    /// connection attempt due by `now`, drawing from `u` for each refused
    /// one after the first wait.
    pub fn connected(
        &mut self,
        now: Nanos,
        crashes: &[(Nanos, Nanos)],
        r: &Reconnect,
        mut u: impl FnMut() -> f64,
    ) -> bool {
        loop {
            if !self.down {
                let since = self.since;
                let Some(&(start, _)) = crashes.iter().find(|w| w.0 >= since && w.0 <= now) else {
                    return true;
                };
                // The connection drops when the backend crashes; the first
                // reconnection is at once.
                *self = Channel {
                    down: true,
                    since,
                    next_try: start,
                    refused: 0,
                    backoff: 0,
                };
            }
            while self.next_try <= now {
                let t = self.next_try;
                if !crashes.iter().any(|w| w.0 <= t && t < w.1) {
                    self.down = false;
                    self.since = t;
                    break;
                }
                let (wait, b) = r.wait(self.refused, self.backoff, &mut u);
                self.refused += 1;
                self.backoff = b;
                self.next_try = t.saturating_add(wait);
            }
            if self.down {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_SEC as S;

    fn grpc() -> Reconnect {
        ReconnectSpec::default().resolve()
    }

    /// Without jitter's spread (u = ½) the attempts are the closed form
    /// `t_k = t₀ + initial · Σ_{i<k} min(multiplier^i, max / initial)`.
    #[test]
    fn attempts_follow_the_closed_form() {
        let r = grpc();
        let t = r.attempts(10 * S, 14, || 0.5);
        let mut expect = 10.0;
        for (k, &got) in t.iter().enumerate() {
            assert!(
                (ns_f64(got) / 1e9 - expect).abs() < 1e-6,
                "attempt {k}: {got} vs {expect}"
            );
            expect += 1.6f64.powi(k as i32).min(120.0);
        }
        // 1, 1.6, 2.56, 4.096, 6.5536 s: the fifth reconnection is 15.81 s
        // after the drop.
        assert_eq!(t[5] - t[0], 15_809_600_000);
    }

    /// Jitter moves each wait after the first by at most ±20 %, and the
    /// first not at all.
    #[test]
    fn jitter_spreads_every_wait_but_the_first() {
        let r = grpc();
        let low = r.attempts(0, 8, || 0.0);
        let high = r.attempts(0, 8, || 0.999_999_999);
        assert_eq!(low[1], S);
        assert_eq!(high[1], S);
        let mid = r.attempts(0, 8, || 0.5);
        for k in 2..8 {
            let nominal = ns_f64(mid[k] - mid[k - 1]);
            let lo = ns_f64(low[k] - low[k - 1]);
            let hi = ns_f64(high[k] - high[k - 1]);
            assert!((lo / nominal - 0.8).abs() < 1e-6, "{k}: {lo} {nominal}");
            assert!((hi / nominal - 1.2).abs() < 1e-6, "{k}: {hi} {nominal}");
        }
    }

    /// The wait stops growing at `max` (then jittered around it).
    #[test]
    fn waits_are_capped() {
        let r = grpc();
        let t = r.attempts(0, 30, || 0.5);
        assert_eq!(t[29] - t[28], 120 * S);
    }

    /// A channel goes down when a crash starts, is refused until the crash
    /// ends, and connects at the first attempt after it.
    #[test]
    fn a_channel_reconnects_on_the_schedule() {
        let r = grpc();
        let crashes = [(10 * S, 20 * S)];
        let mut c = Channel::default();
        let mut draws = 0;
        let mut u = || {
            draws += 1;
            0.5
        };
        assert!(c.connected(9 * S, &crashes, &r, &mut u));
        assert!(!c.connected(10 * S, &crashes, &r, &mut u));
        // Attempts at 10, 11, 12.6, 15.16, 19.256, 25.8096 s.
        assert!(!c.connected(25_809_000_000, &crashes, &r, &mut u));
        assert!(c.connected(25_809_600_000, &crashes, &r, &mut u));
        assert!(c.connected(100 * S, &crashes, &r, &mut u));
        assert_eq!(draws, 4, "one draw per refused attempt after the first");
        // No crash: never a draw.
        let mut idle = Channel::default();
        assert!(idle.connected(100 * S, &[], &r, || panic!("no draw")));
    }

    /// A second crash drops the connection again, and the backoff starts
    /// again from `initial`.
    #[test]
    fn a_second_crash_starts_the_backoff_again() {
        let r = grpc();
        let crashes = [(10 * S, 11 * S), (30 * S, 31 * S)];
        let mut c = Channel::default();
        assert!(!c.connected(10 * S, &crashes, &r, || 0.5));
        assert!(c.connected(11 * S, &crashes, &r, || 0.5));
        assert!(!c.connected(30 * S, &crashes, &r, || 0.5));
        assert!(!c.connected(30 * S + S / 2, &crashes, &r, || 0.5));
        assert!(c.connected(31 * S, &crashes, &r, || 0.5));
    }

    #[test]
    fn written_as_a_switch_or_an_object() {
        let on: Reconnecting = serde_json::from_str("true").unwrap();
        assert_eq!(on, Reconnecting::On(ReconnectSpec::default()));
        let off: Reconnecting = serde_json::from_str("false").unwrap();
        assert_eq!(off.spec(), None);
        let some: Reconnecting = serde_json::from_str(r#"{"initial": "2s"}"#).unwrap();
        assert_eq!(some.spec().unwrap().initial, Dur::from_secs(2));
        assert_eq!(some.spec().unwrap().multiplier, 1.6);
        let bad = serde_json::from_str::<Reconnecting>(r#"{"intial": "2s"}"#).unwrap_err();
        assert!(bad.to_string().contains("intial"), "{bad}");
    }

    #[test]
    fn values_are_checked() {
        let bad = ReconnectSpec {
            multiplier: 0.5,
            jitter: 1.0,
            max: Dur::from_millis(10),
            ..Default::default()
        };
        let mut c = Problems::default();
        bad.check("policies[0].reconnect", &mut c);
        let list: Vec<String> = match c.into_result() {
            Ok(()) => vec![],
            Err(l) => l.iter().map(|p| p.to_string()).collect(),
        };
        assert_eq!(list.len(), 3, "{list:?}");
        let mut ok = Problems::default();
        ReconnectSpec::default().check("p", &mut ok);
        assert!(ok.into_result().is_ok());
    }
}
