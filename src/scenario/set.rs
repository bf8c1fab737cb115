//! `--set PATH=VALUE` overrides, applied to a scenario file parsed into a
//! generic JSON value before it is typed, so `run` and `sweep` can change
//! any field without a flag per field.
//!
//! `PATH` is dotted: object keys, array indexes (`policies.0`), or a policy
//! name (`policies.platform`); an index or a name may also be written in
//! brackets (`policies[0]`), as error messages print paths. A segment
//! missing from an object that has exactly one key holding an object — an
//! externally tagged variant such as `{"exponential": {...}}` — is looked
//! up inside that key, so `policies.0.backoff.initial` reaches the
//! exponential backoff's `initial`.

use super::error::shown;
use serde_json::Value;

/// Applies one `PATH=VALUE` assignment to `value`.
///
/// `VALUE` is read as JSON when it parses (`120`, `true`, `{"constant":
/// {"delay": "1s"}}`, `"text"`), else taken as a plain string (`200ms`).
/// Setting a missing leaf key creates it; a missing intermediate is an
/// error. Returns the field written as the value holds it (see
/// [`Written`]).
pub fn apply_set(value: &mut Value, assignment: &str) -> Result<Written, SetError> {
    let (path, raw) = assignment.split_once('=').ok_or(SetError::NoEquals)?;
    let path = path.trim();
    if path.is_empty() {
        return Err(SetError::EmptyPath);
    }
    set_at(value, path, read_value(raw)?)
}

/// [`apply_set`], except that a leaf key the object lacks is created in
/// that object itself, never inside a one-key block it holds: for an
/// object such as `report` holding only `alerts`, which looks like a
/// variant (`{"exponential": {...}}`) without being one. The loader tries
/// this when the variant reading makes the field unknown.
pub(crate) fn apply_set_here(value: &mut Value, assignment: &str) -> Result<Written, SetError> {
    let (path, raw) = assignment.split_once('=').ok_or(SetError::NoEquals)?;
    let segments = path_segments(path.trim())?;
    set_path(value, &segments, read_value(raw)?, false)
}

/// The field an assignment wrote, step by step as the value holds it: a
/// list item by its index, with the variant tags it looked through
/// (`policies.fast.backoff.initial` may be `policies`, `1`, `backoff`,
/// `exponential`, `initial`), as errors about that field name it.
pub type Written = Vec<String>;

/// Puts `new` at `path` under `value`, as `--set PATH=...` does.
pub(crate) fn set_at(value: &mut Value, path: &str, new: Value) -> Result<Written, SetError> {
    let segments = path_segments(path)?;
    set_path(value, &segments, new, true)
}

/// Splits a `--set` path into its steps: `faults[0].outage.start` and
/// `faults.0.outage.start` both give `faults`, `0`, `outage`, `start`. What
/// is in brackets is one step even with dots in it, so a name with dots is
/// written `policies[example.EchoService]`.
pub fn path_segments(path: &str) -> Result<Vec<&str>, SetError> {
    let brackets = || SetError::Brackets {
        path: path.to_string(),
    };
    let mut segments = Vec::new();
    let mut rest = path;
    loop {
        if segments.len() > MAX_PATH_SEGMENTS {
            // Refused before anything walks it: one pass over the text
            // (the segments past the limit only counted).
            return Err(SetError::TooDeep {
                path: path.to_string(),
                segments: path.matches(['.', '[']).count() + 1,
                max: MAX_PATH_SEGMENTS,
            });
        }
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let head = &rest[..end];
        rest = &rest[end..];
        if !head.is_empty() || !rest.starts_with('[') {
            segments.push(head);
        }
        while let Some(open) = rest.strip_prefix('[') {
            let close = open.find(']').ok_or_else(brackets)?;
            let inner = &open[..close];
            if inner.is_empty() || inner.contains('[') {
                return Err(brackets());
            }
            segments.push(inner);
            rest = &open[close + 1..];
        }
        match rest.strip_prefix('.') {
            Some(after) => rest = after,
            None if rest.is_empty() => break,
            None => return Err(brackets()),
        }
    }
    if segments.len() > MAX_PATH_SEGMENTS {
        return Err(SetError::TooDeep {
            path: path.to_string(),
            segments: segments.len(),
            max: MAX_PATH_SEGMENTS,
        });
    }
    if let Some(i) = segments.iter().position(|s| s.is_empty()) {
        return Err(SetError::EmptySegment {
            index: i + 1,
            path: path.to_string(),
        });
    }
    if segments.iter().any(|s| s.contains(']')) {
        return Err(brackets());
    }
    Ok(segments)
}

