//! A report is either the previous one or the new one, never a mix: a run
//! that fails, is killed or is interrupted while writing leaves the
//! previous report byte-identical and no temporary files behind; two runs
//! into one directory never interleave; a bad output directory is named.
//! The output folder is retrysim's alone: what stands at its lock or
//! staging names and is not retrysim's is refused, never followed; files
//! it did not write are neither replaced nor removed without `--force`;
//! nothing outside `-o` is created, removed or moved.
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

/// Every file of the report folder `dir`, with its bytes (perf.json holds
/// wall times and is compared by name only).
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".retrysim-tmp-") || name == ".retrysim.lock" {
            // What a killed run leaves (its staging folder, its lock): not
            // part of the report; the next run removes them.
            continue;
        }
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
    std::fs::create_dir_all(out.join("small")).unwrap();
    let lock = std::fs::File::create(out.join("small/.retrysim.lock")).unwrap();
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
/// `timeout` or a CI runner, HUP from a closed terminal) exits 128 + the
/// signal's number and leaves the output directory as it was: no report,
/// no temporary or lock file, and no directory when the run created it.
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
    kill(signal, child.id());
    let r = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&r.stderr);
    let (code, by) = match signal {
        "INT" => (130, ""),
        "TERM" => (143, " by SIGTERM"),
        _ => (129, " by SIGHUP"),
    };
    assert_eq!(r.status.code(), Some(code), "{signal}: {err}");
    assert_eq!(
        err,
        format!("interrupted{by}; the report in progress was not written\n"),
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

/// Sends `signal` (INT, TERM, HUP) to the process `pid`.
#[cfg(unix)]
fn kill(signal: &str, pid: u32) {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[cfg(unix)]
#[test]
fn ctrl_c_mid_run_exits_130_and_writes_nothing() {
    interrupted_run_writes_nothing("INT", true);
    interrupted_run_writes_nothing("INT", false);
}

#[cfg(unix)]
#[test]
fn terminate_and_hang_up_stop_as_ctrl_c_does_with_their_own_status() {
    interrupted_run_writes_nothing("TERM", true);
    interrupted_run_writes_nothing("HUP", false);
    interrupted_run_writes_nothing("HUP", true);
}

/// A command that does not stop by itself (here blocked opening a named
/// pipe no one writes, or writing a report file to a disk that hangs) is
/// ended within about a second of SIGTERM, with its status and without
/// leftovers; the previous report stays.
#[cfg(unix)]
#[test]
fn a_blocked_command_ends_within_a_second_of_sigterm() {
    let (d, file, out) = setup();
    // Blocked in open(2), before anything is written.
    let fifo = d.path().join("scenario.json");
    mkfifo(&fifo);
    let child = bin()
        .args(["run", "-q", "-o"])
        .arg(&out)
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let sent = std::time::Instant::now();
    kill("TERM", child.id());
    let r = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(r.status.code(), Some(143));
    assert!(!out.exists());
    // Stuck writing summary.json (debug-build hook).
    assert!(run(&file, &out, &[], &[]).status.success());
    let before = snapshot(&out.join("small"));
    let child = bin()
        .args(["run", "-q", "--seed", "9", "-o"])
        .arg(&out)
        .arg(&file)
        .env("RETRYSIM_HANG_AT", "summary.json")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let staged = out
        .join("small")
        .join(format!(".retrysim-tmp-{}", child.id()))
        .join("timeseries.csv");
    let waited = std::time::Instant::now();
    while !staged.exists() {
        assert!(waited.elapsed() < Duration::from_secs(60), "never staged");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = std::time::Instant::now();
    kill("TERM", child.id());
    let r = child.wait_with_output().unwrap();
    assert!(
        sent.elapsed() < Duration::from_secs(3),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(r.status.code(), Some(143));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(
        err,
        "interrupted by SIGTERM; the report in progress was not written\n"
    );
    assert_eq!(snapshot(&out.join("small")), before, "staging removed");
    assert_eq!(entries(&out), ["small"]);
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    // `mkfifo` is part of every Unix's base tools: a test that could not
    // make the pipe fails rather than passing unchecked.
    let made = Command::new("mkfifo").arg(path).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
}

/// Every file under `dir` and its subfolders, with its bytes: what must
/// not change outside `-o`.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = p.strip_prefix(dir).unwrap().display().to_string();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                todo.push(p);
                out.insert(name + "/", Vec::new());
            } else if meta.is_file() {
                out.insert(name, std::fs::read(&p).unwrap());
            } else {
                out.insert(name, b"(not a file)".to_vec());
            }
        }
    }
    out
}

