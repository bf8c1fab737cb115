//! `retrysim gate` end to end on the HotOS toy: the command the CI examples
//! in `deploy/ci/` run passes with the shipped gRPC service config and
//! fails, with the gate's own exit status, with a config that retries
//! five times; the JUnit XML meets Maven Surefire's report schema
//! (`maven-surefire-plugin/src/site/resources/xsd/surefire-test-report.xsd`
//! in apache/maven-surefire, its constraints written out below, as no XML
//! schema validator is at hand) and the Markdown has a row per policy ×
//! condition.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// The gate's exit status when a check fails.
const FAILED: i32 = 3;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every string in a YAML document that holds a `retrysim gate` command,
/// split into words (YAML folds the lines of a plain or `>-` scalar).
fn gate_commands(path: &str) -> Vec<Vec<String>> {
    fn walk(v: &Value, out: &mut Vec<Vec<String>>) {
        match v {
            Value::String(s) if s.trim_start().starts_with("retrysim gate") => {
                out.push(s.split_whitespace().map(String::from).collect())
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let doc: Value = serde_saphyr::from_str(&text).unwrap();
    let mut out = Vec::new();
    walk(&doc, &mut out);
    out
}

/// The command both CI examples run, without the leading `retrysim`.
fn ci_command() -> Vec<String> {
    let github = gate_commands("deploy/ci/github-actions.yml");
    let gitlab = gate_commands("deploy/ci/gitlab-ci.yml");
    assert_eq!(github.len(), 1, "{github:?}");
    assert_eq!(github, gitlab, "the two CI examples run the same command");
    github[0][1..].to_vec()
}

/// Runs `retrysim ARGS` in a fresh folder holding copies of the
/// repository files the arguments name; returns the exit status, stdout
/// and the folder.
fn gate(args: &[String]) -> (Option<i32>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for a in args {
        let src = root().join(a);
        if !a.starts_with('-') && src.is_file() {
            let dst = dir.path().join(a);
            std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
            std::fs::copy(&src, &dst).unwrap();
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(dir.path())
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text, dir)
}

#[test]
fn the_ci_examples_run_the_tested_command() {
    let args = ci_command();
    for want in [
        "gate",
        "--config",
        "examples/service_config.json",
        "--fail-on",
        "--min-margin",
        "--max-amplification",
        "--max-drain",
        "--junit",
        "--markdown",
    ] {
        assert!(args.iter().any(|a| a == want), "{want} in {args:?}");
    }
}

#[test]
fn the_shipped_configuration_passes_the_gate() {
    let args = ci_command();
    let (code, out, dir) = gate(&args);
    assert_eq!(code, Some(0), "{out}");
    let xml = std::fs::read_to_string(dir.path().join("gate.xml")).unwrap();
    let suite = surefire(&xml);
    // One policy (example.EchoService) × four conditions.
    assert_eq!(suite.children.len(), 4, "{xml}");
    assert_eq!(suite.attr("failures"), Some("0"));
    let md = std::fs::read_to_string(dir.path().join("gate.md")).unwrap();
    let rows = table_rows(&md);
    assert_eq!(rows.len(), 4, "{md}");
    for (row, condition) in
        rows.iter()
            .zip(["metastable", "min-margin", "max-amplification", "max-drain"])
    {
        assert_eq!(row[0], "example.EchoService");
        assert_eq!(row[1], condition);
        assert_eq!(row[4], "pass");
    }
    assert!(md.contains("all 4 checks pass"), "{md}");
}

#[test]
fn a_configuration_that_retries_five_times_fails_the_gate() {
    let args: Vec<String> = ci_command()
        .into_iter()
        .map(|a| {
            if a == "examples/service_config.json" {
                "tests/good/gate/storm-service-config.json".into()
            } else {
                a
            }
        })
        .collect();
    let (code, out, dir) = gate(&args);
    assert_eq!(code, Some(FAILED), "{out}");
    let xml = std::fs::read_to_string(dir.path().join("gate.xml")).unwrap();
    let suite = surefire(&xml);
    let failed: Vec<&Element> = suite
        .children
        .iter()
        .filter(|c| !c.children.is_empty())
        .collect();
    // Five attempts without a budget: amplification 5 > 3; 4 retries of
    // the load at 100 req/s against capacity 300 leave it under 1.5×.
    let amplification = failed
        .iter()
        .find(|c| c.attr("name") == Some("example.EchoService: max-amplification"))
        .expect("max-amplification fails");
    let failure = &amplification.children[0];
    let message = failure.attr("message").unwrap();
    assert!(
        message.starts_with("measured 5 (max_attempts = 5; simulated ")
            && message.ends_with("; limit ≤ 3 attempts per request"),
        "{message}"
    );
    assert!(failure.text.contains("worst-case attempts per request"));
    assert!(failed
        .iter()
        .any(|c| c.attr("name") == Some("example.EchoService: min-margin")));
    let md = std::fs::read_to_string(dir.path().join("gate.md")).unwrap();
    let rows = table_rows(&md);
    assert_eq!(rows.len(), 4, "{md}");
    assert_eq!(
        rows.iter().filter(|r| r[4] == "**FAIL**").count(),
        failed.len(),
        "{md}"
    );
    assert!(
        out.contains("FAIL example.EchoService fails max-amplification: worst-case"),
        "{out}"
    );
}

#[test]
fn a_gate_without_conditions_or_with_an_unknown_file_is_refused() {
    let toy = "scenarios/hotos21-toy.json".to_string();
    let (code, out, _d) = gate(&["gate".into(), toy.clone()]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("no condition to check"), "{out}");
    let (code, out, _d) = gate(&[
        "gate".into(),
        toy.clone(),
        "--config".into(),
        "Cargo.toml".into(),
        "--max-drain".into(),
        "1m".into(),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--config-format"), "{out}");
}

/// A limit no policy can meet (`--max-amplification` below 1) and a
/// drain limit without its unit are invalid input (exit 2), refused
/// before anything runs, not checks that fail (exit 3).
#[test]
fn a_limit_below_one_attempt_or_a_drain_without_unit_is_invalid_input() {
    let toy = "scenarios/hotos21-toy.json".to_string();
    for (flag, value, needle) in [
        (
            "--max-amplification",
            "0.5",
            "no policy makes fewer than one attempt per request",
        ),
        (
            "--max-drain",
            "10",
            "invalid duration \"10\": expected a number with a unit",
        ),
    ] {
        let (code, out, _d) = gate(&["gate".into(), toy.clone(), flag.into(), value.into()]);
        assert_eq!(code, Some(2), "{flag} {value}: {out}");
        assert!(out.contains(needle), "{flag} {value}: {out}");
    }
}

/// The cells of each body row of the Markdown table.
fn table_rows(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| policy |"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .inspect(|cells| assert_eq!(cells.len(), 5, "{cells:?}"))
        .collect()
}

/// An XML element: its name, attributes, child elements and text.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Checks `xml` against the Surefire report schema's constraints and
/// returns its `testsuite`: the root is `testsuite` with the required
/// `name`, `tests`, `errors`, `skipped`, `failures` (and no attribute the
/// schema does not declare), holding `properties` then `testcase`
/// elements; a `testcase` requires `name` and `time` (the schema's time
/// pattern), may have `classname` and `group`, and holds at most
/// `failure` (which requires `type`), `skipped`, `error`, `system-out`,
/// `system-err`. The counts must match the cases, and (classname, name)
/// must be unique (GitLab keys cases by them).
fn surefire(xml: &str) -> Element {
    let suite = parse(xml);
    assert_eq!(suite.name, "testsuite");
    let allowed = |e: &Element, names: &[&str]| {
        for (k, _) in &e.attrs {
            assert!(names.contains(&k.as_str()), "{}: attribute {k}", e.name);
        }
    };
    allowed(
        &suite,
        &[
            "name", "time", "tests", "errors", "skipped", "failures", "group",
        ],
    );
    for a in ["name", "tests", "errors", "skipped", "failures"] {
        assert!(suite.attr(a).is_some(), "testsuite needs {a}");
    }
    let time_ok = |t: &str| {
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        int.chars().all(|c| c.is_ascii_digit() || c == ',')
            && frac.len() <= 3
            && frac.chars().all(|c| c.is_ascii_digit())
    };
    if let Some(t) = suite.attr("time") {
        assert!(time_ok(t), "time {t}");
    }
    let mut seen_case = false;
    let mut failures = 0;
    let mut keys = std::collections::BTreeSet::new();
    for c in &suite.children {
        match c.name.as_str() {
            "properties" => assert!(!seen_case, "properties after a testcase"),
            "testcase" => {
                seen_case = true;
                allowed(c, &["name", "classname", "group", "time"]);
                assert!(c.attr("name").is_some_and(|n| !n.is_empty()));
                assert!(c.attr("time").is_some_and(time_ok), "{c:?}");
                assert!(keys.insert((c.attr("classname"), c.attr("name"))));
                for f in &c.children {
                    assert!(
                        ["failure", "skipped", "error", "system-out", "system-err"]
                            .contains(&f.name.as_str()),
                        "{}",
                        f.name
                    );
                    if f.name == "failure" {
                        allowed(f, &["message", "type"]);
                        assert!(f.attr("type").is_some(), "failure needs a type");
                        assert!(f.children.is_empty());
                    }
                }
                failures += c.children.iter().filter(|f| f.name == "failure").count();
            }
            other => panic!("testsuite holds {other}"),
        }
    }
    let cases = suite
        .children
        .iter()
        .filter(|c| c.name == "testcase")
        .count();
    assert_eq!(suite.attr("tests"), Some(cases.to_string().as_str()));
    assert_eq!(suite.attr("failures"), Some(failures.to_string().as_str()));
    assert_eq!(suite.attr("errors"), Some("0"));
    suite
}

/// A strict reader of the XML subset a report uses: a declaration,
/// elements, double- or single-quoted attributes, text and the five
/// entities and character references. Panics on anything malformed: an
/// unclosed or mismatched tag, a bare `&` or `<`, a repeated attribute,
/// text outside the root.
fn parse(xml: &str) -> Element {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .expect("an XML declaration");
    let mut p = Reader {
        s: body.as_bytes(),
        i: 0,
    };
    p.space();
    let root = p.element();
    p.space();
    assert_eq!(p.i, p.s.len(), "content after the root element");
    root
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn space(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn name(&mut self) -> String {
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || b"-_:.".contains(&self.s[self.i]))
        {
            self.i += 1;
        }
        assert!(self.i > start, "a name at byte {start}");
        String::from_utf8(self.s[start..self.i].to_vec()).unwrap()
    }
    fn expect(&mut self, b: u8) {
        assert_eq!(self.s.get(self.i), Some(&b), "at byte {}", self.i);
        self.i += 1;
    }
    fn unescape(raw: &str) -> String {
        let mut out = String::new();
        let mut rest = raw;
        while let Some(at) = rest.find('&') {
            out.push_str(&rest[..at]);
            let end = rest[at..].find(';').expect("an entity ends with ;") + at;
            let entity = &rest[at + 1..end];
            let c = match entity {
                "amp" => '&',
                "lt" => '<',
                "gt" => '>',
                "quot" => '"',
                "apos" => '\'',
                e if e.starts_with('#') => {
                    char::from_u32(e[1..].parse::<u32>().expect("a decimal reference")).unwrap()
                }
                e => panic!("unknown entity &{e};"),
            };
            out.push(c);
            rest = &rest[end + 1..];
        }
        assert!(!rest.contains('<'), "a bare < in {raw:?}");
        out.push_str(rest);
        out
    }
    fn element(&mut self) -> Element {
        self.expect(b'<');
        let name = self.name();
        let mut attrs: Vec<(String, String)> = Vec::new();
        loop {
            self.space();
            match self.s.get(self.i) {
                Some(b'/') => {
                    self.i += 1;
                    self.expect(b'>');
                    return Element {
                        name,
                        attrs,
                        children: Vec::new(),
                        text: String::new(),
                    };
                }
                Some(b'>') => {
                    self.i += 1;
                    break;
                }
                _ => {
                    let key = self.name();
                    self.space();
                    self.expect(b'=');
                    self.space();
                    let q = self.s[self.i];
                    assert!(q == b'"' || q == b'\'', "a quoted value for {key}");
                    self.i += 1;
                    let start = self.i;
                    while self.s[self.i] != q {
                        self.i += 1;
                    }
                    let raw = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                    self.i += 1;
                    assert!(attrs.iter().all(|(k, _)| *k != key), "{name}: {key} twice");
                    attrs.push((key, Self::unescape(raw)));
                }
            }
        }
        let mut children = Vec::new();
        let mut text = String::new();
        loop {
            let start = self.i;
            while self.s[self.i] != b'<' {
                self.i += 1;
            }
            text.push_str(&Self::unescape(
                std::str::from_utf8(&self.s[start..self.i]).unwrap(),
            ));
            if self.s.get(self.i + 1) == Some(&b'/') {
                self.i += 2;
                assert_eq!(self.name(), name, "mismatched end tag");
                self.space();
                self.expect(b'>');
                break;
            }
            children.push(self.element());
        }
        if !children.is_empty() {
            assert!(text.trim().is_empty(), "{name}: text beside elements");
        }
        Element {
            name,
            attrs,
            children,
            text,
        }
    }
}

/// Two queues cannot share the one dispatcher a scenario has; two reports
/// on one path would overwrite each other; policies of two files that
/// share a name are told apart, as within one file. The refusals come
/// before anything runs.
#[test]
fn configurations_that_cannot_be_joined_are_refused_and_names_kept_apart() {
    let (code, out, _d) = gate(&[
        "gate".into(),
        "scenarios/cloud-tasks-herd.json".into(),
        "--config".into(),
        "examples/queue.yaml".into(),
        "--config".into(),
        "tests/good/gate/second-queue.yaml".into(),
        "--max-amplification".into(),
        "3".into(),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains(
            "error: tests/good/gate/second-queue.yaml: holds a queue, and so does \
             examples/queue.yaml"
        ),
        "{out}"
    );
    let (code, out, _d) = gate(&[
        "gate".into(),
        "scenarios/hotos21-toy.json".into(),
        "--max-amplification".into(),
        "3".into(),
        "--junit".into(),
        "report".into(),
        "--markdown".into(),
        "./report".into(),
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("would overwrite each other"), "{out}");
    let (code, out, _d) = gate(&[
        "gate".into(),
        "scenarios/hotos21-toy.json".into(),
        "--config".into(),
        "examples/service_config.json".into(),
        "--config".into(),
        "tests/good/gate/storm-service-config.json".into(),
        "--max-amplification".into(),
        "3".into(),
        "--replications".into(),
        "1".into(),
    ]);
    assert_eq!(code, Some(FAILED), "{out}");
    assert!(
        out.contains(
            "tests/good/gate/storm-service-config.json: warning: two retry configurations are \
             named example.EchoService: the second is example.EchoService-2"
        ),
        "{out}"
    );
    assert!(out.contains("pass example.EchoService passes"), "{out}");
    assert!(out.contains("FAIL example.EchoService-2 fails"), "{out}");
}

/// A report is never written over a file the gate reads: the scenario or
/// a `--config` named as `--junit` or `--markdown` is refused before
/// anything runs, and left as it was. One `--config` file given twice is
/// refused too (its policies would be checked twice).
#[test]
fn a_report_on_an_input_file_or_a_config_given_twice_is_refused() {
    let flags = |extra: &[&str]| -> Vec<String> {
        [
            "gate",
            "scenarios/hotos21-toy.json",
            "--config",
            "examples/service_config.json",
        ]
        .iter()
        .chain(["--max-amplification", "3"].iter())
        .chain(extra.iter())
        .map(|s| s.to_string())
        .collect()
    };
    for (flag, file) in [
        ("--markdown", "scenarios/hotos21-toy.json"),
        ("--junit", "./examples/../examples/service_config.json"),
    ] {
        let (code, out, d) = gate(&flags(&[flag, file]));
        assert_eq!(code, Some(2), "{out}");
        assert!(out.contains("is an input of this command"), "{out}");
        let kept = std::fs::read(d.path().join(file)).unwrap();
        assert_eq!(
            kept,
            std::fs::read(root().join(file)).unwrap(),
            "{file} was changed"
        );
    }
    let (code, out, _d) = gate(&flags(&["--config", "examples/service_config.json"]));
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--config examples/service_config.json: given twice"),
        "{out}"
    );
}
