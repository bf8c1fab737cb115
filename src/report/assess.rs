//! The outputs of `retrysim assess`: `assess.json`, the one-page verdict
//! printed in the terminal, and `assess.html` (self-contained like
//! `report.html`, with the same style and escaping).
//!
//! `assess.json` has exactly one key, `policies`, a list with one object per
//! policy in scenario order; every object starts with `name`,
//! `threshold_load` (`{"low", "high"}`), `worst_case_amplification` and
//! `retry_window_s`, then the rest of the verdict. Numbers follow the report
//! rule; a missing value is `null`.

use super::format::{deadline_words, html, human_secs, json_num, json_str, percent};
use super::html::{swatch, STYLE};
use super::output::{final_paths, save};
use super::staging::Staging;
use crate::assess::bisect::Interval;
use crate::assess::{Assessment, PolicyVerdict};
use crate::decimal::{count, num, up3};
use crate::report::OutputError;
use crate::time::secs;
use std::path::PathBuf;

/// How far (relative) an analytic estimate may be from the simulated one
/// and still be called enough.
const CLOSE_ENOUGH: f64 = 0.10;

/// A storm search that stops this close below the capacity (as a share of
/// it) has met the capacity: a queue that near saturation fails to recover
/// within `stable_for` by chance alone, storm or not.
const AT_CAPACITY: f64 = 0.95;

/// Every file [`write`] writes.
pub const ASSESS_FILES: &[&str] = &["assess.json", "assess.html"];

/// Writes `assess.json` and `assess.html` into `stage`, then moves them
/// into place (the report of `run` in the same directory stays) and
/// returns their final paths; `description` is the scenario's.
pub fn write(
    stage: Staging,
    a: &Assessment,
    description: Option<&str>,
) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    save(
        stage.path(),
        "assess.json",
        json(a).as_bytes(),
        &mut written,
    )?;
    let html = page(a, description);
    save(stage.path(), "assess.html", html.as_bytes(), &mut written)?;
    let written = final_paths(&stage, &written);
    stage.commit()?;
    Ok(written)
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "–".to_string(), num)
}

/// An interval of loads as text, `unit` after its numbers: `[148, 152]`;
/// with one end open, the bound the search found (`≤ 1 req/s (the lowest
/// load tried)`, `≥ 300 (the highest load tried)`); `?` with neither.
fn interval(i: &Interval, unit: &str) -> String {
    let end = |v: f64| num(readable(v));
    match (i.low, i.high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]{unit}", end(lo), end(hi)),
        (None, Some(hi)) => format!("≤ {}{unit} (the lowest load tried)", end(hi)),
        (Some(lo), None) => format!("≥ {}{unit} (the highest load tried)", end(lo)),
        (None, None) => format!("?{unit}"),
    }
}

/// A number for reading (the JSON keeps every digit): three significant
/// digits, but a value of 100 or more keeps its whole part, so that loads
/// such as 1375 or the ends of [2595, 2596] are not merged by rounding.
fn readable(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    if v.abs() >= 100.0 {
        return v.round();
    }
    let digits = 2 - v.abs().log10().floor() as i32;
    let s = 10f64.powi(digits);
    (v * s).round() / s
}

/// A load the search probed, as text: exact when it is a whole number
/// (the JSON's value), [`readable`] otherwise.
fn tried(v: f64) -> String {
    if v.fract() == 0.0 {
        num(v)
    } else {
        num(readable(v))
    }
}

/// What "recovers" means in this assessment, in words: "within 1 min of
/// the fault's end" or "before the run's end".
pub fn recovery_deadline(a: &Assessment) -> String {
    deadline_words(a.recover_within)
}

/// The one sentence that says what "recovers" means.
pub fn recovery_meaning(a: &Assessment) -> String {
    format!(
        "\"Recovers\" means goodput is back above the scenario's recovery threshold, and stays there for its stable_for, {}",
        recovery_deadline(a)
    )
}

/// Whether `band` is wider than `threshold` (outcomes are mixed).
fn mixed(band: &Interval, threshold: &Interval) -> bool {
    band != threshold && band.low.is_some() && band.high.is_some()
}

