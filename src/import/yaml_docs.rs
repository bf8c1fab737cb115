//! The multi-document YAML that the deploy importers (`envoy`, `istio`,
//! `linkerd`) read: the file cut at its `---` lines, each document read as
//! a tree of values, and the reading helpers that refuse a value with the
//! file, line, column and key, as `import gcloud` does.

use super::{closest, Refusals};
use crate::scenario::error::{InvalidInput, Located};
use crate::time::Dur;
use serde_json::Value;

/// The most documents one file may hold (a manifest bundle of a whole
/// cluster has a few hundred).
pub(crate) const MAX_DOCUMENTS: usize = 10_000;

/// One YAML document of a file.
#[derive(Debug)]
pub(crate) struct Doc<'a> {
    /// The file, as errors name it.
    pub(crate) origin: &'a str,
    /// The document's text.
    pub(crate) text: &'a str,
    /// The file's line (1-based) where the document's text starts.
    pub(crate) first_line: usize,
    /// The document's position in the file (0-based).
    pub(crate) index: usize,
    /// The document's value.
    pub(crate) value: Value,
}

/// The documents of `text`, each read as a value; empty documents (a
/// leading `---`, comments only) are left out, and a `kind: List`
/// document stands for its items, one document each. A document the YAML
/// parser refuses is an error with its line and column in the file.
pub(crate) fn documents<'a>(text: &'a str, origin: &'a str) -> Result<Vec<Doc<'a>>, InvalidInput> {
    let mut docs = vec![];
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut pieces: Vec<(usize, &str)> = vec![];
    let mut offset = 0usize;
    for (line_no, line) in (1usize..).zip(text.split_inclusive('\n')) {
        let bare = line.trim_end();
        if bare == "---" || bare.starts_with("--- ") || bare == "..." {
            pieces.push((start_line, &text[start..offset]));
            start = offset + line.len();
            start_line = line_no + 1;
        }
        offset += line.len();
    }
    pieces.push((start_line, &text[start..]));
    if pieces.len() > MAX_DOCUMENTS {
        return Err(InvalidInput::At(Located::whole(
            origin,
            format!(
                "holds {} YAML documents, more than the {MAX_DOCUMENTS} an import reads",
                pieces.len()
            ),
        )));
    }
    for (first_line, piece) in pieces {
        let blank = piece
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'));
        if blank {
            continue;
        }
        let value: Value = serde_saphyr::from_str(piece).map_err(|e| {
            let e = e.without_snippet();
            let loc = e.location().filter(|l| l.line() > 0);
            InvalidInput::At(Located {
                origin: origin.to_string(),
                line: loc
                    .and_then(|l| usize::try_from(l.line()).ok())
                    .map(|l| l + first_line - 1),
                column: loc.and_then(|l| usize::try_from(l.column()).ok()),
                path: None,
                message: format!("not YAML an import can read: {}", first_line_of(&e)),
            })
        })?;
        match list_items(piece, &value) {
            Some(items) => {
                for (item, (line, text)) in items {
                    docs.push(Doc {
                        origin,
                        text,
                        first_line: first_line + line - 1,
                        index: docs.len(),
                        value: item,
                    });
                }
            }
            None => docs.push(Doc {
                origin,
                text: piece,
                first_line,
                index: docs.len(),
                value,
            }),
        }
    }
    Ok(docs)
}

/// The items of a `kind: List` document (what `kubectl get … -o yaml`
/// prints for several resources, or for a kind with no name given), each
/// with the line of the piece where its text starts and that text, so
/// that a refusal inside an item names its own line. `None` when `value`
/// is not such a list. When the items' texts cannot be told apart (a flow
/// sequence), each item is placed at the whole piece.
fn list_items<'a>(piece: &'a str, value: &Value) -> Option<Vec<(Value, (usize, &'a str))>> {
    if value.get("kind").and_then(Value::as_str) != Some("List") {
        return None;
    }
    let items = value.get("items")?.as_array()?;
    let spans = item_spans(piece).filter(|s| s.len() == items.len());
    Some(
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                let span = spans.as_ref().map_or((1, piece), |s| s[i]);
                (item.clone(), span)
            })
            .collect(),
    )
}

