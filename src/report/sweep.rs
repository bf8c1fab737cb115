//! The files of `retrysim sweep` (and of `retrysim merge` joining a sweep's
//! shards): `sweep.csv`, `sweep.json` and `heatmap.png`.

use super::csv_file;
use super::heatmap::{heatmap_png, varying_pair};
use super::output::{final_paths, save, save_json};
use super::staging::Staging;
use crate::error::OutputError;
use crate::sweep::{Manifest, Shard, Table};
use std::path::PathBuf;

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
    let dir = stage.path();
    let mut written = Vec::new();
    save(
        dir,
        "sweep.csv",
        &csv_file::text_table(table)?,
        &mut written,
    )?;
    save_json(dir, "sweep.json", manifest, &mut written)?;
    if !no_plots && manifest.shard == Shard::ALL && varying_pair(manifest).is_some() {
        let png = dir.join("heatmap.png");
        heatmap_png(&png, manifest, table)?;
        written.push(png);
    }
    let written = final_paths(&stage, &written);
    stage.commit()?;
    Ok(written)
}
