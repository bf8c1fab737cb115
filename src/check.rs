//! Validation problems and the small collector every `check` method writes
//! into.
//!
//! Each kind of thing a scenario can hold (a backoff, a budget, a fault…)
//! checks its own values next to its definition and reports problems here
//! with a field path (`policies[1].backoff.exponential.initial`) in the form
//! the deserialiser uses, so a message points at the same place whether
//! serde or a range check found it. All problems are collected, then
//! reported at once.

use crate::decimal::Given;
use crate::time::Dur;
use std::fmt;

/// One thing wrong with a scenario: where (a field path) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Field path as the deserialiser writes it (`traffic.profile[2].at`).
    pub path: String,
    /// The other fields the problem is about, in the same form: those the
    /// field at `path` was checked against (`initial` for a `max` below
    /// it). A `--set` that wrote one of them is named with the problem.
    pub related: Vec<String>,
    /// What is wrong, written for the person who wrote the file.
    pub message: String,
}

impl Problem {
    /// A problem about the field at `path` alone.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            related: Vec::new(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Collects the problems found by `check` methods.
#[derive(Debug, Default)]
pub struct Problems {
    list: Vec<Problem>,
}

impl Problems {
    /// Records a problem at `path`.
    pub fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.list.push(Problem::new(path, message));
    }

    /// Records a problem at `path` found by checking it against the
    /// fields at `related` (see [`Problem::related`]).
    pub fn err_with<R: Into<String>>(
        &mut self,
        path: impl Into<String>,
        related: impl IntoIterator<Item = R>,
        message: impl Into<String>,
    ) {
        self.list.push(Problem {
            related: related.into_iter().map(Into::into).collect(),
            ..Problem::new(path, message)
        });
    }

    /// A duration that must not be zero.
    pub fn positive_dur(&mut self, path: &str, d: Dur) {
        if d.ns() == 0 {
            self.err(path, "must be greater than 0");
        }
    }

    /// A share in `[0, 1]`; `example` completes "e.g. …" in the message.
    pub fn fraction(&mut self, path: &str, x: f64, example: &str) {
        if !(x.is_finite() && (0.0..=1.0).contains(&x)) {
            self.err(
                path,
                format!(
                    "{} is out of range: a fraction in [0, 1]{example}",
                    Given(x)
                ),
            );
        }
    }

    /// Problems found so far.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// `Ok` when nothing was found, else every problem in the order found.
    pub fn into_result(self) -> Result<(), Vec<Problem>> {
        if self.list.is_empty() {
            Ok(())
        } else {
            Err(self.list)
        }
    }
}

/// Why `name` cannot be used as one file or folder name (and as the text
/// of a CSV cell), if it cannot: scenario names become output folders,
/// and both scenario and policy names reach CSV files and file names, so
/// a name must stay inside the folder the user chose and must not start a
/// spreadsheet formula. Invisible characters, whitespace at either end
/// and reserved device names are `crate::scenario::names`' rules, which
/// run these first.
pub fn unsafe_name(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        return Some("must not be empty");
    }
    if name.contains(['/', '\\']) {
        return Some("must not contain `/` or `\\` (it names a folder or file)");
    }
    if name == "." || name == ".." || name.starts_with('.') {
        return Some("must not start with `.` (it names a folder or file)");
    }
    if name.chars().any(char::is_control) {
        return Some("must not contain control characters");
    }
    if name.starts_with(['=', '+', '-', '@']) {
        return Some(
            "must not start with `=`, `+`, `-` or `@` (a spreadsheet would read it as a formula)",
        );
    }
    if name.len() > MAX_NAME_BYTES {
        return Some("is too long (at most 200 bytes)");
    }
    None
}

/// The longest name (of a scenario, a policy) in bytes: names become
/// folder names and CSV cells.
pub const MAX_NAME_BYTES: usize = 200;

/// The message for a number the user gave, `v`, that breaks the rule
/// "must be `rule`": a value that is no finite number (TOML's `inf` and
/// `nan`) is called so, rather than told it must be a number.
pub fn must_be(v: f64, rule: &str) -> String {
    if v.is_finite() {
        format!("{} must be {rule}", Given(v))
    } else {
        format!("{} is not a finite number: it must be {rule}", Given(v))
    }
}

/// A finite number greater than 0.
pub fn finite_pos(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// A finite number at least 0.
pub fn finite_nonneg(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_that_is_not_finite_is_called_so() {
        assert_eq!(must_be(-2.0, "a number >= 0"), "-2 must be a number >= 0");
        for (v, shown) in [
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(
                must_be(v, "a number greater than 0"),
                format!("{shown} is not a finite number: it must be a number greater than 0")
            );
        }
    }

    #[test]
    fn names_stay_one_safe_path_component() {
        for good in ["spanner-90s", "no jitter", "jitter ±10 %", "v1.2"] {
            assert_eq!(unsafe_name(good), None, "{good}");
        }
        for bad in [
            "",
            " ",
            "../../escaped",
            "a/b",
            "a\\b",
            "/etc",
            "..",
            ".hidden",
            "x\ny",
            "=HYPERLINK(\"x\")",
            "+1",
            "-rm",
            "@SUM(A1)",
        ] {
            assert!(unsafe_name(bad).is_some(), "{bad:?}");
        }
    }
}
