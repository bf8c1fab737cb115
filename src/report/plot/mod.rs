//! The PNG figures: what they share (the embedded font, colours, legends,
//! fault windows, the chart with its bands and the PNG encoder) here, one
//! file per figure: `load.png` (`load.rs`), `recovery.png` (`recovery.rs`),
//! `attempts.png` (`attempts.rs`) and `schedule.png` (`schedule.rs`).
//!
//! Text is drawn with the DejaVu Sans font embedded in the binary
//! (`assets/fonts`, Bitstream Vera licence) and registered with plotters'
//! `ab_glyph` renderer, so a machine without fonts renders the same pixels.
//! Nothing here reads the clock or iterates a hash map, so identical inputs
//! give identical PNG bytes.
//!
//! Layout choices, for a figure pasted into a design doc: the legend sits
//! in its own strip under the chart so it never hides data; each policy
//! keeps one colour (by its index in the scenario) in both figures and in
//! the HTML page; fault windows are shaded and named; when retries push the
//! peak far above capacity the load axis turns logarithmic so the
//! pre-fault baseline stays readable; with replications each policy is a
//! mean line inside a min–max band.
//!
//! Fine bins (10 ms, to see retry waves) give long series: each is reduced
//! to first/min/max/last per pixel column before drawing (M4), which draws
//! the same pixels. Measured on 3 policies × 180,000 bins (30 min at
//! 10 ms): load.png + recovery.png take 0.24 s instead of 1.46 s
//! (tests/it/report_waves.rs prints it). Wide lines are drawn one segment at a
//! time: plotters' miter joins turn a noisy wide polyline into spikes.

use super::format::human_secs;
use super::RunReport;
use crate::decimal::num;
use crate::metrics::aggregate::{band, by_policy, BandPoint, Col, PolicySummary};
use crate::metrics::{BinRow, Recovery, RunResult};
use crate::report::OutputError;
use crate::scenario::spec::FaultSpec;
use crate::scenario::Scenario;
use crate::time::secs;
use plotters::coord::combinators::{BindKeyPointMethod, LogCoord, WithKeyPointMethod};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::{CoordTranslate, Shift};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

mod attempts;
mod load;
mod recovery;
mod schedule;

pub use attempts::attempts_png;
pub use load::load_png;
pub use recovery::recovery_png;
pub use schedule::schedule_png;

/// Drawing either succeeds or says which file or figure failed.
type Result<T> = std::result::Result<T, OutputError>;

/// Width of both figures in pixels.
pub const WIDTH: u32 = 1400;
/// Height of both figures in pixels (legend strip included).
pub const HEIGHT: u32 = 820;

/// The family name the embedded font is registered under.
pub(crate) const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Ratio of peak load to capacity above which the load axis is logarithmic.
const LOG_THRESHOLD: f64 = 5.0;

/// Registers the embedded font once per process.
pub(crate) fn ensure_font() -> Result<()> {
    static OK: OnceLock<bool> = OnceLock::new();
    let ok = *OK.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(OutputError::Font)
    }
}

/// A plotting backend's error, kept as the source.
fn pe<E: std::error::Error + Send + Sync + 'static>(e: E) -> OutputError {
    OutputError::Draw {
        what: "plot",
        source: Box::new(e),
    }
}

/// The colour of the policy at `index` in the scenario, the same in every
/// figure and in the HTML page (colour-blind-safe qualitative palettes:
/// sixteen colours, then they repeat).
pub fn policy_color(index: usize) -> RGBColor {
    // Okabe and Ito's eight colours, then Paul Tol's "muted" scheme for a
    // ninth to sixteenth policy, so no two of sixteen share a colour.
    const P: [(u8, u8, u8); 16] = [
        (0, 114, 178),   // blue
        (213, 94, 0),    // vermillion
        (0, 158, 115),   // bluish green
        (204, 121, 167), // reddish purple
        (230, 159, 0),   // orange
        (86, 180, 233),  // sky blue
        (120, 94, 60),   // brown
        (60, 60, 60),    // dark grey
        (51, 34, 136),   // indigo
        (204, 102, 119), // rose
        (17, 119, 51),   // green
        (221, 204, 119), // sand
        (136, 34, 85),   // wine
        (136, 204, 238), // cyan
        (153, 153, 51),  // olive
        (170, 68, 153),  // purple
    ];
    let (r, g, b) = P[index % P.len()];
    RGBColor(r, g, b)
}

