//! Words for the HTML page: the scenario's parameters as a reader would
//! state them, and one sentence per policy saying what happened.

use super::format::human_secs;
use crate::decimal::{count, legible, num, rate};
use crate::metrics::aggregate::{Col, PolicySummary};
use crate::metrics::{Recovery, RunResult};
use crate::policy::Policy;
use crate::scenario::spec::{BackendKind, BackendSpec, ScenarioSpec, TrafficSpec};
use crate::scenario::Scenario;
use crate::time::secs;

/// The ways a request can end before it succeeds or runs out of time, and
/// the work done again, as the "after the incident" views show them: the
/// column, its heading in the HTML table, and the words after a count in
/// the terminal, for one and for any other count. Both views read this one
/// list, so a new way of ending appears in both.
pub const EARLY_ENDS: [(Col, &str, &str, &str); 7] = [
    (
        Col::DeadLettered,
        "dead-lettered (limits reached)",
        "dead-lettered (limits reached)",
        "dead-lettered (limits reached)",
    ),
    (
        Col::DroppedDeadline,
        "dropped: deadline",
        "dropped at the deadline",
        "dropped at the deadline",
    ),
    (
        Col::DroppedBudget,
        "dropped: budget",
        "refused by the budget",
        "refused by the budget",
    ),
    (
        Col::DroppedRetriesDisabled,
        "dropped: retries off",
        "dropped while retries were off",
        "dropped while retries were off",
    ),
    (
        Col::FailedBreaker,
        "failed: breaker",
        "failed by the breaker",
        "failed by the breaker",
    ),
    (
        Col::FailedNonRetryable,
        "failed: not retryable",
        "failed as not retryable",
        "failed as not retryable",
    ),
    // Executions, not requests: a task run three times counts 2.
    (
        Col::Duplicates,
        "repeated executions",
        "repeated execution",
        "repeated executions",
    ),
];

/// One row per policy setting: (label, value), as the policy words them
/// ([`Policy::settings`]).
pub fn policy_settings(p: &Policy) -> Vec<(&'static str, String)> {
    p.settings()
}

/// The scenario-level parameters that matter, as (label, value) rows.
/// `capacities` are the nominal capacities (requests/s) the runs reported
/// for each tier, the top backend first (empty without runs; 0 where it
/// cannot be stated).
pub fn scenario_params(spec: &ScenarioSpec, capacities: &[f64]) -> Vec<(String, String)> {
    let mut rows: Vec<(String, String)> = vec![];
    let mut push = |k: &str, v: String| rows.push((k.to_string(), v));
    push(
        "run",
        format!(
            "{} (warm-up {}), bins of {}, seed {}",
            spec.duration, spec.warmup, spec.bin, spec.seed
        ),
    );
    for (k, v) in traffic_params(&spec.traffic) {
        push(k, v);
    }
    let capacity = |i: usize| capacities.get(i).copied().filter(|c| *c > 0.0);
    let top = backend_words(&spec.backend);
    if spec.downstream.is_empty() {
        push("backend", top);
    } else {
        push("backend", format!("tier {}: {top}", spec.tier_names()[0]));
    }
    if let Some(c) = capacity(0) {
        push("nominal capacity", format!("{} requests/s", rate(c)));
    }
    for i in 0..spec.downstream.len() {
        push(
            "downstream tier",
            downstream_words(spec, i, capacity(i + 1)),
        );
    }
    if let Some(d) = &spec.dispatcher {
        push(
            "dispatcher",
            format!(
                "{}/s (burst {}), {} concurrent, deadline {}",
                legible(d.max_dispatches_per_second),
                d.max_burst_size,
                d.max_concurrent_dispatches,
                d.dispatch_deadline
            ),
        );
    }
    if spec.faults.is_empty() {
        push("faults", "none".into());
    }
    for f in &spec.faults {
        push("fault", f.describe());
    }
    for a in &spec.actions {
        push("operator action", a.describe());
    }
    push(
        "recovery",
        format!(
            "goodput ≥ {}% of demand held for {}",
            num(100.0 * spec.report.recovery_threshold),
            spec.report.stable_for
        ),
    );
    rows
}

