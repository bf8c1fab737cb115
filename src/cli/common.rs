//! What the subcommands share: the flags of every command that simulates
//! ([`SimArgs`]), the standard-output handle every command prints through
//! ([`Stdout`]). Output directories are created and written through
//! `crate::report::staging`.

use crate::decimal::count;
use crate::error::{InvalidInput, OutputError};
use crate::report::staging::Staging;
use crate::runner;
use crate::runner::estimate::{Estimate, Estimator};
use crate::scenario::Scenario;
use clap::Args;
use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Most replications any command accepts.
pub const MAX_REPLICATIONS: u32 = 10_000;

/// Points of a sweep (cells of a map) one process loads at most, unless
/// `--force`: about 4 KB of memory each before any runs.
pub const MAX_POINTS: usize = 100_000;

/// Points (cells) one process loads at most even with `--force`: about
/// 4 GB before any runs. A larger grid is split with `--shards`.
pub const MAX_FORCED_POINTS: usize = 10 * MAX_POINTS;

/// The flags of every command that simulates (`run`, `sweep`, `tune`), so
/// each means the same everywhere. A command may sharpen a flag's help
/// (`-o`'s default differs) but not its meaning.
#[derive(Clone, Debug, Default, Args)]
pub struct SimArgs {
    /// Output directory.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Overrides one scenario value, e.g. `backend.workers=120`
    /// (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
    /// Overrides the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Independent runs per policy (different random streams).
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..=MAX_REPLICATIONS as i64)
    )]
    pub replications: u32,
    /// Simulate only the named policies (repeatable).
    #[arg(long = "policy", value_name = "NAME")]
    pub policies: Vec<String>,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Skip the PNG figures.
    #[arg(long)]
    pub no_plots: bool,
    /// Run even when the estimated memory or event count is above the
    /// limits, or when the output folder holds files retrysim did not
    /// write (files of the names written are replaced, nothing else is
    /// touched).
    #[arg(long)]
    pub force: bool,
}

impl SimArgs {
    /// The staged folder `DIR/<scenario name>` for `outputs` when `-o DIR`
    /// was given; `None` for a command that prints only, without `-o`.
    pub fn stage_if_asked(
        &self,
        s: &Scenario,
        outputs: &'static [&'static str],
    ) -> Result<Option<Staging>, OutputError> {
        self.output
            .as_ref()
            .map(|dir| Staging::begin(&dir.join(&s.spec().name), outputs, self.force))
            .transpose()
    }

    /// Applies `--seed` and `--policy` to a loaded scenario (`--set` is
    /// applied while loading, before validation).
    pub fn apply(&self, s: &mut Scenario) -> Result<(), crate::error::InvalidInput> {
        if let Some(seed) = self.seed {
            s.set_seed(seed);
        }
        s.select_policies(&self.policies)
    }

    /// Refuses to load more than [`MAX_POINTS`] points of a sweep or cells
    /// of a map in one process, unless `--force`: each is a scenario held
    /// in memory until the runs end, so a grid of millions would exhaust
    /// memory before its cost could be estimated.
    pub fn guard_points(
        &self,
        origin: &str,
        points: usize,
        what: &str,
    ) -> Result<(), InvalidInput> {
        let n = if points == usize::MAX {
            "more than 10^19".to_string()
        } else {
            points.to_string()
        };
        if points > MAX_FORCED_POINTS {
            return Err(InvalidInput::TooBig {
                origin: origin.to_string(),
                what: format!(
                    "{n} {what} to run in one process, more than one can hold even with --force \
                     ({MAX_FORCED_POINTS}); use fewer values per axis, or split them with \
                     --shards"
                ),
            });
        }
        if points > MAX_POINTS && !self.force {
            return Err(InvalidInput::TooBig {
                origin: origin.to_string(),
                what: format!(
                    "{n} {what} to run in one process (the limit is {MAX_POINTS}); use fewer \
                     values per axis, split them with --shards, or --force to run them anyway"
                ),
            });
        }
        Ok(())
    }

    /// Refuses `--replications` runs of every policy of each scenario
    /// (one, or every point of a sweep) when their estimated cost is above
    /// the limits, unless `--force`; `keep_bins` when every run's time
    /// series is kept until the report is written.
    pub fn guard<'a>(
        &self,
        scenarios: impl IntoIterator<Item = &'a Scenario>,
        keep_bins: bool,
    ) -> Result<(), crate::error::InvalidInput> {
        let mut name = String::new();
        let mut e = self.estimator(keep_bins);
        for s in scenarios {
            name.clone_from(&s.spec().name);
            e.add_jobs(&runner::jobs_of(s, self.replications));
        }
        self.refuse_too_big(e.finish(), &name)
    }

    /// An empty [`Estimator`] for runs of these flags, the scenarios
    /// added one at a time; [`SimArgs::refuse_too_big`] judges it.
    pub fn estimator(&self, keep_bins: bool) -> Estimator {
        Estimator::new(keep_bins, rayon::current_num_threads())
    }

    /// Refuses (unless `--force`) runs of scenario `name` estimated as `e`
    /// when they exceed the memory or event limits.
    pub fn refuse_too_big(
        &self,
        e: Estimate,
        name: &str,
    ) -> Result<(), crate::error::InvalidInput> {
        if e.too_big() && !self.force {
            return Err(crate::error::InvalidInput::TooBig {
                origin: name.to_string(),
                what: e.describe(),
            });
        }
        Ok(())
    }
}

