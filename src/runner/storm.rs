//! How many attempts a request makes at every tier when its attempts fail:
//! the mechanisms that bound a retry storm, walked before a run so that its
//! cost is known. Used by [`super::estimate`].
//!
//! A run is split into *failing stretches* of each tier: the window of a
//! fault at that tier or below (an outage, an error burst, a blackhole, or
//! a slowdown or capacity cut that puts the load above what is left), and
//! the rest of the run once new requests alone exceed a tier's capacity
//! with no fault at all (a load spike, or overload from the start). In a
//! stretch every attempt fails; the least time between a failure and the
//! next attempt is the policy's backoff (or the backend's pushback) plus
//! what the failure itself takes: the round trip of the network, an error's
//! service, a rejection's cost, or an attempt timeout. A request arriving
//! in the stretch retries through what is left of it, up to its attempt
//! cap, its retry window (deadline, `max_retry_duration`) and the retry
//! budget or breaker of its policy (the closed-form bounds of
//! `crate::policy::bounds`). Each tier's attempts are multiplied by the
//! attempts and `calls` of the tiers above. A retry that takes no time and
//! is never capped is an unbounded storm.

use crate::engine::rng::SimRng;
use crate::model::dist::Dist;
use crate::policy::bounds::Context;
use crate::policy::Policy;
use crate::scenario::spec::{BackendKind, DistSpec, FaultSpec, Mode, ScenarioSpec};
use crate::scenario::Scenario;
use crate::status::Status;
use crate::time::Nanos;
use rand::SeedableRng;

/// Arrival times averaged over within a failing stretch.
const ARRIVALS: u64 = 8;

/// Attempts a request causes, per tier.
#[derive(Clone, Debug, PartialEq)]
pub struct Storm {
    /// Attempts reaching tier `t` (0 = the top backend) per request, on
    /// average over the run.
    pub tiers: Vec<f64>,
    /// Attempts at tier `t` per attempt at tier `t − 1` (per request for
    /// the top): its `calls` × its attempts per call.
    pub factors: Vec<f64>,
    /// The share of the run in which the top tier's attempts fail (at
    /// most 1).
    pub stormy: f64,
    /// Why the attempts are not bounded at all, when they are not: the
    /// tier (0 = the top backend), and the policy, what fails the
    /// attempts and the mechanism to change, in words.
    pub unbounded: Option<(usize, String)>,
}

impl Storm {
    /// Attempts at every tier per request, in all.
    pub fn attempts(&self) -> f64 {
        self.tiers.iter().sum()
    }
}

/// One failing stretch of a tier.
#[derive(Clone, Debug)]
struct Stretch {
    start: Nanos,
    end: Nanos,
    /// Time a failed attempt takes before its backoff starts.
    floor: Nanos,
    /// The status attempts fail with.
    status: Status,
    /// The share of attempts that fail (below 1 for an error burst).
    share: f64,
    /// The share of requests caught in it: the load above capacity for
    /// an overload (the rest are served), 1 for a fault.
    excess: f64,
    /// Pushback the failure carries.
    pushback: Option<Nanos>,
    /// What fails the attempts, in words.
    what: String,
}

/// The attempts a request of `scenario` makes under its policy `i`, with
/// `requests` requests in the run.
pub fn storm(scenario: &Scenario, i: usize, requests: f64) -> Storm {
    let spec = scenario.spec();
    let top = &scenario.policies()[i];
    let tiers = scenario.tier_policies(i);
    let mut out = Storm {
        tiers: Vec::with_capacity(tiers.len() + 1),
        factors: Vec::with_capacity(tiers.len() + 1),
        stormy: 0.0,
        unbounded: None,
    };
    let mut reaching = 1.0;
    for t in 0..=tiers.len() {
        let policy = if t == 0 { top } else { &tiers[t - 1] };
        let calls = if t == 0 {
            1.0
        } else {
            f64::from(spec.downstream[t - 1].calls)
        };
        let (per_call, share, why) = tier_attempts(spec, t, policy, requests * reaching * calls);
        let per_call = if t == 0 {
            per_call.max(contention_attempts(spec, policy))
        } else {
            per_call
        };
        if t == 0 {
            out.stormy = share.min(1.0);
        }
        if out.unbounded.is_none() {
            out.unbounded = why.map(|w| (t, w));
        }
        reaching *= calls * per_call;
        out.tiers.push(reaching);
        out.factors.push(calls * per_call);
    }
    out
}

