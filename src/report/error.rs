//! Writing results failed: [`OutputError`] (the command line exits with
//! status 1), and how to tell that the reader of standard output went
//! away ([`is_broken_pipe`]).

use crate::scenario::error::BoxedSource;
use std::error::Error as StdError;
use std::io;
use std::path::PathBuf;

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
