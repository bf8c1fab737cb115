//! The summary table printed on the terminal after a run.
//!
//! Plain text by default; with colour on (the CLI asks when stdout is a
//! terminal) the recovery column turns green or red. Padding is computed on
//! the plain text before any escape code is added, so columns stay aligned.

use super::format::{human_secs, percent};
use super::RunReport;
use crate::decimal::num;
use crate::metrics::aggregate::{Col, PolicySummary};
use crate::metrics::Recovery;

const RED: &str = "\x1b[1;31m";
const GREEN: &str = "\x1b[32m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// A cell of the table: its text and an optional colour.
struct TCell {
    text: String,
    color: Option<&'static str>,
}

fn plain(text: impl Into<String>) -> TCell {
    TCell {
        text: text.into(),
        color: None,
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|v| percent(v, 2)).unwrap_or_else(|| "-".into())
}

fn count(x: Option<f64>) -> String {
    x.map(|v| format!("{:.0}", v)).unwrap_or_else(|| "-".into())
}

/// The recovery cell: `+12 s` after the fault, `metastable`,
/// `undetermined` (the run ended too soon after the fault to tell), or `-`
/// with no fault; with replications, how many stayed metastable.
fn recovery_cell(s: &PolicySummary) -> TCell {
    if s.get(Col::FaultEndS).is_none() {
        return plain("no fault");
    }
    let share = others_note(s);
    if s.metastable {
        let text = if s.replications > 1 {
            format!("metastable {}/{}", s.metastable_runs, s.replications)
        } else {
            "metastable".into()
        };
        return TCell {
            text,
            color: Some(RED),
        };
    }
    if s.recovery == Recovery::Undetermined {
        return plain(if s.replications > 1 {
            format!("undetermined {}/{}", s.undetermined_runs, s.replications)
        } else {
            "undetermined".into()
        });
    }
    match s.get(Col::RecoveryAfterFaultS) {
        Some(v) => TCell {
            text: format!("+{}{share}", human_secs(v)),
            color: Some(GREEN),
        },
        None => plain(format!("-{share}")),
    }
}

/// Beside a recovery time: how many replications did not recover (stayed
/// metastable, or cannot be judged), e.g. ` (1/3 metastable, 1/3
/// undetermined)`; empty when every one recovered.
pub(crate) fn others_note(s: &PolicySummary) -> String {
    let r = s.replications;
    let mut parts = Vec::new();
    if r > 1 && s.metastable_runs > 0 {
        parts.push(format!("{}/{r} metastable", s.metastable_runs));
    }
    if r > 1 && s.undetermined_runs > 0 {
        parts.push(format!("{}/{r} undetermined", s.undetermined_runs));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// Rows of the table, one per policy: (cells, right-aligned flags).
fn rows(summaries: &[PolicySummary]) -> Vec<Vec<TCell>> {
    summaries
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let reduction = if i == 0 {
                "baseline".to_string()
            } else {
                s.get(Col::RetryReduction)
                    .map(|v| percent(v, 1))
                    .unwrap_or_else(|| "-".into())
            };
            vec![
                plain(s.policy.clone()),
                plain(count(s.get(Col::Requests))),
                plain(pct(s.get(Col::SuccessRate))),
                plain(
                    s.get(Col::Amplification)
                        .map(|v| format!("{v:.3}×"))
                        .unwrap_or_default(),
                ),
                plain(count(s.get(Col::Retries))),
                plain(reduction),
                plain(
                    s.get(Col::PeakLoadRatio)
                        .map(|v| format!("{v:.2}×"))
                        .unwrap_or_default(),
                ),
                recovery_cell(s),
                plain(
                    s.get(Col::DegradedS)
                        .map(human_secs)
                        .unwrap_or_else(|| "-".into()),
                ),
                plain(
                    s.get(Col::LatencyP99Ms)
                        .map(|v| format!("{v:.1}"))
                        .unwrap_or_else(|| "-".into()),
                ),
            ]
        })
        .collect()
}

const HEADERS: [&str; 10] = [
    "policy",
    "requests",
    "success",
    "amplification",
    "retries",
    "retry_reduction",
    "peak load/cap",
    "recovered after fault",
    "degraded",
    "p99 ms",
];

