//! Scenario files: reading them (JSON or TOML), applying `--set`
//! overrides, validating every value, and resolving policies, so the model
//! only ever sees a [`Scenario`] that makes sense.
//!
//! Every error is an [`InvalidInput`] (exit status 2) shaped
//! `<file>:<line>:<col>: <field path>: <what is wrong>`, with the parts that
//! are unknown left out; validation reports all problems, one per line.

pub mod cloud_tasks;
pub mod error;
mod lint;
pub(crate) mod load;
pub(crate) mod locate;
pub mod names;
pub mod set;
mod shape;
pub mod spec;
pub mod validate;

pub use load::Format;
pub use set::{apply_set, path_segments};
pub use validate::validate;

use crate::policy::{self, Policy, PolicySpec, ResolveError};
use error::{InvalidInput, Located};
use spec::ScenarioSpec;
use std::path::Path;

/// A validated scenario with its policies resolved.
///
/// The policies as written (`spec().policies`) and as resolved
/// ([`Scenario::policies`]) are kept in step here and nowhere else: the
/// fields are private, and every change goes through a method that updates
/// both.
#[derive(Clone, Debug)]
pub struct Scenario {
    spec: ScenarioSpec,
    policies: Vec<Policy>,
    /// For each policy, the policy of each downstream tier under it.
    tier_policies: Vec<Vec<Policy>>,
    /// For each policy, the fields that took the Cloud Tasks API's
    /// default because the scenario has a queue and the policy left them
    /// out (see [`cloud_tasks::with_queue_defaults`]); empty without one.
    queue_defaulted: Vec<Vec<&'static str>>,
}

/// The policies of the downstream tiers of `spec` when `compared` is the
/// policy compared, in `downstream` order.
fn resolve_tiers(spec: &ScenarioSpec, compared: &PolicySpec) -> Result<Vec<Policy>, ResolveError> {
    spec.downstream
        .iter()
        .map(|d| {
            let mut p = d.policy.spec(compared);
            p.name = compared.name.clone();
            policy::resolve(&p)
        })
        .collect()
}

impl Scenario {
    /// Resolves the policies of an already-validated spec. With a
    /// dispatcher, every policy is a Cloud Tasks queue's: what it leaves
    /// out takes the API's defaults, written into the spec so that every
    /// command (`tune` included) sees the settings the queue runs with.
    pub fn from_spec(mut spec: ScenarioSpec) -> Result<Scenario, ResolveError> {
        let queue_defaulted = if spec.dispatcher.is_some() {
            spec.policies
                .iter_mut()
                .map(|p| {
                    let (filled, defaulted) = cloud_tasks::with_queue_defaults(p);
                    *p = filled;
                    defaulted
                })
                .collect()
        } else {
            vec![vec![]; spec.policies.len()]
        };
        let policies = spec
            .policies
            .iter()
            .map(policy::resolve)
            .collect::<Result<Vec<_>, _>>()?;
        let tier_policies = spec
            .policies
            .iter()
            .map(|p| resolve_tiers(&spec, p))
            .collect::<Result<Vec<_>, _>>()?;
        spec.name_top_tier_none();
        Ok(Scenario {
            spec,
            policies,
            tier_policies,
            queue_defaulted,
        })
    }

    /// Parses, validates and resolves JSON text (for tests and embedders
    /// that hold a scenario in memory); errors name it `scenario.json`.
    pub fn from_json(text: &str) -> Result<Scenario, InvalidInput> {
        load_str(text, "scenario.json", &[])
    }

    /// The scenario as written (after `--set` overrides).
    pub fn spec(&self) -> &ScenarioSpec {
        &self.spec
    }

    /// The resolved policies, in file order.
    pub fn policies(&self) -> &[Policy] {
        &self.policies
    }

    /// The policies of the downstream tiers (in `downstream` order) in a
    /// run of policy `i`.
    pub fn tier_policies(&self, i: usize) -> &[Policy] {
        &self.tier_policies[i]
    }

    /// Settings that are valid but probably not what the author meant
    /// (printed by `check` and before a run).
    pub fn warnings(&self) -> Vec<crate::check::Problem> {
        lint::warnings(&self.spec, &self.policies)
    }

