//! What a Cloud Tasks queue is, as Google documents it: the defaults a
//! policy attached to a queue (a scenario with a `dispatcher`) takes for
//! what its file leaves out, the API's documented limits (warned about,
//! naming the field and the range), the RunTask quota that paces a
//! `force_run`, and the effective settings `check` prints.
//!
//! Every number here is cited in `docs/policies.md` (section "Cloud Tasks
//! queues: defaults and limits"): the RetryConfig, RateLimits and Task
//! references (`queue.proto`, `task.proto` of googleapis/googleapis,
//! `google/cloud/tasks/v2`) and the Cloud Tasks quotas page.

use super::spec::{ActionSpec, Mode, ScenarioSpec};
use crate::decimal::{count, num, Given};
use crate::policy::{BackoffSpec, Policy, PolicySpec};
use crate::status::Status;
use crate::time::{Dur, Nanos, NS_PER_SEC};

/// RunTask calls a project may make a minute: the default of the "Force
/// run task requests" quota on the Cloud Tasks quotas page. RunTask is
/// "meant to be used for manual debugging".
pub const RUN_TASK_PER_MINUTE: f64 = 60.0;

/// `maxAttempts` of a queue created without one (the API's default, as
/// `gcloud tasks queues describe` shows it).
pub const DEFAULT_MAX_ATTEMPTS: i64 = 100;

/// The largest `max_dispatches_per_second` the API accepts (RateLimits:
/// "The maximum allowed value is 500").
pub const MAX_DISPATCHES_PER_SECOND: f64 = 500.0;

/// The largest `max_concurrent_dispatches` the API accepts (RateLimits:
/// "The maximum allowed value is 5,000").
pub const MAX_CONCURRENT_DISPATCHES: u32 = 5000;

/// The largest `max_burst_size` the service picks (v2beta3 RateLimits:
/// "The maximum value of max_burst_size is 500"); in v2 it is output only,
/// derived from the rate.
pub const MAX_BURST_SIZE: u32 = 500;

/// The shortest dispatch deadline, HTTP and App Engine targets alike (Task
/// reference, `dispatch_deadline`).
pub const MIN_DISPATCH_DEADLINE: Dur = Dur(15 * NS_PER_SEC);

/// The longest dispatch deadline of an HTTP target: 30 minutes.
pub const MAX_HTTP_DISPATCH_DEADLINE: Dur = Dur(30 * 60 * NS_PER_SEC);

/// The longest dispatch deadline of an App Engine target: 24 h 15 s.
pub const MAX_APP_ENGINE_DISPATCH_DEADLINE: Dur = Dur((24 * 3600 + 15) * NS_PER_SEC);

/// How long a task is kept at most, retried or not (quotas page, "Maximum
/// task retention": 31 days).
pub const MAX_TASK_RETENTION: Dur = Dur(31 * 24 * 3600 * NS_PER_SEC);

/// The default RetryConfig schedule: `min_backoff` 0.1 s, `max_backoff`
/// 3600 s, 16 doublings.
pub fn default_backoff() -> BackoffSpec {
    BackoffSpec::CloudTasks {
        min_backoff: Dur(NS_PER_SEC / 10),
        max_backoff: Dur(3600 * NS_PER_SEC),
        max_doublings: 16,
    }
}

/// Every status but `ok`: a queue retries any non-2xx answer and any
/// attempt unanswered by its dispatch deadline.
pub fn every_failure() -> Vec<Status> {
    Status::ALL
        .into_iter()
        .filter(|s| *s != Status::Ok)
        .collect()
}

/// The fields of a queue's policy that take the API's default when the
/// policy (and its preset) leaves them out, in the order `check` names
/// them.
pub const DEFAULTED: [&str; 3] = ["max_attempts", "backoff", "retry_on"];

