//! Turning scenario text into a typed [`ScenarioSpec`], with errors of the
//! shape `<file>:<line>:<col>: <field path>: <what is wrong>` (parts that
//! are unknown are left out).
//!
//! Without `--set` overrides the typed spec is read straight from the text,
//! so serde's positions are exact. With overrides the text is first read
//! into a `serde_json::Value` (TOML converted), the overrides applied, and
//! the spec read from that value: field paths are kept, positions are not.

use super::error::{InvalidInput, Located};
use super::locate::locate;
use super::set::{apply_set, is_datetime, Written};
/// What a `null` for an optional field means in a typed read.
pub(crate) use super::shape::Nulls;
use super::spec::{measured, trace, DistSpec, ScenarioSpec, TrafficSpec};
use serde::de::DeserializeOwned;
use serde::Deserialize;

/// The two file formats a scenario can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON (`.json`).
    Json,
    /// TOML (`.toml`).
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

/// What a scenario file holds, as errors about its top level name it.
const SCENARIO: &str = "a scenario";

/// What each `--set` wrote: the assignment as given and the field as the
/// scenario holds it ([`Written`]), in order.
pub(crate) type Writes = Vec<(String, Written)>;

/// Reads the typed spec from `text`, applying `sets` in order; `origin`
/// names the text in errors. Returns what each override wrote too, so that
/// later problems can be blamed on the override or placed in the file.
pub(crate) fn parse(
    text: &str,
    origin: &str,
    format: Format,
    sets: &[String],
) -> Result<(ScenarioSpec, Writes), InvalidInput> {
    // The file as written, read first: its errors keep their line and
    // column. A syntax error or a key written twice is an error whatever
    // the overrides say; any other error may be about a field an override
    // replaces or supplies, and is judged after them.
    let as_written = from_text::<ScenarioSpec>(text, origin, format, SCENARIO);
    if sets.is_empty() {
        return as_written
            .map(|s| (s, Writes::new()))
            .map_err(InvalidInput::At);
    }
    if let Err(loc) = &as_written {
        if error_field(loc).is_none() || loc.message.starts_with("duplicate field") {
            return Err(InvalidInput::At(loc.clone()));
        }
    }
    let apply = |here: Option<usize>| -> Result<(serde_json::Value, Writes), InvalidInput> {
        let mut value = to_value(text, origin, format).map_err(InvalidInput::At)?;
        let mut writes = Writes::new();
        for (i, set) in sets.iter().enumerate() {
            let written = if here == Some(i) {
                super::set::apply_set_here(&mut value, set)
            } else {
                apply_set(&mut value, set)
            }
            .map_err(|error| InvalidInput::Set {
                origin: origin.to_string(),
                assignment: set.clone(),
                error,
            })?;
            writes.push((set.clone(), written));
        }
        Ok((value, writes))
    };
    let (value, writes) = apply(None)?;
    let e = match read::<_, ScenarioSpec>(&value) {
        Ok(spec) => return Ok((spec, writes)),
        Err(e) => e,
    };
    // An override of a key a one-key block lacks went into that block, as
    // into a variant's body (`backoff.max` into `exponential`); when the
    // block is a plain object instead (`report` holding only `alerts`),
    // the key is unknown there: it belongs beside the block.
    let unknown = e.inner().to_string().starts_with("unknown field");
    let at = field_of(&e.path().to_string());
    if let Some(i) = writes.iter().position(|(_, w)| unknown && *w == at) {
        if let Ok((beside, writes)) = apply(Some(i)) {
            if let Ok(spec) = read::<_, ScenarioSpec>(&beside) {
                return Ok((spec, writes));
            }
        }
    }
    let mut loc = json_error(e.inner(), "", origin, Some(e.path()));
    explain::<ScenarioSpec>(&mut loc, SCENARIO, || Some(value.clone()));
    let field = error_field(&loc).unwrap_or_default();
    match set_touching(&field, &writes) {
        Some(set) => {
            loc.message.push_str(&after_set(set));
            loc.message.push_str(&quote_hint(&loc.message, set));
        }
        // Not a field any override wrote: the file's own error, as reading
        // it alone put it, or where the file wrote the field.
        None => match &as_written {
            Err(own) if error_field(own) == error_field(&loc) => {
                return Err(InvalidInput::At(own.clone()))
            }
            _ => {
                let at = loc.path.as_deref().and_then(|p| locate(text, format, p));
                (loc.line, loc.column) = (at.map(|a| a.0), at.map(|a| a.1));
            }
        },
    }
    Err(InvalidInput::At(loc))
}

/// The folder a data file named in the scenario `origin` (a trace, a
/// histogram) is resolved from: the scenario's own folder, or the
/// current one for standard input and text without a folder.
fn data_folder(origin: &str) -> std::path::PathBuf {
    match std::path::Path::new(origin).parent() {
        Some(p) if origin != "<stdin>" && !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    }
}

/// Why a data file's name (as the scenario writes it) is refused: a
/// scenario reads files in its own folder and below only.
fn refused_name(name: &str) -> Option<&'static str> {
    let p = std::path::Path::new(name);
    if name.trim().is_empty() {
        Some("is empty: name a file in the scenario's folder")
    } else if p.is_absolute() || name.starts_with(['/', '\\']) || p.has_root() || drive(name) {
        Some("must be relative to the scenario's folder (an absolute path is refused: a scenario reads only files in its own folder and below)")
    } else if name.split(['/', '\\']).any(|c| c == "..") {
        Some("must not contain `..`: a scenario reads only files in its own folder and below")
    } else if name == super::STDIN_PATH {
        Some("`-` (standard input) cannot be a data file; name a file in the scenario's folder")
    } else {
        None
    }
}