/// The threshold as text: the interval, or the band where the probes'
/// outcomes are mixed when there is one ("between 2200 and 2400 (outcomes
/// mixed in that band)").
pub fn threshold_text(p: &PolicyVerdict) -> String {
    band_text(&p.threshold_band, &p.threshold, "")
}

fn band_text(band: &Interval, threshold: &Interval, unit: &str) -> String {
    if mixed(band, threshold) {
        format!(
            "between {} and {}{unit} (outcomes mixed in that band)",
            tried(band.low.unwrap_or(0.0)),
            tried(band.high.unwrap_or(0.0))
        )
    } else {
        interval(threshold, unit)
    }
}

/// The simulated sustaining load as the verdicts' table shows it: the
/// band where outcomes are mixed, as the sentence below says, else the
/// bisection's interval; "–" when not simulated.
fn sustaining_text(p: &PolicyVerdict) -> String {
    match (&p.sustaining, &p.sustaining_band) {
        (None, _) => "–".into(),
        (Some(sim), Some(band)) => band_text(band, sim, ""),
        (Some(sim), None) => interval(sim, ""),
    }
}

/// Where the scenario's own load stands against the trigger threshold.
pub fn threshold_sentence(a: &Assessment, p: &PolicyVerdict) -> String {
    let own = a.own_load;
    let path = &a.load_path;
    let within = recovery_deadline(a);
    let band = if mixed(&p.threshold_band, &p.threshold) {
        p.threshold_band
    } else {
        p.threshold
    };
    match (band.low, band.high) {
        (None, _) => format!(
            "does not recover from this trigger at any {path} tried (down to {})",
            p.threshold.high.map_or_else(|| "–".to_string(), tried)
        ),
        (Some(lo), None) => format!(
            "recovers from this trigger at every {path} tried (up to {}): no cliff in reach",
            tried(lo)
        ),
        (Some(lo), Some(_)) if own <= lo => format!(
            "recovers {within}: {path} {} has {} headroom below the threshold {}",
            num(own),
            percent((lo - own) / own, 0),
            threshold_text(p)
        ),
        (Some(lo), Some(hi)) if own >= hi => format!(
            "past the cliff: at {path} {} this trigger leaves it degraded (no recovery {within}); it must fall {} (below {}) to survive it",
            num(own),
            percent((own - lo) / own, 0),
            num(readable(lo))
        ),
        _ => format!(
            "on the edge: {path} {} lies inside the threshold {}",
            num(own),
            threshold_text(p)
        ),
    }
}

/// The simulated sustaining load against the analytic estimate.
pub fn storm_sentence(a: &Assessment, p: &PolicyVerdict) -> String {
    let e = &p.analytic;
    let mut analytic = match (&e.no_storm, e.attempts_rule, e.attempts_per_request) {
        (Some(why), _, _) => format!("analytic: no storm below capacity ({why})"),
        (None, Some(rule), Some(att)) => format!(
            "analytic C/A = {}/{} = {}",
            num(readable(e.capacity_rps.unwrap_or(0.0))),
            num(readable(att)),
            num(readable(rule))
        ),
        (None, _, None) => "analytic: attempts are unbounded, any load can hold a storm".into(),
        _ => "analytic: no estimate (no capacity to speak of)".into(),
    };
    if let Some(b) = e.balance_rule {
        analytic.push_str(&format!(", balance rule C·(T+b)/D = {}", num(readable(b))));
    }
    let Some(sim) = &p.sustaining else {
        return format!("{analytic}; not simulated (open traffic at a rate only, not a trace)");
    };
    let simulated = match &p.sustaining_band {
        Some(band) => format!("{} simulated", band_text(band, sim, " req/s")),
        None => format!("{} simulated", interval(sim, " req/s")),
    };
    let own_rate = a.own_rate.unwrap_or(0.0);
    if sim.low.is_some_and(|lo| lo >= own_rate) && e.no_storm.is_none() {
        // The scenario's own rate recovers after this fault: what stopped
        // the search upward says what the interval means.
        match (sim.high, e.capacity_rps) {
            (None, _) => {
                return format!(
                    "{simulated}: every load tried after the fault recovered (up to {}), so this trigger starts no storm that outlives it; {analytic} is for a storm started some other way",
                    sim.low.map_or_else(String::new, tried)
                )
            }
            (Some(hi), Some(c)) if hi >= c * AT_CAPACITY => {
                return format!(
                    "{simulated}: this trigger starts no storm at the scenario's own rate, so the search meets the capacity; {analytic} is for a storm started some other way"
                )
            }
            // A storm holds between the own rate and the capacity: a
            // sustaining load like any other.
            _ => {}
        }
    }
    if e.no_storm.is_some() && sim.high.is_some() {
        // The closed form sees no storm where the simulation holds one:
        // there is no estimate to compare.
        return format!(
            "{simulated}; {analytic}, yet the simulation holds one: use the simulation"
        );
    }
    match (sim.mid(), e.attempts_rule) {
        (Some(mid), Some(rule)) if mid > 0.0 => {
            let off = (rule - mid).abs() / mid;
            let judgement = if off <= CLOSE_ENOUGH {
                format!("within {}: the envelope is enough", percent(off, 0))
            } else {
                format!("off by {}: use the simulation", percent(off, 0))
            };
            format!("{simulated}; {analytic} ({judgement})")
        }
        _ => format!("{simulated}; {analytic}"),
    }
}

