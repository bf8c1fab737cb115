//! Turning scenario text into a typed [`ScenarioSpec`], with errors of the
//! shape `<file>:<line>:<col>: <field path>: <what is wrong>` (parts that
//! are unknown are left out).
//!
//! Without `--set` overrides the typed spec is read straight from the text,
//! so serde's positions are exact. With overrides the text is first read
//! into a `serde_json::Value` (TOML converted), the overrides applied, and
//! the spec read from that value: field paths are kept, positions are not.

use super::set::apply_set;
use super::spec::ScenarioSpec;
use serde::Deserialize;

/// The two file formats a scenario can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

impl Format {
    /// Picks the format from the origin's extension (`.json`, `.toml`);
    /// otherwise JSON when the text starts with `{`, TOML when it does not.
    pub fn detect(origin: &str, text: &str) -> Format {
        let lower = origin.trim().to_ascii_lowercase();
        if lower.ends_with(".toml") {
            Format::Toml
        } else if lower.ends_with(".json") || text.trim_start().starts_with('{') {
            Format::Json
        } else {
            Format::Toml
        }
    }
}

/// Where an error was found, as far as it is known.
#[derive(Debug, Default)]
pub(crate) struct Located {
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub path: Option<String>,
    pub message: String,
}

impl Located {
    /// Renders `<origin>:<line>:<col>: <path>: <message>`.
    pub fn render(&self, origin: &str) -> String {
        let mut out = origin.to_string();
        if let Some(l) = self.line {
            out.push_str(&format!(":{l}"));
            if let Some(c) = self.column {
                out.push_str(&format!(":{c}"));
            }
        }
        out.push_str(": ");
        if let Some(p) = &self.path {
            out.push_str(p);
            out.push_str(": ");
        }
        out.push_str(&self.message);
        out
    }
}

/// Reads the typed spec from `text`, applying `sets` in order.
pub(crate) fn parse(text: &str, format: Format, sets: &[String]) -> Result<ScenarioSpec, Located> {
    if sets.is_empty() {
        return match format {
            Format::Json => from_json_text(text),
            Format::Toml => from_toml_text(text),
        };
    }
    let mut value = match format {
        Format::Json => {
            serde_json::from_str::<serde_json::Value>(text).map_err(|e| json_error(&e, None))?
        }
        Format::Toml => toml::Deserializer::parse(text)
            .and_then(serde_json::Value::deserialize)
            .map_err(|e| toml_error(text, &e, None))?,
    };
    for set in sets {
        apply_set(&mut value, set).map_err(|why| Located {
            message: format!("--set {set}: {why}"),
            ..Located::default()
        })?;
    }
    serde_path_to_error::deserialize::<_, ScenarioSpec>(&value).map_err(|e| {
        let mut loc = json_error(e.inner(), Some(e.path()));
        loc.message
            .push_str(" (after applying the --set overrides)");
        loc
    })
}

fn from_json_text(text: &str) -> Result<ScenarioSpec, Located> {
    let mut de = serde_json::Deserializer::from_str(text);
    let spec = serde_path_to_error::deserialize::<_, ScenarioSpec>(&mut de)
        .map_err(|e| json_error(e.inner(), Some(e.path())))?;
    de.end().map_err(|e| json_error(&e, None))?;
    Ok(spec)
}

fn from_toml_text(text: &str) -> Result<ScenarioSpec, Located> {
    let de = toml::Deserializer::parse(text).map_err(|e| toml_error(text, &e, None))?;
    serde_path_to_error::deserialize::<_, ScenarioSpec>(de)
        .map_err(|e| toml_error(text, e.inner(), Some(e.path())))
}

/// A path as text, or `None` for the document root.
fn path_text(path: Option<&serde_path_to_error::Path>) -> Option<String> {
    // serde_path_to_error writes `?` for a step it could not name (inside
    // a syntax error); keep only the part before it.
    let p = path?.to_string();
    let p = p.split(".?").next().unwrap_or_default();
    (p != "." && p != "?" && !p.is_empty()).then(|| p.to_string())
}

fn json_error(e: &serde_json::Error, path: Option<&serde_path_to_error::Path>) -> Located {
    let full = e.to_string();
    let (line, column) = if e.line() > 0 {
        (Some(e.line()), Some(e.column().max(1)))
    } else {
        (None, None)
    };
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    Located {
        line,
        column,
        path: path_text(path),
        message,
    }
}

fn toml_error(
    text: &str,
    e: &toml::de::Error,
    path: Option<&serde_path_to_error::Path>,
) -> Located {
    let (line, column) = match e.span() {
        Some(span) => {
            let (l, c) = line_col(text, span.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    Located {
        line,
        column,
        path: path_text(path),
        message: e.message().trim_end().to_string(),
    }
}

/// 1-based line and column (in characters) of byte offset `at` in `text`.
pub(crate) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats() {
        assert_eq!(Format::detect("a/b.toml", ""), Format::Toml);
        assert_eq!(Format::detect("a/b.JSON", "x = 1"), Format::Json);
        assert_eq!(
            Format::detect("built-in spanner-90s.json", ""),
            Format::Json
        );
        assert_eq!(Format::detect("<stdin>", "  {\"a\": 1}"), Format::Json);
        assert_eq!(Format::detect("<stdin>", "name = \"x\""), Format::Toml);
    }

    #[test]
    fn line_col_counts_characters() {
        let t = "ab\nçd\nef";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 5), (2, 2));
        assert_eq!(line_col(t, 100), (3, 3));
    }

    #[test]
    fn renders_only_known_parts() {
        let l = Located {
            line: Some(3),
            column: Some(7),
            path: Some("a.b".into()),
            message: "bad".into(),
        };
        assert_eq!(l.render("f.json"), "f.json:3:7: a.b: bad");
        let l = Located {
            message: "bad".into(),
            ..Located::default()
        };
        assert_eq!(l.render("f.json"), "f.json: bad");
    }
}
