//! `retrysim schedule`: the retry schedule of one policy, so an SRE can see
//! what a queue or client config does before simulating it: when each retry
//! goes out, how far jitter moves it, and how long the whole retry window
//! lasts.
//!
//! The policy comes from a preset, a file holding one policy object, or
//! backoff flags; flags override what the preset or file says. The flags
//! are written into a policy object shaped like one in a scenario's
//! `policies` list (`--initial 100ms` becomes `backoff.<kind>.initial`),
//! which then goes through the same deserialisation and checks as a
//! scenario file. So the kinds and their fields come from
//! [`crate::policy::backoff`]: a new kind needs a new flag here only when
//! it has a field with a new name.

use super::common::{note, Stdout};
use crate::check::Problems;
use crate::error::{Error, InvalidInput, Located, OutputError};
use crate::policy::hedging::HedgingImpl;
use crate::policy::schedule::schedule;
use crate::policy::{presets, resolve, Policy};
use crate::policy::{BackoffSpec, JitterSpec, PolicySpec};
use crate::report;
use crate::scenario::load::{from_text, plain_words, read, to_value, Format};
use crate::scenario::locate::locate;
use crate::scenario::set::parse_value;
use crate::time::format_duration;
use clap::builder::PossibleValuesParser;
use clap::Args;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim schedule --preset cloud-tasks-default
  retrysim schedule --preset grpc --max-attempts 5 --csv
  retrysim schedule --backoff cloud_tasks --min-backoff 10s --max-backoff 300s --max-doublings 3
  retrysim schedule --backoff exponential --initial 100ms --multiplier 2 --max 32s --jitter full
  retrysim schedule --policy my-policy.json --attempts 50
  retrysim schedule --policy scenarios/spanner-90s.json --name platform
  retrysim schedule --preset cloud-tasks-critical --png schedule.png";

/// Flags of `retrysim schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// A named policy preset.
    #[arg(long, conflicts_with = "policy")]
    pub preset: Option<String>,
    /// A JSON or TOML file holding one policy object (as in a scenario's
    /// `policies` list), or a scenario or `import` block with a
    /// `policies` list (pick one with --name when it has several); `-`
    /// reads standard input.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// With --policy FILE holding a `policies` list: the policy to show.
    #[arg(
        long,
        value_name = "NAME",
        requires = "policy",
        conflicts_with = "preset"
    )]
    pub name: Option<String>,
    /// Backoff kind (default: the preset's or file's).
    #[arg(long, value_parser = PossibleValuesParser::new(BackoffSpec::kinds().iter().copied()))]
    pub backoff: Option<String>,
    /// Constant backoff: the delay.
    #[arg(long)]
    pub delay: Option<String>,
    /// Linear / exponential backoff: the first delay.
    #[arg(long)]
    pub initial: Option<String>,
    /// Linear backoff: growth per retry.
    #[arg(long)]
    pub step: Option<String>,
    /// Exponential backoff: growth factor (default 2).
    #[arg(long)]
    pub multiplier: Option<String>,
    /// Linear / exponential / decorrelated backoff: the cap.
    #[arg(long)]
    pub max: Option<String>,
    /// Exponential / Cloud Tasks backoff: doublings before growth stops
    /// (Cloud Tasks: then linear, default 16; exponential: then constant,
    /// no limit by default).
    #[arg(long)]
    pub max_doublings: Option<String>,
    /// Cloud Tasks backoff: the first interval (default 0.1s).
    #[arg(long)]
    pub min_backoff: Option<String>,
    /// Cloud Tasks backoff: the cap (default 3600s).
    #[arg(long)]
    pub max_backoff: Option<String>,
    /// Decorrelated backoff: the base delay.
    #[arg(long)]
    pub base: Option<String>,
    /// Jitter: none, full, equal, next_step, next_step_capped, or a
    /// proportional factor such as 0.1.
    #[arg(long, value_parser = jitter_arg)]
    pub jitter: Option<JitterSpec>,
    /// Attempts in all, the first included; 0 or -1 = unlimited (default
    /// with backoff flags alone: unlimited).
    #[arg(long, allow_negative_numbers = true)]
    pub max_attempts: Option<i64>,
    /// Retry time limit measured from the first attempt.
    #[arg(long)]
    pub max_retry_duration: Option<String>,
    /// Rows to show, at least 1 (default 20, never more than the policy
    /// allows; the policy's own limit is --max-attempts).
    #[arg(long, value_name = "N")]
    pub attempts: Option<u32>,
    /// Print CSV (one row per retry, seconds) instead of a table; a delay
    /// or sum past what the simulator's clock holds (about 584 years)
    /// reads `inf`.
    #[arg(long)]
    pub csv: bool,
    /// Also draw the schedule as a PNG (delay per retry with its jitter
    /// range, and the time since the first attempt) into FILE.
    #[arg(long, value_name = "FILE")]
    pub png: Option<PathBuf>,
}