/// The most segments a `--set` path may have: a scenario is a few levels
/// deep, and a policy name (at most 200 bytes) written with dots adds at
/// most 100, so a longer path names nothing and is refused at once.
pub const MAX_PATH_SEGMENTS: usize = 256;

/// Whether two `--set` paths touch the same field: one is the other or
/// lies within it (`traffic` and `traffic.rate`; `faults[0]` and
/// `faults.0.duration`). Written as given: an index and a name are not
/// resolved against a scenario, so `policies.0` and `policies.fast` do
/// not overlap here even when they name the same policy.
pub fn paths_overlap(a: &str, b: &str) -> bool {
    match (path_segments(a.trim()), path_segments(b.trim())) {
        (Ok(a), Ok(b)) => a.iter().zip(&b).all(|(x, y)| x == y),
        _ => a.trim() == b.trim(),
    }
}

/// Reads the right-hand side of `PATH=VALUE` as [`parse_value`] does,
/// except that text starting like a JSON object, list or string (`{`,
/// `[`, `"`) must parse: `[{"at": "1s"},]` is a mistake in the JSON, not
/// a string value, and the error says where.
pub fn read_value(raw: &str) -> Result<Value, SetError> {
    let t = raw.trim();
    match serde_json::from_str(t) {
        Ok(v) => Ok(v),
        Err(e) if t.starts_with(['{', '[', '"']) => Err(SetError::BadJson {
            value: raw.to_string(),
            error: e.to_string(),
        }),
        Err(_) => Ok(Value::String(raw.to_string())),
    }
}

/// Reads the right-hand side of `PATH=VALUE`: JSON if it parses, else the
/// text itself as a string (so `200ms` needs no quotes).
pub fn parse_value(raw: &str) -> Value {
    serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// Sets `new` at `segments` under `root`; returns where. A missing leaf
/// key goes into a one-key block the object holds when `look_through`.
fn set_path(
    root: &mut Value,
    segments: &[&str],
    new: Value,
    look_through: bool,
) -> Result<Written, SetError> {
    let mut written = Written::new();
    let mut cur = root;
    let mut i = 0;
    loop {
        let (seg, used) = step_at(cur, &segments[i..]);
        let so_far = segments[..i].join(".");
        if i + used == segments.len() {
            let target = leaf_parent(cur, &seg, &mut written, look_through)
                .map_err(|why| at(&so_far, &seg, why))?;
            match target {
                Value::Object(map) => {
                    written.push(seg.clone());
                    map.insert(seg, new);
                }
                Value::Array(items) => {
                    let k = array_index(items, &seg).map_err(|why| at(&so_far, &seg, why))?;
                    written.push(k.to_string());
                    items[k] = new;
                }
                _ => unreachable!("leaf_parent returns containers only"),
            }
            return Ok(written);
        }
        cur = descend(cur, &seg, &mut written).map_err(|why| at(&so_far, &seg, why))?;
        i += used;
    }
}

/// The next step from `cur` along `segments`, and how many segments it
/// takes: in a list, the longest run of segments joined with dots that
/// names an item (`policies.example.EchoService.max_attempts` reaches the
/// policy `example.EchoService`, as `import grpc` names them, even beside
/// one named `example`), else the first segment alone.
fn step_at(cur: &Value, segments: &[&str]) -> (String, usize) {
    if let Value::Array(items) = cur {
        let named = |name: &str| {
            items
                .iter()
                .any(|v| v.get("name").and_then(Value::as_str) == Some(name))
        };
        // Only as many segments as a name can hold (200 bytes), each
        // candidate built once.
        let mut joined = vec![segments[0].to_string()];
        for s in &segments[1..] {
            let next = format!("{}.{s}", joined[joined.len() - 1]);
            if next.len() > crate::check::MAX_NAME_BYTES {
                break;
            }
            joined.push(next);
        }
        if let Some(n) = (2..=joined.len()).rev().find(|&n| named(&joined[n - 1])) {
            return (joined.swap_remove(n - 1), n);
        }
    }
    (segments[0].to_string(), 1)
}

/// The error at segment `seg` after the path walked so far.
fn at(so_far: &str, seg: &str, problem: PathProblem) -> SetError {
    let at = if so_far.is_empty() {
        seg.to_string()
    } else {
        format!("{so_far}.{seg}")
    };
    SetError::At { at, problem }
}

/// The child of `cur` named by `seg` (key, index, or policy name), looking
/// through single-key variant objects; the steps taken go on `written`.
fn descend<'a>(
    cur: &'a mut Value,
    seg: &str,
    written: &mut Written,
) -> Result<&'a mut Value, PathProblem> {
    match cur {
        other if is_datetime(other) => Err(PathProblem::TooLong(kind(other))),
        Value::Object(map) => {
            if map.contains_key(seg) {
                written.push(seg.to_string());
                return Ok(map.get_mut(seg).expect("checked"));
            }
            if is_single_variant(map) {
                let (tag, inner) = map.iter_mut().next().expect("one key");
                written.push(tag.clone());
                return descend(inner, seg, written);
            }
            Err(PathProblem::NoSuchField { fields: keys(map) })
        }
        Value::Array(items) => {
            let i = array_index(items, seg)?;
            written.push(i.to_string());
            Ok(&mut items[i])
        }
        other => Err(PathProblem::TooLong(kind(other))),
    }
}

