//! Importers: real retry configurations turned into scenario blocks, so a
//! scenario can simulate exactly what production runs.
//!
//! - [`gcloud`]: the YAML that `gcloud tasks queues describe` prints (a Cloud
//!   Tasks queue's `retryConfig` and `rateLimits`).
//! - [`grpc`]: a gRPC service config's `methodConfig[].retryPolicy` and
//!   `retryThrottling` (gRFC A6).
//! - [`envoy`]: Envoy route `retry_policy` and cluster `circuit_breakers`.
//! - [`istio`]: an Istio `VirtualService`'s `http[].retries`.
//! - [`aws`]: the AWS shared config file's `retry_mode` / `max_attempts`.
//! - [`linkerd`]: Linkerd retry annotations and a ServiceProfile's
//!   `retryBudget`.
//!
//! All return an [`Imported`] block; malformed input is an
//! [`InvalidInput`] error naming the file and the key.

pub mod aws;
pub mod envoy;
pub mod gcloud;
pub mod grpc;
pub mod istio;
pub mod linkerd;
mod yaml_docs;

use crate::check::{Problem, MAX_NAME_BYTES};
use crate::policy::PolicySpec;
use crate::scenario::error::{InvalidInput, Located};
use crate::scenario::load::Format;
use crate::scenario::locate::locate;
use crate::scenario::spec::{DispatcherSpec, ScenarioSpec};
use serde::Serialize;

/// What an importer produced: scenario blocks plus the warnings about what
/// it had to drop or assume.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Imported {
    /// The imported retry policies, as written in a scenario.
    pub policies: Vec<PolicySpec>,
    /// The imported queue (`dispatcher` block), when the source has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatcher: Option<DispatcherSpec>,
    /// Printed on stderr, never part of the block.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

impl Imported {
    /// The block as pretty JSON, ready to paste into a scenario.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("scenario blocks always serialize")
    }

    /// The block in a minimal scenario (one worker, 1 request a second),
    /// as `check` would read it.
    pub(crate) fn as_scenario(&self) -> Result<ScenarioSpec, serde_json::Error> {
        let mut doc = serde_json::json!({
            "name": "imported",
            "duration": "1h",
            "traffic": {"rate": 1.0},
            "backend": {"workers": 1, "service_time": {"constant": {"value": "1ms"}}},
        });
        if let (Some(d), serde_json::Value::Object(block)) =
            (doc.as_object_mut(), serde_json::to_value(self)?)
        {
            d.extend(block);
        }
        serde_json::from_value::<ScenarioSpec>(doc)
    }

    /// `self` when a scenario would accept the block as it stands, else an
    /// error about `origin` with what the scenario would refuse. The
    /// importers convert what they can and refuse what they cannot; this
    /// is the check that nothing slipped between the two, so a user never
    /// pastes a block only to have `check` refuse it.
    pub(crate) fn validated(self, origin: &str) -> Result<Self, InvalidInput> {
        let problems = match self.as_scenario() {
            Ok(spec) => crate::scenario::validate(&spec).err().unwrap_or_default(),
            Err(e) => vec![Problem::new("block", e.to_string())],
        };
        if problems.is_empty() {
            return Ok(self);
        }
        let list: Vec<String> = problems.iter().map(Problem::to_string).collect();
        Err(InvalidInput::At(Located::whole(
            origin,
            format!(
                "cannot be imported as a valid scenario block: {}",
                list.join("; ")
            ),
        )))
    }
}

/// The configurations of several files (each with the file it came
/// from) as one: their policies in the order given, a name that an
/// earlier file's policy already has renamed as within one file (a
/// warning, named with the file, says so), and the queue of the one file
/// that holds one. Two files with a queue are refused: a scenario has one
/// dispatcher, so the first queue's policies would be checked against
/// the second's rate limits.
pub fn join(configs: Vec<(String, Imported)>) -> Result<Imported, InvalidInput> {
    let mut joined = Imported::default();
    let mut queue_from: Option<String> = None;
    for (origin, i) in configs {
        joined.warnings.extend(
            i.warnings
                .into_iter()
                .map(|w| format!("{origin}: warning: {w}")),
        );
        for p in i.policies {
            let mut renamed = vec![];
            let name = unique(p.name.clone(), &joined.policies, &mut renamed);
            joined.warnings.extend(
                renamed
                    .into_iter()
                    .map(|w| format!("{origin}: warning: {w}")),
            );
            joined.policies.push(PolicySpec { name, ..p });
        }
        if let Some(d) = i.dispatcher {
            if let Some(first) = &queue_from {
                return Err(InvalidInput::At(Located::whole(
                    &origin,
                    format!(
                        "holds a queue, and so does {first}: a scenario has one dispatcher, \
                         so gate each queue's configuration in a run of its own"
                    ),
                )));
            }
            queue_from = Some(origin);
            joined.dispatcher = Some(d);
        }
    }
    Ok(joined)
}

