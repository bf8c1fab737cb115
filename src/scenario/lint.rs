//! Warnings: scenarios that are valid but will probably not answer the
//! question their author asked. `check` prints them; `run` prints them on
//! stderr before simulating.
//!
//! One of them is also an explanation the model uses at run time: when
//! simulated time stops advancing (every retry goes out, arrives and fails
//! at the same instant), [`zero_time_loop`] says which settings allow it
//! and how to give time a chance to pass.

use super::spec::{
    ActionSpec, Arrival, BackendKind, DispatcherSpec, DistSpec, FaultSpec, Mode, ScenarioSpec,
};
use crate::check::Problem;
use crate::decimal::{self, count, legible, Given};
use crate::math::{normal_cdf, Z99};
use crate::policy::{self, Failures, Policy, Pushback, ZeroTimeRetries};
use crate::time::Dur;

/// Whether every draw of `d` is exactly zero (absent means no delay).
fn always_zero(d: Option<&DistSpec>) -> bool {
    match d {
        None => true,
        Some(DistSpec::Constant { value }) => value.ns() == 0,
        Some(DistSpec::Uniform { max, .. }) => max.ns() == 0,
        Some(DistSpec::Normal { mean, stddev }) => mean.ns() == 0 && stddev.ns() == 0,
        Some(DistSpec::Exponential { .. } | DistSpec::Lognormal { .. }) => false,
        Some(d @ (DistSpec::Quantiles(_) | DistSpec::Histogram(_))) => {
            d.knots().is_some_and(|k| k.iter().all(|k| k.x == 0.0))
        }
    }
}

/// The ways the backend can answer an attempt without any time passing,
/// in words, for this scenario.
fn instant_failures(spec: &ScenarioSpec) -> Vec<String> {
    let b = &spec.backend;
    let mut out = Vec::new();
    let has = |kind: fn(&FaultSpec) -> bool| spec.faults.iter().any(kind);
    let free_admission = b.admission_cost.ns() == 0;
    match b.kind {
        BackendKind::Queue => {
            if b.queue_limit.is_some() && b.reject_cost.ns() == 0 {
                out.push("a full waiting room rejects at once (`reject_cost` is 0)".to_string());
            }
            let errors = has(|f| matches!(f, FaultSpec::Errors { .. }));
            if errors && free_admission && always_zero(b.service_time.as_ref()) {
                out.push("injected errors answer at once (service takes no time)".to_string());
            }
        }
        // No waiting room: an attempt that finds the server full, or every
        // slot taken away, is rejected in the instant it arrives.
        BackendKind::Concurrency if b.max_concurrency.is_some() => out.push(
            "a server at its `max_concurrency` rejects at once (it has no waiting room)"
                .to_string(),
        ),
        BackendKind::Concurrency => {
            if has(|f| matches!(f, FaultSpec::Capacity { workers: 0, .. })) {
                out.push("a capacity fault of 0 workers rejects every attempt at once".to_string());
            }
        }
        BackendKind::Contention => {}
    }
    // An outage fails an attempt after its admission; a contention record
    // has none (it refuses an `admission_cost`).
    if has(|f| matches!(f, FaultSpec::Outage { .. })) {
        match b.kind {
            BackendKind::Contention => out.push("an outage fails attempts at once".to_string()),
            _ if free_admission => {
                out.push("an outage fails attempts at once (`admission_cost` is 0)".to_string())
            }
            _ => {}
        }
    }
    if has(|f| matches!(f, FaultSpec::Crash { .. })) {
        out.push("a crash refuses connections at once".to_string());
    }
    if spec
        .actions
        .iter()
        .any(|a| matches!(a, ActionSpec::ShedLoad { .. }))
    {
        out.push("shedding rejects at no cost".to_string());
    }
    out
}

/// Why simulated time may stop advancing under `policy`, if it can: a
/// chain of zero-delay steps that can repeat for ever at one instant.
pub(crate) fn zero_time_loop(spec: &ScenarioSpec, policy: &Policy) -> Option<String> {
    if spec.dispatcher.is_some() || !always_zero(spec.traffic.network_delay.as_ref()) {
        return None;
    }
    let mut failures = instant_failures(spec);
    let closed = spec.traffic.mode == Mode::Closed && always_zero(spec.traffic.think_time.as_ref());
    if closed && policy.breaker.is_some() {
        failures.push("an open circuit breaker fails requests at once".to_string());
    }
    if failures.is_empty() {
        return None;
    }
    // gRPC's rule waits exactly the server's pushback, which may be 0; a
    // throttling error (`resource_exhausted`) may have a backoff of its own.
    let delays = Failures {
        zero_pushback: spec.backend.retry_after.is_some_and(|d| d.ns() == 0),
        throttled: spec
            .storm_failures()
            .iter()
            .any(|&(_, throttled)| throttled),
    };
    // How the loop turns, and the delay that would break it.
    let (how, delay) = match policy.zero_time_retries(delays) {
        Some(ZeroTimeRetries::Backoff) => (
            "its retries go out with no backoff, without limit",
            "a backoff delay",
        ),
        Some(ZeroTimeRetries::Throttling) => (
            "its retries after throttling errors go out with no `throttling_backoff`, without limit",
            "a `throttling_backoff` delay",
        ),
        Some(ZeroTimeRetries::Pushback) => (
            "its retries go out after exactly the backend's `retry_after`, which is 0, without limit",
            "a `backend.retry_after` above 0",
        ),
        None if closed => (
            "closed-loop clients send their next request as soon as one ends (no `think_time`)",
            "a backoff delay",
        ),
        None => return None,
    };
    // What would make time pass. A backend's own costs help only where
    // its instant answers pay them: a concurrency server rejects before
    // any cost (an outage's failures say `admission_cost` themselves).
    let mut remedies = vec![delay, "a `network_delay`"];
    if spec.backend.kind == BackendKind::Queue {
        remedies.extend(["a `reject_cost`", "an `admission_cost`"]);
    }
    if closed {
        remedies.push("a `think_time`");
    }
    let last = remedies.pop().unwrap_or_default();
    Some(format!(
        "policy {:?}: {how}, attempts reach the backend at once (no `network_delay`), and {}; \
         give time a chance to pass: add {} or {last}",
        policy.name,
        failures.join(", and "),
        remedies.join(", "),
    ))
}

/// Every warning for a validated scenario with its resolved policies.
pub(crate) fn warnings(spec: &ScenarioSpec, policies: &[Policy]) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut warn = |path: &str, message: String| out.push(Problem::new(path, message));
    for (path, msg) in policy_warnings(spec, policies) {
        warn(&path, msg);
    }
    for (path, msg) in tier_age_limits(spec) {
        warn(&path, msg);
    }
    if let Some(msg) = short_aftermath(spec) {
        warn("duration", msg);
    }
    if let Some(msg) = noisy_bins(spec, policies) {
        warn("bin", msg);
    }
    for (path, msg) in never_healthy(spec) {
        warn(&path, msg);
    }
    for (path, msg) in idle_backend_settings(spec) {
        warn(path, msg);
    }
    if let Some(msg) = throttling_floor(spec) {
        warn("dispatcher.throttling.min_rate", msg);
    }
    for (path, msg) in super::cloud_tasks::warnings(spec, policies) {
        warn(&path, msg);
    }
    for (path, msg) in settings_without_effect(spec) {
        warn(&path, msg);
    }
    if spec.backend.retry_after.is_some() && !policies.iter().any(|p| p.honor_retry_after) {
        warn(
            "backend.retry_after",
            "no policy honours it (`honor_retry_after`), so it changes nothing".to_string(),
        );
    }
    out
}

/// Settings that change nothing in the run, as (field, message): a
/// traffic profile knot past the first one after the run's end (the first
/// still sets the last line's slope), and a `capacity` fault on the top
/// backend that leaves at least as many workers as it has.
fn settings_without_effect(spec: &ScenarioSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let end = spec.duration;
    // The first knot after the end still sets the slope towards it; the
    // ones after that are never used.
    let past = spec
        .traffic
        .profile
        .iter()
        .enumerate()
        .filter(|(_, k)| k.at > end);
    for (i, k) in past.skip(1) {
        out.push((
            format!("traffic.profile[{i}].at"),
            format!(
                "{} is after the run's end ({end}) and after the knot that ends its last \
                 line: it changes nothing; remove it",
                k.at
            ),
        ));
    }
    for (i, f) in spec.faults.iter().enumerate() {
        if let (
            crate::scenario::spec::FaultSpec::Capacity {
                workers,
                tier: None,
                ..
            },
            Some(have),
        ) = (f, spec.backend.workers)
        {
            if *workers >= have {
                out.push((
                    format!("faults[{i}].capacity.workers"),
                    format!(
                        "{workers} workers left, and the backend has {have}: the fault takes \
                         none away, so it changes nothing"
                    ),
                ));
            }
        }
    }
    out
}