/// Renders the table; `color` adds ANSI escapes (only for terminals).
pub fn render(report: &RunReport<'_>, color: bool) -> String {
    let (scenario, summaries) = (report.scenario, &report.summaries);
    let body = rows(summaries);
    let ncols = HEADERS.len();
    let mut width: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
    for row in &body {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.text.chars().count());
        }
    }
    let pad = |text: &str, col: usize| -> String {
        let n = width[col].saturating_sub(text.chars().count());
        if col == 0 {
            format!("{text}{}", " ".repeat(n))
        } else {
            format!("{}{text}", " ".repeat(n))
        }
    };
    let mut out = String::new();
    let head: Vec<String> = (0..ncols).map(|i| pad(HEADERS[i], i)).collect();
    let head = head.join("  ");
    if color {
        out.push_str(&format!("{BOLD}{}{RESET}\n", head.trim_end()));
    } else {
        out.push_str(head.trim_end());
        out.push('\n');
    }
    for row in &body {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let p = pad(&c.text, i);
                match (color, c.color) {
                    (true, Some(code)) => format!("{code}{p}{RESET}"),
                    _ => p,
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    let r = summaries.iter().map(|s| s.replications).max().unwrap_or(0);
    let spec = scenario.spec();
    let spike = summaries
        .first()
        .is_some_and(|s| super::describe::incident_is_spike(scenario, s.get(Col::FaultEndS)));
    let mut note = format!(
        "recovered = goodput held >= {}% of demand for {} after {} ended",
        num(100.0 * spec.report.recovery_threshold),
        human_secs(spec.report.stable_for.secs()),
        if spike {
            "the load spike"
        } else {
            "the last fault"
        }
    );
    if r > 1 {
        note.push_str(&format!("; means over {r} replications"));
    }
    out.push_str(&note);
    out.push('\n');
    let after = after_incident_lines(summaries);
    if !after.is_empty() {
        out.push_str("after the incident:\n");
        for line in after {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.push_str("what your alerts would have shown:\n");
    for line in super::alerting::summary_lines(scenario, &report.alerts) {
        out.push_str(&format!("  {line}\n"));
    }
    out
}

/// One line per policy on how its requests ended after the incident (the
/// HTML report's table of the same name, in words): requests given up at
/// their limits, every other way of ending early that happened, the oldest
/// task and when the backlog drained. Empty without an incident.
fn after_incident_lines(summaries: &[PolicySummary]) -> Vec<String> {
    if summaries.iter().all(|s| s.get(Col::FaultEndS).is_none()) {
        return Vec::new();
    }
    let n = |s: &PolicySummary, col| s.get(col).unwrap_or(0.0).round();
    summaries
        .iter()
        .map(|s| {
            // Dead letters always (the queue's own limit), the other ways
            // of ending early only when they happened.
            let mut parts = Vec::new();
            for (col, _, one, many) in super::describe::EARLY_ENDS {
                let v = n(s, col);
                if v > 0.0 || col == Col::DeadLettered {
                    parts.push(crate::decimal::count(v, one, many));
                }
            }
            if let Some(age) = s.get(Col::MaxTaskAgeS) {
                parts.push(format!("oldest task {}", human_secs(age)));
            }
            parts.push(if s.get(Col::FaultEndS).is_none() {
                "no fault".to_string()
            } else {
                match s.get(Col::DrainS) {
                    Some(d) => format!("backlog drained +{}", human_secs(d)),
                    None => "backlog not drained before the end".to_string(),
                }
            });
            format!("{}: {}", s.policy, parts.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary of one replication of policy `name` with no figures set.
    fn summary(name: &str, metastable: bool) -> PolicySummary {
        PolicySummary {
            policy: name.into(),
            policy_index: 0,
            replications: 1,
            mean: [None; crate::metrics::aggregate::NCOLS],
            ci95: [None; crate::metrics::aggregate::NCOLS],
            count: [0; crate::metrics::aggregate::NCOLS],
            recovery: crate::metrics::Recovery::Degraded,
            metastable,
            metastable_share: if metastable { 1.0 } else { 0.0 },
            metastable_runs: usize::from(metastable),
            undetermined_runs: 0,
        }
    }

    #[test]
    fn ansi_codes_only_with_color() {
        let s = summary("p", true);
        let mut s2 = s.clone();
        s2.mean[Col::FaultEndS.index()] = Some(1.0);
        assert_eq!(recovery_cell(&s).text, "no fault");
        assert_eq!(recovery_cell(&s2).text, "metastable");
        assert_eq!(recovery_cell(&s2).color, Some(RED));
    }

    #[test]
    fn after_the_incident_names_what_happened_and_only_that() {
        let mut s = summary("queue", false);
        // No incident: nothing to say.
        assert!(after_incident_lines(std::slice::from_ref(&s)).is_empty());
        s.mean[Col::FaultEndS.index()] = Some(1800.0);
        s.mean[Col::DeadLettered.index()] = Some(4739.0);
        s.mean[Col::DroppedBudget.index()] = Some(0.0);
        s.mean[Col::Duplicates.index()] = Some(12.4);
        s.mean[Col::MaxTaskAgeS.index()] = Some(3000.0);
        s.mean[Col::DrainS.index()] = Some(3180.0);
        let mut undrained = s.clone();
        undrained.policy = "slow".into();
        undrained.mean[Col::DrainS.index()] = None;
        undrained.mean[Col::DeadLettered.index()] = Some(0.0);
        undrained.mean[Col::Duplicates.index()] = Some(1.0);
        assert_eq!(
            after_incident_lines(&[s, undrained]),
            [
                "queue: 4739 dead-lettered (limits reached), 12 repeated executions, \
                 oldest task 50 min, backlog drained +53 min",
                "slow: 0 dead-lettered (limits reached), 1 repeated execution, \
                 oldest task 50 min, backlog not drained before the end",
            ]
        );
    }
}
