//! `schedule.png` of `retrysim schedule`: the delay before each retry, the
//! range jitter can move it over, and the time since the first attempt.

use super::*;

/// Seconds, for axis ticks of the schedule: 50 ms, 1.5 s, 1000 s. Plain
/// seconds above a minute, so log-axis decades read 100 s, 1000 s, 10000 s
/// instead of 16.7 min and 2.8 h.
fn short_secs(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a < 1.0 {
        format!("{} ms", num((v * 1e3 * 100.0).round() / 100.0))
    } else {
        format!("{} s", num((v * 100.0).round() / 100.0))
    }
}

/// The y axis of the schedule: logarithmic when the positive values span
/// more than two decades, linear from zero otherwise. Returns the axis and
/// the floor values are clamped to (log axes cannot show zero: a full
/// jitter range drawn down to the floor means "down to zero").
fn schedule_axis(values: &[f64]) -> (YAxis, f64) {
    let hi = values.iter().copied().fold(0.0, f64::max);
    let lo_pos = values
        .iter()
        .copied()
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    if hi > 0.0 && lo_pos.is_finite() && hi / lo_pos > 100.0 {
        // A decade under the smallest value, so the first point does not
        // sit on the axis.
        let lo = 10f64.powf((lo_pos / 2.0).log10().floor());
        let top = 10f64.powf((hi * 1.2).log10().ceil()).min(hi * 3.0);
        (YAxis::Log(lo, top), lo)
    } else {
        (
            YAxis::Linear(0.0, if hi > 0.0 { hi * 1.12 } else { 1.0 }),
            0.0,
        )
    }
}

/// What the schedule figure shows, in seconds per retry.
struct SchedulePoints {
    k: Vec<f64>,
    delay: Vec<f64>,
    min: Vec<f64>,
    max: Vec<f64>,
    cum: Vec<f64>,
}

impl SchedulePoints {
    /// The points of the schedule's `rows`.
    fn of(rows: &[crate::policy::schedule::Row]) -> SchedulePoints {
        let s = |ns: u64| ns as f64 / 1e9;
        SchedulePoints {
            k: rows.iter().map(|r| f64::from(r.retry)).collect(),
            delay: rows.iter().map(|r| s(r.delay)).collect(),
            min: rows.iter().map(|r| s(r.min)).collect(),
            max: rows.iter().map(|r| s(r.max)).collect(),
            cum: rows.iter().map(|r| s(r.cumulative)).collect(),
        }
    }
}

const DELAY_COLOR: RGBColor = RGBColor(0, 114, 178);
const CUM_COLOR: RGBColor = RGBColor(213, 94, 0);

fn draw_schedule<Y>(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    x: Range<f64>,
    y: Y,
    (floor, top): (f64, f64),
    p: &SchedulePoints,
    random: bool,
) -> Result<()>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let n = p.k.len();
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_left(16)
        .margin_right(36)
        .x_label_area_size(56)
        .y_label_area_size(96)
        .build_cartesian_2d(x, y)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_desc("retry number (retry k is attempt k + 1)")
        .y_desc("seconds")
        .label_style(text(16))
        .axis_desc_style(text(19))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215))
        .x_labels(n.clamp(2, 25))
        .x_label_formatter(&|v| {
            if (v - v.round()).abs() < 1e-9 && *v >= 1.0 {
                format!("{}", v.round() as u64)
            } else {
                String::new()
            }
        })
        .y_labels(10)
        .y_label_formatter(&|v| short_secs(*v))
        .draw()
        .map_err(pe)?;
    let cl = move |v: f64| v.max(floor).min(top);
    if random {
        let mut poly: Vec<(f64, f64)> = p.k.iter().zip(&p.max).map(|(&x, &y)| (x, cl(y))).collect();
        poly.extend(p.k.iter().zip(&p.min).rev().map(|(&x, &y)| (x, cl(y))));
        chart
            .draw_series(std::iter::once(Polygon::new(
                poly,
                DELAY_COLOR.mix(0.2).filled(),
            )))
            .map_err(pe)?;
    }
    let cum: Vec<(f64, f64)> = p.k.iter().zip(&p.cum).map(|(&x, &y)| (x, cl(y))).collect();
    chart
        .draw_series(std::iter::once(DashedPathElement::new(
            cum.clone(),
            10,
            6,
            CUM_COLOR.stroke_width(2),
        )))
        .map_err(pe)?;
    chart
        .draw_series(cum.iter().map(|&c| Circle::new(c, 4, CUM_COLOR.filled())))
        .map_err(pe)?;
    let delay: Vec<(f64, f64)> =
        p.k.iter()
            .zip(&p.delay)
            .map(|(&x, &y)| (x, cl(y)))
            .collect();
    wide_line(&mut chart, &delay, DELAY_COLOR, 3)?;
    chart
        .draw_series(
            delay
                .iter()
                .map(|&c| Circle::new(c, 5, DELAY_COLOR.filled())),
        )
        .map_err(pe)?;
    Ok(())
}