/// `n` things counted in words (`3 points`), or `2 of 3 points` when a
/// shard ran only part of the `of`.
pub fn part_of(n: usize, of: usize, one: &str, many: &str) -> String {
    if n == of {
        count(n as f64, one, many)
    } else {
        format!("{n} of {of} {many}")
    }
}

/// Whether output to a terminal (`terminal`) is coloured, given the
/// value of `NO_COLOR`: any non-empty value turns colour off.
fn colors_wanted(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// Standard output, locked, for a command's results. Every write returns an
/// [`OutputError::Stdout`] holding the `std::io::Error` (a full disk is a
/// failure), except one to a closed pipe (`retrysim ... | head`): from then
/// on what is printed is dropped and the command goes on, so every report
/// file it was asked for is still written and it ends with status 0.
pub struct Stdout {
    lock: UnlessClosed<std::io::StdoutLock<'static>>,
}

/// A writer that drops what is written once its reader has gone away (a
/// broken pipe), so that a command whose printed summary nobody reads
/// still does the rest of its work.
pub struct UnlessClosed<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> UnlessClosed<W> {
    /// Writes to `inner` until it is found closed.
    pub fn new(inner: W) -> Self {
        UnlessClosed {
            inner,
            closed: false,
        }
    }

    /// `r`, or success once `r` says the reader has gone away.
    fn unless_closed<T>(&mut self, r: std::io::Result<T>, dropped: T) -> std::io::Result<T> {
        match r {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(dropped)
            }
            r => r,
        }
    }
}

impl<W: Write> Write for UnlessClosed<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let r = self.inner.write(buf);
        self.unless_closed(r, buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let r = self.inner.flush();
        self.unless_closed(r, ())
    }
}

impl Stdout {
    /// Locks standard output for the rest of the command.
    pub fn lock() -> Stdout {
        Stdout {
            lock: UnlessClosed::new(std::io::stdout().lock()),
        }
    }

    /// Whether to colour what is written: only on a terminal, and not
    /// when the user set `NO_COLOR` (the no-color.org convention).
    pub fn colors(&self) -> bool {
        colors_wanted(
            self.lock.inner.is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        )
    }

    /// Writes `text` as it is.
    pub fn print(&mut self, text: impl Display) -> Result<(), OutputError> {
        write!(self.lock, "{text}").map_err(OutputError::Stdout)
    }

    /// Writes `text` and a line end.
    pub fn line(&mut self, text: impl Display) -> Result<(), OutputError> {
        writeln!(self.lock, "{text}").map_err(OutputError::Stdout)
    }