impl ScheduleArgs {
    /// The backoff fields given as flags, as (field name, value as typed).
    /// Each flag is named after the field it sets (`--max-doublings` sets
    /// `max_doublings`), whatever the kind.
    fn backoff_fields(&self) -> Vec<(&'static str, &str)> {
        [
            ("delay", &self.delay),
            ("initial", &self.initial),
            ("step", &self.step),
            ("multiplier", &self.multiplier),
            ("max", &self.max),
            ("max_doublings", &self.max_doublings),
            ("min_backoff", &self.min_backoff),
            ("max_backoff", &self.max_backoff),
            ("base", &self.base),
        ]
        .into_iter()
        .filter_map(|(field, v)| v.as_deref().map(|v| (field, v)))
        .collect()
    }
}

/// Parses `--jitter`: a mode name or a proportional factor (`0.1`, `10%`);
/// the factor's range is checked with the policy, as in a scenario file.
pub fn jitter_arg(text: &str) -> Result<JitterSpec, String> {
    let named = JitterSpec::named();
    let word = text.trim().to_ascii_lowercase();
    match named.iter().find(|(k, _)| *k == word.replace('-', "_")) {
        Some(&(_, j)) => Ok(j),
        None => match word.trim_end_matches('%').parse::<f64>() {
            Ok(f) if !f.is_finite() => Err(format!(
                "jitter factor {text:?} is not a finite number: give a factor from 0 to 1, such as 0.1"
            )),
            Ok(f) => Ok(JitterSpec::Proportional(if word.ends_with('%') {
                f / 100.0
            } else {
                f
            })),
            Err(_) => Err(format!(
                "unknown jitter {text:?}: use {} or a factor such as 0.1",
                named.iter().map(|&(k, _)| k).collect::<Vec<_>>().join(", ")
            )),
        },
    }
}

/// A JSON value as a flag would take it: `"100ms"` → `100ms`.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The flag for a field name: `max_doublings` → `--max-doublings`.
fn flag_of(field: &str) -> String {
    format!("--{}", field.replace('_', "-"))
}

/// The policy being built, and where each of its values came from, so a
/// problem can name the flag or the file line that caused it.
struct Draft {
    /// The policy object, shaped like one in a scenario's `policies`.
    doc: Map<String, Value>,
    /// Field paths set by flags, with the flag that set each.
    by_flag: Vec<(String, String)>,
    /// The `--policy` file: its name, text and format.
    file: Option<(String, String, Format)>,
    /// Where the policy sits in the file: `""` for a file that is one
    /// policy object, `policies[i].` for an entry of a list.
    prefix: String,
    /// The file is a scenario with a Cloud Tasks queue (`dispatcher`):
    /// what its policy leaves out takes the API's defaults, as in a run.
    queue: bool,
}

impl Draft {
    /// Sets top-level `field` from `flag`.
    fn set(&mut self, field: &str, flag: &str, value: Value) {
        self.doc.insert(field.to_string(), value);
        self.by_flag.push((field.to_string(), flag.to_string()));
    }

