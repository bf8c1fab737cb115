//! `retrysim merge`: joins the shard outputs of `retrysim sweep` or
//! `retrysim map` into the files (byte for byte) an unsharded run writes.
//!
//! A directory holding `sweep.json` or `map.json` is one shard; any other
//! directory stands for the shard directories directly inside it (what
//! `--shards N` writes), so `retrysim merge results/map` needs no shell
//! glob (a distroless image has no shell).

use super::common::{note, resolve, Stdout, MAX_FORCED_POINTS};
use crate::error::{Error, InvalidInput, MapError};
use crate::map::{self, MapManifest};
use crate::report::{self, staging::Staging};
use crate::scenario::MAX_INPUT_BYTES;
use crate::sweep::{self, Manifest, Table};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Examples shown after `--help`.
pub const EXAMPLES: &str = "Examples:
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 1/2 -o part1
  retrysim sweep s.json --set traffic.rate=100,200,300 --shard 2/2 -o part2
  retrysim merge part1 part2 -o all      # all/sweep.csv, all/sweep.json (+ heatmap.png)
  # Map shards written with --shards N into results/map/shard-<I>-of-<N>/
  retrysim merge results/map -o results/map-merged   # map.csv, map.json, map.png";

/// Flags of `retrysim merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Shard output directories (each holds sweep.csv and sweep.json, or
    /// map.csv and map.json), or directories holding them.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Output directory.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Skip the heatmap or map.png.
    #[arg(long)]
    pub no_plots: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Write into an output directory that holds files retrysim did not
    /// write (files of the names written are replaced, nothing else is
    /// touched).
    #[arg(long)]
    pub force: bool,
}

/// What kind of output a shard directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Sweep,
    Map,
}

impl Kind {
    /// What `dir` holds; an error when it holds both (a sweep and a map
    /// written with one `-o`), as either choice would drop the other.
    fn of(dir: &Path) -> Result<Option<Kind>, MapError> {
        match (
            dir.join("sweep.json").is_file(),
            dir.join("map.json").is_file(),
        ) {
            (true, true) => Err(MapError::BothKinds(dir.display().to_string())),
            (false, true) => Ok(Some(Kind::Map)),
            (true, false) => Ok(Some(Kind::Sweep)),
            (false, false) => Ok(None),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Map => "map",
        }
    }
}

/// The shard directories `dirs` name, each with its kind, in the order
/// given (a parent's shards in name order).
fn shard_dirs(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, Kind)>, Error> {
    let mut out = Vec::new();
    for dir in dirs {
        if let Some(k) = Kind::of(dir)? {
            out.push((dir.clone(), k));
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|source| InvalidInput::Unreadable {
            origin: dir.display().to_string(),
            source,
        })?;
        let mut inside: Vec<(PathBuf, Kind)> = Vec::new();
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if let Some(k) = Kind::of(&p)? {
                inside.push((p, k));
            }
        }
        if inside.is_empty() {
            return Err(MapError::NoOutput(dir.display().to_string()).into());
        }
        inside.sort_by(|a, b| a.0.cmp(&b.0));
        out.extend(inside);
    }
    Ok(out)
}

/// Reads `name` in `dir`, refusing anything but a regular file (a FIFO
/// would block the merge) and a file over `limit` bytes: a shard is an
/// input like any other, and a file larger than what wrote it can hold
/// was not written by `sweep` or `map`.
fn read(dir: &Path, name: &str, limit: u64) -> Result<Vec<u8>, InvalidInput> {
    use std::io::Read;
    let p = dir.join(name);
    let unreadable = |source| InvalidInput::Unreadable {
        origin: p.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(&p).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(unreadable(std::io::Error::other(
            "it is not a regular file, so no sweep or map wrote it",
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&p)
        .and_then(|f| f.take(limit.saturating_add(1)).read_to_end(&mut bytes))
        .map_err(unreadable)?;
    if bytes.len() as u64 > limit {
        return Err(unreadable(std::io::Error::other(format!(
            "it holds more than {limit} bytes, more than the shard its manifest describes \
             can hold: was the shard edited?"
        ))));
    }
    Ok(bytes)
}

/// Reads a manifest written by `sweep` or `map`, capped like every input
/// file ([`MAX_INPUT_BYTES`]).
/// A manifest that does not read is refused at its line and column, with
/// the field it was reading.
fn manifest<T: serde::de::DeserializeOwned>(dir: &Path, name: &str) -> Result<T, InvalidInput> {
    let bytes = read(dir, name, MAX_INPUT_BYTES)?;
    let de = &mut serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let text = inner.to_string();
        // serde_json ends its message with the place, given apart here.
        let cause = text
            .rfind(" at line ")
            .map_or(text.as_str(), |i| &text[..i])
            .replace("expected usize", "expected a whole number of at least 0")
            .replace("expected u32", "expected a whole number of at least 0")
            .replace("expected u64", "expected a whole number of at least 0");
        InvalidInput::At(crate::scenario::error::Located {
            origin: format!("{}/{name}", dir.display()),
            line: (inner.line() > 0).then_some(inner.line()),
            column: (inner.line() > 0).then_some(inner.column()),
            path: (path != ".").then_some(path),
            message: format!(
                "{cause}: not as sweep or map wrote it (was it edited?); run that shard again"
            ),
        })
    })
}

/// The most bytes one table row may take: its numbers (a few dozen cells
/// of at most 32 bytes each, with room to spare) and its text (`texts`,
/// the swept values and the policy name, each at most twice as long once
/// quoted, plus its quotes and comma).
fn row_bytes<'a>(texts: impl Iterator<Item = &'a str>) -> u64 {
    texts.fold(8192u64, |n, t| {
        n.saturating_add((t.len() as u64).saturating_mul(2).saturating_add(3))
    })
}

