//! The library's errors and the exit status each means on the command line.
//!
//! - [`InvalidInput`]: the user's scenario, flag or imported configuration
//!   is wrong. Exit status 2. The message names the file (or the flag), the
//!   field path and, where known, the line and column.
//! - [`OutputError`]: a file or stream could not be written (or read back).
//!   Exit status 1. The message names the path; the `std::io::Error` (or
//!   the encoder's error) is kept as the source.
//! - [`RunError`]: a run could not finish — simulated time stopped
//!   advancing (exit status 2, with the settings to change) or the user
//!   pressed Ctrl-C (exit status 130).
//! - [`Error`]: any of them, what the command line receives and maps to
//!   an exit status with [`Error::exit_code`].
//!
//! An error's `Display` never repeats its `source()`: the full message is
//! the chain joined with `": "`, as [`Report`] writes it. Problems found by
//! the crate itself (validation, `--set` paths, grids, shards) are part of
//! the message; only errors from outside the crate (I/O, parsers, encoders)
//! are sources.
//!
//! Every error type of the input and output layers is defined here (the
//! `--set` path errors of `scenario::set`, the grid, merge, range and
//! shard-environment errors of `sweep`, the map errors of `map` and the
//! assessment errors of `assess` are re-exported there), so this module depends on nothing of
//! the crate but `policy`'s `ResolveError`, and no module that reports an
//! error is imported by it.

use crate::policy::ResolveError;
use std::error::Error as StdError;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// A boxed error from a library outside the crate (a plotting backend, an
/// image encoder, a parser), kept as a source.
pub type BoxedSource = Box<dyn StdError + Send + Sync + 'static>;

/// Every error the library returns to the command line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The user's input is wrong (exit status 2).
    #[error(transparent)]
    Invalid(#[from] InvalidInput),
    /// Writing the results failed (exit status 1).
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A run could not finish: time stopped (exit status 2: the scenario
    /// cannot be simulated as written) or the user interrupted it (130).
    #[error(transparent)]
    Run(#[from] RunError),
}

impl Error {
    /// The process exit status this error means: 2 for invalid input (a
    /// scenario whose time stops included), 1 for an output failure, 130
    /// for an interruption (Ctrl-C; the command line reports 128 + the
    /// signal that stopped it, 143 for SIGTERM, 129 for SIGHUP).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Invalid(_) | Error::Run(RunError::Stalled { .. }) => 2,
            _ if self.is_interrupted() => 130,
            Error::Run(_) | Error::Output(_) => 1,
        }
    }

    /// Whether the command was interrupted (Ctrl-C, a signal).
    pub fn is_interrupted(&self) -> bool {
        matches!(
            self,
            Error::Run(RunError::Interrupted) | Error::Output(OutputError::Interrupted)
        )
    }
}

/// Why a run could not finish.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunError {
    /// Events kept happening at one instant without time passing: the run
    /// would never end.
    #[error(
        "simulated time stopped advancing at t = {at_s} s (policy {policy:?}, replication \
         {replication}): {events} events happened at that instant and the run would never end; {why}"
    )]
    Stalled {
        /// The policy simulated.
        policy: String,
        /// The replication.
        replication: u32,
        /// When time stopped, in seconds.
        at_s: f64,
        /// Events handled at that instant before the run gave up.
        events: u64,
        /// Which settings allow it, and how to fix them.
        why: String,
    },
    /// A stop was requested (Ctrl-C) before the run finished.
    #[error("interrupted")]
    Interrupted,
}

impl From<GridError> for Error {
    fn from(e: GridError) -> Error {
        Error::Invalid(e.into())
    }
}

impl From<MergeError> for Error {
    fn from(e: MergeError) -> Error {
        Error::Invalid(e.into())
    }
}

impl From<RangeError> for Error {
    fn from(e: RangeError) -> Error {
        Error::Invalid(e.into())
    }
}

impl From<ShardEnvError> for Error {
    fn from(e: ShardEnvError) -> Error {
        Error::Invalid(e.into())
    }
}

impl From<MapError> for Error {
    fn from(e: MapError) -> Error {
        Error::Invalid(e.into())
    }
}

impl From<AssessError> for Error {
    fn from(e: AssessError) -> Error {
        Error::Invalid(e.into())
    }
}

/// Where in the user's input a problem is, as far as it is known, and what
/// it is: renders as `<origin>:<line>:<col>: <path>: <message>`, the parts
/// that are unknown left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    /// The file (or, for a command-line value, the flag) the input came from.
    pub origin: String,
    /// 1-based line in the file.
    pub line: Option<usize>,
    /// 1-based column (in characters); only shown with a line.
    pub column: Option<usize>,
    /// Field path in the form the deserialiser writes it
    /// (`policies[1].backoff.exponential.initial`).
    pub path: Option<String>,
    /// What is wrong, written for the person who wrote the input.
    pub message: String,
}

impl Located {
    /// A problem with the input `origin` as a whole (no position or path).
    pub fn whole(origin: impl Into<String>, message: impl Into<String>) -> Located {
        Located {
            origin: origin.into(),
            line: None,
            column: None,
            path: None,
            message: message.into(),
        }
    }

