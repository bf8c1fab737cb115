//! The outputs of `retrysim schedule`: the table printed on the terminal,
//! the CSV (`--csv`, on standard output) and `schedule.png` (`--png`).
//! The policy's one-line description is given by the caller (the same
//! words as the HTML report's).

use super::csv_file::{self, int, text, Column};
use crate::decimal::count;
use crate::policy::schedule::{human, Row, Schedule};
use crate::policy::Policy;
use crate::report::OutputError;
use crate::time::{Nanos, NS_PER_SEC};
use std::fmt::Write as _;
use std::path::Path;

/// Seconds with up to nine decimals, trailing zeros trimmed, exact (a
/// whole number of nanoseconds, never rounded); `inf` for a sum past what
/// time can hold.
fn secs_text(ns: Nanos) -> String {
    if ns == Nanos::MAX {
        // A sum that saturated: beyond what time can hold.
        return "inf".into();
    }
    let whole = ns / NS_PER_SEC;
    let frac = ns % NS_PER_SEC;
    if frac == 0 {
        return whole.to_string();
    }
    let f = format!("{frac:09}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// The columns of the schedule's CSV.
const COLUMNS: &[Column<Row>] = &[
    Column {
        name: "attempt",
        cell: |r| int(r.attempt),
    },
    Column {
        name: "retry",
        cell: |r| int(r.retry),
    },
    Column {
        name: "delay_s",
        cell: |r| text(secs_text(r.delay)),
    },
    Column {
        name: "min_s",
        cell: |r| text(secs_text(r.min)),
    },
    Column {
        name: "max_s",
        cell: |r| text(secs_text(r.max)),
    },
    Column {
        name: "cumulative_s",
        cell: |r| text(secs_text(r.cumulative)),
    },
    Column {
        name: "cumulative_min_s",
        cell: |r| text(secs_text(r.cumulative_min)),
    },
    Column {
        name: "cumulative_max_s",
        cell: |r| text(secs_text(r.cumulative_max)),
    },
];

/// Writes the schedule as CSV into `out` (one row per retry, seconds)
/// and returns it.
pub fn write_csv<W: std::io::Write>(out: W, s: &Schedule) -> Result<W, csv::Error> {
    csv_file::write_table(out, COLUMNS, &s.rows)
}

/// The table printed on the terminal: the policy, its `description`, one
/// row per retry (with the range jitter can move it over), and the total
/// retry window.
pub fn table(p: &Policy, description: &str, s: &Schedule) -> String {
    let mut out = format!("policy: {}\n{description}\n", p.name);
    if s.retries == Some(0) {
        out.push_str("no retries: this policy makes one attempt only\n");
        return out;
    }
    let random = p.delay_is_random();
    for line in aligned(&cells(p, s, random)) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str(&window_line(p, s, random));
    out.push('\n');
    out
}

/// The table's cells, the header first. A hedge is not a retry: it goes
/// while the attempts before it may still answer, so the table says when
/// each goes if none answers.
fn cells(p: &Policy, s: &Schedule, random: bool) -> Vec<Vec<String>> {
    let step = if p.hedging.is_some() {
        "hedge"
    } else {
        "retry"
    };
    let mut head = vec!["attempt", step, "delay"];
    if random {
        head.push("with jitter");
    }
    head.push("cumulative");
    if random {
        head.push("cumulative with jitter");
    }
    let mut table = vec![head.iter().map(|h| h.to_string()).collect()];
    for r in &s.rows {
        let mut row = vec![r.attempt.to_string(), r.retry.to_string(), human(r.delay)];
        if random {
            row.push(format!("{} .. {}", human(r.min), human(r.max)));
        }
        row.push(human(r.cumulative));
        if random {
            row.push(format!(
                "{} .. {}",
                human(r.cumulative_min),
                human(r.cumulative_max)
            ));
        }
        table.push(row);
    }
    table
}

/// The rows padded into columns: single values right-aligned, ranges
/// (the columns "with jitter") left-aligned.
fn aligned(table: &[Vec<String>]) -> Vec<String> {
    let widths: Vec<usize> = (0..table[0].len())
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let is_range: Vec<bool> = table[0].iter().map(|h| h.contains("jitter")).collect();
    table
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, w))| {
                    let pad = w - cell.chars().count();
                    if !is_range[i] {
                        format!("{}{cell}", " ".repeat(pad))
                    } else {
                        format!("{cell}{}", " ".repeat(pad))
                    }
                })
                .collect();
            cells.join("  ")
        })
        .collect()
}

/// The lines under the table: how many retries are not shown, and the
/// total retry window (with its range under jitter).
fn window_line(p: &Policy, s: &Schedule, random: bool) -> String {
    let steps = if p.hedging.is_some() {
        "hedges"
    } else {
        "retries"
    };
    let (Some(n), Some(w)) = (s.retries, s.window) else {
        // Both limits must be reached to end the retries: with an
        // attempt limit, it is the duration limit that never is.
        let why = if p.max_attempts.is_some() {
            "the delays never add up to max_retry_duration"
        } else {
            "attempts are unlimited"
        };
        return format!(
            "total retry window: unlimited ({why}; first {} retries shown)",
            s.rows.len()
        );
    };
    let mut out = String::new();
    if (s.rows.len() as u64) < n {
        let more = n - s.rows.len() as u64;
        let _ = writeln!(out, "... {more} more {steps} (--attempts N shows more)");
    }
    let h = human(w);
    let h = if h.ends_with(" s") {
        h
    } else {
        format!("{h} ({} s)", secs_text(w))
    };
    out += &match (p.hedging.is_some(), n) {
        (true, 1) => format!("the hedge is sent after {h} if no attempt answers"),
        (true, _) => format!("all {n} hedges sent within {h} if no attempt answers"),
        (false, 1) => format!("total retry window: {h} over 1 retry"),
        (false, _) => format!("total retry window: {h} over {n} retries"),
    };
    if random {
        if let (Some(lo), Some(hi)) = (s.window_min, s.window_max) {
            out += &format!("; with jitter {} .. {}", human(lo), human(hi));
        }
    }
    out
}

/// The one-line total retry window under the figure.
fn window_note(s: &Schedule) -> String {
    match (s.retries, s.window) {
        (Some(n), Some(w)) => {
            let shown = if (s.rows.len() as u64) < n {
                format!("; the first {} retries are drawn", s.rows.len())
            } else {
                String::new()
            };
            let mut line = format!(
                "total retry window: {} over {}",
                human(w),
                count(n as f64, "retry", "retries")
            );
            if let (Some(lo), Some(hi)) = (s.window_min, s.window_max) {
                if lo != hi {
                    line += &format!(" ({} .. {} with jitter)", human(lo), human(hi));
                }
            }
            line + &shown
        }
        _ => format!(
            "retries are unlimited; the first {} are drawn",
            s.rows.len()
        ),
    }
}

/// Draws `schedule.png` for `policy` into `path` (replaced whole or not at
/// all); `description` goes under the title.
pub fn write_png(
    path: &Path,
    policy: &Policy,
    description: &str,
    s: &Schedule,
) -> Result<(), OutputError> {
    super::plot::schedule_png(
        path,
        &format!("Retry schedule of {}", policy.name),
        description,
        &window_note(s),
        &s.rows,
        policy.delay_is_random(),
    )
}