    /// With a Cloud Tasks queue, the settings it runs with, one line each
    /// (printed by `check`); empty without one.
    pub fn queue_settings(&self) -> Vec<String> {
        cloud_tasks::effective_settings(&self.spec, &self.policies, &self.queue_defaulted)
    }

    /// Why simulated time may stop advancing under policy `i`, if it can
    /// (see `lint::zero_time_loop`).
    pub fn zero_time_loop(&self, i: usize) -> Option<String> {
        lint::zero_time_loop(&self.spec, &self.policies[i])
    }

    /// Replaces the seed (`--seed`).
    pub fn set_seed(&mut self, seed: u64) {
        self.spec.seed = seed;
    }

    /// A fingerprint of what is simulated: every setting as read (after
    /// `--set` overrides and `--seed`) and the policies kept. The shards
    /// of one sweep or map share it, so `merge` can refuse shards of a
    /// scenario edited under the same name, or run with other overrides
    /// or another seed. The data files the scenario reads are part of it
    /// (a changed trace is a changed scenario). Eight hex digits of a CRC-32 of the settings as
    /// JSON: a check against mistakes, not against forgery.
    pub fn fingerprint(&self) -> String {
        let mut h = crc32fast::Hasher::new();
        h.update(&serde_json::to_vec(&self.spec).expect("a scenario serializes"));
        // A trace file's content (a histogram file's is in its buckets).
        if let Some(l) = self
            .spec
            .traffic
            .trace
            .as_ref()
            .and_then(|t| t.loaded.as_ref())
        {
            h.update(&l.digest.to_le_bytes());
        }
        for p in &self.policies {
            h.update(p.name.as_bytes());
            h.update(&[0]);
        }
        format!("{:08x}", h.finalize())
    }

    /// Keeps only the policies named in `names` (all when empty), in file
    /// order (`--policy NAME`). The error names the first name that matches
    /// no policy, and lists the policies there are.
    pub fn select_policies(&mut self, names: &[String]) -> Result<(), InvalidInput> {
        if names.is_empty() {
            return Ok(());
        }
        if let Some(missing) = names
            .iter()
            .find(|n| !self.policies.iter().any(|p| &p.name == *n))
        {
            return Err(InvalidInput::NoSuchPolicy {
                name: missing.clone(),
                scenario: self.spec.name.clone(),
                known: self.policies.iter().map(|p| p.name.clone()).collect(),
            });
        }
        let keep = |name: &String| names.contains(name);
        let kept: Vec<bool> = self.policies.iter().map(|p| keep(&p.name)).collect();
        let mut flags = kept.iter();
        self.tier_policies
            .retain(|_| *flags.next().unwrap_or(&false));
        let mut flags = kept.iter();
        self.queue_defaulted
            .retain(|_| *flags.next().unwrap_or(&false));
        self.policies.retain(|p| keep(&p.name));
        self.spec.policies.retain(|p| keep(&p.name));
        Ok(())
    }

    /// The same scenario with `dispatcher` as its Cloud Tasks queue (a
    /// tuning candidate's rate limits). A scenario that had no queue has
    /// its policies become the queue's, with the API's defaults.
    pub fn with_dispatcher(&self, dispatcher: spec::DispatcherSpec) -> Scenario {
        let mut out = self.clone();
        let had = out.spec.dispatcher.is_some();
        out.spec.dispatcher = Some(dispatcher);
        if !had {
            if let Ok(s) = Scenario::from_spec(out.spec.clone()) {
                return s;
            }
        }
        out
    }

    /// The same scenario with `spec` as its only policy (with the API's
    /// defaults for what it leaves out, when the scenario has a queue).
    pub fn with_only_policy(&self, spec: PolicySpec) -> Result<Scenario, ResolveError> {
        let (spec, defaulted) = if self.spec.dispatcher.is_some() {
            cloud_tasks::with_queue_defaults(&spec)
        } else {
            (spec, vec![])
        };
        let policy = policy::resolve(&spec)?;
        let tiers = resolve_tiers(&self.spec, &spec)?;
        let mut out = self.clone();
        out.spec.policies = vec![spec];
        out.policies = vec![policy];
        out.tier_policies = vec![tiers];
        out.queue_defaulted = vec![defaulted];
        Ok(out)
    }
}

