//! The files of `retrysim map` (and of `retrysim merge` joining a map's
//! shards): `map.csv`, `map.json` and `map.png` ([`write`]).
//!
//! `map.png` draws one panel per policy, side by side. Each
//! cell is coloured by the share of replications that recovered (red 0 % →
//! yellow 50 % → green 100 %, grey when no run could be judged), a black
//! line runs along the cell edges where the share crosses 50 %, and a
//! ringed dot marks the scenario's own operating point (its own x and y
//! values, placed between the axis values when it falls between them).
//!
//! It reads only the map's manifest and table, so `merge` draws the same
//! picture from shard outputs. Text uses the embedded font of
//! [`super::plot`].

use super::format::{human_secs, tick_labels};
use super::heatmap::success_color;
use super::output::save_grid;
use super::output::{save_png, PngCompression};
use super::plot::{ensure_font, FONT};
use super::staging::Staging;
use super::OutputError;
use crate::decimal::count;
use crate::map::{MapGrid, MapManifest};
use crate::sweep::range::quantity;
use crate::sweep::{Shard, Table};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

/// Every file a map writes (a stale one is removed when not rewritten).
pub const MAP_FILES: &[&str] = &["map.csv", "map.json", "map.png"];

/// Writes `map.csv`, `map.json` and (for a whole map, unless `no_plots`)
/// `map.png` into `stage`, then moves them into place and returns their
/// final paths. A `map.png` left by an earlier map is removed otherwise,
/// so every file there comes from one map.
pub fn write(
    stage: Staging,
    manifest: &MapManifest,
    table: &Table,
    no_plots: bool,
) -> Result<Vec<PathBuf>> {
    let draw = |path: &Path| map_png(path, manifest, table);
    // A map.png left by an earlier, unsharded run would not match: it is
    // removed when a shard is written.
    let png = !no_plots && manifest.shard == Shard::ALL;
    let files = ("map.csv", "map.json", "map.png");
    save_grid(stage, files, table, manifest, png.then_some(&draw as _))
}

/// Width of one policy's panel in pixels.
const PANEL_W: u32 = 520;
/// Height of one panel (labels included).
const PANEL_H: u32 = 600;
/// Height of the title strip.
const TITLE_H: u32 = 60;
/// Height of the legend strip.
const LEGEND_H: u32 = 70;
/// Colour of a cell where no run could be judged.
const UNDETERMINED: RGBColor = RGBColor(200, 200, 200);

/// Drawing either succeeds or says which file or figure failed.
type Result<T> = std::result::Result<T, OutputError>;

/// A plotting backend's error, kept as the source.
fn pe<E: std::error::Error + Send + Sync + 'static>(e: E) -> OutputError {
    OutputError::Draw {
        what: "map",
        source: Box::new(e),
    }
}

/// Where `own` sits on an axis of `values`, as a fractional index: the
/// index of an equal value, else interpolated between the two neighbouring
/// values that bracket it (numbers and durations). `None` when it is not on
/// the axis and outside (or not comparable with) its values.
pub fn position(values: &[String], own: &str) -> Option<f64> {
    if let Some(i) = values.iter().position(|v| v == own) {
        return Some(i as f64);
    }
    let q = quantity(own)?;
    let qs: Vec<f64> = values.iter().map(|v| quantity(v)).collect::<Option<_>>()?;
    if let Some(i) = qs
        .iter()
        .position(|&v| (v - q).abs() <= 1e-12 * v.abs().max(1.0))
    {
        return Some(i as f64);
    }
    qs.windows(2).enumerate().find_map(|(i, w)| {
        let (a, b) = (w[0], w[1]);
        let inside = (a < q && q < b) || (b < q && q < a);
        inside.then(|| i as f64 + (q - a) / (b - a))
    })
}

