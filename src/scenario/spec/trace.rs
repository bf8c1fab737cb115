//! `traffic.trace`: traffic taken from a file, either a rate series (the
//! CSV a Prometheus or Grafana panel exports) that drives a
//! non-homogeneous Poisson process, or a list of arrival times replayed
//! exactly.
//!
//! The file is a CSV with a header. Its timestamps are epoch seconds,
//! epoch milliseconds, or a date and time (RFC 3339, or `YYYY-MM-DD
//! HH:MM:SS` taken as UTC); the first row decides which, for the whole
//! file: a number of at least 10¹¹ is milliseconds, a smaller one seconds
//! (epoch or from any origin). The run's time 0 is the first timestamp
//! plus `start`.
//!
//! A rate series becomes the traffic's `rate` (the series' mean over the
//! run's part of it) and `profile` (each point's share of that mean), so
//! the rate is linear between the points and inverted exactly, as any
//! profile is (see `crate::model::traffic`); everything that reads the
//! rate (estimates, warnings, `assess`) reads the trace's. An empty, `NaN`
//! or `null` value is a gap: the row is skipped, and the rate runs
//! linearly from the point before the gap to the point after it.
//!
//! An arrivals trace keeps its times ([`Loaded::arrivals`]), which
//! `crate::model::replay` sends one request each, and sets `rate` to
//! their mean rate, for the estimates and the report's words.

use super::{Arrival, Mode, ProfilePoint, TrafficSpec};
use crate::decimal::Given;
use crate::time::{Dur, Nanos, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Most rows a rate trace may hold (a day at one point a second).
pub const MAX_RATE_ROWS: usize = 100_000;

/// Most rows an arrivals trace may hold.
pub const MAX_ARRIVAL_ROWS: usize = 1_000_000;

/// What the trace file holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// A rate series: requests per second at each timestamp.
    #[default]
    Rate,
    /// One row per arrival: its timestamp.
    Arrivals,
}

/// The `traffic.trace` block as written, and the file's content once the
/// scenario is loaded.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// The CSV file, relative to the scenario's folder.
    pub file: String,
    /// A rate series (default) or a list of arrival times.
    #[serde(default)]
    pub kind: TraceKind,
    /// The header of the timestamp column (default: the first column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_column: Option<String>,
    /// The header of the rate column (default: the file's other column,
    /// when it has two).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_column: Option<String>,
    /// Multiplies the rate (default 1).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale: f64,
    /// How far into the trace the run starts (default 0: at the first
    /// timestamp).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start: Dur,
    /// The file's content, once read (never written back).
    #[serde(skip)]
    pub loaded: Option<Arc<Loaded>>,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

fn is_zero(d: &Dur) -> bool {
    d.ns() == 0
}

/// What a trace file gave: its checksum (part of the scenario's
/// fingerprint) and, for an arrivals trace, the times.
#[derive(Debug, PartialEq)]
pub struct Loaded {
    /// CRC-32 of the file's text.
    pub digest: u32,
    /// Arrival times from the run's start, in order (empty for a rate
    /// trace).
    pub arrivals: Arc<[Nanos]>,
}

impl TraceSpec {
    /// The arrival times to replay, for an arrivals trace that was read.
    pub fn replayed(&self) -> Option<Arc<[Nanos]>> {
        match (self.kind, &self.loaded) {
            (TraceKind::Arrivals, Some(l)) => Some(l.arrivals.clone()),
            _ => None,
        }
    }
}

/// A problem with the trace file at a 1-based line and column.
#[derive(Clone, Debug, PartialEq)]
pub struct FileProblem {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What was expected and what was found.
    pub message: String,
}

fn at(line: usize, column: usize, message: impl Into<String>) -> FileProblem {
    FileProblem {
        line,
        column,
        message: message.into(),
    }
}