/// The container in which the final segment `seg` is set: `cur` itself,
/// or the body of a single-key variant that already holds `seg`; the tags
/// looked through go on `written`.
fn leaf_parent<'a>(
    cur: &'a mut Value,
    seg: &str,
    written: &mut Written,
    look_through: bool,
) -> Result<&'a mut Value, PathProblem> {
    let into_variant = match &*cur {
        other if is_datetime(other) => return Err(PathProblem::NotAContainer(kind(other))),
        Value::Object(map) => look_through && !map.contains_key(seg) && is_single_variant(map),
        Value::Array(items) => {
            array_index(items, seg)?;
            false
        }
        other => return Err(PathProblem::NotAContainer(kind(other))),
    };
    if into_variant {
        let (tag, inner) = match cur {
            Value::Object(map) => map.iter_mut().next().expect("one key"),
            _ => unreachable!("checked above"),
        };
        written.push(tag.clone());
        return leaf_parent(inner, seg, written, look_through);
    }
    Ok(cur)
}

/// Whether `map` looks like an externally tagged variant with data: one
/// key whose value is itself an object.
fn is_single_variant(map: &serde_json::Map<String, Value>) -> bool {
    map.len() == 1 && map.values().all(|v| v.is_object() && !is_datetime(v))
}

/// Whether `v` is a TOML date-time as a generic value holds it: an object
/// of one private key that reads back as a date-time. It is one value, as
/// a string is, not an object of settings.
pub(crate) fn is_datetime(v: &Value) -> bool {
    v.as_object().is_some_and(|m| m.len() == 1)
        && serde::Deserialize::deserialize(v).is_ok_and(|_: toml::value::Datetime| true)
}

/// Resolves an array segment: a numeric index, or the `name` of an element.
fn array_index(items: &[Value], seg: &str) -> Result<usize, PathProblem> {
    if let Ok(i) = seg.parse::<usize>() {
        if i < items.len() {
            return Ok(i);
        }
        return Err(PathProblem::OutOfRange {
            index: i,
            len: items.len(),
        });
    }
    let by_name = items
        .iter()
        .position(|v| v.get("name").and_then(Value::as_str) == Some(seg));
    by_name.ok_or_else(|| {
        let names: Vec<&str> = items
            .iter()
            .filter_map(|v| v.get("name").and_then(Value::as_str))
            .collect();
        if names.is_empty() {
            PathProblem::NotAnIndex {
                last: items.len().saturating_sub(1),
            }
        } else {
            PathProblem::NoSuchName {
                names: names.join(", "),
            }
        }
    })
}