/// The worst-case amplification in words.
pub fn amplification_sentence(p: &PolicyVerdict) -> String {
    let bound = match p.bound.attempts {
        // An upper bound: rounded up, so that a gate's limit read off it
        // holds.
        Some(b) => format!(
            "at most {} attempt{} per request ({})",
            num(up3(b)),
            if up3(b) == 1.0 { "" } else { "s" },
            p.bound.binding()
        ),
        None => "no limit on attempts per request".to_string(),
    };
    format!(
        "{bound}; simulated with a whole-run outage of {}: {} over {} requests{}",
        human_secs(p.worst_outage_s),
        num(readable(p.simulated_amplification)),
        p.requests,
        if p.requests_ended { " that ended" } else { "" }
    )
}

/// The retry window in words.
pub fn window_sentence(p: &PolicyVerdict) -> String {
    match (p.retries_allowed, p.retry_window_s) {
        (Some(0), _) => "no retries".into(),
        (Some(r), Some(w)) => format!(
            "{} over {r} retr{}",
            human_secs(w),
            if r == 1 { "y" } else { "ies" }
        ),
        _ => "unlimited by the policy (only a deadline or budget ends the retries)".into(),
    }
}

/// The whole verdict of one policy, one sentence per finding.
pub fn verdict(a: &Assessment, p: &PolicyVerdict) -> String {
    format!(
        "Trigger: {}. Storm: {}. When everything fails: {}. Retry window: {}.",
        threshold_sentence(a, p),
        storm_sentence(a, p),
        amplification_sentence(p),
        window_sentence(p)
    )
}

fn json_interval(i: &Interval) -> String {
    format!(
        "{{\"low\": {}, \"high\": {}}}",
        json_num(i.low),
        json_num(i.high)
    )
}