/// The warnings about each compared policy, as (field, message): time
/// that may stop advancing (or else a flood of retries), and an age limit
/// that never ends its retries.
fn policy_warnings(spec: &ScenarioSpec, policies: &[Policy]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, p) in policies.iter().enumerate() {
        if let Some(why) = zero_time_loop(spec, p) {
            out.push((
                format!("policies[{i}]"),
                format!("simulated time may stop advancing: {why}"),
            ));
        } else if let Some(why) = retry_flood(spec, p) {
            out.push((format!("policies[{i}]"), why));
        }
        if let Some(why) = endless_age_limit(p) {
            out.push((format!("policies[{i}].max_retry_duration"), why));
        }
    }
    for (i, written) in spec.policies.iter().enumerate() {
        if let Some(why) = attempts_over_cap(written) {
            out.push((format!("policies[{i}].max_attempts"), why));
        }
    }
    out
}

/// A warning when a policy's `max_attempts` is past what its preset's
/// library allows, and is simulated at that cap.
fn attempts_over_cap(written: &crate::policy::PolicySpec) -> Option<String> {
    let (name, m) = (written.preset.as_deref()?, written.max_attempts?);
    let cap = crate::policy::presets::capped_attempts(name, m);
    (cap != m).then(|| {
        let given = if m > 0 {
            m.to_string()
        } else {
            format!("{m} (unlimited)")
        };
        format!(
            "{given} is simulated as {cap}: gRPC clients cap a retry policy's maxAttempts at \
             {cap} (gRFC A6), as `import grpc` does; for more attempts, drop the preset and \
             write the policy out"
        )
    })
}

/// The warnings about the policies the tiers below call with, as (field,
/// message): an age limit that never ends their retries.
fn tier_age_limits(spec: &ScenarioSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // The policies the tiers below call with, where written apart from
    // the compared ones (validated already, so they resolve).
    let tier_policies =
        spec.policies
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                let path = format!("policies[{k}].downstream_policy");
                p.downstream_policy.as_deref().map(|d| (path, d.clone()))
            })
            .chain(
                spec.downstream.iter().enumerate().filter_map(|(i, d)| {
                    Some((format!("downstream[{i}].policy"), d.policy.fixed()?))
                }),
            );
    for (path, written) in tier_policies {
        if let Some(why) = policy::resolve(&written)
            .ok()
            .as_ref()
            .and_then(endless_age_limit)
        {
            out.push((format!("{path}.max_retry_duration"), why));
        }
    }
    out
}

/// A warning when the run ends during the last fault, or too soon after
/// it for recovery to be judged (report.stable_for): every outcome would
/// be `undetermined`.
fn short_aftermath(spec: &ScenarioSpec) -> Option<String> {
    let end = incident_end(spec)?;
    let run_end = spec.duration.ns();
    let need = spec.report.stable_for.ns();
    if end > run_end {
        Some(format!(
            "the last fault ends {} after the run does ({}): the run stops during the \
             fault, so recovery cannot be judged and every outcome will be \
             `undetermined`; make the run longer than the fault's end by \
             report.stable_for ({}) or more",
            Dur(end - run_end),
            spec.duration,
            spec.report.stable_for
        ))
    } else if run_end - end < need {
        Some(format!(
            "the run ends {} after the last fault ends, less than report.stable_for ({}): \
             recovery cannot be judged and every outcome will be `undetermined`; \
             make the run longer or stable_for shorter",
            Dur(run_end - end),
            spec.report.stable_for
        ))
    } else {
        None
    }
}

/// Backend settings that have no effect in this scenario, as (field,
/// message): dropping expired attempts where none expires, a rejection
/// cost where nothing is rejected.
fn idle_backend_settings(spec: &ScenarioSpec) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let b = &spec.backend;
    let t = &spec.traffic;
    if b.drop_expired
        && t.attempt_timeout.is_none()
        && t.deadline.is_none()
        && spec.dispatcher.is_none()
    {
        out.push((
            "backend.drop_expired",
            "has no effect: no attempt ever expires without an `attempt_timeout`, a `deadline` or a dispatcher"
                .to_string(),
        ));
    }
    if b.kind == BackendKind::Queue && b.reject_cost.ns() > 0 && b.queue_limit.is_none() {
        out.push((
            "backend.reject_cost",
            "has no effect: an unlimited waiting room never rejects (set `queue_limit`)"
                .to_string(),
        ));
    }
    out
}

/// A warning when a queue's throttled rate cannot drop below its
/// maximum: `min_rate` at or above `max_dispatches_per_second`.
fn throttling_floor(spec: &ScenarioSpec) -> Option<String> {
    let d = spec.dispatcher.as_ref()?;
    let t = d.throttling.as_ref()?;
    (t.min_rate >= d.max_dispatches_per_second).then(|| {
        format!(
            "{} is not below max_dispatches_per_second ({}): the throttled rate can never \
             drop below the maximum (only its `retry_after` pauses act)",
            Given(t.min_rate),
            Given(d.max_dispatches_per_second)
        )
    })
}

/// Why an age limit beside unlimited attempts never ends a request's
/// retries: a request gives up when both limits are reached.
fn endless_age_limit(p: &Policy) -> Option<String> {
    p.age_limit_never_ends().then(|| {
        let who = if p.name.is_empty() {
            String::new()
        } else {
            format!("policy {:?}: ", p.name)
        };
        format!(
            "{who}never ends a request's retries: a request gives up only when both limits are \
             reached, and unlimited `max_attempts` never is (as a Cloud Tasks queue with \
             `maxAttempts: -1` retries until the task expires); set `max_attempts` to 1 to \
             give up on age alone"
        )
    })
}

/// Attempts per request beyond which a fault's retries are a flood worth
/// a warning: the run will spend its time on them.
const FLOOD_ATTEMPTS: f64 = 100_000.0;

/// A warning when a request that fails every attempt through the longest
/// fault would make more than [`FLOOD_ATTEMPTS`] attempts: retries that
/// follow each other within microseconds and no attempt limit make a run
/// take minutes or hours, and most likely are not what was meant.
fn retry_flood(spec: &ScenarioSpec, policy: &Policy) -> Option<String> {
    let (fault, span) = spec.incident_spans().max_by_key(|&(_, span)| span)?;
    let storm = spec.storm_attempts(policy, span.min(spec.retry_window()));
    let attempts = storm.attempts;
    // The remedy for what sets the delays.
    let lengthen = match (storm.pushback, policy.pushback) {
        (Some(_), Pushback::Exact) => "raise `backend.retry_after` (honoured exactly)",
        _ if storm.throttled => "lengthen the `throttling_backoff`",
        _ => "lengthen the backoff",
    };
    (attempts > FLOOD_ATTEMPTS).then(|| {
        format!(
            "policy {:?}: a request that fails through {} ({}) would make about {attempts:.1e} \
             attempts, since its retries follow each other within {}{}; the run may take very \
             long: {lengthen} or limit `max_attempts`",
            policy.name,
            fault.incident_name(),
            Dur(span),
            Dur(storm.first_delay),
            if !policy.limits_attempts() {
                " and nothing limits the attempts"
            } else {
                ""
            }
        )
    })
}

/// The end of the last incident fault, in nanoseconds, past the run's end
/// if the fault lasts longer than the run (faults covering the whole run
/// are background, not incidents).
fn incident_end(spec: &ScenarioSpec) -> Option<u64> {
    let run_end = spec.duration.ns();
    spec.faults
        .iter()
        .filter(|f| f.is_incident(run_end))
        .map(|f| f.window().1)
        .max()
}

/// A warning when the bins hold too few requests for the recovery
/// threshold to be judged reliably (open mode only, where the rate is
/// known).
///
/// In a healthy bin, goodput differs from demand only by the requests that
/// straddle a bin edge. With Poisson arrivals about rate × latency of them
/// do at each edge, so the ratio's noise is about
/// √(2 · rate · latency) / (rate · bin). Evenly spaced arrivals make
/// demand exact, and goodput varies only as far as the latency does: a
/// request is on either side of an edge by chance only when it arrived
/// within about a latency's standard deviation σ of it, which gives a
/// variance of about 2 · rate · σ / √π (σ/√π per edge for a normal
/// spread); with a constant latency there is no noise at all. A window of
/// `stable_for` holds k bins; the warning fires when a healthy system
/// would fail the threshold in at least one of them more than 5 % of the
/// time.
fn noisy_bins(spec: &ScenarioSpec, policies: &[Policy]) -> Option<String> {
    let t = &spec.traffic;
    if !t.mode.open_arrivals() || spec.faults.is_empty() {
        return None;
    }
    let rate = t.rate? * t.scale_range().0;
    if rate <= 0.0 || policies.is_empty() {
        return None;
    }
    let bin = spec.bin.secs();
    let (service, network) = (spec.backend.service_time.as_ref(), t.network_delay.as_ref());
    let per_bin = rate * bin;
    let straddling = match t.arrival {
        Arrival::Poisson => {
            let mean = |d: Option<&DistSpec>| d.map_or(0.0, dist_mean_s);
            let latency = spec.backend.admission_cost.secs() + mean(service) + 2.0 * mean(network);
            // At least one request's spacing, at most a bin (a rate below
            // one request per bin takes the bin: `clamp` would panic there).
            2.0 * rate * latency.max(1.0 / rate).min(bin)
        }
        Arrival::Uniform => {
            let var = |d: Option<&DistSpec>| d.map_or(0.0, |d| dist_sd_s(d).powi(2));
            let spread = (var(service) + 2.0 * var(network)).sqrt();
            (2.0 * rate * spread / std::f64::consts::PI.sqrt()).min(per_bin)
        }
    };
    let sd = straddling.sqrt() / per_bin;
    if sd == 0.0 {
        return None;
    }
    let threshold = spec.report.recovery_threshold;
    let z = (1.0 - threshold) / sd;
    let k = (spec.report.stable_for.secs() / bin).ceil().max(1.0);
    let p_fail = 1.0 - normal_cdf(z).powf(k);
    (p_fail > 0.05).then(|| {
        format!(
            "about {} per bin of {}: chance alone (random {}) makes a healthy bin miss the \
             recovery threshold ({}) now and then, so the recovery time is decided by chance \
             ({:.0} % of healthy {} windows fail); use a larger bin or a lower threshold",
            count((per_bin * 10.0).round() / 10.0, "request", "requests"),
            spec.bin,
            match t.arrival {
                Arrival::Poisson => "arrivals and service times",
                Arrival::Uniform => "service times",
            },
            threshold,
            100.0 * p_fail,
            spec.report.stable_for
        )
    })
}