    /// A problem at field `path` of `origin`, position unknown.
    pub fn at_path(
        origin: impl Into<String>,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Located {
        Located {
            path: Some(path.into()),
            ..Located::whole(origin, message)
        }
    }
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.origin)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
            if let Some(c) = self.column {
                write!(f, ":{c}")?;
            }
        }
        f.write_str(": ")?;
        if let Some(p) = &self.path {
            write!(f, "{}: ", one_line(&shown(p)))?;
        }
        f.write_str(&one_line(&cut_quoted(&self.message)))
    }
}

/// The most characters of a value the user gave that a message quotes.
pub const SHOWN_CHARS: usize = 80;

/// A value the user gave (a `--set`, a key, a name), as a message quotes
/// it: whole when short, else its first [`SHOWN_CHARS`] characters and
/// `…`, so that a message stays readable when the value is 60 KB.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(SHOWN_CHARS) {
        None => text.into(),
        Some((at, _)) => format!("{}…", text[..at].trim_end_matches('\\')).into(),
    }
}

/// `message` with every quoted value in it (`"..."`, as serde and `{:?}`
/// quote strings, with `\"` inside, or `` `...` ``) [`shown`]: the words
/// around them are the crate's, the values may be anything. A quote
/// without its closing one is left as it is.
fn cut_quoted(message: &str) -> std::borrow::Cow<'_, str> {
    let mut out = String::new();
    let mut rest = message;
    let mut cut = false;
    while let Some(open) = rest.find(['"', '`']) {
        let quote = char::from(rest.as_bytes()[open]);
        let body = &rest[open + 1..];
        let close = if quote == '"' {
            let mut escaped = false;
            body.char_indices()
                .find(|&(_, c)| {
                    let end = c == '"' && !escaped;
                    escaped = c == '\\' && !escaped;
                    end
                })
                .map(|(i, _)| i)
        } else {
            body.find('`')
        };
        let Some(close) = close else {
            break;
        };
        let value = shown(&body[..close]);
        cut |= matches!(value, std::borrow::Cow::Owned(_));
        out.push_str(&rest[..=open]);
        out.push_str(&value);
        out.push(quote);
        rest = &body[close + 1..];
    }
    if !cut {
        return message.into();
    }
    out.push_str(rest);
    out.into()
}

/// `text` with its control characters escaped (`\n`, `\u{0}`): a problem
/// is one line, even when it quotes a key the user wrote with a line break
/// in it.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