/// The texts of the entries of the block sequence under a top-level
/// `items:` key of `piece`, each with its first line (1-based in the
/// piece). `None` when there is no such key.
fn item_spans(piece: &str) -> Option<Vec<(usize, &str)>> {
    let mut lines = (1usize..)
        .zip(piece.split_inclusive('\n'))
        .scan(0usize, |at, (n, l)| {
            let start = *at;
            *at += l.len();
            Some((n, start, l))
        });
    lines.find(|(_, _, l)| l.trim_end() == "items:")?;
    let mut spans: Vec<(usize, usize)> = vec![];
    let mut indent = None;
    let mut end = piece.len();
    for (n, start, line) in lines {
        let Some((col, entry)) = list_line(line) else {
            continue;
        };
        match indent {
            None if entry => indent = Some(col),
            Some(i) if entry && col == i => {}
            Some(i) if col > i => continue,
            _ => {
                end = start;
                break;
            }
        }
        spans.push((n, start));
    }
    let ends = spans.iter().skip(1).map(|&(_, s)| s).chain([end]);
    Some(
        spans
            .iter()
            .zip(ends)
            .map(|(&(n, s), e)| (n, &piece[s..e]))
            .collect(),
    )
}

/// The first line of an error's text, without the parser's position
/// (given separately).
fn first_line_of(e: &impl std::fmt::Display) -> String {
    let s = e.to_string();
    let line = s.lines().next().unwrap_or_default();
    line.split(" at line ").next().unwrap_or(line).to_string()
}

impl Doc<'_> {
    /// Where the value of the last key of `path` (`a.b[0].c`) is written:
    /// each key found, in order, after the one before it. `None` when the
    /// text does not show it (a flow mapping on one line is still found).
    pub(crate) fn place(&self, path: &str) -> Option<(usize, usize)> {
        let steps = steps(path);
        let mut pos = 0usize;
        let mut found = None;
        let mut i = 0;
        while i < steps.len() {
            let (at, used) = match steps[i] {
                // The entry of a block list (`- `) at that place; a flow
                // list (`[a, b]`) is left at the list.
                Step::Index(n) => (nth_item(self.text, pos, n).unwrap_or(pos), 1),
                // A key may hold dots itself (`retry.linkerd.io/limit`):
                // the shortest run of parts written as one key is it.
                Step::Key(_) => (i..steps.len())
                    .take_while(|&j| matches!(steps[j], Step::Key(_)))
                    .find_map(|j| {
                        let key: Vec<&str> = steps[i..=j]
                            .iter()
                            .filter_map(|s| match s {
                                Step::Key(k) => Some(*k),
                                Step::Index(_) => None,
                            })
                            .collect();
                        find_key(self.text, &key.join("."), pos).map(|at| (at, j + 1 - i))
                    })?,
            };
            pos = at;
            found = Some(at);
            i += used;
        }
        let at = found?;
        let before = &self.text[..at];
        let line = before.matches('\n').count();
        let col = before.rsplit('\n').next().unwrap_or(before).chars().count();
        Some((self.first_line + line, col + 1))
    }

    /// A refusal of the value at `path`, placed in the file.
    pub(crate) fn bad(&self, path: &str, msg: impl std::fmt::Display) -> InvalidInput {
        let place = self.place(path);
        InvalidInput::At(Located {
            origin: self.origin.to_string(),
            line: place.map(|p| p.0),
            column: place.map(|p| p.1),
            path: Some(path.to_string()),
            message: msg.to_string(),
        })
    }
}

/// One step of a path such as `spec.routes[1].isRetryable`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step<'a> {
    /// A key of a mapping (or a dot-separated part of one).
    Key(&'a str),
    /// An entry of a list.
    Index(usize),
}

/// The steps of `path`, in order: its dot-separated keys and the list
/// indices written after them (`[1]`); an index that is not a number is
/// left out.
fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = vec![];
    for part in path.split('.') {
        let mut pieces = part.split('[');
        if let Some(key) = pieces.next().filter(|k| !k.is_empty()) {
            out.push(Step::Key(key));
        }
        out.extend(
            pieces
                .filter_map(|p| p.strip_suffix(']')?.parse().ok())
                .map(Step::Index),
        );
    }
    out
}

/// The byte offset in `text` of the content of entry `n` (0-based) of
/// the block list that starts after `from` (the value of its key): the
/// first line there that starts with `- ` sets the entries' indentation,
/// and the list ends at a line indented less, or as much without `-`.
/// `None` for a flow list or a list with fewer entries.
fn nth_item(text: &str, from: usize, n: usize) -> Option<usize> {
    let rest = text.get(from..)?;
    if rest.trim_start_matches([' ', '\t']).starts_with('[') {
        return None;
    }
    let mut offset = from;
    let mut indent = None;
    let mut seen = 0usize;
    for line in rest.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let Some((col, entry)) = list_line(line) else {
            continue;
        };
        match indent {
            // The value's own line (`routes:` ends it) holds no entry.
            None if start == from && !entry => continue,
            None if entry => indent = Some(col),
            None => return None,
            Some(i) if col > i => continue,
            Some(i) if col == i && entry => {}
            Some(_) => return None,
        }
        if seen == n {
            let dash = start + col + 1;
            let content = text[dash..].len() - text[dash..].trim_start_matches([' ', '\t']).len();
            return Some(dash + content);
        }
        seen += 1;
    }
    None
}