/// The CSS form of [`policy_color`].
pub fn policy_css(index: usize) -> String {
    let c = policy_color(index);
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

fn fault_color(f: &FaultSpec) -> RGBColor {
    match f {
        FaultSpec::Outage { .. } => RGBColor(220, 50, 47),
        FaultSpec::Blackhole { .. } => RGBColor(60, 60, 60),
        FaultSpec::Slowdown { .. } => RGBColor(230, 140, 0),
        FaultSpec::Capacity { .. } => RGBColor(130, 80, 180),
        FaultSpec::Errors { .. } => RGBColor(180, 150, 0),
        FaultSpec::Crash { .. } => RGBColor(150, 20, 20),
    }
}

/// Short numbers for axis ticks: 950, 1.2k, 35k, 2M.
fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", num((v / 1e6 * 100.0).round() / 100.0))
    } else if a >= 1e3 {
        format!("{}k", num((v / 1e3 * 100.0).round() / 100.0))
    } else {
        num((v * 1000.0).round() / 1000.0)
    }
}

/// A log axis from `lo` to `hi` whose grid lines (and labels) are each
/// drawn once: plotters' own log axis lists 10^k twice on a span of about
/// one decade (as 10 × 10^(k−1) and as the next decade), which draws its
/// label twice, darker than the others.
pub(super) fn log_axis(lo: f64, hi: f64) -> WithKeyPointMethod<LogCoord<f64>> {
    let points: LogCoord<f64> = (lo..hi).log_scale().into();
    (lo..hi).log_scale().with_key_point_func(move |n| {
        let mut v = points.key_points(n);
        v.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
        v
    })
}

/// Whether `v` is 1, 2 or 5 × 10^k (log-axis labels).
fn is_125(v: f64) -> bool {
    if v <= 0.0 {
        return false;
    }
    let m = v / 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|c| (m - c).abs() < 1e-6 * c)
}

fn text(size: u32) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK)
}

/// One policy's runs, in replication order.
struct PolicyRuns<'a> {
    index: usize,
    name: String,
    runs: Vec<&'a RunResult>,
}

fn group(results: &[RunResult]) -> Vec<PolicyRuns<'_>> {
    by_policy(results, |r| r.policy_index)
        .into_iter()
        .map(|(index, runs)| PolicyRuns {
            index,
            name: runs[0].policy.clone(),
            runs,
        })
        .collect()
}

