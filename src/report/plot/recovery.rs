//! `recovery.png`: goodput ÷ demand per policy, with the recovery
//! threshold and each policy's recovery time.

use super::*;

/// The outcome words used in the recovery legend.
fn outcome(s: &PolicySummary) -> String {
    if s.get(Col::FaultEndS).is_none() {
        return "no fault".into();
    }
    let of = if s.replications > 1 {
        format!(" in {}/{} runs", s.metastable_runs, s.replications)
    } else {
        String::new()
    };
    if s.metastable {
        return format!("never recovered{of} (metastable)");
    }
    if s.recovery == Recovery::Undetermined {
        return "undetermined: the run ended too soon after the fault".into();
    }
    let mut text = match s.get(Col::RecoveryAfterFaultS) {
        Some(v) if v <= 0.0 => "recovered as soon as the fault ended".into(),
        Some(v) => format!("recovered {} after the fault", human_secs(v)),
        None => "recovered".into(),
    };
    if s.metastable_runs > 0 {
        text.push_str(&format!(
            "; metastable in {}/{} runs",
            s.metastable_runs, s.replications
        ));
    }
    text
}

/// Draws `recovery.png` at `size` pixels (width, height): goodput ÷ demand
/// per policy, the recovery threshold, each policy's recovery time or a
/// "never recovered" mark.
pub fn recovery_png(path: &Path, report: &RunReport<'_>, size: (u32, u32)) -> Result<()> {
    let (scenario, results) = (report.scenario, report.results);
    let groups = group(results);
    let summaries = &report.summaries;
    let x = x_range(scenario, results);
    let faults = fault_boxes(scenario, x.end);
    let series = series_of(&groups, &x, ratio);
    let threshold = scenario.spec().report.recovery_threshold;
    let top = (max_of(&series, |b| b.max) * 1.05).clamp(1.2, 2.5);
    let marks = recovery_marks(&groups, summaries, &x, threshold);
    let spec = scenario.spec();
    let reps = groups.iter().map(|g| g.runs.len()).max().unwrap_or(0);
    let mut title = format!("{} — recovery: goodput ÷ demand", spec.name);
    if reps > 1 {
        title.push_str(&format!(", mean of {reps} runs with min–max band"));
    }
    let d = ChartData {
        title,
        y_desc: "requests succeeded ÷ new requests, per bin".into(),
        faults: &faults,
        series,
        refs: vec![RefLine {
            points: vec![(x.start, threshold), (x.end, threshold)],
            color: RGBColor(90, 90, 90),
            dashed: true,
        }],
        marks,
        alerts: vec![],
        floor: 0.0,
        log: false,
    };
    let legend = recovery_legend(&groups, summaries, threshold, scenario, &faults);
    render(path, size, x, YAxis::Linear(0.0, top), &d, &legend)
}

/// Goodput ÷ demand in a bin (none without demand).
fn ratio(b: &BinRow) -> Option<f64> {
    (b.demand_rps > 0.0).then(|| b.goodput_rps / b.demand_rps)
}

/// Each policy's mark: when it recovered (on the threshold line), or a
/// cross at the end of its line when it never did.
fn recovery_marks(
    groups: &[PolicyRuns<'_>],
    summaries: &[PolicySummary],
    x: &Range<f64>,
    threshold: f64,
) -> Vec<Mark> {
    let mut marks = Vec::new();
    for (g, s) in groups.iter().zip(summaries) {
        let color = policy_color(g.index);
        if s.get(Col::FaultEndS).is_none() {
            continue;
        }
        if s.metastable {
            let last = series_of(std::slice::from_ref(g), x, ratio)
                .pop()
                .and_then(|s| s.pieces.last().and_then(|p| p.last().cloned()));
            let (lx, ly) = last.map(|b| (b.t_s, b.mean)).unwrap_or((x.end, 0.0));
            marks.push(Mark {
                x: lx,
                y: ly,
                color,
                cross: true,
                label: format!("{}: never recovered", g.name),
            });
        } else if let Some(t) = s.get(Col::RecoveredAtS) {
            let after = s
                .get(Col::RecoveryAfterFaultS)
                .map(|v| {
                    if v <= 0.0 {
                        " (at once)".to_string()
                    } else {
                        format!(" (+{})", human_secs(v))
                    }
                })
                .unwrap_or_default();
            marks.push(Mark {
                x: t,
                y: threshold,
                color,
                cross: false,
                label: format!("{}{after}", g.name),
            });
        }
    }
    marks
}

/// The legend of `recovery.png`.
fn recovery_legend(
    groups: &[PolicyRuns<'_>],
    summaries: &[PolicySummary],
    threshold: f64,
    scenario: &Scenario,
    faults: &[FaultBox],
) -> Vec<(Swatch, String)> {
    let spec = scenario.spec();
    let mut legend: Vec<(Swatch, String)> = groups
        .iter()
        .zip(summaries)
        .map(|(g, s)| {
            (
                Swatch::Line(policy_color(g.index)),
                format!("{}: {}", g.name, outcome(s)),
            )
        })
        .collect();
    legend.push((
        Swatch::Dashed(RGBColor(90, 90, 90)),
        format!(
            "recovery threshold ({}% of demand, held {})",
            num(100.0 * threshold),
            human_secs(spec.report.stable_for.secs())
        ),
    ));
    legend.push((Swatch::Dot(RGBColor(90, 90, 90)), "recovered at".into()));
    if summaries.iter().any(|s| s.metastable) {
        legend.push((
            Swatch::Cross(RGBColor(90, 90, 90)),
            "never recovered (metastable)".into(),
        ));
    }
    for f in faults.iter().filter(|f| f.shaded) {
        legend.push((Swatch::Fill(f.color), f.label.clone()));
    }
    legend
}