    /// A problem at field `path` ("" = the policy as a whole), attributed to
    /// the flag that set the value, else to the file (with its position),
    /// else to the command.
    fn problem(&self, path: &str, message: String) -> Located {
        let owned = |p: &str| {
            path == p
                || path
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        };
        // The most specific flag wins (`--initial` over `--backoff`).
        let by_flag = self
            .by_flag
            .iter()
            .filter(|(p, _)| owned(p))
            .max_by_key(|(p, _)| p.len());
        let field = (!path.is_empty()).then(|| path.to_string());
        if let Some((_, flag)) = by_flag {
            // `--max-attempts: ...` rather than `--max-attempts: max_attempts:
            // ...`; a deeper path (`backoff.linear.delay`) says more.
            let same = field.as_deref().is_some_and(|f| flag_of(f) == *flag);
            return Located {
                path: field.filter(|_| !same),
                ..Located::whole(flag.clone(), message)
            };
        }
        match &self.file {
            Some((origin, text, format)) => {
                // Within a list, a problem of the whole policy is the entry's.
                let field = match field {
                    Some(f) => Some(format!("{}{f}", self.prefix)),
                    None => Some(self.prefix.trim_end_matches('.').to_string())
                        .filter(|p| !p.is_empty()),
                };
                let at = field.as_deref().and_then(|f| locate(text, *format, f));
                Located {
                    origin: origin.clone(),
                    line: at.map(|a| a.0),
                    column: at.map(|a| a.1),
                    path: field,
                    message,
                }
            }
            None => Located {
                path: field,
                ..Located::whole("schedule", message)
            },
        }
    }
}

/// The text of a policy file, its name for errors and its format.
fn read_policy_file(path: &Path) -> Result<(String, String, Format), InvalidInput> {
    let origin = crate::scenario::origin(path);
    let text = crate::scenario::read_text(path).map_err(|e| match e {
        // `--policy platform`, as the other commands take a policy's name.
        InvalidInput::Unreadable { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            InvalidInput::Flag {
                flag: format!("--policy {origin}"),
                message: format!(
                    "no such file: schedule's --policy takes a policy file; for a policy of a \
                     scenario, give the scenario with --name (`--policy scenarios/x.json --name \
                     {origin}`), or a preset with --preset"
                ),
            }
        }
        other => other,
    })?;
    if text.trim().is_empty() {
        // An empty TOML document is a table with every field at its
        // default: a policy nobody wrote.
        return Err(InvalidInput::Empty { origin });
    }
    let format = Format::detect(&origin, &text);
    Ok((origin, text, format))
}

