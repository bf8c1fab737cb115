//! `gcloud tasks queues describe` YAML → a `cloud_tasks` policy and a
//! `dispatcher` block.
//!
//! The output uses proto3-JSON camelCase keys and `"<decimal>s"` durations
//! (`0.100s`, `3600s`); fields at their zero value are left out. Absent keys
//! take the API defaults (maxAttempts 100, minBackoff 0.1 s, maxBackoff
//! 3600 s, maxDoublings 16, 500 dispatches/s, burst 100, 1000 concurrent);
//! absent `maxRetryDuration` means unlimited. Unknown keys (`state`,
//! `stackdriverLoggingConfig`, `httpTarget`, ...) are ignored.

use super::{bad_key, policy_name, Imported};
use crate::error::{InvalidInput, Located};
use crate::policy::{BackoffSpec, PolicySpec};
use crate::scenario::spec::DispatcherSpec;
use crate::status::Status;
use crate::time::Dur;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Queue {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    rate_limits: Option<RateLimits>,
    #[serde(default)]
    retry_config: Option<RetryConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateLimits {
    #[serde(default)]
    max_dispatches_per_second: Option<f64>,
    #[serde(default)]
    max_burst_size: Option<u32>,
    #[serde(default)]
    max_concurrent_dispatches: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryConfig {
    #[serde(default)]
    max_attempts: Option<i64>,
    #[serde(default)]
    max_retry_duration: Option<Dur>,
    #[serde(default)]
    min_backoff: Option<Dur>,
    #[serde(default)]
    max_backoff: Option<Dur>,
    #[serde(default)]
    max_doublings: Option<u32>,
}

/// Cloud Tasks API default: attempts per task.
pub const DEFAULT_MAX_ATTEMPTS: i64 = 100;
/// Cloud Tasks API default: dispatch rate (also the maximum).
pub const DEFAULT_RATE: f64 = 500.0;

/// Imports one queue from `describe` YAML; `origin` names the file in
/// errors.
pub fn import_str(text: &str, origin: &str) -> Result<Imported, InvalidInput> {
    let mut path = String::new();
    let parsed: Result<Queue, _> = serde_saphyr::with_deserializer_from_str(text, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = e.path().to_string();
            e.into_inner()
        })
    });
    let q = parsed.map_err(|e| {
        // saphyr's message starts with its own "error: "; the CLI adds one.
        let text = e.to_string();
        let msg = text.strip_prefix("error: ").unwrap_or(&text);
        if path.is_empty() || path == "." {
            InvalidInput::At(Located::whole(origin, msg))
        } else {
            bad_key(origin, &path, msg)
        }
    })?;
    let queue_name = q.name.as_deref().is_some_and(|n| n.contains("/queues/"));
    if !queue_name && q.rate_limits.is_none() && q.retry_config.is_none() {
        // An empty file, or some other YAML (a scenario, a manifest):
        // every key would take its default and the import would describe
        // a queue nobody configured.
        return Err(InvalidInput::At(Located::whole(
            origin,
            "no Cloud Tasks queue here: expected the output of `gcloud tasks queues describe` \
             (rateLimits, retryConfig, or a name projects/.../queues/...)",
        )));
    }
    let mut warnings = vec![];
    let rc = q.retry_config.unwrap_or_default();
    let max_attempts = match rc.max_attempts {
        None => DEFAULT_MAX_ATTEMPTS,
        Some(0) => {
            warnings.push(
                "retryConfig.maxAttempts is 0, which the API treats as unset: using 100".into(),
            );
            DEFAULT_MAX_ATTEMPTS
        }
        Some(n) if n < -1 => {
            return Err(bad_key(
                origin,
                "retryConfig.maxAttempts",
                format!("{n} is not allowed (>= -1; -1 = unlimited)"),
            ))
        }
        Some(n) => n,
    };
    let min_backoff = rc.min_backoff.unwrap_or(Dur::from_millis(100));
    let max_backoff = rc.max_backoff.unwrap_or(Dur::from_secs(3600));
    if min_backoff > max_backoff {
        return Err(bad_key(
            origin,
            "retryConfig.minBackoff",
            format!("{min_backoff} is above maxBackoff {max_backoff}"),
        ));
    }
    let max_doublings = rc.max_doublings.unwrap_or(16);
    let name = policy_name(
        q.name
            .as_deref()
            .and_then(|n| n.rsplit('/').next())
            .unwrap_or(""),
        "queue",
    );
    let policy = PolicySpec {
        name,
        max_attempts: Some(max_attempts),
        max_retry_duration: rc.max_retry_duration.filter(|d| d.ns() > 0),
        backoff: Some(BackoffSpec::CloudTasks {
            min_backoff,
            max_backoff,
            max_doublings,
        }),
        // A queue retries every non-2xx answer and every attempt without one.
        retry_on: Some(
            Status::ALL
                .into_iter()
                .filter(|s| *s != Status::Ok)
                .collect(),
        ),
        ..Default::default()
    };
    let rl = q.rate_limits.unwrap_or_default();
    let rate = rl.max_dispatches_per_second.unwrap_or(DEFAULT_RATE);
    if !(rate.is_finite() && rate > 0.0) {
        return Err(bad_key(
            origin,
            "rateLimits.maxDispatchesPerSecond",
            format!("{rate} must be a positive number"),
        ));
    }
    if rate > DEFAULT_RATE {
        warnings.push(format!(
            "rateLimits.maxDispatchesPerSecond {rate} is above the API maximum of 500"
        ));
    }
    let burst = rl.max_burst_size.unwrap_or(100);
    let concurrent = rl.max_concurrent_dispatches.unwrap_or(1000);
    for (key, v) in [
        ("rateLimits.maxBurstSize", burst),
        ("rateLimits.maxConcurrentDispatches", concurrent),
    ] {
        if v == 0 {
            return Err(bad_key(origin, key, "must be at least 1"));
        }
    }
    if q.state.as_deref().is_some_and(|s| s != "RUNNING") {
        warnings.push(format!(
            "the queue's state is {}; the scenario simulates it running",
            q.state.as_deref().unwrap_or_default()
        ));
    }
    warnings.push(
        "dispatch_deadline is set per task, not per queue: the HTTP default 10m is assumed".into(),
    );
    Imported {
        policies: vec![policy],
        dispatcher: Some(DispatcherSpec {
            max_dispatches_per_second: rate,
            max_burst_size: burst,
            max_concurrent_dispatches: concurrent,
            dispatch_deadline: Dur::from_secs(600),
            throttling: None,
        }),
        warnings,
    }
    .validated(origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::resolve;
    use crate::policy::schedule::schedule;

    /// The sample `gcloud tasks queues describe` output in the Cloud Tasks
    /// docs (https://cloud.google.com/tasks/docs/creating-queues).
    const SAMPLE: &str = "\
name: projects/PROJECT_ID/locations/LOCATION/queues/QUEUE_ID
rateLimits:
  maxBurstSize: 100
  maxConcurrentDispatches: 1000
  maxDispatchesPerSecond: 500.0
retryConfig:
  maxAttempts: 100
  maxBackoff: 3600s
  maxDoublings: 16
  minBackoff: 0.100s
state: RUNNING
";

    fn preset_schedule(name: &str) -> crate::policy::schedule::Schedule {
        let p = resolve(&PolicySpec {
            name: name.into(),
            preset: Some(name.into()),
            ..Default::default()
        })
        .unwrap();
        schedule(&p, Some(200))
    }

    #[test]
    fn documented_sample_is_the_default_queue() {
        let imp = import_str(SAMPLE, "q.yaml").unwrap();
        let p = &imp.policies[0];
        assert_eq!(p.name, "QUEUE_ID");
        let resolved = resolve(p).unwrap();
        assert_eq!(
            schedule(&resolved, Some(200)),
            preset_schedule("cloud-tasks-default")
        );
        let d = imp.dispatcher.as_ref().unwrap();
        assert_eq!(
            (
                d.max_dispatches_per_second,
                d.max_burst_size,
                d.max_concurrent_dispatches
            ),
            (500.0, 100, 1000)
        );
        // The printed block parses back as scenario fields.
        let v: serde_json::Value = serde_json::from_str(&imp.to_json()).unwrap();
        let back: PolicySpec = serde_json::from_value(v["policies"][0].clone()).unwrap();
        assert_eq!(resolve(&back).unwrap(), resolved);
        assert_eq!(
            v["policies"][0]["backoff"]["cloud_tasks"]["min_backoff"],
            "100ms"
        );
    }

    #[test]
    fn absent_keys_are_api_defaults_and_unknown_keys_are_ignored() {
        let text = "name: projects/p/locations/l/queues/q\nstackdriverLoggingConfig:\n  samplingRatio: 1.0\npurgeTime: '2024-01-01T00:00:00Z'\n";
        let imp = import_str(text, "q.yaml").unwrap();
        let resolved = resolve(&imp.policies[0]).unwrap();
        assert_eq!(
            schedule(&resolved, Some(200)),
            preset_schedule("cloud-tasks-default")
        );
    }

    #[test]
    fn critical_pattern_imports() {
        let text = "retryConfig:\n  maxAttempts: 10\n  minBackoff: 0.100s\n  maxBackoff: 10s\n  maxDoublings: 5\n  maxRetryDuration: 60s\nrateLimits:\n  maxDispatchesPerSecond: 20.0\n";
        let imp = import_str(text, "q.yaml").unwrap();
        let p = &imp.policies[0];
        assert_eq!(p.name, "queue");
        assert_eq!(p.max_retry_duration, Some(Dur::from_secs(60)));
        let s = schedule(&resolve(p).unwrap(), None);
        assert_eq!(s.rows[8].cumulative, 32_300_000_000);
        // Both limits set: retries go on past 10 attempts until the task is
        // 60 s old (failures at 42.3 and 52.3 s retry, 62.3 s does not).
        assert_eq!(s.retries, Some(12));
        assert_eq!(imp.dispatcher.unwrap().max_dispatches_per_second, 20.0);
    }

    #[test]
    fn malformed_yaml_is_invalid_input() {
        for (text, needle) in [
            (
                "retryConfig:\n  maxAttempts: many\n",
                "retryConfig.maxAttempts",
            ),
            (
                "retryConfig:\n  minBackoff: fast\n",
                "retryConfig.minBackoff",
            ),
            ("retryConfig: [1, 2\n", "q.yaml"),
            (
                "retryConfig:\n  maxAttempts: -5\n",
                "retryConfig.maxAttempts",
            ),
            (
                "retryConfig:\n  minBackoff: 10s\n  maxBackoff: 1s\n",
                "retryConfig.minBackoff",
            ),
            (
                "rateLimits:\n  maxBurstSize: 0\n",
                "rateLimits.maxBurstSize",
            ),
            ("", "no Cloud Tasks queue"),
            ("\n# nothing\n", "no Cloud Tasks queue"),
            (
                "{\"name\": \"s\", \"policies\": []}",
                "no Cloud Tasks queue",
            ),
        ] {
            let msg = import_str(text, "q.yaml").unwrap_err().to_string();
            assert!(
                msg.contains("q.yaml") && msg.contains(needle),
                "{text}: {msg}"
            );
        }
    }
}
