//! `heatmap.png` of `retrysim sweep`: when exactly two parameters vary, one
//! coloured grid per policy, a cell per point coloured by the success rate
//! (red 0 % → yellow 50 % → green 100 %) and labelled with it; an `M` marks
//! a point that stayed metastable (never recovered after its fault).
//!
//! It reads only the sweep's table, so `merge` draws the same picture from
//! shard outputs. Text uses the embedded font of [`super::plot`].

use super::format::tick_labels;
use super::output::{save_png, PngCompression};
use super::plot::{ensure_font, FONT};
use super::OutputError;
use crate::sweep::{Manifest, Table};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Height of one row of panels in pixels.
const PANEL_H: u32 = 520;
/// Height of the title strip.
const TITLE_H: u32 = 70;

/// Drawing either succeeds or says which file or figure failed.
type Result<T> = std::result::Result<T, OutputError>;

/// A plotting backend's error, kept as the source.
fn pe<E: std::error::Error + Send + Sync + 'static>(e: E) -> OutputError {
    OutputError::Draw {
        what: "heatmap",
        source: Box::new(e),
    }
}

/// Red → yellow → green for a success rate in [0, 1].
pub fn success_color(s: f64) -> RGBColor {
    let s = if s.is_finite() {
        s.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let lerp = |a: (f64, f64, f64), b: (f64, f64, f64), t: f64| {
        RGBColor(
            (a.0 + (b.0 - a.0) * t).round() as u8,
            (a.1 + (b.1 - a.1) * t).round() as u8,
            (a.2 + (b.2 - a.2) * t).round() as u8,
        )
    };
    let (red, yellow, green) = (
        (215.0, 48.0, 39.0),
        (254.0, 224.0, 139.0),
        (26.0, 152.0, 80.0),
    );
    if s < 0.5 {
        lerp(red, yellow, s * 2.0)
    } else {
        lerp(yellow, green, (s - 0.5) * 2.0)
    }
}

/// The two varying axes (row axis, column axis), when exactly two vary.
pub fn varying_pair(m: &Manifest) -> Option<(usize, usize)> {
    let v: Vec<usize> = (0..m.axes.len())
        .filter(|&k| m.axes[k].values.len() > 1)
        .collect();
    (v.len() == 2).then(|| (v[0], v[1]))
}

/// The columns of `sweep.csv` a panel reads.
struct Cols {
    policy: usize,
    success: usize,
    meta: usize,
    /// The row axis's and the column axis's values.
    y: usize,
    x: usize,
}

/// Text in the embedded font at `size`, anchored at (`h`, `v`).
fn label(size: u32, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT, size).into_font().color(&BLACK).pos(Pos::new(h, v))
}

/// Draws the heatmap of `table` into `path`; an error when fewer or more
/// than two parameters vary.
pub fn heatmap_png(path: &Path, m: &Manifest, table: &Table) -> Result<()> {
    let (ya, xa) = varying_pair(m)
        .ok_or_else(|| OutputError::Heatmap("exactly two parameters must vary".into()))?;
    let col = |name: &str| {
        table
            .column(name)
            .ok_or_else(|| OutputError::Heatmap(format!("no column {name}")))
    };
    let cols = Cols {
        policy: col("policy")?,
        success: col("success_rate")?,
        meta: col("metastable")?,
        y: 1 + ya,
        x: 1 + xa,
    };
    let panels = m.policies.len().max(1);
    let per_row = panels.min(3);
    let rows = panels.div_ceil(per_row);
    let height = TITLE_H + PANEL_H * rows as u32;
    ensure_font()?;
    let size = (super::plot::WIDTH, height);
    let mut buf = vec![0u8; size.0 as usize * size.1 as usize * 3];
    let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
    root.fill(&WHITE).map_err(pe)?;
    let (title, body) = root.split_vertically(TITLE_H);
    title
        .draw(&Text::new(
            format!(
                "{}: success rate by {} × {}  (M = stayed metastable, ? = undetermined)",
                m.scenario, m.axes[ya].path, m.axes[xa].path
            ),
            (super::plot::WIDTH as i32 / 2, TITLE_H as i32 / 2),
            label(26, HPos::Center, VPos::Center),
        ))
        .map_err(pe)?;
    let areas = body.split_evenly((rows, per_row));
    for (p, policy) in m.policies.iter().enumerate() {
        draw_panel(&areas[p], policy, m, (ya, xa), table, &cols)?;
    }
    root.present().map_err(pe)?;
    drop((root, title, body, areas));
    save_png(path, &buf, size, PngCompression::Default)
}