/// Requests per second the backend serves without faults, at most: its
/// capacity at the mean service time as written (a USL slowdown, which
/// only lowers it, left out).
fn capacity_rps(spec: &ScenarioSpec) -> Option<f64> {
    let b = &spec.backend;
    b.capacity_rps(b.service_time.as_ref().map_or(0.0, dist_mean_s) * 1e9)
}

/// Why the run cannot show a recovery whatever the policy, as (field,
/// message): no requests to measure, clients that never all send, demand
/// above what the backend serves without faults all run, a queue that
/// dispatches no more than its first full bucket or falls further behind
/// the new tasks all run, or a time limit no attempt can meet. A run like
/// that reads as degraded (`metastable`) or empty, which would blame, or
/// credit, the retries (or, for a queue behind whose goodput still meets
/// the threshold, as healthy while its backlog grows).
fn never_healthy(spec: &ScenarioSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let t = &spec.traffic;
    if let (Mode::Open | Mode::Pool, Some(rate)) = (t.mode, t.rate) {
        out.extend(unfit_demand(spec, rate));
    }
    if t.mode == Mode::Burst {
        out.extend(burst_past_end(spec));
    }
    if let Some(d) = &spec.dispatcher {
        out.extend(dispatch_shortfall(spec, d));
    }
    out.extend(unmeetable_limits(spec));
    out
}

/// Why open (or pool) traffic at `rate` leaves nothing to judge, as
/// (field, message): fewer than one request in the whole run, or new
/// requests alone beyond what the backend serves without faults.
fn unfit_demand(spec: &ScenarioSpec, rate: f64) -> Option<(String, String)> {
    let t = &spec.traffic;
    let run_s = spec.duration.secs();
    let (lowest, highest) = t.scale_range();
    let (lowest, highest) = (rate * lowest, rate * highest);
    if highest * run_s < 1.0 {
        return Some((
            "traffic".to_string(),
            format!(
                "fewer than one request is expected in the whole run ({:.2e} at most, \
                 over {}): the report has nothing to measure",
                highest * run_s,
                spec.duration
            ),
        ));
    }
    let cap = capacity_rps(spec).filter(|&c| lowest > c)?;
    let threshold = spec.report.recovery_threshold;
    let verdict = if threshold * lowest <= cap {
        // Goodput at capacity still passes the health test.
        still_healthy("serves", &decimal::rate(cap), threshold)
    } else if spec.faults.is_empty() {
        String::new()
    } else {
        ", so no policy can recover from the fault: every one reads as degraded \
         whatever it does"
            .to_string()
    };
    Some((
        "traffic".to_string(),
        format!(
            "new requests alone, at least {}/s, exceed what the backend serves without \
             any fault (about {}/s): it is overloaded all run{verdict}; lower the rate \
             or add capacity",
            decimal::rate(lowest),
            decimal::rate(cap)
        ),
    ))
}

/// Why a burst spread past the end of the run leaves clients that never
/// send, as (field, message).
fn burst_past_end(spec: &ScenarioSpec) -> Option<(String, String)> {
    let t = &spec.traffic;
    let run_s = spec.duration.secs();
    let at = t.burst_at.unwrap_or_default().secs();
    let spread = t.burst_spread.unwrap_or_default().secs();
    if spread > 0.0 && at + spread > run_s {
        return Some((
            "traffic.burst_spread".to_string(),
            format!(
                "the burst runs past the end of the run: only about {:.0} % of the clients \
                 send before it ends",
                100.0 * ((run_s - at) / spread).clamp(0.0, 1.0)
            ),
        ));
    }
    None
}

/// Why a queue's dispatcher keeps the run from recovering, as (field,
/// message): a bucket that never refills or a rate that falls behind the
/// new tasks, and a concurrency ceiling below what is due.
fn dispatch_shortfall(spec: &ScenarioSpec, d: &DispatcherSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let run_s = spec.duration.secs();
    // The bucket starts full and refills at this rate: over a run too
    // short for one token (or at a rate whose tokens per nanosecond
    // round to 0, which never refills at all) it dispatches the
    // first `max_burst_size` tasks and no other.
    let tokens = d.max_dispatches_per_second * run_s;
    if tokens < 1.0 {
        out.push((
            "dispatcher.max_dispatches_per_second".to_string(),
            format!(
                "{} adds fewer than one token to the bucket in the whole run ({tokens:.2e} \
                 over {}): after the first {} (the full bucket, `max_burst_size`) no task \
                 is dispatched again, so no policy can make the run healthy once more \
                 tasks than that are due",
                Given(d.max_dispatches_per_second),
                spec.duration,
                count(f64::from(d.max_burst_size), "dispatch", "dispatches"),
            ),
        ));
    } else if let Some(why) = dispatch_backlog(spec, d) {
        out.push(("dispatcher.max_dispatches_per_second".to_string(), why));
    }
    if let Some(why) = dispatch_ceiling(spec, d) {
        out.push(("dispatcher.max_concurrent_dispatches".to_string(), why));
    }
    out
}

/// A time limit of the scenario, beside the least time what it limits
/// takes.
struct TimeLimit {
    /// Where it is written.
    path: String,
    limit: Option<Dur>,
    /// The least time, ns, an attempt (or call) it limits takes.
    least: u64,
    /// What that least time is made of.
    parts: &'static str,
    /// What a limit too short for it leaves.
    outcome: String,
}

/// The time limits no attempt (or call) can meet: attempt timeouts,
/// deadlines and dispatch deadlines at or below the least time what they
/// limit takes, with why, by path.
fn unmeetable_limits(spec: &ScenarioSpec) -> Vec<(String, String)> {
    let t = &spec.traffic;
    let top = least_attempt_ns(spec);
    let top_parts = match spec.backend.kind {
        BackendKind::Contention => {
            "four network hops: to the record, the write's round trip and back"
        }
        _ if spec.downstream.is_empty() => "network both ways, admission and service",
        _ => "network both ways, admission and service, and the calls to the tiers below",
    };
    let top_limit = |path: &str, limit: Option<Dur>, outcome: &str| TimeLimit {
        path: path.to_string(),
        limit,
        least: top,
        parts: top_parts,
        outcome: outcome.to_string(),
    };
    let mut limits = vec![
        top_limit(
            "traffic.attempt_timeout",
            t.attempt_timeout,
            "no attempt can succeed",
        ),
        top_limit("traffic.deadline", t.deadline, "no request can succeed"),
    ];
    // A Cloud Tasks queue's attempt timeout (`traffic.attempt_timeout` is
    // refused beside it).
    if let Some(d) = &spec.dispatcher {
        limits.push(top_limit(
            "dispatcher.dispatch_deadline",
            Some(d.dispatch_deadline),
            "no attempt can succeed",
        ));
    }
    for (i, d) in spec.downstream.iter().enumerate() {
        let parts = if i + 1 < spec.downstream.len() {
            "admission and service, and the calls to the tiers below"
        } else {
            "admission and service"
        };
        limits.push(TimeLimit {
            path: format!("downstream[{i}].attempt_timeout"),
            limit: d.attempt_timeout,
            least: least_answer_ns(spec, i + 1),
            parts,
            outcome: format!("no call to {:?} can succeed, so no request can", d.name),
        });
    }
    limits
        .into_iter()
        .filter_map(|l| {
            let why = too_short(l.limit?, l.least, l.parts, &l.outcome)?;
            Some((l.path, why))
        })
        .collect()
}

/// The end of an overload warning whose goodput, `rate` (as shown) a
/// second that the backend `verb`s, is still `threshold` of the demand or
/// more.
fn still_healthy(verb: &str, rate: &str, threshold: f64) -> String {
    format!(
        "; bins can still read as healthy while the backlog grows, as the {rate}/s it {verb} \
         are `recovery_threshold` ({threshold}) of that demand or more"
    )
}

