//! `retrysim gate`: conditions a CI job checks on an assessment
//! ([`crate::assess`]), one [`Check`] per policy × condition, and the
//! repository's own retry configuration (a Cloud Tasks queue YAML, a gRPC
//! service config, Envoy, Istio, AWS or Linkerd files) put into a scenario
//! template through the importers ([`crate::import`]).
//!
//! Each condition reads one figure the assessment measures:
//!
//! | condition | reads | passes when |
//! |---|---|---|
//! | `--fail-on metastable` | the trigger threshold (bisection with the scenario's own fault), as the band where outcomes are mixed | the scenario's own load is at or below the band's low end: it recovers from its own trigger |
//! | `--min-margin X` | the band's low end ÷ the scenario's own load | that ratio is at least `X` |
//! | `--max-amplification X` | the closed-form worst-case attempts per request (`worst_case_amplification`) | it is at most `X` (unlimited attempts fail) |
//! | `--max-drain D` | the retry window: the nominal delays summed over the retries the policy allows, how long after an outage ends the retries of the requests it failed keep coming (`retry_window_s`) | it is at most `D` (an unlimited window fails) |
//!
//! A gate that fails exits with [`EXIT_FAILED`], distinct from the statuses
//! of errors (1 output, 2 input, 128 + a signal for an interruption).

use crate::assess::{Assessment, PolicyVerdict};
use crate::decimal::num;
use crate::import::{aws, envoy, gcloud, grpc, istio, linkerd, Imported};
use crate::scenario::error::{InvalidInput, Located};
use crate::scenario::spec::DispatcherSpec;

/// The exit status of a gate one of whose conditions failed.
pub const EXIT_FAILED: u8 = 3;

/// One condition on every policy's verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Condition {
    /// The scenario's own load must recover from its own trigger.
    Metastable,
    /// The trigger threshold must be at least this multiple of the
    /// scenario's own load.
    MinMargin(f64),
    /// The worst-case attempts per request must be at most this.
    MaxAmplification(f64),
    /// The retry window must be at most this many seconds.
    MaxDrain(f64),
}

impl Condition {
    /// The condition's name, as its flag says it (`min-margin`).
    pub fn name(&self) -> &'static str {
        match self {
            Condition::Metastable => "metastable",
            Condition::MinMargin(_) => "min-margin",
            Condition::MaxAmplification(_) => "max-amplification",
            Condition::MaxDrain(_) => "max-drain",
        }
    }

    /// The figure of the assessment the condition reads, in words.
    pub fn reads(&self) -> &'static str {
        match self {
            Condition::Metastable => "the scenario's own load against the trigger threshold",
            Condition::MinMargin(_) => "trigger threshold ÷ the scenario's own load",
            Condition::MaxAmplification(_) => "worst-case attempts per request (closed form)",
            Condition::MaxDrain(_) => "retry window (nominal delays over the retries allowed)",
        }
    }

    /// The limit as text (`≥ 1.5×`, `≤ 3 attempts per request`).
    pub fn limit(&self) -> String {
        match self {
            Condition::Metastable => "recovers at its own load".into(),
            Condition::MinMargin(x) => format!("≥ {}×", num(*x)),
            Condition::MaxAmplification(x) => format!("≤ {} attempts per request", num(*x)),
            Condition::MaxDrain(s) => format!("≤ {} s", num(*s)),
        }
    }

    /// Checks one policy's verdict.
    pub fn check(&self, a: &Assessment, p: &PolicyVerdict) -> Check {
        let (passed, measured) = match *self {
            Condition::Metastable => {
                let lo = p.threshold_band.low;
                let state = match (lo, p.threshold_band.high) {
                    (None, _) => "recovers at no load tried".to_string(),
                    (Some(lo), None) => format!(
                        "recovers (own load {}; every load tried recovers, up to {})",
                        num(a.own_load),
                        num(lo)
                    ),
                    (Some(lo), Some(hi)) => {
                        let word = if a.own_load <= lo {
                            "recovers"
                        } else if a.own_load >= hi {
                            "past the cliff"
                        } else {
                            "on the edge"
                        };
                        format!(
                            "{word} (own load {}, threshold [{}, {}])",
                            num(a.own_load),
                            num(lo),
                            num(hi)
                        )
                    }
                };
                (lo.is_some_and(|lo| a.own_load <= lo), state)
            }
            Condition::MinMargin(x) => match p.threshold_band.low {
                Some(lo) => {
                    let m = lo / a.own_load;
                    let at_least = if p.threshold_band.high.is_none() {
                        "at least "
                    } else {
                        ""
                    };
                    (
                        m >= x,
                        format!(
                            "{at_least}{}× (threshold {} ÷ own load {})",
                            num(apart(m, x)),
                            num(lo),
                            num(a.own_load)
                        ),
                    )
                }
                None => (false, "no load tried recovers".to_string()),
            },
            Condition::MaxAmplification(x) => match p.bound.attempts {
                Some(b) => (
                    b <= x,
                    format!(
                        "{} ({}; simulated {})",
                        num(apart(b, x)),
                        p.bound.binding(),
                        num(round3(p.simulated_amplification))
                    ),
                ),
                None => (false, "unlimited".to_string()),
            },
            Condition::MaxDrain(s) => match (p.retries_allowed, p.retry_window_s) {
                (Some(0), _) => (true, "0 s (no retries)".to_string()),
                (_, Some(w)) => (w <= s, format!("{} s", num(apart(w, s)))),
                _ => (false, "unlimited".to_string()),
            },
        };
        Check {
            policy: p.name.clone(),
            condition: self.name(),
            reads: self.reads(),
            measured,
            limit: self.limit(),
            passed,
        }
    }
}