/// The byte offset of the value of `key:` at or after `from` in `text`,
/// the key standing alone (after a line start, spaces, `-`, `{` or `,`).
fn find_key(text: &str, key: &str, from: usize) -> Option<usize> {
    let mut search = from;
    while let Some(rel) = text.get(search..)?.find(key) {
        let at = search + rel;
        let before_ok = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, ' ' | '\n' | '\t' | '-' | '{' | ',' | '"' | '\''));
        let after = &text[at + key.len()..];
        let after = after.trim_start_matches(['"', '\'']);
        let rest = after.trim_start_matches([' ', '\t']);
        if before_ok && rest.starts_with(':') {
            let value = rest[1..].trim_start_matches([' ', '\t']);
            return Some(text.len() - value.len());
        }
        search = at + key.len();
    }
    None
}

/// `key` in snake_case: Envoy and Kubernetes YAML accept the proto's
/// lowerCamelCase JSON names as well (`numRetries` = `num_retries`).
pub(crate) fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `key` (snake_case) in lowerCamelCase, the proto's JSON name and a
/// Kubernetes resource's spelling (`is_retryable` → `isRetryable`).
pub(crate) fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of `key` (snake_case, or its camelCase form) in the mapping
/// `v`, with the key as written.
pub(crate) fn get<'v>(v: &'v Value, key: &str) -> Option<(&'v str, &'v Value)> {
    v.as_object()?
        .iter()
        .find(|(k, _)| snake(k) == key)
        .map(|(k, v)| (k.as_str(), v))
}

/// A warning for each key of the mapping `v` (at `path`) that is not in
/// `known` (read) or `unsupported` (read by the source, not by a policy).
pub(crate) fn other_keys(
    v: &Value,
    path: &str,
    what: &str,
    known: &[&str],
    unsupported: &[&str],
    warnings: &mut Vec<String>,
) {
    let Some(map) = v.as_object() else { return };
    for k in map.keys() {
        let s = snake(k);
        if known.contains(&s.as_str()) {
            continue;
        }
        if unsupported.contains(&s.as_str()) {
            warnings.push(format!(
                "{path}.{k}: not imported: a policy cannot express it"
            ));
        } else {
            // The hint is written as the key is: camelCase (Kubernetes
            // resources, Envoy's JSON names) unless it holds a `_`.
            let hint = closest(&s, known)
                .map(|w| {
                    if k.contains('_') {
                        w.to_string()
                    } else {
                        camel(w)
                    }
                })
                .map(|w| format!(" (did you mean `{w}`?)"))
                .unwrap_or_default();
            warnings.push(format!("{path}.{k}: not {what} field; ignored{hint}"));
        }
    }
}

/// Whether `v` at `path` is a mapping; when not, the refusal is recorded,
/// saying what the mapping holds (`what`).
pub(crate) fn mapping(
    doc: &Doc,
    v: &Value,
    path: &str,
    what: &str,
    refused: &mut Refusals,
) -> bool {
    if !v.is_object() {
        refused.add(doc.bad(
            path,
            format!("expected a mapping ({what}), found {}", shown(v)),
        ));
    }
    v.is_object()
}

/// A whole number `0..=max` at `path`, or `None` with the refusal recorded.
pub(crate) fn whole(
    doc: &Doc,
    v: &Value,
    path: &str,
    max: u64,
    refused: &mut Refusals,
) -> Option<u64> {
    let n = match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= max as f64)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n <= max => Some(n),
        _ => {
            refused.add(doc.bad(
                path,
                format!(
                    "expected a whole number from 0 to {max}, found {}",
                    shown(v)
                ),
            ));
            None
        }
    }
}

/// A number at `path` (a YAML number, or a string holding one).
pub(crate) fn number(doc: &Doc, v: &Value, path: &str, refused: &mut Refusals) -> Option<f64> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match n.filter(|f| f.is_finite()) {
        Some(f) => Some(f),
        None => {
            refused.add(doc.bad(path, format!("expected a number, found {}", shown(v))));
            None
        }
    }
}

