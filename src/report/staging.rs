//! Writing an output directory so that it is never seen half-written.
//!
//! A [`Staging`] takes a lock on the target directory, gives the writers a
//! fresh temporary directory beside it, and only when every file is
//! written moves them into the target, one rename each (a rename within
//! one file system replaces a file atomically). A run that fails, is
//! interrupted or is killed before that point leaves the previous report
//! exactly as it was; an error or Ctrl-C also removes the temporary
//! directory and the directories it created for the report (while still
//! empty), and the next run into the same place removes what a killed one
//! left behind.
//!
//! The moves themselves are made all-or-nothing as far as a directory of
//! separate files allows. Before the first one, every place a file goes
//! is checked (a directory in the way fails the commit with nothing
//! moved), every file is flushed to disk, and a marker naming the stale
//! outputs is written into the temporary directory: from then on the new
//! report is complete on disk. A run killed during the moves (they take
//! milliseconds) leaves the marker behind, and the next run into that
//! directory finishes the moves before anything else, so the report is
//! then wholly the new one, never a lasting mix of two.
//!
//! Only the files a run writes are replaced: other files in the target
//! directory are left alone (the target may be a directory the user chose,
//! such as `sweep -o results`), except the known outputs a run says are
//! stale (`load.png` after `--no-plots`).
//!
//! The lock is an advisory lock (`flock`) on a hidden file beside the
//! target, `.<name>.lock`: a second run into the same directory is refused
//! with a clear message instead of interleaving its files with the first
//! one's; the kernel releases the lock when a process dies, so a killed
//! run never blocks the next one.

use crate::error::OutputError;
use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// An output directory being written.
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    temp: PathBuf,
    lock_path: PathBuf,
    _lock: File,
    done: bool,
    /// The outermost directory this staging created for the target (the
    /// target itself, or an ancestor that did not exist): an abandoned
    /// staging removes what it created again, as far as it is still empty.
    created: Option<PathBuf>,
}

/// The parent of `target` and its last component, as names of hidden
/// siblings are built from them.
fn split(target: &Path) -> (PathBuf, String) {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    (parent, name)
}

/// Creates `dir` (and its parents), with a message that says what is in
/// the way.
pub fn create_dir(dir: &Path) -> Result<(), OutputError> {
    if let Some(blocker) = dir.ancestors().find(|a| a.is_file()) {
        return Err(OutputError::NotADirectory {
            path: blocker.to_path_buf(),
            wanted: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| OutputError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })
}

impl Staging {
    /// Locks `target` (created if needed) and opens a fresh temporary
    /// directory beside it. Fails at once — before any simulation — when
    /// the target cannot be created or another run holds it.
    pub fn begin(target: &Path) -> Result<Staging, OutputError> {
        // Ancestors are listed innermost first: the last missing one is the
        // outermost that `create_dir` makes.
        let created = target
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.is_dir())
            .last()
            .map(Path::to_path_buf);
        create_dir(target)?;
        // Named after the directory itself, not after how it was written:
        // `-o .` and `-o ../x` get the lock and temporary names of the
        // directory they are.
        let real = target
            .canonicalize()
            .unwrap_or_else(|_| target.to_path_buf());
        let (parent, name) = split(&real);
        let lock_path = parent.join(format!(".{name}.lock"));
        let lock = lock(&lock_path, target)?;
        // Whatever a killed run left behind (we hold the lock: nobody else
        // is writing them).
        let prefix = format!(".{name}.tmp-");
        if let Ok(entries) = std::fs::read_dir(&parent) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    // A commit cut short by a kill: its files are complete
                    // and some are in place already; put the rest there.
                    // If that cannot be done, they stay for the next try
                    // and nothing else is written.
                    if e.path().join(COMPLETE).is_file() {
                        publish(&e.path(), target)?;
                    }
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let temp = parent.join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir(&temp).map_err(|source| OutputError::CreateDir {
            path: temp.clone(),
            source,
        })?;
        Ok(Staging {
            target: target.to_path_buf(),
            temp,
            lock_path,
            _lock: lock,
            done: false,
            created,
        })
    }

    /// Where the writers write (the temporary directory).
    pub fn path(&self) -> &Path {
        &self.temp
    }

    /// The directory the files end up in.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where a file written to `staged` (a path inside [`Staging::path`])
    /// will be once committed.
    pub fn final_path(&self, staged: &Path) -> PathBuf {
        match staged.strip_prefix(&self.temp) {
            Ok(rel) => self.target.join(rel),
            Err(_) => staged.to_path_buf(),
        }
    }

    /// Moves every staged file into the target (replacing files of the
    /// same name), removes the `stale` outputs that this run did not
    /// write, and cleans up. A stop requested meanwhile (Ctrl-C) abandons
    /// the report instead: the target stays as it was.
    pub fn commit(mut self, stale: &[&str]) -> Result<(), OutputError> {
        fail_point("commit")?;
        if crate::engine::stop::requested() {
            return Err(OutputError::Interrupted);
        }
        let staged = staged_files(&self.temp)?;
        let stale: Vec<&str> = stale
            .iter()
            .copied()
            .filter(|name| !staged.iter().any(|s| s.file_name() == Some(name.as_ref())))
            .collect();
        check_places(&staged, &stale, &self.target)?;
        // The new report complete on disk, then the marker that says so.
        let sync = |path: &Path| {
            File::open(path)
                .and_then(|f| f.sync_all())
                .map_err(|source| OutputError::ReadBack {
                    path: path.to_path_buf(),
                    source,
                })
        };
        for from in &staged {
            sync(from)?;
        }
        let marker = self.temp.join(COMPLETE);
        std::fs::write(&marker, stale.join("\n"))
            .and_then(|()| File::open(&marker)?.sync_all())
            .map_err(|source| OutputError::Write {
                path: marker.clone(),
                source,
            })?;
        sync(&self.temp)?;
        publish(&self.temp, &self.target)?;
        // Best effort: the renames on disk too.
        let _ = File::open(&self.target).and_then(|f| f.sync_all());
        self.done = true;
        self.clean_up();
        Ok(())
    }

    fn clean_up(&self) {
        let _ = std::fs::remove_dir_all(&self.temp);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            self.clean_up();
            if let Some(outer) = &self.created {
                // Innermost first; `remove_dir` fails (and keeps it) unless
                // it is empty, and so does every directory above it.
                for dir in self.target.ancestors() {
                    if std::fs::remove_dir(dir).is_err() || dir == outer.as_path() {
                        break;
                    }
                }
            }
        }
    }
}

