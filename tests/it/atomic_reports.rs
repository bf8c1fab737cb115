//! A report is either the previous one or the new one, never a mix: a run
//! that fails, is killed or is interrupted while writing leaves the
//! previous report byte-identical and no temporary files behind; two runs
//! into one directory never interleave; a bad output directory is named.
//!
//! Failures are injected through the binary's test hooks (see
//! `report::staging::fail_point`): `RETRYSIM_FAIL_AT=<file>` fails writing
//! that file as a full disk would, `RETRYSIM_ABORT_AT=<file>` kills the
//! process there as `kill -9` would.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const SMALL: &str = r#"{"name": "small", "duration": "20s",
  "traffic": {"rate": 200},
  "backend": {"workers": 4, "service_time": {"exponential": {"mean": "10ms"}}, "queue_limit": 50},
  "faults": [{"outage": {"start": "5s", "duration": "2s"}}],
  "policies": [{"name": "retry", "max_attempts": 3, "backoff": {"constant": {"delay": "100ms"}}}],
  "report": {"stable_for": "5s"}}"#;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_retrysim"))
}

fn run(scenario: &Path, out: &Path, env: &[(&str, &str)], extra: &[&str]) -> Output {
    let mut c = bin();
    c.arg("run")
        .arg(scenario)
        .arg("-o")
        .arg(out)
        .arg("-q")
        .args(extra);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

/// Every file under `dir`, with its bytes (perf.json holds wall times and
/// is compared by name only).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let bytes = if name == "perf.json" {
            Vec::new()
        } else {
            std::fs::read(e.path()).unwrap()
        };
        out.insert(name, bytes);
    }
    out
}

/// Names in `dir` (the output parent): only the report folders, no
/// temporary or lock files.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("small.json");
    std::fs::write(&file, SMALL).unwrap();
    let out = dir.path().join("out");
    (dir, file, out)
}

#[test]
fn a_failed_write_leaves_the_previous_report_and_no_leftovers() {
    let (_d, file, out) = setup();
    assert!(run(&file, &out, &[], &[]).status.success());
    let before = snapshot(&out.join("small"));
    assert!(before.contains_key("report.html"));
    // Another seed would change every file, if any were replaced.
    let r = run(
        &file,
        &out,
        &[("RETRYSIM_FAIL_AT", "report.html")],
        &["--seed", "9"],
    );
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("report.html") && err.contains("no space left"),
        "{err}"
    );
    assert_eq!(snapshot(&out.join("small")), before);
    assert_eq!(entries(&out), ["small"]);
}

#[test]
fn a_killed_run_leaves_the_previous_report_and_the_next_run_cleans_up() {
    let (_d, file, out) = setup();
    assert!(run(&file, &out, &[], &[]).status.success());
    let before = snapshot(&out.join("small"));
    for point in ["summary.json", "commit"] {
        let r = run(
            &file,
            &out,
            &[("RETRYSIM_ABORT_AT", point)],
            &["--seed", "9"],
        );
        assert!(!r.status.success(), "killed at {point}");
        assert_eq!(snapshot(&out.join("small")), before, "killed at {point}");
    }
    // The next run takes the lock the dead one held and removes its
    // half-written directory.
    assert!(run(&file, &out, &[], &["--seed", "9"]).status.success());
    assert_ne!(snapshot(&out.join("small")), before);
    assert_eq!(entries(&out), ["small"]);
}

/// Killed in the middle of moving the new files into place, a run leaves
/// a mix of two reports only until the next run into that directory,
/// which first finishes the moves: here a run that itself fails, so what
/// is left is exactly the killed run's report.
#[test]
fn a_run_killed_while_moving_its_files_is_completed_by_the_next() {
    let (d, file, out) = setup();
    assert!(run(&file, &out, &[], &[]).status.success());
    let fresh = d.path().join("fresh");
    assert!(run(&file, &fresh, &[], &["--seed", "9"]).status.success());
    let new = snapshot(&fresh.join("small"));
    let r = run(
        &file,
        &out,
        &[("RETRYSIM_ABORT_AT", "publish")],
        &["--seed", "9"],
    );
    assert!(!r.status.success());
    let mixed = snapshot(&out.join("small"));
    assert_ne!(
        mixed, new,
        "the kill came after the first move, before the last"
    );
    let r = run(
        &file,
        &out,
        &[("RETRYSIM_FAIL_AT", "summary.json")],
        &["--seed", "5"],
    );
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(snapshot(&out.join("small")), new);
    assert_eq!(entries(&out), ["small"]);
}

