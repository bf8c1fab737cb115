//! The clients' side of a policy: the budgets, rate limiters and circuit
//! breakers they hold, and the decision after every answer — succeed,
//! retry after a delay, hedge, or give up.
//!
//! Budgets, limiters and breakers live per client, per group of clients or
//! once for all clients (their `scope`); a policy without one allocates
//! none. Every number comes from `crate::policy` (limits, delays, budget,
//! limiter and breaker state machines); this component only keeps their
//! state and asks them in the right order. It also keeps the queue of
//! attempts waiting for a rate limiter's token, first come first served,
//! and says when to wake it.

use super::connection::Connections;
use super::requests::{GiveUp, Request, Requests};
use crate::engine::SimRng;
use crate::policy::breaker::Breaker;
use crate::policy::budget::{Budget, Mark};
use crate::policy::hedging::HedgeStep;
use crate::policy::limiter::{Adaptive, LimiterOrder};
use crate::policy::scope::Scoped;
use crate::policy::{LimiterSpec, Policy, RetryVerdict};
use crate::status::Status;
use crate::time::Nanos;
use rand::Rng;
use std::collections::VecDeque;

/// What a client does after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Retry after this delay.
    Retry(Nanos),
    /// Stop, for this reason.
    GiveUp(GiveUp),
}

/// What a hedged request does after one of its attempts failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hedge {
    /// Send the next hedge now (the budget allowed it).
    Now,
    /// Send the next hedge after this delay (pushback); the budget is
    /// asked then.
    After(Nanos),
    /// No hedge follows: the request ends when no attempt is left out.
    NoMore,
    /// The next hedge was refused (by the budget, or with retries switched
    /// off): hedging stops for this reason.
    Refused(GiveUp),
    /// A fatal status: the request fails.
    Fatal,
    /// Nothing changes: the hedge already scheduled goes at its time.
    Wait,
    /// The failure took the throttle to its threshold: this attempt is
    /// committed and the request ends with its status (grpc-java).
    Commit,
}

/// Whether an attempt may go now through its client's rate limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// It may (it took a token, or the limiter is off).
    Go,
    /// It waits in the limiter's queue; wake the limiter as said, if said.
    Wait(Option<Wake>),
}

/// A limiter wants to be woken at `at` (event carrying `index`, `wgen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    /// The limiter instance.
    pub index: u32,
    /// Its wake generation (older wake-ups are stale).
    pub wgen: u32,
    /// When.
    pub at: Nanos,
}

/// What a woken limiter does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// The request in this slot got its token: send it.
    Send(u32),
    /// The head of the queue waits for the next token: wake up then.
    WakeAt(Wake),
    /// Nobody waits.
    Idle,
}

/// One rate limiter instance and the attempts queued behind it.
#[derive(Clone, Debug)]
struct Limiter {
    state: Adaptive,
    /// Waiting requests as (slot, generation), oldest first (in random
    /// order, taken out of the middle); entries whose request has moved on
    /// are skipped.
    queue: VecDeque<(u32, u32)>,
    /// The wake-up scheduled for the head of the queue, if any.
    wake: Option<(Nanos, u32)>,
    wgen: u32,
}

impl Limiter {
    /// Plans a wake-up at `at` unless an earlier one is already planned.
    fn plan(&mut self, index: usize, at: Nanos) -> Option<Wake> {
        if matches!(self.wake, Some((planned, _)) if planned <= at) {
            return None;
        }
        self.wgen = self.wgen.wrapping_add(1);
        self.wake = Some((at, self.wgen));
        Some(Wake {
            index: index as u32,
            wgen: self.wgen,
            at,
        })
    }
}

/// The client-side state of one run under one policy.
#[derive(Clone, Debug)]
pub struct Clients<'a> {
    policy: &'a Policy,
    budgets: Option<Scoped<Budget>>,
    breakers: Option<Scoped<Breaker>>,
    limiters: Option<Scoped<Limiter>>,
    /// Draws which waiting attempt a limiter serves, when its order is
    /// random (see [`Clients::set_limiter_rng`]).
    limiter_rng: Option<SimRng>,
    rng: SimRng,
    retries_disabled: bool,
    /// The policy's [`Policy::fixed_delay`], read once.
    fixed_delay: Option<Nanos>,
    /// The channels of a policy with `reconnect` to a backend that
    /// crashes (`None`: a new connection per attempt).
    connections: Option<Connections>,
}