/// The traffic's rows of [`scenario_params`]: the arrivals, the trace they
/// follow, and the timeouts and network delay that apply to every request.
fn traffic_params(t: &TrafficSpec) -> Vec<(&'static str, String)> {
    let mut rows = vec![];
    // A trace's mean rate is computed, not given: rounded as the page's
    // other rates are; a rate as written stays as written.
    let mut traffic = match t.rate {
        Some(r) if t.trace.is_some() => format!("{} new requests/s", rate(r)),
        Some(r) => format!("{} new requests/s", legible(r)),
        None => "burst".into(),
    };
    traffic.push_str(&format!(
        " from {}, {:?} arrivals, {:?} mode",
        count(f64::from(t.clients), "client", "clients"),
        t.arrival,
        t.mode
    ));
    rows.push(("traffic", traffic.to_lowercase()));
    if let Some(tr) = &t.trace {
        use crate::scenario::spec::trace::TraceKind;
        let what = match tr.kind {
            TraceKind::Rate => {
                "a rate series, linear between its points (the rate above is its mean)"
            }
            TraceKind::Arrivals => "arrival times replayed exactly (the rate above is their mean)",
        };
        rows.push(("traffic trace", format!("{}: {what}", tr.file)));
    }
    if let Some(d) = t.attempt_timeout {
        rows.push(("attempt timeout", d.to_string()));
    }
    if let Some(d) = t.deadline {
        rows.push(("request deadline", d.to_string()));
    }
    if let Some(d) = &t.network_delay {
        rows.push(("network delay (one way)", d.describe()));
    }
    rows
}

/// A `downstream tier` row of [`scenario_params`]: the tier's name, its
/// backend as the top's is described, its nominal `capacity` (requests/s,
/// when stated) and how the tier above calls it.
fn downstream_words(spec: &ScenarioSpec, i: usize, capacity: Option<f64>) -> String {
    let d = &spec.downstream[i];
    let mut s = format!("tier {}: {}", d.name, backend_words(&d.backend));
    if let Some(c) = capacity {
        s.push_str(&format!("; nominal capacity {} requests/s", rate(c)));
    }
    s.push_str(&format!("; called by {}", spec.tier_names()[i]));
    if d.calls != 1 {
        s.push_str(&format!(" ({} calls per attempt)", d.calls));
    }
    s.push_str(&match d.attempt_timeout {
        Some(t) => format!(", attempt timeout {t}"),
        None => ", no attempt timeout".into(),
    });
    if d.propagate_cancel {
        s.push_str(", cancellation propagates");
    }
    s
}

/// The `backend` row of [`scenario_params`], in the words of its kind.
fn backend_words(b: &BackendSpec) -> String {
    match b.kind {
        BackendKind::Queue => queue_words(b),
        BackendKind::Contention => "optimistic concurrency on one record".into(),
        BackendKind::Concurrency => concurrency_words(b),
    }
}

/// A queue backend: its workers and service time, the costs of admitting
/// and rejecting, its queue and how it serves it.
fn queue_words(b: &BackendSpec) -> String {
    let mut s = count(f64::from(b.workers.unwrap_or(0)), "worker", "workers");
    if let Some(d) = &b.service_time {
        s.push_str(&format!(", service time {}", d.describe()));
    }
    if b.admission_cost.ns() > 0 {
        s.push_str(&format!(", admission cost {}", b.admission_cost));
    }
    if b.reject_cost.ns() > 0 {
        s.push_str(&format!(", reject cost {}", b.reject_cost));
    }
    s.push_str(&match b.queue_limit {
        Some(q) => format!(", queue limit {q}"),
        None => ", unlimited queue".into(),
    });
    s.push_str(&format!(", {:?}", b.discipline).to_lowercase());
    if b.drop_expired {
        s.push_str(", drops expired attempts");
    }
    s
}