/// Splits a series with gaps into drawable pieces.
fn pieces(points: &[Option<BandPoint>]) -> Vec<Vec<BandPoint>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for p in points {
        match p {
            Some(p) => cur.push(p.clone()),
            None => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What a legend entry's swatch looks like.
enum Swatch {
    Line(RGBColor),
    Dashed(RGBColor),
    Fill(RGBColor),
    Dot(RGBColor),
    Cross(RGBColor),
}

/// Lays out legend entries left to right, wrapping; returns each entry's
/// top-left corner and the total height needed.
fn legend_layout(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    entries: &[(Swatch, String)],
) -> Result<(Vec<(i32, i32)>, u32)> {
    let style = text(17);
    let (w, _) = area.dim_in_pixel();
    let (x0, row_h, swatch_w) = (70i32, 28i32, 44i32);
    let (mut x, mut y) = (x0, 8i32);
    let mut at = Vec::new();
    for (_, label) in entries {
        let (tw, _) = area.estimate_text_size(label, &style).map_err(pe)?;
        let ew = swatch_w + 8 + tw as i32 + 28;
        if x > x0 && x + ew > w as i32 - 20 {
            x = x0;
            y += row_h;
        }
        at.push((x, y));
        x += ew;
    }
    Ok((at, (y + row_h + 8) as u32))
}

fn draw_legend(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    entries: &[(Swatch, String)],
    at: &[(i32, i32)],
) -> Result<()> {
    let style = text(17);
    for ((swatch, label), &(x, y)) in entries.iter().zip(at) {
        let mid = y + 10;
        let (a, b) = ((x, mid), (x + 44, mid));
        match swatch {
            Swatch::Line(c) => area
                .draw(&PathElement::new(vec![a, b], c.stroke_width(3)))
                .map_err(pe)?,
            Swatch::Dashed(c) => area
                .draw(&DashedPathElement::new(vec![a, b], 7, 5, c.stroke_width(2)))
                .map_err(pe)?,
            Swatch::Fill(c) => area
                .draw(&Rectangle::new(
                    [(x, y + 2), (x + 44, y + 18)],
                    c.mix(0.25).filled(),
                ))
                .map_err(pe)?,
            Swatch::Dot(c) => area
                .draw(&Circle::new((x + 22, mid), 6, c.filled()))
                .map_err(pe)?,
            Swatch::Cross(c) => area
                .draw(&Cross::new((x + 22, mid), 7, c.stroke_width(3)))
                .map_err(pe)?,
        }
        area.draw_text(label, &style, (x + 52, y)).map_err(pe)?;
    }
    Ok(())
}

/// Fault windows in seconds with their label; faults covering most of the
/// run are background conditions, named but not shaded.
struct FaultBox {
    start: f64,
    end: f64,
    label: String,
    color: RGBColor,
    shaded: bool,
}

fn fault_boxes(scenario: &Scenario, run_end: f64) -> Vec<FaultBox> {
    let spike = scenario
        .spec()
        .traffic
        .load_spike(scenario.spec().duration.ns())
        .map(|(s, e)| {
            let (start, end) = (secs(s), secs(e));
            FaultBox {
                start,
                end,
                label: format!("load spike {}–{} s", num(start), num(end)),
                color: RGBColor(120, 60, 170),
                shaded: true,
            }
        });
    scenario
        .spec()
        .faults
        .iter()
        .map(|f| {
            let (s, e) = f.window();
            let (start, end) = (secs(s), secs(e).min(run_end));
            let shaded = end - start < 0.5 * run_end;
            let what = match f.tier() {
                Some(tier) => format!("{tier}: {}", f.label()),
                None => f.label(),
            };
            let label = if shaded {
                format!("{what} {}–{} s", num(start), num(end))
            } else {
                format!("{what} (whole run, not shaded)")
            };
            FaultBox {
                start,
                end,
                label,
                color: fault_color(f),
                shaded,
            }
        })
        .chain(spike)
        .collect()
}

/// The x range shared by both figures: the run, in seconds.
fn x_range(scenario: &Scenario, results: &[RunResult]) -> Range<f64> {
    let bin = scenario.spec().bin.secs();
    let last = results
        .iter()
        .filter_map(|r| r.bins().last())
        .map(|b| b.t_s + bin)
        .fold(0.0, f64::max);
    let end = scenario.spec().duration.secs().max(last);
    0.0..if end > 0.0 { end } else { 1.0 }
}

/// A per-policy series to draw: band pieces and the policy's colour.
struct Series {
    color: RGBColor,
    pieces: Vec<Vec<BandPoint>>,
    with_band: bool,
}

/// A reference line (demand, capacity, threshold).
struct RefLine {
    points: Vec<(f64, f64)>,
    color: RGBColor,
    dashed: bool,
}

/// A marker with its label: a dot where a policy recovered, a cross where
/// one never did.
struct Mark {
    x: f64,
    y: f64,
    color: RGBColor,
    cross: bool,
    label: String,
}

/// One row of alert marks: the periods during which `label` (a policy
/// and a rule) fired, in any replication.
struct AlertRow {
    label: String,
    color: RGBColor,
    periods: Vec<(f64, f64)>,
}

/// Everything one chart shows, independent of the axis type.
struct ChartData<'s> {
    title: String,
    y_desc: String,
    faults: &'s [FaultBox],
    series: Vec<Series>,
    refs: Vec<RefLine>,
    marks: Vec<Mark>,
    /// Alert firing periods, one row each under the fault labels.
    alerts: Vec<AlertRow>,
    /// Values below this are drawn at it (log axes).
    floor: f64,
    /// The y axis is logarithmic.
    log: bool,
}

/// Draws a polyline `width` pixels wide. Plotters joins the segments of a
/// wide path with miter joins, which shoot long spikes out of sharp
/// turns (a noisy series with fine bins is all sharp turns); drawing each
/// segment alone, with a round dot at each joint, gives clean lines.
fn wide_line<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    pts: &[(f64, f64)],
    color: RGBColor,
    width: u32,
) -> Result<()>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    CT: CoordTranslate<From = (f64, f64)>,
{
    if width <= 1 || pts.len() < 2 {
        chart
            .draw_series(std::iter::once(PathElement::new(
                pts.to_vec(),
                color.stroke_width(width),
            )))
            .map_err(pe)?;
        return Ok(());
    }
    chart
        .draw_series(
            pts.windows(2)
                .map(|w| PathElement::new(vec![w[0], w[1]], color.stroke_width(width))),
        )
        .map_err(pe)?;
    if width >= 3 {
        chart
            .draw_series(
                pts[1..pts.len() - 1]
                    .iter()
                    .map(|&p| Circle::new(p, width / 2, color.filled())),
            )
            .map_err(pe)?;
    }
    Ok(())
}