/// The user's input is wrong: a scenario file, a `--set` or other flag
/// value, an imported configuration, shard outputs given to `merge`. The
/// command line exits with status 2.
#[derive(Debug, thiserror::Error)]
pub enum InvalidInput {
    /// An input file could not be read (missing, a directory, no access).
    #[error("{origin}: cannot read")]
    Unreadable {
        /// The file as the user named it.
        origin: String,
        /// Why it could not be read.
        source: io::Error,
    },
    /// An input file is not UTF-8; the position is of the first bad byte.
    #[error("{origin}:{line}:{column}: not UTF-8 text")]
    NotUtf8 {
        /// The file as the user named it.
        origin: String,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based column of the first invalid byte.
        column: usize,
    },
    /// An input file holds nothing but white space.
    #[error("{origin}: the file is empty")]
    Empty {
        /// The file as the user named it.
        origin: String,
    },
    /// One problem: a syntax or type error, or a bad value in an imported
    /// configuration.
    #[error("{0}")]
    At(Located),
    /// Every problem validation found, one per line, in the order found.
    #[error("{}", lines(.0))]
    Problems(Vec<Located>),
    /// A `--set PATH=VALUE` that cannot be applied to the scenario.
    #[error("{origin}: --set {}: {error}", shown(.assignment))]
    Set {
        /// The scenario file.
        origin: String,
        /// The assignment as given.
        assignment: String,
        /// Why it cannot be applied.
        error: SetError,
    },
    /// A policy that passed validation but cannot be resolved.
    #[error("{origin}: policies: {error}")]
    Resolve {
        /// The scenario file.
        origin: String,
        /// What is missing.
        error: ResolveError,
    },
    /// `--policy NAME` names no policy of the scenario.
    #[error(
        "--policy {:?}: scenario {scenario:?} has no such policy (it has: {})",
        shown(.name),
        .known.join(", ")
    )]
    NoSuchPolicy {
        /// The name given.
        name: String,
        /// The scenario's name.
        scenario: String,
        /// The scenario's policies, in file order.
        known: Vec<String>,
    },
    /// One point of a sweep is invalid; the inner error says why.
    #[error(
        "sweep point {index} ({}):\n{error}",
        .assignments.iter().map(|a| format!("--set {}", shown(a))).collect::<Vec<_>>().join(" ")
    )]
    SweepPoint {
        /// The point's index in the grid.
        index: usize,
        /// The point's `PATH=VALUE` assignments.
        assignments: Vec<String>,
        /// What is wrong with the scenario at that point.
        error: Box<InvalidInput>,
    },
    /// A sweep point whose policy list differs from point 0's.
    #[error(
        "sweep point {index}: its policies ({}) differ from the scenario's; a sweep may change policy fields, not the list",
        .policies.join(", ")
    )]
    SweepPolicies {
        /// The point's index in the grid.
        index: usize,
        /// Its policies.
        policies: Vec<String>,
    },
    /// A bad `sweep --set` axis or `--shard`.
    #[error(transparent)]
    Grid(#[from] GridError),
    /// Shard outputs that do not make one sweep.
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// A value range (`A..B:N`) that cannot be expanded.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// `--shards N` without a shard index the environment names.
    #[error(transparent)]
    ShardEnv(#[from] ShardEnvError),
    /// Map axes that do not make a map, or map shards that do not join.
    #[error(transparent)]
    Map(#[from] MapError),
    /// A scenario `assess` cannot search.
    #[error(transparent)]
    Assess(#[from] AssessError),
    /// One cell of a map is invalid; the inner error says why.
    #[error(
        "map cell {index} ({}):\n{error}",
        .assignments.iter().map(|a| format!("--set {}", shown(a))).collect::<Vec<_>>().join(" ")
    )]
    MapCell {
        /// The cell's index in the map.
        index: usize,
        /// The cell's `PATH=VALUE` assignments.
        assignments: Vec<String>,
        /// What is wrong with the scenario in that cell.
        error: Box<InvalidInput>,
    },
    /// A flag value the command checks itself (not a scenario field).
    #[error("{flag}: {message}")]
    Flag {
        /// The flag, as typed (`--max-drop-rate 2`).
        flag: String,
        /// What is wrong with it.
        message: String,
    },
    /// A batch of runs estimated to exceed the memory or time limit
    /// (refused before it starts unless `--force`).
    #[error("{origin}: {what}")]
    TooBig {
        /// The scenario.
        origin: String,
        /// The estimate and the way out.
        what: String,
    },
    /// A file another command wrote (`sweep.json`, `sweep.csv`) that does
    /// not parse.
    #[error("{origin}")]
    Malformed {
        /// The file.
        origin: String,
        /// The parser's error.
        source: BoxedSource,
    },
}

/// ` (as X)` when a repeated value was written differently the first time.
fn same_as(first: &str, second: &str) -> String {
    if first == second {
        String::new()
    } else {
        format!(" (as {first})")
    }
}

/// The first few items of a long list, and how many more there are (a
/// merge can miss millions of shards).
fn first_of(list: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = list[..list.len().min(SHOWN)].join(", ");
    if list.len() > SHOWN {
        text.push_str(&format!(" and {} more", list.len() - SHOWN));
    }
    text
}

fn lines(list: &[Located]) -> String {
    list.iter()
        .map(Located::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writing results failed: the command line exits with status 1.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output directory could not be created.
    #[error("cannot create output directory {}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file stands where a directory is needed.
    #[error(
        "cannot create output directory {}: {} is a file, not a directory",
        .wanted.display(),
        .path.display()
    )]
    NotADirectory {
        /// The file in the way.
        path: PathBuf,
        /// The directory wanted.
        wanted: PathBuf,
    },
    /// Another run is writing the same output directory.
    #[error(
        "another retrysim run is writing {} (it holds {}); wait for it to finish or choose another -o",
        .target.display(),
        .lock.display()
    )]
    Locked {
        /// The output directory.
        target: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// Something in the output directory is not retrysim's to use: a link,
    /// named pipe or directory where its lock or staging folder goes, a
    /// manifest or marker it did not write, files it did not write (exit
    /// status 1; see `crate::report::staging`).
    #[error("refusing to use {}: {why}", .path.display())]
    Refused {
        /// What is in the way.
        path: PathBuf,
        /// Why, and what to do.
        why: String,
    },
    /// A finished file could not be moved into the output directory.
    #[error("cannot move the new {} into place", .path.display())]
    Publish {
        /// Where it should have gone.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The user interrupted the command before its output was complete;
    /// nothing was replaced.
    #[error("interrupted before the report was complete; nothing was replaced")]
    Interrupted,
    /// A file could not be written.
    #[error("cannot write {}", .path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file written moments ago (a plot, embedded into the HTML page)
    /// could not be read back.
    #[error("cannot read back {}", .path.display())]
    ReadBack {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A stale file from an earlier run could not be removed.
    #[error("cannot remove the stale {}", .path.display())]
    Remove {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// An image could not be encoded or saved.
    #[error("cannot write {}", .path.display())]
    Encode {
        /// The file.
        path: PathBuf,
        /// The encoder's or backend's error.
        source: BoxedSource,
    },
    /// Drawing a figure failed (`what` names it: `plot`, `heatmap`).
    #[error("{what}")]
    Draw {
        /// Which figure.
        what: &'static str,
        /// The plotting backend's error.
        source: BoxedSource,
    },
    /// The font embedded in the binary could not be registered.
    #[error("the embedded font could not be loaded")]
    Font,
    /// The heatmap cannot be drawn from this table (a caller's mistake or
    /// a hand-edited `sweep.csv`).
    #[error("heatmap: {0}")]
    Heatmap(String),
    /// `map.png` cannot be drawn from this table (a hand-edited `map.csv`).
    #[error("map.png: {0}")]
    MapPicture(String),
    /// Writing to standard output failed (a closed pipe ends the program
    /// quietly instead; see [`is_broken_pipe`]).
    #[error("cannot write to standard output")]
    Stdout(#[source] io::Error),
    /// A CSV table could not be built.
    #[error("csv")]
    Csv(#[from] csv::Error),
    /// A JSON document could not be built.
    #[error("json")]
    Json(#[from] serde_json::Error),
}

impl OutputError {
    /// An error writing CSV to standard output: its I/O error kept as the
    /// source (a `csv::Error` does not expose it through `source()`).
    pub fn stdout_csv(e: csv::Error) -> OutputError {
        if e.is_io_error() {
            if let csv::ErrorKind::Io(io) = e.into_kind() {
                return OutputError::Stdout(io);
            }
            unreachable!("is_io_error checked the kind");
        }
        OutputError::Csv(e)
    }
}

/// Why a `PATH=VALUE` assignment cannot be applied; the message is meant to
/// follow `--set <assignment>: `.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SetError {
    /// No `=` in the assignment.
    #[error("expected PATH=VALUE (e.g. backend.workers=120)")]
    NoEquals,
    /// Nothing before the `=`.
    #[error("empty PATH before `=`")]
    EmptyPath,
    /// Two dots in a row, or a dot at an end.
    #[error("empty segment {index} in path `{}`", shown(.path))]
    EmptySegment {
        /// 1-based position of the empty segment.
        index: usize,
        /// The whole path.
        path: String,
    },
    /// A `[` without its `]`, an empty `[]`, or text after a `]`.
    #[error("brackets in path `{}` do not close around an index: write `faults[0].outage` or `faults.0.outage`", shown(.path))]
    Brackets {
        /// The whole path.
        path: String,
    },
    /// A path of more segments than any scenario field is deep (a policy
    /// name with dots included), refused before it is walked.
    #[error("path `{}` has {segments} segments; no scenario field is deeper than {max} (a policy name with dots counts one per dot)", shown(.path))]
    TooDeep {
        /// The whole path.
        path: String,
        /// Its segments.
        segments: usize,
        /// The most a path may have.
        max: usize,
    },
    /// A segment that cannot be followed; `at` is the path up to and
    /// including it.
    #[error("`{}`: {problem}", shown(.at))]
    At {
        /// The path walked so far, ending at the segment that failed.
        at: String,
        /// What is wrong there.
        problem: PathProblem,
    },
}

/// What is wrong at one segment of a `--set` path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    /// An object without the key (and not a single-key variant holding it).
    #[error(
        "no such field in the file (fields here: {fields}); a block the file lacks is set whole, as JSON: PATH='{{\"field\": value}}'"
    )]
    NoSuchField {
        /// The keys that exist, comma-separated (`none` when empty).
        fields: String,
    },
    /// A scalar in the middle of the path.
    #[error("cannot go inside a {0}; the path is too long")]
    TooLong(&'static str),
    /// A scalar where the last segment's container should be.
    #[error("cannot set a field of a {0}")]
    NotAContainer(&'static str),
    /// A numeric index past the end of a list.
    #[error("index {index} is out of range (the list has {len} item{})", if *.len == 1 { "" } else { "s" })]
    OutOfRange {
        /// The index given.
        index: usize,
        /// The list's length.
        len: usize,
    },
    /// A non-numeric segment into a list whose items have no names.
    #[error("not an index of this list (0..{last})")]
    NotAnIndex {
        /// The last valid index.
        last: usize,
    },
    /// A name that matches no item of a list of named items.
    #[error("no item with this name (names: {names}; or use an index)")]
    NoSuchName {
        /// The items' names, comma-separated.
        names: String,
    },
}

/// A `sweep --set` axis or a `--shard` that cannot be used; the message
/// quotes the flag.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GridError {
    /// No `=` in the axis.
    #[error("--set {}: expected PATH=V1,V2,... (e.g. traffic.rate=100,200)", shown(.arg))]
    NoEquals {
        /// The flag's value.
        arg: String,
    },
    /// Nothing before the `=`.
    #[error("--set {}: empty PATH before `=`", shown(.arg))]
    EmptyPath {
        /// The flag's value.
        arg: String,
    },
    /// Brackets, braces or quotes that do not close.
    #[error("--set {}: unbalanced quotes or brackets in `{}`", shown(.arg), shown(.values))]
    Unbalanced {
        /// The flag's value.
        arg: String,
        /// The part after `=`.
        values: String,
    },
    /// An empty value between commas.
    #[error("--set {}: value {index} is empty", shown(.arg))]
    EmptyValue {
        /// The flag's value.
        arg: String,
        /// 1-based position of the empty value.
        index: usize,
    },
    /// The same path swept by two `--set` flags.
    #[error("--set {}: the path is given twice; list all its values in one --set", shown(.path))]
    Repeated {
        /// The path.
        path: String,
    },
    /// Two `--set` flags where one sets a field within the other's: the
    /// later would silently replace the earlier's values at every point.
    #[error(
        "--set {}: overlaps --set {} (one sets a field within the other): \
         set each field in one place",
        shown(.path),
        shown(.other)
    )]
    Overlap {
        /// The later path.
        path: String,
        /// The earlier path it overlaps.
        other: String,
    },
    /// `--seed` beside an axis that varies the seed: every point would run
    /// with `--seed`'s value while the output labels it with the axis's.
    #[error("--seed {seed}: {path} is an axis of the grid: drop --seed or that axis")]
    SeedAxis {
        /// The value given to `--seed`.
        seed: u64,
        /// The axis's path.
        path: String,
    },
    /// A grid of more points than a count can hold: its points could not
    /// even be numbered, let alone sharded.
    #[error("the grid has more than 10^19 points ({sizes}): use fewer values per axis")]
    Uncountable {
        /// The axes' sizes, `10000 × 10000 × ...`.
        sizes: String,
    },
    /// A `--shard` that is not `I/N` with 1 <= I <= N.
    #[error("--shard {}: expected I/N with 1 <= I <= N (e.g. 2/4)", shown(.0))]
    Shard(String),
    /// More shards than the grid has points or cells.
    #[error("{count} shards for {items} {noun}: use at most {items} (a shard with nothing to run would hold up the merge)")]
    TooManyShards {
        /// N.
        count: usize,
        /// Points or cells in the grid.
        items: usize,
        /// `points` or `cells`.
        noun: &'static str,
    },
}

/// A shard file of a sweep or a map that the command never writes: both
/// merges refuse it the same way, naming the file (and the row and column
/// of a cell) so the user can see what was edited.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditedShard {
    /// A `sweep.json` or `map.json` that no run writes (an axis without
    /// values or with a value twice, a grid that cannot be counted, a
    /// shard larger than one process runs).
    #[error("{origin}: {why}: was the shard edited?")]
    Manifest {
        /// The file.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
    /// A result cell that is not the value its column holds.
    #[error("{origin} line {line}, column {column} ({name}): {found:?} is not {expected}: was the shard edited?")]
    Cell {
        /// The file.
        origin: String,
        /// 1-based line (the header is line 1).
        line: usize,
        /// 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// The cell as found.
        found: String,
        /// What the column holds.
        expected: &'static str,
    },
}

/// Shard outputs that do not join into one sweep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("merge: no shard directories given")]
    NoShards,
    /// A manifest whose shard is not `I/N` with 1 <= I <= N.
    #[error("{origin}/sweep.json: shard.{field} {value} {why}: was the shard edited?")]
    BadShard {
        /// The shard directory.
        origin: String,
        /// `index` or `count`.
        field: &'static str,
        /// Its value.
        value: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A manifest whose point count is not the size of its grid.
    #[error("{origin}/sweep.json: points {points}, but its axes make {grid} points: was the shard edited?")]
    Points {
        /// The shard directory.
        origin: String,
        /// `points` as written.
        points: usize,
        /// The product of the axes' lengths.
        grid: usize,
    },
    /// A swept value in `sweep.csv` that is not the axis value
    /// `sweep.json` gives for the row's point.
    #[error("{origin}/sweep.csv line {line}, column {column} ({name}): expected {expected:?} as sweep.json gives for point {point}, found {found:?}: was the shard edited?")]
    SweptValue {
        /// The shard directory.
        origin: String,
        /// 1-based line (the header is line 1).
        line: usize,
        /// 1-based column.
        column: usize,
        /// The axis (its path).
        name: Box<str>,
        /// The row's point index.
        point: usize,
        /// The value sweep.json gives.
        expected: Box<str>,
        /// The value found.
        found: Box<str>,
    },
    /// A `sweep.csv` header whose swept-value columns are not sweep.json's
    /// axes.
    #[error("{origin}/sweep.csv line 1, column {column}: expected the axis {expected:?} as sweep.json gives, found {found:?}: was the shard edited?")]
    AxisColumn {
        /// The shard directory.
        origin: String,
        /// 1-based column.
        column: usize,
        /// The axis' path.
        expected: String,
        /// The column's name found.
        found: String,
    },
    /// A shard of another sweep.
    #[error("{origin}: not a shard of the same sweep as {first} (the scenario and its contents, --set values, --seed, --policy, replications and N of --shard I/N must all match)")]
    OtherSweep {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// A `sweep.csv` with other columns than the first shard's.
    #[error("{origin}: sweep.csv columns differ from {first}")]
    Columns {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// The same shard given twice.
    #[error("{origin}: shard {index}/{count} is also in {other}")]
    Duplicate {
        /// The shard directory.
        origin: String,
        /// The shard's I.
        index: usize,
        /// The shard's N.
        count: usize,
        /// The other directory holding it.
        other: String,
    },
    /// Shards of the sweep that were not given (`I/N` each).
    #[error("merge: missing shard{} {}", if .0.len() == 1 { "" } else { "s" }, first_of(.0))]
    Missing(Vec<String>),
    /// A row whose first cell is not a point index.
    #[error("{origin}: sweep.csv row without a point index")]
    NoPointIndex {
        /// The shard directory.
        origin: String,
    },
    /// A row for a point or policy the sweep does not have, or a row
    /// given twice.
    #[error("{origin}: the sweep.csv row for point {point}, policy {policy:?} {why}: was the shard edited?")]
    StrayRow {
        /// The shard directory.
        origin: String,
        /// The row's point index.
        point: usize,
        /// The row's policy.
        policy: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A shard file that no sweep writes.
    #[error(transparent)]
    Edited(#[from] EditedShard),
    /// No shard holds this row.
    #[error("merge: no shard has the row for point {point}, policy {policy:?}: a sweep.csv was cut short")]
    MissingRow {
        /// The point index.
        point: usize,
        /// The policy.
        policy: String,
    },
}

/// Why `A..B:N` is not a range (`sweep::range`); the message quotes the
/// range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// No `:N` after `A..B`.
    #[error("range {:?}: write A..B:N, N values from A to B inclusive (e.g. 100..300:11 or 2s..60s:12)", shown(.0))]
    NoCount(String),
    /// `N` is not a whole number in range.
    #[error(
        "range {:?}: the count {:?} must be a whole number from 2 to {max}",
        shown(.text),
        shown(.count)
    )]
    BadCount {
        /// The range as written.
        text: String,
        /// The count as written.
        count: String,
        /// The most values a range may have.
        max: usize,
    },
    /// `N` is 1 but the ends differ.
    #[error("range {:?}: one value cannot go from A to a different B; use N >= 2", shown(.0))]
    OneValue(String),
    /// An end is neither a number nor a duration.
    #[error(
        "range {:?}: {:?} is not a number or a duration such as 250ms, 2s or 1m",
        shown(.text),
        shown(.end)
    )]
    BadEnd {
        /// The range as written.
        text: String,
        /// The end at fault.
        end: String,
    },
    /// One end is a duration and the other a plain number.
    #[error(
        "range {:?}: both ends must be numbers or both durations ({:?} and {:?} differ)",
        shown(.text),
        shown(.a),
        shown(.b)
    )]
    Mixed {
        /// The range as written.
        text: String,
        /// Its first end.
        a: String,
        /// Its last end.
        b: String,
    },
    /// A duration end is negative or out of range.
    #[error("range {:?}: {why}", shown(.text))]
    BadDuration {
        /// The range as written.
        text: String,
        /// Why the duration is refused.
        why: String,
    },
    /// A value listed twice, or two that name the same quantity (a range
    /// finer than its unit rounds to repeats).
    #[error("the value {second} is given twice{}: each point of an axis must differ (a range finer than its unit repeats values)", same_as(.first, .second))]
    Duplicate {
        /// The value as first given.
        first: String,
        /// The value that repeats it.
        second: String,
    },
}