/// Reads, overrides (`--set PATH=VALUE`), validates and resolves a scenario
/// file. Errors name the file and the field.
pub fn load(path: &Path, sets: &[String]) -> Result<Scenario, InvalidInput> {
    let origin = origin(path);
    let text = read_text(path)?;
    load_str(&text, &origin, sets)
}

/// The path `-`, which stands for standard input wherever a command reads
/// a file of the user's (`cat s.json | retrysim run -`).
pub const STDIN_PATH: &str = "-";

/// How errors name the file at `path`: `<stdin>` for [`STDIN_PATH`].
pub fn origin(path: &Path) -> String {
    if path.as_os_str() == STDIN_PATH {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// The most an input file may hold. Scenarios and the configurations
/// `import` reads are a few kilobytes; the cap turns a wrong file (a log,
/// `/dev/zero`, an endless pipe) into an error instead of a process that
/// fills the memory.
pub const MAX_INPUT_BYTES: u64 = 16 << 20;

/// The most a data file a scenario names (a trace, a histogram) may hold:
/// room for the longest trace taken (1,000,000 arrivals with RFC 3339
/// times to the microsecond and a time zone, about 35 bytes a row) twice
/// over.
pub const MAX_DATA_BYTES: u64 = 64 << 20;

/// What a file read is, for its size cap and the words of its error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A scenario, a policy or a configuration ([`MAX_INPUT_BYTES`]).
    Settings,
    /// A trace or histogram a scenario names ([`MAX_DATA_BYTES`]).
    Data,
}

impl InputKind {
    /// The most a file of this kind may hold.
    pub fn cap(self) -> u64 {
        match self {
            InputKind::Settings => MAX_INPUT_BYTES,
            InputKind::Data => MAX_DATA_BYTES,
        }
    }

    /// Why a file over the cap is refused.
    fn too_big(self) -> String {
        let mib = self.cap() >> 20;
        match self {
            InputKind::Settings => format!(
                "it holds more than {mib} MiB, far more than any scenario or queue configuration"
            ),
            InputKind::Data => format!(
                "it holds more than {mib} MiB, more than the longest trace taken (1,000,000 \
                 arrivals) needs: cut it, or write its times shorter (epoch seconds with \
                 3 decimals)"
            ),
        }
    }
}

/// Reads all of `r`, or an error once it passes `kind`'s cap.
fn read_capped(r: impl std::io::Read, kind: InputKind) -> std::io::Result<Vec<u8>> {
    let mut bytes = vec![];
    std::io::Read::read_to_end(&mut r.take(kind.cap() + 1), &mut bytes)?;
    if bytes.len() as u64 > kind.cap() {
        return Err(std::io::Error::other(kind.too_big()));
    }
    Ok(bytes)
}

/// Reads a file of the user's (standard input for `-`) as text:
/// unreadable and non-UTF-8 files are [`InvalidInput`] naming the file
/// (and the first bad byte's position).
pub fn read_text(path: &Path) -> Result<String, InvalidInput> {
    read_text_of(path, InputKind::Settings)
}

/// [`read_text`] for a file of `kind`, with that kind's size cap.
pub fn read_text_of(path: &Path, kind: InputKind) -> Result<String, InvalidInput> {
    let origin = origin(path);
    let bytes = if path.as_os_str() == STDIN_PATH {
        // A second `-` would read nothing and be reported as empty.
        static READ: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if READ.swap(true, std::sync::atomic::Ordering::Relaxed) {
            Err(std::io::Error::other(
                "standard input can be given once; it was read for an earlier file",
            ))
        } else {
            let stdin = std::io::stdin();
            if std::io::IsTerminal::is_terminal(&stdin) {
                // Otherwise a command given `-` at a prompt seems to hang.
                eprintln!("reading {origin}: type or paste the file, then Ctrl-D");
            }
            read_capped(stdin.lock(), kind)
        }
    } else if path.is_dir() {
        Err(std::io::Error::other(format!(
            "it is a directory; give the files in it, e.g. {}",
            path.join("*.json").display()
        )))
    } else {
        std::fs::File::open(path).and_then(|f| read_capped(f, kind))
    };
    let bytes = bytes.map_err(|source| InvalidInput::Unreadable {
        origin: origin.clone(),
        source,
    })?;
    let mut text = String::from_utf8(bytes).map_err(|e| {
        let (line, column) = load::line_col(
            &String::from_utf8_lossy(e.as_bytes()),
            e.utf8_error().valid_up_to(),
        );
        InvalidInput::NotUtf8 {
            origin,
            line,
            column,
        }
    })?;
    // A byte-order mark (Windows editors write one) is not part of the
    // text: neither JSON nor TOML parsers take it.
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// The first pair `(later, earlier)` of `--set` `paths` that land on one
/// field of the scenario `text`, or one within the other, however they
/// are written (`faults.0.duration` and `faults[0].outage.duration`, a
/// policy by index and by name). A path that lands nowhere overlaps
/// nothing here: loading the scenario reports it.
pub fn overlapping(text: &str, origin: &str, paths: &[&str]) -> Option<(usize, usize)> {
    let format = Format::detect(origin, text);
    let value = load::to_value(text, origin, format).ok()?;
    let placed: Vec<Option<set::Written>> = paths
        .iter()
        .map(|p| set::set_at(&mut value.clone(), p, serde_json::Value::Null).ok())
        .collect();
    (0..paths.len()).find_map(|i| {
        let a = placed[i].as_ref()?;
        (0..i).find_map(|j| {
            let b = placed[j].as_ref()?;
            a.iter().zip(b).all(|(x, y)| x == y).then_some((i, j))
        })
    })
}

/// Like [`load`], for text already in memory; `origin` names it in errors
/// and its extension (`.json`/`.toml`) picks the format (text without one
/// is JSON when it starts with `{`, else TOML).
pub fn load_str(text: &str, origin: &str, sets: &[String]) -> Result<Scenario, InvalidInput> {
    if text.trim().is_empty() {
        return Err(InvalidInput::Empty {
            origin: origin.to_string(),
        });
    }
    let lower = origin.trim().to_ascii_lowercase();
    if (lower.ends_with(".yaml") || lower.ends_with(".yml")) && !text.trim_start().starts_with('{')
    {
        // Read as TOML, YAML fails with a TOML parser's complaint about
        // its first line: say what is wrong instead.
        return Err(InvalidInput::At(Located::whole(
            origin,
            "scenarios are JSON or TOML, not YAML: write it as JSON or TOML (`retrysim import \
             gcloud` reads a Cloud Tasks queue's YAML and prints the policy block)",
        )));
    }
    let format = Format::detect(origin, text);
    let (mut spec, writes) = load::parse(text, origin, format, sets)?;
    load::read_data_files(&mut spec, text, origin, format, &writes)?;
    if let Err(problems) = validate(&spec) {
        let located = problems
            .into_iter()
            .map(|p| {
                let touching = |path: &str| load::set_touching(&load::field_of(path), &writes);
                // A value an override wrote has no place in the file: the
                // override is named instead. A field the file holds that
                // was checked against one an override wrote keeps its
                // place, and the override is named too.
                let (at, message) = match touching(&p.path) {
                    Some(set) => (None, p.message + &load::after_set(set)),
                    None => {
                        let at = locate::locate(text, format, &p.path);
                        match p.related.iter().find_map(|r| touching(r)) {
                            Some(set) => (at, p.message + &load::after_set(set)),
                            None => (at, p.message),
                        }
                    }
                };
                Located {
                    origin: origin.to_string(),
                    line: at.map(|a| a.0),
                    column: at.map(|a| a.1),
                    path: Some(p.path),
                    message,
                }
            })
            .collect();
        return Err(InvalidInput::Problems(located));
    }
    Scenario::from_spec(spec).map_err(|error| InvalidInput::Resolve {
        origin: origin.to_string(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A data file may hold a trace of a million rows; a settings file is
    /// capped lower, and each cap's error says what the file is.
    #[test]
    fn data_files_have_room_for_the_longest_trace() {
        let of = |n: u64, kind| read_capped(std::io::Read::take(std::io::repeat(b'1'), n), kind);
        assert_eq!(of(40 << 20, InputKind::Data).unwrap().len(), 40 << 20);
        let too_big = of(MAX_DATA_BYTES + 1, InputKind::Data).unwrap_err();
        assert!(
            too_big.to_string().contains("1,000,000 arrivals"),
            "{too_big}"
        );
        let settings = of(MAX_INPUT_BYTES + 1, InputKind::Settings).unwrap_err();
        assert!(
            settings.to_string().contains("queue configuration"),
            "{settings}"
        );
        assert!(of(MAX_INPUT_BYTES, InputKind::Settings).is_ok());
    }

    const EXAMPLE: &str = include_str!("../../scenarios/example.json");
    const EXAMPLE_TOML: &str = include_str!("../../tests/good/example.toml");

    fn err(text: &str, origin: &str, sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let e = load_str(text, origin, &sets).unwrap_err();
        let mut msg = e.to_string();
        let mut next = std::error::Error::source(&e);
        while let Some(cause) = next {
            msg.push_str(&format!(": {cause}"));
            next = cause.source();
        }
        assert!(msg.starts_with(origin), "does not name {origin}: {msg}");
        msg
    }

    #[test]
    fn the_example_loads() {
        let s = load_str(EXAMPLE, "example.json", &[]).unwrap();
        assert_eq!(s.policies().len(), 4);
        assert_eq!(s.policies()[3].name, "queue-default");
        let from_file = load(Path::new("scenarios/example.json"), &[]).unwrap();
        assert_eq!(from_file.policies(), s.policies());
    }

    #[test]
    fn toml_and_json_give_the_same_scenario() {
        let j = load_str(EXAMPLE, "example.json", &[]).unwrap();
        let t = load_str(EXAMPLE_TOML, "example.toml", &[]).unwrap();
        assert_eq!(
            serde_json::to_value(&j.spec).unwrap(),
            serde_json::to_value(&t.spec).unwrap()
        );
        assert_eq!(j.policies(), t.policies());
        // Without an extension the content decides.
        let t2 = load_str(EXAMPLE_TOML, "<stdin>", &[]).unwrap();
        assert_eq!(t2.policies(), t.policies());
        assert!(load_str(EXAMPLE, "built-in spanner-90s.json", &[]).is_ok());
    }

    #[test]
    fn sets_override_fields_in_both_formats() {
        let sets: Vec<String> = [
            "backend.workers=120",
            "policies.1.backoff.initial=200ms",
            "policies.platform.max_attempts=7",
            "faults.0.outage.duration=60s",
            "name=renamed",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for (text, origin) in [(EXAMPLE, "e.json"), (EXAMPLE_TOML, "e.toml")] {
            let s = load_str(text, origin, &sets).unwrap();
            assert_eq!(s.spec().backend.workers, Some(120));
            assert_eq!(s.spec().name, "renamed");
            assert_eq!(s.policies()[2].max_attempts, Some(7));
            assert_eq!(
                s.spec().faults[0].window().1 - s.spec().faults[0].window().0,
                60_000_000_000
            );
            match &s.spec().policies[1].backoff {
                Some(crate::policy::BackoffSpec::Exponential { initial, .. }) => {
                    assert_eq!(initial.ns(), 200_000_000)
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn set_errors_name_the_assignment() {
        let e = err(EXAMPLE, "e.json", &["policies.nobody.max_attempts=3"]);
        assert!(
            e.starts_with("e.json: --set policies.nobody.max_attempts=3"),
            "{e}"
        );
        assert!(e.contains("platform"), "lists the names: {e}");
        let e = err(EXAMPLE, "e.json", &["backend.workers=-4"]);
        assert!(e.contains("backend.workers"), "{e}");
    }

    /// A count that starts at 1 is not said to start at 0 when it is not
    /// a whole number, then refused at 0.
    #[test]
    fn counts_are_not_said_to_start_at_zero() {
        for field in ["backend.workers", "traffic.clients", "downstream.0.calls"] {
            let tier = r#"downstream=[{"name": "db", "backend": {"workers": 2,
                "service_time": {"constant": {"value": "1ms"}}}}]"#;
            let e = err(EXAMPLE, "e.json", &[tier, &format!("{field}=-1")]);
            assert!(
                e.contains("expected a whole number up to 4294967295"),
                "{e}"
            );
            assert!(!e.contains("from 0"), "{e}");
        }
        let e = err(EXAMPLE, "e.json", &["backend.workers=0"]);
        assert!(e.contains("backend.workers: must be at least 1"), "{e}");
    }

    #[test]
    fn validation_problems_carry_positions() {
        let text = EXAMPLE.replace("\"rate\": 7000", "\"rate\": 0");
        let e = err(&text, "e.json", &[]);
        assert!(e.starts_with("e.json:9:13:"), "{e}");
        assert!(e.contains("traffic.rate"), "{e}");
        // A value an override wrote has no position; the override is named.
        let e = err(EXAMPLE, "e.json", &["traffic.rate=0"]);
        assert!(e.starts_with("e.json: traffic.rate:"), "{e}");
        assert!(e.ends_with("(after --set traffic.rate=0)"), "{e}");
        // A field the overrides leave alone keeps its place in the file.
        let e = err(&text, "e.json", &["seed=3"]);
        assert!(e.starts_with("e.json:9:13: traffic.rate:"), "{e}");
        assert!(!e.contains("--set"), "{e}");
    }

    /// A problem with a field the file holds, found by checking it against
    /// one an override wrote, keeps its place in the file and names the
    /// override; an override of a field it was not checked against is not
    /// named.
    #[test]
    fn overrides_of_the_fields_a_problem_was_checked_against_are_named() {
        let located = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            match load_str(EXAMPLE, "e.json", &sets) {
                Err(InvalidInput::Problems(list)) => {
                    assert_eq!(list.len(), 1, "{list:?}");
                    let p = &list[0];
                    assert!(p.line.is_some(), "{p:?}");
                    (p.path.clone().unwrap_or_default(), p.message.clone())
                }
                other => panic!("{other:?}"),
            }
        };
        let initial = "policies.jitter-10.backoff.initial=20s";
        assert_eq!(
            located(&[initial]),
            (
                "policies[1].backoff.exponential.max".into(),
                format!("10s is less than initial (20s) (after --set {initial})")
            )
        );
        // The first policy renamed to the second's name: the second, as
        // the file holds it, is the one reported.
        let name = "policies.no-jitter.name=jitter-10";
        let (path, message) = located(&[name]);
        assert_eq!(path, "policies[1].name");
        assert!(
            message.ends_with(&format!("(after --set {name})")),
            "{message}"
        );
        // A fault the file holds, after the run a shorter duration ends.
        let (path, message) = located(&["duration=4m"]);
        assert_eq!(path, "faults[0].outage.start");
        assert!(message.ends_with("(after --set duration=4m)"), "{message}");
        // An override the problem is not about is not named.
        let (_, message) = located(&["seed=3", initial]);
        assert!(!message.contains("seed"), "{message}");
        let (_, message) = located(&[initial, "policies.jitter-10.max_attempts=4"]);
        assert!(
            message.ends_with(&format!("(after --set {initial})")),
            "{message}"
        );
    }

    /// Overrides neither hide the file's own errors nor take their place:
    /// a key written twice stays an error, and a typo elsewhere keeps its
    /// line and column; an override may still supply what the file lacks.
    #[test]
    fn the_file_s_own_errors_survive_overrides() {
        let twice = EXAMPLE.replacen("\"workers\": 100,", "\"workers\": 100, \"workers\": 7,", 1);
        assert_ne!(twice, EXAMPLE);
        let alone = err(&twice, "e.json", &[]);
        assert!(alone.contains("duplicate field"), "{alone}");
        assert_eq!(err(&twice, "e.json", &["seed=3"]), alone);
        assert_eq!(err(&twice, "e.json", &["backend.workers=9"]), alone);
        let typo = EXAMPLE.replacen("\"workers\"", "\"wokers\"", 1);
        let alone = err(&typo, "e.json", &[]);
        assert!(alone.contains("unknown field"), "{alone}");
        let with_set = err(&typo, "e.json", &["seed=3"]);
        assert_eq!(with_set, alone);
        // The typo replaced by an override of its block: no longer an error.
        let block = r#"backend={"workers": 100, "service_time": {"constant": {"value": "10ms"}}}"#;
        assert!(load_str(&typo, "e.json", &[block.to_string()]).is_ok());
        // A required field the file lacks, given by an override.
        let no_rate = EXAMPLE.replacen("\"rate\": 7000,", "", 1);
        assert_ne!(no_rate, EXAMPLE);
        assert!(load_str(&no_rate, "e.json", &[]).is_err());
        assert!(load_str(&no_rate, "e.json", &["traffic.rate=7000".to_string()]).is_ok());
        // One at the top level.
        let no_duration = EXAMPLE.replacen("\"duration\": \"30m\",", "", 1);
        assert_ne!(no_duration, EXAMPLE);
        assert!(load_str(&no_duration, "e.json", &[]).is_err());
        assert!(load_str(&no_duration, "e.json", &["duration=30m".to_string()]).is_ok());
        // Two missing, one given: the error names the other.
        let neither = no_duration.replacen("\"name\": \"example\",", "", 1);
        assert_ne!(neither, no_duration);
        let e = err(&neither, "e.json", &["duration=30m"]);
        assert!(e.contains("missing field `name`"), "{e}");
        let e = err(&neither, "e.json", &["name=x"]);
        assert!(e.contains("missing field `duration`"), "{e}");
        // An override of one list item does not take the blame for another's
        // error, which keeps its place in the file.
        let bad_first = EXAMPLE.replacen("\"max_attempts\": 0", "\"max_attempts\": \"x\"", 1);
        assert_ne!(bad_first, EXAMPLE);
        let alone = err(&bad_first, "e.json", &[]);
        assert_eq!(
            err(&bad_first, "e.json", &["policies.platform.max_attempts=3"]),
            alone
        );
    }

    /// A key set into a block that holds one other block: into that block
    /// when it is a variant's body (`backoff.max` into `exponential`),
    /// beside it when the block is a plain object (`report` holding only
    /// `alerts`).
    #[test]
    fn a_key_beside_a_lone_block_goes_where_the_scenario_takes_it() {
        let text = EXAMPLE.replacen(
            r#""report": {"recovery_threshold": 0.9, "stable_for": "30s"}"#,
            r#""report": {"alerts": {"retry_rate": 0.5}}"#,
            1,
        );
        assert_ne!(text, EXAMPLE);
        let sets = ["report.recovery_threshold=0.8".to_string()];
        let s = load_str(&text, "e.json", &sets).unwrap();
        assert_eq!(s.spec().report.recovery_threshold, 0.8);
        assert_eq!(s.spec().report.alerts.retry_rate, 0.5);
        let sets = ["policies.platform.backoff.max=9s".to_string()];
        let s = load_str(EXAMPLE, "e.json", &sets).unwrap();
        let i = s
            .policies()
            .iter()
            .position(|p| p.name == "platform")
            .unwrap();
        let mut value: serde_json::Value = serde_json::to_value(s.spec()).unwrap();
        assert_eq!(
            value["policies"][i]["backoff"]["exponential"]["max"].take(),
            "9s"
        );
    }

    /// An override is blamed for the field it wrote as the scenario holds
    /// it (a name resolved to its index, a variant tag looked through),
    /// for the fields within it and around it, and the last override of a
    /// field is the one in effect.
    #[test]
    fn overrides_are_blamed_for_the_fields_they_wrote() {
        let sets = [
            "seed=3",
            "policies.platform.backoff.initial=1s",
            "traffic={\"rate\": 5}",
            "traffic.clients=-7",
        ];
        let mut value: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
        let writes: load::Writes = sets
            .iter()
            .map(|s| (s.to_string(), apply_set(&mut value, s).unwrap()))
            .collect();
        let platform = value["policies"]
            .as_array()
            .unwrap()
            .iter()
            .position(|p| p["name"] == "platform")
            .unwrap();
        let touching = |p: &str| load::set_touching(&load::field_of(p), &writes);
        assert_eq!(touching("seed"), Some("seed=3"));
        assert_eq!(touching("traffic.rate"), Some("traffic={\"rate\": 5}"));
        assert_eq!(touching("traffic.clients"), Some("traffic.clients=-7"));
        assert_eq!(touching("traffic"), Some("traffic.clients=-7"));
        let tag = value["policies"][platform]["backoff"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        assert_eq!(
            touching(&format!("policies[{platform}].backoff.{tag}.initial")),
            Some("policies.platform.backoff.initial=1s")
        );
        assert_eq!(
            touching(&format!("policies[{platform}].max_attempts")),
            None
        );
        assert_eq!(
            touching(&format!("policies[{}].backoff", platform + 1)),
            None
        );
        assert_eq!(touching("backend.workers"), None);
    }

    /// A huge value is quoted back cut, in the problem and in the
    /// override named with it.
    #[test]
    fn huge_values_are_not_echoed_whole() {
        let deep = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000));
        for set in [
            format!("traffic.rate={deep}"),
            format!("policies.0.jitter={deep}"),
            format!("name={deep}"),
            format!("traffic.{}=1", "x".repeat(60_000)),
            format!("traffic.rate.x={deep}"),
            format!("{deep}=1"),
        ] {
            let e = err(EXAMPLE, "e.json", &[&set]);
            assert!(e.len() < 500, "{} bytes: {}", e.len(), &e[..500]);
            assert!(e.contains("…"), "{e}");
        }
    }

    #[test]
    fn all_problems_are_reported() {
        let text = EXAMPLE
            .replace("\"rate\": 7000", "\"rate\": 0")
            .replace("\"recovery_threshold\": 0.9", "\"recovery_threshold\": 2");
        let e = err(&text, "e.json", &[]);
        assert_eq!(e.lines().count(), 2, "{e}");
        assert!(e.contains("report.recovery_threshold"), "{e}");
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep_json = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        err(&deep_json, "d.json", &[]);
        err(&deep_json, "d.json", &["a=1"]);
        let deep_toml = format!("a = {}{}", "[".repeat(100_000), "]".repeat(100_000));
        err(&deep_toml, "d.toml", &[]);
        err(&deep_toml, "d.toml", &["a=1"]);
        let deep_inline = format!("a = {}{}", "{b = ".repeat(10_000), "}".repeat(10_000));
        err(&deep_inline, "d.toml", &[]);
    }

    #[test]
    fn from_json_validates() {
        assert!(Scenario::from_json(EXAMPLE).is_ok());
        let e = Scenario::from_json(&EXAMPLE.replace("\"30m\"", "\"0s\"")).unwrap_err();
        assert!(e.to_string().contains("duration"), "{e}");
    }

    #[test]
    fn unknown_policy_names_list_the_known_ones() {
        let mut s = load_str(EXAMPLE, "e.json", &[]).unwrap();
        let e = s
            .select_policies(&["platform".into(), "nobody".into()])
            .unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("--policy \"nobody\": scenario"), "{msg}");
        assert!(msg.contains("no-jitter, jitter-10, platform"), "{msg}");
        assert_eq!(s.policies().len(), 4, "nothing dropped on error");
        s.select_policies(&["platform".into()]).unwrap();
        assert_eq!(s.policies().len(), 1);
        assert_eq!(s.spec().policies[0].name, "platform");
    }

    #[test]
    fn unreadable_files_keep_the_io_error_as_source() {
        let e = load(Path::new("tests/bad/does-not-exist.json"), &[]).unwrap_err();
        assert_eq!(e.to_string(), "tests/bad/does-not-exist.json: cannot read");
        let io = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("io::Error source");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }
}
