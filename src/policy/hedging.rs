//! Hedging: gRPC's `hedgingPolicy` (gRFC A6, "Hedging Policy" and "Summary
//! of Retry and Hedging Logic"), used instead of retries.
//!
//! The first attempt goes at once; while no attempt has succeeded, another
//! goes every `delay`, up to `max_attempts` in all (A6 caps it at 5). Then,
//! per answer:
//!
//! - `ok`: the request succeeds; the client cancels the other attempts (the
//!   backend still finishes what it has started: wasted work);
//! - a status not in `non_fatal`: the request fails, the others are
//!   cancelled;
//! - a non-fatal status without pushback: the next hedge goes at once and
//!   the ones after it `delay` apart from then;
//! - a non-fatal status with pushback (`retry_after`, when the policy
//!   honours it): the next hedge goes after that delay instead, the ones
//!   after it `delay` apart from then. A6's "pushback: do not retry"
//!   (negative or absent) has no counterpart: the backend's `retry_after`
//!   is a duration.
//!
//! Retry throttling applies to hedges as to retries (A6: "subsequent hedged
//! RPCs will only be sent if `token_count` is greater than the
//! threshold"): every non-fatal failure is a failure for the budget, and
//! each hedge asks the budget first. A refused hedge freezes hedging for
//! the request; when no attempt is left out, the request ends dropped. All
//! attempts failed non-fatally and none may follow: dropped as well (the
//! limits ran out, as for retries).
//!
//! `"implementation": "grpc-java"` follows grpc-java's `RetriableStream`
//! where it departs from A6's text, in four ways: a non-fatal status
//! without pushback leaves the hedge already scheduled at its time (no
//! hedge at once); a non-fatal status with pushback sends the next hedge
//! at once (the pushback is overwritten with 0); the throttle (budget) is
//! asked when a hedge is scheduled, not when it is sent; and a failure that
//! takes a token-bucket throttle to its threshold or below commits that
//! attempt, which ends the whole request with its status. gRPC C-core (and
//! so Python, C++, Ruby) and grpc-go ignore `hedgingPolicy` altogether.

use crate::check::Problems;
use crate::status::{Status, StatusSet};
use crate::time::{Dur, Nanos};
use serde::{Deserialize, Serialize};

/// The most attempts a hedged request may have in flight (A6's client-side
/// cap on `maxAttempts`).
pub const MAX_HEDGED_ATTEMPTS: u32 = 5;

/// Whose reading of gRFC A6 hedging a run follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HedgingImpl {
    /// A6's text (the default).
    #[default]
    #[serde(rename = "a6")]
    A6,
    /// grpc-java's `RetriableStream` (see the module documentation).
    #[serde(rename = "grpc-java")]
    GrpcJava,
}

impl HedgingImpl {
    /// The name files use.
    pub fn name(self) -> &'static str {
        match self {
            HedgingImpl::A6 => "a6",
            HedgingImpl::GrpcJava => "grpc-java",
        }
    }
}

/// A hedging policy as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HedgingSpec {
    /// Between one hedge and the next (A6 `hedgingDelay`; 0 = all at once).
    #[serde(default)]
    pub delay: Dur,
    /// Attempts in all, the first included (A6 `maxAttempts`, at least 2;
    /// above 5 it is treated as 5, as gRPC clients do).
    pub max_attempts: u32,
    /// Statuses after which the other hedges go on (A6
    /// `nonFatalStatusCodes`); any other status ends the request.
    #[serde(default)]
    pub non_fatal: Vec<Status>,
    /// Whose semantics to simulate: A6's text or grpc-java's.
    #[serde(default, skip_serializing_if = "is_a6")]
    pub implementation: HedgingImpl,
}

fn is_a6(i: &HedgingImpl) -> bool {
    *i == HedgingImpl::A6
}

impl HedgingSpec {
    /// Checks the values serde cannot; `path` ends at `hedging`.
    pub fn check(&self, path: &str, c: &mut Problems) {
        if self.max_attempts < 2 {
            c.err(
                format!("{path}.max_attempts"),
                format!(
                    "{} is not allowed: attempts in all, at least 2 (gRFC A6)",
                    self.max_attempts
                ),
            );
        }
        if self.non_fatal.contains(&Status::Ok) {
            c.err(
                format!("{path}.non_fatal"),
                "\"ok\" is not a failure status",
            );
        }
    }

    /// The resolved policy.
    pub fn resolve(&self) -> Hedging {
        Hedging {
            delay: self.delay.ns(),
            max_attempts: self.max_attempts.clamp(1, MAX_HEDGED_ATTEMPTS),
            non_fatal: StatusSet::of(&self.non_fatal),
            implementation: self.implementation,
        }
    }
}

/// A resolved hedging policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hedging {
    /// Between one hedge and the next, ns.
    pub delay: Nanos,
    /// Attempts in all (2..=5).
    pub max_attempts: u32,
    /// Statuses that let the other hedges go on.
    pub non_fatal: StatusSet,
    /// Whose semantics are simulated.
    pub implementation: HedgingImpl,
}

/// What a hedged request does after one of its attempts failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HedgeStep {
    /// A fatal status: the request fails, every other attempt is cancelled.
    Fatal,
    /// Send the next hedge now (if the budget allows).
    SendNow,
    /// Send the next hedge after this delay (server pushback).
    SendAfter(Nanos),
    /// No hedge may follow: wait for the attempts still out; the request
    /// is over (dropped) when none is.
    NoMore,
    /// Nothing changes: the hedge already scheduled goes at its time
    /// (grpc-java after a non-fatal status without pushback).
    Wait,
}