/// A concurrency backend: how an attempt's time grows with the attempts
/// in service, and its limit.
fn concurrency_words(b: &BackendSpec) -> String {
    let mut s = format!(
        "no waiting room; an attempt takes {} + {} × the attempts already in service",
        b.base.unwrap_or_default(),
        b.per_request.unwrap_or_default()
    );
    if b.admission_cost.ns() > 0 {
        s.push_str(&format!(", admission cost {}", b.admission_cost));
    }
    s.push_str(&match b.max_concurrency {
        Some(m) => format!(", at most {m} at once"),
        None => ", no concurrency limit".into(),
    });
    if b.drop_expired {
        s.push_str(", drops expired attempts");
    }
    s
}

/// Whether the incident ending at `fault_end_s` is a load spike of the
/// traffic profile rather than a fault: no fault ends then.
pub(crate) fn incident_is_spike(scenario: &Scenario, fault_end_s: Option<f64>) -> bool {
    let Some(end) = fault_end_s else {
        return false;
    };
    let run_end = scenario.spec().duration.secs();
    !scenario
        .spec()
        .faults
        .iter()
        .any(|f| (secs(f.window().1).min(run_end) - end).abs() < 1e-6)
}

/// The name of the fault whose end is `fault_end_s` ("the outage"), or
/// "the load spike".
fn incident_name(scenario: &Scenario, fault_end_s: Option<f64>) -> String {
    let Some(end) = fault_end_s else {
        return "the fault".into();
    };
    if incident_is_spike(scenario, fault_end_s) {
        return "the load spike".into();
    }
    let best = scenario
        .spec()
        .faults
        .iter()
        .min_by(|a, b| {
            let da = (secs(a.window().1) - end).abs();
            let db = (secs(b.window().1) - end).abs();
            da.total_cmp(&db)
        })
        .map(|f| f.incident_name());
    best.unwrap_or("the fault").into()
}

/// One sentence saying what happened to the policy of `s`; `first` is the
/// first policy (the `retry_reduction` baseline), `None` for itself.
pub fn sentence(scenario: &Scenario, s: &PolicySummary, first: Option<&str>) -> String {
    let incident = incident_name(scenario, s.get(Col::FaultEndS));
    let head = headline(scenario.spec(), s, &incident);
    let mut parts = figures(s);
    if let (Some(first), Some(red)) = (first, s.get(Col::RetryReduction)) {
        parts.push(retries_against(first, red));
    }
    if parts.is_empty() {
        format!("{head}.")
    } else {
        format!("{head}; {}.", parts.join(", "))
    }
}

/// When something happened, `v` seconds after `incident` ended (`None`:
/// some time after).
fn after(incident: &str, v: Option<f64>) -> String {
    match v {
        Some(v) if v <= 0.0 => format!("as soon as {incident} ended"),
        Some(v) => format!("{} after {incident} ended", human_secs(v)),
        None => format!("after {incident} ended"),
    }
}

/// The head of [`sentence`]: whether the policy recovered from `incident`
/// (and when), stayed metastable, or cannot be judged, in how many of its
/// replications.
fn headline(spec: &ScenarioSpec, s: &PolicySummary, incident: &str) -> String {
    let r = s.replications;
    let k = s.metastable_runs;
    if s.get(Col::FaultEndS).is_none() {
        "had no fault to recover from".to_string()
    } else if s.recovery == Recovery::Undetermined {
        format!(
            "cannot be judged{}: the run ended before goodput could hold {}% of demand for {} after {incident} ended",
            if r > 1 {
                format!(" in {} of {r} replications", s.undetermined_runs)
            } else {
                String::new()
            },
            num(100.0 * spec.report.recovery_threshold),
            human_secs(spec.report.stable_for.secs())
        )
    } else if k == r {
        format!(
            "stayed metastable until the end of the run{}: goodput never held {}% of demand for {} after {incident} ended",
            if r > 1 { format!(" in all {r} replications") } else { String::new() },
            num(100.0 * spec.report.recovery_threshold),
            human_secs(spec.report.stable_for.secs())
        )
    } else {
        mixed_headline(s, incident)
    }
}