impl<'a> Clients<'a> {
    /// `clients` clients following `policy`, drawing jitter from `rng`.
    pub fn new(policy: &'a Policy, clients: u32, rng: SimRng) -> Clients<'a> {
        let budgets = policy
            .budget
            .as_ref()
            .map(|b| Scoped::new(b.scope(), clients, || Budget::new(b)));
        let breakers = policy
            .breaker
            .as_ref()
            .map(|b| Scoped::new(b.scope, clients, || Breaker::new(b)));
        let limiters = policy.rate_limiter.as_ref().map(|l| {
            let LimiterSpec::AwsAdaptive(spec) = l;
            Scoped::new(l.scope(), clients, || Limiter {
                state: Adaptive::new(spec),
                queue: VecDeque::new(),
                wake: None,
                wgen: 0,
            })
        });
        Clients {
            policy,
            budgets,
            breakers,
            limiters,
            limiter_rng: None,
            rng,
            retries_disabled: false,
            fixed_delay: policy.fixed_delay(),
            connections: None,
        }
    }

    /// The clients keep channels to their backend (a policy with
    /// `reconnect`, a backend that crashes).
    pub fn set_connections(&mut self, connections: Option<Connections>) {
        self.connections = connections;
    }

    /// Whether the clients keep channels (their local failures are
    /// counted).
    pub fn has_connections(&self) -> bool {
        self.connections.is_some()
    }

    /// Whether `client`'s channel is connected at `now`; always, without
    /// channels. A disconnected channel fails the attempt at the client.
    #[inline]
    pub fn connected(&mut self, now: Nanos, client: u32) -> bool {
        match self.connections.as_mut() {
            None => true,
            Some(c) => c.connected(now, client),
        }
    }

    fn budget(&mut self, client: u32) -> Option<&mut Budget> {
        self.budgets.as_mut().map(|b| b.of(client))
    }

    fn breaker(&mut self, client: u32) -> Option<&mut Breaker> {
        self.breakers.as_mut().map(|b| b.of(client))
    }

    /// The operator switches retries off (or back on).
    pub fn set_retries_disabled(&mut self, disabled: bool) {
        self.retries_disabled = disabled;
    }

    /// `client` starts a new request; `mark` is the request's budget
    /// memory.
    pub fn on_request(&mut self, now: Nanos, client: u32, mark: &mut Mark) {
        if let Some(b) = self.budget(client) {
            b.on_request(now, mark);
        }
    }

    /// Whether `client`'s breaker lets an attempt out now. A retries-only
    /// breaker never sees first attempts (so they do not use up half-open
    /// probes either).
    ///
    /// Without breakers (most policies) the answer is a test inlined into
    /// every send; the breaker's own check is out of line.
    #[inline(always)]
    pub fn may_send(&mut self, now: Nanos, client: u32, first: bool) -> bool {
        self.breakers.is_none() || self.breaker_allows(now, client, first)
    }

    /// [`Clients::may_send`] with breakers.
    #[inline(never)]
    fn breaker_allows(&mut self, now: Nanos, client: u32, first: bool) -> bool {
        let gated = !first || !self.policy.breaker.as_ref().is_some_and(|b| b.retries_only);
        match self.breaker(client) {
            Some(br) if gated => br.allow(now),
            _ => true,
        }
    }

    /// An attempt of `client` goes out.
    #[inline]
    pub fn on_send(&mut self, client: u32) {
        if let Some(b) = self.budget(client) {
            b.on_send();
        }
    }

    /// The client stops waiting for attempt `attempt` of `r` (an answer or
    /// a timeout): it no longer counts as active, and a retry it was is
    /// resolved.
    #[inline]
    pub fn attempt_done(&mut self, r: &mut Request, attempt: u32) {
        if let Some(b) = self.budgets.as_mut().map(|b| b.of(r.client)) {
            b.on_attempts_over(1);
            if attempt > 1 {
                b.on_retry_over(&mut r.mark);
            }
        }
    }

    /// `r` ended with `open` attempts still out (now cancelled or
    /// abandoned): they stop counting, and whatever the request held in its
    /// budget is given back.
    pub fn request_ended(&mut self, r: &mut Request, open: u32) {
        if let Some(b) = self.budgets.as_mut().map(|b| b.of(r.client)) {
            b.on_attempts_over(open);
            b.on_request_end(&mut r.mark);
        }
    }

    /// An attempt of `r` succeeded (`attempt` is its number). Without a
    /// budget or a breaker to tell, nothing happens, tested inline.
    #[inline(always)]
    pub fn on_success(&mut self, now: Nanos, r: &Request, attempt: u32) {
        if self.budgets.is_some() || self.breakers.is_some() {
            self.record_success(now, r, attempt);
        }
    }

    /// [`Clients::on_success`] with a budget or a breaker.
    #[inline(never)]
    fn record_success(&mut self, now: Nanos, r: &Request, attempt: u32) {
        if let Some(g) = self.budget(r.client) {
            g.on_success(now, attempt > 1, r.mark);
        }
        if let Some(br) = self.breaker(r.client) {
            br.record(now, true);
        }
    }

    /// `client` gave up a request while `open` attempts were out: each
    /// counts as a failure for the breaker, or a half-open breaker would
    /// wait for ever.
    pub fn on_abandoned(&mut self, now: Nanos, client: u32, open: u32) {
        if let Some(br) = self.breaker(client) {
            for _ in 0..open {
                br.record(now, false);
            }
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
        if let Some(br) = self.breaker(r.client) {
            br.record(now, false);
        }
        let verdict = self.policy.verdict(status, r.attempts, r.retry_age(now));
        if verdict != RetryVerdict::NotRetryable {
            if let Some(b) = self.budget(r.client) {
                b.on_failure(now);
            }
        }
        if verdict != RetryVerdict::Retry {
            if let Some(b) = self.budget(r.client) {
                b.on_not_retried(now);
            }
        }
        match verdict {
            RetryVerdict::NotRetryable => Decision::GiveUp(GiveUp::NotRetryable),
            RetryVerdict::Exhausted => Decision::GiveUp(GiveUp::Limits),
            RetryVerdict::Retry => {
                if self.retries_disabled {
                    return Decision::GiveUp(GiveUp::RetriesDisabled);
                }
                let mut wait = 0;
                if let Some(b) = self.budgets.as_mut().map(|b| b.of(r.client)) {
                    match b.try_retry(now, status, timeout, &mut r.mark) {
                        Some(w) => wait = w,
                        None => return Decision::GiveUp(GiveUp::Budget),
                    }
                }
                let honoured = pushback.filter(|_| self.policy.honor_retry_after);
                if let (Some(d), None) = (self.fixed_delay, honoured) {
                    r.backoff.previous = d;
                    return Decision::Retry(d.max(wait));
                }
                let u = if self.policy.delay_is_random() {
                    self.rng.random::<f64>()
                } else {
                    0.0
                };
                let throttled = !timeout && status == Status::ResourceExhausted;
                let delay =
                    self.policy
                        .next_delay(r.attempts, &mut r.backoff, u, pushback, throttled);
                Decision::Retry(delay.max(wait))
            }
        }
    }

    /// `r`'s attempt failed after response headers, with a policy that
    /// commits on them (`commit_on_headers`): the breaker counts the
    /// failure; the budget is told nothing it would not be for a status
    /// the policy does not retry (for a hedged request, nothing at all,
    /// as for a fatal status).
    pub fn on_committed_failure(&mut self, now: Nanos, r: &Request) {
        if let Some(br) = self.breaker(r.client) {
            br.record(now, false);
        }
        if self.policy.hedging.is_none() {
            if let Some(b) = self.budget(r.client) {
                b.on_not_retried(now);
            }
        }
    }

    /// A hedged request's attempt failed with `status` (`timeout`: the
    /// client gave up on it); `pushback` as for [`Clients::on_failure`];
    /// `frozen`: no more hedges may go.
    pub fn on_hedge_failure(
        &mut self,
        now: Nanos,
        r: &mut Request,
        status: Status,
        frozen: bool,
        pushback: Option<Nanos>,
    ) -> Hedge {
        let Some(h) = self.policy.hedging else {
            unreachable!("only hedged requests come here")
        };
        if let Some(br) = self.breaker(r.client) {
            br.record(now, false);
        }
        let pushback = pushback.filter(|_| self.policy.honor_retry_after);
        let step = h.after_failure(status, r.attempts, frozen, pushback);
        if step != HedgeStep::Fatal {
            if let Some(b) = self.budget(r.client) {
                b.on_failure(now);
                // grpc-java: a plan no longer hedgeable commits this attempt.
                if h.throttles_when_scheduled() && b.throttled() {
                    return Hedge::Commit;
                }
            }
        }
        match step {
            HedgeStep::Fatal => Hedge::Fatal,
            HedgeStep::NoMore => Hedge::NoMore,
            HedgeStep::Wait => Hedge::Wait,
            HedgeStep::SendAfter(d) => Hedge::After(d),
            HedgeStep::SendNow => match self.may_hedge(now, r) {
                Ok(()) => Hedge::Now,
                Err(why) => Hedge::Refused(why),
            },
        }
    }

    /// Whether `r` may send its next hedge now: retries are on and the
    /// budget allows it at once (a hedge is a retry to the budget, A6; a
    /// `rate` budget lets it go only with a token in hand). `Err` says why
    /// not.
    pub fn may_hedge(&mut self, now: Nanos, r: &mut Request) -> Result<(), GiveUp> {
        if self.retries_disabled {
            return Err(GiveUp::RetriesDisabled);
        }
        let allowed = self
            .budgets
            .as_mut()
            .is_none_or(|b| b.of(r.client).try_hedge(now, &mut r.mark));
        allowed.then_some(()).ok_or(GiveUp::Budget)
    }

    /// Whether an operator switched retries (and hedges) off.
    pub fn retries_off(&self) -> bool {
        self.retries_disabled
    }

    /// Whether the policy has a client-side rate limiter.
    pub fn has_limiter(&self) -> bool {
        self.limiters.is_some()
    }

    /// The request in `slot` (generation `gen`) of `client` wants to send
    /// an attempt at `now`.
    pub fn limiter_admit(&mut self, now: Nanos, client: u32, slot: u32, gen: u32) -> Admit {
        let Some(ls) = self.limiters.as_mut() else {
            return Admit::Go;
        };
        let index = ls.index_of(client);
        let l = ls.get_mut(index);
        if l.queue.is_empty() {
            match l.state.acquire(now) {
                None => return Admit::Go,
                Some(wait) => {
                    l.queue.push_back((slot, gen));
                    return Admit::Wait(l.plan(index, now.saturating_add(wait)));
                }
            }
        }
        l.queue.push_back((slot, gen));
        Admit::Wait(None)
    }

    /// Whether the wake-up `(index, wgen)` is the limiter's current one
    /// (and consumes it).
    pub fn limiter_woken(&mut self, index: u32, wgen: u32) -> bool {
        let Some(ls) = self.limiters.as_mut() else {
            return false;
        };
        let l = ls.get_mut(index as usize);
        match l.wake {
            Some((_, g)) if g == wgen => {
                l.wake = None;
                true
            }
            _ => false,
        }
    }

    /// Gives a policy whose limiter serves its waiting attempts in random
    /// order its own stream of draws (so the other streams are the same
    /// whatever the order).
    pub fn set_limiter_rng(&mut self, rng: SimRng) {
        if let Some(LimiterSpec::AwsAdaptive(a)) = self.policy.rate_limiter.as_ref() {
            if a.order == LimiterOrder::Random {
                self.limiter_rng = Some(rng);
            }
        }
    }

    /// The next request limiter `index` lets go at `now`, if any: the
    /// oldest waiting, or one drawn at random.
    pub fn limiter_next(&mut self, now: Nanos, index: u32, reqs: &Requests) -> Release {
        let Some(ls) = self.limiters.as_mut() else {
            return Release::Idle;
        };
        let l = ls.get_mut(index as usize);
        while !l.queue.is_empty() {
            let i = match self.limiter_rng.as_mut() {
                Some(rng) if l.queue.len() > 1 => rng.random_range(0..l.queue.len()),
                _ => 0,
            };
            let (slot, gen) = l.queue[i];
            if !reqs.is_waiting(slot, gen) {
                take(&mut l.queue, i);
                continue;
            }
            return match l.state.acquire(now) {
                None => {
                    take(&mut l.queue, i);
                    Release::Send(slot)
                }
                Some(wait) => match l.plan(index as usize, now.saturating_add(wait)) {
                    Some(w) => Release::WakeAt(w),
                    None => Release::Idle,
                },
            };
        }
        Release::Idle
    }

    /// An attempt of `client` ended at `now` (an answer, `throttled` when
    /// it was a throttling error, or a timeout): the limiter learns from
    /// it. Returns an earlier wake-up for its queue when the rate rose.
    #[inline]
    pub fn limiter_response(&mut self, now: Nanos, client: u32, throttled: bool) -> Option<Wake> {
        let ls = self.limiters.as_mut()?;
        Self::limiter_learns(ls, now, client, throttled)
    }

    /// [`Clients::limiter_response`] once there are limiters: out of line,
    /// so that a policy without one pays a test.
    #[inline(never)]
    fn limiter_learns(
        ls: &mut Scoped<Limiter>,
        now: Nanos,
        client: u32,
        throttled: bool,
    ) -> Option<Wake> {
        let index = ls.index_of(client);
        let l = ls.get_mut(index);
        l.state.on_response(now, throttled);
        if l.queue.is_empty() {
            return None;
        }
        let wait = l.state.time_to_token(now);
        l.plan(index, now.saturating_add(wait))
    }
}

/// Takes entry `i` out of a limiter's queue: the head keeps the order of
/// the others; one from the middle (random order) swaps in the last.
fn take(queue: &mut VecDeque<(u32, u32)>, i: usize) {
    if i == 0 {
        queue.pop_front();
    } else {
        queue.swap_remove_back(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, Stream};
    use crate::model::requests::Requests;
    use crate::policy::{resolve, BackoffSpec, BreakerSpec, BudgetScope, PolicySpec};
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
        let slot = reqs.open(0, 0, true, false);
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
            let slot = reqs.open(0, 0, true, false);
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
    fn aws_2026_pushback_is_held_between_the_backoff_and_five_seconds_more() {
        // botocore with AWS_NEW_RETRIES_2026 (and the cross-SDK table in
        // aws-sdk-go-v2 aws/retry/retry2026_test.go): with the jitter draw
        // at its top, t = 50 ms after a 500; retry-after 1.5 s → 1.5 s,
        // 0 → 50 ms, 10 s → 5.05 s; a throttling error's base is 1 s.
        let p = policy(
            r#"{"name": "p", "max_attempts": 3, "honor_retry_after": true,
                "pushback": {"bounded": "5s"}, "jitter": "none",
                "backoff": {"exponential": {"initial": "50ms", "max": "20s"}},
                "throttling_backoff": {"exponential": {"initial": "1s", "max": "20s"}}}"#,
        );
        let ms = 1_000_000;
        let mut st = crate::policy::RetryState::default();
        assert_eq!(
            p.next_delay(1, &mut st, 0.0, Some(1500 * ms), false),
            1500 * ms
        );
        assert_eq!(p.next_delay(1, &mut st, 0.0, Some(0), false), 50 * ms);
        assert_eq!(
            p.next_delay(1, &mut st, 0.0, Some(10 * S), false),
            5050 * ms
        );
        assert_eq!(p.next_delay(1, &mut st, 0.0, None, true), S);
        assert_eq!(p.next_delay(2, &mut st, 0.0, None, false), 100 * ms);
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
        let a = reqs.open(0, 0, true, false);
        for _ in 0..2 {
            reqs.begin_attempt(a, 0);
            c.on_failure(0, &mut reqs[a as usize], Status::Unavailable, false, None);
        }
        assert!(!c.may_send(0, 0, false), "client 0's breaker opened");
        assert!(c.may_send(0, 1, false), "client 1 has its own");
        c.set_retries_disabled(true);
        let b = reqs.open(1, 0, true, false);
        reqs.begin_attempt(b, 0);
        let d = c.on_failure(0, &mut reqs[b as usize], Status::Unavailable, false, None);
        assert_eq!(d, Decision::GiveUp(GiveUp::RetriesDisabled));
    }

    #[test]
    fn a_rate_budget_delays_the_retry_to_its_token() {
        // Burst 1, 1 per second: the first retry goes after its 10 ms
        // backoff, the second (same instant) waits a second for its token.
        let p = policy(
            r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "10ms"}},
                "budget": {"rate": {"per_second": 1, "burst": 1}}}"#,
        );
        let mut c = Clients::new(&p, 1, stream(1, 0, Stream::Backoff));
        let mut reqs = Requests::default();
        let a = reqs.open(0, 0, true, false);
        let b = reqs.open(0, 0, true, false);
        reqs.begin_attempt(a, 0);
        reqs.begin_attempt(b, 0);
        let u = Status::Unavailable;
        let da = c.on_failure(0, &mut reqs[a as usize], u, false, None);
        let db = c.on_failure(0, &mut reqs[b as usize], u, false, None);
        assert_eq!(da, Decision::Retry(10_000_000));
        assert_eq!(db, Decision::Retry(S));
    }
}