/// The mean of a distribution, ns (0 when absent).
pub fn mean_ns(d: Option<&DistSpec>) -> f64 {
    d.map_or(0.0, |d| Dist::new(d).mean())
}

/// A stretch of attempts that time out after `floor` ns each (its window
/// set by the caller): `what` says where.
fn timeout_stretch(floor: Nanos, what: &str) -> Stretch {
    Stretch {
        start: 0,
        end: 0,
        floor,
        status: Status::DeadlineExceeded,
        share: 1.0,
        excess: 1.0,
        pushback: None,
        what: what.into(),
    }
}

/// How long the caller of tier `t` waits for one attempt (`None`: until
/// answered).
fn attempt_timeout(spec: &ScenarioSpec, t: usize) -> Option<Nanos> {
    if t == 0 {
        match &spec.dispatcher {
            Some(d) => Some(d.dispatch_deadline.ns()),
            None => spec.traffic.attempt_timeout.map(|d| d.ns()),
        }
    } else {
        spec.downstream[t - 1].attempt_timeout.map(|d| d.ns())
    }
}

/// New attempts per second reaching tier `k` with one attempt per call,
/// at the highest rate of the traffic.
fn offered(spec: &ScenarioSpec, k: usize) -> f64 {
    let t = &spec.traffic;
    let base = match t.mode {
        Mode::Open | Mode::Pool => t.rate.unwrap_or(0.0) * t.scale_range().1,
        // One per client and cycle: a bound only when the cycle is long.
        Mode::Closed | Mode::Burst => 0.0,
    };
    spec.downstream[..k]
        .iter()
        .fold(base, |r, d| r * f64::from(d.calls))
}

/// Tier `k`'s capacity without faults, requests per second.
fn capacity(spec: &ScenarioSpec, k: usize) -> Option<f64> {
    let b = spec.tier_backend(k);
    b.capacity_rps(mean_ns(b.service_time.as_ref()))
}

/// How an overloaded tier `t` fails attempts whose tier `k` is full: the
/// fastest of a rejection (a waiting room or a concurrency limit) and the
/// caller's timeout; `None` when nothing fails them (they wait).
fn overload_failure(spec: &ScenarioSpec, t: usize, k: usize, net: Nanos) -> Option<Stretch> {
    let b = spec.tier_backend(k);
    let rejects = b.queue_limit.is_some()
        || (b.kind == BackendKind::Concurrency && b.max_concurrency.is_some());
    let reject = rejects.then(|| Stretch {
        start: 0,
        end: 0,
        floor: net.saturating_add(b.reject_cost.ns()),
        status: b.reject_status,
        share: 1.0,
        excess: 1.0,
        pushback: b.retry_after.map(|d| d.ns()),
        what: format!("rejections of tier {:?}", spec.tier_names()[k]),
    });
    let timeout = attempt_timeout(spec, t).map(|d| timeout_stretch(d, "attempt timeouts"));
    match (reject, timeout) {
        (Some(r), Some(o)) => Some(if r.floor <= o.floor { r } else { o }),
        (r, o) => r.or(o),
    }
}

/// The failing stretches of tier `t`.
fn stretches(spec: &ScenarioSpec, t: usize) -> Vec<Stretch> {
    let end = spec.duration.ns();
    let net = round_trip(spec, t);
    let mut out = Vec::new();
    for f in &spec.faults {
        let Some(k) = spec.tier_index(f.tier()) else {
            continue;
        };
        if k < t {
            continue;
        }
        let (s, e) = f.window();
        let (s, e) = (s.min(end), e.min(end));
        if e <= s {
            continue;
        }
        if let Some(mut st) = fault_failure(spec, t, k, net, f) {
            st.start = s;
            st.end = e;
            out.push(st);
        }
    }
    out.extend(overload_stretches(spec, t, net));
    out
}

