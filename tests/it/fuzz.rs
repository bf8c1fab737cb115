//! Bounded fuzzing of the scenario loader and the model, deterministic so
//! CI always runs the same cases.
//!
//! - Random bytes, random printable text and random token soup go to the
//!   loader: it must answer `Ok` or `Err`, never panic.
//! - Every shipped scenario is shrunk to a few simulated seconds, then
//!   mutated through its JSON value (keys deleted, leaves replaced by
//!   values of another type, extremes, duplicated array entries, parts of
//!   other scenarios grafted in) and loaded as JSON or TOML. What
//!   validates is simulated: a run may end or stall (time stopped
//!   advancing), never panic.
//!
//! `RETRYSIM_FUZZ_CASES=N` runs N cases per test instead of the default
//! and `RETRYSIM_FUZZ_SEED=S` starts from another seed (hunt with
//! `cargo test --release --test fuzz`). Inputs that once broke something
//! live in `tests/fuzz-regressions/` and are replayed first.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;
use retrysim::model::run::{simulate, RunError};
use retrysim::scenario::{load_str, Scenario};
use retrysim::time::parse_duration;
use serde_json::{Map, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Cases per test: `default` unless `RETRYSIM_FUZZ_CASES` says otherwise.
fn cases(default: u64) -> u64 {
    env_u64("RETRYSIM_FUZZ_CASES").unwrap_or(default)
}

fn rng(salt: u64) -> Pcg64 {
    Pcg64::seed_from_u64(env_u64("RETRYSIM_FUZZ_SEED").unwrap_or(0x5eed_f00d) ^ salt)
}

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `f`; a panic fails the test with the input that caused it, which
/// is also saved under the target's temporary folder for replay.
fn no_panic<T>(what: &str, input: &str, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(e) => {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let saved = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-panic.txt");
            let _ = std::fs::write(&saved, input);
            let shown: String = input.chars().take(4000).collect();
            panic!(
                "{what} panicked ({why}); input saved to {}:\n{shown}",
                saved.display()
            );
        }
    }
}

/// Loads `text`; never panics, and every error names `origin`.
fn load(text: &str, origin: &str, sets: &[String]) -> Option<Scenario> {
    let out = no_panic(&format!("loading {origin}"), text, || {
        load_str(text, origin, sets)
    });
    match out {
        Ok(s) => Some(s),
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty(), "empty error for {text:?}");
            assert!(
                msg.contains(origin) || msg.starts_with("--"),
                "error does not name {origin}: {msg}"
            );
            None
        }
    }
}

#[test]
fn random_bytes_and_text_never_panic() {
    let mut r = rng(1);
    let printable: Vec<char> = (' '..='~').chain(['\n', '\t', 'é', '\u{0}']).collect();
    for case in 0..cases(400) {
        let len = r.random_range(0..600);
        let text = if case % 2 == 0 {
            let bytes: Vec<u8> = (0..len).map(|_| r.random()).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            (0..len)
                .map(|_| printable[r.random_range(0..printable.len())])
                .collect()
        };
        for origin in ["r.json", "r.toml", "<stdin>"] {
            load(&text, origin, &[]);
        }
    }
}

/// Pieces of both formats, so random text gets past the first character.
const TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "[[",
    "]]",
    "\"",
    ":",
    ",",
    "=",
    "\n",
    " ",
    "name",
    "\"name\"",
    "duration",
    "\"duration\"",
    "\"10m\"",
    "\"0s\"",
    "\"-1s\"",
    "\"1e300s\"",
    "traffic",
    "\"traffic\"",
    "rate",
    "\"rate\"",
    "backend",
    "workers",
    "policies",
    "\"policies\"",
    "[traffic]",
    "[backend]",
    "[[policies]]",
    "[[faults]]",
    "outage",
    "start",
    "1e999",
    "-1",
    "0",
    "18446744073709551616",
    "nan",
    "inf",
    "true",
    "null",
    "\"p\"",
    "max_attempts",
    "backoff",
    "exponential",
    "initial",
    "\"100ms\"",
    "#",
    "'",
    "\\u0000",
    "\\",
];