/// A string at `path`.
pub(crate) fn string<'v>(
    doc: &Doc,
    v: &'v Value,
    path: &str,
    refused: &mut Refusals,
) -> Option<&'v str> {
    match v.as_str() {
        Some(s) => Some(s),
        None => {
            refused.add(doc.bad(path, format!("expected a string, found {}", shown(v))));
            None
        }
    }
}

/// How a duration is written in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DurForm {
    /// Envoy: a proto3 JSON duration, seconds with the suffix `s` (`"0.25s"`).
    Proto,
    /// Kubernetes resources (Istio, Linkerd): a Go duration (`"500ms"`,
    /// `"2s"`, `"1m"`, `"1h30m"`).
    Go,
}

/// A duration greater than 0 at `path`.
pub(crate) fn duration(
    doc: &Doc,
    v: &Value,
    path: &str,
    form: DurForm,
    refused: &mut Refusals,
) -> Option<Dur> {
    let Some(text) = v.as_str() else {
        let want = match form {
            DurForm::Proto => "a duration string such as \"0.25s\"",
            DurForm::Go => "a duration string such as \"500ms\" or \"2s\"",
        };
        refused.add(doc.bad(path, format!("expected {want}, found {}", shown(v))));
        return None;
    };
    let parsed = match form {
        DurForm::Proto => parse_proto(text),
        DurForm::Go => parse_go(text),
    };
    match parsed {
        Ok(d) => Some(d),
        Err(why) => {
            refused.add(doc.bad(path, why));
            None
        }
    }
}

/// A proto3 JSON duration greater than 0.
fn parse_proto(text: &str) -> Result<Dur, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "{text:?} is negative; a duration must be greater than 0"
        ));
    }
    let Some(num) = t.strip_suffix('s') else {
        return Err(format!(
            "{text:?} is not a proto3 duration: seconds ending in \"s\", such as \"0.25s\""
        ));
    };
    let ok = !num.is_empty()
        && num.chars().all(|c| c.is_ascii_digit() || c == '.')
        && num.matches('.').count() <= 1
        && num != ".";
    if !ok {
        return Err(format!(
            "{text:?} is not a proto3 duration: seconds ending in \"s\", such as \"0.25s\""
        ));
    }
    let d = crate::time::parse_duration(t).map_err(|e| e.to_string())?;
    if d.ns() == 0 {
        return Err(format!("{text:?}: a duration must be greater than 0"));
    }
    Ok(d)
}

/// A Go duration (`time.ParseDuration`: a sequence of decimal numbers each
/// with a unit `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`) greater than 0.
fn parse_go(text: &str) -> Result<Dur, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "{text:?} is negative; a duration must be greater than 0"
        ));
    }
    let form = "a duration such as \"500ms\", \"2s\" or \"1m30s\"";
    let mut rest = t.strip_prefix('+').unwrap_or(t);
    if rest.is_empty() {
        return Err(format!("{text:?} is not {form}"));
    }
    let mut total = 0.0f64;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(n);
        let value: f64 = num.parse().map_err(|_| format!("{text:?} is not {form}"))?;
        let u = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(u);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("{text:?} has no unit: {form}")),
            _ => return Err(format!("{text:?} is not {form}")),
        };
        total += value * scale;
        rest = tail;
    }
    if !(total.is_finite() && total > 0.0 && total < 1e9) {
        return Err(format!(
            "{text:?}: a duration must be greater than 0 and below 10^9 s"
        ));
    }
    Ok(Dur((total * 1e9).round() as u64))
}

/// A value as the user wrote it, for messages.
pub(crate) fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "nothing".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "a mapping".into(),
        other => other.to_string(),
    }
}