/// Why the environment names no shard for `--shards N`
/// (`sweep::shard_env`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShardEnvError {
    /// `--shards 0`.
    #[error("--shards {0}: the number of shards must be at least 1")]
    Zero(usize),
    /// Neither variable is set.
    #[error("--shards {count} without --shard I/N needs JOB_COMPLETION_INDEX (Kubernetes Indexed Job) or SLURM_ARRAY_TASK_ID (Slurm array) in the environment")]
    Missing {
        /// N.
        count: usize,
    },
    /// A variable is not a whole number.
    #[error("{var}={value:?} is not a whole number")]
    NotANumber {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
    /// The index is past the last shard.
    #[error("{var}: shard index {index} (0-based) is not below --shards {count}")]
    OutOfRange {
        /// The variable it came from.
        var: &'static str,
        /// The 0-based index.
        index: i128,
        /// N.
        count: usize,
    },
    /// The index is below the first shard.
    #[error("{from}: shard index {index} (0-based) is negative; with --shards {count} it must be 0 to {last}", last = .count - 1)]
    Negative {
        /// The variables it came from, with their values
        /// (`SLURM_ARRAY_TASK_ID=3 minus SLURM_ARRAY_TASK_MIN=5`).
        from: String,
        /// The 0-based index.
        index: i128,
        /// N.
        count: usize,
    },
    /// A Slurm array with a step (`--array=0-6:2`): its task ids are not
    /// consecutive shard numbers.
    #[error("SLURM_ARRAY_TASK_STEP={step}: with a step the array's task ids are not consecutive shards; use a step of 1 with --shards {count}, or pass each task its shard with --shard I/{count}")]
    Step {
        /// The step.
        step: String,
        /// N.
        count: usize,
    },
    /// Slurm's array size differs from `--shards`.
    #[error("SLURM_ARRAY_TASK_COUNT={tasks} but --shards {count}: size the array to the shards (e.g. --array=0-{last}); to rerun some shards only (sbatch --array=2), pass each its shard with --shard I/{count}, as deploy/slurm-array.sh does", last = .count - 1)]
    CountMismatch {
        /// The array's size.
        tasks: usize,
        /// N.
        count: usize,
    },
}