fn draw_chart<Y>(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    x: Range<f64>,
    y: Y,
    y_top: f64,
    d: &ChartData<'_>,
) -> Result<Range<i32>>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let log = d.log;
    let mut chart = ChartBuilder::on(area)
        .caption(&d.title, text(28))
        .margin_top(12)
        .margin_left(16)
        .margin_right(36)
        .x_label_area_size(56)
        .y_label_area_size(96)
        .build_cartesian_2d(x.clone(), y)
        .map_err(pe)?;
    chart
        .configure_mesh()
        .x_desc("time since the start of the run (s)")
        .y_desc(d.y_desc.as_str())
        .label_style(text(16))
        .axis_desc_style(text(19))
        // On a log axis plotters puts a grid line (and a label) at every
        // 1..9 × 10^k, plus light lines between them: a grey smear with
        // crowded labels when the axis spans under two decades. Keep the
        // lines at 1..9 × 10^k and label only 1, 2 and 5 × 10^k.
        .light_line_style(if d.log {
            TRANSPARENT.into()
        } else {
            ShapeStyle::from(RGBColor(238, 238, 238))
        })
        .bold_line_style(RGBColor(215, 215, 215))
        .x_labels(12)
        .y_labels(10)
        .y_label_formatter(&|v| {
            if log && !is_125(*v) {
                String::new()
            } else {
                si(*v)
            }
        })
        .x_label_formatter(&|v| num((*v * 1000.0).round() / 1000.0))
        .draw()
        .map_err(pe)?;
    let cl = |v: f64| v.max(d.floor).min(y_top);
    // Fault windows first, under everything.
    draw_faults(&mut chart, d, x.start, y_top)?;
    draw_series(&mut chart, d, &cl)?;
    draw_refs(&mut chart, d, &cl)?;
    draw_marks(&mut chart, d, &cl)?;
    Ok(chart.plotting_area().get_pixel_range().0)
}