/// The entry of a `policies` list that `name` names (or the only one),
/// with its index.
fn pick_policy(
    list: &Value,
    name: Option<&str>,
    origin: &str,
) -> Result<(usize, Value), InvalidInput> {
    let err = |msg: String| InvalidInput::At(Located::at_path(origin, "policies", msg));
    let Value::Array(items) = list else {
        return Err(err("must be a list of policy objects".into()));
    };
    let names: Vec<&str> = items
        .iter()
        .map(|p| p.get("name").and_then(Value::as_str).unwrap_or(""))
        .collect();
    let listed = || {
        names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let i = match (name, items.len()) {
        (_, 0) => return Err(err("is empty: no policy to show".into())),
        (Some(want), _) => names.iter().position(|n| *n == want).ok_or_else(|| {
            err(format!(
                "has no policy named {want:?} (it has {})",
                listed()
            ))
        })?,
        (None, 1) => 0,
        (None, n) => {
            return Err(err(format!(
                "holds {n} policies ({}): pick one with --name",
                listed()
            )))
        }
    };
    Ok((i, items[i].clone()))
}

/// The policy object the file, preset or defaults start from.
fn start(args: &ScheduleArgs) -> Result<Draft, InvalidInput> {
    let mut draft = Draft {
        doc: Map::new(),
        by_flag: Vec::new(),
        file: None,
        prefix: String::new(),
        queue: false,
    };
    if let Some(path) = &args.policy {
        let (origin, text, format) = read_policy_file(path)?;
        let value = to_value(&text, &origin, format).map_err(InvalidInput::At)?;
        let doc = if let Some(list) = value.get("policies") {
            let (i, entry) = pick_policy(list, args.name.as_deref(), &origin)?;
            draft.prefix = format!("policies[{i}].");
            draft.queue = value.get("dispatcher").is_some_and(|d| !d.is_null());
            draft.file = Some((origin, text, format));
            // Read typed first: problems in the entry get exact positions.
            if let Err(e) = read::<_, PolicySpec>(entry.clone()) {
                let path = e.path().to_string();
                let path = if path == "." { String::new() } else { path };
                return Err(InvalidInput::At(
                    draft.problem(&path, plain_words(&e.into_inner().to_string())),
                ));
            }
            entry
        } else {
            if args.name.is_some() {
                return Err(InvalidInput::At(Located::whole(
                    origin,
                    "--name picks from a `policies` list; this file is one policy object",
                )));
            }
            // Read typed first: problems in the file itself get exact
            // positions.
            from_text::<PolicySpec>(&text, &origin, format, "a policy")
                .map_err(InvalidInput::At)?;
            draft.file = Some((origin, text, format));
            value
        };
        let Value::Object(doc) = doc else {
            unreachable!("a policy object was read from the same text")
        };
        draft.doc = doc;
    } else if let Some(name) = &args.preset {
        draft.doc.insert("name".into(), Value::String(name.clone()));
        draft.set("preset", "--preset", Value::String(name.clone()));
    } else {
        draft
            .doc
            .insert("name".into(), Value::String("flags".into()));
        draft.doc.insert("max_attempts".into(), Value::from(0));
    }
    Ok(draft)
}

/// The backoff the draft has, as `(kind, fields)`: its own, else its
/// preset's.
fn current_backoff(doc: &Map<String, Value>) -> Option<(String, Map<String, Value>)> {
    let backoff = match doc.get("backoff") {
        Some(b) => b.clone(),
        None => {
            let preset = presets::preset(doc.get("preset")?.as_str()?)?;
            serde_json::to_value(preset.backoff?).ok()?
        }
    };
    match backoff {
        Value::Object(map) if map.len() == 1 => {
            let (kind, fields) = map.into_iter().next()?;
            match fields {
                Value::Object(fields) => Some((kind, fields)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Writes the backoff flags into the draft: the kind from `--backoff` or
/// the current backoff; fields of the current backoff are kept when the
/// kind stays the same.
fn apply_backoff_flags(args: &ScheduleArgs, draft: &mut Draft) -> Result<(), InvalidInput> {
    let fields = args.backoff_fields();
    if args.backoff.is_none() && fields.is_empty() {
        return Ok(());
    }
    let current = current_backoff(&draft.doc);
    let kind = match (&args.backoff, &current) {
        (Some(k), _) => k.clone(),
        (None, Some((k, _))) => k.clone(),
        (None, None) => {
            let unknown_preset = draft
                .doc
                .get("preset")
                .and_then(Value::as_str)
                .is_some_and(|p| presets::preset(p).is_none());
            if unknown_preset {
                // The checks report the preset; that is the real problem.
                return Ok(());
            }
            let (field, _) = fields[0];
            return Err(InvalidInput::Flag {
                flag: flag_of(field),
                message: "the policy has no backoff to change; say which with --backoff KIND"
                    .into(),
            });
        }
    };
    let mut body = match current {
        Some((k, f)) if k == kind => f,
        _ => Map::new(),
    };
    if args.backoff.is_some() {
        draft.by_flag.push(("backoff".into(), "--backoff".into()));
    }
    for (field, text) in fields {
        body.insert(field.to_string(), parse_value(text));
        draft
            .by_flag
            .push((format!("backoff.{kind}.{field}"), flag_of(field)));
    }
    if kind == "cloud_tasks" {
        // The Cloud Tasks API's defaults (minBackoff 0.1 s, maxBackoff
        // 3600 s, maxDoublings 16), as `import gcloud` and the
        // `cloud-tasks-default` preset take them, for what no flag gives.
        let defaults = presets::preset("cloud-tasks-default")
            .and_then(|p| p.backoff)
            .and_then(|b| serde_json::to_value(b).ok());
        let defaults = defaults
            .as_ref()
            .and_then(|d| d.get("cloud_tasks"))
            .and_then(Value::as_object);
        for (field, value) in defaults.into_iter().flatten() {
            if !body.contains_key(field) {
                body.insert(field.clone(), value.clone());
                draft.by_flag.push((
                    format!("backoff.{kind}.{field}"),
                    format!("{} (default {})", flag_of(field), plain(value)),
                ));
            }
        }
    }
    let mut backoff = Map::new();
    backoff.insert(kind, Value::Object(body));
    draft.doc.insert("backoff".into(), Value::Object(backoff));
    Ok(())
}

/// Resolves the policy the flags describe, through the checks a policy in
/// a scenario file gets. Every problem names the flag that caused it (or
/// the file and its line, or `schedule` for a preset's value).
pub fn policy_from_args(args: &ScheduleArgs) -> Result<Policy, InvalidInput> {
    if args.policy.is_none()
        && args.preset.is_none()
        && args.backoff.is_none()
        && args.backoff_fields().is_empty()
    {
        return Err(InvalidInput::Flag {
            flag: "schedule".into(),
            message:
                "say which policy: --preset NAME, --policy FILE or --backoff KIND with its flags"
                    .into(),
        });
    }
    let mut draft = start(args)?;
    apply_backoff_flags(args, &mut draft)?;
    if let Some(j) = args.jitter {
        let value = serde_json::to_value(j).expect("a jitter serialises");
        draft.set("jitter", "--jitter", value);
    }
    if let Some(m) = args.max_attempts {
        draft.set("max_attempts", "--max-attempts", Value::from(m));
    }
    if let Some(d) = &args.max_retry_duration {
        draft.set("max_retry_duration", "--max-retry-duration", parse_value(d));
    }
    let doc = Value::Object(draft.doc.clone());
    let spec: PolicySpec = read(&doc).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let mut message = plain_words(&e.inner().to_string());
        if let Some(hint) = missing_field_hint(&message) {
            message.push_str(&hint);
        }
        InvalidInput::At(draft.problem(&path, message))
    })?;
    let spec = if draft.queue {
        crate::scenario::cloud_tasks::with_queue_defaults(&spec).0
    } else {
        spec
    };
    // The policy's own fields are at the root here, not under `policies[i]`.
    let mut problems = Problems::default();
    spec.check("", &mut problems);
    if let Err(list) = problems.into_result() {
        return Err(InvalidInput::Problems(
            list.into_iter()
                .map(|p| draft.problem(p.path.trim_start_matches('.'), p.message))
                .collect(),
        ));
    }
    resolve(&spec).map_err(|e| InvalidInput::At(draft.problem("", e.to_string())))
}

/// For serde's "missing field `x`" about a field a flag can set: which flag.
fn missing_field_hint(message: &str) -> Option<String> {
    let field = message.strip_prefix("missing field `")?.strip_suffix('`')?;
    let flag = flag_of(field);
    let known = <ScheduleArgs as Args>::augment_args(clap::Command::new("schedule"))
        .get_arguments()
        .any(|a| a.get_long().is_some_and(|l| format!("--{l}") == flag));
    known.then(|| format!(" (give it with {flag})"))
}

/// One line describing the policy's backoff, jitter and limits (the
/// backoff in the same words as the HTML report).
pub fn describe(p: &Policy) -> String {
    if let Some(h) = &p.hedging {
        let non_fatal: Vec<&str> = h.non_fatal.to_vec().iter().map(|s| s.name()).collect();
        let non_fatal = if non_fatal.is_empty() {
            "none (any failure ends the request)".to_string()
        } else {
            non_fatal.join(", ")
        };
        let after_failure = match h.implementation {
            HedgingImpl::A6 => "at once after a non-fatal failure",
            HedgingImpl::GrpcJava => {
                "a non-fatal failure keeps the next one's time, one with server pushback \
                 sends it at once (as grpc-java does)"
            }
        };
        return format!(
            "hedging: another attempt every {} while none has succeeded, {after_failure}; \
             non-fatal: {non_fatal}; max_attempts: {}",
            format_duration(h.delay),
            h.max_attempts
        );
    }
    let jitter = p.jitter.formula();
    let attempts = p
        .max_attempts
        .map_or("unlimited".to_string(), |m| m.to_string());
    let mut line = format!(
        "backoff: {}; jitter: {jitter}; max_attempts: {attempts}",
        p.backoff.describe()
    );
    if let Some(mrd) = p.max_retry_duration {
        line += &format!("; max_retry_duration: {}", format_duration(mrd));
    }
    line
}

/// Prints the schedule.
pub fn run(args: ScheduleArgs) -> Result<ExitCode, Error> {
    check_rows(args.attempts)?;
    if let (Some(png), Some(input)) = (&args.png, &args.policy) {
        super::common::not_an_input("--png", png, &[input])?;
    }
    let policy = policy_from_args(&args)?;
    let s = schedule(&policy, args.attempts);
    let mut out = Stdout::lock();
    if args.csv {
        report::schedule::write_csv(out.writer(), &s).map_err(OutputError::stdout_csv)?;
    } else {
        out.print(report::schedule::table(&policy, &describe(&policy), &s))?;
    }
    out.flush()?;
    if let Some(path) = &args.png {
        report::schedule::write_png(path, &policy, &describe(&policy), &s)?;
        note(format_args!("wrote {}", path.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The most rows `--attempts` may ask for: each is held in memory before
/// it is printed.
const MAX_ROWS: u32 = 100_000;

/// Refuses `--attempts 0` and more than [`MAX_ROWS`]: it counts rows to show, so 0 would show none
/// (and read as a policy without retries); the policy's own limit is
/// `--max-attempts`, where 0 means unlimited as in a scenario.
fn check_rows(rows: Option<u32>) -> Result<(), InvalidInput> {
    if let Some(n) = rows.filter(|n| *n > MAX_ROWS) {
        return Err(InvalidInput::Flag {
            flag: "--attempts".into(),
            message: format!(
                "{n} rows: at most {MAX_ROWS} are shown (the total retry window line sums \
                 every retry the policy allows, however many)"
            ),
        });
    }
    if rows == Some(0) {
        return Err(InvalidInput::Flag {
            flag: "--attempts".into(),
            message: "0 rows would show nothing; give N >= 1 rows to show (the policy's \
                      own limit is --max-attempts, where 0 means unlimited)"
                .into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Backoff, Jitter};
    use crate::time::NS_PER_SEC;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: ScheduleArgs,
    }

    fn args(list: &[&str]) -> ScheduleArgs {
        let mut v = vec!["t"];
        v.extend_from_slice(list);
        T::try_parse_from(v).unwrap().a
    }

    fn text(list: &[&str]) -> String {
        let a = args(list);
        let p = policy_from_args(&a).unwrap();
        let s = schedule(&p, a.attempts);
        if a.csv {
            String::from_utf8(report::schedule::write_csv(Vec::new(), &s).unwrap()).unwrap()
        } else {
            report::schedule::table(&p, &describe(&p), &s)
        }
    }

    #[test]
    fn sums_beyond_what_time_holds_say_so() {
        // Delays of 100 years: from the sixth retry the sum is past 584
        // years, where nanoseconds saturate.
        let list = [
            "--backoff",
            "exponential",
            "--initial",
            "36500d",
            "--max",
            "36500d",
            "--attempts",
            "10",
        ];
        let table = text(&list);
        assert!(table.contains("> 213504 d"), "{table}");
        let mut with_csv = list.to_vec();
        with_csv.push("--csv");
        let csv = text(&with_csv);
        let last = csv.lines().last().unwrap();
        assert!(last.contains(",inf,"), "{csv}");
        assert!(!csv.contains("18446744073"), "{csv}");
    }

    #[test]
    fn hedging_is_described_as_its_implementation_sends() {
        let mut p = presets::preset("grpc-hedging").unwrap();
        let a6 = describe(&resolve(&p).unwrap());
        assert!(a6.contains("at once after a non-fatal failure"), "{a6}");
        if let Some(h) = p.hedging.as_mut() {
            h.implementation = HedgingImpl::GrpcJava;
        }
        let java = describe(&resolve(&p).unwrap());
        assert!(
            java.contains("a non-fatal failure keeps the next one's time")
                && !java.contains("at once after a non-fatal failure"),
            "{java}"
        );
    }

    #[test]
    fn rows_are_bounded() {
        assert!(check_rows(Some(MAX_ROWS)).is_ok());
        let err = check_rows(Some(MAX_ROWS + 1)).unwrap_err().to_string();
        assert!(err.contains("at most 100000"), "{err}");
    }

    #[test]
    fn preset_table_shows_the_window() {
        let t = text(&["--preset", "cloud-tasks-default"]);
        assert!(
            t.contains("total retry window: 84.8 h (305353.5 s) over 99 retries"),
            "{t}"
        );
        assert!(t.contains("79 more retries"), "{t}");
    }

    #[test]
    fn backoff_flags_build_a_policy() {
        let t = text(&[
            "--backoff",
            "cloud_tasks",
            "--min-backoff",
            "10s",
            "--max-backoff",
            "300s",
            "--max-doublings",
            "3",
            "--max-attempts",
            "9",
            "--csv",
        ]);
        let delays: Vec<&str> = t
            .lines()
            .skip(1)
            .map(|l| l.split(',').nth(2).unwrap())
            .collect();
        assert_eq!(delays, ["10", "20", "40", "80", "160", "240", "300", "300"]);
        assert!(t.starts_with("attempt,retry,delay_s,"));
    }

    #[test]
    fn flags_override_a_preset() {
        let a = args(&[
            "--preset",
            "cloud-tasks-default",
            "--max-doublings",
            "3",
            "--jitter",
            "0.1",
        ]);
        let p = policy_from_args(&a).unwrap();
        assert_eq!(
            p.backoff,
            Backoff::CloudTasks {
                min_backoff: 100_000_000,
                max_backoff: 3600 * NS_PER_SEC,
                max_doublings: 3
            }
        );
        assert_eq!(p.jitter, Jitter::Proportional(0.1));
        assert_eq!(p.max_attempts, Some(100));
    }

    #[test]
    fn a_jitter_factor_that_is_not_a_number_is_named() {
        for text in ["NaN", "nan", "inf", "-inf%"] {
            let e = jitter_arg(text).unwrap_err();
            assert!(e.contains("is not a finite number"), "{text}: {e}");
        }
        assert_eq!(jitter_arg("10%"), Ok(JitterSpec::Proportional(0.1)));
        assert_eq!(jitter_arg("0.25"), Ok(JitterSpec::Proportional(0.25)));
    }

    #[test]
    fn jitter_table_shows_ranges() {
        let t = text(&[
            "--backoff",
            "exponential",
            "--initial",
            "100ms",
            "--max",
            "32s",
            "--jitter",
            "full",
            "--attempts",
            "3",
        ]);
        assert!(t.contains("0 s .. 100 ms"), "{t}");
        assert!(t.contains("unlimited"), "{t}");
    }

    /// The error message for flags that must be refused.
    fn refused(list: &[&str]) -> String {
        match policy_from_args(&args(list)) {
            Ok(p) => panic!("{list:?} accepted: {p:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn bad_flag_combinations_name_the_flag() {
        assert_eq!(
            refused(&["--backoff", "constant"]),
            "--backoff: backoff.constant: missing field `delay` (give it with --delay)"
        );
        let e = refused(&["--backoff", "linear", "--initial", "1s", "--delay", "1s"]);
        assert!(
            e.starts_with("--delay: backoff.linear.delay: unknown field `delay`")
                && e.contains("`step`"),
            "{e}"
        );
        // A field the preset's backoff kind does not have.
        let e = refused(&["--preset", "grpc", "--delay", "1s"]);
        assert!(e.starts_with("--delay: backoff.exponential.delay:"), "{e}");
        assert!(
            refused(&["--preset", "nope"]).starts_with("--preset: unknown preset \"nope\""),
            "lists the presets"
        );
        assert!(refused(&[]).starts_with("schedule: say which policy"));
        assert!(refused(&["--initial", "1s"]).starts_with("--initial: the policy has no backoff"));
    }

    #[test]
    fn bad_values_get_the_checks_scenario_files_get() {
        assert_eq!(
            refused(&["--backoff", "exponential", "--initial", "0s"]),
            "--initial: backoff.exponential.initial: must be greater than 0"
        );
        assert_eq!(
            refused(&["--backoff", "exponential", "--initial", "soon"]),
            "--initial: backoff.exponential.initial: invalid duration \"soon\": \
             expected a number with a unit such as \"250ms\", \"1.5s\" or \"2m\""
        );
        // Every problem at once, one per line.
        let e = refused(&[
            "--backoff",
            "exponential",
            "--initial",
            "0s",
            "--multiplier",
            "0.5",
            "--jitter",
            "2",
        ]);
        let lines: Vec<&str> = e.lines().collect();
        assert_eq!(lines.len(), 3, "{e}");
        assert!(lines[1].starts_with("--multiplier: backoff.exponential.multiplier: 0.5"));
        assert!(lines[2].starts_with("--jitter: jitter.proportional: 2 is out of range"));
        // A preset's value the flags made inconsistent: the field is named.
        assert_eq!(
            refused(&["--preset", "cloud-tasks-default", "--max-backoff", "10ms"]),
            "schedule: backoff.cloud_tasks.min_backoff: 100ms is greater than max_backoff (10ms)"
        );
        assert!(refused(&[
            "--backoff",
            "constant",
            "--delay",
            "1s",
            "--max-attempts",
            "-4"
        ])
        .starts_with("--max-attempts: -4 is not allowed"));
        assert_eq!(jitter_arg("10%"), Ok(JitterSpec::Proportional(0.1)));
        assert!(jitter_arg("sometimes").is_err());
    }

    #[test]
    fn kind_switch_drops_the_old_fields() {
        let a = args(&["--preset", "grpc", "--backoff", "constant", "--delay", "2s"]);
        let p = policy_from_args(&a).unwrap();
        assert_eq!(
            p.backoff,
            Backoff::Constant {
                delay: 2 * NS_PER_SEC
            }
        );
    }

    #[test]
    fn policy_files_json_and_toml() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("p.json");
        std::fs::write(
            &json,
            r#"{"name": "q", "max_attempts": 3, "backoff": {"constant": {"delay": "2s"}}}"#,
        )
        .unwrap();
        let p = policy_from_args(&args(&["--policy", json.to_str().unwrap()])).unwrap();
        assert_eq!(schedule(&p, None).window, Some(4 * NS_PER_SEC));
        let toml_path = dir.path().join("p.toml");
        std::fs::write(
            &toml_path,
            "name = \"t\"\npreset = \"grpc\"\nmax_attempts = 3\n",
        )
        .unwrap();
        let p = policy_from_args(&args(&["--policy", toml_path.to_str().unwrap()])).unwrap();
        assert_eq!(p.max_attempts, Some(3));
        let bad = dir.path().join("bad.json");
        std::fs::write(
            &bad,
            r#"{"name": "q", "backoff": {"constant": {"dealy": "2s"}}}"#,
        )
        .unwrap();
        let e = policy_from_args(&args(&["--policy", bad.to_str().unwrap()])).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("bad.json") && msg.contains("backoff.constant"),
            "{msg}"
        );
    }

    /// A scenario, or the block `import` prints, holds a `policies` list:
    /// `--name` picks one (the only one needs no name), and problems point
    /// into the list.
    #[test]
    fn a_policy_picked_from_a_policies_list() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(
            &file,
            r#"{"name": "s", "policies": [
                {"name": "a", "max_attempts": 2, "backoff": {"constant": {"delay": "1s"}}},
                {"name": "b", "max_attempts": 3, "backoff": {"constant": {"delay": "2s"}}},
                {"name": "c", "backoff": {"constant": {"dealy": "2s"}}}]}"#,
        )
        .unwrap();
        let f = file.to_str().unwrap();
        let p = policy_from_args(&args(&["--policy", f, "--name", "b"])).unwrap();
        assert_eq!(schedule(&p, None).window, Some(4 * NS_PER_SEC));
        let err = |a: &[&str]| policy_from_args(&args(a)).unwrap_err().to_string();
        let msg = err(&["--policy", f]);
        assert!(
            msg.contains("3 policies") && msg.contains("--name"),
            "{msg}"
        );
        let msg = err(&["--policy", f, "--name", "z"]);
        assert!(msg.contains("no policy named \"z\""), "{msg}");
        let msg = err(&["--policy", f, "--name", "c"]);
        assert!(
            msg.contains(":4:") && msg.contains("policies[2].backoff.constant"),
            "{msg}"
        );
        let one = dir.path().join("one.json");
        std::fs::write(&one, r#"{"policies": [{"name": "x", "max_attempts": 1}]}"#).unwrap();
        let p = policy_from_args(&args(&["--policy", one.to_str().unwrap()])).unwrap();
        assert_eq!(p.name, "x");
        // A problem of the whole entry names the entry.
        std::fs::write(&one, r#"{"policies": [{"name": "x", "max_attempts": 2}]}"#).unwrap();
        let msg = err(&["--policy", one.to_str().unwrap()]);
        assert!(
            msg.contains("policies[0]: a policy that may retry"),
            "{msg}"
        );
    }
}