/// A folder outside `-o` holding files someone cares about.
fn precious(d: &Path) -> std::path::PathBuf {
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(elsewhere.join("deeper")).unwrap();
    std::fs::write(elsewhere.join("x"), "precious x").unwrap();
    std::fs::write(elsewhere.join("summary.csv"), "precious summary").unwrap();
    std::fs::write(elsewhere.join("deeper/y"), "precious y").unwrap();
    elsewhere
}

/// Asserts that `r` failed with exit 1 and a message naming `path` and
/// saying `says`.
fn refused(r: &Output, path: &Path, says: &str) {
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&path.display().to_string()) && err.contains(says),
        "expected {} and {says:?}: {err}",
        path.display()
    );
}

/// A staging name that is a link to another folder, or a staging folder
/// whose marker lists files outside the report folder, is refused with
/// its path: no file outside `-o` is moved or removed.
#[cfg(unix)]
#[test]
fn planted_staging_folders_are_refused_and_nothing_outside_changes() {
    let (d, file, out) = setup();
    let elsewhere = precious(d.path());
    let outside = tree(&elsewhere);
    assert!(run(&file, &out, &[], &[]).status.success());
    let report = out.join("small");
    let before = snapshot(&report);
    // A link at a staging name.
    let planted = report.join(".retrysim-tmp-1");
    std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
    refused(&run(&file, &out, &[], &[]), &planted, "symbolic link");
    assert_eq!(tree(&elsewhere), outside);
    std::fs::remove_file(&planted).unwrap();
    // A real staging folder of a killed run, its marker rewritten to list
    // files outside the report folder.
    let r = run(
        &file,
        &out,
        &[("RETRYSIM_ABORT_AT", "publish")],
        &["--seed", "9"],
    );
    assert!(!r.status.success());
    let left: Vec<_> = std::fs::read_dir(&report)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".retrysim-tmp-")
        })
        .collect();
    assert_eq!(left.len(), 1, "{left:?}");
    let marker = left[0].join(".complete");
    assert!(marker.is_file());
    let mixed = snapshot(&report);
    let abs = elsewhere.join("x").display().to_string();
    for stale in [
        "../../elsewhere/x",
        "../elsewhere/summary.csv",
        abs.as_str(),
    ] {
        std::fs::write(&marker, format!("load.png\n{stale}\n")).unwrap();
        refused(&run(&file, &out, &[], &[]), &marker, "plain name");
        assert_eq!(tree(&elsewhere), outside, "{stale}");
        assert_eq!(snapshot(&report), mixed, "{stale}");
    }
    // Put right, the next run finishes the killed one's moves first (here
    // a run that then fails, so what is left is the killed run's report).
    std::fs::write(&marker, "").unwrap();
    let r = run(
        &file,
        &out,
        &[("RETRYSIM_FAIL_AT", "summary.json")],
        &["--seed", "5"],
    );
    assert_eq!(r.status.code(), Some(1));
    let finished = snapshot(&report);
    assert!(finished != mixed && finished != before);
    assert!(!left[0].exists());
    assert_eq!(tree(&elsewhere), outside);
}

/// A lock that is a dangling link, a named pipe or a directory is refused
/// at once with exit 1: nothing is created where the link points, the
/// pipe is not waited on, and no report folder is left behind.
#[cfg(unix)]
#[test]
fn a_lock_that_is_not_a_file_is_refused_at_once() {
    let (d, file, out) = setup();
    let report = out.join("small");
    std::fs::create_dir_all(&report).unwrap();
    let lock = report.join(".retrysim.lock");
    let pointed = d.path().join("made-through-the-link");
    let plants: [(&str, &dyn Fn()); 3] = [
        ("symbolic link", &|| {
            std::os::unix::fs::symlink(&pointed, &lock).unwrap()
        }),
        ("named pipe", &|| mkfifo(&lock)),
        ("directory", &|| std::fs::create_dir(&lock).unwrap()),
    ];
    for (what, plant) in plants {
        plant();
        let started = std::time::Instant::now();
        let r = run(&file, &out, &[], &[]);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: waited"
        );
        refused(&r, &lock, what);
        assert!(!pointed.exists(), "{what}: created through the link");
        assert_eq!(entries(&report), [".retrysim.lock"], "{what}: left behind");
        assert_eq!(entries(d.path()), ["out", "small.json"], "{what}");
        let _ = std::fs::remove_file(&lock).or_else(|_| std::fs::remove_dir(&lock));
    }
}

