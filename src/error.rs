//! The library's one error, [`Error`], and the exit status each kind
//! means on the command line ([`Error::exit_code`]). Every module defines
//! the errors it returns, next to the code that returns them; this module
//! sits just below the command line, wraps them, and re-exports them so
//! `crate::error::X` names any of them:
//!
//! - [`InvalidInput`] (`scenario::error`): the user's scenario, flag or
//!   imported configuration is wrong. Exit status 2. The message names the
//!   file (or the flag), the field path and, where known, the line and
//!   column ([`Located`]).
//! - the errors of one command's own inputs: `--set` paths
//!   ([`SetError`], `scenario::set`), grids, ranges, shards and merges
//!   ([`GridError`], [`RangeError`], [`ShardEnvError`], [`MergeError`],
//!   `sweep`), maps ([`MapError`], `map`), assessments ([`AssessError`],
//!   `assess`). Exit status 2.
//! - [`OutputError`] (`report::error`): a file or stream could not be
//!   written (or read back). Exit status 1. The message names the path;
//!   the `std::io::Error` (or the encoder's error) is kept as the source.
//! - [`RunError`] (`model::error`): a run could not finish — simulated
//!   time stopped advancing (exit status 2, with the settings to change)
//!   or the user pressed Ctrl-C (exit status 130).
//!
//! An error's `Display` never repeats its `source()`: the full message is
//! the chain joined with `": "`, as [`Report`] writes it. Problems found by
//! the crate itself (validation, `--set` paths, grids, shards) are part of
//! the message; only errors from outside the crate (I/O, parsers, encoders)
//! are sources.

pub use crate::assess::AssessError;
pub use crate::map::MapError;
pub use crate::model::error::RunError;
pub use crate::report::{is_broken_pipe, OutputError};
pub use crate::scenario::error::{shown, BoxedSource, InvalidInput, Located, SHOWN_CHARS};
pub use crate::scenario::set::{PathProblem, SetError};
pub use crate::sweep::range::RangeError;
pub use crate::sweep::shard_env::ShardEnvError;
pub use crate::sweep::{EditedShard, GridError, MergeError, PointError};
use std::error::Error as StdError;
use std::fmt;

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
    /// A bad `sweep --set` axis or `--shard` (exit status 2).
    #[error(transparent)]
    Grid(#[from] GridError),
    /// Shard outputs that do not make one sweep (exit status 2).
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// A value range (`A..B:N`) that cannot be expanded (exit status 2).
    #[error(transparent)]
    Range(#[from] RangeError),
    /// `--shards N` without a shard index the environment names (exit
    /// status 2).
    #[error(transparent)]
    ShardEnv(#[from] ShardEnvError),
    /// Map axes that do not make a map, or map shards that do not join
    /// (exit status 2).
    #[error(transparent)]
    Map(#[from] MapError),
    /// A scenario `assess` cannot search (exit status 2).
    #[error(transparent)]
    Assess(#[from] AssessError),
}

impl Error {
    /// The process exit status this error means: 2 for invalid input (a
    /// scenario whose time stops included), 1 for an output failure, 130
    /// for an interruption (Ctrl-C; the command line reports 128 + the
    /// signal that stopped it, 143 for SIGTERM, 129 for SIGHUP).
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Run(RunError::Stalled { .. }) => 2,
            _ if self.is_interrupted() => 130,
            Error::Run(_) | Error::Output(_) => 1,
            Error::Invalid(_)
            | Error::Grid(_)
            | Error::Merge(_)
            | Error::Range(_)
            | Error::ShardEnv(_)
            | Error::Map(_)
            | Error::Assess(_) => 2,
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

impl From<PointError> for Error {
    fn from(e: PointError) -> Error {
        match e {
            PointError::Invalid(e) => Error::Invalid(e),
            PointError::Run(e) => Error::Run(e),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    fn pipe() -> io::Error {
        io::Error::from(io::ErrorKind::BrokenPipe)
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

    #[test]
    fn every_input_error_exits_with_status_2() {
        let errors = [
            Error::from(GridError::NoEquals { arg: "x".into() }),
            Error::from(RangeError::NoCount("1..2".into())),
            Error::from(ShardEnvError::Zero(0)),
            Error::from(MergeError::NoShards),
            Error::from(AssessError::NoTrigger),
            Error::from(PointError::Invalid(InvalidInput::Empty {
                origin: "s.json".into(),
            })),
        ];
        for e in &errors {
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        assert_eq!(Error::from(RunError::Interrupted).exit_code(), 130);
    }
}