/// The longest of `values` (empty for none).
fn longest(values: &[String]) -> &str {
    values
        .iter()
        .max_by_key(|v| v.len())
        .map_or("", String::as_str)
}

/// The size limit of a shard's table: [`MAX_INPUT_BYTES`] plus the rows
/// its manifest says it holds at [`row_bytes`] each. `items` (points or
/// cells of the shard) above what one process runs ([`MAX_FORCED_POINTS`])
/// is refused: no shard that large was written.
fn table_limit(
    origin: &str,
    noun: &str,
    items: usize,
    policies: usize,
    row: u64,
) -> Result<u64, InvalidInput> {
    if items > MAX_FORCED_POINTS {
        return Err(InvalidInput::TooBig {
            origin: origin.to_string(),
            what: format!(
                "this shard holds {items} {noun}, more than one process runs \
                 ({MAX_FORCED_POINTS}): was the shard edited?"
            ),
        });
    }
    let rows = (items as u64).saturating_mul(policies as u64);
    Ok(MAX_INPUT_BYTES.saturating_add(rows.saturating_mul(row)))
}

/// Refuses an output directory that is one of the inputs (merging would
/// overwrite that shard's files), or a directory given for the shards
/// inside it or directly inside one (the merged output would become one
/// of its shards, or hide them, for the next merge of that directory).
fn check_output(output: &Path, given: &[PathBuf], shards: &[(PathBuf, Kind)]) -> Result<(), Error> {
    let out = resolve(output);
    let refuse = |why: String| -> Result<(), Error> {
        Err(MapError::OutputIsInput {
            output: output.display().to_string(),
            why,
        }
        .into())
    };
    for (dir, _) in shards {
        if resolve(dir) == out {
            return refuse(format!(
                "is the shard {}; merging into it would overwrite that shard",
                dir.display()
            ));
        }
    }
    for dir in given.iter().filter(|d| matches!(Kind::of(d), Ok(None))) {
        let parent = resolve(dir);
        if parent == out {
            return refuse(format!(
                "is {}, which holds the shards being merged; the merged files \
                 would make it look like one shard to the next merge",
                dir.display()
            ));
        }
        if out.parent() == Some(parent.as_path()) {
            return refuse(format!(
                "is inside {}, which holds the shards being merged; the next \
                 merge of {} would take the merged output for a shard",
                dir.display(),
                dir.display()
            ));
        }
    }
    Ok(())
}

/// Warns (unless `quiet`) that the shards merged carry no scenario
/// fingerprint (`missing`): written by a version that did not record it,
/// they were matched on the scenario's name, axes and policies alone, so
/// shards of an edited scenario would not have been told apart.
fn unfingerprinted(missing: bool, quiet: bool) {
    if missing && !quiet {
        note(
            "warning: these shards do not record which scenario they ran (they were written \
             by an older version), so they were matched on the scenario's name, axes and \
             policies only: check that every shard ran the same scenario file",
        );
    }
}

/// Runs the command.
pub fn run(args: MergeArgs) -> Result<ExitCode, Error> {
    let dirs = shard_dirs(&args.dirs)?;
    check_output(&args.output, &args.dirs, &dirs)?;
    let kind = dirs[0].1;
    if let Some((d, k)) = dirs.iter().find(|(_, k)| *k != kind) {
        return Err(MapError::MixedKinds {
            origin: d.display().to_string(),
            found: k.name(),
            expected: kind.name(),
        }
        .into());
    }
    let written = match kind {
        Kind::Sweep => {
            let mut parts = Vec::new();
            for (dir, _) in &dirs {
                let origin = dir.display().to_string();
                let m: Manifest = manifest(dir, "sweep.json")?;
                let json = format!("{origin}/sweep.json");
                sweep::check_manifest(&m, &json)?;
                let row = row_bytes(
                    m.axes
                        .iter()
                        .map(|a| longest(&a.values))
                        .chain([longest(&m.policies)]),
                );
                let items = m.shard.count_of(m.points);
                let limit = table_limit(&json, "points", items, m.policies.len(), row)?;
                let table = Table::from_csv(
                    &read(dir, "sweep.csv", limit)?,
                    &format!("{origin}/sweep.csv"),
                )?;
                parts.push((origin, m, table));
            }
            let (m, table) = sweep::merge(parts)?;
            unfingerprinted(m.fingerprint.is_empty(), args.quiet);
            let stage = Staging::begin(&args.output, report::sweep::SWEEP_FILES, args.force)?;
            report::sweep::write(stage, &m, &table, args.no_plots)?
        }
        Kind::Map => {
            let mut parts = Vec::new();
            for (dir, _) in &dirs {
                let origin = dir.display().to_string();
                let m: MapManifest = manifest(dir, "map.json")?;
                let json = format!("{origin}/map.json");
                let grid = map::check_manifest(&m, &json)?;
                let row = row_bytes(
                    [
                        longest(&m.x.values),
                        longest(&m.y.values),
                        longest(&m.policies),
                    ]
                    .into_iter(),
                );
                let items = map::shard_cells(m.shard, grid.len()).len();
                let limit = table_limit(&json, "cells", items, m.policies.len(), row)?;
                let table =
                    Table::from_csv(&read(dir, "map.csv", limit)?, &format!("{origin}/map.csv"))?;
                parts.push((origin, m, table));
            }
            let (m, table) = map::merge(parts)?;
            unfingerprinted(m.fingerprint.is_empty(), args.quiet);
            let stage = Staging::begin(&args.output, report::map::MAP_FILES, args.force)?;
            report::map::write(stage, &m, &table, args.no_plots)?
        }
    };
    if !args.quiet {
        let mut out = Stdout::lock();
        for p in written {
            out.line(format_args!("wrote {}", p.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