/// The recovered share of every (policy, cell) in `table`:
/// `shares[policy][cell]`, `None` for an empty cell or one missing.
fn shares(m: &MapManifest, grid: &MapGrid, table: &Table) -> Result<Vec<Vec<Option<f64>>>> {
    let col = |name: &str| {
        table
            .column(name)
            .ok_or_else(|| OutputError::MapPicture(format!("map.csv has no column {name}")))
    };
    let (cp, cx, cy, cs) = (
        col("policy")?,
        col("x")?,
        col("y")?,
        col("recovered_share")?,
    );
    let mut out = vec![vec![None; grid.len()]; m.policies.len()];
    for r in &table.rows {
        let Some(p) = m.policies.iter().position(|p| *p == r[cp]) else {
            continue;
        };
        if let Some(c) = grid.find(&r[cx], &r[cy]) {
            out[p][c] = r[cs].parse::<f64>().ok();
        }
    }
    Ok(out)
}

/// Which labels of `n` to write so at most `room` fit: every k-th, the
/// last always.
fn label_every(n: usize, room: usize) -> usize {
    n.div_ceil(room.max(1)).max(1)
}

/// The drawing area of the map.
type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Text in the embedded font at `size`, anchored at (`h`, `v`).
fn style(size: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK).pos(Pos::new(h, v))
}

/// The largest size up to `size` at which `text` fits in `room` pixels
/// (a map of one policy is narrow, its title as long as any).
fn fit(root: &Area<'_>, text: &str, size: u32, room: i32) -> Result<u32> {
    let mut size = size;
    while size > 9 {
        let (w, _) = root
            .estimate_text_size(text, &(FONT, size).into_font().into())
            .map_err(pe)?;
        if w as i32 <= room {
            break;
        }
        size -= 1;
    }
    Ok(size)
}

/// Draws `text` at `at`.
fn label(root: &Area<'_>, text: String, at: (i32, i32), style: TextStyle<'_>) -> Result<()> {
    root.draw(&Text::new(text, at, style)).map_err(pe)
}

/// Draws the map of `table` into `path`.
pub fn map_png(path: &Path, m: &MapManifest, table: &Table) -> Result<()> {
    let grid = MapGrid {
        x: m.x.clone(),
        y: m.y.clone(),
    };
    let shares = shares(m, &grid, table)?;
    let panels = m.policies.len().max(1) as u32;
    let width = (PANEL_W * panels).max(900);
    let height = TITLE_H + PANEL_H + LEGEND_H;
    ensure_font()?;
    let px = (width, height);
    let mut buf = vec![0u8; px.0 as usize * px.1 as usize * 3];
    let root = BitMapBackend::with_buffer(&mut buf, px).into_drawing_area();
    root.fill(&WHITE).map_err(pe)?;
    draw_title(&root, m, &grid, width)?;
    let own = (
        m.operating_point
            .x
            .as_deref()
            .and_then(|v| position(&grid.x.values, v)),
        m.operating_point
            .y
            .as_deref()
            .and_then(|v| position(&grid.y.values, v)),
    );
    let panel_w = width / panels;
    for (p, policy) in m.policies.iter().enumerate() {
        let at = Panel::new(p as u32 * panel_w, panel_w, &grid);
        label(
            &root,
            policy.clone(),
            ((at.left + at.right) / 2, TITLE_H as i32 + 16),
            style(19, HPos::Center, VPos::Center),
        )?;
        let dot = own
            .0
            .zip(own.1)
            .map(|(ox, oy)| (at.xs(ox + 0.5), at.ys(oy + 0.5)));
        draw_cells(&root, &at, &grid, &shares[p], dot)?;
        draw_boundary(&root, &at, &grid, &shares[p])?;
        draw_axes(&root, &at, &grid)?;
        if let Some(dot) = dot {
            root.draw(&Circle::new(dot, DOT_R, WHITE.filled()))
                .map_err(pe)?;
            root.draw(&Circle::new(dot, DOT_R, BLACK.stroke_width(2)))
                .map_err(pe)?;
            root.draw(&Circle::new(dot, 4, BLACK.filled()))
                .map_err(pe)?;
        }
    }
    draw_legend(&root, m, own.0.zip(own.1).is_some(), width)?;
    root.present().map_err(pe)?;
    drop(root);
    save_png(path, &buf, px, PngCompression::Default)
}