/// Whether `name` starts with a Windows drive (`C:`).
fn drive(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Reads the data files the scenario names (`traffic.trace.file`, a
/// histogram's `file`), relative to the folder of `origin`, into `spec`:
/// a trace's rate into `traffic.rate` and `traffic.profile` (or its
/// arrivals aside), a histogram's rows into its buckets. Problems with a
/// field are placed in `text` (or blamed on the override in `writes`),
/// problems in a file get its line and column.
pub(crate) fn read_data_files(
    spec: &mut super::spec::ScenarioSpec,
    text: &str,
    origin: &str,
    format: Format,
    writes: &Writes,
) -> Result<(), InvalidInput> {
    let files = DataFiles {
        text,
        origin,
        format,
        writes,
        folder: data_folder(origin),
    };
    files.trace(&mut spec.traffic)?;
    for (path, d) in distributions(spec) {
        files.histogram(&path, d)?;
    }
    Ok(())
}

/// What reading a scenario's data files needs to place its problems: the
/// scenario's text, where it came from and its format, the overrides that
/// wrote into it, and the folder its files are named from.
struct DataFiles<'a> {
    text: &'a str,
    origin: &'a str,
    format: Format,
    writes: &'a Writes,
    folder: std::path::PathBuf,
}

impl DataFiles<'_> {
    /// A problem with the field at `path`, placed in the scenario's text;
    /// blamed on the override that wrote the field, or else one of the
    /// `related` fields it was checked against.
    fn field(&self, path: &str, related: &[String], message: String) -> Located {
        let touching = |p: &str| set_touching(&field_of(p), self.writes);
        let (at, message) = match touching(path) {
            Some(set) => (None, message + &after_set(set)),
            None => {
                let at = locate(self.text, self.format, path);
                match related.iter().find_map(|r| touching(r)) {
                    Some(set) => (at, message + &after_set(set)),
                    None => (at, message),
                }
            }
        };
        Located {
            origin: self.origin.to_string(),
            line: at.map(|a| a.0),
            column: at.map(|a| a.1),
            path: Some(path.to_string()),
            message,
        }
    }

    /// The file named at `path`, read, with the name errors give it.
    fn read_file(&self, path: &str, name: &str) -> Result<(String, String), InvalidInput> {
        if let Some(why) = refused_name(name) {
            return Err(InvalidInput::At(self.field(path, &[], why.to_string())));
        }
        let file = self.folder.join(name);
        let shown = if self.folder == std::path::Path::new(".") {
            name.to_string()
        } else {
            file.display().to_string()
        };
        let content = super::read_text_of(&file, super::InputKind::Data).map_err(|e| match e {
            InvalidInput::Unreadable { source, .. } => {
                InvalidInput::At(self.field(path, &[], format!("cannot read {shown}: {source}")))
            }
            other => other,
        })?;
        Ok((content, shown))
    }

    /// The traffic's trace, if it has one: checked against the rest of
    /// the traffic block first, then read into it.
    fn trace(&self, t: &mut TrafficSpec) -> Result<(), InvalidInput> {
        let Some(tr) = &t.trace else {
            return Ok(());
        };
        let problems = trace::conflicts(t);
        if !problems.is_empty() {
            return Err(InvalidInput::Problems(
                problems
                    .into_iter()
                    .map(|(p, related, m)| self.field(&p, &related, m))
                    .collect(),
            ));
        }
        let (content, shown) = self.read_file("traffic.trace.file", &tr.file.clone())?;
        trace::apply(t, &content).map_err(|p| match p {
            trace::TraceProblem::File(p) => in_file(&shown, "traffic.trace", p),
            trace::TraceProblem::Field(path, related, m) => {
                InvalidInput::At(self.field(&path, &related, m))
            }
        })
    }

    /// The distribution at `path`, if it is a histogram whose buckets are
    /// in a `file` (and not also written out): the file's rows read into
    /// its buckets.
    fn histogram(&self, path: &str, d: &mut DistSpec) -> Result<(), InvalidInput> {
        let DistSpec::Histogram(h) = d else {
            return Ok(());
        };
        let Some(name) = h.file.clone() else {
            return Ok(());
        };
        let at = format!("{path}.histogram.file");
        if !h.buckets.is_empty() {
            return Err(InvalidInput::At(self.field(
                &at,
                &[format!("{path}.histogram.buckets")],
                "give either `buckets` or a `file` of them, not both".into(),
            )));
        }
        let (content, shown) = self.read_file(&at, &name)?;
        h.buckets = measured::buckets_from_csv(&content)
            .map_err(|p| in_file(&shown, &format!("{path}.histogram"), p))?;
        Ok(())
    }
}

/// A problem inside the data file shown as `shown`, read for the field at
/// `path`: placed at the file's own line and column.
fn in_file(shown: &str, path: &str, p: trace::FileProblem) -> InvalidInput {
    InvalidInput::At(Located {
        origin: shown.to_string(),
        line: Some(p.line),
        column: Some(p.column),
        path: Some(path.to_string()),
        message: p.message,
    })
}

/// The distributions of the scenario that may be histograms read from a
/// file, with their paths, in the order their problems are reported.
fn distributions(spec: &mut ScenarioSpec) -> Vec<(String, &mut DistSpec)> {
    let mut dists: Vec<(String, &mut DistSpec)> = vec![];
    let t = &mut spec.traffic;
    dists.extend(
        t.network_delay
            .as_mut()
            .map(|d| ("traffic.network_delay".into(), d)),
    );
    dists.extend(
        t.think_time
            .as_mut()
            .map(|d| ("traffic.think_time".into(), d)),
    );
    dists.extend(
        spec.backend
            .service_time
            .as_mut()
            .map(|d| ("backend.service_time".into(), d)),
    );
    for (i, d) in spec.downstream.iter_mut().enumerate() {
        if let Some(st) = d.backend.service_time.as_mut() {
            dists.push((format!("downstream[{i}].backend.service_time"), st));
        }
    }
    dists
}

/// A hint for a `--set` value read as a number or a boolean where text
/// is expected (`--set name=123`): how to write it as a JSON string.
fn quote_hint(message: &str, set: &str) -> String {
    let plain = ["integer", "floating point", "boolean"]
        .iter()
        .any(|k| message.starts_with(&format!("invalid type: {k}")));
    match set.split_once('=') {
        Some((path, value)) if plain && message.contains("expected a string") => format!(
            "; a value that reads as a number or true/false is taken as one: for the text, \
             write --set '{}=\"{}\"'",
            path.trim(),
            value.trim()
        ),
        _ => String::new(),
    }
}

/// The note that ends a problem with a field an override wrote, or one it
/// was checked against: ` (after --set PATH=VALUE)`, a long value cut.
pub(crate) fn after_set(set: &str) -> String {
    format!(" (after --set {})", super::error::shown(set))
}

/// The field an error is about, step by step: its path, and for a missing
/// field the field itself (`missing field \`rate\`` at `traffic` is about
/// `traffic.rate`); `None` for an error about no field (a syntax error).
fn error_field(loc: &Located) -> Option<Written> {
    let mut field: Written = match loc.path.as_deref() {
        Some(p) => super::set::path_segments(p)
            .ok()?
            .into_iter()
            .map(str::to_string)
            .collect(),
        None => Written::new(),
    };
    if let Some(missing) = loc
        .message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
    {
        field.push(missing.to_string());
    }
    (!field.is_empty()).then_some(field)
}