/// What is wrong with a trace: in its file, or with a field of the
/// scenario (the path, the fields it was checked against, and why).
#[derive(Clone, Debug, PartialEq)]
pub enum TraceProblem {
    /// In the file.
    File(FileProblem),
    /// A scenario field.
    Field(String, Vec<String>, String),
}

impl From<FileProblem> for TraceProblem {
    fn from(p: FileProblem) -> TraceProblem {
        TraceProblem::File(p)
    }
}

/// One cell of a CSV file: its text (unquoted) and its 1-based column.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// The text, without surrounding quotes or white space.
    pub text: String,
    /// Where it starts.
    pub column: usize,
}

/// A CSV file with a header: the header's cells and every other non-blank
/// line's, with its 1-based line number.
#[derive(Clone, Debug, PartialEq)]
pub struct Csv {
    /// The header's line and cells.
    pub header: (usize, Vec<Cell>),
    /// The data rows.
    pub rows: Vec<(usize, Vec<Cell>)>,
}

/// Splits one line into cells (commas outside double quotes; `""` in a
/// quoted cell is a quote).
fn cells(line: &str, n: usize) -> Result<Vec<Cell>, FileProblem> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = vec![];
    let mut i = 0;
    loop {
        while i < chars.len() && chars[i] == ' ' {
            i += 1;
        }
        let column = i + 1;
        let mut text = String::new();
        if chars.get(i) == Some(&'"') {
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(at(n, column, "a quoted cell is not closed")),
                    Some('"') if chars.get(i + 1) == Some(&'"') => {
                        text.push('"');
                        i += 2;
                    }
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some(&c) => {
                        text.push(c);
                        i += 1;
                    }
                }
            }
            while i < chars.len() && chars[i] == ' ' {
                i += 1;
            }
            if i < chars.len() && chars[i] != ',' {
                return Err(at(n, i + 1, "expected a comma after a quoted cell"));
            }
        } else {
            while i < chars.len() && chars[i] != ',' {
                text.push(chars[i]);
                i += 1;
            }
        }
        out.push(Cell {
            text: text.trim().to_string(),
            column,
        });
        if i >= chars.len() {
            return Ok(out);
        }
        i += 1; // the comma
    }
}

/// Reads a CSV file with a header, at most `max_rows` data rows; every
/// row must have the header's number of cells. Blank lines are skipped.
pub fn read_csv(text: &str, max_rows: usize) -> Result<Csv, FileProblem> {
    let mut header: Option<(usize, Vec<Cell>)> = None;
    let mut rows = vec![];
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let row = cells(line, n)?;
        match &header {
            None => header = Some((n, row)),
            Some((_, h)) => {
                if row.len() != h.len() {
                    let col = row
                        .get(h.len())
                        .map_or(line.chars().count() + 1, |c| c.column);
                    return Err(at(
                        n,
                        col,
                        format!(
                            "expected {} cells, as the header has, found {}",
                            h.len(),
                            row.len()
                        ),
                    ));
                }
                if rows.len() == max_rows {
                    return Err(at(
                        n,
                        1,
                        format!("more than {max_rows} rows: at most {max_rows} are read"),
                    ));
                }
                rows.push((n, row));
            }
        }
    }
    let header = header.ok_or_else(|| at(1, 1, "expected a header line, found an empty file"))?;
    Ok(Csv { header, rows })
}

/// The index of the column named `wanted` (exactly, or else ignoring
/// case when that names one column), or what is wrong.
fn column_named(csv: &Csv, wanted: &str, field: &str) -> Result<usize, FileProblem> {
    let (line, h) = &csv.header;
    if let Some(i) = h.iter().position(|c| c.text == wanted) {
        return Ok(i);
    }
    let folded: Vec<usize> = (0..h.len())
        .filter(|&i| h[i].text.eq_ignore_ascii_case(wanted))
        .collect();
    if let [i] = folded[..] {
        return Ok(i);
    }
    Err(at(
        *line,
        1,
        format!(
            "no column named {wanted:?} (`{field}`): the header has {}",
            names(h)
        ),
    ))
}

