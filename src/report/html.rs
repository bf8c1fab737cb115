//! `report.html`: one page that opens anywhere, offline, with no script:
//! styles inline, plots embedded as base64 `data:` URIs, every piece of
//! user text (scenario and policy names, descriptions) HTML-escaped.

use super::describe;
use super::format::{html, human_secs, percent};
use super::plot::policy_css;
use super::RunReport;
use crate::decimal::num;
use crate::metrics::aggregate::{Col, PolicySummary};
use crate::metrics::{Recovery, RunResult};
use crate::scenario::Scenario;
use base64::Engine;

/// The page style `report.html` and `assess.html` share.
pub(crate) const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1480px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.desc{color:#555;font-size:1.1em;margin-top:0}
table{border-collapse:collapse;margin:.6em 0;font-size:.95em;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.3em .6em;vertical-align:top}
th{background:#f4f4f4;text-align:left}
td:first-child{white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.w{font-variant-numeric:tabular-nums;min-width:10em}
.sw{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.4em;vertical-align:-.1em}
.bad{color:#b00020;font-weight:600}.good{color:#1b7a2f}
.ci{color:#777;font-size:.85em}
img{max-width:100%;height:auto;border:1px solid #eee}
ul.story li{margin:.35em 0}
footer{margin-top:3em;color:#888;font-size:.85em}";

/// The PNG files to embed: (title, alt text, bytes).
pub struct Figure {
    /// Section heading above the image.
    pub title: String,
    /// Text alternative for readers who cannot see the image.
    pub alt: String,
    /// The PNG file's bytes.
    pub png: Vec<u8>,
}

/// A small square in the colour of the policy at `index`.
pub(crate) fn swatch(index: usize) -> String {
    format!(
        "<span class=\"sw\" style=\"background:{}\"></span>",
        policy_css(index)
    )
}

/// A numeric cell, with its ± half-width when there are replications.
fn cell(s: &PolicySummary, col: Col, show: impl Fn(f64) -> String) -> String {
    cell_ci(s, col, &show, &show)
}

/// Like [`cell`], with its own format for the half-width.
fn cell_ci(
    s: &PolicySummary,
    col: Col,
    show: &dyn Fn(f64) -> String,
    show_ci: &dyn Fn(f64) -> String,
) -> String {
    let Some(v) = s.get(col) else {
        return "<td class=\"n\">–</td>".into();
    };
    let ci = match s.ci(col) {
        Some(c) if s.replications > 1 => {
            format!(" <span class=\"ci\">± {}</span>", html(&show_ci(c)))
        }
        _ => String::new(),
    };
    format!("<td class=\"n\">{}{ci}</td>", html(&show(v)))
}

fn summary_table(summaries: &[PolicySummary]) -> String {
    let mut t = String::from("<table class=\"summary\">\n<tr><th>policy</th><th>requests</th><th>succeeded</th><th>dropped</th><th>amplification</th><th>retries</th><th>retry reduction</th><th>peak load ÷ capacity</th><th>recovered after fault</th><th>degraded</th><th>p50 ms</th><th>p99 ms</th><th>wasted work</th></tr>\n");
    let pct = |v: f64| percent(v, 2);
    for (i, s) in summaries.iter().enumerate() {
        t.push_str(&format!(
            "<tr><td>{}{}</td>",
            swatch(s.policy_index),
            html(&s.policy)
        ));
        t.push_str(&cell(s, Col::Requests, |v| format!("{v:.0}")));
        t.push_str(&cell(s, Col::SuccessRate, pct));
        t.push_str(&cell(s, Col::Dropped, |v| format!("{v:.0}")));
        t.push_str(&cell(s, Col::Amplification, |v| format!("{v:.3}×")));
        t.push_str(&cell(s, Col::Retries, |v| format!("{v:.0}")));
        if i == 0 {
            t.push_str("<td class=\"n\">baseline</td>");
        } else {
            t.push_str(&cell(s, Col::RetryReduction, |v| percent(v, 1)));
        }
        t.push_str(&cell(s, Col::PeakLoadRatio, |v| format!("{v:.2}×")));
        if s.get(Col::FaultEndS).is_none() {
            t.push_str("<td>no fault</td>");
        } else if s.recovery == Recovery::Undetermined {
            let of = if s.replications > 1 {
                format!(" ({}/{})", s.undetermined_runs, s.replications)
            } else {
                String::new()
            };
            t.push_str(&format!(
                "<td title=\"the run ended too soon after the fault to tell\">undetermined{of}</td>"
            ));
        } else if s.metastable {
            let of = if s.replications > 1 {
                format!(" ({}/{})", s.metastable_runs, s.replications)
            } else {
                String::new()
            };
            t.push_str(&format!("<td class=\"bad\">metastable{of}</td>"));
        } else {
            let mut c = cell_ci(
                s,
                Col::RecoveryAfterFaultS,
                &|v| format!("+{}", human_secs(v)),
                &human_secs,
            );
            let note = super::table::others_note(s);
            if !note.is_empty() {
                c = c.replace(
                    "</td>",
                    &format!(" <span class=\"bad\">{}</span></td>", html(note.trim())),
                );
            }
            t.push_str(&c.replace("class=\"n\"", "class=\"n good\""));
        }
        t.push_str(&cell(s, Col::DegradedS, human_secs));
        t.push_str(&cell(s, Col::LatencyP50Ms, |v| format!("{v:.1}")));
        t.push_str(&cell(s, Col::LatencyP99Ms, |v| format!("{v:.1}")));
        t.push_str(&cell(s, Col::WastedFraction, pct));
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

/// After the incident: how requests were given up, duplicated work, the
/// oldest task and the backlog's drain.
fn after_incident(summaries: &[PolicySummary]) -> String {
    let mut t =
        String::from("<h2>After the incident</h2>\n<table class=\"summary\">\n<tr><th>policy</th>");
    for (_, heading, _, _) in describe::EARLY_ENDS {
        t.push_str(&format!("<th>{heading}</th>"));
    }
    t.push_str("<th>oldest task</th><th>backlog drained</th></tr>\n");
    let count = |v: f64| format!("{v:.0}");
    for s in summaries {
        t.push_str(&format!(
            "<tr><td>{}{}</td>",
            swatch(s.policy_index),
            html(&s.policy)
        ));
        for (col, _, _, _) in describe::EARLY_ENDS {
            t.push_str(&cell(s, col, count));
        }
        t.push_str(&cell(s, Col::MaxTaskAgeS, human_secs));
        if s.get(Col::FaultEndS).is_none() {
            t.push_str("<td>no fault</td>");
        } else if s.get(Col::DrainS).is_none() {
            t.push_str("<td class=\"bad\">not before the end</td>");
        } else {
            t.push_str(&cell(s, Col::DrainS, |v| format!("+{}", human_secs(v))));
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</table>\n");
    t
}

fn policies_table(scenario: &Scenario) -> String {
    let mut t =
        String::from("<table class=\"policies\">\n<tr><th>policy</th><th>settings</th></tr>\n");
    for (i, p) in scenario.policies().iter().enumerate() {
        let rows: Vec<String> = describe::policy_settings(p)
            .into_iter()
            .map(|(k, v)| format!("{}: {}", html(k), html(&v)))
            .collect();
        t.push_str(&format!(
            "<tr><td>{}{}</td><td>{}</td></tr>\n",
            swatch(i),
            html(&p.name),
            rows.join("<br>")
        ));
    }
    t.push_str("</table>\n");
    t
}

/// "What happened": one sentence per policy, and one more naming the
/// tiers below the top that peaked above it (from the per-tier results
/// `tiers.csv` is written from).
fn story(report: &RunReport<'_>) -> String {
    let (scenario, summaries) = (report.scenario, &report.summaries);
    let mut h = String::new();
    h.push_str("<h2>What happened</h2>\n<ul class=\"story\">\n");
    let first = summaries.first().map(|s| s.policy.clone());
    for (i, s) in summaries.iter().enumerate() {
        let base = if i == 0 { None } else { first.as_deref() };
        let mut words = describe::sentence(scenario, s, base);
        let peaks = describe::tier_peaks(report.results, s.policy_index);
        if let Some(below) = describe::tiers_above_top(&peaks) {
            words.push(' ');
            words.push_str(&below);
        }
        h.push_str(&format!(
            "<li>{}<b>{}</b> {}</li>\n",
            swatch(s.policy_index),
            html(&s.policy),
            html(&words)
        ));
    }
    h.push_str("</ul>\n");
    h
}

/// "What your alerts would have shown": one line per policy and rule.
fn alerts(alert_lines: &[String]) -> String {
    let mut h = String::new();
    h.push_str("<h2>What your alerts would have shown</h2>\n");
    h.push_str("<p>The usual alert rules, evaluated at the end of every time bin on the simulated series (thresholds in the scenario's <code>report.alerts</code>; every firing period is in <code>alerts.csv</code>, and marked on the load plot).</p>\n<ul class=\"story\">\n");
    for line in alert_lines {
        h.push_str(&format!("<li>{}</li>\n", html(line)));
    }
    h.push_str("</ul>\n");
    h
}

/// The figures embedded as data URLs (a note instead with `--no-plots`).
fn embedded(figures: &[Figure]) -> String {
    let mut h = String::new();
    if figures.is_empty() {
        h.push_str("<p><i>Plots were not drawn for this run (--no-plots).</i></p>\n");
    }
    for f in figures {
        h.push_str(&format!("<h2>{}</h2>\n", html(&f.title)));
        h.push_str(&format!(
            "<p><img alt=\"{}\" src=\"data:image/png;base64,{}\"></p>\n",
            html(&f.alt),
            base64::engine::general_purpose::STANDARD.encode(&f.png)
        ));
    }
    h
}

/// The files a run may write beside its page, in the order the page
/// lists them, each with what it holds (empty: its name says it): every
/// file of a run's report but the page itself and `trace.json`, which is
/// left out because `run --trace` changes no other file, this page
/// included.
const FILES_LISTED: [(&str, &str); 11] = [
    ("summary.csv", ""),
    ("summary.json", ""),
    ("replications.csv", " (one row per run)"),
    ("timeseries.csv", " (one row per run and time bin)"),
    ("attempts.csv", " (the attempt distribution)"),
    ("alerts.csv", " (alert firing periods)"),
    ("tiers.csv", " (one row per run and tier)"),
    ("load.png", ""),
    ("recovery.png", ""),
    ("attempts.png", ""),
    ("perf.json", ""),
];

/// The page's "Files" paragraph: the files of `beside` (names), in the
/// order of [`FILES_LISTED`], each with what it holds.
fn files_paragraph(beside: &[&str]) -> String {
    let listed: Vec<String> = FILES_LISTED
        .iter()
        .filter(|(name, _)| beside.contains(name))
        .map(|(name, what)| format!("<code>{name}</code>{what}"))
        .collect();
    format!(
        "<h2>Files</h2>\n<p>Next to this page: {}.</p>\n",
        listed.join(", ")
    )
}

/// The nominal capacity of every tier (requests/s), the top backend first,
/// as the first run reported them (empty without runs).
fn capacities(results: &[RunResult]) -> Vec<f64> {
    let Some(r) = results.first() else {
        return Vec::new();
    };
    std::iter::once(r.summary().capacity_rps)
        .chain(r.below().iter().map(|t| t.capacity_rps))
        .collect()
}

/// Builds the page from `report` (the scenario, its runs and the
/// per-policy rows). `figures` are the plots to embed (empty with
/// `--no-plots`), `beside` the names of the files written next to it.
pub fn page(
    report: &RunReport<'_>,
    figures: &[Figure],
    alert_lines: &[String],
    beside: &[&str],
) -> String {
    let (scenario, summaries) = (report.scenario, &report.summaries[..]);
    let spec = scenario.spec();
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(&format!(
        "<title>retrysim report: {}</title>\n",
        html(&spec.name)
    ));
    h.push_str(&format!("<style>\n{STYLE}\n</style>\n</head>\n<body>\n"));
    h.push_str(&format!("<h1>{}</h1>\n", html(&spec.name)));
    if let Some(d) = &spec.description {
        h.push_str(&format!("<p class=\"desc\">{}</p>\n", html(d)));
    }
    let reps = summaries.iter().map(|s| s.replications).max().unwrap_or(0);
    h.push_str(&format!(
        "<p>{} polic{} × {} replication{}, seed {}.</p>\n",
        summaries.len(),
        if summaries.len() == 1 { "y" } else { "ies" },
        reps,
        if reps == 1 { "" } else { "s" },
        spec.seed
    ));

    h.push_str(&story(report));

    h.push_str("<h2>Summary</h2>\n");
    if reps > 1 {
        h.push_str(&format!(
            "<p>Means over {reps} replications; grey figures are 95&nbsp;% confidence half-widths.</p>\n"
        ));
    }
    h.push_str(&summary_table(summaries));

    h.push_str(&alerts(alert_lines));
    h.push_str(&after_incident(summaries));

    h.push_str(&embedded(figures));

    h.push_str("<h2>Scenario</h2>\n<table class=\"params\">\n");
    for (k, v) in describe::scenario_params(spec, &capacities(report.results)) {
        h.push_str(&format!(
            "<tr><th>{}</th><td>{}</td></tr>\n",
            html(&k),
            html(&v)
        ));
    }
    h.push_str("</table>\n<h2>Policies</h2>\n");
    h.push_str(&policies_table(scenario));
    h.push_str(&files_paragraph(beside));
    h.push_str(&format!(
        "<footer>retrysim {}; recovery threshold {}% of demand held for {}.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        num(100.0 * spec.report.recovery_threshold),
        html(&human_secs(spec.report.stable_for.secs()))
    ));
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page can name every file a run writes, and only those.
    #[test]
    fn the_files_listed_are_the_files_a_run_writes() {
        let mut listed: Vec<&str> = FILES_LISTED.iter().map(|(n, _)| *n).collect();
        let mut written: Vec<&str> = crate::report::REPORT_FILES
            .iter()
            .copied()
            .filter(|n| !["trace.json", "report.html"].contains(n))
            .collect();
        listed.sort_unstable();
        written.sort_unstable();
        assert_eq!(listed, written);
    }

    /// The paragraph names what is beside the page, in a fixed order.
    #[test]
    fn the_files_paragraph_names_what_is_there() {
        let p = files_paragraph(&["perf.json", "summary.csv", "tiers.csv"]);
        assert_eq!(
            p,
            "<h2>Files</h2>\n<p>Next to this page: <code>summary.csv</code>, \
             <code>tiers.csv</code> (one row per run and tier), <code>perf.json</code>.</p>\n"
        );
    }
}