/// Why the Cloud Tasks queue `d` falls further behind all run, if it does:
/// open traffic whose lowest rate is above `max_dispatches_per_second`.
/// Every new task takes a token; retries take more, and the concurrency
/// limit and throttling only ever dispatch fewer, so the new tasks alone
/// outrun the bucket once its first `max_burst_size` tokens are spent,
/// `max_burst_size / (lowest rate − dispatch rate)` seconds in at the
/// latest, and the goodput is then at most the dispatch rate. Nothing is
/// said when that comes only after the run, or beside a `force_run`, which
/// dispatches past the bucket.
///
/// Whether bins still read as healthy then depends on the threshold:
/// goodput up to the dispatch rate may well be `recovery_threshold` of the
/// demand or more, and the message says so; otherwise, with the pile-up
/// under way by the end of the incident, no policy can recover.
fn dispatch_backlog(spec: &ScenarioSpec, d: &DispatcherSpec) -> Option<String> {
    let t = &spec.traffic;
    if !t.mode.open_arrivals()
        || spec
            .actions
            .iter()
            .any(|a| matches!(a, ActionSpec::ForceRun { .. }))
    {
        return None;
    }
    let lowest = t.rate? * t.scale_range().0;
    let rate = d.max_dispatches_per_second;
    if lowest <= rate {
        return None;
    }
    let burst = f64::from(d.max_burst_size);
    let spent = burst / (lowest - rate);
    if spent >= spec.duration.secs() {
        return None;
    }
    let threshold = spec.report.recovery_threshold;
    let run_end = spec.duration.ns();
    let incident_end = spec.incident(run_end).map(|(_, end)| end);
    let verdict = if threshold * lowest <= rate {
        still_healthy("dispatches", &legible(rate), threshold)
    } else if incident_end.is_some_and(|end| spent <= crate::time::secs(end)) {
        ", so no policy can recover from the incident: every one reads as degraded whatever \
         it does"
            .to_string()
    } else {
        String::new()
    };
    Some(format!(
        "{} is below the lowest rate of new tasks, {}/s: once the queue's full bucket of {} is \
         spent (within {} s), it falls further behind for the rest of the run{verdict}; lower \
         the rate or raise `max_dispatches_per_second`",
        Given(rate),
        legible(lowest),
        count(burst, "token", "tokens"),
        decimal::num((spent * 1000.0).ceil() / 1000.0),
    ))
}

/// Why a time limit of `limit` on something that takes at least `least`
/// ns (`parts` says of what) leaves `outcome`, if it does. An answer
/// that comes at the very instant the limit runs out is too late (the
/// limit's event was scheduled first), so a limit of exactly `least` is
/// as hopeless as a shorter one.
fn too_short(limit: Dur, least: u64, parts: &str, outcome: &str) -> Option<String> {
    let least_s = decimal::num(crate::time::secs(least));
    match limit.ns().cmp(&least) {
        std::cmp::Ordering::Less => Some(format!(
            "{limit} is shorter than the least time an attempt takes ({least_s} s: {parts}): \
             {outcome}"
        )),
        std::cmp::Ordering::Equal => Some(format!(
            "{limit} is just the least time an attempt takes ({least_s} s: {parts}), and an \
             answer that comes as the limit runs out is too late: {outcome}"
        )),
        std::cmp::Ordering::Greater => None,
    }
}

/// Why the queue's concurrency limit alone keeps every bin unhealthy: a
/// dispatched task holds its slot until its answer, which takes at least
/// [`least_attempt_ns`], so at most `max_concurrent_dispatches` ÷ that
/// time tasks a second can succeed; `None` unless that is below
/// `recovery_threshold` × the lowest rate of new (open-mode) tasks.
fn dispatch_ceiling(spec: &ScenarioSpec, d: &DispatcherSpec) -> Option<String> {
    let t = &spec.traffic;
    if !t.mode.open_arrivals() {
        return None;
    }
    let lowest = t.rate? * t.scale_range().0;
    // No least time (an attempt that takes none) makes the ceiling
    // infinite, and the test below passes.
    let least_s = crate::time::secs(least_attempt_ns(spec));
    let ceiling = f64::from(d.max_concurrent_dispatches) / least_s;
    let threshold = spec.report.recovery_threshold;
    if ceiling >= threshold * lowest {
        return None;
    }
    Some(format!(
        "{} tasks at once, each holding its slot at least {} s (the least time an attempt \
         takes), let at most {}/s succeed: below `recovery_threshold` ({threshold}) of the \
         lowest rate of new tasks, {}/s, so every bin reads as unhealthy whatever the policy; \
         raise `max_concurrent_dispatches`",
        d.max_concurrent_dispatches,
        decimal::num(least_s),
        decimal::rate(ceiling),
        decimal::rate(lowest),
    ))
}

/// The least time, in nanoseconds, from a client sending an attempt to
/// its `ok` answer: the network hops there and back (four for a
/// contention record: its write makes a round trip of its own) and the
/// least time the top backend and the tiers below it take to answer.
fn least_attempt_ns(spec: &ScenarioSpec) -> u64 {
    let hops = match spec.backend.kind {
        BackendKind::Contention => 4,
        _ => 2,
    };
    let network = spec.traffic.network_delay.as_ref().map_or(0, dist_min_ns);
    network
        .saturating_mul(hops)
        .saturating_add(least_answer_ns(spec, 0))
}

/// The least time, in nanoseconds, tier `k` (0 = the top backend) takes
/// from an attempt's arrival to its `ok` answer: its own admission and
/// service, then, since a worker that has served an attempt waits for its
/// calls to the tier below and calls take no network time, the same for
/// every tier below it.
fn least_answer_ns(spec: &ScenarioSpec, k: usize) -> u64 {
    (k..=spec.downstream.len())
        .map(|j| least_own_ns(spec, j))
        .fold(0, u64::saturating_add)
}

/// The least time, in nanoseconds, a worker of tier `k` spends serving an
/// attempt before it answers or calls the tier below: `admission_cost`
/// and the least service time (`base` for a concurrency backend, which
/// only grows with the attempts beside it), shortened by any `slowdown`
/// of that tier with a factor below 1. A contention record charges
/// neither.
fn least_own_ns(spec: &ScenarioSpec, k: usize) -> u64 {
    let b = spec.tier_backend(k);
    let service = match b.kind {
        BackendKind::Queue => b.service_time.as_ref().map_or(0, dist_min_ns),
        BackendKind::Concurrency => b.base.unwrap_or_default().ns(),
        BackendKind::Contention => return 0,
    };
    // Slowdowns multiply where they overlap; every speed-up at once is the
    // fastest service can be.
    let speedup: f64 = spec
        .faults
        .iter()
        .filter(|f| spec.tier_index(f.tier()) == Some(k))
        .filter_map(|f| match *f {
            FaultSpec::Slowdown { factor, .. } if factor < 1.0 => Some(factor),
            _ => None,
        })
        .product();
    let service = if speedup < 1.0 {
        (service as f64 * speedup).floor() as u64
    } else {
        service
    };
    b.admission_cost.ns().saturating_add(service)
}

/// The least value a distribution takes, in nanoseconds (0 for those
/// bounded below by zero alone).
fn dist_min_ns(d: &DistSpec) -> u64 {
    match d {
        DistSpec::Constant { value } => value.ns(),
        DistSpec::Uniform { min, max } => min.ns().min(max.ns()),
        DistSpec::Quantiles(_) | DistSpec::Histogram(_) => d.knots().map_or(0, |k| k[0].x as u64),
        _ => 0,
    }
}

/// A distribution's standard deviation in seconds (a folded normal's
/// before folding, which bounds it).
fn dist_sd_s(d: &DistSpec) -> f64 {
    match d {
        DistSpec::Constant { .. } => 0.0,
        DistSpec::Exponential { mean } => mean.secs(),
        DistSpec::Uniform { min, max } => (max.secs() - min.secs()).abs() / 12f64.sqrt(),
        DistSpec::Lognormal {
            median,
            p99,
            stddev,
            ..
        } => match (stddev, median, p99) {
            (Some(sd), _, _) => sd.secs(),
            (None, Some(m), Some(p)) => {
                // σ of the logarithm from the two quantiles, then the
                // log-normal's own standard deviation.
                let sigma = (p.secs() / m.secs()).ln() / Z99;
                let s2 = sigma * sigma;
                m.secs() * (s2 / 2.0).exp() * (s2.exp() - 1.0).sqrt()
            }
            _ => 0.0,
        },
        DistSpec::Normal { stddev, .. } => stddev.secs(),
        DistSpec::Quantiles(_) | DistSpec::Histogram(_) => d
            .knots()
            .map_or(0.0, |k| super::spec::measured::knots_stddev(&k) / 1e9),
    }
}

