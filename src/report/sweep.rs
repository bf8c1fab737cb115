//! The files of `retrysim sweep` (and of `retrysim merge` joining a sweep's
//! shards): `sweep.csv`, `sweep.json` and `heatmap.png`.

use super::heatmap::{heatmap_png, varying_pair};
use super::output::save_grid;
use super::staging::Staging;
use crate::report::OutputError;
use crate::sweep::{Manifest, Shard, Table};
use std::path::{Path, PathBuf};

/// Every file [`write`] may write.
pub const SWEEP_FILES: &[&str] = &["sweep.csv", "sweep.json", "heatmap.png"];

/// Writes `sweep.csv`, `sweep.json` and (for a whole sweep with exactly two
/// varying parameters, unless `no_plots`) `heatmap.png` into `stage`, then
/// moves them into place (a stale `heatmap.png` is removed); returns their
/// final paths.
pub fn write(
    stage: Staging,
    manifest: &Manifest,
    table: &Table,
    no_plots: bool,
) -> Result<Vec<PathBuf>, OutputError> {
    let draw = |path: &Path| heatmap_png(path, manifest, table);
    let png = !no_plots && manifest.shard == Shard::ALL && varying_pair(manifest).is_some();
    let files = ("sweep.csv", "sweep.json", "heatmap.png");
    save_grid(stage, files, table, manifest, png.then_some(&draw as _))
}