/// The last override of `writes` that wrote the field `field` (as
/// [`Written`] steps), a field within it or one around it: the override
/// whose value is in effect there. `None` when the field is as the file
/// wrote it.
pub(crate) fn set_touching<'a>(field: &[String], writes: &'a Writes) -> Option<&'a str> {
    writes
        .iter()
        .rev()
        .find(|(_, written)| field.iter().zip(written).all(|(a, b)| a == b))
        .map(|(set, _)| set.as_str())
}

/// A problem's path (`policies[1].max_attempts`) as [`Written`] steps.
pub(crate) fn field_of(path: &str) -> Written {
    super::set::path_segments(path)
        .map(|s| s.into_iter().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Reads a typed value from `de` with the path of any problem: the one
/// typed read of scenario input, so that a group of settings is an object
/// wherever it is read (see [`shape`](super::shape)).
pub(crate) fn read<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    de: D,
) -> Result<T, serde_path_to_error::Error<D::Error>> {
    read_with(de, Nulls::Refuse)
}

/// [`read`], with a `null` for an optional field read as `nulls` says.
fn read_with<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    de: D,
    nulls: Nulls,
) -> Result<T, serde_path_to_error::Error<D::Error>> {
    serde_path_to_error::deserialize(super::shape::Objects(de, nulls))
}

/// Reads JSON or TOML text into a generic JSON value (TOML converted), for
/// changes before the typed read.
pub(crate) fn to_value(
    text: &str,
    origin: &str,
    format: Format,
) -> Result<serde_json::Value, Located> {
    match format {
        Format::Json => serde_json::from_str::<serde_json::Value>(text)
            .map_err(|e| json_error(&e, text, origin, None)),
        Format::Toml => toml::Deserializer::parse(text)
            .and_then(serde_json::Value::deserialize)
            .map_err(|e| toml_error(text, &e, origin, None)),
    }
}

/// Reads a typed value straight from the text, so errors carry exact
/// positions and field paths; `what` the text holds ("a scenario") is
/// named when its top level is not an object.
pub(crate) fn from_text<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    format: Format,
    what: &str,
) -> Result<T, Located> {
    from_text_with(text, origin, format, what, Nulls::Refuse)
}

/// [`from_text`] for a format of someone else's (a gRPC service config,
/// protobuf JSON), with a `null` for an optional field read as `nulls`
/// says.
pub(crate) fn from_text_with<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    format: Format,
    what: &str,
    nulls: Nulls,
) -> Result<T, Located> {
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let value = read_with::<_, T>(&mut de, nulls).map_err(|e| {
                let mut loc = json_error(e.inner(), text, origin, Some(e.path()));
                explain::<T>(&mut loc, what, || to_value(text, origin, format).ok());
                loc
            })?;
            de.end().map_err(|e| json_error(&e, text, origin, None))?;
            Ok(value)
        }
        Format::Toml => {
            let de =
                toml::Deserializer::parse(text).map_err(|e| toml_error(text, &e, origin, None))?;
            read_with::<_, T>(de, nulls).map_err(|e| {
                let mut loc = toml_error(text, e.inner(), origin, Some(e.path()));
                explain::<T>(&mut loc, what, || to_value(text, origin, format).ok());
                loc
            })
        }
    }
}

/// What [`plain_words`] says when a group of settings (`"traffic": {...}`)
/// or a kind that takes settings (`{"exponential": {"mean": "10ms"}}`) is
/// given as a plain value, or a kind is named without its settings.
const SETTINGS_EXPECTED: &str = "expected an object of its settings";

/// Adds the settings' names to a [`SETTINGS_EXPECTED`] problem:
/// "backend.service_time.exponential: invalid type: string "10ms",
/// expected an object of its settings (`mean`)". serde's type error does
/// not list them, but its unknown-field error does: the input is read
/// again (from `value`, the input as a generic value) with an object
/// holding a key nothing has where the settings
/// go, and the names are taken from that error. The settings go at the
/// path itself, or, when the path ends in the name of a kind given alone
/// (`"backoff": "exponential"`), under that name at the path's parent.
/// Nothing is added when the second read fails otherwise.
fn name_settings<T: DeserializeOwned>(loc: &mut Located, mut value: serde_json::Value, path: &str) {
    const NO_SUCH_KEY: &str = "\u{1}";
    let probe = serde_json::json!({ NO_SUCH_KEY: 0 });
    // Settings beside the path go: one that sorts before it and has a
    // problem of its own would be read, and refused, first.
    if let Ok(steps) = super::set::path_segments(path) {
        keep_only_path(&mut value, &steps);
    }
    let placed = super::set::set_at(&mut value, path, probe.clone()).is_ok()
        || path.rsplit_once('.').is_some_and(|(field, kind)| {
            super::set::set_at(&mut value, field, serde_json::json!({ kind: probe })).is_ok()
        });
    if !placed {
        return;
    }
    let Some((at, message)) = problem_in::<T>(&value) else {
        return;
    };
    let Some(expected) = message
        .strip_prefix(&format!("unknown field `{NO_SUCH_KEY}`, expected "))
        .filter(|_| at.starts_with(path))
    else {
        return;
    };
    let names: Vec<String> = expected_names(expected)
        .iter()
        .map(|n| format!("`{n}`"))
        .collect();
    loc.message.push_str(&format!(" ({})", names.join(", ")));
}

/// `doc` with only what lies along `path` (see [`keep_only_path`]): a
/// setting beside it that sorts first and has a problem of its own would
/// be read, and refused, before the one at `path`.
fn only_path(doc: &serde_json::Value, path: &str) -> serde_json::Value {
    let mut value = doc.clone();
    if let Ok(steps) = super::set::path_segments(path) {
        keep_only_path(&mut value, &steps);
    }
    value
}

/// Removes from each object along `steps` every key but the next step
/// (lists keep their items: an item's place is part of the path).
fn keep_only_path(value: &mut serde_json::Value, steps: &[&str]) {
    let Some((step, rest)) = steps.split_first() else {
        return;
    };
    let next = match value {
        serde_json::Value::Object(map) => {
            map.retain(|key, _| key == step);
            map.get_mut(*step)
        }
        serde_json::Value::Array(items) => {
            step.parse::<usize>().ok().and_then(|i| items.get_mut(i))
        }
        _ => None,
    };
    if let Some(next) = next {
        keep_only_path(next, rest);
    }
}