#[test]
fn token_soup_never_panics() {
    let mut r = rng(2);
    for _ in 0..cases(400) {
        let n = r.random_range(0..80);
        let text: String = (0..n)
            .map(|_| TOKENS[r.random_range(0..TOKENS.len())])
            .collect();
        let sets = if r.random_bool(0.2) {
            vec![format!(
                "{}={}",
                TOKENS[r.random_range(0..TOKENS.len())].trim(),
                TOKENS[r.random_range(0..TOKENS.len())].trim()
            )]
        } else {
            Vec::new()
        };
        for origin in ["t.json", "t.toml"] {
            load(&text, origin, &sets);
        }
    }
}

/// Every shipped scenario as a JSON value, with its file name.
fn shipped() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(manifest().join("scenarios"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "toml")
            )
        })
        .collect();
    files.push(manifest().join("tests/good/example.toml"));
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let value: Value = if path.extension().is_some_and(|e| e == "toml") {
            serde_json::to_value(toml::from_str::<toml::Value>(&text).unwrap()).unwrap()
        } else {
            serde_json::from_str(&text).unwrap()
        };
        // A scenario that reads a trace file needs its folder: the fuzzed
        // text is loaded from elsewhere.
        if value["traffic"].get("trace").is_some() {
            continue;
        }
        out.push((path.file_name().unwrap().to_string_lossy().into(), value));
    }
    assert!(out.len() >= 10, "only {} shipped scenarios", out.len());
    out
}

const SHORT_NS: u64 = 4_000_000_000;