/// `Ok` when `text` reads as YAML (every document of it), else the
/// parser's refusal with its line and column in `origin`.
pub fn check_yaml(text: &str, origin: &str) -> Result<(), InvalidInput> {
    yaml_docs::documents(text, origin).map(drop)
}

/// Adds `spec` to `policies` under the policy name made from `raw`
/// (`fallback` when `raw` gives none), kept unique as [`unique`] does.
pub(crate) fn push_named(
    policies: &mut Vec<PolicySpec>,
    raw: &str,
    fallback: &str,
    spec: PolicySpec,
    warnings: &mut Vec<String>,
) {
    let name = policy_name(raw, fallback, warnings);
    let name = unique(name, policies, warnings);
    policies.push(PolicySpec { name, ..spec });
}

/// `name`, or `name-2`, `name-3`, … (cut so the suffix stays within the
/// name limit) when a policy already has it, with a warning saying so.
pub(crate) fn unique(name: String, policies: &[PolicySpec], warnings: &mut Vec<String>) -> String {
    let taken = |n: &str| policies.iter().any(|p| p.name == n);
    if !taken(&name) {
        return name;
    }
    let mut k = 2;
    loop {
        let tail = format!("-{k}");
        let mut candidate = name.clone();
        cut_to(&mut candidate, MAX_NAME_BYTES - tail.len());
        candidate.push_str(&tail);
        if !taken(&candidate) {
            warnings.push(format!(
                "two retry configurations are named {name}: the second is {candidate}"
            ));
            return candidate;
        }
        k += 1;
    }
}

/// A policy name a scenario accepts, made from a name in the source (a
/// gRPC `service/method`, a queue ID): `/` and `\` become `.`, the other
/// characters Windows forbids in a folder name (`<>:"|?*`) become `-`;
/// control characters, Unicode format characters, a leading `.`, `=`,
/// `+`, `-` or `@` and trailing whitespace or `.` are dropped, and it is
/// cut to 200 bytes; `fallback` when nothing is left or what is left is still not a
/// name a scenario accepts (a reserved device name such as `CON`). A
/// source name replaced by `fallback` is warned about, with the reason:
/// a policy name becomes a folder name in the outputs.
pub(crate) fn policy_name(raw: &str, fallback: &str, warnings: &mut Vec<String>) -> String {
    let mapped: String = raw
        .chars()
        .filter(|&c| !c.is_control() && !crate::scenario::names::is_format(c))
        .map(|c| match c {
            '/' | '\\' => '.',
            c if crate::scenario::names::WINDOWS_FORBIDDEN.contains(&c) => '-',
            c => c,
        })
        .collect();
    let mut name = mapped
        .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '.' | '=' | '+' | '-' | '@'))
        .to_string();
    cut_to(&mut name, MAX_NAME_BYTES);
    let name = name.trim_end_matches(|c: char| c.is_whitespace() || c == '.');
    let Some(why) = crate::scenario::names::name_problem(name) else {
        return name.to_string();
    };
    if !raw.trim().is_empty() {
        warnings.push(replaced_name(raw, name, &why, fallback));
    }
    fallback.to_string()
}

/// The warning for the source name `raw`, left as `name` once cleaned,
/// which a policy cannot be named for the reason `why` (as
/// [`name_problem`](crate::scenario::names::name_problem) gives it) and
/// is imported as `fallback` instead.
fn replaced_name(raw: &str, name: &str, why: &str, fallback: &str) -> String {
    let why = if name.is_empty() {
        "nothing is left of it once the characters a policy name cannot hold are dropped"
            .to_string()
    } else {
        // The reason without its advice to the user ("; remove it"): the
        // import has chosen the name itself.
        let why = why.split("; ").next().unwrap_or(why);
        format!("it {why}")
    };
    format!(
        "{raw:?} cannot be a policy name, which becomes a folder name in the outputs: {why}; \
         imported as {fallback}"
    )
}

/// Cuts `name` to at most `max` bytes, at a character boundary.
pub(crate) fn cut_to(name: &mut String, max: usize) {
    let mut cut = name.len().min(max);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    name.truncate(cut);
}

/// An [`InvalidInput`] error about `key` of the file `origin`.
pub(crate) fn bad_key(origin: &str, key: &str, msg: impl std::fmt::Display) -> InvalidInput {
    InvalidInput::At(Located::at_path(origin, key, msg.to_string()))
}