/// The text of `assess.json`.
pub fn json(a: &Assessment) -> String {
    let mut out = String::from("{\n  \"policies\": [");
    for (i, p) in a.policies.iter().enumerate() {
        let e = &p.analytic;
        // From the band's low end, as the verdict and the gate read it:
        // below the band every probe recovered.
        let margin = p.threshold_band.low.map(|lo| lo - a.own_load);
        let fields = [
            ("name", json_str(&p.name)),
            ("threshold_load", json_interval(&p.threshold)),
            ("worst_case_amplification", json_num(p.bound.attempts)),
            ("retry_window_s", json_num(p.retry_window_s)),
            ("load_path", json_str(&a.load_path)),
            ("scenario_load", json_num(Some(a.own_load))),
            ("margin", json_num(margin)),
            ("margin_share", json_num(margin.map(|m| m / a.own_load))),
            (
                "sustaining_load",
                p.sustaining
                    .as_ref()
                    .map_or_else(|| "null".into(), json_interval),
            ),
            (
                "analytic_sustaining_load",
                format!(
                    "{{\"attempts_rule\": {}, \"balance_rule\": {}, \"attempts_per_request\": {}, \"capacity_rps\": {}, \"no_storm\": {}}}",
                    json_num(e.attempts_rule),
                    json_num(e.balance_rule),
                    json_num(e.attempts_per_request),
                    json_num(e.capacity_rps),
                    e.no_storm.as_deref().map_or_else(|| "null".into(), json_str)
                ),
            ),
            ("amplification_limit", json_str(&p.bound.binding())),
            (
                "simulated_worst_case_amplification",
                json_num(Some(p.simulated_amplification)),
            ),
            ("worst_case_outage_s", json_num(Some(p.worst_outage_s))),
            ("retries_allowed", json_num(p.retries_allowed.map(|r| r as f64))),
            ("replications", a.replications.to_string()),
            (
                "recover_within_s",
                json_num(a.recover_within.map(secs)),
            ),
            ("threshold_band", json_interval(&p.threshold_band)),
            (
                "sustaining_band",
                p.sustaining_band
                    .as_ref()
                    .map_or_else(|| "null".into(), json_interval),
            ),
            ("verdict", json_str(&verdict(a, p))),
        ];
        out.push_str(if i == 0 { "\n    {" } else { ",\n    {" });
        for (k, (name, value)) in fields.iter().enumerate() {
            out.push_str(if k == 0 { "\n" } else { ",\n" });
            out.push_str(&format!("      {}: {value}", json_str(name)));
        }
        out.push_str("\n    }");
    }
    out.push_str(if a.policies.is_empty() {
        "]\n}\n"
    } else {
        "\n  ]\n}\n"
    });
    out
}

/// The one-page verdict for the terminal.
pub fn terminal(a: &Assessment) -> String {
    let mut t = format!(
        "assess {}: {} = {} ({} replication{} per probe, {} runs)\n{}.\n",
        a.scenario,
        a.load_path,
        num(a.own_load),
        a.replications,
        if a.replications == 1 { "" } else { "s" },
        a.runs,
        recovery_meaning(a)
    );
    for p in &a.policies {
        t.push_str(&format!("\n{}\n", p.name));
        for (k, v) in [
            (
                "trigger threshold",
                format!("{} {}", a.load_path, threshold_text(p)),
            ),
            ("verdict", threshold_sentence(a, p)),
            ("storm holds above", storm_sentence(a, p)),
            ("worst case", amplification_sentence(p)),
            ("retry window", window_sentence(p)),
        ] {
            t.push_str(&format!("  {k:<18} {v}\n"));
        }
    }
    t
}

/// The table of verdicts, one row per policy.
fn verdicts(a: &Assessment) -> String {
    let mut h = String::new();
    h.push_str("<h2>Verdicts</h2>\n<table>\n<tr><th>policy</th><th>trigger threshold</th><th>storm holds above (req/s)</th><th>analytic C/A</th><th>worst-case attempts per request</th><th>simulated</th><th>retry window</th></tr>\n");
    for (i, p) in a.policies.iter().enumerate() {
        let past = p.threshold.high.is_some_and(|hi| a.own_load >= hi);
        h.push_str(&format!(
            "<tr><td>{}{}</td><td class=\"w {}\">{}</td><td class=\"w\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"w\">{}</td></tr>\n",
            swatch(i),
            html(&p.name),
            if past { "bad" } else { "good" },
            html(&threshold_text(p)),
            html(&sustaining_text(p)),
            html(&opt(p.analytic.attempts_rule.map(readable))),
            html(&opt(p.bound.attempts.map(up3))),
            html(&num(readable(p.simulated_amplification))),
            html(&window_sentence(p)),
        ));
    }
    h.push_str("</table>\n");
    h
}

