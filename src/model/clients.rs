//! The clients' side of a policy: the budgets and circuit breakers they
//! hold, and the decision after every answer — succeed, retry after a
//! delay, or give up.
//!
//! Budgets and breakers live per client or once for all clients (their
//! `scope`); a policy without one allocates none. Every number comes from
//! `crate::policy` (limits, delays, budget and breaker state machines);
//! this component only keeps their state and asks them in the right order.

use super::requests::{GiveUp, Request};
use crate::engine::SimRng;
use crate::policy::breaker::Breaker;
use crate::policy::budget::Budget;
use crate::policy::{BudgetScope, Policy, RetryVerdict};
use crate::status::Status;
use crate::time::Nanos;
use rand::Rng;

/// What a client does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Retry after this delay.
    Retry(Nanos),
    /// Stop, for this reason.
    GiveUp(GiveUp),
}

/// One instance per client, or one for all when the scope is global.
fn per_scope<T>(make: impl Fn() -> T, global: bool, clients: u32) -> Vec<T> {
    let n = if global { 1 } else { clients.max(1) as usize };
    (0..n).map(|_| make()).collect()
}

/// The instance that holds `client`'s state.
fn for_client<T>(v: &mut [T], client: u32) -> Option<&mut T> {
    match v.len() {
        0 => None,
        1 => v.first_mut(),
        n => v.get_mut(client as usize % n),
    }
}

/// The client-side state of one run under one policy.
#[derive(Debug)]
pub struct Clients<'a> {
    policy: &'a Policy,
    budgets: Vec<Budget>,
    breakers: Vec<Breaker>,
    rng: SimRng,
    retries_disabled: bool,
}