/// The file a commit writes into its temporary directory once every new
/// file is on disk, holding the names of the stale outputs to remove, one
/// per line: a temporary directory left with it is a report to finish
/// publishing, one without it a report to throw away.
const COMPLETE: &str = ".complete";

/// The files written into the temporary directory `temp`, in name order,
/// without the marker.
fn staged_files(temp: &Path) -> Result<Vec<PathBuf>, OutputError> {
    let mut staged: Vec<PathBuf> = std::fs::read_dir(temp)
        .map_err(|source| OutputError::ReadBack {
            path: temp.to_path_buf(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name() != Some(COMPLETE.as_ref()))
        .collect();
    staged.sort();
    Ok(staged)
}

/// Checks every place in `target` a file of `staged` goes to or a `stale`
/// output is removed from, before the first move: a directory there fails
/// the commit with nothing moved.
fn check_places(staged: &[PathBuf], stale: &[&str], target: &Path) -> Result<(), OutputError> {
    let places = staged
        .iter()
        .filter_map(|from| from.file_name())
        .chain(stale.iter().map(|name| name.as_ref()))
        .map(|name| target.join(name));
    for place in places {
        if place.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            return Err(OutputError::Publish {
                path: place,
                source: std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "a directory of that name is in the way; nothing was replaced",
                ),
            });
        }
    }
    Ok(())
}

/// Moves every file of the complete temporary directory `temp` into
/// `target` and removes the stale outputs its marker names: the second half
/// of a commit, or all that is left of one a kill cut short.
fn publish(temp: &Path, target: &Path) -> Result<(), OutputError> {
    let staged = staged_files(temp)?;
    let stale = std::fs::read_to_string(temp.join(COMPLETE)).unwrap_or_default();
    let stale: Vec<&str> = stale.lines().filter(|n| !n.is_empty()).collect();
    check_places(&staged, &stale, target)?;
    for (i, from) in staged.into_iter().enumerate() {
        if i == 1 {
            fail_point("publish")?;
        }
        let to = target.join(from.file_name().expect("a file in the directory"));
        std::fs::rename(&from, &to).map_err(|source| OutputError::Publish {
            path: to.clone(),
            source,
        })?;
    }
    for name in stale {
        let path = target.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(OutputError::Remove { path, source }),
        }
    }
    Ok(())
}