/// `x` to three decimals, so a message does not carry float noise.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `x` rounded to 3 decimals, or to as many more as it takes to compare
/// with `limit` as `x` itself does: a value just over a limit of 1.265
/// reads 1.2654, never 1.265 beside a failure.
fn apart(x: f64, limit: f64) -> f64 {
    (3..=15)
        .map(|d| {
            let k = 10f64.powi(d);
            (x * k).round() / k
        })
        .find(|r| r.partial_cmp(&limit) == x.partial_cmp(&limit))
        .unwrap_or(x)
}

/// One policy × one condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// The policy's name.
    pub policy: String,
    /// The condition's name ([`Condition::name`]).
    pub condition: &'static str,
    /// What the condition reads ([`Condition::reads`]).
    pub reads: &'static str,
    /// The measured value, in words.
    pub measured: String,
    /// The limit, in words.
    pub limit: String,
    /// Whether the policy meets the condition.
    pub passed: bool,
}

impl Check {
    /// The one-line message: measured value and limit.
    pub fn message(&self) -> String {
        format!(
            "{} {} {}: {}: {}; limit {}",
            self.policy,
            if self.passed { "passes" } else { "fails" },
            self.condition,
            self.reads,
            self.measured,
            self.limit
        )
    }
}

/// Every policy × every condition, policies in scenario order, conditions
/// in the order given.
pub fn evaluate(a: &Assessment, conditions: &[Condition]) -> Vec<Check> {
    a.policies
        .iter()
        .flat_map(|p| conditions.iter().map(move |c| c.check(a, p)))
        .collect()
}

/// The formats `--config` reads (those of `retrysim import`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigFormat {
    /// `gcloud tasks queues describe` YAML.
    Gcloud,
    /// A gRPC service config JSON.
    Grpc,
    /// Envoy YAML.
    Envoy,
    /// An Istio VirtualService.
    Istio,
    /// The AWS shared config file.
    Aws,
    /// Linkerd annotations or a ServiceProfile.
    Linkerd,
}