fn names(h: &[Cell]) -> String {
    h.iter()
        .map(|c| format!("{:?}", c.text))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a file writes its timestamps, decided by its first one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stamp {
    Seconds,
    Millis,
    Date,
}

impl Stamp {
    fn words(self) -> &'static str {
        match self {
            Stamp::Seconds => "a number of seconds",
            Stamp::Millis => "a number of epoch milliseconds",
            Stamp::Date => "a date and time (2026-12-06T02:00:00Z or 2026-12-06 02:00:00)",
        }
    }
}

/// Numbers from this on are epoch milliseconds (10¹¹ s is in the year
/// 5138; 10¹¹ ms is in 1973).
const MILLIS_FROM: u128 = 100_000_000_000;

/// A plain decimal number (`1733450400`, `1733450400.25`) as its whole
/// part and its fraction in billionths; `None` if it is not one.
fn decimal(text: &str) -> Option<(u128, u128)> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || whole.len() > 30
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let mut billionths = 0u128;
    for b in frac.bytes().chain(std::iter::repeat(b'0')).take(9) {
        billionths = billionths * 10 + u128::from(b - b'0');
    }
    Some((whole.parse().ok()?, billionths))
}

/// Days from 1970-01-01 to the date (proleptic Gregorian), after Howard
/// Hinnant's `days_from_civil`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A date and time (`2026-12-06T02:00:00Z`, `2026-12-06 02:00:00.5`,
/// `2026-12-06T03:00:00+01:00`) in nanoseconds since the epoch (UTC when
/// no offset is given).
fn date_time(text: &str) -> Option<i128> {
    let b = text.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&mo) || d < 1 || d > month_days[mo as usize - 1] {
        return None;
    }
    if h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut frac = 0i128;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let (_, f) = decimal(&format!("0.{}", &r[..digits]))?;
        frac = f as i128;
        rest = &r[digits..];
    }
    let offset_min: i64 = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let r = &rest[1..];
            let (oh, om) = match r.len() {
                5 if r.as_bytes()[2] == b':' => (&r[0..2], &r[3..5]),
                4 => (&r[0..2], &r[2..4]),
                2 => (&r[0..2], "00"),
                _ => return None,
            };
            if !(oh.bytes().chain(om.bytes())).all(|c| c.is_ascii_digit()) {
                return None;
            }
            let (oh, om): (i64, i64) = (oh.parse().ok()?, om.parse().ok()?);
            if oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 60 + om)
        }
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_min * 60;
    Some(i128::from(secs) * i128::from(NS_PER_SEC) + frac)
}

/// A timestamp cell in nanoseconds, in the file's way of writing them
/// (`stamp`, decided by the first row when `None`).
fn timestamp(cell: &Cell, line: usize, stamp: &mut Option<Stamp>) -> Result<i128, FileProblem> {
    let before = *stamp;
    let wrong = |found: &str| {
        let want = match before {
            Some(s) => format!("{}, as the first row's", s.words()),
            None => "a timestamp: epoch seconds or milliseconds, or a date and time \
                     (2026-12-06T02:00:00Z or 2026-12-06 02:00:00)"
                .to_string(),
        };
        at(line, cell.column, format!("expected {want}, found {found}"))
    };
    if cell.text.is_empty() {
        return Err(wrong("an empty cell"));
    }
    let found = || format!("{:?}", super::super::error::shown(&cell.text));
    let as_number = decimal(&cell.text);
    let here = match &as_number {
        Some((whole, _)) if *whole >= MILLIS_FROM => Stamp::Millis,
        Some(_) => Stamp::Seconds,
        None => Stamp::Date,
    };
    let kind = *stamp.get_or_insert(here);
    match (kind, as_number) {
        (Stamp::Date, None) => date_time(&cell.text).ok_or_else(|| wrong(&found())),
        (Stamp::Seconds, Some((w, f))) => Ok((w * u128::from(NS_PER_SEC) + f) as i128),
        (Stamp::Millis, Some((w, f))) if w < u128::from(u64::MAX) / 1_000_000 => {
            Ok((w * 1_000_000 + f / 1000) as i128)
        }
        _ => Err(wrong(&found())),
    }
}