/// A distribution's mean in seconds, as written.
fn dist_mean_s(d: &DistSpec) -> f64 {
    match d {
        DistSpec::Constant { value } => value.secs(),
        DistSpec::Exponential { mean } => mean.secs(),
        DistSpec::Uniform { min, max } => (min.secs() + max.secs()) / 2.0,
        DistSpec::Lognormal {
            median, mean, p99, ..
        } => match (mean, median, p99) {
            (Some(m), _, _) => m.secs(),
            // The mean lies above the median by exp(σ²/2), σ the
            // logarithm's spread that puts the p99 where it is.
            (None, Some(m), Some(p)) => {
                let sigma = (p.secs() / m.secs()).ln() / Z99;
                m.secs() * (sigma * sigma / 2.0).exp()
            }
            (None, m, p) => m.or(*p).map_or(0.0, |d| d.secs()),
        },
        DistSpec::Normal { mean, .. } => mean.secs(),
        DistSpec::Quantiles(_) | DistSpec::Histogram(_) => d
            .knots()
            .map_or(0.0, |k| super::spec::measured::knots_mean(&k) / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn scenario(traffic: &str, backend: &str, rest: &str, policy: &str) -> Scenario {
        Scenario::from_json(&format!(
            r#"{{"name": "l", "duration": "60s",
                "traffic": {{{traffic}}},
                "backend": {{{backend}}} {rest},
                "policies": [{policy}]}}"#
        ))
        .unwrap()
    }

    /// A gRPC preset's attempts past gRPC's cap of 5 (or unlimited) are
    /// simulated at 5 and named; 5 or fewer, or another preset, are not.
    #[test]
    fn attempts_past_the_grpc_cap_are_capped_and_named() {
        let backend = r#""workers": 4, "service_time": {"constant": {"value": "10ms"}}"#;
        let s = scenario(
            r#""rate": 10"#,
            backend,
            "",
            r#"{"name": "a", "preset": "grpc", "max_attempts": 10},
               {"name": "b", "preset": "grpc-legacy", "max_attempts": 0},
               {"name": "c", "preset": "grpc", "max_attempts": 3},
               {"name": "d", "preset": "aws-standard", "max_attempts": 10}"#,
        );
        let attempts: Vec<Option<u32>> = s.policies().iter().map(|p| p.max_attempts).collect();
        assert_eq!(attempts, [Some(5), Some(5), Some(3), Some(10)]);
        let paths: Vec<String> = policy_warnings(s.spec(), s.policies())
            .into_iter()
            .filter(|(_, m)| m.contains("gRFC A6"))
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            paths,
            ["policies[0].max_attempts", "policies[1].max_attempts"]
        );
    }

    /// A knot past the first one after the run's end, and a capacity
    /// fault that removes no worker, are named; the first knot after the
    /// end (it sets the last slope) and a real capacity loss are not.
    #[test]
    fn settings_without_effect_are_flagged() {
        let backend = r#""workers": 4, "service_time": {"constant": {"value": "10ms"}}"#;
        let s = scenario(
            r#""rate": 10, "profile": [{"at": "0s", "scale": 1}, {"at": "90s", "scale": 2},
                {"at": "120s", "scale": 3}]"#,
            backend,
            r#", "faults": [{"capacity": {"start": "10s", "duration": "5s", "workers": 4}},
                {"capacity": {"start": "20s", "duration": "5s", "workers": 1}}]"#,
            r#"{"name": "p"}"#,
        );
        let paths: Vec<String> = settings_without_effect(s.spec())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(
            paths,
            ["traffic.profile[2].at", "faults[0].capacity.workers"]
        );
    }

    const FOREVER: &str =
        r#"{"name": "forever", "max_attempts": 0, "backoff": {"constant": {"delay": "0s"}}}"#;

    #[test]
    fn an_age_limit_beside_unlimited_attempts_is_flagged() {
        let backend = r#""workers": 1, "service_time": {"constant": {"value": "1ms"}}"#;
        let policy = |attempts: i64| {
            format!(
                r#"{{"name": "q", "max_attempts": {attempts}, "max_retry_duration": "1h",
                    "backoff": {{"constant": {{"delay": "1s"}}}}}}"#
            )
        };
        let flagged = |attempts| {
            let s = scenario(r#""rate": 10"#, backend, "", &policy(attempts));
            warnings(s.spec(), s.policies())
                .into_iter()
                .filter(|w| w.path == "policies[0].max_retry_duration")
                .map(|w| w.message)
                .collect::<Vec<_>>()
        };
        let w = flagged(-1);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("never ends") && w[0].contains("`max_attempts` to 1"));
        assert_eq!(flagged(0).len(), 1);
        // A finite limit or age alone (one attempt) is what was meant.
        assert!(flagged(1).is_empty());
        assert!(flagged(5).is_empty());
        // The same policy calling a tier below: its own, or the compared
        // policy's `downstream_policy`.
        let tier = |policy: &str, downstream_policy: &str| {
            let s = scenario(
                r#""rate": 10"#,
                backend,
                &format!(
                    r#", "downstream": [{{"name": "db", "policy": {policy}, "backend": {{{backend}}}}}]"#
                ),
                &format!(r#"{{"name": "top"{downstream_policy}}}"#),
            );
            warnings(s.spec(), s.policies())
                .into_iter()
                .map(|w| w.path)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            tier(&policy(-1), ""),
            ["downstream[0].policy.max_retry_duration"]
        );
        assert_eq!(
            tier(
                r#""compared""#,
                &format!(r#", "downstream_policy": {}"#, policy(-1))
            ),
            ["policies[0].downstream_policy.max_retry_duration"]
        );
        assert!(tier(&policy(3), "").is_empty());
    }

    #[test]
    fn retrying_forever_into_instant_rejections_is_a_loop() {
        let s = scenario(
            r#""rate": 100"#,
            r#""workers": 1, "queue_limit": 1, "service_time": {"constant": {"value": "1s"}}"#,
            "",
            FOREVER,
        );
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("reject_cost"), "{why}");
        // Any delay breaks it.
        let s = scenario(
            r#""rate": 100, "network_delay": {"constant": {"value": "1ms"}}"#,
            r#""workers": 1, "queue_limit": 1, "service_time": {"constant": {"value": "1s"}}"#,
            "",
            FOREVER,
        );
        assert_eq!(zero_time_loop(s.spec(), &s.policies()[0]), None);
    }

    #[test]
    fn backends_without_a_waiting_room_reject_at_once() {
        let conc = |extra: &str| {
            format!(r#""kind": "concurrency", "base": "10ms", "per_request": "1ms"{extra}"#)
        };
        // Full at `max_concurrency`: the rejection takes no time, and no
        // cost of the backend's would change that.
        let s = scenario(
            r#""rate": 100"#,
            &conc(r#", "max_concurrency": 20"#),
            "",
            FOREVER,
        );
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("`max_concurrency` rejects at once"), "{why}");
        assert!(!why.contains("reject_cost"), "{why}");
        // Unlimited, it never rejects: no loop.
        let s = scenario(r#""rate": 100"#, &conc(""), "", FOREVER);
        assert_eq!(zero_time_loop(s.spec(), &s.policies()[0]), None);
        // Unless a capacity fault takes every slot away.
        let s = scenario(
            r#""rate": 100"#,
            &conc(""),
            r#", "faults": [{"capacity": {"start": "1s", "duration": "1s", "workers": 0}}]"#,
            FOREVER,
        );
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("capacity fault of 0 workers"), "{why}");
        // An outage on a contention record fails at once.
        let s = scenario(
            r#""rate": 100"#,
            r#""kind": "contention""#,
            r#", "faults": [{"outage": {"start": "1s", "duration": "1s"}}]"#,
            FOREVER,
        );
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("an outage fails attempts at once"), "{why}");
    }

    #[test]
    fn an_exact_pushback_of_zero_is_a_loop_and_the_message_says_so() {
        let policy = r#"{"name": "grpc", "max_attempts": 0, "honor_retry_after": true,
            "pushback": "exact", "backoff": {"constant": {"delay": "100ms"}}}"#;
        let backend = |after: &str| {
            format!(
                r#""workers": 1, "queue_limit": 1, "retry_after": "{after}",
                   "service_time": {{"constant": {{"value": "1s"}}}}"#
            )
        };
        let s = scenario(r#""rate": 100"#, &backend("0s"), "", policy);
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("retry_after"), "{why}");
        // A pushback of any length lets time pass.
        let s = scenario(r#""rate": 100"#, &backend("1ms"), "", policy);
        assert_eq!(zero_time_loop(s.spec(), &s.policies()[0]), None);
    }

    #[test]
    fn retries_microseconds_apart_through_a_fault_are_a_flood() {
        let flood = |backoff: &str, attempts: u32| {
            let s = scenario(
                r#""rate": 200"#,
                r#""workers": 5, "service_time": {"constant": {"value": "10ms"}}"#,
                r#", "faults": [{"outage": {"start": "10s", "duration": "5s"}}]"#,
                &format!(r#"{{"name": "p", "max_attempts": {attempts}, "backoff": {backoff}}}"#),
            );
            warnings(s.spec(), s.policies())
                .into_iter()
                .find(|p| p.path == "policies[0]")
                .map(|p| p.message)
        };
        // 5 s of retries 1 µs apart: five million attempts.
        let w = flood(r#"{"constant": {"delay": "1us"}}"#, 0).expect("a flood");
        assert!(w.contains("5.0e6") && w.contains("the outage"), "{w}");
        // An attempt limit, or a backoff of milliseconds, bounds it.
        assert_eq!(flood(r#"{"constant": {"delay": "1us"}}"#, 10), None);
        assert_eq!(flood(r#"{"constant": {"delay": "1ms"}}"#, 0), None);
        let w = flood(r#"{"decorrelated": {"base": "1ns", "max": "1ns"}}"#, 0);
        assert!(w.is_some_and(|w| w.contains("5.0e9")));
        // Retries that take no time make every attempt a limit allows at
        // once: a million of them is a flood, ten are not.
        let w = flood(r#"{"constant": {"delay": "0s"}}"#, 1_000_000).expect("a flood");
        assert!(w.contains("1.0e6") && w.contains("within 0s"), "{w}");
        assert_eq!(flood(r#"{"constant": {"delay": "0s"}}"#, 10), None);
    }

    #[test]
    fn a_throttling_floor_at_the_maximum_is_flagged() {
        let flagged = |min_rate: &str| {
            let s = scenario(
                r#""rate": 10, "clients": 10"#,
                r#""workers": 1, "service_time": {"constant": {"value": "1ms"}}"#,
                &format!(
                    r#", "dispatcher": {{"max_dispatches_per_second": 50,
                        "throttling": {{"min_rate": {min_rate}}}}}"#
                ),
                r#"{"name": "q", "preset": "cloud-tasks-default"}"#,
            );
            warnings(s.spec(), s.policies())
                .into_iter()
                .any(|w| w.path == "dispatcher.throttling.min_rate")
        };
        assert!(flagged("50") && flagged("1e300"));
        assert!(!flagged("1"));
    }

    #[test]
    fn throttling_delays_and_exact_pushback_count_in_a_flood() {
        let flood = |backend: &str, fault: &str, policy: &str| {
            let s = scenario(
                r#""rate": 200"#,
                &format!(
                    r#""workers": 5, "service_time": {{"constant": {{"value": "10ms"}}}}{backend}"#
                ),
                &format!(
                    r#", "faults": [{{"outage": {{"start": "10s", "duration": "5s"{fault}}}}}]"#
                ),
                &format!(
                    r#"{{"name": "p", "max_attempts": 0, "backoff": {{"constant": {{"delay": "1s"}}}}{policy}}}"#
                ),
            );
            warnings(s.spec(), s.policies())
                .into_iter()
                .find(|p| p.path == "policies[0]")
                .map(|p| p.message)
        };
        let throttling = r#", "throttling_backoff": {"constant": {"delay": "1us"}}"#;
        let exhausted = r#", "status": "resource_exhausted""#;
        // Throttling errors retried 1 µs apart.
        let w = flood("", exhausted, throttling).expect("a flood");
        assert!(
            w.contains("5.0e6") && w.contains("`throttling_backoff`"),
            "{w}"
        );
        // Not when the outage answers `unavailable`: the 1 s backoff holds.
        assert_eq!(flood("", "", throttling), None);
        // A 1 µs pushback honoured exactly; honoured as a floor, the 1 s
        // backoff holds.
        let pushback = r#", "retry_after": "1us""#;
        let exact = r#", "honor_retry_after": true, "pushback": "exact""#;
        let w = flood(pushback, "", exact).expect("a flood");
        assert!(
            w.contains("5.0e6") && w.contains("`backend.retry_after`"),
            "{w}"
        );
        assert_eq!(flood(pushback, "", r#", "honor_retry_after": true"#), None);
        assert_eq!(flood(pushback, "", ""), None);
        // A throttling backoff of zero is a loop at one instant.
        let zero = r#", "throttling_backoff": {"constant": {"delay": "0s"}}"#;
        let w = flood("", exhausted, zero).expect("a loop");
        assert!(w.contains("no `throttling_backoff`"), "{w}");
        assert!(w.contains("add a `throttling_backoff` delay"), "{w}");
    }

    #[test]
    fn closed_clients_without_think_time_loop_through_an_outage() {
        let s = scenario(
            r#""mode": "closed", "clients": 10"#,
            r#""workers": 2, "service_time": {"constant": {"value": "10ms"}}"#,
            r#", "faults": [{"outage": {"start": "10s", "duration": "10s"}}]"#,
            r#"{"name": "once"}"#,
        );
        let why = zero_time_loop(s.spec(), &s.policies()[0]).expect("a loop");
        assert!(why.contains("think_time"), "{why}");
        let w = warnings(s.spec(), s.policies());
        assert!(w.iter().any(|p| p.path == "policies[0]"), "{w:?}");
    }

    #[test]
    fn a_short_tail_after_the_fault_is_flagged() {
        let s = scenario(
            r#""rate": 1000"#,
            r#""workers": 20, "service_time": {"constant": {"value": "10ms"}}"#,
            r#", "faults": [{"outage": {"start": "40s", "duration": "10s"}}]"#,
            r#"{"name": "once"}"#,
        );
        let w = warnings(s.spec(), s.policies());
        assert!(
            w.iter()
                .any(|p| p.path == "duration" && p.message.contains("10s")),
            "{w:?}"
        );
        // A fault that outlasts the run: by how much, not "0s after".
        let s = scenario(
            r#""rate": 1000"#,
            r#""workers": 20, "service_time": {"constant": {"value": "10ms"}}"#,
            r#", "faults": [{"outage": {"start": "40s", "duration": "100s"}}]"#,
            r#"{"name": "once"}"#,
        );
        let w = warnings(s.spec(), s.policies());
        let tail = w.iter().find(|p| p.path == "duration").expect("a warning");
        assert!(
            tail.message
                .starts_with("the last fault ends 80s after the run does (1m)"),
            "{}",
            tail.message
        );
    }

    #[test]
    fn few_requests_per_bin_are_flagged_and_many_are_not() {
        let text = |rate: u32| {
            scenario(
                &format!(r#""rate": {rate}"#),
                r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
                r#", "faults": [{"outage": {"start": "5s", "duration": "5s"}}]"#,
                r#"{"name": "once"}"#,
            )
        };
        let noisy = |s: &Scenario| {
            warnings(s.spec(), s.policies())
                .iter()
                .any(|p| p.path == "bin")
        };
        assert!(noisy(&text(5)), "5 requests a second in 1 s bins");
        assert!(!noisy(&text(2000)));
        // A profile scales the rate: 5 a second held at 400× is 2000.
        let scaled = scenario(
            r#""rate": 5, "profile": [{"at": "0s", "scale": 400}, {"at": "30s", "scale": 400}]"#,
            r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
            r#", "faults": [{"outage": {"start": "5s", "duration": "5s"}}]"#,
            r#"{"name": "once"}"#,
        );
        assert!(!noisy(&scaled), "the profile's lowest scale sets the rate");
    }

    #[test]
    fn evenly_spaced_arrivals_are_noisy_only_as_far_as_latency_varies() {
        let noisy = |arrival: &str, service: &str| {
            let s = scenario(
                &format!(r#""rate": 5, "arrival": "{arrival}""#),
                &format!(r#""workers": 200, "service_time": {service}"#),
                r#", "faults": [{"outage": {"start": "5s", "duration": "5s"}}]"#,
                r#"{"name": "once"}"#,
            );
            warnings(s.spec(), s.policies())
                .into_iter()
                .find(|p| p.path == "bin")
                .map(|p| p.message)
        };
        let constant = r#"{"constant": {"value": "20s"}}"#;
        // Poisson arrivals: 5 a bin, whatever the service time.
        let poisson = noisy("poisson", constant).expect("Poisson arrivals at 5 a bin are noisy");
        assert!(
            poisson.starts_with(
                "about 5 requests per bin of 1s: chance alone (random arrivals and service times)"
            ),
            "{poisson}"
        );
        // Evenly spaced arrivals served in a constant time: every bin
        // completes exactly what arrived one service time before.
        assert_eq!(noisy("uniform", constant), None);
        // A spread of a millisecond moves a request across an edge now
        // and then, far too rarely to matter.
        assert_eq!(
            noisy("uniform", r#"{"uniform": {"min": "1s", "max": "1.001s"}}"#),
            None
        );
        // A spread of seconds is as noisy as random arrivals.
        let spread = noisy("uniform", r#"{"exponential": {"mean": "20s"}}"#)
            .expect("a spread of seconds is noisy");
        assert!(
            spread.contains("chance alone (random service times)"),
            "{spread}"
        );
        assert!(noisy(
            "uniform",
            r#"{"lognormal": {"median": "4s", "p99": "10s"}}"#
        )
        .is_some());
    }

    #[test]
    fn a_log_normal_given_by_quantiles_has_its_own_spread() {
        // median 4 s, p99 10 s: σ of the logarithm 0.394, so the standard
        // deviation is 4 · e^(σ²/2) · √(e^(σ²) − 1) = 1.771 s.
        let d: DistSpec =
            serde_json::from_str(r#"{"lognormal": {"median": "4s", "p99": "10s"}}"#).unwrap();
        assert!((dist_sd_s(&d) - 1.7708).abs() < 1e-3, "{}", dist_sd_s(&d));
        let e: DistSpec = serde_json::from_str(r#"{"exponential": {"mean": "3s"}}"#).unwrap();
        assert_eq!(dist_sd_s(&e), 3.0);
        let u: DistSpec =
            serde_json::from_str(r#"{"uniform": {"min": "1s", "max": "4s"}}"#).unwrap();
        assert!((dist_sd_s(&u) - 3.0 / 12f64.sqrt()).abs() < 1e-12);
    }

    #[test]
    fn under_one_request_per_bin_is_flagged_without_a_panic() {
        // 1/rate is longer than the bin: the spacing's floor exceeds its cap.
        for rate in ["0.5", "1e-300"] {
            let s = scenario(
                &format!(r#""rate": {rate}"#),
                r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
                r#", "faults": [{"outage": {"start": "5s", "duration": "5s"}}]"#,
                r#"{"name": "once"}"#,
            );
            let w = warnings(s.spec(), s.policies());
            assert!(w.iter().any(|p| p.path == "bin"), "rate {rate}: {w:?}");
        }
    }

    /// The warnings of `never_healthy` for a scenario, as (field, message).
    fn never(traffic: &str, backend: &str) -> Vec<(String, String)> {
        never_with(traffic, backend, "")
    }

    /// [`never`] with more top-level fields (`rest`, starting with a comma).
    fn never_with(traffic: &str, backend: &str, rest: &str) -> Vec<(String, String)> {
        let s = scenario(
            traffic,
            backend,
            &format!(r#", "faults": [{{"outage": {{"start": "5s", "duration": "5s"}}}}]{rest}"#),
            r#"{"name": "once"}"#,
        );
        never_healthy(s.spec())
    }

    #[test]
    fn runs_no_policy_can_make_healthy_are_flagged() {
        // 20 workers of 50 ms serve 400/s.
        let backend = r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#;
        assert_eq!(never(r#""rate": 300"#, backend), []);
        let over = never(r#""rate": 500"#, backend);
        assert_eq!(over.len(), 1, "{over:?}");
        assert_eq!(over[0].0, "traffic");
        assert!(over[0].1.contains("at least 500/s"), "{}", over[0].1);
        assert!(over[0].1.contains("about 400/s"), "{}", over[0].1);
        // 400/s served is under 0.9 × 500/s: every bin reads unhealthy.
        assert!(over[0].1.contains("no policy can recover"), "{}", over[0].1);
        // 420/s against 400/s: goodput at capacity is 0.95 of demand, which
        // the default threshold (0.9) reads as healthy.
        let mild = never(r#""rate": 420"#, backend);
        assert_eq!(mild.len(), 1, "{mild:?}");
        assert!(
            mild[0]
                .1
                .contains("bins can still read as healthy while the backlog grows")
                && !mild[0].1.contains("no policy can recover"),
            "{}",
            mild[0].1
        );
        // A spike above capacity is a trigger, not a steady overload: the
        // lowest rate of the run is what counts.
        let spike = r#""rate": 300, "profile": [{"at": "0s", "scale": 1},
            {"at": "5s", "scale": 2}, {"at": "10s", "scale": 1}]"#;
        assert_eq!(never(spike, backend), []);
        // A concurrency backend's throughput at its limit: 10 in service
        // at 10 ms + 1 ms for each other one, 10 / 19 ms = 526/s.
        let conc = r#""kind": "concurrency", "base": "10ms", "per_request": "1ms",
            "max_concurrency": 10"#;
        assert_eq!(never(r#""rate": 500"#, conc), []);
        assert_eq!(never(r#""rate": 600"#, conc).len(), 1);
        // Nothing to measure.
        for rate in [
            r#""rate": 0.01"#,
            r#""rate": 5, "profile": [{"at": "0s", "scale": 0}]"#,
        ] {
            let none = never(rate, backend);
            assert!(none[0].1.starts_with("fewer than one request"), "{none:?}");
        }
        // No attempt can finish within the time limits: 50 ms of service
        // and 2 × 5 ms of network; a deadline of 61 ms leaves room.
        let slow = never(
            r#""rate": 100, "attempt_timeout": "59ms", "deadline": "61ms",
               "network_delay": {"uniform": {"min": "5ms", "max": "7ms"}}"#,
            backend,
        );
        let paths: Vec<&str> = slow.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(paths, ["traffic.attempt_timeout"], "{slow:?}");
        assert!(slow[0].1.contains("(0.06 s:"), "{}", slow[0].1);
        // Exactly as long: the answer comes as the deadline runs out, which
        // is too late. A nanosecond more and it can.
        let just = never(r#""rate": 100, "deadline": "50ms""#, backend);
        assert_eq!(just.len(), 1, "{just:?}");
        assert_eq!(just[0].0, "traffic.deadline");
        assert!(
            just[0]
                .1
                .starts_with("50ms is just the least time an attempt takes (0.05 s:"),
            "{}",
            just[0].1
        );
        assert!(
            just[0].1.ends_with("no request can succeed"),
            "{}",
            just[0].1
        );
        assert_eq!(
            never(r#""rate": 100, "deadline": "50000001ns""#, backend),
            []
        );
    }

    #[test]
    fn a_contention_record_costs_four_hops() {
        // Each hop 10 ms: to the record, the write's round trip, and back.
        let record = |timeout: &str| {
            never(
                &format!(
                    r#""rate": 10, "attempt_timeout": "{timeout}",
                       "network_delay": {{"constant": {{"value": "10ms"}}}}"#
                ),
                r#""kind": "contention""#,
            )
        };
        let w = record("39ms");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1.contains("(0.04 s: four network hops"), "{}", w[0].1);
        assert_eq!(record("41ms"), []);
    }

    #[test]
    fn time_limits_count_the_tiers_below() {
        // frontend 2 ms → service 1 ms admission + 3..4 ms → database 5 ms
        // base: a call to the service takes at least 9 ms, one to the
        // database 5 ms, an attempt at the top 11 ms and 2 × 1 ms of network.
        let chain = |top: &str, service: &str, database: &str| {
            never_with(
                &format!(
                    r#""rate": 10, "attempt_timeout": "{top}",
                       "network_delay": {{"constant": {{"value": "1ms"}}}}"#
                ),
                r#""workers": 20, "service_time": {"constant": {"value": "2ms"}}"#,
                &format!(
                    r#", "downstream": [
                        {{"name": "service", "attempt_timeout": "{service}",
                          "backend": {{"workers": 20, "admission_cost": "1ms",
                            "service_time": {{"uniform": {{"min": "3ms", "max": "4ms"}}}}}}}},
                        {{"name": "database", "attempt_timeout": "{database}",
                          "backend": {{"kind": "concurrency", "base": "5ms",
                            "per_request": "1us"}}}}]"#
                ),
            )
        };
        assert_eq!(chain("13.1ms", "9.1ms", "5.1ms"), []);
        let w = chain("13ms", "8ms", "5ms");
        let paths: Vec<&str> = w.iter().map(|w| w.0.as_str()).collect();
        assert_eq!(
            paths,
            [
                "traffic.attempt_timeout",
                "downstream[0].attempt_timeout",
                "downstream[1].attempt_timeout"
            ],
            "{w:?}"
        );
        assert!(
            w[0].1.starts_with(
                "13ms is just the least time an attempt takes (0.013 s: network both ways, \
                 admission and service, and the calls to the tiers below)"
            ),
            "{}",
            w[0].1
        );
        assert_eq!(
            w[1].1,
            "8ms is shorter than the least time an attempt takes (0.009 s: admission and \
             service, and the calls to the tiers below): no call to \"service\" can succeed, \
             so no request can"
        );
        assert!(
            w[2].1.contains("(0.005 s: admission and service)")
                && w[2]
                    .1
                    .ends_with("no call to \"database\" can succeed, so no request can"),
            "{}",
            w[2].1
        );
        // A tier without a timeout is waited for however long it takes.
        let s = scenario(
            r#""rate": 10"#,
            r#""workers": 20, "service_time": {"constant": {"value": "2ms"}}"#,
            r#", "downstream": [{"name": "db",
                "backend": {"workers": 20, "service_time": {"constant": {"value": "1s"}}}}]"#,
            r#"{"name": "once"}"#,
        );
        assert_eq!(never_healthy(s.spec()), []);
    }

    #[test]
    fn a_speed_up_shortens_the_least_service_time() {
        // A slowdown of factor 0.5 on the database halves its 10 ms; one on
        // the top backend leaves the database alone.
        let db = |tier: &str| {
            let s = scenario(
                r#""rate": 10"#,
                r#""workers": 20, "service_time": {"constant": {"value": "2ms"}}"#,
                &format!(
                    r#", "downstream": [{{"name": "db", "attempt_timeout": "6ms",
                        "backend": {{"workers": 20,
                          "service_time": {{"constant": {{"value": "10ms"}}}}}}}}],
                       "faults": [{{"slowdown": {{"start": "5s", "duration": "5s",
                         "factor": 0.5{tier}}}}}]"#
                ),
                r#"{"name": "once"}"#,
            );
            never_healthy(s.spec())
        };
        assert_eq!(db(r#", "tier": "db""#), []);
        let w = db("");
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "downstream[0].attempt_timeout");
    }

    #[test]
    fn a_dispatch_rate_of_less_than_one_token_a_run_is_flagged() {
        // A run of 60 s, a bucket of 7 tokens.
        let queue = |rate: &str| {
            never_with(
                r#""rate": 10"#,
                r#""workers": 20, "service_time": {"constant": {"value": "5ms"}}"#,
                &format!(
                    r#", "dispatcher": {{"max_dispatches_per_second": {rate},
                        "max_burst_size": 7}}"#
                ),
            )
        };
        // A subnormal rate, whose tokens per nanosecond are 0; a tiny
        // normal one; 0.6 tokens over the run.
        for (rate, tokens) in [
            ("1e-320", "6.00e-319"),
            ("1e-10", "6.00e-9"),
            ("0.01", "6.00e-1"),
        ] {
            let w = queue(rate);
            assert_eq!(w.len(), 1, "{rate}: {w:?}");
            assert_eq!(w[0].0, "dispatcher.max_dispatches_per_second");
            assert!(
                w[0].1.starts_with(&format!(
                    "{rate} adds fewer than one token to the bucket in the whole run \
                     ({tokens} over 1m): after the first 7 dispatches"
                )),
                "{}",
                w[0].1
            );
        }
        // 1.2 tokens: one more dispatch comes within the run, though far
        // too few for 10 new tasks a second.
        let w = queue("0.02");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].1
                .starts_with("0.02 is below the lowest rate of new tasks, 10/s:"),
            "{}",
            w[0].1
        );
    }

    /// The concurrency limit caps goodput at slots ÷ the least time a
    /// task holds one; below the health threshold of the demand, every
    /// bin fails whatever the policy.
    #[test]
    fn a_concurrency_limit_below_the_demand_is_flagged() {
        // 100 ms of service: each slot succeeds at most 10 times a second.
        let queue = |rate: u32, slots: u32| {
            never_with(
                &format!(r#""rate": {rate}"#),
                r#""workers": 100, "service_time": {"constant": {"value": "100ms"}}"#,
                &format!(
                    r#", "dispatcher": {{"max_dispatches_per_second": 1000,
                        "max_concurrent_dispatches": {slots}}}"#
                ),
            )
        };
        // 5 slots: at most 50/s, under 0.9 × 100/s.
        let w = queue(100, 5);
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "dispatcher.max_concurrent_dispatches");
        assert!(
            w[0].1.starts_with(
                "5 tasks at once, each holding its slot at least 0.1 s (the least time an \
                 attempt takes), let at most 50/s succeed"
            ),
            "{}",
            w[0].1
        );
        // 9 slots: 90/s, exactly 0.9 × 100/s, can read healthy; 20 keep up.
        assert_eq!(queue(100, 9), []);
        assert_eq!(queue(100, 20), []);
    }

    #[test]
    fn new_tasks_above_the_dispatch_rate_are_flagged() {
        // 20 workers of 5 ms serve 4000/s: only the queue holds tasks back.
        let queue = |traffic: &str, rate: &str, burst: u32, rest: &str| {
            never_with(
                traffic,
                r#""workers": 20, "service_time": {"constant": {"value": "5ms"}}"#,
                &format!(
                    r#", "dispatcher": {{"max_dispatches_per_second": {rate},
                        "max_burst_size": {burst}}}{rest}"#
                ),
            )
        };
        // 12 new tasks a second against 10 dispatches: the bucket of 5 is
        // spent within 5 / 2 = 2.5 s, before the outage ends (at 10 s), and
        // 10/s is below 0.9 × 12/s.
        let w = queue(r#""rate": 12"#, "10", 5, "");
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "dispatcher.max_dispatches_per_second");
        assert_eq!(
            w[0].1,
            "10 is below the lowest rate of new tasks, 12/s: once the queue's full bucket of 5 \
             tokens is spent (within 2.5 s), it falls further behind for the rest of the run, \
             so no policy can recover from the incident: every one reads as degraded whatever \
             it does; lower the rate or raise `max_dispatches_per_second`"
        );
        // At a threshold of 0.8, the 10/s dispatched make healthy bins.
        let lenient = queue(
            r#""rate": 12"#,
            "10",
            5,
            r#", "report": {"recovery_threshold": 0.8}"#,
        );
        assert!(
            lenient[0].1.contains(
                "for the rest of the run; bins can still read as healthy while the backlog \
                 grows, as the 10/s it dispatches are `recovery_threshold` (0.8) of that demand \
                 or more; lower"
            ),
            "{lenient:?}"
        );
        // A bucket of 50 lasts 25 s, past the outage: the queue keeps up
        // until then, so a recovery may come first.
        let late = queue(r#""rate": 12"#, "10", 50, "");
        assert!(
            late[0]
                .1
                .contains("(within 25 s), it falls further behind for the rest of the run; lower"),
            "{late:?}"
        );
        // One of 120 lasts the whole run (60 s); a rate no higher than the
        // dispatch rate keeps up.
        assert_eq!(queue(r#""rate": 12"#, "10", 120, ""), []);
        assert_eq!(queue(r#""rate": 10"#, "10", 5, ""), []);
        // The lowest rate of the run counts: a dip to 0.5 × 12 = 6/s keeps
        // up; one to 0.5 × 30 = 15/s does not.
        let dip = |rate: u32| {
            format!(
                r#""rate": {rate}, "profile": [{{"at": "0s", "scale": 1}},
                    {{"at": "20s", "scale": 0.5}}]"#
            )
        };
        assert_eq!(queue(&dip(12), "10", 5, ""), []);
        let w = queue(&dip(30), "10", 5, "");
        assert!(
            w[0].1
                .starts_with("10 is below the lowest rate of new tasks, 15/s:"),
            "{w:?}"
        );
        // A `force_run` dispatches past the bucket; closed-loop clients
        // wait for their answers.
        let forced = r#", "actions": [{"force_run": {"at": "30s"}}]"#;
        assert_eq!(queue(r#""rate": 12"#, "10", 5, forced), []);
        assert_eq!(
            queue(r#""clients": 100, "mode": "closed""#, "10", 5, ""),
            []
        );
        // Less than one token over the run has its own warning, alone.
        let w = queue(r#""rate": 12"#, "0.01", 5, "");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].1.contains("adds fewer than one token"), "{w:?}");
    }

    #[test]
    fn a_dispatch_deadline_is_the_attempt_timeout() {
        // 50 ms of service and 2 × 5 ms of network.
        let queue = |deadline: &str| {
            never_with(
                r#""rate": 10, "network_delay": {"constant": {"value": "5ms"}}"#,
                r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
                &format!(r#", "dispatcher": {{"dispatch_deadline": "{deadline}"}}"#),
            )
        };
        let w = queue("59ms");
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].0, "dispatcher.dispatch_deadline");
        assert_eq!(
            w[0].1,
            "59ms is shorter than the least time an attempt takes (0.06 s: network both ways, \
             admission and service): no attempt can succeed"
        );
        assert_eq!(queue("60ms")[0].0, "dispatcher.dispatch_deadline");
        assert_eq!(queue("61ms"), []);
        // The default, 10 minutes, is longer than any attempt here.
        assert_eq!(
            never_with(
                r#""rate": 10"#,
                r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
                r#", "dispatcher": {}"#,
            ),
            []
        );
    }

    #[test]
    fn a_log_normal_given_by_quantiles_has_its_mean_above_its_median() {
        let d: DistSpec =
            serde_json::from_str(r#"{"lognormal": {"median": "10ms", "p99": "100ms"}}"#).unwrap();
        // σ = ln 10 / 2.326 = 0.990; mean = 10 ms · e^(σ²/2) = 16.3 ms.
        let sigma = 10f64.ln() / Z99;
        assert!((dist_mean_s(&d) - 0.010 * (sigma * sigma / 2.0).exp()).abs() < 1e-12);
        assert!(
            (dist_mean_s(&d) - 0.0163).abs() < 1e-4,
            "{}",
            dist_mean_s(&d)
        );
    }

    #[test]
    fn a_burst_spread_past_the_run_is_flagged() {
        let burst = |spread: &str| {
            never(
                &format!(
                    r#""clients": 100, "mode": "burst", "burst_at": "30s",
                       "burst_spread": "{spread}""#
                ),
                r#""workers": 20, "service_time": {"constant": {"value": "50ms"}}"#,
            )
        };
        assert_eq!(burst("30s"), []);
        let past = burst("120s");
        assert_eq!(past.len(), 1);
        assert!(
            past[0].1.contains("only about 25 % of the clients"),
            "{}",
            past[0].1
        );
    }
}