/// What serde says of `doc` read as `T`: `None` when it reads, else the
/// problem's path and message.
fn problem_in<T: DeserializeOwned>(doc: &serde_json::Value) -> Option<(String, String)> {
    read::<_, T>(doc)
        .err()
        .map(|e| (e.path().to_string(), e.inner().to_string()))
}

/// The names in serde's list of what it expected (`` `a` ``, or
/// `` one of `a`, `b` or `c` ``), without their quotes.
fn expected_names(list: &str) -> Vec<String> {
    list.strip_prefix("one of ")
        .unwrap_or(list)
        .replace(" or ", ", ")
        .split(", ")
        .map(|n| n.trim_matches('`').to_string())
        .collect()
}

/// Says more than serde does about a problem with a setting, reading the
/// input again as a generic value (`document`, made only when needed):
/// what was found where one of several kinds was expected or at the top
/// level (`what` the input is, "a scenario"), a TOML date-time serde
/// takes for an object, the settings a kind or a group takes, and the
/// kinds a setting may be.
fn explain<T: DeserializeOwned>(
    loc: &mut Located,
    what: &str,
    document: impl FnOnce() -> Option<serde_json::Value>,
) {
    let choice = loc.message == "expected value"
        || loc.message.ends_with(CHOICE_EXPECTED)
        || loc.message == SEVERAL_KEYS;
    let settings = loc.message.ends_with(SETTINGS_EXPECTED);
    // A TOML date-time reaches serde as an object of one private key.
    let object = loc.message.starts_with(OBJECT_FOUND) || loc.message.starts_with("unknown field");
    if !choice && !settings && !object {
        return;
    }
    let doc = document();
    let Some(path) = loc.path.clone() else {
        // The text may not read as a value (a list left open): the
        // problem still says what was found.
        let list = loc.message.starts_with("invalid type: a list,");
        let top = match &doc {
            Some(doc) => Some(found(doc)),
            None => list.then_some("a list"),
        };
        if let Some(top) = top.filter(|_| settings && loc.message.starts_with("invalid type: ")) {
            loc.message =
                format!("the top level must be an object of settings ({what}), not {top}");
        }
        return;
    };
    let Some(doc) = doc else {
        return;
    };
    if choice {
        // serde_json's "expected value", TOML's bare type error and the
        // single-key error (alike for no key and for several) do not say
        // what was found, nor what each kind takes: the document does.
        // Without a value there, "expected value" is a real syntax error.
        if let Some(message) = describe_choice::<T>(&doc, &path) {
            loc.message = message;
        }
    } else if settings {
        name_settings::<T>(loc, doc, &path);
    } else if value_at(&doc, &path).is_some_and(is_datetime) {
        // A plain setting (`rate = 07:32:00`).
        let rest = &loc.message[OBJECT_FOUND.len()..];
        loc.message = format!("invalid type: a date-time,{rest}");
    } else if let Some((group, _)) = path
        .rsplit_once('.')
        .filter(|(group, _)| value_at(&doc, group).is_some_and(is_datetime))
    {
        // A group of settings, or a kind's settings: serde read the
        // date-time's private key as one of them.
        loc.path = Some(group.to_string());
        loc.message = format!("invalid type: a date-time, {SETTINGS_EXPECTED}");
        name_settings::<T>(loc, doc, group);
    }
}

/// The start of [`plain_words`]' type error when an object was found.
const OBJECT_FOUND: &str = "invalid type: an object,";

/// What `v` is, in the words of the type errors: "a list", "a number".
fn found(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        v if is_datetime(v) => "a date-time",
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::String(_) => "a string",
        Value::Number(_) => "a number",
        Value::Bool(_) => "a boolean",
        Value::Null => "null",
    }
}

/// What [`plain_words`] says when a setting that is one of several kinds
/// holds an object of several keys (`{"proportional": 0.1, "full": ...}`,
/// or a setting added beside the kind's name).
const SEVERAL_KEYS: &str =
    "an object of several keys, expected one key, the kind's name, holding its settings";

/// The end of serde's problem (in [`plain_words`]) when a setting that is
/// one of several kinds holds a value of another type.
const CHOICE_EXPECTED: &str = "expected a name or a one-key object";

/// The problem with a setting that is one of several kinds (`"jitter":
/// "full"` or `{"proportional": 0.1}`) and holds a number, a list, a
/// boolean, null, or an object of no key or several: what was found, the
/// shape expected, and the kinds. Whether a kind is written as its bare
/// name or as a one-key object holding its settings is found by trying
/// each at `path`. `None` when the document holds no such value there.
fn describe_choice<T: DeserializeOwned>(doc: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    let value = value_at(doc, path)?;
    let found = match value {
        v if is_datetime(v) => format!("invalid type: {}", found(v)),
        Value::Object(map) if map.len() > 1 => "an object of several keys".into(),
        Value::Object(map) if map.is_empty() => "an empty object".into(),
        Value::Number(_) | Value::Array(_) | Value::Bool(_) | Value::Null => {
            format!("invalid type: {}", found(value))
        }
        _ => return None,
    };
    let kinds = kinds_at::<T>(doc, path)?;
    let bare = kinds
        .iter()
        .filter(|k| accepts::<T>(doc, path, serde_json::json!(k)))
        .count();
    let expected = if bare == kinds.len() {
        "a name"
    } else if bare == 0 {
        "an object of one key, the kind's name, holding its settings"
    } else {
        "a name, or an object of one key, the kind's name, holding its settings"
    };
    let kinds: Vec<String> = kinds.iter().map(|k| format!("`{k}`")).collect();
    Some(format!(
        "{found}, expected {expected} (one of {})",
        kinds.join(", ")
    ))
}

/// Whether `doc` with `value` at `path` reads without a problem there or
/// within it.
fn accepts<T: DeserializeOwned>(
    doc: &serde_json::Value,
    path: &str,
    value: serde_json::Value,
) -> bool {
    let mut doc = only_path(doc, path);
    if super::set::set_at(&mut doc, path, value).is_err() {
        return false;
    }
    // A problem elsewhere is not about this value; serde names the variant
    // too (`kind.Share`) when a bare name lacks its settings.
    problem_in::<T>(&doc).is_none_or(|(at, _)| {
        !at.strip_prefix(path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
    })
}

/// The value `doc` holds at a problem's `path` (`policies[0].jitter`):
/// objects by key, lists by index.
fn value_at<'a>(doc: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    let mut cur = doc;
    for step in super::set::path_segments(path).ok()? {
        cur = match cur {
            serde_json::Value::Array(items) => items.get(step.parse::<usize>().ok()?)?,
            other => other.get(step)?,
        };
    }
    Some(cur)
}

