//! A closed standard output (`retrysim ... | head`) is not an error: what
//! was left to print is dropped, the command still writes every file it
//! was asked for, and it exits 0 with nothing on stderr and no panic.
//!
//! Each command runs with its stdout connected to a pipe whose read end is
//! closed before the process starts, so its first write fails with a broken
//! pipe whatever the timing. A second run with a readable pipe shows the
//! command did have something to print.

use std::path::Path;
use std::process::{Command, Stdio};

fn retrysim() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_retrysim"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs with stdout on a pipe nobody reads; returns (exit code, stderr).
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let child = retrysim()
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let out = child.wait_with_output().expect("the binary ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs normally; returns what it printed on stdout (it must succeed).
fn stdout_of(args: &[&str]) -> String {
    let out = retrysim().args(args).output().expect("the binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The command prints something, and with stdout closed it exits 0 with
/// an empty stderr.
fn quiet_on_broken_pipe(args: &[&str]) {
    assert!(!stdout_of(args).is_empty(), "{args:?} prints nothing");
    let (code, err) = with_closed_stdout(args);
    assert_eq!(code, Some(0), "{args:?}: stderr: {err}");
    assert_eq!(err, "", "{args:?}");
}

/// Like [`quiet_on_broken_pipe`] for a command that warns (`import` of a
/// file with settings it drops): with stdout closed, stderr holds the
/// same warnings as in a normal run, and nothing else.
fn quiet_but_its_warnings_on_broken_pipe(args: &[&str]) {
    let normal = retrysim().args(args).output().expect("the binary runs");
    assert_eq!(normal.status.code(), Some(0), "{args:?}");
    assert!(!normal.stdout.is_empty(), "{args:?} prints nothing");
    let warnings = String::from_utf8_lossy(&normal.stderr).into_owned();
    assert!(
        warnings.lines().all(|l| l.starts_with("warning: ")),
        "{args:?}: {warnings}"
    );
    let (code, err) = with_closed_stdout(args);
    assert_eq!(code, Some(0), "{args:?}: stderr: {err}");
    assert_eq!(err, warnings, "{args:?}");
}

#[test]
fn check_and_import() {
    quiet_on_broken_pipe(&[
        "check",
        "scenarios/example.json",
        "scenarios/spanner-90s.json",
    ]);
    // The example's methodConfig timeout is not imported, with a warning.
    quiet_but_its_warnings_on_broken_pipe(&["import", "grpc", "examples/service_config.json"]);
}

#[test]
fn schedule_csv_and_table() {
    quiet_on_broken_pipe(&["schedule", "--preset", "cloud-tasks-default", "--csv"]);
    quiet_on_broken_pipe(&["schedule", "--preset", "cloud-tasks-default"]);
    // Enough rows that the CSV writer meets the closed pipe while writing a
    // record, so the io::Error arrives wrapped in a csv::Error.
    let long = [
        "--backoff",
        "constant",
        "--delay",
        "1s",
        "--attempts",
        "5000",
    ];
    quiet_on_broken_pipe(&[&["schedule", "--csv"][..], &long].concat());
    quiet_on_broken_pipe(&[&["schedule"][..], &long].concat());
    // The plot asked for is drawn after the table nobody reads.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("s.png");
    let png = png.to_str().unwrap();
    let (code, err) = with_closed_stdout(&[&["schedule", "--png", png][..], &long].concat());
    // Where the plot went is said on stderr, as in any run.
    assert_eq!((code, err), (Some(0), format!("wrote {png}\n")));
    assert!(Path::new(png).exists());
}

#[test]
fn run_sweep_merge_and_tune() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (run, sweep, merged, tune) = (out("run"), out("sweep"), out("merged"), out("tune"));
    let scenario = "tests/good/minimal.json";
    quiet_on_broken_pipe(&["run", scenario, "--no-plots", "-o", &run]);
    // The files are written before the summary is printed.
    assert!(Path::new(&run).join("minimal/summary.csv").exists());
    // A closed stdout drops what is printed, not the work: the second
    // scenario of one `run` is simulated and its report written too.
    let second = out("second.json");
    let text = std::fs::read_to_string(scenario).unwrap();
    std::fs::write(&second, text.replace("\"minimal\"", "\"second\"")).unwrap();
    let both = out("both");
    let (code, err) = with_closed_stdout(&["run", scenario, &second, "--no-plots", "-o", &both]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    for report in ["minimal", "second"] {
        let summary = Path::new(&both).join(report).join("summary.csv");
        assert!(summary.exists(), "{}", summary.display());
    }
    quiet_on_broken_pipe(&[
        "sweep",
        scenario,
        "--set",
        "traffic.rate=50,100",
        "-o",
        &sweep,
    ]);
    quiet_on_broken_pipe(&["merge", &sweep, "-o", &merged]);
    quiet_on_broken_pipe(&["tune", scenario, "--rounds", "1", "-o", &tune]);
    // tune prints its table before it writes its files.
    let tune_closed = out("tune-closed");
    let (code, err) = with_closed_stdout(&["tune", scenario, "--rounds", "1", "-o", &tune_closed]);
    assert_eq!((code, err.as_str()), (Some(0), ""));
    for file in ["tune.json", "candidates.csv"] {
        let path = Path::new(&tune_closed).join("minimal").join(file);
        assert!(path.exists(), "{}", path.display());
    }
}

#[test]
fn other_errors_still_fail() {
    // A broken pipe is the only error that ends quietly: an invalid
    // scenario still exits 2 and says why, with stdout closed or not.
    let (code, err) = with_closed_stdout(&["check", "tests/bad/empty.json"]);
    assert_eq!(code, Some(2));
    assert!(err.starts_with("error: tests/bad/empty.json"), "{err}");
}

#[test]
fn help_and_version() {
    quiet_on_broken_pipe(&["--help"]);
    quiet_on_broken_pipe(&["run", "--help"]);
    quiet_on_broken_pipe(&["--version"]);
}

/// Help that cannot be written (a full disk) is a failure, not a success
/// with nothing printed; a usage error keeps its own status, 2.
#[cfg(target_os = "linux")]
#[test]
fn help_into_a_full_device_fails() {
    for args in [&["--help"][..], &["sweep", "--help"], &["--version"]] {
        let full = std::fs::File::create("/dev/full").expect("/dev/full");
        let out = retrysim()
            .args(args)
            .stdout(full)
            .output()
            .expect("the binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.starts_with("error: cannot write"), "{args:?}: {err}");
    }
    let out = retrysim().arg("--no-such-flag").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