/// `e` with a line and column, where the text shows them, on each problem
/// that names a key but no position: an importer refuses values after
/// reading them, when serde's positions are gone.
pub(crate) fn placed(e: InvalidInput, text: &str, format: Format) -> InvalidInput {
    placed_by(e, |path| locate(text, format, path))
}

/// [`placed`] for a format of its own: `find` gives the line and column
/// of a key's value, as `FILE:LINE:COL` places the parser's own errors.
pub(crate) fn placed_by(
    e: InvalidInput,
    find: impl Fn(&str) -> Option<(usize, usize)>,
) -> InvalidInput {
    let place = |mut l: Located| {
        if l.line.is_none() {
            if let Some((line, column)) = l.path.as_deref().and_then(&find) {
                (l.line, l.column) = (Some(line), Some(column));
            }
        }
        l
    };
    match e {
        InvalidInput::At(l) => InvalidInput::At(place(l)),
        InvalidInput::Problems(list) => {
            InvalidInput::Problems(list.into_iter().map(place).collect())
        }
        other => other,
    }
}

/// The key each line of an importer's error names (`FILE: KEY: why`), for
/// tests of what was refused.
#[cfg(test)]
pub(crate) fn refused_keys(msg: &str) -> Vec<&str> {
    msg.lines()
        .map(|l| l.split(": ").nth(1).unwrap_or_default())
        .collect()
}

/// Every value an importer refuses, gathered so that one run of `import`
/// names them all, not only the first: a configuration with three bad
/// keys is fixed in one pass.
#[derive(Debug)]
pub(crate) struct Refusals<'a> {
    /// The file being imported.
    origin: &'a str,
    list: Vec<Located>,
}

impl<'a> Refusals<'a> {
    /// None yet, about the file `origin`.
    pub(crate) fn new(origin: &'a str) -> Self {
        Refusals {
            origin,
            list: vec![],
        }
    }

    /// Records why a value was refused.
    pub(crate) fn add(&mut self, e: InvalidInput) {
        match e {
            InvalidInput::At(l) => self.list.push(l),
            InvalidInput::Problems(list) => self.list.extend(list),
            // Importers refuse values through `bad_key`; anything else is
            // kept as a line of its own.
            other => self
                .list
                .push(Located::whole(self.origin, other.to_string())),
        }
    }

    /// The value of `r`, or `None` with its refusal recorded.
    pub(crate) fn keep<T>(&mut self, r: Result<T, InvalidInput>) -> Option<T> {
        r.map_err(|e| self.add(e)).ok()
    }

    /// `Ok(())` when nothing was refused, else every refusal in the order
    /// found (one alone as itself).
    pub(crate) fn check(mut self) -> Result<(), InvalidInput> {
        match self.list.len() {
            0 => Ok(()),
            1 => Err(InvalidInput::At(self.list.remove(0))),
            _ => Err(InvalidInput::Problems(self.list)),
        }
    }
}

/// Whether `key` is `word` written another way: in another case, with
/// `_` or `-` between its parts, with an `s` more or less at the end
/// (`retryconfig`, `retry_config`, `rateLimit`), or with a typing slip:
/// a letter left out, added, changed or two swapped (one in a word of
/// up to eight letters, two in a longer one: `retryThrotling`).
pub(crate) fn same_word(key: &str, word: &str) -> bool {
    let plain = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let (key, word) = (plain(key), plain(word));
    let (key, word) = (key.trim_end_matches('s'), word.trim_end_matches('s'));
    let slips = if word.chars().count() > 8 { 2 } else { 1 };
    key == word || strsim::damerau_levenshtein(key, word) <= slips
}

