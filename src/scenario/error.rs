//! The error a wrong input is: [`InvalidInput`], with [`Located`], where
//! in the input a problem is. A scenario file, a `--set`, a flag value, an
//! imported configuration or a shard another command wrote: each is read
//! and checked as input, so each of its problems is an `InvalidInput`
//! (the command line exits with status 2). The errors of one command's own
//! inputs (a sweep's axes, a map's shards) live with their modules and are
//! wrapped by [`crate::error::Error`].
//!
//! An error's `Display` never repeats its `source()`: the full message is
//! the chain joined with `": "`. Problems found by the crate itself are
//! part of the message; only errors from outside the crate (I/O, parsers,
//! encoders) are sources.

use std::error::Error as StdError;
use std::fmt;
use std::io;

/// A boxed error from a library outside the crate (a plotting backend, an
/// image encoder, a parser), kept as a source.
pub type BoxedSource = Box<dyn StdError + Send + Sync + 'static>;

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
        error: super::set::SetError,
    },
    /// A policy that passed validation but cannot be resolved.
    #[error("{origin}: policies: {error}")]
    Resolve {
        /// The scenario file.
        origin: String,
        /// What is missing.
        error: crate::policy::ResolveError,
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

/// Problems one per line, in the order found.
fn lines(list: &[Located]) -> String {
    list.iter()
        .map(Located::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