impl ConfigFormat {
    /// The format's name (`import`'s subcommand).
    pub fn name(self) -> &'static str {
        match self {
            ConfigFormat::Gcloud => "gcloud",
            ConfigFormat::Grpc => "grpc",
            ConfigFormat::Envoy => "envoy",
            ConfigFormat::Istio => "istio",
            ConfigFormat::Aws => "aws",
            ConfigFormat::Linkerd => "linkerd",
        }
    }

    /// The format named `name`.
    pub fn named(name: &str) -> Option<ConfigFormat> {
        [
            ConfigFormat::Gcloud,
            ConfigFormat::Grpc,
            ConfigFormat::Envoy,
            ConfigFormat::Istio,
            ConfigFormat::Aws,
            ConfigFormat::Linkerd,
        ]
        .into_iter()
        .find(|f| f.name() == name.trim())
    }

    /// The format of the file `origin` holding `text`, told by its first
    /// sign: JSON (a `.json` name or a leading `{`) is a gRPC service
    /// config; `[default]` or `[profile …]` an AWS config; Linkerd's
    /// `retry.linkerd.io/` annotations or `kind: ServiceProfile`;
    /// `kind: VirtualService` Istio; `retryConfig:` or `rateLimits:` a
    /// Cloud Tasks queue; `retry_policy`, `static_resources` or
    /// `route_config` Envoy. `None` when none of these is there.
    pub fn detect(origin: &str, text: &str) -> Option<ConfigFormat> {
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.starts_with('#'))
            .collect();
        let any = |f: &dyn Fn(&str) -> bool| lines.iter().any(|l| f(l));
        if origin.to_ascii_lowercase().ends_with(".json") || text.trim_start().starts_with('{') {
            Some(ConfigFormat::Grpc)
        } else if any(&|l| l == "[default]" || l.starts_with("[profile ")) {
            Some(ConfigFormat::Aws)
        } else if any(&|l| l.contains("retry.linkerd.io/") || l == "kind: ServiceProfile") {
            Some(ConfigFormat::Linkerd)
        } else if any(&|l| l == "kind: VirtualService") {
            Some(ConfigFormat::Istio)
        } else if any(&|l| l.starts_with("retryConfig:") || l.starts_with("rateLimits:")) {
            Some(ConfigFormat::Gcloud)
        } else if any(&|l| {
            l.contains("retry_policy")
                || l.contains("retryPolicy")
                || l.contains("static_resources")
                || l.contains("route_config")
                || l.contains("circuit_breakers")
                || l.contains("circuitBreakers")
        }) {
            Some(ConfigFormat::Envoy)
        } else {
            None
        }
    }
}

/// Imports the configuration `text` of the file `origin` in `format`
/// (detected when `None`); an AWS file gives every profile with retry
/// settings.
pub fn import_config(
    text: &str,
    origin: &str,
    format: Option<ConfigFormat>,
) -> Result<Imported, InvalidInput> {
    let Some(format) = format.or_else(|| ConfigFormat::detect(origin, text)) else {
        let unknown = "cannot tell which configuration this is (a gRPC service config JSON, a \
                       Cloud Tasks queue YAML, Envoy, Istio, AWS or Linkerd): name it with \
                       --config-format";
        // YAML that does not parse says where, whatever it was meant to be.
        return Err(match crate::import::check_yaml(text, origin) {
            Err(InvalidInput::At(at)) => InvalidInput::At(Located {
                message: format!("{unknown}; read as YAML, {}", at.message),
                ..at
            }),
            _ => InvalidInput::At(Located::whole(origin, unknown)),
        });
    };
    match format {
        ConfigFormat::Gcloud => gcloud::import_str(text, origin),
        ConfigFormat::Grpc => grpc::import_str(text, origin),
        ConfigFormat::Envoy => envoy::import_str(text, origin),
        ConfigFormat::Istio => istio::import_str(text, origin),
        ConfigFormat::Linkerd => linkerd::import_str(text, origin),
        ConfigFormat::Aws => aws::import_profiles(text, origin, None, None),
    }
}

/// What a `--config` puts into a scenario template: the `--set`s, and
/// the import's notes as they apply there.
#[derive(Debug, PartialEq)]
pub struct ConfigSets {
    /// `PATH=VALUE` assignments, in order.
    pub sets: Vec<String>,
    /// Notes to print.
    pub notes: Vec<String>,
}

