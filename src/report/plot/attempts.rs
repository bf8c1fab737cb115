//! `attempts.png`: per policy, the requests that succeeded at each
//! attempt and those given up after it.

use super::*;
use crate::report::files::AttemptRow;

/// Colour of the "given up" bars of `attempts.png`.
const GAVE_UP_COLOR: RGBColor = RGBColor(170, 30, 30);

/// Draws `attempts.png`, `width` pixels wide: one panel per policy, the
/// mean number of requests per run that succeeded at each attempt (the
/// policy's colour) and that were given up after that many attempts (dark
/// red), on a logarithmic count axis so the tail shows next to the bulk at
/// attempt 1.
pub fn attempts_png(
    path: &Path,
    scenario: &Scenario,
    results: &[RunResult],
    width: u32,
) -> Result<()> {
    ensure_font()?;
    let rows = crate::report::files::attempt_rows(results);
    let groups = group(results);
    let n = groups.len().max(1) as u32;
    let panel = 250u32;
    let legend_h = 56u32;
    let height = 70 + panel * n + legend_h;
    let kmax = rows.iter().map(|r| r.attempts).max().unwrap_or(1).max(1) as f64;
    let top = rows
        .iter()
        .map(|r| r.succeeded.max(r.gave_up))
        .fold(1.0, f64::max);
    let y_hi = 10f64.powf((top * 2.0).log10().ceil());
    let floor = 0.5;
    let mut buf = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(pe)?;
        let (head, rest) = root.split_vertically(60);
        let reps = groups.iter().map(|g| g.runs.len()).max().unwrap_or(0);
        let mut title = format!("{} — attempts per request", scenario.spec().name);
        if reps > 1 {
            title.push_str(&format!(" (mean of {reps} runs)"));
        }
        head.draw_text(
            &title,
            &text(26).pos(Pos::new(HPos::Center, VPos::Top)),
            ((width / 2) as i32, 12),
        )
        .map_err(pe)?;
        let (panels, legend_area) = rest.split_vertically(panel * n + 10);
        let areas = panels.split_evenly((n as usize, 1));
        let scale = (kmax, y_hi, floor);
        for (g, area) in groups.iter().zip(areas.iter()) {
            let mine: Vec<&AttemptRow> =
                rows.iter().filter(|r| r.policy_index == g.index).collect();
            draw_policy(area, g, &mine, scale)?;
        }
        let legend = vec![
            (
                Swatch::Line(RGBColor(60, 60, 60)),
                "succeeded at this attempt (left bar, the policy's colour)".to_string(),
            ),
            (
                Swatch::Line(GAVE_UP_COLOR),
                "given up after this many attempts (right bar)".to_string(),
            ),
        ];
        let (at, _) = legend_layout(&legend_area, &legend)?;
        draw_legend(&legend_area, &legend, &at)?;
        root.present().map_err(pe)?;
    }
    write_png(path, &buf, (width, height))
}

/// One policy's panel: its requests that succeeded at each attempt and
/// those given up after it, as bars on a logarithmic count axis of
/// `(kmax, y_hi, floor)`.
fn draw_policy(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    g: &PolicyRuns<'_>,
    mine: &[&AttemptRow],
    (kmax, y_hi, floor): (f64, f64, f64),
) -> Result<()> {
    let ok: f64 = mine.iter().map(|r| r.succeeded).sum();
    let gave_up: f64 = mine.iter().map(|r| r.gave_up).sum();
    let color = policy_color(g.index);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: {} succeeded, {} given up",
                g.name,
                si(ok.round()),
                si(gave_up.round())
            ),
            text(18).color(&color),
        )
        .margin_left(16)
        .margin_right(36)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(0.5..kmax + 0.5, super::log_axis(floor, y_hi))
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_desc("attempts")
        .y_desc("requests")
        .label_style(text(14))
        .axis_desc_style(text(15))
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(225, 225, 225))
        .x_labels((kmax as usize).clamp(2, 25))
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 && *v >= 1.0 {
                format!("{}", v.round() as u64)
            } else {
                String::new()
            }
        })
        .y_labels(8)
        .y_label_formatter(&|v| if is_125(*v) { si(*v) } else { String::new() })
        .draw()
        .map_err(pe)?;
    let bar = |k: f64, v: f64, left: bool, c: RGBColor| {
        let (a, b) = if left { (k - 0.42, k) } else { (k, k + 0.42) };
        Rectangle::new([(a, floor), (b, v.max(floor))], c.filled())
    };
    chart
        .draw_series(
            mine.iter()
                .filter(|r| r.succeeded > 0.0)
                .map(|r| bar(r.attempts as f64, r.succeeded, true, color)),
        )
        .map_err(pe)?;
    chart
        .draw_series(
            mine.iter()
                .filter(|r| r.gave_up > 0.0)
                .map(|r| bar(r.attempts as f64, r.gave_up, false, GAVE_UP_COLOR)),
        )
        .map_err(pe)?;
    Ok(())
}