/// The title: the scenario, the recovery deadline, the axes and the
/// replications per cell; a scenario name too long to fit even in small
/// type is cut, with an ellipsis.
fn draw_title(root: &Area<'_>, m: &MapManifest, grid: &MapGrid, width: u32) -> Result<()> {
    let reps = match m.passes.coarse {
        Some(c) => format!(
            "{} per cell, {} near the boundary",
            count(f64::from(c), "replication", "replications"),
            m.passes.replications
        ),
        None => format!(
            "{} per cell",
            count(
                f64::from(m.passes.replications),
                "replication",
                "replications"
            )
        ),
    };
    let within = m
        .recover_within_s
        .map(|w| format!(" within {}", human_secs(w)))
        .unwrap_or_default();
    let title_of = |name: &str| {
        format!(
            "{name}: share of replications that recover{within}, by {} × {} ({reps})",
            grid.x.path, grid.y.path
        )
    };
    let room = width as i32 - 20;
    let mut title = title_of(&m.scenario);
    let mut keep = m.scenario.chars().count();
    while fit(root, &title, 22, room)? < 12 && keep > 8 {
        keep -= 4;
        let cut: String = m.scenario.chars().take(keep).collect();
        title = title_of(&format!("{cut}…"));
    }
    let size = fit(root, &title, 22, room)?;
    label(
        root,
        title,
        (width as i32 / 2, TITLE_H as i32 / 2),
        style(size, HPos::Center, VPos::Center),
    )
}

/// Where one policy's panel sits, in pixels.
struct Panel {
    /// The panel's left edge.
    x_off: i32,
    left: i32,
    top: i32,
    right: i32,
    bottom: i32,
    /// A cell's width and height.
    cw: f64,
    ch: f64,
}

impl Panel {
    /// The panel `panel_w` pixels wide from `x_off`.
    fn new(x_off: u32, panel_w: u32, grid: &MapGrid) -> Panel {
        let x_off = x_off as i32;
        let (left, top, right, bottom) = (
            x_off + 100,
            TITLE_H as i32 + 36,
            x_off + panel_w as i32 - 18,
            (TITLE_H + PANEL_H) as i32 - 64,
        );
        Panel {
            x_off,
            left,
            top,
            right,
            bottom,
            cw: (right - left) as f64 / grid.x.values.len() as f64,
            ch: (bottom - top) as f64 / grid.y.values.len() as f64,
        }
    }

    /// The pixel column at cell column `xi` (fractional).
    fn xs(&self, xi: f64) -> i32 {
        self.left + (xi * self.cw).round() as i32
    }

    /// The pixel row at cell row `yi` (fractional): the first y value is
    /// at the bottom, like an axis.
    fn ys(&self, yi: f64) -> i32 {
        self.bottom - (yi * self.ch).round() as i32
    }
}

/// The operating point's dot's radius, px.
const DOT_R: i32 = 9;

/// Where a cell's label goes: its centre, unless the operating point's
/// `dot` would cover it there, then just below the dot (above it when the
/// cell has no room below), so the label stays readable.
fn label_at(centre: (i32, i32), (y0, y1): (i32, i32), dot: Option<(i32, i32)>) -> (i32, i32) {
    // Half a 13 px label's height and half "100%"'s width, plus a margin.
    const HALF_H: i32 = 8;
    const HALF_W: i32 = 18;
    let Some((dx, dy)) = dot else {
        return centre;
    };
    let covered = (centre.0 - dx).abs() < DOT_R + HALF_W && (centre.1 - dy).abs() < DOT_R + HALF_H;
    if !covered {
        return centre;
    }
    let below = dy + DOT_R + HALF_H + 3;
    let above = dy - DOT_R - HALF_H - 3;
    let y = if below + HALF_H <= y1.max(y0) {
        below
    } else {
        above
    };
    (centre.0, y)
}