/// Scales every duration of `v` by 4 s / `duration` (so the run lasts
/// 4 s and every ordering between times holds), and caps the traffic.
fn shrink(v: &mut Value) {
    let run = v
        .get("duration")
        .and_then(Value::as_str)
        .and_then(|d| parse_duration(d).ok())
        .map_or(SHORT_NS, |d| d.ns().max(SHORT_NS));
    fn walk(v: &mut Value, run: u64) {
        match v {
            Value::String(s) => {
                if let Ok(d) = parse_duration(s) {
                    if d.ns() > 0 {
                        let ns = (d.ns() as u128 * SHORT_NS as u128 / run as u128) as u64;
                        *s = format!("{}ns", ns.max(1));
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| walk(x, run)),
            // A ratio budget's window has a range of its own (1 s to 60 s):
            // it is a property of the budget, not of the run's length.
            Value::Object(o) => o
                .iter_mut()
                .filter(|(k, _)| k.as_str() != "ttl")
                .for_each(|(_, x)| walk(x, run)),
            _ => {}
        }
    }
    walk(v, run);
    v["duration"] = Value::from("4s");
    let bin = v
        .get("bin")
        .and_then(Value::as_str)
        .and_then(|b| parse_duration(b).ok());
    if bin.is_none_or(|b| b.ns() < SHORT_NS / 1000) {
        v["bin"] = Value::from("100ms");
    }
    if let Some(t) = v.get_mut("traffic").and_then(Value::as_object_mut) {
        if let Some(rate) = t.get("rate").and_then(Value::as_f64) {
            t.insert("rate".into(), Value::from(rate.min(200.0)));
        }
        if let Some(c) = t.get("clients").and_then(Value::as_u64) {
            t.insert("clients".into(), Value::from(c.min(100)));
        }
    }
}

/// Values a mutation puts in place of a leaf.
fn odd_value(r: &mut Pcg64, pool: &[Value]) -> Value {
    match r.random_range(0..24) {
        0 => Value::Null,
        1 => Value::Bool(r.random()),
        2 => Value::from(0),
        3 => Value::from(-1),
        4 => Value::from(1),
        5 => Value::from(0.5),
        6 => Value::from(1e300),
        7 => Value::from(-1e300),
        8 => Value::from(u64::MAX),
        9 => Value::from(i64::MIN),
        10 => Value::from(""),
        11 => Value::from("0s"),
        12 => Value::from("-1s"),
        13 => Value::from("1ns"),
        14 => Value::from("100y"),
        15 => Value::from("1e300s"),
        16 => Value::from("nope"),
        17 => Value::Array(Vec::new()),
        18 => Value::Object(Map::new()),
        19 => Value::from(r.random_range(-5i64..5_000)),
        20 => Value::from(r.random::<f64>() * 3.0),
        21 => Value::from(format!("{}ms", r.random_range(0..3000))),
        _ => pool[r.random_range(0..pool.len())].clone(),
    }
}

/// Every path (object keys and array indices) to a node of `v`.
fn paths(v: &Value, at: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(at.clone());
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push(Step::Index(i));
                paths(x, at, out);
                at.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                at.push(Step::Key(k.clone()));
                paths(x, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn node<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// Every leaf, and every (key, value) member of an object, of the shipped
/// scenarios: material to graft.
fn material(all: &[(String, Value)]) -> (Vec<Value>, Vec<(String, Value)>) {
    fn walk(v: &Value, leaves: &mut Vec<Value>, members: &mut Vec<(String, Value)>) {
        match v {
            Value::Array(a) => a.iter().for_each(|x| walk(x, leaves, members)),
            Value::Object(o) => {
                for (k, x) in o {
                    members.push((k.clone(), x.clone()));
                    walk(x, leaves, members);
                }
            }
            leaf => leaves.push(leaf.clone()),
        }
    }
    let (mut leaves, mut members) = (Vec::new(), Vec::new());
    for (_, v) in all {
        walk(v, &mut leaves, &mut members);
    }
    (leaves, members)
}

/// One random structure-aware change to `v`.
fn mutate(v: &mut Value, r: &mut Pcg64, leaves: &[Value], members: &[(String, Value)]) {
    let mut all = Vec::new();
    paths(v, &mut Vec::new(), &mut all);
    let path = &all[r.random_range(0..all.len())];
    let target = node(v, path);
    // Most often: a member takes a value that member has in some shipped
    // scenario (plausible, so the mutant often validates and runs).
    if r.random_bool(0.5) {
        if let Value::Object(o) = target {
            if !o.is_empty() {
                let k = o.keys().nth(r.random_range(0..o.len())).unwrap().clone();
                let same: Vec<&Value> = members
                    .iter()
                    .filter(|(m, _)| *m == k)
                    .map(|(_, x)| x)
                    .collect();
                if !same.is_empty() {
                    o.insert(k, same[r.random_range(0..same.len())].clone());
                    return;
                }
            }
        }
    }
    match r.random_range(0..7) {
        // Delete a member or an array entry.
        0 => match target {
            Value::Object(o) if !o.is_empty() => {
                let k = o.keys().nth(r.random_range(0..o.len())).unwrap().clone();
                o.remove(&k);
            }
            Value::Array(a) if !a.is_empty() => {
                a.remove(r.random_range(0..a.len()));
            }
            _ => *target = odd_value(r, leaves),
        },
        // Duplicate an array entry.
        1 => match target {
            Value::Array(a) if !a.is_empty() => {
                let x = a[r.random_range(0..a.len())].clone();
                a.insert(r.random_range(0..=a.len()), x);
            }
            _ => *target = odd_value(r, leaves),
        },
        // Graft a member of some scenario into an object (a dispatcher, an
        // action, a budget, a mode).
        2 => {
            let (k, x) = &members[r.random_range(0..members.len())];
            if let Value::Object(o) = target {
                o.insert(k.clone(), x.clone());
            } else {
                *target = x.clone();
            }
        }
        // Set a duration to an extreme.
        3 => {
            let extremes = ["0s", "1ns", "1us", "-1s", "3s", "4s", "1h", "100y", "0.5ns"];
            *target = Value::from(extremes[r.random_range(0..extremes.len())]);
        }
        // An unknown member.
        4 => {
            if let Value::Object(o) = target {
                o.insert("surprise".into(), Value::from(1));
            } else {
                *target = odd_value(r, leaves);
            }
        }
        // Anything else: a value of another type, an extreme, another leaf.
        _ => *target = odd_value(r, leaves),
    }
}

/// Whether a validated scenario is small enough to simulate in a test.
fn tiny(s: &Scenario) -> bool {
    let spec = s.spec();
    let t = &spec.traffic;
    spec.duration.ns() <= 10_000_000_000
        && spec.duration.ns() / spec.bin.ns().max(1) <= 2_000
        && t.rate.unwrap_or(0.0) <= 1_000.0
        && t.clients <= 1_000
        && t.profile.iter().all(|p| p.scale <= 10.0)
        && spec.backend.workers.unwrap_or(0) <= 10_000
}

/// Simulates every policy of `s`; only ending or stalling is allowed.
/// Scenarios whose time may stop advancing (`zero_time_loop`) are left to
/// hunting runs: each costs millions of events before it is recognised.
fn simulate_all(s: &Scenario, input: &str, hunting: bool) -> (u64, u64) {
    let (mut ran, mut stalled) = (0, 0);
    for i in 0..s.policies().len() {
        if !hunting && s.zero_time_loop(i).is_some() {
            continue;
        }
        let out = no_panic(&format!("simulating policy {i}"), input, || {
            simulate(s, i, 0)
        });
        ran += 1;
        match out {
            Ok(r) => {
                // Every request is accounted for, in one bin per `bin`.
                let m = &r.summary();
                assert_eq!(
                    m.succeeded + m.failed + m.dropped + m.unfinished,
                    m.requests,
                    "requests unaccounted for; input:\n{input}"
                );
                let spec = s.spec();
                assert_eq!(
                    r.bins().len() as u64,
                    spec.duration.ns().div_ceil(spec.bin.ns()),
                    "bins; input:\n{input}"
                );
                assert_eq!(r.policy, s.policies()[i].name);
            }
            Err(RunError::Stalled { .. }) => stalled += 1,
            Err(e) => panic!("unexpected {e}; input:\n{input}"),
        }
    }
    (ran, stalled)
}

/// Writes `v` as JSON or (where it can be) TOML; returns (text, origin).
fn render(v: &Value, toml: bool) -> (String, &'static str) {
    if toml {
        if let Ok(text) = toml::to_string(v) {
            return (text, "m.toml");
        }
    }
    (serde_json::to_string_pretty(v).unwrap(), "m.json")
}

#[test]
fn mutated_shipped_scenarios_load_and_run_without_panics() {
    let all = shipped();
    let (leaves, members) = material(&all);
    let hunting = std::env::var_os("RETRYSIM_FUZZ_CASES").is_some();
    let mut r = rng(3);
    let (mut valid, mut ran, mut stalled) = (0u64, 0u64, 0u64);
    // The shrunk scenarios themselves must still load and run.
    for (name, v) in &all {
        let mut v = v.clone();
        shrink(&mut v);
        let (text, origin) = render(&v, false);
        let s = load(&text, origin, &[]).unwrap_or_else(|| {
            panic!("{name} shrunk to 4 s no longer loads:\n{text}");
        });
        assert!(tiny(&s), "{name} shrunk is not tiny");
        simulate_all(&s, &text, hunting);
    }
    let n = cases(600);
    for case in 0..n {
        let (_, base) = &all[case as usize % all.len()];
        let mut v = base.clone();
        shrink(&mut v);
        let edits = if r.random_bool(0.6) {
            1
        } else {
            r.random_range(2..=4)
        };
        for _ in 0..edits {
            mutate(&mut v, &mut r, &leaves, &members);
        }
        let (text, origin) = render(&v, r.random_bool(0.3));
        let Some(s) = load(&text, origin, &[]) else {
            continue;
        };
        valid += 1;
        // Whatever validates is still simulated when it stays small.
        if tiny(&s) {
            let (a, b) = simulate_all(&s, &text, hunting);
            ran += a;
            stalled += b;
        }
    }
    eprintln!("{n} mutants: {valid} valid, {ran} runs, {stalled} stalled");
    // The mutations must leave enough valid scenarios to exercise the model.
    assert!(valid * 10 >= n, "only {valid} of {n} mutants were valid");
    assert!(ran > 0);
}

/// The parts of a scenario the broad mutation reaches least often, each
/// with its own machinery: tiers below the backend and the policies they
/// call with, a queue in front, hedging and client-side rate limiters.
const FEATURES: [&str; 5] = [
    "downstream",
    "downstream_policy",
    "dispatcher",
    "hedging",
    "rate_limiter",
];

/// Whether `v` has a member named `key` anywhere.
fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, x)| k == key || has_key(x, key)),
        Value::Array(a) => a.iter().any(|x| has_key(x, key)),
        _ => false,
    }
}