/// A chart whose coordinates are (time, value), on any y axis.
type Chart<'a, 'b, CT> = ChartContext<'a, BitMapBackend<'b>, CT>;

/// The fault windows, shaded, and every fault's label at the top left of
/// its window (of the chart, for one that is not shaded).
fn draw_faults<CT>(
    chart: &mut Chart<'_, '_, CT>,
    d: &ChartData<'_>,
    x_start: f64,
    y_top: f64,
) -> Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let floor = d.floor.min(y_top);
    let mut k = 0;
    for f in d.faults.iter().filter(|f| f.shaded) {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(f.start, floor), (f.end, y_top)],
                f.color.mix(0.13).filled(),
            )))
            .map_err(pe)?;
        let at = EmptyElement::at((f.start, y_top))
            + Text::new(f.label.clone(), (5, 6 + 20 * k), text(15).color(&f.color));
        chart.plotting_area().draw(&at).map_err(pe)?;
        k += 1;
    }
    for f in d.faults.iter().filter(|f| !f.shaded) {
        let at = EmptyElement::at((x_start, y_top))
            + Text::new(f.label.clone(), (5, 6 + 20 * k), text(15).color(&f.color));
        chart.plotting_area().draw(&at).map_err(pe)?;
        k += 1;
    }
    Ok(())
}

/// Each series' min–max band, then its mean line; `cl` clamps a value to
/// the axis.
fn draw_series<CT>(
    chart: &mut Chart<'_, '_, CT>,
    d: &ChartData<'_>,
    cl: &dyn Fn(f64) -> f64,
) -> Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for s in &d.series {
        if !s.with_band {
            continue;
        }
        for p in &s.pieces {
            let mut poly: Vec<(f64, f64)> = p.iter().map(|b| (b.t_s, cl(b.max))).collect();
            poly.extend(p.iter().rev().map(|b| (b.t_s, cl(b.min))));
            chart
                .draw_series(std::iter::once(Polygon::new(
                    poly,
                    s.color.mix(0.18).filled(),
                )))
                .map_err(pe)?;
        }
    }
    // Earlier policies are drawn wider, so where policies coincide (before
    // the fault, typically) each one still shows as a coloured edge.
    let n = d.series.len() as u32;
    for (i, s) in d.series.iter().enumerate() {
        let width = (2 + 2 * (n - 1 - i as u32)).min(7);
        for p in &s.pieces {
            let pts: Vec<(f64, f64)> = p.iter().map(|b| (b.t_s, cl(b.mean))).collect();
            wide_line(chart, &pts, s.color, width)?;
        }
    }
    Ok(())
}

/// The reference lines (demand, capacity, a threshold).
fn draw_refs<CT>(
    chart: &mut Chart<'_, '_, CT>,
    d: &ChartData<'_>,
    cl: &dyn Fn(f64) -> f64,
) -> Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for RefLine {
        points,
        color,
        dashed,
    } in &d.refs
    {
        let pts: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (t, cl(v))).collect();
        if *dashed {
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    pts,
                    10,
                    6,
                    color.stroke_width(2),
                )))
                .map_err(pe)?;
        } else {
            wide_line(chart, &pts, *color, 2)?;
        }
    }
    Ok(())
}