/// `p` as a Cloud Tasks queue runs it: the fields neither it nor its
/// preset sets take the API's defaults (`max_attempts` 100, the default
/// schedule, every failure retried); `max_retry_duration` absent is
/// already the API's 0 (no age limit), and no jitter is what the service
/// documents. Returns the policy and the fields defaulted. A hedging
/// policy is left alone (validation refuses it beside a queue).
pub fn with_queue_defaults(p: &PolicySpec) -> (PolicySpec, Vec<&'static str>) {
    let Ok(applied) = p.with_preset_applied() else {
        return (p.clone(), vec![]);
    };
    if applied.hedging.is_some() {
        return (p.clone(), vec![]);
    }
    let mut out = p.clone();
    let mut defaulted = vec![];
    if applied.max_attempts.is_none() {
        out.max_attempts = Some(DEFAULT_MAX_ATTEMPTS);
        defaulted.push(DEFAULTED[0]);
    }
    if applied.backoff.is_none() {
        out.backoff = Some(default_backoff());
        defaulted.push(DEFAULTED[1]);
    }
    if applied.retry_on.is_none() {
        out.retry_on = Some(every_failure());
        defaulted.push(DEFAULTED[2]);
    }
    (out, defaulted)
}

/// The pause between two RunTask calls at `per_minute` calls a minute,
/// rounded up so that no 60 s window ever holds more than `per_minute`.
pub fn run_task_gap(per_minute: f64) -> Nanos {
    let gap = (60.0 * NS_PER_SEC as f64 / per_minute).ceil();
    if gap.is_finite() && gap >= 1.0 {
        gap.min(u64::MAX as f64) as Nanos
    } else {
        1
    }
}