/// [`headline`] for a policy with an incident whose replications did not
/// all stay metastable: how many recovered (and when), stayed metastable,
/// or cannot be judged (a run that ended too soon after the incident),
/// each counted apart.
fn mixed_headline(s: &PolicySummary, incident: &str) -> String {
    let (r, k, u) = (s.replications, s.metastable_runs, s.undetermined_runs);
    let recovered = r.saturating_sub(k + u);
    let when = after(incident, s.get(Col::RecoveryAfterFaultS));
    let unjudged = match u {
        0 => String::new(),
        1 => "; 1 cannot be judged (it ended too soon after the incident)".to_string(),
        u => format!("; {u} cannot be judged (they ended too soon after the incident)"),
    };
    if k == 0 && u == 0 {
        let mut h = format!("recovered {when}");
        if let Some(d) = s.get(Col::DegradedS) {
            h.push_str(&format!(" ({} degraded in all)", human_secs(d)));
        }
        h
    } else if k == 0 {
        format!("recovered {when} in {recovered} of {r} replications{unjudged}")
    } else if recovered == 0 {
        format!("stayed metastable in {k} of {r} replications{unjudged}")
    } else if s.metastable {
        format!(
            "stayed metastable in {k} of {r} replications; {recovered} recovered {when}{unjudged}"
        )
    } else {
        format!(
            "recovered {when} in {recovered} of {r} replications but stayed metastable in {k}{unjudged}"
        )
    }
}

/// The figures after the head of [`sentence`], those the summary has: the
/// peak load, the share of requests that succeeded, the share dropped.
fn figures(s: &PolicySummary) -> Vec<String> {
    let mut parts: Vec<String> = vec![];
    if let Some(p) = s.get(Col::PeakLoadRatio).filter(|p| *p > 0.0) {
        parts.push(format!("peak load {}× capacity", ratio(p)));
    }
    if let Some(ok) = s.get(Col::SuccessRate) {
        parts.push(format!(
            "{}% of requests succeeded",
            num((ok * 1000.0).round() / 10.0)
        ));
    }
    if let (Some(d), Some(n)) = (s.get(Col::Dropped), s.get(Col::Requests)) {
        if d > 0.0 && n > 0.0 {
            parts.push(format!("{}% dropped", num((d / n * 1000.0).round() / 10.0)));
        }
    }
    parts
}

/// Every tier's peak load ÷ capacity for the policy at `policy_index`: the
/// mean over its runs in `results` of the `peak_load_ratio` that
/// `tiers.csv` writes from the same per-tier results, as (tier name,
/// ratio), the top backend first; `None` for a tier whose capacity cannot
/// be stated.
pub fn tier_peaks(results: &[RunResult], policy_index: usize) -> Vec<(String, Option<f64>)> {
    let runs: Vec<&RunResult> = results
        .iter()
        .filter(|r| r.policy_index == policy_index)
        .collect();
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mean = |i: usize| {
        let v: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.tiers.get(i).and_then(|t| t.peak_load_ratio))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    first
        .tiers
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), mean(i)))
        .collect()
}

/// One sentence naming the tiers below the top that were overloaded (peak
/// load ÷ capacity, [`tier_peaks`], of 1 or more) and peaked above the top
/// backend, as the page rounds them (a tier that reads the same as the
/// top is not named): `Tier database peaked at 3× its capacity.`; `None`
/// when none did (or there are no tiers below). A tier well within its
/// capacity is no news beside the top's figure.
pub fn tiers_above_top(peaks: &[(String, Option<f64>)]) -> Option<String> {
    let (first, below) = peaks.split_first()?;
    let shown = |p: f64| ratio(p).parse::<f64>().unwrap_or(p);
    let top = first.1.map_or(0.0, shown);
    let above: Vec<String> = below
        .iter()
        .filter_map(|(name, p)| {
            p.filter(|p| shown(*p) >= 1.0 && shown(*p) > top)
                .map(|p| (name, p))
        })
        .enumerate()
        .map(|(k, (name, p))| match k {
            0 => format!("tier {name} peaked at {}× its capacity", ratio(p)),
            _ => format!("tier {name} at {}×", ratio(p)),
        })
        .collect();
    let (last, rest) = above.split_last()?;
    let text = if rest.is_empty() {
        last.clone()
    } else {
        format!("{} and {last}", rest.join(", "))
    };
    Some(format!("T{}.", &text[1..]))
}