/// Whether a tier of `v` calls with a policy object of its own.
fn tier_policy_object(v: &Value) -> bool {
    v.get("downstream")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter()
                .any(|t| t.get("policy").is_some_and(Value::is_object))
        })
}

/// The shipped scenarios that have one of [`FEATURES`], plus variants
/// that add what no shipped scenario combines: tiers calling with a
/// policy object of their own (1 ms retries, three attempts),
/// `downstream_policy`, and a rate limiter beside tiers, a queue or
/// hedging.
fn feature_bases(all: &[(String, Value)]) -> Vec<Value> {
    let mut out: Vec<Value> = all
        .iter()
        .filter(|(_, v)| FEATURES.iter().any(|k| has_key(v, k)))
        .map(|(_, v)| v.clone())
        .collect();
    // Bounded (3 attempts): an unlimited 1 µs storm is the cost
    // estimate's case, and would make a simulated mutant take minutes.
    let storm = serde_json::json!({"max_attempts": 3,
        "backoff": {"constant": {"delay": "1ms"}}});
    let mut extra = Vec::new();
    for v in &out {
        if let Some(tiers) = v.get("downstream").and_then(Value::as_array) {
            let mut w = v.clone();
            for (i, _) in tiers.iter().enumerate() {
                w["downstream"][i]["policy"] = storm.clone();
            }
            extra.push(w);
            let mut w = v.clone();
            if let Some(p) = w["policies"].get_mut(0).and_then(Value::as_object_mut) {
                p.insert(
                    "downstream_policy".into(),
                    serde_json::json!({"max_attempts": 2}),
                );
            }
            extra.push(w);
        }
        let mut w = v.clone();
        if let Some(p) = w["policies"].get_mut(0).and_then(Value::as_object_mut) {
            p.insert(
                "rate_limiter".into(),
                serde_json::json!({"aws_adaptive": {}}),
            );
        }
        extra.push(w);
    }
    out.extend(extra);
    out
}