/// The network's share of a failed attempt's time at tier `t`: the round
/// trip of the top tier's requests (four hops on a `contention` record),
/// none for the calls between tiers.
fn round_trip(spec: &ScenarioSpec, t: usize) -> Nanos {
    if t == 0 {
        let hops = if spec.backend.kind == BackendKind::Contention {
            4.0
        } else {
            2.0
        };
        (hops * mean_ns(spec.traffic.network_delay.as_ref())) as Nanos
    } else {
        0
    }
}

/// How fault `f` of tier `k` fails the attempts of tier `t` (`net`: the
/// network's share of their time), if it does: the stretch without its
/// window (start and end 0), which [`stretches`] sets to the fault's.
fn fault_failure(
    spec: &ScenarioSpec,
    t: usize,
    k: usize,
    net: Nanos,
    f: &FaultSpec,
) -> Option<Stretch> {
    let b = spec.tier_backend(k);
    let cap = capacity(spec, k);
    match *f {
        FaultSpec::Outage { status, .. } => Some(Stretch {
            start: 0,
            end: 0,
            floor: net,
            status,
            share: 1.0,
            excess: 1.0,
            pushback: b.retry_after.map(|d| d.ns()),
            what: format!("the outage of tier {:?}", spec.tier_names()[k]),
        }),
        // A refused connection answers at once, without a pushback.
        FaultSpec::Crash { .. } => Some(Stretch {
            start: 0,
            end: 0,
            floor: net,
            status: Status::Unavailable,
            share: 1.0,
            excess: 1.0,
            pushback: None,
            what: format!("the crash of tier {:?}", spec.tier_names()[k]),
        }),
        FaultSpec::Errors { rate, status, .. } => Some(Stretch {
            start: 0,
            end: 0,
            floor: net.saturating_add(mean_ns(b.service_time.as_ref()) as Nanos),
            status,
            share: rate,
            excess: 1.0,
            pushback: None,
            what: format!("the error burst of tier {:?}", spec.tier_names()[k]),
        }),
        FaultSpec::Blackhole { .. } => {
            attempt_timeout(spec, t).map(|d| timeout_stretch(d, "attempt timeouts in a blackhole"))
        }
        FaultSpec::Slowdown { factor, .. } => {
            let over = cap.and_then(|c| overloaded(spec, t, k, net, c / factor.max(1e-9)));
            let late = late_attempts(spec, t, k, net, factor);
            match (over, late) {
                (Some(o), Some(l)) => Some(if o.excess >= l.share { o } else { l }),
                (o, l) => o.or(l),
            }
        }
        FaultSpec::Capacity { workers, .. } => cap.and_then(|c| {
            let all = f64::from(b.workers.unwrap_or(1).max(1));
            overloaded(spec, t, k, net, c * f64::from(workers) / all)
        }),
    }
}

/// The stretches of tier `t` in which new requests alone overload a tier
/// at or below it, with no fault at all (`net`: the network's share of an
/// attempt's time).
fn overload_stretches(spec: &ScenarioSpec, t: usize, net: Nanos) -> Vec<Stretch> {
    let end = spec.duration.ns();
    let mut out = Vec::new();
    // Overload without a fault: new requests alone above a tier's
    // capacity, from the load spike (or the start) to the end of the run,
    // since retries keep the load up once it is over.
    for k in t..=spec.downstream.len() {
        let Some(cap) = capacity(spec, k) else {
            continue;
        };
        let Some(mut st) = overloaded(spec, t, k, net, cap) else {
            continue;
        };
        let rate0 = spec.traffic.rate.unwrap_or(0.0) * spec.traffic.scale_range().0;
        let start = match spec.traffic.load_spike(end) {
            Some((s, _)) if rate0 <= cap => s,
            _ => 0,
        };
        st.start = start;
        st.end = end;
        st.what = format!(
            "overload of tier {:?} ({:.0}/s offered, {cap:.0}/s served) through {}",
            spec.tier_names()[k],
            offered(spec, k),
            st.what
        );
        out.push(st);
    }
    out
}

/// Load, as a share of a tier's workers, above which its queue is taken
/// to grow without bound: near saturation the wait dwarfs the service, so
/// the attempts that timed out (and are still served) and their retries
/// make every attempt late.
const SATURATED: f64 = 0.9;

/// Samples drawn to find the share of attempts that outlast a timeout.
const LATE_SAMPLES: u32 = 2000;

