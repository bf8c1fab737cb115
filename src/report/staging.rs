//! Writing an output directory so that it is never seen half-written, and
//! touching nothing in it that retrysim did not write.
//!
//! A [`Staging`] takes a lock inside the target directory, gives the
//! writers a fresh staging directory inside it too, and only when every
//! file is written moves them into the target, one rename each (a rename
//! within one file system replaces a file atomically). Everything it
//! creates is inside the target: nothing outside `-o` is created, removed
//! or moved. A run that fails, is interrupted or is killed before that
//! point leaves the previous report exactly as it was; an error or Ctrl-C
//! also removes the staging directory and the directories it created for
//! the report (while still empty), and the next run into the same place
//! removes what a killed one left behind.
//!
//! The names retrysim keeps for itself in a report folder:
//! - `.retrysim.lock`: an advisory lock (`flock`): a second run into the
//!   same folder is refused with a clear message instead of interleaving
//!   its files with the first one's; the kernel releases it when a process
//!   dies, so a killed run never blocks the next one. It must be a regular
//!   file: a symbolic link, a named pipe or a directory there is refused
//!   at once (exit 1), never followed, opened blocking or written through.
//! - `.retrysim-tmp-<pid>/`: the staging directory, made with `mkdir`
//!   (which never follows a link) and marked as retrysim's by a
//!   `.retrysim-staging` file written first. A leftover one is removed
//!   (or finished, below) only when it is a real directory with that
//!   marker; anything else under that name is refused with its path.
//! - `.retrysim-manifest`: the files retrysim wrote in the folder, one
//!   plain name a line after a fixed first line. A run replaces and
//!   removes only files it lists; a folder holding other files and no
//!   manifest is refused unless `--force` (see [`Staging::begin`]).
//!
//! The moves themselves are made all-or-nothing as far as a directory of
//! separate files allows. Before the first one, every place a file goes
//! is checked (a directory in the way fails the commit with nothing
//! moved), every file is flushed to disk, and a marker naming the stale
//! outputs is written into the staging directory: from then on the new
//! report is complete on disk. A run killed during the moves (they take
//! milliseconds) leaves the marker behind, and the next run into that
//! directory finishes the moves before anything else, so the report is
//! then wholly the new one, never a lasting mix of two. The manifest is
//! moved last.
//!
//! Signals: a process ended from its signal handler (see
//! [`abandon_all`]) first removes the staging directories in progress.

use super::OutputError;
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The lock file inside a report folder.
pub const LOCK: &str = ".retrysim.lock";

/// The manifest inside a report folder: what retrysim wrote there.
pub const MANIFEST: &str = ".retrysim-manifest";

/// The first line of every manifest: a manifest without it was not
/// written by retrysim.
const MANIFEST_HEADER: &str =
    "# retrysim: files retrysim wrote in this folder; a rerun replaces or removes only these";

/// The start of a staging directory's name (the process id follows).
pub const STAGING_PREFIX: &str = ".retrysim-tmp-";

/// The marker a staging directory is made with, and its text.
const OWNER: &str = ".retrysim-staging";
const OWNER_TEXT: &str = "retrysim stages a report here; removed once the report is in place\n";

/// The file a commit writes into its staging directory once every new
/// file is on disk, holding the names of the stale outputs to remove, one
/// per line: a staging directory left with it is a report to finish
/// publishing, one without it a report to throw away.
const COMPLETE: &str = ".complete";

/// Most bytes a manifest or marker may have: they list a few file names.
const MAX_LIST_BYTES: u64 = 64 * 1024;

/// The files retrysim versions before the manifest wrote into a report
/// folder, by command (`run`, `assess`, `tune`, `sweep` and `merge`,
/// `map` and `merge`), each group with the file such a command always
/// wrote. A folder with no manifest is taken as one such a version wrote
/// when every file in it belongs to a group whose first file is there too
/// (a lone `map.png` or `summary.csv` is not a report): it is reused
/// without `--force`, and those files count as retrysim's. A fixed list:
/// those versions do not change.
pub const OLDER_OUTPUTS: &[&[&str]] = &[
    &[
        "summary.json",
        "timeseries.csv",
        "summary.csv",
        "replications.csv",
        "attempts.csv",
        "alerts.csv",
        "tiers.csv",
        "load.png",
        "recovery.png",
        "attempts.png",
        "report.html",
        "perf.json",
    ],
    &["assess.json", "assess.html"],
    &["candidates.csv", "tune.json", "dispatcher.json"],
    &["sweep.json", "sweep.csv", "heatmap.png"],
    &["map.json", "map.csv", "map.png"],
];

/// Whether the files `present` (a folder with no manifest) are a report
/// an older version wrote (see [`OLDER_OUTPUTS`]).
fn older_report(present: &[String]) -> bool {
    present.iter().all(|f| {
        OLDER_OUTPUTS
            .iter()
            .any(|group| group.contains(&f.as_str()) && present.iter().any(|p| p == group[0]))
    })
}

/// An output directory being written.
#[derive(Debug)]
pub struct Staging {
    target: PathBuf,
    temp: PathBuf,
    /// Whether `temp` was made (by this staging).
    temp_made: bool,
    lock_path: PathBuf,
    _lock: File,
    /// Every file this command may write there: the ones a run does not
    /// write are stale and removed, when the folder's manifest lists them.
    outputs: &'static [&'static str],
    /// The files of the folder that are retrysim's (its manifest).
    owned: BTreeSet<String>,
    done: bool,
    /// The outermost directory this staging created for the target (the
    /// target itself, or an ancestor that did not exist): an abandoned
    /// staging removes what it created again, as far as it is still empty.
    created: Option<PathBuf>,
    /// Its entry among the stagings in progress ([`abandon_all`]).
    id: u64,
}