/// Whether a value cell is a gap: empty, `NaN`, `null` (as exports write
/// a missing sample).
fn is_gap(text: &str) -> bool {
    text.is_empty()
        || ["nan", "null", "none", "undefined", "-"]
            .iter()
            .any(|g| text.eq_ignore_ascii_case(g))
}

/// The time column's index.
fn time_index(csv: &Csv, spec: &TraceSpec) -> Result<usize, FileProblem> {
    match &spec.time_column {
        Some(name) => column_named(csv, name, "time_column"),
        None => Ok(0),
    }
}

/// Refuses a file whose first line is data, not a header.
fn needs_header(csv: &Csv, time: usize) -> Result<(), FileProblem> {
    let (line, h) = &csv.header;
    let mut probe = None;
    if let Some(c) = h.get(time) {
        if timestamp(c, *line, &mut probe).is_ok() {
            return Err(at(
                *line,
                c.column,
                format!(
                    "expected a header naming the columns (e.g. `time,value`), found data \
                     ({:?})",
                    c.text
                ),
            ));
        }
    }
    Ok(())
}

/// The rate series of a CSV file: (ns from the first timestamp, requests
/// per second) for each row that is not a gap, times strictly increasing.
pub fn rate_points(text: &str, spec: &TraceSpec) -> Result<Vec<(i128, f64)>, FileProblem> {
    let csv = read_csv(text, MAX_RATE_ROWS)?;
    let time = time_index(&csv, spec)?;
    needs_header(&csv, time)?;
    let value = value_index(&csv, spec, time)?;
    let mut stamp = None;
    let mut first: Option<i128> = None;
    let mut last: Option<(i128, usize)> = None;
    let mut out = vec![];
    for (line, row) in &csv.rows {
        let t = timestamp(&row[time], *line, &mut stamp)?;
        if let Some((prev, prev_line)) = last {
            if t <= prev {
                return Err(at(
                    *line,
                    row[time].column,
                    format!(
                        "{:?} is not after line {prev_line}'s time: timestamps must increase",
                        row[time].text
                    ),
                ));
            }
        }
        last = Some((t, *line));
        let origin = *first.get_or_insert(t);
        let Some(r) = rate_cell(*line, &row[value])? else {
            continue;
        };
        out.push((t - origin, r));
    }
    if out.is_empty() {
        return Err(at(
            csv.header.0,
            1,
            "no rate: the file has no row with a value",
        ));
    }
    Ok(out)
}

/// The rate's column index: `value_column`, or else the one that is not
/// the time's in a file of two columns; never the time's own.
fn value_index(csv: &Csv, spec: &TraceSpec, time: usize) -> Result<usize, FileProblem> {
    let (hline, h) = &csv.header;
    let value = match &spec.value_column {
        Some(name) => column_named(csv, name, "value_column")?,
        None if h.len() == 2 => 1 - time,
        None => {
            return Err(at(
                *hline,
                1,
                format!(
                    "{} columns ({}): name the rate's with `value_column`",
                    h.len(),
                    names(h)
                ),
            ))
        }
    };
    if value == time {
        return Err(at(
            *hline,
            h[time].column,
            "the time and the value are the same column",
        ));
    }
    Ok(value)
}