/// The word of `known` that `key` is most likely a misspelling of (the
/// nearest of those it is [`same_word`] as), if any.
pub(crate) fn closest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .filter(|w| same_word(key, w))
        .min_by_key(|w| strsim::damerau_levenshtein(&key.to_lowercase(), &w.to_lowercase()))
        .copied()
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_second_name_gets_a_suffix_within_the_name_limit() {
        let named = |n: &str| PolicySpec {
            name: n.into(),
            ..Default::default()
        };
        let mut warnings = vec![];
        let long = "a".repeat(MAX_NAME_BYTES);
        let taken = [
            named(&long),
            named(&format!("{}-2", &long[..MAX_NAME_BYTES - 2])),
        ];
        let got = unique(long.clone(), &taken, &mut warnings);
        assert_eq!(got, format!("{}-3", &long[..MAX_NAME_BYTES - 2]));
        assert_eq!(warnings.len(), 1);
        assert_eq!(unique("free".into(), &taken, &mut warnings), "free");
        assert_eq!(warnings.len(), 1);
    }
    use super::*;

    #[test]
    fn a_word_written_another_way_is_the_same_word() {
        for (key, word) in [
            ("retryconfig", "retryConfig"),
            ("retry_config", "retryConfig"),
            ("rateLimit", "rateLimits"),
            ("retryThrotling", "retryThrottling"),
            ("maxTokns", "maxTokens"),
            ("mxaAttempts", "maxAttempts"),
        ] {
            assert!(same_word(key, word), "{key} is {word}");
        }
        for (key, word) in [
            ("name", "state"),
            ("timeout", "maxTokens"),
            ("httpTarget", "rateLimits"),
            ("maxBackoff", "minBackoff2"),
        ] {
            assert!(!same_word(key, word), "{key} is not {word}");
        }
        // The nearest of several candidates.
        let backoffs = ["minBackoff", "maxBackoff"];
        assert_eq!(closest("maxBackof", &backoffs), Some("maxBackoff"));
        assert_eq!(closest("minbackoff", &backoffs), Some("minBackoff"));
        assert_eq!(closest("timeout", &backoffs), None);
    }
    use crate::policy::BackoffSpec;
    use crate::scenario::names::name_problem as unsafe_name;
    use crate::time::Dur;
    use proptest::prelude::*;

    #[test]
    fn source_names_become_names_a_scenario_accepts() {
        let mut warnings = vec![];
        let mut name = |raw: &str, fallback: &str| policy_name(raw, fallback, &mut warnings);
        assert_eq!(
            name("helloworld.Greeter/SayHello", "x"),
            "helloworld.Greeter.SayHello"
        );
        assert_eq!(name("-queue", "x"), "queue");
        assert_eq!(name("GET /api:v1/items?all", "x"), "GET .api-v1.items-all");
        assert_eq!(name("orders", "x"), "orders");
        // No name in the source: the fallback, without a word.
        assert_eq!(name("", "grpc-0"), "grpc-0");
        assert_eq!(warnings, Vec::<String>::new());
    }

    /// A name from the source that a policy cannot have is replaced by
    /// the fallback, and the warning says so and why.
    #[test]
    fn a_source_name_replaced_by_the_fallback_is_warned_about() {
        let mut warnings = vec![];
        assert_eq!(policy_name("CON", "queue", &mut warnings), "queue");
        assert_eq!(policy_name("aux.txt", "aws-1", &mut warnings), "aws-1");
        assert_eq!(policy_name(" /// ", "grpc-0", &mut warnings), "grpc-0");
        assert_eq!(
            warnings,
            [
                "\"CON\" cannot be a policy name, which becomes a folder name in the outputs: \
                 it is the device name CON, which Windows reserves (also with an extension), so \
                 it cannot be a folder name there; imported as queue",
                "\"aux.txt\" cannot be a policy name, which becomes a folder name in the \
                 outputs: it is the device name AUX, which Windows reserves (also with an \
                 extension), so it cannot be a folder name there; imported as aws-1",
                "\" /// \" cannot be a policy name, which becomes a folder name in the outputs: \
                 nothing is left of it once the characters a policy name cannot hold are \
                 dropped; imported as grpc-0",
            ]
        );
        // Through push_named, as the deploy and AWS importers name theirs.
        let mut policies = vec![];
        let mut warnings = vec![];
        push_named(
            &mut policies,
            "PRN",
            "aws-1",
            PolicySpec::default(),
            &mut warnings,
        );
        assert_eq!(policies[0].name, "aws-1");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("\"PRN\" cannot be a policy name"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_block_a_scenario_would_refuse_is_not_printed() {
        let bad = Imported {
            policies: vec![PolicySpec {
                name: "x".into(),
                backoff: Some(BackoffSpec::Exponential {
                    initial: Dur::from_secs(1),
                    multiplier: 0.5,
                    max: None,
                    max_doublings: None,
                }),
                ..Default::default()
            }],
            dispatcher: None,
            warnings: vec![],
        };
        let msg = bad.validated("sc.json").unwrap_err().to_string();
        assert!(
            msg.starts_with("sc.json: ")
                && msg.contains("policies[0].backoff.exponential.multiplier"),
            "{msg}"
        );
    }

    proptest! {
        #[test]
        fn every_source_name_becomes_a_safe_name(raw in "\\PC{0,300}|[./\\\\=+@ -]{0,5}[a-zé/]{0,250}") {
            let name = policy_name(&raw, "fallback", &mut vec![]);
            prop_assert_eq!(unsafe_name(&name), None, "{:?} -> {:?}", raw, name);
        }
    }
}