/// How a slowdown of tier `k` by `factor` fails the attempts of tier `t`
/// by their timeout: the share whose slowed service (and network) outlasts
/// the caller's attempt timeout, drawn from the service time with a fixed
/// seed; every attempt when the late ones' retries (each still served in
/// full) bring the slowed tier near saturation. `None` without a timeout,
/// or when no attempt is late.
fn late_attempts(
    spec: &ScenarioSpec,
    t: usize,
    k: usize,
    net: Nanos,
    factor: f64,
) -> Option<Stretch> {
    let timeout = attempt_timeout(spec, t)?;
    let b = spec.tier_backend(k);
    let service = Dist::new(b.service_time.as_ref()?);
    let mut rng = SimRng::seed_from_u64(0x1a7e);
    let late = (0..LATE_SAMPLES)
        .filter(|_| {
            let slowed = service.sample(&mut rng) as f64 * factor;
            net.saturating_add(slowed as Nanos) >= timeout
        })
        .count() as f64
        / f64::from(LATE_SAMPLES);
    if late == 0.0 {
        return None;
    }
    let mean = service.mean() * factor / 1e9;
    let workers = f64::from(b.workers.unwrap_or(1).max(1));
    let busy = offered(spec, k) / (1.0 - late).max(1e-9) * mean / workers;
    let share = if late >= 1.0 || busy >= SATURATED {
        1.0
    } else {
        late
    };
    Some(Stretch {
        start: 0,
        end: 0,
        floor: timeout,
        status: Status::DeadlineExceeded,
        share,
        excess: 1.0,
        pushback: None,
        what: format!(
            "attempt timeouts in the slowdown of tier {:?}",
            spec.tier_names()[k]
        ),
    })
}

/// Attempts a request makes on a `contention` record when every
/// transaction open at a commit is aborted and retried: with `C` requests
/// contending at once, one commits per read-to-write window at worst, so
/// the request that commits `i`-th makes `i` attempts, `(C + 1) / 2` on
/// average (capped by the policy). `C` is the clients of a burst or a
/// closed loop, or the open arrivals within one read-to-write window.
fn contention_attempts(spec: &ScenarioSpec, policy: &Policy) -> f64 {
    if spec.backend.kind != BackendKind::Contention || !policy.retry_on.contains(Status::Aborted) {
        return 1.0;
    }
    let tr = &spec.traffic;
    let contenders = match tr.mode {
        Mode::Closed | Mode::Burst => f64::from(tr.clients),
        Mode::Open | Mode::Pool => {
            let window = 2.0 * mean_ns(tr.network_delay.as_ref()) / 1e9;
            1.0 + tr.rate.unwrap_or(0.0) * tr.scale_range().1 * window
        }
    };
    let limit = policy.max_attempts.map_or(f64::INFINITY, f64::from);
    ((contenders + 1.0) / 2.0).min(limit).max(1.0)
}

/// How tier `t` fails when new requests at tier `k` exceed `cap`, with
/// the share of them caught; `None` when they do not, or nothing fails
/// them.
fn overloaded(spec: &ScenarioSpec, t: usize, k: usize, net: Nanos, cap: f64) -> Option<Stretch> {
    let load = offered(spec, k);
    if load <= cap {
        return None;
    }
    let mut st = overload_failure(spec, t, k, net)?;
    st.excess = 1.0 - cap / load;
    Some(st)
}

/// The stretch after a fault of tier `t` in which retries alone keep the
/// tier above its capacity (a metastable storm): from the end of `st` to
/// the end of the run, when new requests × the attempts each makes when
/// all fail exceed what the tier serves.
fn aftermath(
    spec: &ScenarioSpec,
    t: usize,
    policy: &Policy,
    st: &Stretch,
    window: Nanos,
) -> Option<Stretch> {
    let end = spec.duration.ns();
    if st.end >= end {
        return None;
    }
    let net = st
        .floor
        .min((2.0 * mean_ns(spec.traffic.network_delay.as_ref())) as Nanos);
    let k = t;
    let cap = capacity(spec, k)?;
    let mut after = overload_failure(spec, t, k, if t == 0 { net } else { 0 })?;
    if !policy.retry_on.contains(after.status) {
        return None;
    }
    let most = policy
        .walk(window.min(end - st.end), after.floor, after.pushback, false)
        .0;
    let load = offered(spec, k) * most;
    if !load.is_finite() || load <= cap {
        return None;
    }
    after.excess = 1.0 - cap / load;
    after.start = st.end;
    after.end = end;
    after.what = format!("the storm its retries keep up after {}", st.what);
    Some(after)
}