/// One policy's section: its verdicts in sentences, its limits and the
/// probes behind each threshold.
fn policy_section(a: &Assessment, i: usize, p: &PolicyVerdict) -> String {
    let mut h = String::new();
    h.push_str(&format!("<h2>{}{}</h2>\n<ul>\n", swatch(i), html(&p.name)));
    for (k, v) in [
        ("Trigger", threshold_sentence(a, p)),
        ("Storm", storm_sentence(a, p)),
        ("When everything fails", amplification_sentence(p)),
        ("Retry window", window_sentence(p)),
    ] {
        h.push_str(&format!("<li><b>{k}:</b> {}.</li>\n", html(&v)));
    }
    h.push_str("</ul>\n");
    let limits: Vec<String> = p
        .bound
        .limits
        .iter()
        .map(|l| {
            let retries = count(readable(l.retries), "retry", "retries");
            format!("{} → {retries} per request", l.what)
        })
        .collect();
    if !limits.is_empty() {
        h.push_str(&format!(
            "<p>Limits, tightest first: {}.</p>\n",
            html(&limits.join("; "))
        ));
    }
    for (title, probes) in [
        ("Trigger threshold probes", &p.threshold_probes),
        (
            "Sustaining load probes (load after the fault)",
            &p.sustaining_probes,
        ),
    ] {
        if probes.is_empty() {
            continue;
        }
        h.push_str(&format!(
            "<p>{title}: {}.</p>\n",
            html(
                &probes
                    .iter()
                    .map(|pr| format!(
                        "{} → {}",
                        num(readable(pr.load)),
                        pr.share.map_or_else(|| "–".into(), |s| percent(s, 0))
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        ));
    }
    h
}

/// `assess.html`: the verdicts, the probes behind each threshold, and how
/// the numbers were found. No script, no external resource.
pub fn page(a: &Assessment, description: Option<&str>) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str(&format!(
        "<title>retrysim assess: {}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n",
        html(&a.scenario)
    ));
    h.push_str(&format!(
        "<h1>How close is the cliff? {}</h1>\n",
        html(&a.scenario)
    ));
    if let Some(d) = description {
        h.push_str(&format!("<p>{}</p>\n", html(d)));
    }
    h.push_str(&format!(
        "<p>Load parameter <code>{}</code> = {} in the scenario; {} replication{} per probe; {} runs in all.</p>\n",
        html(&a.load_path),
        html(&num(a.own_load)),
        a.replications,
        if a.replications == 1 { "" } else { "s" },
        a.runs
    ));
    h.push_str(&format!("<p>{}.</p>\n", html(&recovery_meaning(a))));
    h.push_str(&verdicts(a));
    for (i, p) in a.policies.iter().enumerate() {
        h.push_str(&policy_section(a, i, p));
    }
    h.push_str("<h2>How the numbers were found</h2>\n<ul>\n");
    h.push_str("<li><b>Trigger threshold</b>: bisection on the load parameter with the scenario's own fault, down to the tolerance; the low end recovers in at least half of the replications, the high end does not. Where probes disagree (some replications recover and some do not, or a load recovers above one that did not), the band between the last load where every replication recovered and the first where none did is reported. A rate more than 1.1 × the capacity is never tried. Every probe uses the same replications (common random numbers), and each run ends as soon as its outcome is decided: recovered and held for stable_for, or the deadline passed without a recovery.</li>\n");
    h.push_str("<li><b>Storm holds above</b>: the same search where the scenario's own rate holds until the fault ends and the traffic then steps to the load tried: below it, a storm the fault started dies out.</li>\n");
    h.push_str("<li><b>Analytic C/A</b>: capacity ÷ the attempts one request makes when every attempt waits out its timeout and then the backoff (within max_attempts, the retry window, the deadline and a budget's allowance). The balance rule C·(T+b)/D is its continuous version.</li>\n");
    h.push_str("<li><b>Worst case</b>: the closed-form bound of the tightest limit (attempt cap, retry window, deadline, budget, breaker), and a simulation with an outage over the whole run.</li>\n</ul>\n");
    h.push_str(&format!(
        "<footer>retrysim {}; next to this page: <code>assess.json</code>.</footer>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    ));
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assess::analytic::StormEstimate;
    use crate::assess::bisect::Probe;
    use crate::policy::bounds::{Bound, Limit};

    #[test]
    fn numbers_keep_three_digits_and_their_whole_part() {
        assert_eq!(readable(1375.4), 1375.0);
        assert_eq!(readable(2595.2), 2595.0);
        assert_eq!(readable(123.456), 123.0);
        assert_eq!(readable(12.345), 12.3);
        assert_eq!(readable(0.012345), 0.0123);
        assert_eq!(readable(-1.005), -1.0);
        let i = Interval {
            low: Some(2595.2),
            high: Some(2596.1),
        };
        assert_eq!(interval(&i, ""), "[2595, 2596]");
        let below = Interval {
            low: None,
            high: Some(1.0),
        };
        assert_eq!(
            interval(&below, " req/s"),
            "≤ 1 req/s (the lowest load tried)"
        );
        let above = Interval {
            low: Some(300.0),
            high: None,
        };
        assert_eq!(interval(&above, ""), "≥ 300 (the highest load tried)");
    }

    fn assessment() -> Assessment {
        Assessment {
            scenario: "toy".into(),
            load_path: "traffic.rate".into(),
            own_load: 280.0,
            own_rate: Some(280.0),
            replications: 3,
            recover_within: Some(60_000_000_000),
            runs: 99,
            policies: vec![PolicyVerdict {
                name: "retry-once".into(),
                threshold: Interval {
                    low: Some(148.0),
                    high: Some(152.0),
                },
                threshold_band: Interval {
                    low: Some(148.0),
                    high: Some(152.0),
                },
                threshold_probes: vec![Probe {
                    load: 280.0,
                    share: Some(0.0),
                }],
                sustaining_band: None,
                sustaining: Some(Interval {
                    low: Some(145.0),
                    high: Some(149.0),
                }),
                sustaining_probes: vec![],
                analytic: StormEstimate {
                    capacity_rps: Some(300.0),
                    attempts_per_request: Some(2.0),
                    attempts_rule: Some(150.0),
                    balance_rule: None,
                    no_storm: None,
                },
                bound: Bound {
                    attempts: Some(2.0),
                    limits: vec![Limit {
                        what: "max_attempts = 2".into(),
                        retries: 1.0,
                        gates_all: false,
                    }],
                    gated: false,
                },
                simulated_amplification: 2.0,
                requests: 42_000,
                requests_ended: false,
                worst_outage_s: 150.0,
                retries_allowed: Some(1),
                retry_window_s: Some(0.0),
            }],
        }
    }

    #[test]
    fn json_has_the_promised_shape() {
        let v: serde_json::Value = serde_json::from_str(&json(&assessment())).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.keys().collect::<Vec<_>>(), ["policies"]);
        let p = &v["policies"][0];
        assert_eq!(p["name"], "retry-once");
        assert_eq!(p["threshold_load"]["low"], 148);
        assert_eq!(p["threshold_load"]["high"], 152);
        assert_eq!(p["worst_case_amplification"], 2);
        assert_eq!(p["retry_window_s"], 0);
        assert_eq!(p["margin"], -132);
        assert_eq!(p["analytic_sustaining_load"]["attempts_rule"], 150);
        assert!(p["analytic_sustaining_load"]["balance_rule"].is_null());
        // With outcomes mixed below the interval, the margin is taken from
        // the band's low end, as the verdict's headroom is.
        let mut a = assessment();
        a.policies[0].threshold_band.low = Some(140.0);
        let v: serde_json::Value = serde_json::from_str(&json(&a)).unwrap();
        assert_eq!(v["policies"][0]["margin"], -140);
        assert_eq!(v["policies"][0]["threshold_load"]["low"], 148);
    }

    #[test]
    fn verdicts_read_as_sentences() {
        let a = assessment();
        let p = &a.policies[0];
        assert!(threshold_sentence(&a, p).starts_with("past the cliff"));
        assert!(
            storm_sentence(&a, p).contains("within 2%"),
            "{}",
            storm_sentence(&a, p)
        );
        assert_eq!(window_sentence(p), "0 s over 1 retry");
        let page = page(&a, Some("<b>"));
        assert!(page.contains("&lt;b&gt;") && !page.contains("<script"));
        assert!(terminal(&a).contains("trigger threshold  traffic.rate [148, 152]"));
    }

    #[test]
    fn a_storm_search_above_the_own_rate_says_what_stopped_it() {
        let mut a = assessment();
        a.own_rate = Some(100.0);
        let set = |a: &mut Assessment, low: f64, high: Option<f64>| {
            a.policies[0].sustaining = Some(Interval {
                low: Some(low),
                high,
            });
        };
        // Nothing tried failed to recover: the ×1024 bracket ran out.
        set(&mut a, 102_400.0, None);
        let s = storm_sentence(&a, &a.policies[0]);
        assert!(
            s.contains("every load tried after the fault recovered (up to 102400)"),
            "{s}"
        );
        assert!(!s.contains("capacity;"), "{s}");
        // The search reached the capacity (300 req/s), or came within the
        // noise of a saturated queue of it.
        for (low, high) in [(299.0, 330.0), (296.0, 297.0)] {
            set(&mut a, low, Some(high));
            let s = storm_sentence(&a, &a.policies[0]);
            assert!(s.contains("meets the capacity"), "{s}");
        }
        // A storm holds above 145 < capacity: compared with C/A like any.
        set(&mut a, 145.0, Some(149.0));
        let s = storm_sentence(&a, &a.policies[0]);
        assert!(s.contains("within 2%") && !s.contains("capacity;"), "{s}");
    }

    #[test]
    fn a_mixed_band_and_the_deadline_are_in_the_verdict() {
        let mut a = assessment();
        a.own_load = 2000.0;
        let p = &mut a.policies[0];
        p.threshold = Interval {
            low: Some(2347.0),
            high: Some(2348.0),
        };
        p.threshold_band = Interval {
            low: Some(2200.0),
            high: Some(2400.0),
        };
        let s = threshold_sentence(&a, &a.policies[0]);
        assert!(
            s.starts_with("recovers within 1 min of the fault's end")
                && s.contains("between 2200 and 2400 (outcomes mixed in that band)"),
            "{s}"
        );
        // Inside the band is on the edge, not "recovers".
        a.own_load = 2300.0;
        assert!(threshold_sentence(&a, &a.policies[0]).starts_with("on the edge"));
        let v: serde_json::Value = serde_json::from_str(&json(&a)).unwrap();
        assert_eq!(v["policies"][0]["threshold_band"]["low"], 2200);
        assert_eq!(v["policies"][0]["threshold_load"]["low"], 2347);
        assert_eq!(v["policies"][0]["recover_within_s"], 60);
        a.recover_within = None;
        assert!(terminal(&a).contains("before the run's end"));
        // The storm's band, too, reads the same in the table as below it.
        a.policies[0].sustaining_band = Some(Interval {
            low: Some(2047.0),
            high: Some(2750.0),
        });
        let page = page(&a, None);
        let table = &page[..page.find("</table>").unwrap()];
        assert!(
            table.contains("between 2047 and 2750 (outcomes mixed in that band)"),
            "{table}"
        );
        assert!(storm_sentence(&a, &a.policies[0]).contains("between 2047 and 2750"));
    }

    #[test]
    fn loads_tried_are_printed_as_probed() {
        let mut a = assessment();
        a.load_path = "backend.workers".into();
        a.own_load = 10.0;
        a.policies[0].threshold = Interval {
            low: Some(10_240.0),
            high: None,
        };
        a.policies[0].threshold_band = a.policies[0].threshold;
        let s = threshold_sentence(&a, &a.policies[0]);
        assert!(s.contains("(up to 10240)"), "{s}");
        a.policies[0].threshold = Interval {
            low: None,
            high: Some(100.0 / 1024.0),
        };
        a.policies[0].threshold_band = a.policies[0].threshold;
        let s = threshold_sentence(&a, &a.policies[0]);
        assert!(s.contains("(down to 0.0977)"), "{s}");
    }
}