/// The rate in a value `cell` on `line`: `None` for a gap (empty, NaN,
/// null), else a finite number of requests per second >= 0.
fn rate_cell(line: usize, cell: &Cell) -> Result<Option<f64>, FileProblem> {
    if is_gap(&cell.text) {
        return Ok(None);
    }
    let r: f64 = cell.text.parse().map_err(|_| {
        at(
            line,
            cell.column,
            format!(
                "expected a rate (requests per second, a number >= 0; empty, NaN or null \
                 for a gap), found {:?}",
                cell.text
            ),
        )
    })?;
    if r.is_infinite() || r < 0.0 {
        return Err(at(
            line,
            cell.column,
            format!(
                "{} is not a rate: requests per second are a finite number >= 0",
                Given(r)
            ),
        ));
    }
    if r.is_nan() {
        return Ok(None);
    }
    Ok(Some(r))
}

/// The arrival times of a CSV file, in ns from the first one, in order
/// (equal times allowed).
pub fn arrival_times(text: &str, spec: &TraceSpec) -> Result<Vec<i128>, FileProblem> {
    let csv = read_csv(text, MAX_ARRIVAL_ROWS)?;
    let time = time_index(&csv, spec)?;
    needs_header(&csv, time)?;
    let mut stamp = None;
    let mut out: Vec<i128> = Vec::with_capacity(csv.rows.len());
    let mut prev_line = 0;
    for (line, row) in &csv.rows {
        let t = timestamp(&row[time], *line, &mut stamp)?;
        if out.last().is_some_and(|&p| t < p) {
            return Err(at(
                *line,
                row[time].column,
                format!(
                    "{:?} is before line {prev_line}'s time: arrivals must be in time order",
                    row[time].text
                ),
            ));
        }
        prev_line = *line;
        out.push(t);
    }
    let Some(&origin) = out.first() else {
        return Err(at(
            csv.header.0,
            1,
            "no arrivals: the file has only a header",
        ));
    };
    for t in &mut out {
        *t -= origin;
    }
    Ok(out)
}

/// The checks of the trace against the rest of the traffic block, before
/// the file is read: (path, related paths, message) of each problem.
pub fn conflicts(t: &TrafficSpec) -> Vec<(String, Vec<String>, String)> {
    let Some(tr) = &t.trace else {
        return vec![];
    };
    let mut out = vec![];
    let mut err =
        |path: &str, related: &[&str], message: String| out.push(conflict(path, related, message));
    if t.mode != Mode::Open {
        err(
            "traffic.trace",
            &["traffic.mode"],
            "needs open mode (arrivals on their own clock, which the trace gives); remove it or \
             set mode \"open\""
                .into(),
        );
    }
    if !t.profile.is_empty() {
        err(
            "traffic.profile",
            &["traffic.trace"],
            "has no meaning with a trace, which gives the rate over time; remove it".into(),
        );
    }
    if !(tr.scale.is_finite() && tr.scale > 0.0) {
        err(
            "traffic.trace.scale",
            &[],
            format!("{} is not a multiplier greater than 0", Given(tr.scale)),
        );
    }
    match tr.kind {
        TraceKind::Rate => {
            if t.rate.is_some() && tr.scale != 1.0 {
                err(
                    "traffic.trace.scale",
                    &["traffic.rate"],
                    "give either `traffic.rate` (the mean rate the trace is scaled to) or \
                     `traffic.trace.scale`, not both"
                        .into(),
                );
            }
        }
        TraceKind::Arrivals => out.extend(arrivals_conflicts(t, tr)),
    }
    out
}

/// Refuses a rate trace whose mean `rate` over the run is past what the
/// simulator takes. Told here, about the file: `traffic.rate` is not in
/// the scenario, the trace gives it.
fn within_rate_limit(tr: &TraceSpec, rate: f64) -> Result<(), TraceProblem> {
    let most = crate::scenario::validate::MAX_RATE;
    if rate <= most {
        return Ok(());
    }
    Err(TraceProblem::Field(
        "traffic.trace".into(),
        vec![],
        format!(
            "{}: its mean rate over the run, {} requests per second{}, is more than the \
             {most:e} the simulator takes; check the file's rate values",
            tr.file,
            Given(rate),
            if tr.scale == 1.0 {
                String::new()
            } else {
                format!(" (× scale {})", Given(tr.scale))
            },
        ),
    ))
}