    /// Flushes what is buffered.
    pub fn flush(&mut self) -> Result<(), OutputError> {
        self.lock.flush().map_err(OutputError::Stdout)
    }

    /// The raw writer, for encoders that take one (CSV); map their errors
    /// with [`OutputError::stdout_csv`] or [`OutputError::Stdout`].
    pub fn writer(&mut self) -> &mut impl Write {
        &mut self.lock
    }
}

/// Writes a note for the user (a warning, a file written) on standard
/// error. A note that cannot be written is dropped: it is never worth
/// failing a command for.
pub fn note(text: impl Display) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// A recovery deadline (`--recover-within` of `assess` and `map`): a
/// duration, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Within(pub Option<crate::time::Nanos>);

/// Parses `--recover-within`: a duration above zero, or `none`.
pub fn within(text: &str) -> Result<Within, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(Within(None));
    }
    match crate::time::parse_duration(t) {
        Ok(d) if d.ns() > 0 => Ok(Within(Some(d.ns()))),
        Ok(_) => Err(format!("{text:?}: a duration above 0 (e.g. 1m), or none")),
        Err(e) => Err(format!("{e}; or none")),
    }
}

/// `path` made absolute with symbolic links, `.` and `..` resolved, also
/// when it does not exist yet: its deepest existing ancestor is
/// canonicalized and the rest appended.
pub fn resolve(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = at.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                match part {
                    std::path::Component::ParentDir => {
                        out.pop();
                    }
                    std::path::Component::CurDir => {}
                    c => out.push(c),
                }
            }
            return out;
        }
        match (at.parent(), at.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                at = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
            }
            // Nothing of it resolves (no current directory): compare as
            // written.
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether `a` and `b` name the same file, written either way (see
/// [`resolve`]).
pub fn same_file(a: &Path, b: &Path) -> bool {
    resolve(a) == resolve(b)
}

/// Refuses an output file (`flag FILE`) that is one of the files the
/// command reads (`inputs`; standard input, `-`, is none): writing it
/// would replace the user's scenario or configuration with a report.
pub fn not_an_input(flag: &str, output: &Path, inputs: &[&Path]) -> Result<(), InvalidInput> {
    let stdin = |p: &Path| p.as_os_str() == crate::scenario::STDIN_PATH;
    match inputs.iter().find(|i| !stdin(i) && same_file(i, output)) {
        Some(input) => Err(InvalidInput::Flag {
            flag: format!("{flag} {}", output.display()),
            message: format!(
                "{} is an input of this command; writing the report there would replace it: \
                 give the report a file of its own",
                input.display()
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    /// A writer that takes `room` bytes, then fails with `error`.
    struct Failing {
        room: usize,
        taken: Vec<u8>,
        error: std::io::ErrorKind,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(self.error.into());
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            self.taken.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_drops_what_follows_and_other_failures_stay_failures() {
        let pipe = Failing {
            room: 4,
            taken: vec![],
            error: std::io::ErrorKind::BrokenPipe,
        };
        let mut w = UnlessClosed::new(pipe);
        write!(w, "first line\nsecond\n").unwrap();
        write!(w, "more").unwrap();
        w.flush().unwrap();
        assert!(w.closed);
        assert_eq!(w.inner.taken, b"firs");
        let full = Failing {
            room: 4,
            taken: vec![],
            error: std::io::ErrorKind::StorageFull,
        };
        let mut w = UnlessClosed::new(full);
        let e = write!(w, "first line").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::StorageFull);
        assert!(!w.closed);
    }

    #[test]
    fn a_part_says_of_how_many() {
        assert_eq!(part_of(3, 3, "point", "points"), "3 points");
        assert_eq!(part_of(1, 1, "cell", "cells"), "1 cell");
        assert_eq!(part_of(2, 3, "point", "points"), "2 of 3 points");
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colors_wanted(true, None));
        assert!(colors_wanted(true, Some(OsStr::new(""))));
        assert!(!colors_wanted(true, Some(OsStr::new("1"))));
        assert!(!colors_wanted(false, None));
    }
}
