//! Back-of-envelope estimates of the load above which a retry storm, once
//! started, sustains itself: numbers a reader can check by hand, set next
//! to the simulated ones so it is clear when they are enough.
//!
//! The mechanism (docs/stories-spanner.md, the HotOS '21 toy): the waiting
//! room holds more work than the client waits for, so every attempt a
//! worker takes has timed out; the workers stay busy on abandoned work and
//! every request makes all the attempts its limits allow, each waiting out
//! the full attempt timeout. The storm holds while those attempts exceed
//! the capacity:
//!
//! - **attempts rule**: λ · A > C, so λ* = C / A, where A is the attempts
//!   per request when each one waits the timeout T and then the backoff
//!   (attempt j leaves at (j − 1) · T + the first j − 1 nominal delays),
//!   bounded by `max_attempts`, the retry window, the deadline D and a
//!   budget's long-run allowance. One retry, no deadline (HotOS):
//!   A = 1 + R = 2, λ* = C / 2.
//! - **balance rule**: the live requests λ · D each send one attempt per
//!   T + b, against what the capacity absorbs: λ · D > C · (T + b), so
//!   λ* = C · (T + b) / D (only with a deadline; b is the first backoff).
//!   It is the continuous version of the attempts rule and ignores that a
//!   request sends whole attempts.
//!
//! When the mechanism is absent (abandoned work is dropped, LIFO, a
//! waiting room shorter than the timeout, no timeout) no storm outlives its
//! trigger below the capacity, and the estimate is the capacity itself.

use crate::decimal::num;
use crate::model::dist::Dist;
use crate::policy::bounds::Context;
use crate::policy::{Policy, RetryVerdict};
use crate::scenario::spec::{Discipline, ScenarioSpec};
use crate::status::Status;
use crate::time::{secs, Nanos};

/// Attempts walked before a request's attempts count as unbounded.
const WALK: u32 = 100_000;

/// The storm-sustaining load of one policy, estimated.
#[derive(Clone, Debug, PartialEq)]
pub struct StormEstimate {
    /// The backend's capacity C (requests/s); `None` when it has none to
    /// speak of (the contention backend).
    pub capacity_rps: Option<f64>,
    /// Attempts per request in a storm (A); `None` = unbounded.
    pub attempts_per_request: Option<f64>,
    /// C / A (0 when A is unbounded: any load sustains a storm).
    pub attempts_rule: Option<f64>,
    /// C · (T + b) / D, with a deadline only.
    pub balance_rule: Option<f64>,
    /// Why no storm can outlive its trigger below capacity, if so.
    pub no_storm: Option<String>,
}

/// Requests per second the backend serves without faults: workers ÷
/// (admission cost + mean service time); `None` for the contention
/// backend or a backend that costs nothing. The concurrency backend: its
/// throughput at `max_concurrency` in service, or without a limit the peak
/// `1 / per_request`.
pub fn capacity_rps(spec: &ScenarioSpec) -> Option<f64> {
    let b = &spec.backend;
    let mut service = b.service_time.as_ref().map_or(0.0, |d| Dist::new(d).mean());
    if let Some(usl) = b.usl {
        // Every worker busy.
        service *= usl.factor(f64::from(b.workers.unwrap_or(1)));
    }
    b.capacity_rps(service)
}

/// Why the storm mechanism is missing from this backend and client, if it
/// is.
pub fn missing_mechanism(spec: &ScenarioSpec, capacity: f64) -> Option<String> {
    let b = &spec.backend;
    let Some(t) = spec.traffic.attempt_timeout else {
        return Some("no attempt timeout: clients never abandon an attempt".into());
    };
    if b.drop_expired {
        return Some("abandoned attempts are dropped unserved (drop_expired)".into());
    }
    if b.discipline == Discipline::Lifo {
        return Some("LIFO serves the freshest attempts first, within their timeout".into());
    }
    if let Some(q) = b.queue_limit {
        let held = q as f64 / capacity;
        if held <= t.secs() {
            return Some(format!(
                "the waiting room holds {} s of work, no more than the {} s timeout",
                num(held),
                num(t.secs())
            ));
        }
    }
    None
}

/// Attempts per request when each attempt waits out `timeout` and then
/// the nominal backoff, within the policy's limits and the `deadline`;
/// `None` when nothing stops them.
pub fn storm_attempts(policy: &Policy, timeout: Nanos, deadline: Option<Nanos>) -> Option<u32> {
    let status = Status::DeadlineExceeded;
    let mut sent: Nanos = 0;
    for j in 1..=WALK {
        // Attempt j left at `sent` and times out at `sent + timeout`.
        let failed = sent.saturating_add(timeout);
        if policy.verdict(status, j, failed) != RetryVerdict::Retry {
            return Some(j);
        }
        sent = failed.saturating_add(policy.nominal_delay(j));
        if deadline.is_some_and(|d| sent >= d) {
            return Some(j);
        }
    }
    None
}