/// One problem [`conflicts`] finds: (path, related paths, message).
fn conflict(path: &str, related: &[&str], message: String) -> (String, Vec<String>, String) {
    (
        path.to_string(),
        related.iter().map(|s| s.to_string()).collect(),
        message,
    )
}

/// The fields a trace of arrivals has no use for, since it is replayed as
/// it is: a rate, a scale, a value column and an arrival shape.
fn arrivals_conflicts(t: &TrafficSpec, tr: &TraceSpec) -> Vec<(String, Vec<String>, String)> {
    let mut out = vec![];
    let mut err =
        |path: &str, related: &[&str], message: String| out.push(conflict(path, related, message));
    let replayed = "an arrivals trace is replayed as it is";
    if t.rate.is_some() {
        err(
            "traffic.rate",
            &["traffic.trace.kind"],
            format!("has no meaning with a trace of arrivals ({replayed}); remove it"),
        );
    }
    if tr.scale != 1.0 {
        err(
            "traffic.trace.scale",
            &["traffic.trace.kind"],
            format!("has no meaning for a trace of arrivals ({replayed}); remove it"),
        );
    }
    if tr.value_column.is_some() {
        err(
            "traffic.trace.value_column",
            &["traffic.trace.kind"],
            "has no meaning for a trace of arrivals, which reads only its times; \
             remove it"
                .into(),
        );
    }
    if t.arrival != Arrival::Poisson {
        err(
            "traffic.arrival",
            &["traffic.trace.kind"],
            format!("has no meaning with a trace of arrivals ({replayed}); remove it"),
        );
    }
    out
}

/// Reads the trace file's `text` into the traffic block: a rate series
/// into `rate` and `profile`, arrivals into the trace's [`Loaded`] (and
/// their mean rate into `rate`). [`conflicts`] must have found nothing.
pub fn apply(t: &mut TrafficSpec, text: &str) -> Result<(), TraceProblem> {
    let Some(tr) = t.trace.as_mut() else {
        return Ok(());
    };
    let digest = crc32fast::hash(text.as_bytes());
    let start = i128::from(tr.start.ns());
    let past_end = |last: i128| {
        TraceProblem::Field(
            "traffic.trace.start".into(),
            vec![],
            format!(
                "{} is past the trace's last timestamp ({} after its first)",
                tr.start,
                Dur(last.max(0) as Nanos)
            ),
        )
    };
    match tr.kind {
        TraceKind::Rate => {
            let points = rate_points(text, tr)?;
            let last = points[points.len() - 1].0;
            if start > last {
                return Err(past_end(last));
            }
            let (rate, profile) = shape(&points, start, tr.scale, t.rate);
            if rate.is_nan() || rate <= 0.0 {
                return Err(TraceProblem::Field(
                    "traffic.trace".into(),
                    vec![],
                    "the trace's rate is 0 throughout the run: there would be no traffic".into(),
                ));
            }
            within_rate_limit(tr, rate)?;
            t.rate = Some(rate);
            t.profile = profile;
            tr.loaded = Some(Arc::new(Loaded {
                digest,
                arrivals: Arc::from([]),
            }));
        }
        TraceKind::Arrivals => {
            let times = arrival_times(text, tr)?;
            let last = times[times.len() - 1];
            if start > last {
                return Err(past_end(last));
            }
            let arrivals: Vec<Nanos> = times
                .iter()
                .filter(|&&x| x >= start)
                .map(|&x| (x - start).min(i128::from(Nanos::MAX)) as Nanos)
                .collect();
            let span = crate::time::secs(arrivals[arrivals.len() - 1]);
            let n = arrivals.len() as f64;
            t.rate = Some(if span > 0.0 { n / span } else { n });
            tr.loaded = Some(Arc::new(Loaded {
                digest,
                arrivals: arrivals.into(),
            }));
        }
    }
    Ok(())
}