/// Creates `dir` (and its parents), with a message that says what is in
/// the way.
pub fn create_dir(dir: &Path) -> Result<(), OutputError> {
    // Anything there but a directory (a file, a device such as /dev/null).
    let blocks = |a: &&Path| std::fs::metadata(a).is_ok_and(|m| !m.is_dir());
    if let Some(blocker) = dir.ancestors().find(blocks) {
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

/// The refusal to use `path`, saying `why`.
fn refused(path: &Path, why: impl Into<String>) -> OutputError {
    OutputError::Refused {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// What a file type is, in words, for a message.
fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a named pipe";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a file"
    } else {
        "not a regular file"
    }
}

/// Whether `name` is a plain file name retrysim may write or remove in a
/// report folder: one component (no `/`, no `..`, not absolute), and none
/// of the names retrysim keeps for itself.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && name != LOCK
        && name != MANIFEST
        && name != OWNER
        && name != COMPLETE
        && !name.starts_with(STAGING_PREFIX)
}

/// Whether `name` is one of retrysim's own names in a report folder.
fn own_name(name: &str) -> bool {
    name == LOCK || name == MANIFEST || name.starts_with(STAGING_PREFIX)
}

/// Reads the small list file `path` (a manifest or a marker): it must be
/// a regular file (a link is not followed) of at most
/// [`MAX_LIST_BYTES`]; `None` when there is none.
fn read_list(path: &Path) -> Result<Option<String>, OutputError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(OutputError::ReadBack {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if !meta.is_file() {
        return Err(refused(
            path,
            format!(
                "it is {}, not a file retrysim wrote; remove it, or choose another -o",
                kind_of(meta.file_type())
            ),
        ));
    }
    let mut text = String::new();
    let read = open_no_follow(path, false)
        .and_then(|f| f.take(MAX_LIST_BYTES + 1).read_to_string(&mut text));
    match read {
        Ok(n) if n as u64 > MAX_LIST_BYTES => Err(refused(
            path,
            "it is larger than any list retrysim writes; remove it, or choose another -o",
        )),
        Ok(_) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(refused(
            path,
            "it is not text retrysim wrote; remove it, or choose another -o",
        )),
        Err(source) => Err(OutputError::ReadBack {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The names listed in `text` (one a line, from the list file `path`),
/// each checked to be a [`plain_name`].
fn names_in(path: &Path, text: &str) -> Result<Vec<String>, OutputError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        if !plain_name(line) {
            return Err(refused(
                path,
                format!(
                    "line {}: {line:?} is not the plain name of a file in this folder, so \
                     retrysim did not write it; remove it, or choose another -o",
                    i + 1
                ),
            ));
        }
        out.push(line.to_string());
    }
    Ok(out)
}

/// The names the manifest of `target` lists; `None` when there is none.
fn read_manifest(target: &Path) -> Result<Option<BTreeSet<String>>, OutputError> {
    let path = target.join(MANIFEST);
    let Some(text) = read_list(&path)? else {
        return Ok(None);
    };
    let Some(rest) = text.strip_prefix(MANIFEST_HEADER) else {
        return Err(refused(
            &path,
            "its first line is not the one retrysim writes; remove it, or choose another -o",
        ));
    };
    Ok(Some(names_in(&path, rest)?.into_iter().collect()))
}

/// The files of `target` that are not directories nor retrysim's own
/// names, in name order (a name that is not UTF-8 is given lossily: it is
/// never one retrysim wrote).
fn present_files(target: &Path) -> Result<Vec<String>, OutputError> {
    let entries = std::fs::read_dir(target).map_err(|source| OutputError::ReadBack {
        path: target.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if own_name(&name) || e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        out.push(name);
    }
    out.sort();
    Ok(out)
}

/// The files of `target` that are retrysim's: the names its manifest
/// lists or, in a folder an older version wrote (no manifest; see
/// [`OLDER_OUTPUTS`]), the files present. `Err(foreign)` names the
/// files that make the folder someone else's: every file when it has no
/// manifest and holds a file no retrysim writes, else the files present
/// with one of `outputs`' names that its manifest does not list (a run
/// would replace or remove them).
fn owned_files(
    target: &Path,
    outputs: &[&str],
    force: bool,
) -> Result<Result<BTreeSet<String>, Vec<String>>, OutputError> {
    let manifest = match read_manifest(target) {
        Ok(m) => m,
        // Forced: the folder is taken as one retrysim did not write.
        Err(_) if force => Some(BTreeSet::new()),
        Err(e) => return Err(e),
    };
    let present = present_files(target)?;
    Ok(match manifest {
        Some(listed) => {
            let foreign: Vec<String> = present
                .into_iter()
                .filter(|f| outputs.contains(&f.as_str()) && !listed.contains(f))
                .collect();
            if foreign.is_empty() {
                Ok(listed)
            } else {
                Err(foreign)
            }
        }
        None if older_report(&present) => Ok(present.into_iter().collect()),
        None => Err(present),
    })
}

/// The files of `target` that are retrysim's, whatever else it holds:
/// those its manifest lists, or in a folder an older version wrote (no
/// manifest; see [`OLDER_OUTPUTS`]) every file; none in any other
/// folder.
fn retrysims(target: &Path) -> Result<BTreeSet<String>, OutputError> {
    if let Some(listed) = read_manifest(target)? {
        return Ok(listed);
    }
    let present = present_files(target)?;
    if older_report(&present) {
        Ok(present.into_iter().collect())
    } else {
        Ok(BTreeSet::new())
    }
}

impl Staging {
    /// Locks `target` (created if needed) and opens a fresh staging
    /// directory inside it, for a command that writes some of `outputs`
    /// there. Fails at once — before any simulation — when the target
    /// cannot be created, another run holds it, something not retrysim's
    /// stands at one of retrysim's own names there, or the folder holds
    /// files retrysim did not write: with no manifest, any file no
    /// retrysim writes; with one, a file of one of `outputs`' names that
    /// the manifest does not list. `force` writes into such a folder all
    /// the same: files of the names written are replaced, and nothing
    /// else is removed.
    pub fn begin(
        target: &Path,
        outputs: &'static [&'static str],
        force: bool,
    ) -> Result<Staging, OutputError> {
        // Ancestors are listed innermost first: the last missing one is the
        // outermost that `create_dir` makes.
        let created = target
            .ancestors()
            .take_while(|a| !a.as_os_str().is_empty() && !a.is_dir())
            .last()
            .map(Path::to_path_buf);
        create_dir(target)?;
        let lock_path = target.join(LOCK);
        let lock = match lock(&lock_path, target) {
            Ok(l) => l,
            Err(e) => {
                remove_created(target, created.as_deref());
                return Err(e);
            }
        };
        let mut s = Staging {
            target: target.to_path_buf(),
            temp: target.join(format!("{STAGING_PREFIX}{}", std::process::id())),
            temp_made: false,
            lock_path,
            _lock: lock,
            outputs,
            owned: BTreeSet::new(),
            done: false,
            created,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        // From here on, `Drop` undoes what was made.
        s.prepare(force)?;
        Ok(s)
    }

    /// Finishes or removes what killed runs left, reads what the folder
    /// holds, and makes the staging directory.
    fn prepare(&mut self, force: bool) -> Result<(), OutputError> {
        // Whatever a killed run left behind (we hold the lock: nobody else
        // is writing them).
        for name in leftovers(&self.target)? {
            finish_leftover(&self.target.join(name), &self.target)?;
        }
        self.owned = match owned_files(&self.target, self.outputs, force)? {
            Ok(owned) => owned,
            Err(_) if force => read_manifest(&self.target)
                .ok()
                .flatten()
                .unwrap_or_default(),
            Err(foreign) => return Err(foreign_files(&self.target, &foreign)),
        };
        let _active = active();
        std::fs::create_dir(&self.temp).map_err(|source| OutputError::CreateDir {
            path: self.temp.clone(),
            source,
        })?;
        self.temp_made = true;
        let owner = self.temp.join(OWNER);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&owner)
            .and_then(|mut f| f.write_all(OWNER_TEXT.as_bytes()))
            .map_err(|source| OutputError::Write {
                path: owner,
                source,
            })?;
        register(self, _active);
        Ok(())
    }

    /// Where the writers write (the staging directory).
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
    /// same name), removes the outputs of this command that this run did
    /// not write and the manifest lists (stale), updates the manifest, and
    /// cleans up. A stop requested meanwhile (Ctrl-C) abandons the report
    /// instead: the target stays as it was.
    pub fn commit(mut self) -> Result<(), OutputError> {
        fail_point("commit")?;
        if crate::engine::stop::requested() {
            return Err(OutputError::Interrupted);
        }
        let staged = staged_files(&self.temp)?;
        let names: BTreeSet<String> = staged.iter().map(|(n, _)| n.clone()).collect();
        let stale: Vec<&str> = self
            .outputs
            .iter()
            .copied()
            .filter(|n| !names.contains(*n) && self.owned.contains(*n))
            .collect();
        check_places(&names, &stale, &self.target)?;
        // The new manifest: what is retrysim's once the moves are done.
        let mut listed: BTreeSet<String> = self
            .owned
            .iter()
            .filter(|n| std::fs::symlink_metadata(self.target.join(n)).is_ok())
            .cloned()
            .collect();
        listed.extend(names.iter().cloned());
        for n in &stale {
            listed.remove(*n);
        }
        let mut manifest = String::from(MANIFEST_HEADER);
        manifest.push('\n');
        for n in &listed {
            manifest.push_str(n);
            manifest.push('\n');
        }
        let write_new = |path: &Path, text: &str| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut f| {
                    f.write_all(text.as_bytes())?;
                    f.sync_all()
                })
                .map_err(|source| OutputError::Write {
                    path: path.to_path_buf(),
                    source,
                })
        };
        write_new(&self.temp.join(MANIFEST), &manifest)?;
        // The new report complete on disk, then the marker that says so.
        let sync = |path: &Path| {
            File::open(path)
                .and_then(|f| f.sync_all())
                .map_err(|source| OutputError::ReadBack {
                    path: path.to_path_buf(),
                    source,
                })
        };
        for (_, from) in &staged {
            sync(from)?;
        }
        write_new(&self.temp.join(COMPLETE), &stale.join("\n"))?;
        sync(&self.temp)?;
        {
            // Held through the moves: a process ended by a signal waits
            // for them rather than leave a mix of two reports.
            let active = active();
            if crate::engine::stop::requested() {
                return Err(OutputError::Interrupted);
            }
            publish(&self.temp, &self.target, &self.owned)?;
            // Best effort: the renames on disk too.
            let _ = File::open(&self.target).and_then(|f| f.sync_all());
            self.done = true;
            self.clean_up(active);
        }
        Ok(())
    }

    /// Removes the staging directory and the lock, and forgets this
    /// staging among those in progress.
    fn clean_up(&self, mut active: MutexGuard<'_, Vec<Active>>) {
        if self.temp_made {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
        let _ = std::fs::remove_file(&self.lock_path);
        active.retain(|a| a.id != self.id);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.done {
            self.clean_up(active());
            remove_created(&self.target, self.created.as_deref());
        }
    }
}

/// Removes `target` and the directories above it up to `outer` (those a
/// staging created), innermost first, as far as they are empty.
fn remove_created(target: &Path, outer: Option<&Path>) {
    let Some(outer) = outer else { return };
    // `remove_dir` fails (and keeps it) unless it is empty, and so does
    // every directory above it.
    for dir in target.ancestors() {
        if std::fs::remove_dir(dir).is_err() || dir == outer {
            break;
        }
    }
}

/// The refusal of a folder holding the `foreign` files.
fn foreign_files(target: &Path, foreign: &[String]) -> OutputError {
    let shown: Vec<&str> = foreign.iter().take(5).map(String::as_str).collect();
    let more = match foreign.len() - shown.len() {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let has_manifest = std::fs::symlink_metadata(target.join(MANIFEST)).is_ok();
    let why = if has_manifest {
        format!(
            "it holds {}{more}, which retrysim did not write there (its {MANIFEST} does not \
             list them) and would replace or remove",
            shown.join(", ")
        )
    } else {
        format!(
            "it holds files retrysim did not write ({}{more}) and no {MANIFEST} of \
             retrysim's",
            shown.join(", ")
        )
    };
    refused(
        target,
        format!(
            "{why}; choose another -o, or pass --force to write into it anyway (files of the \
             names written are replaced, nothing else is touched)"
        ),
    )
}

/// The names in `target` that are staging directories (or stand where
/// one would be), in name order.
fn leftovers(target: &Path) -> Result<Vec<String>, OutputError> {
    let entries = std::fs::read_dir(target).map_err(|source| OutputError::ReadBack {
        path: target.to_path_buf(),
        source,
    })?;
    let mut out: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(STAGING_PREFIX))
        .collect();
    out.sort();
    Ok(out)
}

/// Finishes publishing the staging directory `temp` a killed run left in
/// `target` (when its commit had begun) and removes it. Refused, with
/// nothing touched, when `temp` is not a real directory made by retrysim.
fn finish_leftover(temp: &Path, target: &Path) -> Result<(), OutputError> {
    let meta = std::fs::symlink_metadata(temp).map_err(|source| OutputError::ReadBack {
        path: temp.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(refused(
            temp,
            format!(
                "it is {}, not a staging folder retrysim made; remove it, or choose another -o",
                kind_of(meta.file_type())
            ),
        ));
    }
    let owner = read_list(&temp.join(OWNER)).ok().flatten();
    if owner.as_deref() != Some(OWNER_TEXT) {
        return Err(refused(
            temp,
            format!(
                "it has no {OWNER} marker of retrysim's, so retrysim did not make it; remove \
                 it, or choose another -o"
            ),
        ));
    }
    if std::fs::symlink_metadata(temp.join(COMPLETE)).is_ok() {
        // A commit cut short by a kill: its files are complete and some
        // are in place already; put the rest there. If that cannot be
        // done, they stay for the next try and nothing else is written.
        publish(temp, target, &retrysims(target)?)?;
    }
    // A real directory: `remove_dir_all` removes links inside it, never
    // what they point to.
    std::fs::remove_dir_all(temp).map_err(|source| OutputError::Remove {
        path: temp.to_path_buf(),
        source,
    })
}

/// The files written into the staging directory `temp`, in name order,
/// without retrysim's own: each a regular file with a plain name.
fn staged_files(temp: &Path) -> Result<Vec<(String, PathBuf)>, OutputError> {
    let entries = std::fs::read_dir(temp).map_err(|source| OutputError::ReadBack {
        path: temp.to_path_buf(),
        source,
    })?;
    let mut staged = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if [COMPLETE, OWNER, MANIFEST].contains(&name.as_str()) {
            continue;
        }
        let path = e.path();
        let plain = e.file_type().is_ok_and(|t| t.is_file());
        if !plain || !plain_name(&name) || e.file_name().to_str().is_none() {
            return Err(refused(
                &path,
                "it is not a file retrysim staged (a staging folder holds plain files only); \
                 remove it, or choose another -o",
            ));
        }
        staged.push((name, path));
    }
    staged.sort();
    Ok(staged)
}

/// Checks every place in `target` a file of `staged` goes to or a `stale`
/// output is removed from, before the first move: a directory there fails
/// the commit with nothing moved.
fn check_places(
    staged: &BTreeSet<String>,
    stale: &[&str],
    target: &Path,
) -> Result<(), OutputError> {
    let places = staged
        .iter()
        .map(String::as_str)
        .chain(stale.iter().copied())
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

/// Moves every file of the complete staging directory `temp` into
/// `target`, removes the stale outputs its marker names that are among
/// `owned` (retrysim's), and moves the new manifest last: the second half
/// of a commit, or all that is left of one a kill cut short.
fn publish(temp: &Path, target: &Path, owned: &BTreeSet<String>) -> Result<(), OutputError> {
    let staged = staged_files(temp)?;
    let marker = temp.join(COMPLETE);
    let stale = read_list(&marker)?.unwrap_or_default();
    let stale = names_in(&marker, &stale)?;
    let names: BTreeSet<String> = staged.iter().map(|(n, _)| n.clone()).collect();
    let stale: Vec<&str> = stale
        .iter()
        .map(String::as_str)
        .filter(|n| owned.contains(*n))
        .collect();
    check_places(&names, &stale, target)?;
    let manifest = temp.join(MANIFEST);
    let manifest = std::fs::symlink_metadata(&manifest)
        .is_ok_and(|m| m.is_file())
        .then_some((MANIFEST.to_string(), manifest));
    for (i, (name, from)) in staged.into_iter().chain(manifest).enumerate() {
        if i == 1 {
            fail_point("publish")?;
        }
        if name == MANIFEST {
            remove_stale(target, &stale)?;
        }
        let to = target.join(&name);
        std::fs::rename(&from, &to).map_err(|source| OutputError::Publish {
            path: to.clone(),
            source,
        })?;
    }
    remove_stale(target, &stale)
}

/// Removes the `stale` files of `target` (gone already is fine).
fn remove_stale(target: &Path, stale: &[&str]) -> Result<(), OutputError> {
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

/// Opens `path` without following a symbolic link at it and without
/// blocking on a named pipe; for writing (created when missing) or for
/// reading.
fn open_no_follow(path: &Path, write: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    if write {
        o.write(true).create(true).truncate(false);
    } else {
        o.read(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    o.open(path)
}

/// Writes the single file `path` the way [`Staging`] writes a directory:
/// `write` fills a hidden temporary file beside it (`.<name>.tmp-<pid>`,
/// made new: a link of that name is never followed), which one rename
/// then puts in place. A write that fails (a full disk) or is interrupted
/// leaves an earlier file at `path` as it was and no partial file; the
/// temporary file is removed. For a lone output file such as `schedule
/// --png FILE`, whose directory is the user's and not ours to lock or
/// stage.
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
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".into());
    let temp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    // Made new, so that whatever stands at that name is not written
    // through: a leftover of this process id is a file of ours.
    if std::fs::symlink_metadata(&temp).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(&temp);
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    // The user named `path`: an error writing the temporary file is theirs.
    let result = write(&temp)
        .map_err(|e| match e {
            OutputError::Write { path: p, source } if p == temp => OutputError::Write {
                path: path.to_path_buf(),
                source,
            },
            e => e,
        })
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

/// Takes the lock at `path` for `target`, or says who holds it. Only a
/// regular file is a lock: anything else there is refused at once, and
/// never followed (a link), waited on (a named pipe) or created through.
fn lock(path: &Path, target: &Path) -> Result<File, OutputError> {
    let not_a_lock = |t: std::fs::FileType| {
        refused(
            path,
            format!(
                "it is {}, not a lock file retrysim made; remove it, or choose another -o",
                kind_of(t)
            ),
        )
    };
    loop {
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.is_file() {
                return Err(not_a_lock(meta.file_type()));
            }
        }
        let file = match open_no_follow(path, true) {
            Ok(f) => f,
            Err(source) => {
                // Replaced since it was looked at: say what is there now.
                if let Ok(meta) = std::fs::symlink_metadata(path) {
                    if !meta.is_file() {
                        return Err(not_a_lock(meta.file_type()));
                    }
                }
                return Err(OutputError::Write {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        if let Ok(meta) = file.metadata() {
            if !meta.is_file() {
                return Err(not_a_lock(meta.file_type()));
            }
        }
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
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// A staging in progress, as [`abandon_all`] removes it.
#[derive(Debug)]
struct Active {
    id: u64,
    temp: PathBuf,
    lock: PathBuf,
    target: PathBuf,
    created: Option<PathBuf>,
}

/// The stagings in progress.
static ACTIVE: Mutex<Vec<Active>> = Mutex::new(Vec::new());

/// The id the next staging gets.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The list of stagings in progress, locked.
fn active() -> MutexGuard<'static, Vec<Active>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Adds `s` to the stagings in progress.
fn register(s: &Staging, mut active: MutexGuard<'_, Vec<Active>>) {
    active.push(Active {
        id: s.id,
        temp: s.temp.clone(),
        lock: s.lock_path.clone(),
        target: s.target.clone(),
        created: s.created.clone(),
    });
}

/// Removes every staging in progress as an abandoned one removes itself
/// (its staging directory, its lock, the directories it created while
/// empty), for a process about to end without unwinding (a signal that
/// the command did not stop for). Moves in progress are waited for (at
/// most `wait`), so a report is never left a mix of two; after this no
/// staging begins or commits in this process.
pub fn abandon_all(wait: Duration) {
    let since = Instant::now();
    let mut active = loop {
        match ACTIVE.try_lock() {
            Ok(g) => break g,
            Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if since.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(std::sync::TryLockError::WouldBlock) => return,
        }
    };
    for a in active.drain(..) {
        let _ = std::fs::remove_dir_all(&a.temp);
        let _ = std::fs::remove_file(&a.lock);
        remove_created(&a.target, a.created.as_deref());
    }
    // Kept locked until the process ends.
    std::mem::forget(active);
}

/// A writer that stops when a stop is requested (Ctrl-C, a signal): it
/// passes at most [`Stoppable::PIECE`] bytes to `W` per write and checks
/// the stop before each, so a large file is given up within a piece.
#[derive(Debug)]
pub struct Stoppable<W> {
    inner: W,
    stop: fn() -> bool,
}

impl<W: Write> Stoppable<W> {
    /// Bytes written at most between two checks.
    pub const PIECE: usize = 1 << 20;

    /// `inner`, stopping on [`crate::engine::stop::requested`].
    pub fn new(inner: W) -> Stoppable<W> {
        Stoppable::with(inner, crate::engine::stop::requested)
    }

    /// `inner`, stopping once `stop` says so.
    pub fn with(inner: W, stop: fn() -> bool) -> Stoppable<W> {
        Stoppable { inner, stop }
    }

    /// The writer inside.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for Stoppable<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.stop)() {
            // Not `ErrorKind::Interrupted`, which `write_all` retries.
            return Err(std::io::Error::other("stopped: a stop was requested"));
        }
        self.inner.write(&buf[..buf.len().min(Self::PIECE)])
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `bytes` to the new file `path` in pieces ([`Stoppable`]): a stop
/// requested meanwhile ends it within a piece, as
/// [`OutputError::Interrupted`].
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let written = File::create(path).and_then(|f| Stoppable::new(f).write_all(bytes));
    match written {
        Ok(()) => Ok(()),
        Err(_) if crate::engine::stop::requested() => Err(OutputError::Interrupted),
        Err(source) => Err(OutputError::Write {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Fault injection for the tests of this guarantee: in builds with debug
/// assertions (the test profile), `RETRYSIM_FAIL_AT=<point>` makes the
/// named point fail as a full disk would, `RETRYSIM_ABORT_AT=<point>`
/// kills the process there as `kill -9` would, and
/// `RETRYSIM_HANG_AT=<point>` blocks there for ever (as a write to a stuck
/// disk would), for the signal tests. Release builds compile it away.
pub fn fail_point(point: &str) -> Result<(), OutputError> {
    if cfg!(debug_assertions) {
        if std::env::var("RETRYSIM_ABORT_AT").is_ok_and(|p| p == point) {
            std::process::abort();
        }
        if std::env::var("RETRYSIM_HANG_AT").is_ok_and(|p| p == point) {
            loop {
                std::thread::park();
            }
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

    /// The names a test command writes.
    const OUT: &[&str] = &["summary.csv", "tiers.csv", "alerts.csv", "load.png"];

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
    }

    /// The names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Writes the manifest retrysim would, listing `files`.
    fn manifest(target: &Path, files: &[&str]) {
        let mut text = format!("{MANIFEST_HEADER}\n");
        for f in files {
            text.push_str(f);
            text.push('\n');
        }
        write(&target.join(MANIFEST), &text);
    }

    /// A staging directory a killed run left in `target`, holding `files`
    /// (name, text); with `complete` its commit had begun.
    fn leftover(
        target: &Path,
        pid: u32,
        files: &[(&str, &str)],
        complete: Option<&str>,
    ) -> PathBuf {
        let dir = target.join(format!("{STAGING_PREFIX}{pid}"));
        std::fs::create_dir(&dir).unwrap();
        write(&dir.join(OWNER), OWNER_TEXT);
        for (f, text) in files {
            write(&dir.join(f), text);
        }
        if let Some(stale) = complete {
            write(&dir.join(COMPLETE), stale);
        }
        dir
    }

    fn err_text(e: &OutputError) -> String {
        let mut s = e.to_string();
        if let Some(src) = std::error::Error::source(e) {
            s = format!("{s}: {src}");
        }
        s
    }

    #[test]
    fn files_appear_only_on_commit_and_others_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        let s = Staging::begin(&target, OUT, false).unwrap();
        write(&s.path().join("summary.csv"), "old");
        write(&s.path().join("load.png"), "old png");
        s.commit().unwrap();
        assert_eq!(
            read(&target.join(MANIFEST)),
            format!("{MANIFEST_HEADER}\nload.png\nsummary.csv\n")
        );
        // The user's own file in a folder retrysim wrote.
        write(&target.join("notes.txt"), "mine");
        let s = Staging::begin(&target, OUT, false).unwrap();
        assert_eq!(s.path().parent(), Some(target.as_path()), "staged inside");
        write(&s.path().join("summary.csv"), "new");
        assert_eq!(read(&target.join("summary.csv")), "old");
        assert_eq!(
            s.final_path(&s.path().join("summary.csv")),
            target.join("summary.csv")
        );
        s.commit().unwrap();
        assert_eq!(read(&target.join("summary.csv")), "new");
        assert!(!target.join("load.png").exists(), "stale output removed");
        assert_eq!(read(&target.join("notes.txt")), "mine");
        assert_eq!(
            read(&target.join(MANIFEST)),
            format!("{MANIFEST_HEADER}\nsummary.csv\n")
        );
        assert_eq!(names(dir.path()), ["report"], "nothing beside the target");
        assert_eq!(names(&target), [MANIFEST, "notes.txt", "summary.csv"]);
    }

    /// A folder with files retrysim did not write and no manifest is
    /// refused, naming them, unless forced; forced, only the files of the
    /// names written are replaced, and a manifest then says so.
    #[test]
    fn a_folder_of_someone_elses_files_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("mine");
        std::fs::create_dir(&target).unwrap();
        write(&target.join("notes.txt"), "mine");
        write(&target.join("load.png"), "my picture");
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        let text = err_text(&e);
        assert!(
            text.contains("notes.txt") && text.contains("--force") && text.contains("mine"),
            "{text}"
        );
        assert_eq!(names(&target), ["load.png", "notes.txt"], "nothing made");
        let s = Staging::begin(&target, OUT, true).unwrap();
        write(&s.path().join("summary.csv"), "new");
        s.commit().unwrap();
        assert_eq!(read(&target.join("load.png")), "my picture", "not removed");
        assert_eq!(
            names(&target),
            [MANIFEST, "load.png", "notes.txt", "summary.csv"]
        );
        // Now the folder has a manifest: other files are fine, but one of
        // the names a command writes that it does not list is not.
        let s = Staging::begin(&target, &["summary.csv"], false).unwrap();
        drop(s);
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        let text = err_text(&e);
        assert!(
            text.contains("load.png") && !text.contains("notes.txt"),
            "{text}"
        );
        // Forced, a stale output it did not write stays.
        let s = Staging::begin(&target, OUT, true).unwrap();
        s.commit().unwrap();
        assert_eq!(read(&target.join("load.png")), "my picture");
    }

    /// A folder an older retrysim wrote (no manifest, only its files) is
    /// reused, and its files are retrysim's.
    #[test]
    fn a_folder_an_older_version_wrote_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("old");
        std::fs::create_dir_all(target.join("sweep")).unwrap();
        write(&target.join("summary.csv"), "old");
        write(&target.join("load.png"), "old png");
        // Without the file every run wrote, it is not a report.
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        assert!(err_text(&e).contains("load.png, summary.csv"), "{e}");
        write(&target.join("summary.json"), "{}");
        let s = Staging::begin(&target, OUT, false).unwrap();
        write(&s.path().join("summary.csv"), "new");
        s.commit().unwrap();
        assert!(!target.join("load.png").exists(), "an older run's, stale");
        assert_eq!(
            names(&target),
            [MANIFEST, "summary.csv", "summary.json", "sweep"]
        );
        // A picture with no report of its own is someone else's.
        let map = dir.path().join("map");
        std::fs::create_dir(&map).unwrap();
        write(&map.join("map.png"), "my map");
        assert!(Staging::begin(&map, &["map.csv", "map.json", "map.png"], false).is_err());
    }

    #[test]
    fn a_manifest_retrysim_did_not_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        write(&target.join("summary.csv"), "old");
        for (text, says) in [
            (format!("{MANIFEST_HEADER}\n../../x\n"), "line 2"),
            (format!("{MANIFEST_HEADER}\n/etc/passwd\n"), "/etc/passwd"),
            ("summary.csv\n".to_string(), "first line"),
        ] {
            write(&target.join(MANIFEST), &text);
            let e = Staging::begin(&target, OUT, false).unwrap_err();
            let t = err_text(&e);
            assert!(t.contains(MANIFEST) && t.contains(says), "{t}");
            assert_eq!(read(&target.join("summary.csv")), "old");
        }
        let link = target.join(MANIFEST);
        std::fs::remove_file(&link).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("summary.csv", &link).unwrap();
            let e = Staging::begin(&target, OUT, false).unwrap_err();
            assert!(err_text(&e).contains("symbolic link"), "{e}");
        }
    }

    #[test]
    fn a_directory_in_the_way_fails_the_commit_before_anything_moves() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir_all(target.join("tiers.csv")).unwrap();
        write(&target.join("summary.csv"), "old");
        write(&target.join("summary.json"), "{}");
        let s = Staging::begin(&target, OUT, false).unwrap();
        write(&s.path().join("summary.csv"), "new");
        write(&s.path().join("tiers.csv"), "new");
        let e = s.commit().unwrap_err();
        assert!(e.to_string().contains("tiers.csv"), "{e}");
        assert_eq!(read(&target.join("summary.csv")), "old");
        // A stale output that is a directory fails it too.
        manifest(&target, &["summary.csv", "tiers.csv"]);
        let s = Staging::begin(&target, OUT, false).unwrap();
        write(&s.path().join("summary.csv"), "new");
        assert!(s.commit().is_err());
        assert_eq!(read(&target.join("summary.csv")), "old");
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
        for f in ["summary.json", "summary.csv", "alerts.csv", "load.png"] {
            write(&target.join(f), "old");
        }
        // tiers.csv already moved; summary.csv still waiting; load.png stale.
        write(&target.join("tiers.csv"), "new");
        let new_manifest = format!("{MANIFEST_HEADER}\nalerts.csv\nsummary.csv\ntiers.csv\n");
        let cut = leftover(
            &target,
            4_000_000,
            &[("summary.csv", "new"), (MANIFEST, &new_manifest)],
            Some("load.png"),
        );
        // An abandoned one, with no marker, is thrown away.
        let abandoned = leftover(&target, 4_000_001, &[("alerts.csv", "half")], None);
        let s = Staging::begin(&target, OUT, false).unwrap();
        let r = |f: &str| read(&target.join(f));
        assert_eq!(
            (r("summary.csv"), r("tiers.csv"), r("alerts.csv")),
            ("new".into(), "new".into(), "old".into())
        );
        assert!(!target.join("load.png").exists());
        assert!(!cut.exists() && !abandoned.exists());
        assert_eq!(r(MANIFEST), new_manifest);
        drop(s);
    }

    /// Finishing a killed run's moves is all or nothing too: with a
    /// directory in the way, nothing moves, the files stay for a later
    /// try, and no new report is begun.
    #[test]
    fn a_commit_that_cannot_be_finished_is_kept_and_stops_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir_all(target.join("tiers.csv")).unwrap();
        write(&target.join("summary.csv"), "old");
        write(&target.join("summary.json"), "{}");
        let cut = leftover(
            &target,
            4_000_000,
            &[("summary.csv", "new"), ("tiers.csv", "new")],
            Some(""),
        );
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        assert!(e.to_string().contains("tiers.csv"), "{e}");
        assert_eq!(read(&target.join("summary.csv")), "old");
        assert!(cut.join("summary.csv").is_file() && cut.join(COMPLETE).is_file());
        // Out of the way, the next run finishes it.
        std::fs::remove_dir(target.join("tiers.csv")).unwrap();
        drop(Staging::begin(&target, OUT, false).unwrap());
        assert_eq!(read(&target.join("tiers.csv")), "new");
        assert!(!cut.exists());
    }

    /// Planted leftovers are refused with their path and change nothing:
    /// a link at a staging name (its folder's files would be moved into
    /// the report), a directory retrysim did not make, and a marker that
    /// names files outside the folder.
    #[cfg(unix)]
    #[test]
    fn planted_staging_folders_are_refused_and_nothing_outside_changes() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        write(&elsewhere.join("summary.csv"), "precious");
        write(&elsewhere.join("x"), "precious");
        let outside = || (names(&elsewhere), read(&elsewhere.join("x")));
        let before = outside();
        let planted = target.join(format!("{STAGING_PREFIX}7"));
        let check = |says: &str| {
            let e = Staging::begin(&target, OUT, false).unwrap_err();
            let t = err_text(&e);
            assert!(
                t.contains(&planted.display().to_string()) && t.contains(says),
                "{t}"
            );
            assert_eq!(outside(), before);
            assert!(!target.join("summary.csv").exists());
        };
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        check("symbolic link");
        std::fs::remove_file(&planted).unwrap();
        std::fs::create_dir(&planted).unwrap();
        write(&planted.join(COMPLETE), "");
        check("marker");
        std::fs::remove_dir_all(&planted).unwrap();
        let abs = elsewhere.join("x").display().to_string();
        for stale in ["../../elsewhere/x", "../elsewhere/x", abs.as_str(), ".."] {
            let p = leftover(&target, 7, &[], Some(stale));
            let e = Staging::begin(&target, OUT, false).unwrap_err();
            let t = err_text(&e);
            assert!(
                t.contains(COMPLETE) && t.contains("plain name"),
                "{stale}: {t}"
            );
            assert_eq!(outside(), before, "{stale}");
            std::fs::remove_dir_all(p).unwrap();
        }
        // A link inside a staging folder is not moved into the report.
        let p = leftover(&target, 7, &[], Some(""));
        std::os::unix::fs::symlink(elsewhere.join("x"), p.join("summary.csv")).unwrap();
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        assert!(err_text(&e).contains("summary.csv"), "{e}");
        assert!(!target.join("summary.csv").exists());
        // A marker listing a plain name the folder's manifest does not
        // list removes nothing.
        std::fs::remove_dir_all(&p).unwrap();
        write(&target.join("notes.txt"), "mine");
        manifest(&target, &[]);
        leftover(&target, 7, &[], Some("notes.txt"));
        drop(Staging::begin(&target, OUT, false).unwrap());
        assert_eq!(read(&target.join("notes.txt")), "mine");
        assert_eq!(outside(), before);
    }

    /// A lock that is not a regular file is refused at once, never
    /// followed, created through or waited on; nothing is left behind.
    #[cfg(unix)]
    #[test]
    fn a_lock_that_is_not_a_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        let lock = target.join(LOCK);
        let pointed = dir.path().join("created-through-the-link");
        type Plant<'a> = (&'static str, Box<dyn Fn() + 'a>);
        let cases: [Plant; 3] = [
            (
                "symbolic link",
                Box::new(|| std::os::unix::fs::symlink(&pointed, &lock).unwrap()),
            ),
            (
                "directory",
                Box::new(|| std::fs::create_dir(&lock).unwrap()),
            ),
            (
                "named pipe",
                Box::new(|| {
                    let made = std::process::Command::new("mkfifo").arg(&lock).status();
                    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
                }),
            ),
        ];
        for (what, plant) in cases {
            plant();
            let started = Instant::now();
            let e = Staging::begin(&target, OUT, false).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(5), "{what}: waited");
            let t = err_text(&e);
            assert!(
                t.contains(&lock.display().to_string()) && t.contains(what),
                "{t}"
            );
            assert!(!pointed.exists(), "{what}: nothing created through it");
            assert_eq!(names(&target), [LOCK], "{what}: nothing left");
            assert_eq!(names(dir.path()), ["report"], "{what}");
            let _ = std::fs::remove_file(&lock).or_else(|_| std::fs::remove_dir(&lock));
        }
    }

    /// Everything is made inside the target, whatever it is called.
    #[test]
    fn the_lock_and_staging_are_inside_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        let dotted = target.join("sub").join("..");
        std::fs::create_dir_all(target.join("sub")).unwrap();
        let s = Staging::begin(&dotted, OUT, false).unwrap();
        assert!(target.join(LOCK).is_file());
        assert!(target
            .join(format!("{STAGING_PREFIX}{}", std::process::id()))
            .is_dir());
        assert_eq!(names(dir.path()), ["report"]);
        drop(s);
        assert_eq!(names(&target), ["sub"]);
    }

    #[test]
    fn an_abandoned_staging_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        std::fs::create_dir(&target).unwrap();
        write(&target.join("summary.csv"), "old");
        write(&target.join("summary.json"), "{}");
        {
            let s = Staging::begin(&target, OUT, false).unwrap();
            write(&s.path().join("summary.csv"), "half");
        }
        assert_eq!(read(&target.join("summary.csv")), "old");
        assert_eq!(names(&target), ["summary.csv", "summary.json"]);
        assert_eq!(names(dir.path()), ["report"]);
    }

    #[test]
    fn an_abandoned_staging_removes_the_directories_it_created() {
        let dir = tempfile::tempdir().unwrap();
        // `run -o out` stages `out/<scenario>`: both are new.
        let target = dir.path().join("out").join("storm");
        drop(Staging::begin(&target, OUT, false).unwrap());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A directory that was there, or that holds something else, stays.
        let kept = dir.path().join("kept");
        std::fs::create_dir(&kept).unwrap();
        drop(Staging::begin(&kept.join("a").join("b"), OUT, false).unwrap());
        assert!(kept.is_dir() && std::fs::read_dir(&kept).unwrap().count() == 0);
        let busy = dir.path().join("busy").join("x");
        let first = Staging::begin(&busy.join("one"), OUT, false).unwrap();
        first.commit().unwrap();
        drop(Staging::begin(&busy.join("two"), OUT, false).unwrap());
        assert!(busy.join("one").is_dir() && !busy.join("two").exists());
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("report");
        let first = Staging::begin(&target, OUT, false).unwrap();
        let e = Staging::begin(&target, OUT, false).unwrap_err();
        assert!(matches!(e, OutputError::Locked { .. }), "{e}");
        drop(first);
        Staging::begin(&target, OUT, false).expect("free again");
    }

    /// A stop requested while a large file is written ends the write
    /// within a piece, not at the end of the file.
    #[test]
    fn a_stoppable_writer_stops_within_a_piece() {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        fn after_two() -> bool {
            CALLS.fetch_add(1, Ordering::Relaxed) >= 2
        }
        let big = vec![b'x'; 10 * Stoppable::<Vec<u8>>::PIECE];
        let mut w = Stoppable::with(Vec::new(), after_two);
        let e = w.write_all(&big).unwrap_err();
        assert!(e.to_string().contains("stop"), "{e}");
        assert_eq!(w.into_inner().len(), 2 * Stoppable::<Vec<u8>>::PIECE);
        let mut w = Stoppable::with(Vec::new(), || false);
        w.write_all(&big).unwrap();
        assert_eq!(w.into_inner(), big);
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