/// The marks (a recovery, a "never recovered" cross) with their labels,
/// staggered so that labels of nearby marks do not collide.
fn draw_marks<CT>(
    chart: &mut Chart<'_, '_, CT>,
    d: &ChartData<'_>,
    cl: &dyn Fn(f64) -> f64,
) -> Result<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let (mut right, mut left) = (0, 0);
    for Mark {
        x: mx,
        y: my,
        color,
        cross,
        label,
    } in &d.marks
    {
        let (mx, my) = (*mx, cl(*my));
        if *cross {
            chart
                .draw_series(std::iter::once(Cross::new(
                    (mx, my),
                    8,
                    color.stroke_width(3),
                )))
                .map_err(pe)?;
            let style = text(15)
                .color(color)
                .pos(Pos::new(HPos::Right, VPos::Center));
            let at = EmptyElement::at((mx, my))
                + Text::new(label.clone(), (-14, -16 - 18 * right), style);
            chart.plotting_area().draw(&at).map_err(pe)?;
            right += 1;
        } else {
            chart
                .draw_series(std::iter::once(Circle::new((mx, my), 7, color.filled())))
                .map_err(pe)?;
            chart
                .draw_series(std::iter::once(Circle::new(
                    (mx, my),
                    7,
                    BLACK.stroke_width(1),
                )))
                .map_err(pe)?;
            let at = EmptyElement::at((mx, my))
                + Text::new(label.clone(), (10, 8 + 20 * left), text(15).color(color));
            chart.plotting_area().draw(&at).map_err(pe)?;
            left += 1;
        }
    }
    Ok(())
}

/// Encodes an RGB buffer into a new PNG at `path` at the best
/// compression (the figures go into docs and HTML pages: about a third
/// smaller than plotters' default encoding, and just as deterministic).
fn write_png(path: &Path, rgb: &[u8], size: (u32, u32)) -> Result<()> {
    super::output::save_png(path, rgb, size, super::output::PngCompression::Best)
}

/// Draws `d` with its legend into a new PNG at `path`; `y` chooses linear
/// or logarithmic.
fn render(
    path: &Path,
    size: (u32, u32),
    x: Range<f64>,
    y: YAxis,
    d: &ChartData<'_>,
    legend: &[(Swatch, String)],
) -> Result<()> {
    render_with_panels(path, size, x, y, d, legend, &[])
}

/// One more chart under the main one (a downstream tier's load).
struct Panel<'s> {
    y: YAxis,
    d: ChartData<'s>,
}

/// Height of each extra panel of [`render_with_panels`] (pixels).
const PANEL_HEIGHT: u32 = 380;