/// A load ÷ capacity ratio for a sentence: one decimal from 1 up, two
/// significant digits below (a peak of 1 % of capacity is not "0×").
fn ratio(p: f64) -> String {
    if p <= 0.0 || !p.is_finite() {
        return num(p);
    }
    if p >= 0.95 {
        num((p * 10.0).round() / 10.0)
    } else {
        let digits = (1 - p.log10().floor() as i32).clamp(1, 12);
        let scale = 10f64.powi(digits);
        num((p * scale).round() / scale)
    }
}

/// The retries compared with policy `first`'s, from the reduction `red`
/// (a share: 0.5 is half as many, −1.5 is 2.5 times as many).
fn retries_against(first: &str, red: f64) -> String {
    if red <= -1.0 {
        // At least twice as many: a multiple reads better than "150 % more".
        let times = ((1.0 - red) * 10.0).round() / 10.0;
        return format!("{}× the retries of {first}", num(times));
    }
    // Whole percent, except that a reduction short of 100 % never
    // rounds up to "100 % fewer" (which would read as no retries).
    let mut pctv = (red.abs() * 100.0).round();
    if pctv >= 100.0 && red > 0.0 && red < 1.0 {
        pctv = ((red * 1000.0).floor() / 10.0).min(99.9);
    }
    if pctv < 1.0 {
        format!("about as many retries as {first}")
    } else if red > 0.0 {
        format!("{}% fewer retries than {first}", num(pctv))
    } else {
        format!("{}% more retries than {first}", num(pctv))
    }
}

#[cfg(test)]
mod tests {
    use crate::policy::{Backoff, Jitter};

    /// Retries against the first policy's, for every size of change: a
    /// reduction of −1.78 (2.78 times as many) is not "about as many".
    #[test]
    fn retries_against_reads_every_change() {
        use super::retries_against as ra;
        assert_eq!(ra("a", 0.0), "about as many retries as a");
        assert_eq!(ra("a", 0.5), "50% fewer retries than a");
        assert_eq!(ra("a", 0.9996), "99.9% fewer retries than a");
        assert_eq!(ra("a", 1.0), "100% fewer retries than a");
        assert_eq!(ra("a", -0.901), "90% more retries than a");
        assert_eq!(ra("a", -0.995), "100% more retries than a");
        assert_eq!(ra("a", -1.0), "2× the retries of a");
        assert_eq!(ra("a", -1.781), "2.8× the retries of a");
        assert_eq!(ra("a", -4.214), "5.2× the retries of a");
    }

    /// A ratio of zero (no load) or not a number reads as such; the
    /// significant digits of a small one are counted from its magnitude.
    #[test]
    fn ratios_of_zero_and_tiny_loads_read() {
        assert_eq!(super::ratio(0.0), "0");
        assert_eq!(super::ratio(0.0058), "0.0058");
        assert_eq!(super::ratio(3.04), "3");
        assert_eq!(
            super::tiers_above_top(&[("top".into(), Some(0.0)), ("db".into(), Some(0.0))]),
            None
        );
    }