/// A scenario whose name matches a folder holding someone's own files
/// does not rewrite it: refused (exit 1, naming the files) unless
/// `--force`, which replaces only the files of the names it writes.
#[test]
fn a_folder_of_someone_elses_files_is_refused_unless_forced() {
    let (_d, file, out) = setup();
    let report = out.join("small");
    std::fs::create_dir_all(&report).unwrap();
    for f in ["summary.csv", "load.png", "tiers.csv", "notes.txt"] {
        std::fs::write(report.join(f), format!("my own {f}")).unwrap();
    }
    let before = snapshot(&report);
    let r = run(&file, &out, &[], &[]);
    refused(&r, &report, "notes.txt");
    assert!(String::from_utf8_lossy(&r.stderr).contains("--force"));
    assert_eq!(snapshot(&report), before);
    assert_eq!(entries(&out), ["small"]);
    assert!(run(&file, &out, &[], &["--force"]).status.success());
    let after = snapshot(&report);
    assert_eq!(after["notes.txt"], before["notes.txt"]);
    assert_eq!(after["tiers.csv"], before["tiers.csv"], "not written: kept");
    assert_ne!(
        after["summary.csv"], before["summary.csv"],
        "written: replaced"
    );
    let manifest = String::from_utf8_lossy(&after[".retrysim-manifest"]).into_owned();
    assert!(manifest.contains("\nsummary.csv\n"), "{manifest}");
    assert!(!manifest.contains("notes.txt") && !manifest.contains("tiers.csv"));
    // The user's tiers.csv is still there, unlisted: a rerun is refused
    // again; forced, --no-plots removes the plots retrysim wrote, not the
    // user's files.
    refused(
        &run(&file, &out, &[], &["--no-plots"]),
        &report,
        "tiers.csv",
    );
    assert!(run(&file, &out, &[], &["--no-plots", "--force"])
        .status
        .success());
    let again = snapshot(&report);
    assert!(!again.contains_key("load.png"));
    assert_eq!(again["tiers.csv"], before["tiers.csv"]);
    assert_eq!(again["notes.txt"], before["notes.txt"]);
}

/// `sweep -o DIR` and `map -o DIR --no-plots` leave a `heatmap.png` or
/// `map.png` they did not write: refused unless forced, and kept then.
#[test]
fn sweep_and_map_keep_pictures_they_did_not_write() {
    let (d, file, _) = setup();
    let dir = d.path().join("results");
    let sweep = |extra: &[&str]| {
        bin()
            .arg("sweep")
            .arg(&file)
            .args(["--set", "traffic.rate=100,200", "-q", "-o"])
            .arg(&dir)
            .args(extra)
            .output()
            .unwrap()
    };
    assert!(sweep(&[]).status.success());
    std::fs::write(dir.join("heatmap.png"), "my own heatmap").unwrap();
    refused(&sweep(&[]), &dir, "heatmap.png");
    assert!(sweep(&["--force"]).status.success());
    assert_eq!(
        std::fs::read(dir.join("heatmap.png")).unwrap(),
        b"my own heatmap"
    );
    let map = d.path().join("map");
    std::fs::create_dir(&map).unwrap();
    std::fs::write(map.join("map.png"), "my own map").unwrap();
    let mapped = |extra: &[&str]| {
        bin()
            .arg("map")
            .arg(&file)
            .args([
                "--x",
                "traffic.rate=100,200",
                "--y",
                "faults.0.duration=1s,2s",
                "--no-refine",
                "--no-plots",
                "-q",
                "-o",
            ])
            .arg(&map)
            .args(extra)
            .output()
            .unwrap()
    };
    refused(&mapped(&[]), &map, "map.png");
    let r = mapped(&["--force"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(std::fs::read(map.join("map.png")).unwrap(), b"my own map");
    assert!(map.join("map.csv").is_file());
}