#[test]
fn mutated_tiers_queues_hedging_and_limiters_load_and_run_without_panics() {
    let all = shipped();
    let (leaves, members) = material(&all);
    let bases = feature_bases(&all);
    let hunting = std::env::var_os("RETRYSIM_FUZZ_CASES").is_some();
    let mut r = rng(4);
    // Which features some valid mutant that was simulated had.
    let mut exercised = std::collections::BTreeSet::new();
    let (mut valid, mut ran) = (0u64, 0u64);
    let n = cases(120);
    for case in 0..n {
        let mut v = bases[case as usize % bases.len()].clone();
        shrink(&mut v);
        // Every change lands inside one of the features (a path through
        // one of their keys), where there is one.
        for _ in 0..r.random_range(1..=3) {
            let mut paths_all = Vec::new();
            paths(&v, &mut Vec::new(), &mut paths_all);
            let inside: Vec<&Vec<Step>> = paths_all
                .iter()
                .filter(|p| {
                    p.iter()
                        .any(|s| matches!(s, Step::Key(k) if FEATURES.contains(&k.as_str()) || k == "policy"))
                })
                .collect();
            if inside.is_empty() {
                mutate(&mut v, &mut r, &leaves, &members);
                continue;
            }
            let path = inside[r.random_range(0..inside.len())].clone();
            let mut sub = node(&mut v, &path).clone();
            mutate(&mut sub, &mut r, &leaves, &members);
            *node(&mut v, &path) = sub;
        }
        let (text, origin) = render(&v, r.random_bool(0.3));
        let Some(s) = load(&text, origin, &[]) else {
            continue;
        };
        valid += 1;
        if tiny(&s) {
            let (a, _) = simulate_all(&s, &text, hunting);
            ran += a;
            if a > 0 {
                for k in FEATURES {
                    if has_key(&v, k) {
                        exercised.insert(k.to_string());
                    }
                }
                if tier_policy_object(&v) {
                    exercised.insert("tier policy object".to_string());
                }
            }
        }
    }
    eprintln!("{n} feature mutants: {valid} valid, {ran} runs, exercised {exercised:?}");
    // Mutations inside these features break the file far more often than
    // elsewhere (about one in ten stays valid); the point is that some do,
    // and that each feature is simulated below.
    assert!(valid * 20 >= n, "only {valid} of {n} mutants were valid");
    for k in FEATURES.iter().copied().chain(["tier policy object"]) {
        assert!(
            exercised.contains(k),
            "no valid mutant with {k} was simulated: {exercised:?}"
        );
    }
}

#[test]
fn regressions_replay() {
    let dir = manifest().join("tests/fuzz-regressions");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("json" | "toml")
        ) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let origin = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(s) = load(&text, &origin, &[]) {
            simulate_all(&s, &text, true);
        }
    }
}