/// The `--set` assignments that put the imported configuration into a
/// scenario template whose own queue is `template`: its policies replace
/// the template's (`policies=`), and a queue it holds sets the queue's
/// settings. A queue file sets the rate, burst and concurrency only: the
/// dispatch deadline is set per task and the throttling is the service's,
/// so the template's are kept where it has a queue.
pub fn config_sets(imported: &Imported, template: Option<&DispatcherSpec>) -> ConfigSets {
    let mut sets = vec![format!(
        "policies={}",
        serde_json::to_string(&imported.policies).expect("policies serialize")
    )];
    let mut notes = imported.warnings.clone();
    match (&imported.dispatcher, template) {
        (Some(d), Some(t)) => {
            sets.push(format!(
                "dispatcher.max_dispatches_per_second={}",
                num(d.max_dispatches_per_second)
            ));
            sets.push(format!("dispatcher.max_burst_size={}", d.max_burst_size));
            sets.push(format!(
                "dispatcher.max_concurrent_dispatches={}",
                d.max_concurrent_dispatches
            ));
            let kept = if t.throttling.is_some() {
                format!(
                    "the template's {} is kept, and so is its throttling",
                    t.dispatch_deadline
                )
            } else {
                format!("the template's {} is kept", t.dispatch_deadline)
            };
            for n in notes.iter_mut().filter(|n| *n == gcloud::DEADLINE_ASSUMED) {
                *n = format!("dispatch_deadline is set per task, not per queue: {kept}");
            }
        }
        (Some(d), None) => sets.push(format!(
            "dispatcher={}",
            serde_json::to_string(d).expect("a dispatcher serializes")
        )),
        (None, _) => {}
    }
    ConfigSets { sets, notes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::bisect::Interval;

    fn detect(origin: &str, text: &str) -> Option<&'static str> {
        ConfigFormat::detect(origin, text).map(ConfigFormat::name)
    }

    /// A queue file sets the template's queue rate, burst and
    /// concurrency, and keeps its per-task deadline; without a queue in
    /// the template the whole imported queue goes in, 10m deadline noted.
    #[test]
    fn a_queue_file_keeps_the_templates_deadline() {
        let yaml = "name: projects/p/locations/l/queues/q\nrateLimits:\n  \
                    maxDispatchesPerSecond: 2.5\n  maxBurstSize: 7\n  \
                    maxConcurrentDispatches: 9\nretryConfig:\n  maxAttempts: 3\n";
        let imported = import_config(yaml, "queue.yaml", None).unwrap();
        assert!(imported
            .warnings
            .iter()
            .any(|w| w == gcloud::DEADLINE_ASSUMED));
        let template: DispatcherSpec = serde_json::from_str(
            r#"{"max_dispatches_per_second": 100, "max_burst_size": 20,
                "max_concurrent_dispatches": 50, "dispatch_deadline": "15s"}"#,
        )
        .unwrap();
        let c = config_sets(&imported, Some(&template));
        assert_eq!(
            c.sets[1..],
            [
                "dispatcher.max_dispatches_per_second=2.5",
                "dispatcher.max_burst_size=7",
                "dispatcher.max_concurrent_dispatches=9",
            ]
        );
        assert!(!c.notes.iter().any(|n| n == gcloud::DEADLINE_ASSUMED));
        assert!(
            c.notes
                .iter()
                .any(|n| n.ends_with("the template's 15s is kept")),
            "{:?}",
            c.notes
        );
        let c = config_sets(&imported, None);
        assert!(c.sets[1].starts_with("dispatcher={"), "{:?}", c.sets);
        assert!(c.notes.iter().any(|n| n == gcloud::DEADLINE_ASSUMED));
    }

    #[test]
    fn formats_are_told_by_their_first_sign() {
        assert_eq!(detect("sc.json", "{}"), Some("grpc"));
        assert_eq!(detect("x", " {\"methodConfig\": []}"), Some("grpc"));
        assert_eq!(
            detect("config", "# aws\n[default]\nretry_mode = standard"),
            Some("aws")
        );
        assert_eq!(
            detect("config", "[profile batch]\nmax_attempts = 3"),
            Some("aws")
        );
        assert_eq!(
            detect(
                "r.yaml",
                "metadata:\n  annotations:\n    retry.linkerd.io/limit: \"2\""
            ),
            Some("linkerd")
        );
        assert_eq!(
            detect("vs.yaml", "kind: VirtualService\nspec: {}"),
            Some("istio")
        );
        assert_eq!(
            detect("queue.yaml", "name: q\nretryConfig:\n  maxAttempts: 3"),
            Some("gcloud")
        );
        assert_eq!(
            detect("e.yaml", "routes:\n- route:\n    retry_policy: {}"),
            Some("envoy")
        );
        assert_eq!(
            detect("c.yaml", "clusters:\n- name: c\n  circuit_breakers: {}"),
            Some("envoy")
        );
        assert_eq!(detect("x.yaml", "# retryConfig: commented\nname: q"), None);
        assert_eq!(ConfigFormat::named("istio"), Some(ConfigFormat::Istio));
        assert_eq!(ConfigFormat::named("yaml"), None);
    }

    #[test]
    fn a_shown_value_compares_with_its_limit_as_the_value_does() {
        assert_eq!(apart(1.26543, 1.265), 1.2654);
        assert_eq!(apart(1.26543, 2.0), 1.265);
        assert_eq!(apart(1.2649999, 1.265), 1.2649999);
        assert_eq!(apart(1.265, 1.265), 1.265);
        assert_eq!(apart(3.0, 3.0), 3.0);
    }

    #[test]
    fn a_file_of_no_known_format_that_is_not_yaml_says_where() {
        let bad = import_config("key: [unclosed\n", "bad.yaml", None)
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("bad.yaml:1:"), "{bad}");
        assert!(bad.contains("--config-format"), "{bad}");
        let unknown = import_config("key: 1\n", "k.yaml", None)
            .unwrap_err()
            .to_string();
        assert!(
            unknown.contains("cannot tell which configuration"),
            "{unknown}"
        );
    }

    #[test]
    fn the_margin_is_the_threshold_over_the_own_load() {
        let a = crate::assess::Assessment {
            scenario: "s".into(),
            load_path: "traffic.rate".into(),
            own_load: 100.0,
            own_rate: Some(100.0),
            replications: 1,
            policies: Vec::new(),
            runs: 0,
            recover_within: None,
        };
        let mut p = crate::assess::PolicyVerdict {
            name: "p".into(),
            threshold: Interval {
                low: Some(149.0),
                high: Some(150.0),
            },
            threshold_probes: Vec::new(),
            threshold_band: Interval {
                low: Some(149.0),
                high: Some(150.0),
            },
            sustaining: None,
            sustaining_band: None,
            sustaining_probes: Vec::new(),
            analytic: crate::assess::analytic::StormEstimate {
                capacity_rps: None,
                attempts_per_request: None,
                attempts_rule: None,
                balance_rule: None,
                no_storm: None,
            },
            bound: crate::assess::bounds::Bound {
                attempts: Some(2.0),
                limits: Vec::new(),
                gated: false,
            },
            simulated_amplification: 1.0,
            requests: 1,
            requests_ended: false,
            worst_outage_s: 60.0,
            retries_allowed: Some(2),
            retry_window_s: Some(0.3),
        };
        let margin = Condition::MinMargin(1.5).check(&a, &p);
        assert!(!margin.passed, "{}", margin.message());
        assert!(margin.message().contains("1.49×"), "{}", margin.message());
        assert!(Condition::MinMargin(1.49).check(&a, &p).passed);
        assert!(Condition::MaxAmplification(2.0).check(&a, &p).passed);
        assert!(!Condition::MaxAmplification(1.9).check(&a, &p).passed);
        assert!(Condition::Metastable.check(&a, &p).passed);
        assert!(Condition::MaxDrain(0.3).check(&a, &p).passed);
        assert!(!Condition::MaxDrain(0.29).check(&a, &p).passed);
        // Above the low end: on the edge or past the cliff, both fail.
        p.threshold_band = Interval {
            low: Some(90.0),
            high: Some(120.0),
        };
        let edge = Condition::Metastable.check(&a, &p);
        assert!(!edge.passed && edge.measured.starts_with("on the edge"));
        p.threshold_band.high = Some(95.0);
        let past = Condition::Metastable.check(&a, &p);
        assert!(!past.passed && past.measured.starts_with("past the cliff"));
        p.threshold_band = Interval::default();
        assert!(!Condition::Metastable.check(&a, &p).passed);
        assert!(!Condition::MinMargin(0.1).check(&a, &p).passed);
        p.retry_window_s = None;
        assert!(!Condition::MaxDrain(1e9).check(&a, &p).passed);
        p.retries_allowed = Some(0);
        assert!(Condition::MaxDrain(0.0).check(&a, &p).passed);
    }
}