/// A line of block YAML as a list reads it: its indent and whether it
/// starts an entry (`- `); `None` for a blank or comment line.
fn list_line(line: &str) -> Option<(usize, bool)> {
    let body = line.trim_start_matches(' ');
    if body.trim().is_empty() || body.starts_with('#') {
        return None;
    }
    let entry = body.starts_with("- ") || body.trim_end() == "-";
    Some((line.len() - body.len(), entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_cut_at_their_separators_with_their_first_lines() {
        let text = "a: 1\n---\n# only a comment\n---\nb:\n  c: 2\n";
        let docs = documents(text, "f.yaml").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[1].first_line, 5);
        assert_eq!(docs[1].place("b.c"), Some((6, 6)));
        // A key with dots in it.
        let notes = "metadata:\n  annotations:\n    retry.linkerd.io/limit: x\n";
        let docs = documents(notes, "n.yaml").unwrap();
        assert_eq!(
            docs[0].place("metadata.annotations.retry.linkerd.io/limit"),
            Some((3, 29))
        );
        let bad = documents("a: 1\n---\nb: [1\n", "f.yaml")
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("f.yaml:3:"), "{bad}");
    }

    #[test]
    fn a_list_stands_for_its_items_each_placed_at_its_own_lines() {
        // What `kubectl get virtualservice -o yaml` prints.
        let text = "apiVersion: v1\nitems:\n- kind: A\n  spec:\n    x: 1\n  list:\n  - y\n\
                    - kind: B\n  spec:\n    x: 2\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";
        let docs = documents(text, "l.yaml").unwrap();
        let kinds: Vec<_> = docs.iter().map(|d| d.value["kind"].clone()).collect();
        assert_eq!(kinds, ["A", "B"]);
        assert_eq!((docs[0].first_line, docs[1].first_line), (3, 8));
        assert_eq!(docs[1].index, 1);
        assert_eq!(docs[0].place("spec.x"), Some((5, 8)));
        assert_eq!(docs[1].place("spec.x"), Some((10, 8)));
        // A flow sequence: the items are still read, placed at the list.
        let flow = documents("kind: List\nitems: [{kind: A}, {kind: B}]\n", "f.yaml").unwrap();
        assert_eq!(flow.len(), 2);
        assert_eq!(flow[1].first_line, 1);
        // An empty list holds no documents.
        assert!(documents("kind: List\nitems: []\n", "e.yaml")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn durations_are_read_as_their_source_writes_them() {
        assert_eq!(parse_proto("0.25s"), Ok(Dur::from_millis(250)));
        assert!(parse_proto("250ms").is_err());
        assert!(parse_proto("-1s").unwrap_err().contains("negative"));
        assert!(parse_proto("0s").is_err());
        assert_eq!(parse_go("1m30s"), Ok(Dur::from_secs(90)));
        assert_eq!(parse_go("500ms"), Ok(Dur::from_millis(500)));
        assert!(parse_go("5").unwrap_err().contains("no unit"));
        assert!(parse_go("-2s").unwrap_err().contains("negative"));
    }

    #[test]
    fn camel_case_keys_are_their_snake_case_names() {
        assert_eq!(snake("numRetries"), "num_retries");
        assert_eq!(snake("retry_on"), "retry_on");
        assert_eq!(camel("is_retryable"), "isRetryable");
        assert_eq!(camel("timeout"), "timeout");
    }

    /// A misspelt key's hint is written as the key is: camelCase for a
    /// Kubernetes resource's `isRetryabel`, snake_case for `num_retrys`.
    #[test]
    fn a_misspelt_keys_hint_is_written_in_its_style() {
        let v: Value =
            serde_json::from_str(r#"{"isRetryabel": true, "num_retrys": 1, "x": 0}"#).unwrap();
        let mut w = vec![];
        other_keys(
            &v,
            "r",
            "a route",
            &["is_retryable", "num_retries"],
            &[],
            &mut w,
        );
        assert_eq!(
            w,
            [
                "r.isRetryabel: not a route field; ignored (did you mean `isRetryable`?)",
                "r.num_retrys: not a route field; ignored (did you mean `num_retries`?)",
                "r.x: not a route field; ignored",
            ]
        );
    }

    /// A path's list indices pick the entry of a block list, so that a
    /// refusal in the second route is placed in the second route.
    #[test]
    fn a_path_through_a_list_is_placed_in_its_entry() {
        let text = "spec:\n  routes:\n  - name: a\n    isRetryable: true\n  - name: b\n    \
                    condition: {method: GET}\n    isRetryable: yes\n  other: 1\n";
        let docs = documents(text, "sp.yaml").unwrap();
        assert_eq!(docs[0].place("spec.routes[0].isRetryable"), Some((4, 18)));
        assert_eq!(docs[0].place("spec.routes[1].isRetryable"), Some((7, 18)));
        assert_eq!(docs[0].place("spec.routes[1]"), Some((5, 5)));
        assert_eq!(docs[0].place("spec.routes[2]"), Some((2, 10)));
        // A list written at its key's indentation.
        let flat = "routes:\n- name: a\n- name: b\n  timeout: 1s\n";
        let docs = documents(flat, "sp.yaml").unwrap();
        assert_eq!(docs[0].place("routes[1].timeout"), Some((4, 12)));
        // A flow list: placed at the list.
        let flow = "routes: [{name: a}, {name: b, timeout: 1s}]\n";
        let docs = documents(flow, "sp.yaml").unwrap();
        assert_eq!(docs[0].place("routes[1].timeout"), Some((1, 40)));
    }
}