/// Attempts one request (or call) of tier `t` makes, on average over the
/// run, the share of the run in failing stretches, and why the attempts
/// are unbounded if they are; `requests` are the calls
/// the tier gets with one attempt each.
fn tier_attempts(
    spec: &ScenarioSpec,
    t: usize,
    policy: &Policy,
    requests: f64,
) -> (f64, f64, Option<String>) {
    let duration = spec.duration.ns();
    if duration == 0 {
        return (1.0, 0.0, None);
    }
    let window = if t == 0 {
        spec.retry_window()
    } else {
        Nanos::MAX
    };
    let mut stormy = 0.0;
    let mut share = 0.0;
    let mut unbounded = None;
    let burst = t == 0 && spec.traffic.mode == Mode::Burst;
    let mut burst_more = 0.0;
    let mut all = stretches(spec, t);
    let after: Vec<Stretch> = all
        .iter()
        .filter(|st| st.excess >= 1.0)
        .filter_map(|st| aftermath(spec, t, policy, st, window))
        .collect();
    // One aftermath at most: the one that starts first.
    all.extend(after.into_iter().min_by_key(|a| a.start));
    for st in all {
        let len = st.end - st.start;
        let w = len as f64 / duration as f64;
        let attempts = stretch_attempts(spec, t, policy, &st, window, requests, w);
        if attempts.is_infinite() && unbounded.is_none() {
            unbounded = Some(format!(
                "policy {:?}{}: through {}, retries follow each other with no time passing and \
                 nothing limits the attempts; set `max_attempts`, a backoff delay, or a \
                 `network_delay`",
                policy.name,
                if t == 0 {
                    String::new()
                } else {
                    format!(" (calls to tier {:?})", spec.tier_names()[t])
                },
                st.what
            ));
        }
        stormy += w * attempts;
        share += w;
        burst_more += (attempts - 1.0).max(0.0);
    }
    let total = if burst {
        // Every request of a burst goes through every stretch it meets.
        1.0 + burst_more
    } else if share > 1.0 {
        stormy / share
    } else {
        (1.0 - share) + stormy
    };
    (total, share, unbounded)
}

/// Mean attempts per request of tier `t` arriving in stretch `st`, a
/// share `w` of the run.
fn stretch_attempts(
    spec: &ScenarioSpec,
    t: usize,
    policy: &Policy,
    st: &Stretch,
    window: Nanos,
    requests: f64,
    w: f64,
) -> f64 {
    if !policy.retry_on.contains(st.status) {
        return 1.0;
    }
    let retries = StretchRetries::new(spec, t, policy, st, window);
    let mut attempts = if t == 0 && spec.traffic.mode == Mode::Burst {
        retries.burst()
    } else {
        retries.mean_over_arrivals()
    };
    if st.share < 1.0 {
        // A share p of attempts fail: 1 / (1 − p) attempts on average.
        attempts = attempts.min(1.0 / (1.0 - st.share.max(0.0)));
    }
    // Only the requests above capacity are caught in an overload.
    attempts = 1.0 + st.excess.clamp(0.0, 1.0) * (attempts - 1.0);
    if t == 0 && spec.traffic.mode == Mode::Closed {
        attempts = retries.closed_loop(requests * w);
    }
    retries.within_budget(attempts, requests, w)
}

/// The retries of tier `t`'s requests through one failing stretch under
/// `policy`: what every step of [`stretch_attempts`] reads, so that each
/// step is a method rather than a function of seven values.
struct StretchRetries<'a> {
    spec: &'a ScenarioSpec,
    t: usize,
    policy: &'a Policy,
    st: &'a Stretch,
    /// How long a request of tier `t` may retry whatever its policy (the
    /// request deadline at the top).
    window: Nanos,
    /// The stretch's pushback, when its status carries one.
    pushback: Option<Nanos>,
    /// Whether its attempts fail as throttled (`ResourceExhausted`).
    throttled: bool,
}