/// The documented API limits a scenario with a queue goes beyond, as
/// (field path, why) warnings: rates, bursts and concurrency above the
/// maxima, dispatch deadlines outside the targets' ranges, queue
/// policies' backoffs that the API truncates to whole seconds, attempt
/// counts above its 32-bit field, age limits beyond the task retention,
/// and `force_run` actions that ask for more RunTask calls than the quota
/// allows before the tasks' own retries.
pub fn warnings(spec: &ScenarioSpec, policies: &[Policy]) -> Vec<(String, String)> {
    let Some(d) = &spec.dispatcher else {
        return vec![];
    };
    let mut out = vec![];
    let p = "dispatcher";
    if d.max_dispatches_per_second > MAX_DISPATCHES_PER_SECOND {
        out.push((
            format!("{p}.max_dispatches_per_second"),
            format!(
                "{} is above what the Cloud Tasks API accepts (at most {} dispatches a second \
                 per queue): a real queue cannot be set to it; spread the tasks over several \
                 queues",
                Given(d.max_dispatches_per_second),
                num(MAX_DISPATCHES_PER_SECOND)
            ),
        ));
    }
    if d.max_burst_size > MAX_BURST_SIZE {
        out.push((
            format!("{p}.max_burst_size"),
            format!(
                "{} is above the largest burst Cloud Tasks picks ({MAX_BURST_SIZE}); the \
                 service derives the burst from max_dispatches_per_second and cannot be told \
                 another",
                d.max_burst_size
            ),
        ));
    }
    if d.max_concurrent_dispatches > MAX_CONCURRENT_DISPATCHES {
        out.push((
            format!("{p}.max_concurrent_dispatches"),
            format!(
                "{} is above what the Cloud Tasks API accepts (at most {MAX_CONCURRENT_DISPATCHES})",
                d.max_concurrent_dispatches
            ),
        ));
    }
    let deadline = d.dispatch_deadline;
    let range = "HTTP targets accept 15 s to 30 min, App Engine targets 15 s to 24 h 15 s";
    if deadline < MIN_DISPATCH_DEADLINE || deadline > MAX_APP_ENGINE_DISPATCH_DEADLINE {
        out.push((
            format!("{p}.dispatch_deadline"),
            format!("{deadline} is outside the range Cloud Tasks accepts: {range}"),
        ));
    } else if deadline > MAX_HTTP_DISPATCH_DEADLINE {
        out.push((
            format!("{p}.dispatch_deadline"),
            format!(
                "{deadline} is longer than an HTTP target accepts ({range}): only an App \
                 Engine target can have it"
            ),
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        out.extend(policy_limits(&format!("policies[{i}]"), policy, spec));
    }
    for (i, a) in spec.actions.iter().enumerate() {
        if let Some(why) = run_task_shortfall(spec, a, policies) {
            out.push((format!("actions[{i}].force_run"), why));
        }
    }
    out
}

/// A queue policy's values outside what RetryConfig takes as written,
/// each at the field that sets it (the policy's `preset` when the preset
/// does).
fn policy_limits(path: &str, p: &Policy, spec: &ScenarioSpec) -> Vec<(String, String)> {
    let mut out = vec![];
    let written = spec.policies.iter().find(|w| w.name == p.name);
    let at = |set: fn(&PolicySpec) -> bool, field: &str| match written {
        Some(w) if !set(w) && w.preset.is_some() => format!("{path}.preset"),
        _ => format!("{path}.{field}"),
    };
    if let crate::policy::Backoff::CloudTasks {
        min_backoff,
        max_backoff,
        ..
    } = p.backoff
    {
        for (name, v) in [("min_backoff", min_backoff), ("max_backoff", max_backoff)] {
            // The API's own default, 0.100s, is shown unrounded.
            if v % NS_PER_SEC != 0 && v != NS_PER_SEC / 10 {
                out.push((
                    at(
                        |w| w.backoff.is_some(),
                        &format!("backoff.cloud_tasks.{name}"),
                    ),
                    format!(
                        "{name} {} is not a whole number of seconds: the RetryConfig reference \
                         says the queue truncates it to {} s, so a real queue may retry on \
                         another schedule than the one simulated",
                        Dur(v),
                        v / NS_PER_SEC
                    ),
                ));
            }
        }
    }
    if let Some(m) = p
        .max_attempts
        .filter(|&m| i64::from(m) > i64::from(i32::MAX))
    {
        out.push((
            at(|w| w.max_attempts.is_some(), "max_attempts"),
            format!(
                "{m} is above what RetryConfig's 32-bit maxAttempts holds ({}); -1 (unlimited) \
                 is the API's way to say more",
                i32::MAX
            ),
        ));
    }
    if let Some(age) = p.max_retry_duration {
        if age > MAX_TASK_RETENTION.ns() {
            out.push((
                at(|w| w.max_retry_duration.is_some(), "max_retry_duration"),
                format!(
                    "{} is longer than Cloud Tasks keeps a task (31 days from its creation, \
                     whatever its RetryConfig)",
                    Dur(age)
                ),
            ));
        }
    }
    out
}

/// Why a `force_run` asks for more RunTask calls than the quota allows
/// before the tasks' own retries, if it does: `n` tasks take `n /
/// per_minute` minutes of calls, and no waiting task waits longer for its
/// own retry than the longest delay of a policy's schedule. `n` is the
/// number of tasks named, or else an estimate of the tasks waiting at
/// `at`: those created since the incident began (open traffic at its
/// base rate; every client in burst or closed mode), times `fraction`.
fn run_task_shortfall(spec: &ScenarioSpec, a: &ActionSpec, policies: &[Policy]) -> Option<String> {
    let ActionSpec::ForceRun {
        at,
        tasks,
        fraction,
        ..
    } = a
    else {
        return None;
    };
    let per_minute = a.run_task_per_minute()?;
    let (n, whose) = match tasks {
        Some(list) => (list.len() as f64, "the tasks named".to_string()),
        None => {
            let (start, _) = spec.incident(spec.duration.ns())?;
            if start >= at.ns() {
                return None;
            }
            let t = &spec.traffic;
            let created = match (t.mode, t.rate) {
                (Mode::Open, Some(rate)) => rate * crate::time::secs(at.ns() - start),
                _ => f64::from(t.clients),
            };
            let share = fraction.unwrap_or(1.0);
            (
                (created * share).floor(),
                format!(
                    "about the tasks created since the incident began at {}{}",
                    Dur(start),
                    if share < 1.0 {
                        format!(", {}% of them", num(100.0 * share))
                    } else {
                        String::new()
                    }
                ),
            )
        }
    };
    if n <= per_minute {
        return None;
    }
    let takes = n / per_minute * 60.0;
    // The longest any task waits for its own retry, over the policies.
    let (longest, name) = policies
        .iter()
        .map(|p| (longest_delay(p), p.name.as_str()))
        .max_by_key(|&(d, _)| d)?;
    if takes <= crate::time::secs(longest) {
        return None;
    }
    Some(format!(
        "forcing {} ({whose}) takes {} s at the RunTask quota of {} calls a minute, longer \
         than any task waits for its own retry ({} at most, policy {name:?}): most are \
         dispatched by the queue before their RunTask call comes (raise `per_minute` to your \
         project's quota, or force fewer tasks)",
        count(n, "task", "tasks"),
        num(takes.ceil()),
        num(per_minute),
        Dur(longest),
    ))
}

/// The longest delay of `p`'s schedule before it gives up (its cap for
/// an unlimited one, within the first 10,000 retries).
fn longest_delay(p: &Policy) -> Nanos {
    let retries = p
        .max_attempts
        .map_or(10_000, |m| m.saturating_sub(1).min(10_000));
    (1..=retries.max(1))
        .map(|k| p.backoff.nominal(k))
        .max()
        .unwrap_or(0)
}

/// The settings a queue runs with, one line each: per policy its retry
/// settings, naming those that took the API's default (`defaulted`, by
/// policy), then the queue's rate limits and its RunTask quota. Empty
/// without a dispatcher.
pub fn effective_settings(
    spec: &ScenarioSpec,
    policies: &[Policy],
    defaulted: &[Vec<&'static str>],
) -> Vec<String> {
    let Some(d) = &spec.dispatcher else {
        return vec![];
    };
    let mut out = vec![];
    for (i, p) in policies.iter().enumerate() {
        let attempts = p
            .max_attempts
            .map_or("unlimited".to_string(), |m| m.to_string());
        let age = p
            .max_retry_duration
            .map_or("none".to_string(), |a| Dur(a).to_string());
        let retry_on = if p.retry_on == crate::status::StatusSet::of(&every_failure()) {
            "every non-2xx answer and timeout".to_string()
        } else {
            p.retry_on
                .to_vec()
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let from_api = defaulted
            .get(i)
            .filter(|f| !f.is_empty())
            .map(|f| format!(" (API default: {})", f.join(", ")))
            .unwrap_or_default();
        out.push(format!(
            "queue policy {:?}: max_attempts {attempts}, max_retry_duration {age}, backoff {}, \
             jitter {}, retries {retry_on}{from_api}",
            p.name,
            p.backoff.describe(),
            p.jitter.describe(),
        ));
    }
    out.push(format!(
        "queue: {} dispatches/s, burst {}, {} concurrent, dispatch deadline {}{}; RunTask at \
         most {} a minute",
        num(d.max_dispatches_per_second),
        d.max_burst_size,
        d.max_concurrent_dispatches,
        d.dispatch_deadline,
        if d.throttling.is_some() {
            ", system throttling on"
        } else {
            ""
        },
        spec.actions
            .iter()
            .filter_map(ActionSpec::run_task_per_minute)
            .map(num)
            .next()
            .unwrap_or_else(|| num(RUN_TASK_PER_MINUTE)),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_policy_takes_the_api_defaults_for_what_it_leaves_out() {
        let bare = PolicySpec {
            name: "p".into(),
            ..Default::default()
        };
        let (p, defaulted) = with_queue_defaults(&bare);
        assert_eq!(defaulted, DEFAULTED.to_vec());
        let r = crate::policy::resolve(&p).unwrap();
        assert_eq!(r.max_attempts, Some(100));
        assert!(r.retry_on.contains(Status::Internal) && !r.retry_on.contains(Status::Ok));
        assert_eq!(r.backoff.nominal(1), NS_PER_SEC / 10);
        assert_eq!(r.backoff.nominal(17), 3600 * NS_PER_SEC);
        // What the file (or its preset) says wins.
        let written = PolicySpec {
            name: "p".into(),
            max_attempts: Some(3),
            retry_on: Some(vec![Status::Unavailable]),
            ..Default::default()
        };
        let (p, defaulted) = with_queue_defaults(&written);
        assert_eq!(defaulted, vec!["backoff"]);
        assert_eq!(p.max_attempts, Some(3));
        assert_eq!(p.retry_on, Some(vec![Status::Unavailable]));
        let preset = PolicySpec {
            name: "p".into(),
            preset: Some("grpc".into()),
            ..Default::default()
        };
        let (p, defaulted) = with_queue_defaults(&preset);
        assert!(defaulted.is_empty());
        assert_eq!(p.retry_on, None, "the preset's retry_on stays");
    }

    #[test]
    fn the_run_task_pace_never_puts_more_than_the_quota_in_a_minute() {
        for q in [60.0, 7.0, 1.0, 1000.0, 0.5] {
            let gap = run_task_gap(q);
            // Calls at 0, gap, 2·gap, ...: those in [0, 60 s).
            let in_minute = (60 * NS_PER_SEC).div_ceil(gap);
            assert!(in_minute as f64 <= q.max(1.0), "{q}: {in_minute} a minute");
            assert!(
                in_minute as f64 >= q.floor().min(q.max(1.0)),
                "{q}: {in_minute}"
            );
        }
        assert_eq!(run_task_gap(60.0), NS_PER_SEC);
    }
}