impl Hedging {
    /// After an attempt failed with `status` (`timeout`: the client's
    /// attempt timeout, status `deadline_exceeded`), when `sent` attempts
    /// have gone out and hedging is `frozen` (a budget refused a hedge);
    /// `pushback` is the server's, when the policy honours it.
    pub fn after_failure(
        &self,
        status: Status,
        sent: u32,
        frozen: bool,
        pushback: Option<Nanos>,
    ) -> HedgeStep {
        if !self.non_fatal.contains(status) {
            return HedgeStep::Fatal;
        }
        if frozen || sent >= self.max_attempts {
            return HedgeStep::NoMore;
        }
        match (self.implementation, pushback) {
            (HedgingImpl::A6, Some(p)) => HedgeStep::SendAfter(p),
            (HedgingImpl::A6, None) => HedgeStep::SendNow,
            // `makeHedgingDecision` sets a non-fatal status's pushback to
            // 0, and `pushbackHedging(null)` leaves the schedule alone.
            (HedgingImpl::GrpcJava, Some(_)) => HedgeStep::SendNow,
            (HedgingImpl::GrpcJava, None) => HedgeStep::Wait,
        }
    }

    /// Whether the budget is asked when a hedge is scheduled (grpc-java)
    /// rather than when it is sent (A6).
    pub fn throttles_when_scheduled(&self) -> bool {
        self.implementation == HedgingImpl::GrpcJava
    }

    /// Whether another hedge may be scheduled after `sent` attempts.
    pub fn more_after(&self, sent: u32) -> bool {
        sent < self.max_attempts
    }

    /// The policy in words, without a label (the caller names it
    /// "hedging"): `up to 3 attempts, one every 50ms, non-fatal: none`.
    pub fn describe(&self) -> String {
        let on: Vec<&str> = self.non_fatal.to_vec().iter().map(|s| s.name()).collect();
        format!(
            "up to {} attempts, one every {}, non-fatal: {}{}",
            self.max_attempts,
            crate::time::format_duration(self.delay),
            if on.is_empty() {
                "none".to_string()
            } else {
                on.join(", ")
            },
            match self.implementation {
                HedgingImpl::A6 => "",
                HedgingImpl::GrpcJava => " (as grpc-java does it)",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hedging(non_fatal: &[Status]) -> Hedging {
        HedgingSpec {
            delay: Dur::from_millis(50),
            max_attempts: 3,
            non_fatal: non_fatal.to_vec(),
            implementation: HedgingImpl::A6,
        }
        .resolve()
    }

    #[test]
    fn grpc_java_waits_without_pushback_and_goes_at_once_with_it() {
        let mut h = hedging(&[Status::Unavailable]);
        h.implementation = HedgingImpl::GrpcJava;
        assert!(h.throttles_when_scheduled());
        // `pushbackHedging(null)`: the hedge already scheduled keeps its time.
        assert_eq!(
            h.after_failure(Status::Unavailable, 1, false, None),
            HedgeStep::Wait
        );
        // A positive pushback after a non-fatal status is overwritten with 0.
        assert_eq!(
            h.after_failure(Status::Unavailable, 2, false, Some(7)),
            HedgeStep::SendNow
        );
        // Fatal, all out, frozen: as A6.
        assert_eq!(
            h.after_failure(Status::Internal, 1, false, None),
            HedgeStep::Fatal
        );
        assert_eq!(
            h.after_failure(Status::Unavailable, 3, false, None),
            HedgeStep::NoMore
        );
        assert_eq!(
            h.after_failure(Status::Unavailable, 1, true, Some(7)),
            HedgeStep::NoMore
        );
        let spec: HedgingSpec = serde_json::from_str(
            r#"{"delay": "1ms", "max_attempts": 2, "implementation": "grpc-java"}"#,
        )
        .unwrap();
        assert_eq!(spec.resolve().implementation, HedgingImpl::GrpcJava);
        assert!(spec
            .resolve()
            .describe()
            .ends_with("(as grpc-java does it)"));
    }

    #[test]
    fn follows_the_a6_summary() {
        let h = hedging(&[Status::Unavailable]);
        // Non-fatal without pushback: the next hedge at once.
        assert_eq!(
            h.after_failure(Status::Unavailable, 1, false, None),
            HedgeStep::SendNow
        );
        // With pushback: after it.
        assert_eq!(
            h.after_failure(Status::Unavailable, 2, false, Some(7)),
            HedgeStep::SendAfter(7)
        );
        // Fatal: the request fails.
        assert_eq!(
            h.after_failure(Status::Internal, 1, false, None),
            HedgeStep::Fatal
        );
        // All three out, or throttled: none may follow.
        assert_eq!(
            h.after_failure(Status::Unavailable, 3, false, None),
            HedgeStep::NoMore
        );
        assert_eq!(
            h.after_failure(Status::Unavailable, 1, true, None),
            HedgeStep::NoMore
        );
    }

    #[test]
    fn more_than_five_is_five() {
        let h = HedgingSpec {
            delay: Dur::from_millis(1),
            max_attempts: 9,
            non_fatal: vec![],
            implementation: HedgingImpl::A6,
        }
        .resolve();
        assert_eq!(h.max_attempts, 5);
        let mut c = Problems::default();
        HedgingSpec {
            delay: Dur::from_millis(1),
            max_attempts: 1,
            non_fatal: vec![],
            implementation: HedgingImpl::A6,
        }
        .check("h", &mut c);
        assert_eq!(c.len(), 1);
    }
}