/// One policy's panel: a cell per (row value, column value) with its
/// success rate, the tick labels and the axis names.
fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    policy: &str,
    m: &Manifest,
    (ya, xa): (usize, usize),
    table: &Table,
    c: &Cols,
) -> Result<()> {
    let (yv, xv) = (&m.axes[ya].values, &m.axes[xa].values);
    let (w, h) = area.dim_in_pixel();
    let (left, top, right, bottom) = (150i32, 50i32, 20i32, 70i32);
    let cw = (w as i32 - left - right).max(1) as f64 / xv.len() as f64;
    let ch = (h as i32 - top - bottom).max(1) as f64 / yv.len() as f64;
    area.draw(&Text::new(
        policy.to_string(),
        (left + (w as i32 - left - right) / 2, top / 2),
        label(22, HPos::Center, VPos::Center),
    ))
    .map_err(pe)?;
    for row in table.rows.iter().filter(|r| &r[c.policy] == policy) {
        let (Some(yi), Some(xi)) = (
            yv.iter().position(|v| *v == row[c.y]),
            xv.iter().position(|v| *v == row[c.x]),
        ) else {
            continue;
        };
        let cell = (
            left + (xi as f64 * cw) as i32,
            top + ((yv.len() - 1 - yi) as f64 * ch) as i32,
            left + ((xi + 1) as f64 * cw) as i32,
            top + ((yv.len() - yi) as f64 * ch) as i32,
        );
        draw_cell(area, cell, &row[c.success], &row[c.meta])?;
    }
    for (i, v) in tick_labels(xv).into_iter().enumerate() {
        let x = left + ((i as f64 + 0.5) * cw) as i32;
        area.draw(&Text::new(
            v,
            (x, h as i32 - bottom + 8),
            label(15, HPos::Center, VPos::Top),
        ))
        .map_err(pe)?;
    }
    for (i, v) in tick_labels(yv).into_iter().enumerate() {
        let y = top + (((yv.len() - 1 - i) as f64 + 0.5) * ch) as i32;
        area.draw(&Text::new(
            v,
            (left - 8, y),
            label(15, HPos::Right, VPos::Center),
        ))
        .map_err(pe)?;
    }
    area.draw(&Text::new(
        m.axes[xa].path.clone(),
        (left + (w as i32 - left - right) / 2, h as i32 - 22),
        label(17, HPos::Center, VPos::Center),
    ))
    .map_err(pe)?;
    area.draw(&Text::new(
        m.axes[ya].path.clone(),
        (8, top - 18),
        label(17, HPos::Left, VPos::Center),
    ))
    .map_err(pe)
}

/// One cell at pixels `(x0, y0, x1, y1)`: coloured by its `success` rate
/// and labelled with it, ` M` when it stayed metastable, ` ?` when
/// undetermined. The first row value is drawn at the bottom, like a y
/// axis.
fn draw_cell(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    (x0, y0, x1, y1): (i32, i32, i32, i32),
    success: &str,
    meta: &str,
) -> Result<()> {
    let s: f64 = success.parse().unwrap_or(f64::NAN);
    area.draw(&Rectangle::new(
        [(x0, y0), (x1, y1)],
        success_color(s).filled(),
    ))
    .map_err(pe)?;
    area.draw(&Rectangle::new([(x0, y0), (x1, y1)], WHITE.stroke_width(1)))
        .map_err(pe)?;
    let mut text = if s.is_finite() {
        format!("{}%", (s * 100.0).round())
    } else {
        "-".into()
    };
    match meta {
        "true" => text.push_str(" M"),
        "undetermined" => text.push_str(" ?"),
        _ => {}
    }
    area.draw(&Text::new(
        text,
        ((x0 + x1) / 2, (y0 + y1) / 2),
        label(15, HPos::Center, VPos::Center),
    ))
    .map_err(pe)?;
    Ok(())
}