/// Map axes that do not make a map, or map shards that do not join into
/// one (`map`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// `--x` and `--y` name the same path, or one a field within the other.
    #[error("--x {0} and --y {1} set the same field; a map needs two different parameters")]
    SamePath(String, String),
    /// A value appears twice on one axis.
    #[error("--{axis} {path}: the value {value} is given twice")]
    Duplicate {
        /// `x` or `y`.
        axis: &'static str,
        /// The axis' path.
        path: String,
        /// The value repeated.
        value: String,
    },
    /// A cell whose policies differ from the scenario's.
    #[error("map cell {index}: its policies ({}) differ from the scenario's; a map may change policy fields, not the list", .policies.join(", "))]
    Policies {
        /// The cell.
        index: usize,
        /// Its policies.
        policies: Vec<String>,
    },
    /// No cell has an incident, so no run can recover or stay degraded.
    #[error("no cell of the map has a fault or a load spike to recover from, so every cell would be undetermined; give the scenario a fault (or map one of its fields)")]
    NoIncident,
    /// No shard directories given to merge.
    #[error("merge: no map directories given")]
    NothingToMerge,
    /// A shard of another map.
    #[error("{origin}: not a shard of the same map as {first} (the scenario and its contents, --set values, --x, --y, policies, replications, refinement, seed and N of the shards must all match)")]
    Different {
        /// The shard directory.
        origin: String,
        /// The first shard directory.
        first: String,
    },
    /// A manifest whose shard is not `I/N` with 1 <= I <= N.
    #[error("{origin}/map.json: shard.{field} {value} {why}: was the shard edited?")]
    BadShard {
        /// The shard directory.
        origin: String,
        /// `index` or `count`.
        field: &'static str,
        /// Its value.
        value: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A shard given twice.
    #[error("{origin}: shard {index}/{count} is also in {other}")]
    Twice {
        /// The shard directory.
        origin: String,
        /// The shard's I.
        index: usize,
        /// The shard's N.
        count: usize,
        /// The other directory holding it.
        other: String,
    },
    /// Shards missing.
    #[error("merge: missing map shard{} {}", if .0.len() == 1 { "" } else { "s" }, first_of(.0))]
    Missing(Vec<String>),
    /// A (policy, cell) with no row, or with two, among the shards.
    #[error("merge: the map has {} row for policy {policy:?} at x = {x}, y = {y}: a map.csv was {}", if *.twice { "more than one" } else { "no" }, if *.twice { "given twice or edited" } else { "cut short" })]
    RowCount {
        /// The policy.
        policy: String,
        /// The cell's x value.
        x: String,
        /// The cell's y value.
        y: String,
        /// Two rows rather than none.
        twice: bool,
    },
    /// A shard file that no map writes.
    #[error(transparent)]
    Edited(#[from] EditedShard),
    /// A row the manifest does not explain.
    #[error("{origin}: map.csv row {row} names a policy or value not in map.json")]
    StrayRow {
        /// The shard directory.
        origin: String,
        /// 1-based row.
        row: usize,
    },
    /// Shard outputs of different kinds given to merge.
    #[error("{origin}: a {found} output among {expected} outputs; merge one kind at a time")]
    MixedKinds {
        /// The directory.
        origin: String,
        /// What it holds.
        found: &'static str,
        /// What the first one holds.
        expected: &'static str,
    },
    /// A directory holding both a sweep's and a map's output (one `-o`
    /// for both).
    #[error("{0}: holds both a sweep (sweep.json) and a map (map.json); write each to its own -o directory and merge that one")]
    BothKinds(String),
    /// A directory given to merge that holds no output.
    #[error("{0}: holds no sweep.json or map.json, nor directories that do")]
    NoOutput(String),
    /// A merge output directory that would overwrite or hide an input.
    #[error("-o {output}: {why}; choose another output directory")]
    OutputIsInput {
        /// The output directory, as given.
        output: String,
        /// Which input it is, and what writing there would do.
        why: String,
    },
}

/// A scenario `assess` cannot search (`assess`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AssessError {
    /// The load path names no number in the scenario.
    #[error("--load {path}: the scenario has no number there ({found}); name a numeric field such as traffic.rate or traffic.clients")]
    NotANumber {
        /// The path.
        path: String,
        /// What is there.
        found: String,
    },
    /// The load is zero or negative.
    #[error("--load {path}: the scenario's value {value} must be above 0 to search around it")]
    NotPositive {
        /// The path.
        path: String,
        /// Its value.
        value: String,
    },
    /// No incident to recover from.
    #[error("the scenario has no fault to recover from (a fault covering the whole run is a background condition); assess needs a trigger")]
    NoTrigger,
}

