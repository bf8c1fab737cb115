//! `load.png`: offered attempts per second per policy, with demand, the
//! nominal capacity, the fault windows, the periods during which alerts
//! fired, and one panel per downstream tier.

use super::*;

/// Draws `load.png` at `size` pixels (width, height): offered attempts/s
/// per policy, demand, nominal capacity and the fault windows.
pub fn load_png(path: &Path, report: &RunReport<'_>, size: (u32, u32)) -> Result<()> {
    let (scenario, results) = (report.scenario, report.results);
    let groups = group(results);
    let x = x_range(scenario, results);
    let faults = fault_boxes(scenario, x.end);
    let series = series_of(&groups, &x, |b| Some(b.offered_rps));
    let alerts = alert_rows(&groups, &report.alerts, x.end);
    let mut capacity = results
        .first()
        .map(|r| r.summary().capacity_rps)
        .unwrap_or(0.0);
    let tiers = results.first().map_or(0, |r| r.tiers.len());
    // A capacity far above the load (a tier whose workers wait on the
    // tiers below, a backend sized for far more) would flatten the chart:
    // it is named in the legend, not drawn.
    let nominal = capacity;
    if off_scale(capacity, max_of(&series, |b| b.max)) {
        capacity = 0.0;
    }
    let demand = demand_line(&groups, &x);
    let peak = max_of(&series, |b| b.max)
        .max(demand.iter().map(|d| d.1).fold(0.0, f64::max))
        .max(capacity);
    let (y, floor, y_desc, log) = load_axis(&demand, capacity, peak);
    let mut refs = vec![RefLine {
        points: demand,
        color: BLACK,
        dashed: false,
    }];
    if capacity > 0.0 {
        refs.push(RefLine {
            points: vec![(x.start, capacity), (x.end, capacity)],
            color: RGBColor(90, 90, 90),
            dashed: true,
        });
    }
    let spec = scenario.spec();
    let reps = groups.iter().map(|g| g.runs.len()).max().unwrap_or(0);
    let mut title = format!("{} — offered load per retry policy", spec.name);
    if reps > 1 {
        title.push_str(&format!(", mean of {reps} runs with min–max band"));
    }
    let d = ChartData {
        title,
        y_desc: y_desc.into(),
        faults: &faults,
        series,
        refs,
        marks: vec![],
        alerts,
        floor,
        log,
    };
    let legend = load_legend(&groups, (capacity, nominal), &faults, !d.alerts.is_empty());
    if tiers == 0 {
        return render(path, size, x, y, &d, &legend);
    }
    let panels: Vec<Panel> = (1..tiers)
        .map(|t| tier_panel(results, t, &x, &faults))
        .collect();
    render_with_panels(path, size, x, y, &d, &legend, &panels)
}

