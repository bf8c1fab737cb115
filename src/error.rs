//! The one error kind the command line treats specially: bad input from the
//! user (a scenario, a flag value, an imported config). It exits with
//! status 2; every other error exits with 1.

use std::fmt;

/// Invalid input, with a message that names the file, the field path and,
/// where known, the line and column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidInput(pub String);

impl fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidInput {}

/// Shorthand for building an `anyhow::Error` that exits with status 2.
pub fn invalid(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InvalidInput(msg.into()))
}
