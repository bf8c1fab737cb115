//! What the subcommands share: the flags of every command that simulates
//! ([`SimArgs`]), the standard-output handle every command prints through
//! ([`Stdout`]), and the one place an output directory is created.

use crate::error::OutputError;
use crate::scenario::Scenario;
use clap::Args;
use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// Most replications any command accepts.
pub const MAX_REPLICATIONS: u32 = 10_000;

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
}

impl SimArgs {
    /// Applies `--seed` and `--policy` to a loaded scenario (`--set` is
    /// applied while loading, before validation).
    pub fn apply(&self, s: &mut Scenario) -> Result<(), crate::error::InvalidInput> {
        if let Some(seed) = self.seed {
            s.set_seed(seed);
        }
        s.select_policies(&self.policies)
    }
}

/// Creates the output directory `dir` (and its parents). Each command calls
/// it once, before simulating, so a bad `-o` fails fast; the writers
/// expect the directory to exist.
pub fn create_output_dir(dir: &Path) -> Result<(), OutputError> {
    std::fs::create_dir_all(dir).map_err(|source| OutputError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

/// Standard output, locked, for a command's results. Every write returns an
/// [`OutputError::Stdout`] holding the `std::io::Error`, so a closed pipe
/// (`retrysim ... | head`) reaches the exit-status mapping, which ends the
/// program quietly, instead of panicking the way `println!` does.
pub struct Stdout {
    lock: std::io::StdoutLock<'static>,
}

impl Stdout {
    /// Locks standard output for the rest of the command.
    pub fn lock() -> Stdout {
        Stdout {
            lock: std::io::stdout().lock(),
        }
    }

    /// Whether standard output is a terminal (for colours).
    pub fn is_terminal(&self) -> bool {
        self.lock.is_terminal()
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