/// The kinds a setting at `path` may be. serde lists them only for a name
/// it does not know, so the input is read again with a name no kind has
/// at `path`, and the names are taken from that error; `None` when the
/// second read fails otherwise.
fn kinds_at<T: DeserializeOwned>(doc: &serde_json::Value, path: &str) -> Option<Vec<String>> {
    const NO_SUCH_KIND: &str = "\u{1}";
    let mut value = only_path(doc, path);
    super::set::set_at(&mut value, path, serde_json::json!(NO_SUCH_KIND)).ok()?;
    let (at, message) = problem_in::<T>(&value)?;
    if at != path {
        return None;
    }
    let kinds = message.strip_prefix(&format!("unknown variant `{NO_SUCH_KIND}`, expected "))?;
    Some(expected_names(kinds))
}

/// A path as text, or `None` for the document root.
fn path_text(path: Option<&serde_path_to_error::Path>) -> Option<String> {
    // serde_path_to_error writes `?` for a step it could not name (inside
    // a syntax error); keep only the part before it.
    let p = path?.to_string();
    let p = p.split(".?").next().unwrap_or_default();
    (p != "." && p != "?" && !p.is_empty()).then(|| p.to_string())
}

/// A serde_json error as a [`Located`] problem of `origin`: its line and
/// column taken out of the message into the position, the column counted
/// in characters of `text`, the text read (empty for a value read after
/// overrides, whose errors have no position).
pub(crate) fn json_error(
    e: &serde_json::Error,
    text: &str,
    origin: &str,
    path: Option<&serde_path_to_error::Path>,
) -> Located {
    let full = e.to_string();
    let (line, column) = match json_position(text, e) {
        Some((line, column)) => (Some(line), Some(column)),
        None => (None, None),
    };
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = plain_words(full.strip_suffix(&suffix).unwrap_or(&full));
    Located {
        origin: origin.to_string(),
        line,
        column,
        path: path_text(path),
        message,
    }
}

fn toml_error(
    text: &str,
    e: &toml::de::Error,
    origin: &str,
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
        origin: origin.to_string(),
        line,
        column,
        path: path_text(path),
        message: plain_words(e.message().trim_end()),
    }
}

/// serde's wording of a type mismatch in the scenario's terms: Rust type
/// and variant names (`u32`, `struct variant DistSpec::Constant`) mean
/// nothing to someone writing a scenario file.
pub(crate) fn plain_words(message: &str) -> String {
    let mut out = message.replace(
        "invalid type: unit variant, expected struct variant",
        &format!("a bare name, {SETTINGS_EXPECTED}"),
    );
    // serde_json's wording for an enum read from a value (after --set).
    out = out.replace("expected string or map", CHOICE_EXPECTED);
    // TOML's wording of the same two problems.
    if out == "wanted string or table" {
        return CHOICE_EXPECTED.to_string();
    }
    if out.starts_with("wanted exactly 1 element, ") {
        return SEVERAL_KEYS.to_string();
    }
    // A kind written with several keys (`{"proportional": 0.1, "full":
    // ...}`, or a setting added beside the kind's name).
    out = out.replace(
        "invalid value: map, expected map with a single key",
        SEVERAL_KEYS,
    );
    // A kind that takes settings, or a group of settings (`expected
    // struct TrafficSpec`).
    if let Some(at) = out.find("expected struct ") {
        out.truncate(at);
        out.push_str(SETTINGS_EXPECTED);
    }
    // JSON's names for the containers, not serde's.
    for (serde, json) in [
        ("invalid type: map,", "invalid type: an object,"),
        ("invalid type: sequence,", "invalid type: a list,"),
        ("invalid type: unit value,", "invalid type: null,"),
    ] {
        out = out.replace(serde, json);
    }
    for (serde, json) in [
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected an object"),
    ] {
        if let Some(head) = out.strip_suffix(serde) {
            out = format!("{head}{json}");
        }
    }
    for rust in ["expected f64", "expected f32"] {
        if let Some(head) = out.strip_suffix(rust) {
            return format!("{head}expected a number");
        }
    }
    let unsigned = [
        ("u8", u64::from(u8::MAX)),
        ("u16", u64::from(u16::MAX)),
        ("u32", u64::from(u32::MAX)),
        ("u64", u64::MAX),
        ("usize", usize::MAX as u64),
    ];
    for (rust, max) in unsigned {
        if let Some(head) = out.strip_suffix(&format!("expected {rust}")) {
            // Not "from 0": many counts start at 1 (`workers`, `clients`),
            // and their own check says so.
            return format!("{head}expected a whole number up to {max}");
        }
    }
    if let Some(head) = out.strip_suffix("expected i64") {
        return format!("{head}expected a whole number");
    }
    out
}

/// The line and column (in characters, 1-based) of a serde_json error in
/// `text`; `None` for an error without a position. serde_json counts the
/// column in bytes, up to and including the last byte it read: a name
/// such as "ééééé" would push every column after it to the right.
///
/// A list refused where an object goes is reported after serde_json has
/// looked past the `[` for the list's end (over spaces and line breaks,
/// to the first item, or past the `]` of an empty list): such an error is
/// placed back on the `[`, where the list starts.
pub(crate) fn json_position(text: &str, e: &serde_json::Error) -> Option<(usize, usize)> {
    if e.line() == 0 {
        return None;
    }
    // The byte serde_json read last, counted by [`line_col`] as the rest.
    let line_start: usize = text
        .split('\n')
        .take(e.line() - 1)
        .map(|row| row.len() + 1)
        .sum();
    let mut at = line_start + e.column().saturating_sub(1);
    if e.to_string().starts_with("invalid type: sequence") {
        at = list_start(text.as_bytes(), at).unwrap_or(at);
    }
    Some(line_col(text, at))
}