/// The estimates for `policy` in `spec`; `ctx` sizes its budget (the
/// requests the run counts) as in [`super::bounds`].
pub fn estimate(spec: &ScenarioSpec, policy: &Policy, ctx: &Context) -> StormEstimate {
    let Some(c) = capacity_rps(spec) else {
        return StormEstimate {
            capacity_rps: None,
            attempts_per_request: None,
            attempts_rule: None,
            balance_rule: None,
            no_storm: Some("the backend has no capacity to speak of".into()),
        };
    };
    if let Some(why) = missing_mechanism(spec, c) {
        return StormEstimate {
            capacity_rps: Some(c),
            attempts_per_request: Some(1.0),
            attempts_rule: Some(c),
            balance_rule: None,
            no_storm: Some(why),
        };
    }
    let t = spec.traffic.attempt_timeout.map_or(0, |d| d.ns());
    let deadline = spec.traffic.deadline.map(|d| d.ns());
    let mut a = storm_attempts(policy, t, deadline).map(f64::from);
    let ctx = Context {
        failure: Status::DeadlineExceeded,
        timeouts: true,
        ..*ctx
    };
    if let Some(limit) = policy.budget_limit(&ctx) {
        let allowed = 1.0 + limit.retries;
        a = Some(a.map_or(allowed, |a| a.min(allowed)));
    }
    let balance = deadline.map(|d| {
        let b = policy.nominal_delay(1);
        c * secs(t + b) / secs(d)
    });
    StormEstimate {
        capacity_rps: Some(c),
        attempts_per_request: a,
        attempts_rule: Some(a.map_or(0.0, |a| c / a)),
        balance_rule: balance,
        no_storm: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn spanner() -> Scenario {
        Scenario::from_json(include_str!("../../scenarios/spanner-90s.json")).unwrap()
    }

    fn hotos() -> Scenario {
        Scenario::from_json(include_str!("../../scenarios/hotos21-toy.json")).unwrap()
    }

    fn ctx(requests: f64, clients: u32) -> Context {
        Context {
            failure: Status::Unavailable,
            timeouts: false,
            deadline: None,
            requests,
            counted_s: 1000.0,
            clients,
        }
    }

    #[test]
    fn capacities_of_the_stories() {
        assert!((capacity_rps(spanner().spec()).unwrap() - 2500.0).abs() < 1e-9);
        assert!((capacity_rps(hotos().spec()).unwrap() - 300.0).abs() < 1e-9);
    }

    #[test]
    fn hotos_one_retry_holds_above_capacity_over_two() {
        let s = hotos();
        let e = estimate(s.spec(), &s.policies()[0], &ctx(42_000.0, 1000));
        assert_eq!(e.attempts_per_request, Some(2.0));
        assert!((e.attempts_rule.unwrap() - 150.0).abs() < 1e-9);
        assert_eq!(e.balance_rule, None);
        // No retry: only the capacity.
        let e = estimate(s.spec(), &s.policies()[1], &ctx(42_000.0, 1000));
        assert!((e.attempts_rule.unwrap() - 300.0).abs() < 1e-9);
        // The global token bucket allows 49 retries in all: about C.
        let e = estimate(s.spec(), &s.policies()[2], &ctx(42_000.0, 1000));
        assert!(e.attempts_rule.unwrap() > 299.0);
    }

    #[test]
    fn spanner_no_jitter_two_timed_out_attempts_fit_the_deadline() {
        let s = spanner();
        let e = estimate(s.spec(), &s.policies()[0], &ctx(1.7e6, 4000));
        // Attempts at 0 and 1.1 s; the third would leave at 2.2 s > 2 s.
        assert_eq!(e.attempts_per_request, Some(2.0));
        assert!((e.attempts_rule.unwrap() - 1250.0).abs() < 1e-9);
        // The story's envelope: 2,500 × 1.1 / 2.
        assert!((e.balance_rule.unwrap() - 1375.0).abs() < 1e-9);
        // The platform policy's token buckets leave about one attempt.
        let e = estimate(s.spec(), &s.policies()[2], &ctx(1.7e6, 4000));
        assert!(e.attempts_per_request.unwrap() < 1.01);
    }

    #[test]
    fn no_storm_without_the_mechanism() {
        for set in [
            "backend.drop_expired=true",
            "backend.discipline=\"lifo\"",
            "backend.queue_limit=2000",
        ] {
            let s = crate::scenario::load_str(
                include_str!("../../scenarios/spanner-90s.json"),
                "spanner-90s.json",
                &[set.to_string()],
            )
            .unwrap();
            let e = estimate(s.spec(), &s.policies()[0], &ctx(1.0, 1));
            assert!(e.no_storm.is_some(), "{set}");
            assert!((e.attempts_rule.unwrap() - 2500.0).abs() < 1e-9, "{set}");
        }
    }

    #[test]
    fn unbounded_attempts_sustain_any_load() {
        // No-jitter retries with no deadline never stop.
        let s = spanner();
        assert_eq!(storm_attempts(&s.policies()[0], 1_000_000_000, None), None);
        // One retry after the timeout: two attempts.
        let h = hotos();
        assert_eq!(
            storm_attempts(&h.policies()[0], 1_000_000_000, None),
            Some(2)
        );
    }
}