/// Writes the single file `path` the way [`Staging`] writes a directory:
/// `write` fills a hidden temporary file beside it (`.<name>.tmp-<pid>`),
/// which one rename then puts in place. A write that fails (a full disk)
/// or is interrupted leaves an earlier file at `path` as it was and no
/// partial file; the temporary file is removed. For a lone output file
/// such as `schedule --png FILE`, whose directory is the user's and not
/// ours to lock or stage.
///
/// A symbolic link at `path` stays a link: the file it names is the one
/// replaced. Something at `path` that is not a regular file (`/dev/null`,
/// a named pipe) is written into directly, as a shell's `>` would, since
/// a rename would put a plain file in its place; a directory is refused.
pub fn replace_file(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), OutputError>,
) -> Result<(), OutputError> {
    let path = &follow_links(path);
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_dir() {
            return Err(OutputError::Write {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "it is a directory; give a file name",
                ),
            });
        }
        if !meta.is_file() {
            return write(path);
        }
    }
    let (parent, name) = split(path);
    let temp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = write(&temp)
        .and_then(|()| fail_point(&name))
        .and_then(|()| {
            if crate::engine::stop::requested() {
                return Err(OutputError::Interrupted);
            }
            std::fs::rename(&temp, path).map_err(|source| OutputError::Publish {
                path: path.to_path_buf(),
                source,
            })
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// The file a chain of symbolic links at `path` ends at (`path` itself
/// when it is not a link). A link's relative target is read from the
/// link's directory; a chain that loops is left to the write to report.
fn follow_links(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    // The kernel's own bound on links followed in one lookup.
    for _ in 0..40 {
        let is_link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
        if !is_link {
            return p;
        }
        let Ok(target) = std::fs::read_link(&p) else {
            return p;
        };
        p = match p.parent() {
            Some(dir) if target.is_relative() => dir.join(target),
            _ => target,
        };
    }
    p
}

/// Takes the lock at `path` for `target`, or says who holds it.
fn lock(path: &Path, target: &Path) -> Result<File, OutputError> {
    loop {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| OutputError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(OutputError::Locked {
                    target: target.to_path_buf(),
                    lock: path.to_path_buf(),
                })
            }
            Err(TryLockError::Error(source)) => {
                return Err(OutputError::Write {
                    path: path.to_path_buf(),
                    source,
                })
            }
        }
        // The holder before us may have removed the file after we opened
        // it: then our lock is on a file nobody else can see. Retry.
        if same_file(&file, path) {
            return Ok(file);
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// Fault injection for the tests of this guarantee: in builds with debug
/// assertions (the test profile), `RETRYSIM_FAIL_AT=<point>` makes the
/// named point fail as a full disk would, and `RETRYSIM_ABORT_AT=<point>`
/// kills the process there as `kill -9` would. Release builds compile it
/// away.
pub fn fail_point(point: &str) -> Result<(), OutputError> {
    if cfg!(debug_assertions) {
        if std::env::var("RETRYSIM_ABORT_AT").is_ok_and(|p| p == point) {
            std::process::abort();
        }
        if std::env::var("RETRYSIM_FAIL_AT").is_ok_and(|p| p == point) {
            return Err(OutputError::Write {
                path: PathBuf::from(point),
                source: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    "injected failure: no space left on device",
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_appear_only_on_commit_and_others_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("summary.csv"), "old").unwrap();
        std::fs::write(target.join("load.png"), "old png").unwrap();
        std::fs::write(target.join("notes.txt"), "mine").unwrap();
        let s = Staging::begin(&target).unwrap();
        std::fs::write(s.path().join("summary.csv"), "new").unwrap();
        assert_eq!(
            std::fs::read_to_string(target.join("summary.csv")).unwrap(),
            "old"
        );
        assert_eq!(
            s.final_path(&s.path().join("summary.csv")),
            target.join("summary.csv")
        );
        s.commit(&["load.png"]).unwrap();
        assert_eq!(
            std::fs::read_to_string(target.join("summary.csv")).unwrap(),
            "new"
        );
        assert!(!target.join("load.png").exists(), "stale output removed");
        assert_eq!(
            std::fs::read_to_string(target.join("notes.txt")).unwrap(),
            "mine"
        );
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "no temporary or lock file left: {left:?}");
    }

    #[test]
    fn a_directory_in_the_way_fails_the_commit_before_anything_moves() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir_all(target.join("b.csv")).unwrap();
        std::fs::write(target.join("a.csv"), "old").unwrap();
        let s = Staging::begin(&target).unwrap();
        std::fs::write(s.path().join("a.csv"), "new").unwrap();
        std::fs::write(s.path().join("b.csv"), "new").unwrap();
        let e = s.commit(&[]).unwrap_err();
        assert!(e.to_string().contains("b.csv"), "{e}");
        assert_eq!(
            std::fs::read_to_string(target.join("a.csv")).unwrap(),
            "old"
        );
        // A stale output that is a directory fails it too.
        let s = Staging::begin(&target).unwrap();
        std::fs::write(s.path().join("a.csv"), "new").unwrap();
        assert!(s.commit(&["b.csv"]).is_err());
        assert_eq!(
            std::fs::read_to_string(target.join("a.csv")).unwrap(),
            "old"
        );
    }

    /// A run killed in the middle of its moves leaves its marker: the next
    /// run into the directory finishes them (and removes the stale outputs
    /// the marker names) before it starts; without the marker the files
    /// are thrown away.
    #[test]
    fn a_commit_cut_short_is_finished_by_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        for f in ["a.csv", "c.csv", "load.png"] {
            std::fs::write(target.join(f), "old").unwrap();
        }
        // b.csv already moved; a.csv still waiting; load.png stale.
        std::fs::write(target.join("b.csv"), "new").unwrap();
        let cut = dir.path().join(".report.tmp-4000000");
        std::fs::create_dir(&cut).unwrap();
        std::fs::write(cut.join("a.csv"), "new").unwrap();
        std::fs::write(cut.join(COMPLETE), "load.png").unwrap();
        // An abandoned one, with no marker, is thrown away.
        let abandoned = dir.path().join(".report.tmp-4000001");
        std::fs::create_dir(&abandoned).unwrap();
        std::fs::write(abandoned.join("c.csv"), "half").unwrap();
        let s = Staging::begin(&target).unwrap();
        let read = |f: &str| std::fs::read_to_string(target.join(f)).unwrap();
        assert_eq!(
            (read("a.csv"), read("b.csv"), read("c.csv")),
            ("new".into(), "new".into(), "old".into())
        );
        assert!(!target.join("load.png").exists());
        assert!(!cut.exists() && !abandoned.exists());
        drop(s);
    }

    /// Finishing a killed run's moves is all or nothing too: with a
    /// directory in the way, nothing moves, the files stay for a later
    /// try, and no new report is begun.
    #[test]
    fn a_commit_that_cannot_be_finished_is_kept_and_stops_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir_all(target.join("b.csv")).unwrap();
        std::fs::write(target.join("a.csv"), "old").unwrap();
        let cut = dir.path().join(".report.tmp-4000000");
        std::fs::create_dir(&cut).unwrap();
        std::fs::write(cut.join("a.csv"), "new").unwrap();
        std::fs::write(cut.join("b.csv"), "new").unwrap();
        std::fs::write(cut.join(COMPLETE), "").unwrap();
        let e = Staging::begin(&target).unwrap_err();
        assert!(e.to_string().contains("b.csv"), "{e}");
        assert_eq!(
            std::fs::read_to_string(target.join("a.csv")).unwrap(),
            "old"
        );
        assert!(cut.join("a.csv").is_file() && cut.join(COMPLETE).is_file());
        // Out of the way, the next run finishes it.
        std::fs::remove_dir(target.join("b.csv")).unwrap();
        drop(Staging::begin(&target).unwrap());
        assert_eq!(
            std::fs::read_to_string(target.join("b.csv")).unwrap(),
            "new"
        );
        assert!(!cut.exists());
    }

    /// `-o .` is named after the directory it is, like `-o ../NAME`.
    #[test]
    fn the_lock_is_named_after_the_directory_itself() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        let dotted = target.join("sub").join("..");
        std::fs::create_dir_all(target.join("sub")).unwrap();
        let s = Staging::begin(&dotted).unwrap();
        assert!(dir.path().join(".report.lock").exists());
        assert_eq!(
            s.path().parent(),
            Some(dir.path().canonicalize().unwrap().as_path())
        );
    }

    #[test]
    fn an_abandoned_staging_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("summary.csv"), "old").unwrap();
        {
            let s = Staging::begin(&target).unwrap();
            std::fs::write(s.path().join("summary.csv"), "half").unwrap();
        }
        assert_eq!(
            std::fs::read_to_string(target.join("summary.csv")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_abandoned_staging_removes_the_directories_it_created() {
        let dir = tempfile::tempdir().unwrap();
        // `run -o out` stages `out/<scenario>`: both are new.
        let target = dir.path().join("out").join("storm");
        drop(Staging::begin(&target).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A directory that was there, or that holds something else, stays.
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        drop(Staging::begin(&kept.join("a").join("b")).unwrap());
        assert!(kept.is_dir() && std::fs::read_dir(&kept).unwrap().count() == 0);
        let busy = dir.path().join("busy").join("x");
        let first = Staging::begin(&busy.join("one")).unwrap();
        first.commit(&[]).unwrap();
        drop(Staging::begin(&busy.join("two")).unwrap());
        assert!(busy.join("one").is_dir() && !busy.join("two").exists());
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        let first = Staging::begin(&target).unwrap();
        let e = Staging::begin(&target).unwrap_err();
        assert!(matches!(e, OutputError::Locked { .. }), "{e}");
        drop(first);
        Staging::begin(&target).expect("free again");
    }

    #[test]
    fn a_replaced_file_is_whole_or_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("f.png");
        std::fs::write(&target, "old").unwrap();
        // A writer that fails half-way: the old file stays, nothing is left.
        let e = replace_file(&target, |tmp| {
            std::fs::write(tmp, "ha").unwrap();
            Err(OutputError::Write {
                path: tmp.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::StorageFull, "full"),
            })
        })
        .unwrap_err();
        assert!(matches!(e, OutputError::Write { .. }));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        replace_file(&target, |tmp| {
            std::fs::write(tmp, "new").map_err(|source| OutputError::Write {
                path: tmp.to_path_buf(),
                source,
            })
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Writes `text` to `path` through [`replace_file`].
    fn replace_with(path: &Path, text: &'static str) -> Result<(), OutputError> {
        replace_file(path, |tmp| {
            std::fs::write(tmp, text).map_err(|source| OutputError::Write {
                path: tmp.to_path_buf(),
                source,
            })
        })
    }

    #[cfg(unix)]
    #[test]
    fn a_link_stays_a_link_and_its_file_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        let file = dir.path().join("real").join("plot.png");
        std::fs::write(&file, "old").unwrap();
        // A relative link, then a link to that link.
        let link = dir.path().join("link.png");
        std::os::unix::fs::symlink("real/plot.png", &link).unwrap();
        let chain = dir.path().join("chain.png");
        std::os::unix::fs::symlink(&link, &chain).unwrap();
        replace_with(&chain, "new").unwrap();
        for l in [&link, &chain] {
            let meta = std::fs::symlink_metadata(l).unwrap();
            assert!(
                meta.file_type().is_symlink(),
                "{} was replaced",
                l.display()
            );
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        // Nothing left beside either end.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
        assert_eq!(
            std::fs::read_dir(dir.path().join("real")).unwrap().count(),
            1
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_is_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.png");
        // `mkfifo` is part of every Unix's base tools: a test that could
        // not make the pipe fails rather than passing unchecked.
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(
            made.as_ref().is_ok_and(|s| s.success()),
            "mkfifo could not make the pipe: {made:?}"
        );
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        replace_with(&fifo, "through the pipe").unwrap();
        // Checked before the reader is joined: had the pipe been replaced,
        // the reader would wait on it for ever.
        let meta = std::fs::symlink_metadata(&fifo).unwrap();
        assert!(meta.file_type().is_fifo(), "the pipe was replaced");
        assert_eq!(reader.join().unwrap(), "through the pipe");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_directory_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("plots");
        std::fs::create_dir(&target).unwrap();
        let e = replace_with(&target, "x").unwrap_err();
        let chain = format!("{e}: {}", std::error::Error::source(&e).unwrap());
        assert!(chain.contains("is a directory"), "{chain}");
        assert!(target.is_dir());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_file_in_the_way_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "").unwrap();
        let e = create_dir(&dir.path().join("f").join("report")).unwrap_err();
        assert!(e.to_string().contains("is a file"), "{e}");
    }
}