/// Writes an error and its sources, joined with `": "` (the way the command
/// line prints every error after `error: `).
pub struct Report<'a>(
    /// The error to write, sources included.
    pub &'a (dyn StdError + 'static),
);

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

/// Whether `e` or any error in its source chain is a broken pipe (the
/// reader of standard output went away: `retrysim ... | head`). The whole
/// chain is searched because the `std::io::Error` is usually wrapped; a
/// `csv::Error` is looked into too, as it does not expose its I/O error as
/// a source.
pub fn is_broken_pipe(e: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        if let Some(io) = err.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::BrokenPipe {
                return true;
            }
        }
        if let Some(c) = err.downcast_ref::<csv::Error>() {
            if let csv::ErrorKind::Io(io) = c.kind() {
                if io.kind() == io::ErrorKind::BrokenPipe {
                    return true;
                }
            }
        }
        next = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_located_problem_stays_on_one_line() {
        // A mutated file can hold a key with a line break in it; serde
        // quotes it back.
        let l = Located::at_path("x.json", "backend", "unknown field `admissi\ncost`");
        assert_eq!(
            l.to_string(),
            "x.json: backend: unknown field `admissi\\ncost`"
        );
    }

    use super::*;

    #[test]
    fn long_values_are_cut_on_a_character_boundary() {
        assert_eq!(shown("short"), "short");
        let exact = "é".repeat(SHOWN_CHARS);
        assert_eq!(shown(&exact), exact);
        let long = format!("{exact}ü and more");
        assert_eq!(shown(&long), format!("{exact}…"));
        // A cut escape leaves no lone backslash before the ellipsis.
        let escaped = format!("{}\\\"x", "a".repeat(SHOWN_CHARS - 1));
        assert_eq!(shown(&escaped), format!("{}…", "a".repeat(SHOWN_CHARS - 1)));
    }

    #[test]
    fn a_located_problem_cuts_the_values_it_quotes() {
        let long = "[".repeat(60_000);
        let l = Located::at_path(
            "s.json",
            format!("traffic.{long}"),
            format!("invalid type: string {long:?}, expected a number; unknown field `{long}`"),
        );
        let cut = "[".repeat(SHOWN_CHARS);
        assert_eq!(
            l.to_string(),
            format!(
                "s.json: traffic.{}…: invalid type: string \"{cut}…\", expected a number; \
                 unknown field `{cut}…`",
                "[".repeat(SHOWN_CHARS - "traffic.".len())
            )
        );
        // Quotes inside a quoted value, short values and a quote left
        // open are kept.
        let inner = format!("{:?}", format!("a\"b{long}"));
        let l = Located::whole(
            "s.json",
            format!("name {inner} and \"250ms\", `x` or \"open"),
        );
        assert_eq!(
            l.to_string(),
            format!(
                "s.json: name \"a\\\"b{}…\" and \"250ms\", `x` or \"open",
                "[".repeat(SHOWN_CHARS - 4)
            )
        );
    }

    fn pipe() -> io::Error {
        io::Error::from(io::ErrorKind::BrokenPipe)
    }

    #[test]
    fn located_renders_only_known_parts() {
        let l = Located {
            origin: "f.json".into(),
            line: Some(3),
            column: Some(7),
            path: Some("a.b".into()),
            message: "bad".into(),
        };
        assert_eq!(l.to_string(), "f.json:3:7: a.b: bad");
        assert_eq!(Located::whole("f.json", "bad").to_string(), "f.json: bad");
        assert_eq!(
            Located::at_path("--initial", "backoff", "bad").to_string(),
            "--initial: backoff: bad"
        );
    }

    #[test]
    fn report_joins_the_chain_without_repeating() {
        let e = Error::from(OutputError::Write {
            path: "out/x.csv".into(),
            source: io::Error::new(io::ErrorKind::PermissionDenied, "denied"),
        });
        assert_eq!(Report(&e).to_string(), "cannot write out/x.csv: denied");
        assert_eq!(e.exit_code(), 1);
        let bad = Error::from(InvalidInput::Empty {
            origin: "s.json".into(),
        });
        assert_eq!(Report(&bad).to_string(), "s.json: the file is empty");
        assert_eq!(bad.exit_code(), 2);
    }

    #[test]
    fn broken_pipes_are_found_anywhere_in_the_chain() {
        let wrapped = Error::from(OutputError::Stdout(pipe()));
        assert!(is_broken_pipe(&wrapped));
        assert!(is_broken_pipe(&pipe()));
        let csv_pipe = OutputError::Csv(csv::Error::from(pipe()));
        assert!(is_broken_pipe(&csv_pipe));
        assert!(matches!(
            OutputError::stdout_csv(csv::Error::from(pipe())),
            OutputError::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe
        ));
        let other = Error::from(OutputError::Write {
            path: "x".into(),
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        });
        assert!(!is_broken_pipe(&other));
        let invalid = Error::from(InvalidInput::Empty {
            origin: "s.json".into(),
        });
        assert!(!is_broken_pipe(&invalid));
    }
}
