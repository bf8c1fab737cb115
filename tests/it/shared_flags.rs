//! The flags every simulating command shares (`-o`, `--set`, `--seed`,
//! `--replications`, `--policy`, `--quiet`, `--no-plots`) mean the same on
//! `run`, `sweep` and `tune`.

use std::path::Path;
use std::process::{Command, Output};

const SCENARIO: &str = "scenarios/example.json";
const MINIMAL: &str = "tests/good/minimal.json";

fn retrysim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the binary runs")
}

fn ok(args: &[&str]) -> Output {
    let o = retrysim(args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_string()
}

#[test]
fn replications_have_one_limit() {
    for cmd in ["run", "sweep", "tune"] {
        for bad in ["0", "10001"] {
            let mut args = vec![cmd, MINIMAL, "--replications", bad];
            if cmd == "sweep" {
                args.extend(["--set", "traffic.rate=100"]);
            }
            let o = retrysim(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains("--replications"), "{args:?}: {err}");
        }
    }
}

#[test]
fn quiet_prints_nothing_on_every_command() {
    let t = tempfile::tempdir().unwrap();
    for args in [
        vec![
            "run",
            MINIMAL,
            "-q",
            "--no-plots",
            "-o",
            &path(t.path(), "r"),
        ],
        vec![
            "sweep",
            MINIMAL,
            "--set",
            "traffic.rate=50,100",
            "-q",
            "-o",
            &path(t.path(), "s"),
        ],
        vec![
            "tune",
            MINIMAL,
            "--rounds",
            "1",
            "-q",
            "--no-plots",
            "-o",
            &path(t.path(), "t"),
        ],
    ] {
        let o = ok(&args);
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{args:?}");
    }
    // Quiet, but the result is kept where -o says.
    let json = std::fs::read_to_string(t.path().join("t/minimal/tune.json")).unwrap();
    assert!(json.contains("\"name\": \"p\""), "{json}");
}

/// `sweep.csv` without its `seed` column (an axis when `--set seed=N`).
fn without_seed_column(csv: &[u8]) -> Vec<String> {
    let text = String::from_utf8(csv.to_vec()).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let skip = header.iter().position(|c| *c == "seed");
    std::iter::once(header.join(","))
        .chain(lines.map(str::to_string))
        .map(|l| {
            l.split(',')
                .enumerate()
                .filter(|(i, _)| Some(*i) != skip)
                .map(|(_, c)| c)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

#[test]
fn seed_flag_equals_the_seed_override() {
    let t = tempfile::tempdir().unwrap();
    let sweep = |out: &str, extra: &[&str]| {
        let out = path(t.path(), out);
        let mut args = vec!["sweep", MINIMAL, "--set", "traffic.rate=50,100", "-q"];
        args.extend_from_slice(extra);
        args.extend(["-o", &out]);
        ok(&args);
        std::fs::read(Path::new(&out).join("sweep.csv")).unwrap()
    };
    let by_flag = sweep("a", &["--seed", "7"]);
    let by_set = sweep("b", &["--set", "seed=7"]);
    let default = sweep("c", &[]);
    assert_eq!(without_seed_column(&by_flag), without_seed_column(&by_set));
    assert_ne!(by_flag, default, "the seed changes the runs");
    // run: the same files either way.
    let run = |out: &str, extra: &[&str]| {
        let out = path(t.path(), out);
        let mut args = vec!["run", MINIMAL, "--no-plots", "-q"];
        args.extend_from_slice(extra);
        args.extend(["-o", &out]);
        ok(&args);
        std::fs::read(Path::new(&out).join("minimal/summary.csv")).unwrap()
    };
    assert_eq!(run("d", &["--seed", "7"]), run("e", &["--set", "seed=7"]));
}

#[test]
fn policy_selects_on_run_sweep_and_tune() {
    let t = tempfile::tempdir().unwrap();
    let short = [
        "--set",
        "duration=6m",
        "--set",
        "traffic.rate=100",
        "--set",
        "traffic.clients=100",
    ];
    let out = path(t.path(), "run");
    let mut run = vec!["run", SCENARIO, "--policy", "platform", "--no-plots", "-q"];
    run.extend(short);
    run.extend(["-o", &out]);
    ok(&run);
    let summary = std::fs::read_to_string(t.path().join("run/example/summary.csv")).unwrap();
    let policies: Vec<&str> = summary
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(policies, ["platform"]);

    // Selection keeps file order, whatever the order of the flags.
    let out = path(t.path(), "sweep");
    let mut sweep = vec![
        "sweep",
        SCENARIO,
        "--policy",
        "platform",
        "--policy",
        "no-jitter",
    ];
    sweep.extend(short);
    sweep.extend(["--set", "backend.workers=10,20", "-q", "-o", &out]);
    ok(&sweep);
    let manifest = std::fs::read_to_string(t.path().join("sweep/sweep.json")).unwrap();
    let m: serde_json::Value = serde_json::from_str(&manifest).unwrap();
    assert_eq!(m["policies"], serde_json::json!(["no-jitter", "platform"]));

    let mut tune = vec![
        "tune",
        SCENARIO,
        "--policy",
        "platform",
        "--rounds",
        "1",
        "--allow-metastable",
    ];
    tune.extend(short);
    let o = ok(&tune);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.starts_with("tuning policy \"platform\""), "{text}");

    for cmd in ["run", "tune"] {
        let args = [cmd, SCENARIO, "--policy", "nobody", "-o", &out];
        let o = retrysim(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("error: --policy \"nobody\": scenario \"example\" has no such policy"),
            "{err}"
        );
    }
    let o = retrysim(&[
        "tune",
        SCENARIO,
        "--policy",
        "platform",
        "--policy",
        "no-jitter",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one policy at a time"));
}

#[test]
fn output_errors_name_the_directory_and_exit_1() {
    let t = tempfile::tempdir().unwrap();
    let file = path(t.path(), "a-file");
    std::fs::write(&file, "").unwrap();
    let below = format!("{file}/out");
    for args in [
        vec!["run", MINIMAL, "-q", "-o", &below],
        vec![
            "sweep",
            MINIMAL,
            "--set",
            "traffic.rate=100",
            "-q",
            "-o",
            &below,
        ],
        vec!["tune", MINIMAL, "--rounds", "1", "-q", "-o", &below],
    ] {
        let o = retrysim(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("error: cannot create output directory ") && err.contains(&below),
            "{args:?}: {err}"
        );
        // What is in the way is named.
        assert!(
            err.trim_end()
                .ends_with(&format!("{file} is a file, not a directory")),
            "{err}"
        );
    }
}

/// Runs with `input` on standard input.
fn with_stdin(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_retrysim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().expect("the binary ends")
}

/// `-` reads the file from standard input, wherever a command reads one
/// (JSON or TOML told apart by content), and errors name it `<stdin>`.
#[test]
fn a_dash_reads_standard_input() {
    let minimal = std::fs::read_to_string(MINIMAL).unwrap();
    let toml = std::fs::read_to_string("tests/good/example.toml").unwrap();
    for (text, want) in [
        (&minimal, "<stdin>: ok (1 policy, 0 faults)\n"),
        (&toml, "<stdin>: ok (4 policies, 2 faults)\n"),
    ] {
        let o = with_stdin(&["check", "-"], text);
        assert_eq!(o.status.code(), Some(0));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with(want), "{out}");
        assert!(out.contains("<stdin>: estimated cost: about "), "{out}");
    }
    let o = with_stdin(&["check", "-"], "{\"name\": \"x\",\n  \"duration\": }");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: <stdin>:2:"), "{err}");

    // run: the report is the same as from the file.
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (path(dir.path(), "file"), path(dir.path(), "stdin"));
    ok(&["run", MINIMAL, "--no-plots", "-o", &a]);
    let o = with_stdin(&["run", "-", "--no-plots", "-o", &b], &minimal);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for file in ["summary.csv", "timeseries.csv"] {
        let read = |d: &str| std::fs::read(Path::new(d).join("minimal").join(file)).unwrap();
        assert_eq!(read(&a), read(&b), "{file}");
    }

    // Standard input is read once.
    let o = with_stdin(&["check", "-", "-"], &minimal);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("<stdin>: cannot read: standard input can be given once"),
        "{err}"
    );

    // import and schedule --policy read it too.
    let config = std::fs::read_to_string("examples/service_config.json").unwrap();
    let o = with_stdin(&["import", "grpc", "-"], &config);
    assert_eq!(o.status.code(), Some(0));
    let block = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(block.contains("\"policies\""), "{block}");
    let o = with_stdin(&["schedule", "--policy", "-"], &block);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("attempt"));
}