/// The demand line: the same for every policy (common random numbers),
/// so the first policy's mean over replications.
fn demand_line(groups: &[PolicyRuns<'_>], x: &Range<f64>) -> Vec<(f64, f64)> {
    groups
        .first()
        .map(|g| {
            let all: Vec<BandPoint> = band(&g.runs, |b| Some(b.demand_rps))
                .into_iter()
                .flatten()
                .collect();
            downsample(all, x, DRAW_COLUMNS)
                .into_iter()
                .map(|b| (b.t_s, b.mean))
                .collect()
        })
        .unwrap_or_default()
}

/// The load axis up to `peak`: logarithmic when the peak is far above
/// the baseline (the capacity or the median demand, whichever is lower),
/// linear from zero otherwise. Returns the axis, the floor values are
/// clamped to, the axis's description and whether it is logarithmic.
fn load_axis(demand: &[(f64, f64)], capacity: f64, peak: f64) -> (YAxis, f64, &'static str, bool) {
    let mut sorted: Vec<f64> = demand.iter().map(|d| d.1).filter(|v| *v > 0.0).collect();
    sorted.sort_by(f64::total_cmp);
    let median_demand = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    let baseline = [capacity, median_demand]
        .into_iter()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = baseline.is_finite() && peak > LOG_THRESHOLD * baseline.max(capacity);
    if log {
        // A whole decade at the bottom: plotters' log axis draws a cluttered
        // mesh between bounds that are not powers of ten. The decade at or
        // under baseline / 1.5 keeps the pre-fault line clear of the axis
        // without a wasted decade (a demand of 1990/s gets 1k, not 100).
        let lo = 10f64.powf((baseline / 1.5).log10().floor());
        let hi = 10f64.powf((peak * 1.5).log10().ceil()).min(peak * 3.0);
        (
            YAxis::Log(lo, hi),
            lo,
            "attempts arriving at the backend per second (log scale)",
            true,
        )
    } else {
        let hi = if peak > 0.0 { peak * 1.18 } else { 1.0 };
        (
            YAxis::Linear(0.0, hi),
            0.0,
            "attempts arriving at the backend per second",
            false,
        )
    }
}

/// The legend of `load.png`; `(capacity, nominal)`: the capacity line
/// drawn (0: none) and the backend's nominal capacity.
fn load_legend(
    groups: &[PolicyRuns<'_>],
    (capacity, nominal): (f64, f64),
    faults: &[FaultBox],
    alerts: bool,
) -> Vec<(Swatch, String)> {
    let mut legend: Vec<(Swatch, String)> = groups
        .iter()
        .map(|g| {
            (
                Swatch::Line(policy_color(g.index)),
                format!("{} (all attempts)", g.name),
            )
        })
        .collect();
    legend.push((Swatch::Line(BLACK), "demand (new requests/s)".into()));
    if capacity > 0.0 {
        legend.push((
            Swatch::Dashed(RGBColor(90, 90, 90)),
            format!("nominal capacity ({} req/s)", si(capacity)),
        ));
    } else if nominal > 0.0 {
        legend.push((
            Swatch::Dashed(RGBColor(90, 90, 90)),
            format!(
                "nominal capacity ({} req/s, off the scale: over 20× every line)",
                si(nominal)
            ),
        ));
    }
    for f in faults.iter().filter(|f| f.shaded) {
        legend.push((Swatch::Fill(f.color), f.label.clone()));
    }
    if alerts {
        legend.push((
            Swatch::Line(RGBColor(90, 90, 90)),
            "alert firing (band under the chart, one row per policy and rule)".into(),
        ));
    }
    legend
}

/// Whether a capacity line would squash a chart whose series peak at
/// `peak`: it is more than 20 times higher.
fn off_scale(capacity: f64, peak: f64) -> bool {
    peak > 0.0 && capacity > 20.0 * peak
}

/// The load panel of downstream tier `t`: attempts arriving per second
/// per policy, with the tier's capacity and the fault windows.
fn tier_panel<'s>(
    results: &[RunResult],
    t: usize,
    x: &Range<f64>,
    faults: &'s [FaultBox],
) -> Panel<'s> {
    let tier_results: Vec<RunResult> = results
        .iter()
        .map(|r| RunResult {
            policy: r.policy.clone(),
            policy_index: r.policy_index,
            replication: r.replication,
            events: 0,
            stopped_at_s: r.stopped_at_s,
            tiers: vec![crate::metrics::TierRun {
                bins: r.tiers[t].bins.clone(),
                ..Default::default()
            }],
        })
        .collect();
    let groups = group(&tier_results);
    let series = series_of(&groups, x, |b| Some(b.offered_rps));
    let name = &results[0].tiers[t].name;
    let nominal = results[0].tiers[t].capacity_rps;
    let busiest = max_of(&series, |b| b.max);
    let capacity = if off_scale(nominal, busiest) {
        0.0
    } else {
        nominal
    };
    let peak = busiest.max(capacity);
    let quiet = max_of(&series, |b| b.min);
    let baseline = [capacity, quiet]
        .into_iter()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let log = baseline.is_finite() && peak > LOG_THRESHOLD * baseline.max(capacity);
    let (y, floor) = if log {
        let lo = 10f64.powf((baseline / 1.5).log10().floor());
        let hi = 10f64.powf((peak * 1.5).log10().ceil()).min(peak * 3.0);
        (YAxis::Log(lo, hi), lo)
    } else {
        let hi = if peak > 0.0 { peak * 1.18 } else { 1.0 };
        (YAxis::Linear(0.0, hi), 0.0)
    };
    let mut refs = Vec::new();
    if capacity > 0.0 {
        refs.push(RefLine {
            points: vec![(x.start, capacity), (x.end, capacity)],
            color: RGBColor(90, 90, 90),
            dashed: true,
        });
    }
    let cap = if capacity > 0.0 {
        format!(", capacity {} req/s dashed", si(capacity))
    } else if nominal > 0.0 {
        format!(" (capacity {} req/s, off the scale)", si(nominal))
    } else {
        String::new()
    };
    Panel {
        y,
        d: ChartData {
            title: format!("tier \"{name}\" — attempts arriving per second{cap}"),
            y_desc: if log {
                "attempts/s (log scale)".into()
            } else {
                "attempts/s".into()
            },
            faults,
            series,
            refs,
            marks: vec![],
            alerts: vec![],
            floor,
            log,
        },
    }
}

/// The alert rows of `load.png`: for each policy (in plot order) and rule
/// that fired in some replication, the firing periods (an alert still
/// firing at the end runs to `end`).
fn alert_rows(
    groups: &[PolicyRuns<'_>],
    alerts: &[crate::report::alerting::RunAlerts],
    end: f64,
) -> Vec<AlertRow> {
    let mut rows = Vec::new();
    for g in groups {
        for rule in crate::metrics::alerts::Rule::ALL {
            let periods: Vec<(f64, f64)> = alerts
                .iter()
                .filter(|a| a.policy_index == g.index)
                .flat_map(|a| a.firings.iter().filter(|f| f.rule == rule))
                .map(|f| (f.fired_at_s, f.cleared_at_s.unwrap_or(end)))
                .collect();
            if !periods.is_empty() {
                let mut periods = periods;
                periods.sort_by(|a, b| a.0.total_cmp(&b.0));
                rows.push(AlertRow {
                    label: format!("{}: {}", g.name, rule.name()),
                    color: policy_color(g.index),
                    periods,
                });
            }
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capacity far above every line is named, not drawn: the legend
    /// says so; one within reach is drawn and named plainly.
    #[test]
    fn a_capacity_off_the_scale_is_named_in_the_legend() {
        assert!(off_scale(50_000.0, 2_000.0));
        assert!(!off_scale(300.0, 600.0));
        assert!(!off_scale(50_000.0, 0.0));
        let text = |capacity, nominal| -> Vec<String> {
            load_legend(&[], (capacity, nominal), &[], false)
                .into_iter()
                .map(|(_, t)| t)
                .collect()
        };
        assert_eq!(
            text(0.0, 50_000.0),
            [
                "demand (new requests/s)",
                "nominal capacity (50k req/s, off the scale: over 20× every line)"
            ]
        );
        assert_eq!(
            text(300.0, 300.0),
            ["demand (new requests/s)", "nominal capacity (300 req/s)"]
        );
    }
}