/// The cells of one panel, coloured by their share (labelled when there
/// is room, clear of the operating point's `dot`).
fn draw_cells(
    root: &Area<'_>,
    at: &Panel,
    grid: &MapGrid,
    shares: &[Option<f64>],
    dot: Option<(i32, i32)>,
) -> Result<()> {
    let labels = at.cw >= 40.0 && at.ch >= 20.0;
    for (c, &s) in shares.iter().enumerate().take(grid.len()) {
        let (xi, yi) = grid.coords(c);
        let (x0, x1) = (at.xs(xi as f64), at.xs(xi as f64 + 1.0));
        let (y0, y1) = (at.ys(yi as f64 + 1.0), at.ys(yi as f64));
        let fill = s.map_or(UNDETERMINED, success_color);
        root.draw(&Rectangle::new([(x0, y0), (x1, y1)], fill.filled()))
            .map_err(pe)?;
        if at.cw >= 12.0 && at.ch >= 12.0 {
            root.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1)))
                .map_err(pe)?;
        }
        if labels {
            let text = s.map_or("–".to_string(), |s| format!("{}%", (s * 100.0).round()));
            label(
                root,
                text,
                label_at(((x0 + x1) / 2, (y0 + y1) / 2), (y0, y1), dot),
                style(13, HPos::Center, VPos::Center),
            )?;
        }
    }
    Ok(())
}

/// The 50 % boundary: cell edges between a mostly-recovering cell and a
/// mostly-degraded one.
fn draw_boundary(
    root: &Area<'_>,
    at: &Panel,
    grid: &MapGrid,
    shares: &[Option<f64>],
) -> Result<()> {
    let (nx, ny) = (grid.x.values.len(), grid.y.values.len());
    let side = |c: usize| shares[c].map(|s| s >= 0.5);
    let line = BLACK.stroke_width(3);
    for c in 0..grid.len() {
        let (xi, yi) = grid.coords(c);
        let Some(here) = side(c) else { continue };
        if xi + 1 < nx {
            if let Some(there) = side(grid.cell(xi + 1, yi)) {
                if here != there {
                    let x = at.xs(xi as f64 + 1.0);
                    root.draw(&PathElement::new(
                        vec![(x, at.ys(yi as f64)), (x, at.ys(yi as f64 + 1.0))],
                        line,
                    ))
                    .map_err(pe)?;
                }
            }
        }
        if yi + 1 < ny {
            if let Some(there) = side(grid.cell(xi, yi + 1)) {
                if here != there {
                    let y = at.ys(yi as f64 + 1.0);
                    root.draw(&PathElement::new(
                        vec![(at.xs(xi as f64), y), (at.xs(xi as f64 + 1.0), y)],
                        line,
                    ))
                    .map_err(pe)?;
                }
            }
        }
    }
    Ok(())
}

/// The panel's frame, tick labels (at most one per 70 px across and 24 px
/// up) and axis names.
fn draw_axes(root: &Area<'_>, at: &Panel, grid: &MapGrid) -> Result<()> {
    let (nx, ny) = (grid.x.values.len(), grid.y.values.len());
    let (left, top, right, bottom) = (at.left, at.top, at.right, at.bottom);
    root.draw(&Rectangle::new(
        [(left, top), (right, bottom)],
        BLACK.stroke_width(1),
    ))
    .map_err(pe)?;
    let every = label_every(nx, ((right - left) / 70) as usize);
    for (i, v) in tick_labels(&grid.x.values).into_iter().enumerate() {
        if i % every == 0 || i + 1 == nx {
            let xy = (at.xs(i as f64 + 0.5), bottom + 6);
            label(root, v, xy, style(13, HPos::Center, VPos::Top))?;
        }
    }
    let every = label_every(ny, ((bottom - top) / 24) as usize);
    for (i, v) in tick_labels(&grid.y.values).into_iter().enumerate() {
        if i % every == 0 || i + 1 == ny {
            let xy = (left - 6, at.ys(i as f64 + 0.5));
            label(root, v, xy, style(13, HPos::Right, VPos::Center))?;
        }
    }
    label(
        root,
        grid.x.path.clone(),
        ((left + right) / 2, bottom + 40),
        style(15, HPos::Center, VPos::Center),
    )?;
    label(
        root,
        grid.y.path.clone(),
        (at.x_off + 8, top - 14),
        style(14, HPos::Left, VPos::Center),
    )
}