/// [`render`], with `panels` stacked under the main chart (the image
/// grows by [`PANEL_HEIGHT`] each) and the legend at the bottom.
fn render_with_panels(
    path: &Path,
    (width, main_height): (u32, u32),
    x: Range<f64>,
    y: YAxis,
    d: &ChartData<'_>,
    legend: &[(Swatch, String)],
    panels: &[Panel<'_>],
) -> Result<()> {
    let height = main_height + PANEL_HEIGHT * panels.len() as u32;
    ensure_font()?;
    let mut buf = vec![0u8; width as usize * height as usize * 3];
    {
        let full = BitMapBackend::with_buffer(&mut buf, (width, height)).into_drawing_area();
        full.fill(&WHITE).map_err(pe)?;
        let (root, lower) = full.split_vertically(main_height);
        for (i, p) in panels.iter().enumerate() {
            let area = lower
                .clone()
                .shrink((0, PANEL_HEIGHT * i as u32), (width, PANEL_HEIGHT));
            match p.y {
                YAxis::Linear(lo, hi) => draw_chart(&area, x.clone(), lo..hi, hi, &p.d)?,
                YAxis::Log(lo, hi) => draw_chart(&area, x.clone(), log_axis(lo, hi), hi, &p.d)?,
            };
        }
        let height = main_height;
        let (_, need) = legend_layout(&root, legend)?;
        let (top, bottom) = root.split_vertically(height - need.min(height / 3));
        let (at, _) = legend_layout(&bottom, legend)?;
        let band_h = if d.alerts.is_empty() {
            0
        } else {
            (ALERT_BAND_TOP + ALERT_ROW * d.alerts.len() as u32 + 6).min(height / 3)
        };
        let (_, top_h) = top.dim_in_pixel();
        let (chart_area, band) = top.split_vertically(top_h - band_h);
        let px = match y {
            YAxis::Linear(lo, hi) => draw_chart(&chart_area, x.clone(), lo..hi, hi, d)?,
            YAxis::Log(lo, hi) => draw_chart(&chart_area, x.clone(), log_axis(lo, hi), hi, d)?,
        };
        if band_h > 0 {
            draw_alert_band(&band, px, &x, &d.alerts)?;
        }
        draw_legend(&bottom, legend, &at)?;
        full.present().map_err(pe)?;
    }
    write_png(path, &buf, (width, height))
}

enum YAxis {
    Linear(f64, f64),
    Log(f64, f64),
}

/// Height of the alert band's heading and of each of its rows (pixels).
const ALERT_BAND_TOP: u32 = 26;
const ALERT_ROW: u32 = 17;

/// The alert band under the load chart: one row per policy and rule that
/// fired, a strip over each firing period on the chart's time axis
/// (`px`: the chart's plotting area, in pixels), the row's name next to
/// its first strip (before it when there is room, else after the last).
fn draw_alert_band(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    px: Range<i32>,
    x: &Range<f64>,
    rows: &[AlertRow],
) -> Result<()> {
    let span = (x.end - x.start).max(f64::MIN_POSITIVE);
    let to_px =
        |t: f64| px.start + ((t - x.start) / span * (px.end - px.start) as f64).round() as i32;
    let (_, h) = area.dim_in_pixel();
    area.draw(&Rectangle::new(
        [(px.start, 2), (px.end, h as i32 - 2)],
        RGBColor(248, 248, 248).filled(),
    ))
    .map_err(pe)?;
    area.draw_text(
        "alerts firing (policy: rule), on the same time axis",
        &text(15).color(&RGBColor(70, 70, 70)),
        (px.start + 4, 5),
    )
    .map_err(pe)?;
    let style = text(13);
    // The rows that fit; when some do not, the last place says how many
    // are left out (alerts.csv has every one).
    let fit = (h.saturating_sub(ALERT_BAND_TOP) / ALERT_ROW) as usize;
    let shown = if rows.len() > fit {
        fit.saturating_sub(1)
    } else {
        rows.len()
    };
    if shown < rows.len() && fit > 0 {
        let y = (ALERT_BAND_TOP + ALERT_ROW * shown as u32) as i32;
        area.draw_text(
            &format!(
                "… and {} more (alerts.csv lists every firing period)",
                rows.len() - shown
            ),
            &style.color(&RGBColor(70, 70, 70)),
            (px.start + 4, y + 1),
        )
        .map_err(pe)?;
    }
    for (i, a) in rows.iter().take(shown).enumerate() {
        let y = (ALERT_BAND_TOP + ALERT_ROW * i as u32) as i32;
        for &(from, to) in &a.periods {
            let (l, r) = (to_px(from), to_px(to).max(to_px(from) + 2));
            area.draw(&Rectangle::new([(l, y + 5), (r, y + 12)], a.color.filled()))
                .map_err(pe)?;
        }
        let (Some(first), Some(last)) = (a.periods.first(), a.periods.last()) else {
            continue;
        };
        let (tw, _) = area.estimate_text_size(&a.label, &style).map_err(pe)?;
        let tw = tw as i32;
        let before = to_px(first.0) - 6;
        let after = to_px(last.1) + 6;
        let at = if before - tw >= px.start {
            before - tw
        } else if after + tw <= px.end {
            after
        } else {
            // No room beside the strips: the label goes over them on a
            // pale ground, so the strip does not strike it through.
            area.draw(&Rectangle::new(
                [(px.start + 1, y), (px.start + 4 + tw, y + 15)],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(pe)?;
            px.start + 2
        };
        area.draw_text(&a.label, &style.color(&a.color), (at, y + 1))
            .map_err(pe)?;
    }
    Ok(())
}

/// Pixel columns a series is reduced to before drawing (about the plot
/// area's width).
const DRAW_COLUMNS: usize = 1300;

/// Reduces a series with many points per pixel column to at most four
/// points per column: the first, the lowest, the highest and the last, in
/// time order (M4 aggregation). The drawn line covers the same pixels as
/// the full series, so a retry wave narrower than a pixel still reaches its
/// peak, while drawing 180,000 bins costs no more than drawing 5,000. The
/// band of a kept point is widened to its column's whole min–max range.
fn downsample(points: Vec<BandPoint>, x: &Range<f64>, columns: usize) -> Vec<BandPoint> {
    if points.len() <= 2 * columns {
        return points;
    }
    let span = (x.end - x.start).max(f64::MIN_POSITIVE);
    let col = |p: &BandPoint| ((p.t_s - x.start) / span * columns as f64).floor() as i64;
    let mut out = Vec::with_capacity(4 * columns + 4);
    let mut i = 0;
    while i < points.len() {
        let c = col(&points[i]);
        let mut j = i + 1;
        while j < points.len() && col(&points[j]) == c {
            j += 1;
        }
        let b = &points[i..j];
        let (mut lo, mut hi) = (0, 0);
        for (k, p) in b.iter().enumerate() {
            if p.mean < b[lo].mean {
                lo = k;
            }
            if p.mean > b[hi].mean {
                hi = k;
            }
        }
        let min = b.iter().map(|p| p.min).fold(f64::INFINITY, f64::min);
        let max = b.iter().map(|p| p.max).fold(f64::NEG_INFINITY, f64::max);
        let mut keep = [0, lo, hi, b.len() - 1];
        keep.sort_unstable();
        let mut last = usize::MAX;
        for k in keep {
            if k != last {
                out.push(BandPoint {
                    t_s: b[k].t_s,
                    mean: b[k].mean,
                    min,
                    max,
                });
                last = k;
            }
        }
        i = j;
    }
    out
}

fn series_of(
    groups: &[PolicyRuns<'_>],
    x: &Range<f64>,
    value: impl Fn(&BinRow) -> Option<f64> + Copy,
) -> Vec<Series> {
    groups
        .iter()
        .map(|g| Series {
            color: policy_color(g.index),
            pieces: pieces(&band(&g.runs, value))
                .into_iter()
                .map(|p| downsample(p, x, DRAW_COLUMNS))
                .collect(),
            with_band: g.runs.len() > 1,
        })
        .collect()
}

fn max_of(series: &[Series], f: impl Fn(&BandPoint) -> f64) -> f64 {
    series
        .iter()
        .flat_map(|s| s.pieces.iter().flatten())
        .map(f)
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(si(950.0), "950");
        assert_eq!(si(1200.0), "1.2k");
        assert_eq!(si(35_000.0), "35k");
        assert_eq!(si(2_000_000.0), "2M");
        assert_eq!(si(0.5), "0.5");
    }

    #[test]
    fn a_log_axis_lists_each_value_once() {
        // plotters' own axis lists 10k twice on a one-decade span.
        use plotters::coord::ranged1d::BoldPoints;
        let plain: LogCoord<f64> = (1000.0..25_000.0).log_scale().into();
        let twice = plain.key_points(BoldPoints(10));
        assert_eq!(twice.iter().filter(|&&v| v == 10_000.0).count(), 2);
        let once = log_axis(1000.0, 25_000.0).key_points(BoldPoints(10));
        assert_eq!(once.iter().filter(|&&v| v == 10_000.0).count(), 1);
        assert!(once.windows(2).all(|w| w[0] < w[1]), "{once:?}");
        assert_eq!(once.len(), twice.len() - 1);
    }

    #[test]
    fn colours_are_stable_and_css_matches() {
        assert_eq!(policy_css(0), "#0072b2");
        // Sixteen policies get sixteen colours; the seventeenth repeats.
        let css: std::collections::BTreeSet<String> = (0..16).map(policy_css).collect();
        assert_eq!(css.len(), 16);
        assert_eq!(policy_color(16), policy_color(0));
    }
}