impl<'a> StretchRetries<'a> {
    /// The retries through `st` of tier `t` with `window`, the policy's
    /// retry window there.
    fn new(
        spec: &'a ScenarioSpec,
        t: usize,
        policy: &'a Policy,
        st: &'a Stretch,
        window: Nanos,
    ) -> StretchRetries<'a> {
        let throttled = st.status == Status::ResourceExhausted;
        let pushback = st
            .pushback
            .filter(|_| matches!(st.status, Status::Unavailable | Status::ResourceExhausted));
        StretchRetries {
            spec,
            t,
            policy,
            st,
            window,
            pushback,
            throttled,
        }
    }

    /// [`Policy::walk`] of the policy through `life` of the stretch's failures.
    fn walk(&self, life: Nanos) -> (f64, Nanos) {
        self.policy
            .walk(life, self.st.floor, self.pushback, self.throttled)
    }

    /// Attempts of a request of a burst, which meets the stretch only if
    /// the stretch starts before the burst is drained.
    fn burst(&self) -> f64 {
        let (spec, st) = (self.spec, self.st);
        // Every client sends at `burst_at`, and the backend drains them
        // at its capacity: a stretch that starts before they are drained
        // has them retry through what is left of it.
        let at = spec.traffic.burst_at.map_or(0, |d| d.ns());
        let drained = capacity(spec, 0).map_or(Nanos::MAX, |c| {
            let spread = spec.traffic.burst_spread.map_or(0, |d| d.ns());
            at.saturating_add(spread)
                .saturating_add((f64::from(spec.traffic.clients) / c * 1e9) as Nanos)
        });
        if at < st.end && st.start <= drained {
            let from = at.max(st.start);
            self.walk((st.end - from).min(self.window)).0
        } else {
            1.0
        }
    }

    /// Attempts of a request arriving in the stretch, averaged over
    /// [`ARRIVALS`] arrival times spread through it: each retries through
    /// what is left of it.
    fn mean_over_arrivals(&self) -> f64 {
        let len = self.st.end - self.st.start;
        (0..ARRIVALS)
            .map(|k| {
                let left = (len as f64 * (k as f64 + 0.5) / ARRIVALS as f64) as Nanos;
                self.walk(left.min(self.window)).0
            })
            .sum::<f64>()
            / ARRIVALS as f64
    }

    /// Attempts per request of a closed loop, whose clients each hold
    /// one request through the stretch instead of arriving in it
    /// (`in_stretch`: the requests the run would make in its time).
    fn closed_loop(&self, in_stretch: f64) -> f64 {
        let st = self.st;
        let len = st.end - st.start;
        // A closed client holds one request through the stretch: its
        // attempts are those of one request retrying through all of it,
        // shared among the requests the run would make in that time.
        let one = self.walk(len.min(self.window)).0;
        let per_client = if self.policy.limits_attempts() {
            // It gives up and starts over: attempts at the same pace.
            let (a, used) = self.walk(self.window);
            let think = mean_ns(self.spec.traffic.think_time.as_ref());
            a * len as f64 / (used as f64 + st.floor as f64 + think).max(1e3)
        } else {
            one
        };
        (f64::from(self.spec.traffic.clients) * per_client / in_stretch.max(1.0)).max(1.0)
    }

    /// `attempts` (per request of the stretch, a share `w` of a run of
    /// `requests`) within the bound of the policy's retry budget or
    /// breaker, which counts over the whole run, not per request.
    fn within_budget(&self, attempts: f64, requests: f64, w: f64) -> f64 {
        let (spec, t, st) = (self.spec, self.t, self.st);
        // Retry budgets and breakers bound the retries over the whole run:
        // all of them may fall to the requests of this stretch (a share `w`).
        let ctx = Context {
            failure: st.status,
            timeouts: st.status == Status::DeadlineExceeded,
            deadline: spec.traffic.deadline.map(|d| d.ns()).filter(|_| t == 0),
            requests: requests.max(1.0),
            counted_s: spec.duration.secs(),
            clients: if t == 0 { spec.traffic.clients } else { 1 },
        };
        if self.policy.bounds_retries_per_run() {
            if let Some(bound) = self.policy.worst_case(&ctx).attempts {
                return attempts.min(1.0 + (bound - 1.0).max(0.0) / w.max(1e-9));
            }
        }
        attempts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str, policy: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "s", "duration": "60s",
                "traffic": {{"rate": 100, "clients": 10}},
                "backend": {{"workers": 10, "service_time": {{"constant": {{"value": "10ms"}}}}}}
                {extra},
                "policies": [{policy}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn contenders_on_one_record_make_half_their_number_of_attempts() {
        let burst = |policy: &str| {
            Scenario::from_json(&format!(
                r#"{{"name": "c", "duration": "60s",
                    "traffic": {{"mode": "burst", "clients": 100,
                                 "network_delay": {{"constant": {{"value": "10ms"}}}}}},
                    "backend": {{"kind": "contention"}},
                    "policies": [{policy}]}}"#
            ))
            .unwrap()
        };
        let forever = r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}, "retry_on": ["aborted"]}"#;
        assert_eq!(storm(&burst(forever), 0, 100.0).tiers, vec![50.5]);
        let capped = r#"{"name": "p", "max_attempts": 10, "backoff": {"constant": {"delay": "0s"}}, "retry_on": ["aborted"]}"#;
        assert_eq!(storm(&burst(capped), 0, 100.0).tiers, vec![10.0]);
        let not_retried = r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}, "retry_on": ["unavailable"]}"#;
        assert_eq!(storm(&burst(not_retried), 0, 100.0).tiers, vec![1.0]);
    }

    #[test]
    fn a_slowdown_past_the_attempt_timeout_is_a_storm_of_timeouts() {
        let slowed = |factor: f64| {
            Scenario::from_json(&format!(
                r#"{{"name": "s", "duration": "60s",
                    "traffic": {{"rate": 1, "attempt_timeout": "15s"}},
                    "backend": {{"workers": 100, "service_time": {{"constant": {{"value": "4s"}}}}}},
                    "faults": [{{"slowdown": {{"start": "0s", "duration": "60s", "factor": {factor}}}}}],
                    "policies": [{{"name": "p", "max_attempts": 5,
                                  "backoff": {{"constant": {{"delay": "1s"}}}}}}]}}"#
            ))
            .unwrap()
        };
        // 16 s of service against a 15 s timeout: every attempt is late,
        // and one arriving early retries every 16 s up to its 5 attempts.
        let late = storm(&slowed(4.0), 0, 60.0);
        assert!(late.tiers[0] > 2.0 && late.tiers[0] <= 5.0, "{late:?}");
        // 8 s of service: none is late, and 1/s is far below capacity.
        assert_eq!(storm(&slowed(2.0), 0, 60.0).tiers, vec![1.0]);
    }

    #[test]
    fn a_healthy_run_makes_one_attempt_per_request() {
        let s = scenario(
            "",
            r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "1ms"}}}"#,
        );
        assert_eq!(storm(&s, 0, 6000.0).tiers, vec![1.0]);
    }

    #[test]
    fn an_outage_over_the_whole_run_retries_through_what_is_left_of_it() {
        // 100 ms apart for the 60 s: a request arriving at a uniform time
        // makes 300 attempts on average.
        let s = scenario(
            r#", "faults": [{"outage": {"start": "0s", "duration": "60s"}}]"#,
            r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "100ms"}}}"#,
        );
        let a = storm(&s, 0, 6000.0).tiers[0];
        assert!((a - 300.0).abs() < 2.0, "{a}");
    }

    #[test]
    fn overload_with_no_fault_is_a_storm_and_a_zero_time_one_is_unbounded() {
        // 2 000/s on a backend serving 1 000/s with a waiting room: every
        // attempt is rejected at once and retried at once.
        let overload = r#", "faults": []"#;
        let s = Scenario::from_json(
            r#"{"name": "s", "duration": "10s",
                "traffic": {"rate": 2000},
                "backend": {"workers": 10, "queue_limit": 10,
                            "service_time": {"constant": {"value": "10ms"}}},
                "policies": [{"name": "p", "max_attempts": 0,
                              "backoff": {"constant": {"delay": "0s"}}}]}"#,
        )
        .unwrap();
        let st = storm(&s, 0, 20_000.0);
        assert!(
            st.unbounded
                .is_some_and(|(t, w)| t == 0 && w.contains("overload")),
            "{overload}"
        );
        // With a 1 ms backoff: about 5 s left on average, 5 000 attempts
        // for the half of the requests above capacity (2 000/s on 1 000/s).
        let s = Scenario::from_json(
            r#"{"name": "s", "duration": "10s",
                "traffic": {"rate": 2000},
                "backend": {"workers": 10, "queue_limit": 10,
                            "service_time": {"constant": {"value": "10ms"}}},
                "policies": [{"name": "p", "max_attempts": 0,
                              "backoff": {"constant": {"delay": "1ms"}}}]}"#,
        )
        .unwrap();
        let st = storm(&s, 0, 20_000.0);
        assert!(st.unbounded.is_none());
        assert!((st.tiers[0] - (1.0 + 0.5 * 4999.0)).abs() < 10.0, "{st:?}");
    }

    #[test]
    fn tiers_multiply_calls_and_their_own_retries() {
        // A tier below fails for the whole run; its calls retry 4 times
        // each (their own policy), 10 calls per attempt above, and the top
        // retries 3 times.
        let s = Scenario::from_json(
            r#"{"name": "s", "duration": "60s",
                "traffic": {"rate": 10},
                "backend": {"workers": 10, "service_time": {"constant": {"value": "1ms"}}},
                "downstream": [{"name": "db", "calls": 10,
                    "backend": {"workers": 100, "service_time": {"constant": {"value": "1ms"}}},
                    "policy": {"name": "db", "max_attempts": 4,
                               "backoff": {"constant": {"delay": "1ms"}}}}],
                "faults": [{"outage": {"start": "0s", "duration": "60s", "tier": "db"}}],
                "policies": [{"name": "p", "max_attempts": 3,
                              "backoff": {"constant": {"delay": "10ms"}}}]}"#,
        )
        .unwrap();
        let st = storm(&s, 0, 600.0);
        assert_eq!(st.tiers, vec![3.0, 3.0 * 10.0 * 4.0]);
    }

    #[test]
    fn the_walk_stops_at_the_cap_the_life_or_never() {
        let s = scenario(
            "",
            r#"{"name": "p", "max_attempts": 5, "backoff": {"constant": {"delay": "1s"}}}"#,
        );
        let p = &s.policies()[0];
        assert_eq!(p.walk(100 * 1_000_000_000, 0, None, false).0, 5.0);
        assert_eq!(p.walk(2_500_000_000, 0, None, false).0, 3.0);
        let s = scenario(
            "",
            r#"{"name": "p", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}}"#,
        );
        assert!(s.policies()[0].walk(1, 0, None, false).0.is_infinite());
        // A round trip of the network makes it finite.
        assert_eq!(s.policies()[0].walk(1000, 10, None, false).0, 101.0);
    }

    /// Both limits must be reached to give up: one attempt with a 10 s
    /// age limit retries every 100 ms until the age is 10 s (101 attempts,
    /// the last at 10 s), and three attempts with it do the same.
    #[test]
    fn the_walk_goes_on_until_both_limits_are_reached() {
        for attempts in [1, 3] {
            let s = scenario(
                "",
                &format!(
                    r#"{{"name": "p", "max_attempts": {attempts}, "max_retry_duration": "10s",
                        "backoff": {{"constant": {{"delay": "100ms"}}}}}}"#
                ),
            );
            let p = &s.policies()[0];
            assert_eq!(p.walk(60 * 1_000_000_000, 0, None, false).0, 101.0);
            assert_eq!(p.attempts_within(60 * 1_000_000_000, None, false), 101.0);
            // A shorter life ends it first.
            assert_eq!(p.walk(2_000_000_000, 0, None, false).0, 21.0);
        }
        // Past the schedule's 64 steps, the rest is counted at the last
        // delay, up to the age limit.
        let s = scenario(
            "",
            r#"{"name": "p", "max_attempts": 1, "max_retry_duration": "100s",
                "backoff": {"constant": {"delay": "100ms"}}}"#,
        );
        assert_eq!(
            s.policies()[0].walk(1_000_000_000_000, 0, None, false).0,
            1001.0
        );
    }
}