    /// The tiers below the top that peaked above it, as rounded, in one
    /// sentence; none when none did.
    #[test]
    fn tiers_above_the_top_are_named_in_one_sentence() {
        use super::tiers_above_top as above;
        let peaks = |v: &[(&str, Option<f64>)]| -> Vec<(String, Option<f64>)> {
            v.iter().map(|(n, p)| (n.to_string(), *p)).collect()
        };
        assert_eq!(above(&[]), None);
        assert_eq!(above(&peaks(&[("top", Some(2.0))])), None);
        assert_eq!(
            above(&peaks(&[("top", Some(0.8)), ("db", Some(3.04))])).as_deref(),
            Some("Tier db peaked at 3× its capacity.")
        );
        assert_eq!(
            above(&peaks(&[
                ("top", Some(0.5)),
                ("a", Some(0.4)),
                ("b", Some(1.26)),
                ("c", None),
                ("d", Some(20.7))
            ]))
            .as_deref(),
            Some("Tier b peaked at 1.3× its capacity and tier d at 20.7×.")
        );
        // Above the top's figure, but not as the page shows them.
        assert_eq!(
            above(&peaks(&[("top", Some(1.002599)), ("s", Some(1.0026))])),
            None
        );
        // Above the top, but within its own capacity: not named.
        assert_eq!(
            above(&peaks(&[("top", Some(0.002)), ("s", Some(0.5))])),
            None
        );
        // A top without a stated capacity: any overloaded tier below.
        assert_eq!(
            above(&peaks(&[("top", None), ("db", Some(1.5))])).as_deref(),
            Some("Tier db peaked at 1.5× its capacity.")
        );
    }

    /// A peak far below capacity keeps two significant digits.
    #[test]
    fn small_peak_ratios_are_not_zero() {
        use super::ratio;
        assert_eq!(ratio(16.84), "16.8");
        assert_eq!(ratio(1.0), "1");
        assert_eq!(ratio(0.96), "1");
        assert_eq!(ratio(0.5), "0.5");
        assert_eq!(ratio(0.0123), "0.012");
        assert_eq!(ratio(0.034), "0.034");
    }

    /// Replications that cannot be judged are counted apart, never as
    /// recovered.
    #[test]
    fn undetermined_replications_are_not_counted_as_recovered() {
        use crate::metrics::aggregate::PolicySummary;
        use crate::metrics::aggregate::NCOLS;
        use crate::metrics::Recovery;
        let summary = |k: usize, u: usize, metastable: bool| PolicySummary {
            policy: "p".into(),
            policy_index: 0,
            replications: 3,
            mean: [None; NCOLS],
            ci95: [None; NCOLS],
            count: [0; NCOLS],
            recovery: Recovery::Recovered,
            metastable,
            metastable_share: k as f64 / 3.0,
            metastable_runs: k,
            undetermined_runs: u,
        };
        let h = |k, u, m| super::mixed_headline(&summary(k, u, m), "the outage");
        assert_eq!(
            h(1, 1, false),
            "recovered after the outage ended in 1 of 3 replications but stayed metastable \
             in 1; 1 cannot be judged (it ended too soon after the incident)"
        );
        assert_eq!(
            h(0, 1, false),
            "recovered after the outage ended in 2 of 3 replications; 1 cannot be judged \
             (it ended too soon after the incident)"
        );
        assert_eq!(
            h(2, 1, true),
            "stayed metastable in 2 of 3 replications; 1 cannot be judged (it ended too soon \
             after the incident)"
        );
        assert_eq!(
            h(2, 0, true),
            "stayed metastable in 2 of 3 replications; 1 recovered after the outage ended"
        );
        assert_eq!(h(0, 0, false), "recovered after the outage ended");
    }

    #[test]
    fn schedules_read_naturally() {
        let b = Backoff::Exponential {
            initial: 100_000_000,
            multiplier: 2.0,
            max: 10_000_000_000,
            max_doublings: u32::MAX,
        };
        assert_eq!(b.describe(), "exponential 100ms ×2, max 10s");
        assert_eq!(Jitter::Proportional(0.1).describe(), "±10%");
    }