#[test]
fn no_plots_removes_the_old_plots_so_every_file_is_from_one_run() {
    let (_d, file, out) = setup();
    assert!(run(&file, &out, &[], &[]).status.success());
    assert!(out.join("small/load.png").exists());
    assert!(run(&file, &out, &[], &["--no-plots"]).status.success());
    assert!(!out.join("small/load.png").exists());
    assert!(out.join("small/report.html").exists());
}

#[test]
fn a_second_run_into_the_same_directory_is_refused() {
    let (_d, file, out) = setup();
    std::fs::create_dir_all(&out).unwrap();
    // Hold the lock as a running retrysim would.
    let lock = std::fs::File::create(out.join(".small.lock")).unwrap();
    lock.lock().unwrap();
    let r = run(&file, &out, &[], &[]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("another retrysim run is writing"), "{err}");
    assert!(!out.join("small/summary.csv").exists());
    drop(lock);
    assert!(run(&file, &out, &[], &[]).status.success());
}

#[test]
fn bad_output_directories_get_one_clear_message() {
    let (d, file, _) = setup();
    let blocker = d.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let r = run(&file, &blocker.join("sub"), &[], &[]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("is a file, not a directory") && err.contains("a-file"),
        "{err}"
    );
    // A directory that cannot be created (read-only file system).
    let r = run(&file, Path::new("/proc/retrysim-out"), &[], &[]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("cannot create output directory /proc/retrysim-out"),
        "{err}"
    );
}

#[test]
fn scenario_names_never_write_outside_the_output_directory() {
    let (d, _, out) = setup();
    for name in ["../../escaped", "/tmp/absolute", "a/b", ".hidden"] {
        let text = SMALL.replace(r#""name": "small""#, &format!(r#""name": {name:?}"#));
        let file = d.path().join("named.json");
        std::fs::write(&file, text).unwrap();
        let r = run(&file, &out, &[], &[]);
        assert_eq!(r.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("name"), "{name}: {err}");
        // `--set name=...` goes through the same check.
        let r = run(
            &d.path().join("small.json"),
            &out,
            &[],
            &["--set", &format!("name={name}")],
        );
        assert_eq!(r.status.code(), Some(2), "--set name={name}");
    }
    assert!(!out.exists(), "nothing was written anywhere");
    assert!(!Path::new("/tmp/absolute").exists());
    assert!(!d.path().parent().unwrap().join("escaped").exists());
}

/// Interrupting a run with `signal` (INT from Ctrl-C, TERM from `kill`,
/// `timeout` or a CI runner, HUP from a closed terminal) exits 130 and
/// leaves the output directory as it was: no report, no temporary or lock
/// file, and no directory when the run created it.
#[cfg(unix)]
fn interrupted_run_writes_nothing(signal: &str, out_exists: bool) {
    let (_d, _, out) = setup();
    if out_exists {
        std::fs::create_dir(&out).unwrap();
    }
    // The built-in scenario takes seconds even on a fast machine.
    let child = bin()
        .args(["run", "-q", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let r = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(130), "{signal}: {err}");
    assert_eq!(
        err, "interrupted; the report in progress was not written\n",
        "{signal}"
    );
    if !out_exists {
        assert!(
            !out.exists(),
            "{signal}: the directory it created is removed"
        );
        return;
    }
    assert!(!out.join("spanner-90s").exists(), "{:?}", entries(&out));
    assert!(
        entries(&out).is_empty(),
        "{signal}: no temporary or lock file left"
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_mid_run_exits_130_and_writes_nothing() {
    interrupted_run_writes_nothing("INT", true);
    interrupted_run_writes_nothing("INT", false);
}

#[cfg(unix)]
#[test]
fn terminate_and_hang_up_are_handled_as_ctrl_c() {
    interrupted_run_writes_nothing("TERM", true);
    interrupted_run_writes_nothing("HUP", false);
}