/// Draws `schedule.png`: the nominal delay before each retry with the range
/// jitter can move it over as a band, and the nominal time since the first
/// attempt as a dashed second series, on one axis in seconds (logarithmic
/// when the values span more than two decades). `title` names the policy,
/// `subtitle` gives its settings, `note` (the total retry window) goes
/// under the legend.
pub fn schedule_png(
    path: &Path,
    title: &str,
    subtitle: &str,
    note: &str,
    rows: &[crate::policy::schedule::Row],
    random: bool,
) -> Result<()> {
    ensure_font()?;
    let p = SchedulePoints::of(rows);
    let n = rows.len().max(1) as f64;
    let x = 0.5..n + 0.5;
    let mut all = p.delay.clone();
    all.extend(&p.cum);
    if random {
        all.extend(&p.min);
        all.extend(&p.max);
    }
    let (y, floor) = schedule_axis(&all);
    let legend = schedule_legend(random);
    let mut buf = vec![0u8; WIDTH as usize * HEIGHT as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(pe)?;
        let (_, need) = legend_layout(&root, &legend)?;
        let need = need + 40;
        let (upper, bottom) = root.split_vertically(HEIGHT - need.min(HEIGHT / 3));
        let (head, area) = upper.split_vertically(78);
        let centre = Pos::new(HPos::Center, VPos::Top);
        head.draw_text(title, &text(28).pos(centre), ((WIDTH / 2) as i32, 8))
            .map_err(pe)?;
        head.draw_text(
            subtitle,
            &text(17).color(&RGBColor(70, 70, 70)).pos(centre),
            ((WIDTH / 2) as i32, 48),
        )
        .map_err(pe)?;
        match y {
            YAxis::Linear(lo, hi) => draw_schedule(&area, x, lo..hi, (floor, hi), &p, random)?,
            YAxis::Log(lo, hi) => {
                draw_schedule(&area, x, super::log_axis(lo, hi), (floor, hi), &p, random)?
            }
        }
        let (at, _) = legend_layout(&bottom, &legend)?;
        draw_legend(&bottom, &legend, &at)?;
        let (_, bh) = bottom.dim_in_pixel();
        bottom
            .draw_text(note, &text(17), (70, bh as i32 - 34))
            .map_err(pe)?;
        root.present().map_err(pe)?;
    }
    save_schedule(path, &buf)
}

/// Writes the figure's pixels as the PNG `path`: a lone file in the
/// user's directory, replaced whole or not at all.
fn save_schedule(path: &Path, buf: &[u8]) -> Result<()> {
    crate::report::staging::replace_file(path, |tmp| {
        write_png(tmp, buf, (WIDTH, HEIGHT)).map_err(|e| match e {
            // Name the file the user asked for, not the temporary one.
            OutputError::Write { source, .. } => OutputError::Write {
                path: path.to_path_buf(),
                source,
            },
            OutputError::Encode { source, .. } => OutputError::Encode {
                path: path.to_path_buf(),
                source,
            },
            other => other,
        })
    })
}

/// The legend of the figure.
fn schedule_legend(random: bool) -> Vec<(Swatch, String)> {
    let mut legend = vec![(
        Swatch::Line(DELAY_COLOR),
        "delay before the retry (nominal)".to_string(),
    )];
    if random {
        legend.push((
            Swatch::Fill(DELAY_COLOR),
            "range jitter can move the delay over".into(),
        ));
    }
    legend.push((
        Swatch::Dashed(CUM_COLOR),
        "time since the first attempt (sum of nominal delays)".into(),
    ));
    legend
}