fn keys(map: &serde_json::Map<String, Value>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn kind(v: &Value) -> &'static str {
    match v {
        v if is_datetime(v) => "date-time",
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "table",
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
    /// A value that starts like JSON (`{`, `[`, `"`) and does not parse.
    #[error("the value `{}` starts like JSON but does not parse ({error}); JSON takes double quotes and no trailing comma, e.g. '{{\"task_age\": \"30m\"}}'", shown(.value))]
    BadJson {
        /// The value as given.
        value: String,
        /// serde_json's message (with the column).
        error: String,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A value that starts like JSON must be JSON; other text is a string.
    #[test]
    fn broken_json_values_are_refused_and_plain_text_is_a_string() {
        let mut v = doc();
        let e = apply_set(&mut v, r#"faults=[{"outage": {"start": "1s"}},]"#).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("starts like JSON but does not parse"), "{msg}");
        assert!(msg.contains("column"), "{msg}");
        let e = apply_set(&mut v, "report={'stable_for': '1m'}").unwrap_err();
        assert!(matches!(e, SetError::BadJson { .. }), "{e}");
        assert!(apply_set(&mut v, "name=\"unclosed").is_err());
        apply_set(&mut v, "report.stable_for=45s").unwrap();
        assert_eq!(v["report"]["stable_for"], json!("45s"));
        apply_set(&mut v, "name=a[b]").unwrap();
        assert_eq!(v["name"], json!("a[b]"));
    }

    #[test]
    fn paths_overlap_when_one_is_within_the_other() {
        assert!(paths_overlap("traffic", "traffic.rate"));
        assert!(paths_overlap("traffic.rate", "traffic"));
        assert!(paths_overlap("faults[0].duration", "faults.0"));
        assert!(paths_overlap(" seed", "seed "));
        assert!(!paths_overlap("traffic.rate", "traffic.clients"));
        assert!(!paths_overlap("traffic.rate", "traffic.rates"));
        assert!(!paths_overlap("policies.0", "policies.1.max_attempts"));
    }

    fn doc() -> Value {
        json!({
            "name": "x",
            "backend": {"workers": 100},
            "faults": [{"outage": {"start": "5m", "duration": "90s"}}],
            "policies": [
                {"name": "a", "backoff": {"exponential": {"initial": "100ms"}}},
                {"name": "platform", "max_attempts": 5},
            ],
            "report": {"stable_for": "30s"}
        })
    }

    #[test]
    fn sets_numbers_strings_and_json() {
        let mut v = doc();
        apply_set(&mut v, "backend.workers=120").unwrap();
        assert_eq!(v["backend"]["workers"], 120);
        apply_set(&mut v, "name=hello world").unwrap();
        assert_eq!(v["name"], "hello world");
        apply_set(&mut v, "name=\"42\"").unwrap();
        assert_eq!(v["name"], "42");
        apply_set(&mut v, "backend.drop_expired=true").unwrap();
        assert_eq!(v["backend"]["drop_expired"], true);
        apply_set(&mut v, r#"policies.1.backoff={"constant":{"delay":"1s"}}"#).unwrap();
        assert_eq!(v["policies"][1]["backoff"]["constant"]["delay"], "1s");
    }

    #[test]
    fn looks_through_variants() {
        let mut v = doc();
        apply_set(&mut v, "policies.0.backoff.initial=200ms").unwrap();
        assert_eq!(
            v["policies"][0]["backoff"]["exponential"]["initial"],
            "200ms"
        );
        apply_set(&mut v, "policies.0.backoff.max=10s").unwrap();
        assert_eq!(v["policies"][0]["backoff"]["exponential"]["max"], "10s");
        apply_set(&mut v, "faults.0.duration=60s").unwrap();
        assert_eq!(v["faults"][0]["outage"]["duration"], "60s");
        apply_set(&mut v, "faults.0.outage.duration=30s").unwrap();
        assert_eq!(v["faults"][0]["outage"]["duration"], "30s");
    }

    #[test]
    fn addresses_policies_by_name() {
        let mut v = doc();
        apply_set(&mut v, "policies.platform.max_attempts=7").unwrap();
        assert_eq!(v["policies"][1]["max_attempts"], 7);
    }

    #[test]
    fn creates_missing_leaves_only() {
        let mut v = doc();
        apply_set(&mut v, "report.recovery_threshold=0.5").unwrap();
        assert_eq!(v["report"]["recovery_threshold"], 0.5);
        let e = apply_set(&mut v, "dispatcher.max_burst_size=5").unwrap_err();
        assert!(
            e.to_string().starts_with("`dispatcher`: no such field"),
            "{e}"
        );
        let e = apply_set(&mut v, "backend.nope.deeper=1").unwrap_err();
        assert_eq!(
            e,
            SetError::At {
                at: "backend.nope".into(),
                problem: PathProblem::NoSuchField {
                    fields: "workers".into()
                }
            }
        );
    }

    #[test]
    fn reports_bad_paths() {
        let mut v = doc();
        for bad in [
            "noequals",
            "=5",
            "a..b=1",
            "policies.9.max_attempts=1",
            "policies.nobody.max_attempts=1",
            "name.inner=1",
            "backend.workers.x=1",
        ] {
            assert!(apply_set(&mut v, bad).is_err(), "{bad} should fail");
        }
        let e = apply_set(&mut v, "policies.9.max_attempts=1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`policies.9`: index 9 is out of range (the list has 2 items)"
        );
    }

    #[test]
    fn brackets_index_as_dots_do() {
        let mut v = doc();
        apply_set(&mut v, "faults[0].outage.start=1m").unwrap();
        assert_eq!(v["faults"][0]["outage"]["start"], "1m");
        apply_set(&mut v, "policies[1].max_attempts=9").unwrap();
        assert_eq!(v["policies"][1]["max_attempts"], 9);
        apply_set(&mut v, "policies[platform].max_attempts=3").unwrap();
        assert_eq!(v["policies"][1]["max_attempts"], 3);
        let dotted = path_segments("policies.0.backoff.initial").unwrap();
        assert_eq!(
            path_segments("policies[0].backoff.initial").unwrap(),
            dotted
        );
        assert_eq!(path_segments("a[1][2]").unwrap(), ["a", "1", "2"]);
        for bad in [
            "faults[0.outage",
            "faults0].outage",
            "faults[].outage",
            "faults[0]x.outage",
            "faults[[0]]",
        ] {
            let e = path_segments(bad).unwrap_err();
            assert_eq!(e, SetError::Brackets { path: bad.into() }, "{bad}");
        }
        let e = apply_set(&mut v, "policies[9].max_attempts=1").unwrap_err();
        assert_eq!(
            e.to_string(),
            "`policies.9`: index 9 is out of range (the list has 2 items)"
        );
    }

    #[test]
    fn names_with_dots_are_reached_plain_or_in_brackets() {
        let mut v = doc();
        v["policies"][0]["name"] = "example.EchoService".into();
        apply_set(&mut v, "policies.example.EchoService.max_attempts=4").unwrap();
        assert_eq!(v["policies"][0]["max_attempts"], 4);
        apply_set(&mut v, "policies[example.EchoService].max_attempts=5").unwrap();
        assert_eq!(v["policies"][0]["max_attempts"], 5);
        apply_set(&mut v, r#"policies.example.EchoService={"name": "x"}"#).unwrap();
        assert_eq!(v["policies"][0]["name"], "x");
        assert_eq!(
            path_segments("policies[a.b].backoff").unwrap(),
            ["policies", "a.b", "backoff"]
        );
        let e = apply_set(&mut v, "policies.example.Other.max_attempts=1").unwrap_err();
        assert!(e.to_string().starts_with("`policies.example`"), "{e}");
    }

    #[test]
    fn value_after_first_equals_is_kept_whole() {
        let mut v = doc();
        apply_set(&mut v, "description=a=b").unwrap();
        assert_eq!(v["description"], "a=b");
    }
}