/// The `[` that a list read up to byte `at` starts with: back from `at`
/// over white space and at most one `]` (an empty list).
fn list_start(text: &[u8], at: usize) -> Option<usize> {
    let mut at = at.min(text.len().checked_sub(1)?);
    let mut closed = false;
    loop {
        match text[at] {
            b'[' => return Some(at),
            b']' if !closed => closed = true,
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => return None,
        }
        at = at.checked_sub(1)?;
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
    /// A number or boolean where text goes gets a hint to quote it;
    /// other type errors get none.
    #[test]
    fn a_number_where_text_goes_is_told_how_to_quote_it() {
        let h = super::quote_hint("invalid type: integer `123`, expected a string", "name=123");
        assert!(h.contains(r#"--set 'name="123"'"#), "{h}");
        assert!(super::quote_hint(
            "invalid type: boolean `true`, expected a string",
            "name=true"
        )
        .contains("name=\"true\""));
        assert_eq!(
            super::quote_hint("invalid type: string \"abc\", expected a number", "x=abc"),
            ""
        );
    }

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
    fn type_errors_in_plain_words() {
        for (serde, plain) in [
            (
                "invalid type: string \"x\", expected f64",
                "invalid type: string \"x\", expected a number",
            ),
            (
                "invalid value: integer `-4`, expected u32",
                "invalid value: integer `-4`, expected a whole number up to 4294967295",
            ),
            (
                "invalid type: string \"5ms\", expected struct variant DistSpec::Constant",
                "invalid type: string \"5ms\", expected an object of its settings",
            ),
            (
                "invalid type: unit variant, expected struct variant",
                "a bare name, expected an object of its settings",
            ),
            (
                "invalid type: floating point `0.5`, expected string or map",
                "invalid type: floating point `0.5`, expected a name or a one-key object",
            ),
            (
                "invalid value: map, expected map with a single key",
                "an object of several keys, expected one key, the kind's name, holding its \
                 settings",
            ),
            // Other messages pass unchanged.
            ("missing field `name`", "missing field `name`"),
            ("expected u32x", "expected u32x"),
        ] {
            assert_eq!(plain_words(serde), plain);
        }
    }

    #[test]
    fn a_number_where_a_kind_is_expected_is_named() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        enum Kind {
            Full,
            Share(f64),
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            kind: Kind,
        }
        let message = |text: &str| {
            from_text::<S>(text, "f", Format::Json, "an S")
                .unwrap_err()
                .message
        };
        let expected = "expected a name, or an object of one key, the kind's name, holding its \
                        settings (one of `Full`, `Share`)";
        assert_eq!(
            message("{\"kind\": 0.5}"),
            format!("invalid type: a number, {expected}")
        );
        assert_eq!(
            message("{\"kind\":\n [1]}"),
            format!("invalid type: a list, {expected}")
        );
        // A value missing altogether is still a syntax error.
        assert_eq!(message("{\"kind\": }"), "expected value");
    }

    #[test]
    fn a_kind_given_as_several_keys_or_none_is_named_with_the_kinds() {
        let fine = r#"{"constant": {"value": "1ms"}}"#;
        let expected = "expected a name, or an object of one key, the kind's name, holding its \
                        settings (one of `none`, `full`, `equal`, `proportional`, `next_step`, \
                        `next_step_capped`)";
        let several = format!("an object of several keys, {expected}");
        let none = format!("an empty object, {expected}");
        let jitter = |j: &str| scenario(fine, &format!(r#"{{"name": "p", "jitter": {j}}}"#));
        for (j, want) in [
            (r#"{"proportional": 0.1, "full": null}"#, &several),
            // serde_json stops at the end of the first kind's value, here
            // a single digit: the document, not the text, says what it was.
            (r#"{"proportional": 1 , "full": null}"#, &several),
            ("{}", &none),
        ] {
            assert_eq!(
                problem(&jitter(j), Format::Json, &[]),
                ("policies[0].jitter".into(), want.clone()),
                "{j}"
            );
        }
        // The same after an override, which serde reads from a value.
        let set = r#"policies.0.jitter={"full": null, "equal": null}"#;
        assert_eq!(
            problem(&jitter(r#""none""#), Format::Json, &[set]),
            (
                "policies[0].jitter".into(),
                format!("{several} (after --set {set})")
            )
        );
        // And in TOML, whose parser words them otherwise.
        let toml = |j: &str| {
            format!(
                "name = \"t\"\nduration = \"5s\"\n[traffic]\nrate = 10\n[backend]\nworkers = 2\n\
                 service_time = {{constant = {{value = \"1ms\"}}}}\n[[policies]]\nname = \"p\"\n\
                 jitter = {j}\n"
            )
        };
        assert_eq!(
            problem(&toml("{full = {}, equal = {}}"), Format::Toml, &[]).1,
            several
        );
        assert_eq!(problem(&toml("{}"), Format::Toml, &[]).1, none);
        assert_eq!(
            problem(&toml("3"), Format::Toml, &[]).1,
            format!("invalid type: a number, {expected}")
        );
        // The same words after an override as in the file.
        assert_eq!(
            problem(&jitter(r#""none""#), Format::Json, &["policies.0.jitter=3"]).1,
            format!("invalid type: a number, {expected} (after --set policies.0.jitter=3)")
        );
        // Kinds that are names only, and kinds that all take settings.
        let arrival = problem(
            &scenario(fine, r#"{"name": "p"}"#),
            Format::Json,
            &["traffic.arrival={}"],
        );
        assert_eq!(
            arrival,
            (
                "traffic.arrival".into(),
                "an empty object, expected a name (one of `poisson`, `uniform`) (after --set \
                 traffic.arrival={})"
                    .into()
            )
        );
        let service = problem(&scenario("3", r#"{"name": "p"}"#), Format::Json, &[]);
        assert_eq!(
            service,
            (
                "backend.service_time".into(),
                "invalid type: a number, expected an object of one key, the kind's name, \
                 holding its settings (one of `constant`, `exponential`, `uniform`, \
                 `lognormal`, `normal`, `quantiles`, `histogram`)"
                    .into()
            )
        );
    }

    /// The path and message of the one problem `parse` finds in `text`
    /// with the overrides `sets`.
    fn problem(text: &str, format: Format, sets: &[&str]) -> (String, String) {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match parse(text, "f", format, &sets) {
            Err(InvalidInput::At(loc)) => (loc.path.unwrap_or_default(), loc.message),
            other => panic!("expected a located problem, got {other:?}"),
        }
    }

    /// A small scenario whose service time and first policy are given.
    fn scenario(service_time: &str, policy: &str) -> String {
        format!(
            r#"{{"name": "t", "duration": "5s", "traffic": {{"rate": 10}},
               "backend": {{"workers": 2, "service_time": {service_time}}},
               "policies": [{policy}]}}"#
        )
    }

    #[test]
    fn a_kind_without_its_settings_names_them() {
        let fine = r#"{"constant": {"value": "1ms"}}"#;
        // A plain value where the settings go.
        assert_eq!(
            problem(
                &scenario(r#"{"uniform": "1ms"}"#, r#"{"name": "p"}"#),
                Format::Json,
                &[]
            ),
            (
                "backend.service_time.uniform".into(),
                "invalid type: string \"1ms\", expected an object of its settings (`min`, `max`)"
                    .into()
            )
        );
        // The kind's name alone, in a policy.
        assert_eq!(
            problem(
                &scenario(fine, r#"{"name": "p", "backoff": "constant"}"#),
                Format::Json,
                &[]
            ),
            (
                "policies[0].backoff.constant".into(),
                "a bare name, expected an object of its settings (`delay`)".into()
            )
        );
        // The same through --set, where the second read starts from the
        // overridden document.
        let (path, message) = problem(
            &scenario(fine, r#"{"name": "p"}"#),
            Format::Json,
            &["policies[0].backoff=cloud_tasks"],
        );
        assert_eq!(path, "policies[0].backoff.cloud_tasks");
        assert!(
            message.contains("(`min_backoff`, `max_backoff`, `max_doublings`)"),
            "{message}"
        );
        // And in TOML.
        let toml = "name = \"t\"\nduration = \"5s\"\n[traffic]\nrate = 10\n[backend]\n\
                    workers = 2\nservice_time = { exponential = \"1ms\" }\n\
                    [[policies]]\nname = \"p\"\n";
        assert_eq!(
            problem(toml, Format::Toml, &[]).1,
            "invalid type: string \"1ms\", expected an object of its settings (`mean`)"
        );
        // A group of settings given as a plain value names its fields too.
        let (path, message) = problem(
            r#"{"name": "t", "duration": "5s", "traffic": "x", "policies": [{"name": "p"}]}"#,
            Format::Json,
            &[],
        );
        assert_eq!(path, "traffic");
        assert!(
            message.starts_with(
                "invalid type: string \"x\", expected an object of its settings (`rate`, `clients`,"
            ),
            "{message}"
        );
        // Containers by their JSON names.
        assert_eq!(
            problem(
                &scenario(fine, r#"{"name": "p", "retry_on": {}}"#),
                Format::Json,
                &[]
            )
            .1,
            "invalid type: an object, expected a list"
        );
        // Other type errors are left as they are.
        assert_eq!(
            problem(
                &scenario(fine, r#"{"name": "p", "max_attempts": "5"}"#),
                Format::Json,
                &[]
            )
            .1,
            "invalid type: string \"5\", expected a whole number"
        );
    }

    /// The line, column, path and message of the one problem `parse`
    /// finds in `text`.
    fn placed(text: &str, format: Format, sets: &[&str]) -> (String, String) {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match parse(text, "f", format, &sets) {
            Err(InvalidInput::At(loc)) => (
                format!("{}:{}", loc.line.unwrap_or(0), loc.column.unwrap_or(0)),
                format!("{}: {}", loc.path.unwrap_or_default(), loc.message),
            ),
            other => panic!("expected a located problem, got {other:?}"),
        }
    }

    #[test]
    fn a_list_at_the_top_level_is_not_a_scenario() {
        // serde alone reads a scenario from a list, its fields in order.
        let positional = r#"["x", "", 1, "60s", "0s", "1s", {"rate": 100},
            {"workers": 2, "service_time": {"constant": {"value": "1ms"}}},
            [], [], [], null, [{"name": "p", "max_attempts": 1}], {}]"#;
        assert!(serde_json::from_str::<ScenarioSpec>(positional).is_ok());
        let top = ": the top level must be an object of settings (a scenario), not a list";
        for text in [positional, "[1]", "[\"x\"]", "["] {
            assert_eq!(
                placed(text, Format::Json, &[]),
                ("1:1".to_string(), top.to_string()),
                "{text}"
            );
        }
        // Other values at the top are named too.
        assert_eq!(
            placed("3", Format::Json, &[]).1,
            ": the top level must be an object of settings (a scenario), not a number"
        );
        // Another file read as settings names what it holds.
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            a: u32,
        }
        assert_eq!(
            from_text::<S>("[1]", "f", Format::Json, "an S")
                .unwrap_err()
                .message,
            "the top level must be an object of settings (an S), not a list"
        );
    }

    /// The kinds of a setting are named, and the shape each takes, when a
    /// setting that sorts before it (`backoff` before `jitter`) is wrong
    /// too.
    #[test]
    fn kinds_are_named_even_when_another_setting_is_wrong_too() {
        let policy = r#"{"name": "j", "max_attempts": 3, "jitter": 0.2,
            "backoff": {"exponential": {"initial": "100ms", "max_backoff": "1s"}}}"#;
        let text = scenario(r#"{"constant": {"value": "1ms"}}"#, policy);
        let (_, message) = placed(&text, Format::Json, &[]);
        assert!(
            message.starts_with(
                "policies[0].jitter: invalid type: a number, expected a name, or an object of \
                 one key, the kind's name, holding its settings (one of `none`, `full`,"
            ),
            "{message}"
        );
    }

    #[test]
    fn settings_are_named_even_when_another_setting_is_wrong_too() {
        // `backend` sorts before `traffic`, and its service time is wrong.
        let text = scenario(r#"{"constant": "1ms"}"#, r#"{"name": "p"}"#)
            .replace(r#"{"rate": 10}"#, "[10]");
        let (_, message) = placed(&text, Format::Json, &[]);
        assert!(
            message.starts_with(
                "traffic: invalid type: a list, expected an object of its settings (`rate`,"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_refused_list_is_placed_on_its_bracket_however_it_is_laid_out() {
        let fine = r#"{"constant": {"value": "1ms"}}"#;
        let base = scenario(fine, r#"{"name": "p"}"#);
        for list in [
            "[10, 1]",
            "[\n    10,\n    1\n  ]",
            "[ ]",
            "[\n]",
            "[\r\n\t]",
        ] {
            let text = base.replace(r#"{"rate": 10}"#, list);
            let at = text.find(list).unwrap();
            let (line, column) = line_col(&text, at);
            let (place, message) = placed(&text, Format::Json, &[]);
            assert_eq!(place, format!("{line}:{column}"), "{list:?}");
            assert!(
                message.starts_with("traffic: invalid type: a list"),
                "{message}"
            );
        }
    }

    #[test]
    fn a_list_where_settings_go_is_refused_and_the_settings_named() {
        let fine = r#"{"constant": {"value": "1ms"}}"#;
        let traffic = "traffic: invalid type: a list, expected an object of its settings \
                       (`rate`, `clients`, `arrival`, `mode`, `profile`, `attempt_timeout`, \
                       `deadline`, `network_delay`, `think_time`, `burst_at`, `burst_spread`, `trace`, `threads`)";
        let text = scenario(fine, r#"{"name": "p"}"#).replace(r#"{"rate": 10}"#, "[10, 1]");
        assert_eq!(
            placed(&text, Format::Json, &[]),
            ("1:44".into(), traffic.into())
        );
        // A kind's settings.
        assert_eq!(
            placed(
                &scenario(r#"{"uniform": ["1ms", "2ms"]}"#, r#"{"name": "p"}"#),
                Format::Json,
                &[]
            ),
            (
                "2:70".into(),
                "backend.service_time.uniform: invalid type: a list, expected an object of its \
                 settings (`min`, `max`)"
                    .into()
            )
        );
        // A policy, and a fault's settings.
        let (_, policy) = placed(&scenario(fine, r#"["p", null, 1]"#), Format::Json, &[]);
        assert!(
            policy.starts_with(
                "policies[0]: invalid type: a list, expected an object of its settings (`name`,"
            ),
            "{policy}"
        );
        let fault = scenario(fine, r#"{"name": "p"}"#).replace(
            r#""policies""#,
            r#""faults": [{"outage": ["1s", "2s"]}], "policies""#,
        );
        let (_, fault) = placed(&fault, Format::Json, &[]);
        assert!(
            fault.starts_with("faults[0].outage: invalid type: a list, expected an object of its settings (`start`"),
            "{fault}"
        );
        // Through an override.
        let (at, message) = placed(
            &scenario(fine, r#"{"name": "p"}"#),
            Format::Json,
            &["traffic=[10, 1]"],
        );
        assert_eq!(at, "0:0");
        assert_eq!(message, format!("{traffic} (after --set traffic=[10, 1])"));
        // TOML: an inline list, and a list of tables, where a table goes.
        let toml = |traffic: &str| {
            format!(
                "name = \"t\"\nduration = \"5s\"\n{traffic}\n[backend]\nworkers = 2\n\
                 service_time = {{constant = {{value = \"1ms\"}}}}\n[[policies]]\nname = \"p\"\n"
            )
        };
        assert_eq!(
            placed(&toml("traffic = [10, 1]"), Format::Toml, &[]),
            ("3:11".into(), traffic.into())
        );
        assert_eq!(
            placed(&toml("[[traffic]]\nrate = 10"), Format::Toml, &[]),
            ("3:1".into(), traffic.into())
        );
        // Lists where lists go read as before.
        let lists = scenario(
            fine,
            r#"{"name": "p", "max_attempts": 2, "retry_on": ["unavailable"],
            "backoff": {"constant": {"delay": "1ms"}}}"#,
        );
        assert!(parse(&lists, "f", Format::Json, &[]).is_ok());
    }

    #[test]
    fn a_toml_date_time_is_called_one() {
        let toml = |from: &str, to: &str| {
            let text = "name = \"t\"\nduration = \"5s\"\n[traffic]\nrate = 10\n[backend]\n\
                        workers = 2\nservice_time = { constant = { value = \"1ms\" } }\n\
                        [[policies]]\nname = \"p\"\njitter = \"full\"\n";
            assert!(text.contains(from), "{from}");
            text.replace(from, to)
        };
        for (from, to, want) in [
            (
                "duration = \"5s\"",
                "duration = 1979-05-27T07:32:00Z",
                "duration: invalid type: a date-time, expected a duration such as \"250ms\", \
                 \"1.5s\", \"2m\" or a number of seconds",
            ),
            (
                "rate = 10",
                "rate = 07:32:00",
                "traffic.rate: invalid type: a date-time, expected a number",
            ),
            (
                "jitter = \"full\"",
                "jitter = 1979-05-27",
                "policies[0].jitter: invalid type: a date-time, expected a name, or an object of \
                 one key, the kind's name, holding its settings (one of `none`, `full`, `equal`, \
                 `proportional`, `next_step`, `next_step_capped`)",
            ),
            (
                "[traffic]\nrate = 10",
                "traffic = 1979-05-27",
                "traffic: invalid type: a date-time, expected an object of its settings (`rate`, \
                 `clients`, `arrival`, `mode`, `profile`, `attempt_timeout`, `deadline`, \
                 `network_delay`, `think_time`, `burst_at`, `burst_spread`, `trace`, `threads`)",
            ),
            (
                "{ value = \"1ms\" }",
                "1979-05-27",
                "backend.service_time.constant: invalid type: a date-time, expected an object of \
                 its settings (`value`)",
            ),
        ] {
            let text = toml(from, to);
            let (path, message) = problem(&text, Format::Toml, &[]);
            assert_eq!(format!("{path}: {message}"), want);
            // The same after an override elsewhere, read from a value.
            let (path, message) = problem(&text, Format::Toml, &["seed=3"]);
            assert_eq!(format!("{path}: {message}"), want);
        }
        // An override may not reach into a date-time, nor take it for a
        // kind holding settings.
        let text = toml("rate = 10", "rate = 07:32:00");
        let sets = ["traffic.rate.x=1".to_string()];
        match parse(&text, "f", Format::Toml, &sets) {
            Err(InvalidInput::Set { error, .. }) => assert_eq!(
                error.to_string(),
                "`traffic.rate.x`: cannot set a field of a date-time"
            ),
            other => panic!("{other:?}"),
        }
        let (path, message) = problem(&text, Format::Toml, &["traffic.clients=3"]);
        assert_eq!(
            format!("{path}: {message}"),
            "traffic.rate: invalid type: a date-time, expected a number"
        );
    }

    #[test]
    fn json_columns_count_characters() {
        // Each "é" is two bytes: counting bytes put the column at 39.
        let text = r#"{"name": "ééééé", "duration": "1x"}"#;
        let loc = from_text::<ScenarioSpec>(text, "f", Format::Json, SCENARIO).unwrap_err();
        assert_eq!((loc.line, loc.column), (Some(1), Some(34)));
        assert_eq!(&text.chars().collect::<Vec<_>>()[33..34], ['"']);
        // A syntax error after such a name, on a later line.
        let text = "{\"name\": \"é\",\n \"ü\": 1 \"x\"}";
        let loc = to_value(text, "f", Format::Json).unwrap_err();
        assert_eq!(
            (loc.line, loc.column),
            (Some(2), Some(9)),
            "{}",
            loc.message
        );
        // And where a problem found after reading is placed.
        let text = "{\"name\": \"ééééé\", \"duration\": \"0s\"}";
        assert_eq!(locate(text, Format::Json, "duration"), Some((1, 34)));
    }

    #[test]
    fn line_col_counts_characters() {
        let t = "ab\nçd\nef";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 1));
        assert_eq!(line_col(t, 5), (2, 2));
        assert_eq!(line_col(t, 100), (3, 3));
    }
}
