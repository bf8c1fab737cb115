//! "What your alerts would have shown": the alert rules of
//! `crate::metrics::alerts`, with the scenario's thresholds, on every run's
//! time series; as rows of `alerts.csv`, marks on `load.png`, and lines in
//! the HTML page and the terminal summary.

use super::format::{human_secs, percent};
use crate::decimal::num;
use crate::metrics::aggregate::by_policy;
use crate::metrics::alerts::{evaluate, Firing, Rule, Rules};
use crate::metrics::RunResult;
use crate::scenario::spec::ScenarioSpec;
use crate::scenario::Scenario;

/// The rules with the thresholds of the scenario's `report.alerts`.
pub fn rules(spec: &ScenarioSpec) -> Rules {
    let a = &spec.report.alerts;
    Rules {
        max_attempts_reached: a.max_attempts_reached,
        retry_rate: a.retry_rate,
        retry_rate_for_s: a.retry_rate_for.secs(),
        task_age_s: a.task_age.secs(),
        tail_share: a.tail_share,
        tail_window_s: a.tail_window.secs(),
    }
}

/// A rule as a person reads it, with its threshold.
pub fn describe_rule(spec: &ScenarioSpec, rule: Rule) -> String {
    let a = &spec.report.alerts;
    match rule {
        Rule::MaxAttemptsReached => format!(
            "max_attempts_reached > {}/s (requests given up at their retry limits)",
            num(a.max_attempts_reached)
        ),
        Rule::RetryRate => format!(
            "retry_rate > {} for {}",
            percent(a.retry_rate, 0),
            human_secs(a.retry_rate_for.secs())
        ),
        Rule::TaskAge => format!(
            "task_age_seconds > {} (oldest unfinished request)",
            num(a.task_age.secs())
        ),
        Rule::AttemptTail => format!(
            "attempt distribution tail-heavy: > {} of the requests ending over {} at attempt {} or later",
            percent(a.tail_share, 0),
            human_secs(a.tail_window.secs()),
            a.tail_attempt
        ),
    }
}

/// The firing periods of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunAlerts {
    /// Name of the run's policy.
    pub policy: String,
    /// The policy's position in the scenario (0 = first).
    pub policy_index: usize,
    /// The run's replication (0 = first).
    pub replication: u32,
    /// Every period during which a rule fired, in order.
    pub firings: Vec<Firing>,
}

/// Evaluates the rules on every run of `results` (which must keep their
/// time series), in the order given.
pub fn evaluate_all(scenario: &Scenario, results: &[RunResult]) -> Vec<RunAlerts> {
    let spec = scenario.spec();
    let r = rules(spec);
    results
        .iter()
        .map(|run| RunAlerts {
            policy: run.policy.clone(),
            policy_index: run.policy_index,
            replication: run.replication,
            firings: evaluate(run.bins(), spec.bin.secs(), spec.duration.secs(), &r),
        })
        .collect()
}

/// One line per (policy, rule) that fired in some run: which alerts would
/// have paged, and when. Times are from replication 0's first firing of
/// the rule (or the earliest replication that fired), with the share of
/// replications in which it fired when there are several.
pub fn summary_lines(scenario: &Scenario, alerts: &[RunAlerts]) -> Vec<String> {
    let spec = scenario.spec();
    let mut out = Vec::new();
    for (_, runs) in by_policy(alerts, |a| a.policy_index) {
        let name = runs[0].policy.as_str();
        let mut any = false;
        for rule in Rule::ALL {
            let fired: Vec<(&RunAlerts, Vec<&Firing>)> = runs
                .iter()
                .map(|r| (*r, r.firings.iter().filter(|f| f.rule == rule).collect()))
                .filter(|(_, f): &(&RunAlerts, Vec<&Firing>)| !f.is_empty())
                .collect();
            let Some((first_run, periods)) = fired.first() else {
                continue;
            };
            any = true;
            let first = periods[0];
            let until = match periods.last().and_then(|f| f.cleared_at_s) {
                Some(c) => format!("last cleared at {}", human_secs(c)),
                None => "still firing at the end of the run".into(),
            };
            let of = if runs.len() > 1 {
                format!(
                    " in {}/{} runs (replication {})",
                    fired.len(),
                    runs.len(),
                    first_run.replication
                )
            } else {
                String::new()
            };
            out.push(format!(
                "{name}: {} — fired at {}, {} firing period{}, {until}{of}",
                describe_rule(spec, rule),
                human_secs(first.fired_at_s),
                periods.len(),
                if periods.len() == 1 { "" } else { "s" },
            ));
        }
        if !any {
            out.push(format!("{name}: no alert would have fired"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::BinRow;

    #[test]
    fn lines_name_the_rule_its_threshold_and_when() {
        let s = Scenario::from_json(
            r#"{"name": "a", "duration": "10s", "traffic": {"rate": 1},
                "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}},
                "policies": [{"name": "p"}, {"name": "q"}],
                "report": {"alerts": {"task_age": "3s"}}}"#,
        )
        .unwrap();
        let bins: Vec<BinRow> = (0..10)
            .map(|i| BinRow {
                t_s: i as f64,
                oldest_pending_age_s: if (4..7).contains(&i) { 5.0 } else { 0.0 },
                ..Default::default()
            })
            .collect();
        let run = |pi: usize, bins: Vec<BinRow>| RunResult {
            policy: ["p", "q"][pi].into(),
            policy_index: pi,
            replication: 0,
            events: 0,
            stopped_at_s: None,
            tiers: vec![crate::metrics::TierRun {
                bins,
                ..Default::default()
            }],
        };
        let a = evaluate_all(&s, &[run(0, bins), run(1, vec![])]);
        assert_eq!(a[0].firings.len(), 1);
        let lines = summary_lines(&s, &a);
        assert_eq!(
            lines,
            vec![
                "p: task_age_seconds > 3 (oldest unfinished request) — fired at 5 s, 1 firing period, last cleared at 8 s".to_string(),
                "q: no alert would have fired".to_string(),
            ]
        );
    }
}