/// The rate and the profile of a rate series (`points`, ns from the
/// first timestamp) shifted by `start` ns and multiplied by `scale`, or
/// scaled so that its mean is `mean` when that is given: the mean over
/// the run's part of the trace (from time 0 to its last point) is the
/// rate, each point's share of it the profile's scale.
fn shape(
    points: &[(i128, f64)],
    start: i128,
    scale: f64,
    mean: Option<f64>,
) -> (f64, Vec<ProfilePoint>) {
    let mut kept: Vec<(f64, f64)> = vec![];
    for (i, &(t, r)) in points.iter().enumerate() {
        let t = t - start;
        if t < 0 {
            continue;
        }
        if kept.is_empty() && t > 0 && i > 0 {
            // The rate at time 0, on the segment that crosses it.
            let (t0, r0) = points[i - 1];
            let t0 = t0 - start;
            let share = (-t0) as f64 / (t - t0) as f64;
            kept.push((0.0, r0 + (r - r0) * share));
        }
        kept.push((t as f64, r));
    }
    let integral: f64 = kept
        .windows(2)
        .map(|w| (w[1].1 + w[0].1) / 2.0 * (w[1].0 - w[0].0))
        .sum();
    let span = kept.last().map_or(0.0, |k| k.0) - kept.first().map_or(0.0, |k| k.0);
    let trace_mean = if span > 0.0 {
        integral / span
    } else {
        kept.first().map_or(0.0, |k| k.1)
    };
    let rate = mean.unwrap_or(trace_mean * scale);
    if trace_mean.is_nan() || trace_mean <= 0.0 {
        return (0.0, vec![]);
    }
    let profile = if kept.len() == 1 {
        vec![]
    } else {
        kept.iter()
            .map(|&(t, r)| ProfilePoint {
                at: Dur(t as Nanos),
                scale: r / trace_mean,
            })
            .collect()
    };
    (rate, profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(kind: TraceKind) -> TraceSpec {
        TraceSpec {
            file: "t.csv".into(),
            kind,
            time_column: None,
            value_column: None,
            scale: 1.0,
            start: Dur(0),
            loaded: None,
        }
    }

    #[test]
    fn timestamps_in_every_documented_form() {
        let mut s = None;
        let c = |t: &str| Cell {
            text: t.into(),
            column: 1,
        };
        assert_eq!(
            timestamp(&c("1733450400"), 2, &mut s),
            Ok(1_733_450_400 * 1_000_000_000)
        );
        assert_eq!(s, Some(Stamp::Seconds));
        assert_eq!(timestamp(&c("15.25"), 3, &mut s), Ok(15_250_000_000));
        let mut s = None;
        assert_eq!(
            timestamp(&c("1733450400123"), 2, &mut s),
            Ok(1_733_450_400_123_000_000)
        );
        assert_eq!(s, Some(Stamp::Millis));
        let mut s = None;
        let rfc = timestamp(&c("2024-12-06T02:00:00Z"), 2, &mut s).unwrap();
        assert_eq!(rfc, 1_733_450_400 * 1_000_000_000);
        assert_eq!(timestamp(&c("2024-12-06 02:00:00"), 3, &mut s), Ok(rfc));
        assert_eq!(
            timestamp(&c("2024-12-06T03:00:00+01:00"), 4, &mut s),
            Ok(rfc)
        );
        assert_eq!(
            timestamp(&c("2024-12-06T02:00:00.5Z"), 5, &mut s),
            Ok(rfc + 500_000_000)
        );
        // Another form than the first row's, or no timestamp at all.
        let e = timestamp(&c("1733450400"), 6, &mut s).unwrap_err();
        assert_eq!((e.line, e.column), (6, 1));
        assert!(e.message.contains("as the first row's"), "{e:?}");
        assert!(timestamp(&c("2024-02-30 00:00:00"), 7, &mut s).is_err());
        assert!(timestamp(&c("yesterday"), 7, &mut None).is_err());
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    }

    #[test]
    fn a_rate_series_with_gaps_skips_them() {
        let text = "\"Time\",\"rps\"\n0,10\n15,\n30,NaN\n45,null\n60,40\n";
        let p = rate_points(text, &spec(TraceKind::Rate)).unwrap();
        assert_eq!(p, vec![(0, 10.0), (60_000_000_000, 40.0)]);
        // Mean 25/s over the minute; the profile's shares of it.
        let (rate, profile) = shape(&p, 0, 2.0, None);
        assert_eq!(rate, 50.0);
        assert_eq!(profile[0].scale, 0.4);
        assert_eq!(profile[1].scale, 1.6);
        // Shifted by 30 s: the rate at 0 is read off the segment.
        let (rate, profile) = shape(&p, 30_000_000_000, 1.0, None);
        assert_eq!(profile[0].at, Dur(0));
        assert_eq!(rate, (25.0 + 40.0) / 2.0);
        assert_eq!(profile[0].scale * rate, 25.0);
        // A mean given instead of the scale.
        assert_eq!(shape(&p, 0, 1.0, Some(100.0)).0, 100.0);
    }

    #[test]
    fn bad_rate_files_say_where_and_what() {
        let s = spec(TraceKind::Rate);
        let e = rate_points("0,10\n15,20\n", &s).unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.message.contains("expected a header"), "{e:?}");
        let e = rate_points("t,v\n0,10\n15,20\n10,5\n", &s).unwrap_err();
        assert_eq!((e.line, e.column), (4, 1));
        assert!(e.message.contains("not after line 3"), "{e:?}");
        let e = rate_points("t,v\n0,10\n15,-2\n", &s).unwrap_err();
        assert_eq!((e.line, e.column), (3, 4));
        let e = rate_points("t,v\n0,10\n15,fast\n", &s).unwrap_err();
        assert!(e.message.contains("expected a rate"), "{e:?}");
        let named = TraceSpec {
            value_column: Some("qps".into()),
            ..spec(TraceKind::Rate)
        };
        let e = rate_points("t,v\n0,10\n", &named).unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.message.contains("no column named \"qps\""), "{e:?}");
        let e = rate_points("t,a,b\n0,1,2\n", &s).unwrap_err();
        assert!(e.message.contains("value_column"), "{e:?}");
        let e = rate_points("t,v\n0,10,3\n", &s).unwrap_err();
        assert_eq!((e.line, e.column), (2, 6));
        let e = rate_points("t,v\n0,\n", &s).unwrap_err();
        assert!(e.message.contains("no row with a value"), "{e:?}");
    }

    #[test]
    fn arrivals_are_kept_exactly_and_in_order() {
        let s = spec(TraceKind::Arrivals);
        let t = arrival_times("ts\n100.5\n100.5\n101.000000001\n", &s).unwrap();
        assert_eq!(t, vec![0, 0, 500_000_001]);
        let e = arrival_times("ts\n100\n99\n", &s).unwrap_err();
        assert_eq!((e.line, e.column), (3, 1));
        assert!(e.message.contains("time order"), "{e:?}");
        let e = arrival_times("ts\n", &s).unwrap_err();
        assert!(e.message.contains("only a header"), "{e:?}");
    }

    #[test]
    fn quoted_cells_and_crlf_are_read() {
        let csv = read_csv("\"a, b\",\"c\"\"d\"\r\n 1 , 2\r\n", 10).unwrap();
        assert_eq!(csv.header.1[0].text, "a, b");
        assert_eq!(csv.header.1[1].text, "c\"d");
        assert_eq!(csv.rows[0].1[1].text, "2");
        assert_eq!(csv.rows[0].1[1].column, 6);
        assert!(read_csv("\"a,b\n", 10).is_err());
        let e = read_csv("a\n1\n2\n3\n", 2).unwrap_err();
        assert_eq!(e.line, 4);
    }
}