/// The legend: the colour scale and the marks; `on_map` says whether the
/// scenario's own point was drawn.
fn draw_legend(root: &Area<'_>, m: &MapManifest, on_map: bool, width: u32) -> Result<()> {
    let ly = (TITLE_H + PANEL_H) as i32 + 14;
    let (bar_x, bar_w) = (40, 300);
    for i in 0..bar_w {
        let c = success_color(i as f64 / (bar_w - 1) as f64);
        root.draw(&Rectangle::new(
            [(bar_x + i, ly), (bar_x + i + 1, ly + 16)],
            c.filled(),
        ))
        .map_err(pe)?;
    }
    // The end labels align with the bar's ends so they stay on the image.
    for (frac, text, anchor) in [
        (0.0, "0 %: stays degraded", HPos::Left),
        (0.5, "50 %", HPos::Center),
        (1.0, "100 %: recovers", HPos::Right),
    ] {
        root.draw(&Text::new(
            text,
            (bar_x + (frac * bar_w as f64) as i32, ly + 22),
            style(13, anchor, VPos::Top),
        ))
        .map_err(pe)?;
    }
    let note = match (&m.operating_point.x, &m.operating_point.y, on_map) {
        (Some(x), Some(y), true) => format!("● the scenario's own point ({x}, {y})"),
        (Some(x), Some(y), false) => format!("the scenario's own point ({x}, {y}) is off the map"),
        _ => "the scenario does not state both values".to_string(),
    };
    let marks = "black line: 50 % boundary   grey: no run could be judged";
    let (at, room) = (bar_x + bar_w + 60, width as i32 - bar_x - bar_w - 70);
    let one_line = format!("{marks}   {note}");
    let size = fit(root, &one_line, 14, room)?;
    // On one line while it stays legible, else the note under the marks.
    let lines = if size >= 12 {
        vec![(one_line, size, ly + 8)]
    } else {
        let size = fit(root, marks, 14, room)?.min(fit(root, &note, 14, room)?);
        vec![(marks.to_string(), size, ly), (note, size, ly + 20)]
    };
    for (text, size, y) in lines {
        label(root, text, (at, y), style(size, HPos::Left, VPos::Center))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_operating_point_sits_between_axis_values() {
        let rates = v(&["100", "200", "300"]);
        assert_eq!(position(&rates, "200"), Some(1.0));
        assert_eq!(position(&rates, "280"), Some(1.8));
        assert_eq!(position(&rates, "400"), None);
        let durations = v(&["2s", "10s", "1m"]);
        assert_eq!(position(&durations, "10000ms"), Some(1.0));
        assert_eq!(position(&durations, "35s"), Some(1.5));
        assert_eq!(position(&v(&["fifo", "lifo"]), "lifo"), Some(1.0));
        assert_eq!(position(&v(&["fifo", "lifo"]), "x"), None);
    }

    #[test]
    fn a_label_under_the_dot_moves_clear_of_it() {
        // A 60 px tall cell from y 100 to 160, its centre at (50, 130).
        let cell = (100, 160);
        assert_eq!(label_at((50, 130), cell, None), (50, 130));
        // The dot far away (another cell) leaves it at the centre.
        assert_eq!(label_at((50, 130), cell, Some((150, 130))), (50, 130));
        // On the centre: just below the dot, inside the cell.
        let (x, y) = label_at((50, 130), cell, Some((50, 130)));
        assert_eq!(x, 50);
        assert!(y - 8 >= 130 + DOT_R && y + 8 <= 160, "{y}");
        // Near the cell's bottom: above the dot instead.
        let (_, y) = label_at((50, 130), cell, Some((50, 150)));
        assert!(y + 8 <= 150 - DOT_R && y - 8 >= 100, "{y}");
    }

    #[test]
    fn labels_thin_out() {
        assert_eq!(label_every(12, 6), 2);
        assert_eq!(label_every(5, 6), 1);
        assert_eq!(label_every(40, 0), 40);
    }
}