    /// A capacity under one request a second does not read as zero.
    #[test]
    fn a_small_capacity_is_not_rounded_away() {
        let scenario = crate::scenario::Scenario::from_json(
            r#"{"name": "t", "duration": "60s", "traffic": {"rate": 0.1},
               "backend": {"workers": 1, "service_time": {"constant": {"value": "4s"}}},
               "policies": [{"name": "p"}]}"#,
        )
        .unwrap();
        let row = |capacity: f64| {
            let rows = super::scenario_params(scenario.spec(), &[capacity]);
            rows.iter()
                .find(|(k, _)| k == "nominal capacity")
                .unwrap()
                .1
                .clone()
        };
        assert_eq!(row(0.25), "0.25 requests/s");
        assert_eq!(row(2e-7), "2e-7 requests/s");
        assert_eq!(row(399.6), "400 requests/s");
    }

    #[test]
    fn scenario_rows_count_in_words() {
        let rows = |clients: u32, workers: u32| {
            let json = format!(
                r#"{{"name": "t", "duration": "60s", "traffic": {{"rate": 10, "clients": {clients}}},
                   "backend": {{"workers": 4, "service_time": {{"constant": {{"value": "10ms"}}}}}},
                   "faults": [{{"capacity": {{"start": "10s", "duration": "5s", "workers": {workers}}}}}],
                   "policies": [{{"name": "p"}}]}}"#
            );
            let scenario = crate::scenario::Scenario::from_json(&json).unwrap();
            let rows = super::scenario_params(scenario.spec(), &[]);
            let row = |key: &str| rows.iter().find(|(k, _)| k == key).unwrap().1.clone();
            (row("traffic"), row("fault"))
        };
        let (traffic, fault) = rows(1, 0);
        assert!(traffic.contains("from 1 client,"), "{traffic}");
        assert_eq!(fault, "capacity 10–15 s: no workers");
        let (traffic, fault) = rows(250, 1);
        assert!(traffic.contains("from 250 clients,"), "{traffic}");
        assert_eq!(fault, "capacity 10–15 s: only 1 worker");
        assert_eq!(rows(1, 3).1, "capacity 10–15 s: only 3 workers");
    }

    /// A trace's mean rate is rounded as the page's other rates are; a
    /// rate as written is not.
    #[test]
    fn a_traces_mean_rate_is_rounded() {
        let scenario = crate::scenario::Scenario::from_json(
            r#"{"name": "t", "duration": "60s", "traffic": {"rate": 2.5},
               "backend": {"workers": 4, "service_time": {"constant": {"value": "10ms"}}},
               "policies": [{"name": "p"}]}"#,
        )
        .unwrap();
        let traffic = |spec: &crate::scenario::spec::ScenarioSpec| {
            let rows = super::scenario_params(spec, &[]);
            rows.iter().find(|(k, _)| k == "traffic").unwrap().1.clone()
        };
        let mut spec = scenario.spec().clone();
        assert!(traffic(&spec).starts_with("2.5 new requests/s from"));
        spec.traffic.rate = Some(1181.944583);
        spec.traffic.trace = Some(serde_json::from_str(r#"{"file": "day.csv"}"#).unwrap());
        let t = traffic(&spec);
        assert!(t.starts_with("1182 new requests/s from"), "{t}");
        spec.traffic.rate = Some(0.25);
        let t = traffic(&spec);
        assert!(t.starts_with("0.25 new requests/s from"), "{t}");
    }

    #[test]
    fn tiny_rates_are_not_written_as_zero() {
        let rows = |rate: &str, dispatch: &str| {
            let json = format!(
                r#"{{"name": "t", "duration": "60s", "traffic": {{"rate": {rate}}},
                   "backend": {{"workers": 4, "service_time": {{"constant": {{"value": "10ms"}}}}}},
                   "dispatcher": {{"max_dispatches_per_second": {dispatch}, "max_burst_size": 5}},
                   "policies": [{{"name": "p"}}]}}"#
            );
            let scenario = crate::scenario::Scenario::from_json(&json).unwrap();
            let rows = super::scenario_params(scenario.spec(), &[]);
            let row = |key: &str| rows.iter().find(|(k, _)| k == key).unwrap().1.clone();
            (row("traffic"), row("dispatcher"))
        };
        let (traffic, dispatcher) = rows("3e-7", "2.5e-7");
        assert!(traffic.starts_with("3e-7 new requests/s from"), "{traffic}");
        assert!(
            dispatcher.starts_with("2.5e-7/s (burst 5),"),
            "{dispatcher}"
        );
        let (traffic, dispatcher) = rows("0.5", "500");
        assert!(traffic.starts_with("0.5 new requests/s from"), "{traffic}");
        assert!(dispatcher.starts_with("500/s (burst 5),"), "{dispatcher}");
    }
}