impl<'a> Clients<'a> {
    /// `clients` clients following `policy`, drawing jitter from `rng`.
    pub fn new(policy: &'a Policy, clients: u32, rng: SimRng) -> Clients<'a> {
        let budgets = policy.budget.as_ref().map_or_else(Vec::new, |b| {
            per_scope(|| Budget::new(b), b.scope() == BudgetScope::Global, clients)
        });
        let breakers = policy.breaker.as_ref().map_or_else(Vec::new, |b| {
            per_scope(|| Breaker::new(b), b.scope == BudgetScope::Global, clients)
        });
        Clients {
            policy,
            budgets,
            breakers,
            rng,
            retries_disabled: false,
        }
    }

    /// The operator switches retries off (or back on).
    pub fn set_retries_disabled(&mut self, disabled: bool) {
        self.retries_disabled = disabled;
    }

    /// `client` starts a new request.
    pub fn on_request(&mut self, now: Nanos, client: u32) {
        if let Some(b) = for_client(&mut self.budgets, client) {
            b.on_request(now);
        }
    }

    /// Whether `client`'s breaker lets an attempt out now. A retries-only
    /// breaker never sees first attempts (so they do not use up half-open
    /// probes either).
    pub fn may_send(&mut self, now: Nanos, client: u32, first: bool) -> bool {
        let gated = !first || !self.policy.breaker.as_ref().is_some_and(|b| b.retries_only);
        match for_client(&mut self.breakers, client) {
            Some(br) if gated => br.allow(now),
            _ => true,
        }
    }

    /// An attempt of `r` succeeded.
    pub fn on_success(&mut self, now: Nanos, r: &Request) {
        if let Some(g) = for_client(&mut self.budgets, r.client) {
            g.on_success(now, r.attempts > 1);
        }
        if let Some(br) = for_client(&mut self.breakers, r.client) {
            br.record(now, true);
        }
    }

    /// `client` gave up a request while an attempt was out: it counts as a
    /// failure for the breaker, or a half-open breaker would wait for ever.
    pub fn on_abandoned(&mut self, now: Nanos, client: u32) {
        if let Some(br) = for_client(&mut self.breakers, client) {
            br.record(now, false);
        }
    }

    /// An attempt of `r` failed with `status` (`timeout`: the client gave
    /// up waiting for it); the server sent `pushback` with it, if any.
    /// Decides what the client does next.
    pub fn on_failure(
        &mut self,
        now: Nanos,
        r: &mut Request,
        status: Status,
        timeout: bool,
        pushback: Option<Nanos>,
    ) -> Decision {
        if let Some(br) = for_client(&mut self.breakers, r.client) {
            br.record(now, false);
        }
        let verdict = self.policy.verdict(status, r.attempts, r.retry_age(now));
        if verdict != RetryVerdict::NotRetryable {
            if let Some(b) = for_client(&mut self.budgets, r.client) {
                b.on_failure(now);
            }
        }
        match verdict {
            RetryVerdict::NotRetryable => Decision::GiveUp(GiveUp::NotRetryable),
            RetryVerdict::Exhausted => Decision::GiveUp(GiveUp::Limits),
            RetryVerdict::Retry => {
                if self.retries_disabled {
                    return Decision::GiveUp(GiveUp::RetriesDisabled);
                }
                if let Some(b) = for_client(&mut self.budgets, r.client) {
                    if !b.try_retry(now, timeout) {
                        return Decision::GiveUp(GiveUp::Budget);
                    }
                }
                let u = if self.policy.delay_is_random() {
                    self.rng.random::<f64>()
                } else {
                    0.0
                };
                Decision::Retry(
                    self.policy
                        .next_delay(r.attempts, &mut r.backoff, u, pushback),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, Stream};
    use crate::model::requests::Requests;
    use crate::policy::{resolve, BackoffSpec, BreakerSpec, PolicySpec};
    use crate::time::{Dur, NS_PER_SEC as S};

    fn policy(json: &str) -> Policy {
        let spec: PolicySpec = serde_json::from_str(json).unwrap();
        resolve(&spec).unwrap()
    }

    #[test]
    fn retries_until_the_limit_then_drops() {
        let p =
            policy(r#"{"name": "p", "max_attempts": 3, "backoff": {"constant": {"delay": "2s"}}}"#);
        let mut c = Clients::new(&p, 1, stream(1, 0, Stream::Backoff));
        let mut reqs = Requests::default();
        let slot = reqs.open(0, 0, true);
        let u = Status::Unavailable;
        for _ in 0..2 {
            reqs.begin_attempt(slot, 0);
            let d = c.on_failure(S, &mut reqs[slot as usize], u, false, None);
            assert_eq!(d, Decision::Retry(2 * S));
        }
        reqs.begin_attempt(slot, 0);
        let d = c.on_failure(S, &mut reqs[slot as usize], u, false, None);
        assert_eq!(d, Decision::GiveUp(GiveUp::Limits), "3 attempts in all");
        let d = c.on_failure(S, &mut reqs[slot as usize], Status::Internal, false, None);
        assert_eq!(d, Decision::GiveUp(GiveUp::NotRetryable), "not in retry_on");
    }

    #[test]
    fn pushback_is_honoured_only_when_the_policy_says_so() {
        let text = |honor: bool| {
            format!(
                r#"{{"name": "p", "max_attempts": 5, "honor_retry_after": {honor},
                    "backoff": {{"constant": {{"delay": "1s"}}}}}}"#
            )
        };
        for (honor, want) in [(false, S), (true, 7 * S)] {
            let p = policy(&text(honor));
            let mut c = Clients::new(&p, 1, stream(1, 0, Stream::Backoff));
            let mut reqs = Requests::default();
            let slot = reqs.open(0, 0, true);
            reqs.begin_attempt(slot, 0);
            let d = c.on_failure(
                0,
                &mut reqs[slot as usize],
                Status::Unavailable,
                false,
                Some(7 * S),
            );
            assert_eq!(d, Decision::Retry(want), "honour {honor}");
        }
    }

    #[test]
    fn switched_off_retries_drop_and_breakers_gate_per_client() {
        let mut p =
            policy(r#"{"name": "p", "max_attempts": 5, "backoff": {"constant": {"delay": "1s"}}}"#);
        p.breaker = Some(BreakerSpec {
            failure_rate: 0.5,
            window: Dur::from_secs(10),
            open_for: Dur::from_secs(5),
            half_open_probes: 1,
            min_calls: 2,
            retries_only: false,
            scope: BudgetScope::Client,
        });
        p.backoff = BackoffSpec::Constant {
            delay: Dur::from_secs(1),
        }
        .resolve();
        let mut c = Clients::new(&p, 2, stream(1, 0, Stream::Backoff));
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true);
        for _ in 0..2 {
            reqs.begin_attempt(a, 0);
            c.on_failure(0, &mut reqs[a as usize], Status::Unavailable, false, None);
        }
        assert!(!c.may_send(0, 0, false), "client 0's breaker opened");
        assert!(c.may_send(0, 1, false), "client 1 has its own");
        c.set_retries_disabled(true);
        let b = reqs.open(1, 0, true);
        reqs.begin_attempt(b, 0);
        let d = c.on_failure(0, &mut reqs[b as usize], Status::Unavailable, false, None);
        assert_eq!(d, Decision::GiveUp(GiveUp::RetriesDisabled));
    }
}
