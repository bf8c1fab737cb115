//! The one way a report file is saved: into a staged directory (see
//! [`super::staging`]), in pieces that each check for a stop request, with
//! an I/O error naming the file. Every file every command writes goes
//! through [`save`] or [`save_streamed`], a PNG through [`save_png`].

use super::staging::{self, Stoppable};
use crate::report::OutputError;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A report file being written: buffered, and stopping at a stop request.
pub type StagedFile = BufWriter<Stoppable<File>>;

/// Writes `bytes` as the file `name` in `dir` and notes its path in
/// `written`.
pub fn save(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    written: &mut Vec<PathBuf>,
) -> Result<(), OutputError> {
    save_streamed(dir, name, written, |mut w| {
        w.write_all(bytes)?;
        Ok(w)
    })
}

/// Writes `value` as pretty-printed JSON with a final line end (the
/// manifests and records whose keys follow their type's field order).
pub fn save_json<T: serde::Serialize + ?Sized>(
    dir: &Path,
    name: &str,
    value: &T,
    written: &mut Vec<PathBuf>,
) -> Result<(), OutputError> {
    let text = crate::json_text::pretty(value)? + "\n";
    save(dir, name, text.as_bytes(), written)
}

/// Writes the file `name` piece by piece through a buffer (`write`
/// returns the writer it was given), for a file too large to build in
/// memory first; an I/O error names the file.
pub fn save_streamed(
    dir: &Path,
    name: &str,
    written: &mut Vec<PathBuf>,
    write: impl FnOnce(StagedFile) -> io::Result<StagedFile>,
) -> Result<(), OutputError> {
    let path = dir.join(name);
    staging::fail_point(name)?;
    // In pieces that each check for a stop (Ctrl-C, a signal), so a
    // large file is given up at once rather than finished.
    let written_out = File::create(&path)
        .and_then(|file| write(BufWriter::new(Stoppable::new(file))))
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()));
    if let Err(source) = written_out {
        if crate::engine::stop::requested() {
            return Err(OutputError::Interrupted);
        }
        return Err(OutputError::Write { path, source });
    }
    written.push(path);
    Ok(())
}

/// How a PNG is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PngCompression {
    /// The smallest file (the run's figures and the schedule's).
    Best,
    /// The encoder's default, as plotters saves a figure (`map.png`,
    /// `heatmap.png`: their bytes have always been these).
    Default,
}

/// Encodes an RGB buffer of `width × height` pixels as the PNG file
/// `path`; an I/O error names the file.
pub fn save_png(
    path: &Path,
    rgb: &[u8],
    (width, height): (u32, u32),
    compression: PngCompression,
) -> Result<(), OutputError> {
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    use image::ImageEncoder;
    let write = |source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    };
    let file = File::create(path).map_err(write)?;
    let mut out = BufWriter::new(file);
    let encoder = match compression {
        PngCompression::Best => {
            PngEncoder::new_with_quality(&mut out, CompressionType::Best, FilterType::Adaptive)
        }
        PngCompression::Default => PngEncoder::new(&mut out),
    };
    encoder
        .write_image(rgb, width, height, image::ColorType::Rgb8)
        .map_err(|e| OutputError::Encode {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
    out.flush().map_err(write)?;
    Ok(())
}

/// Writes `bytes` as the file at `path`, one the user named outside any
/// report folder (`gate --junit FILE`), and returns the path; its folder
/// must exist.
pub fn save_at(path: &Path, bytes: &[u8]) -> Result<PathBuf, OutputError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Err(OutputError::Write {
            path: path.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        });
    };
    save(dir, name, bytes, &mut Vec::new())?;
    Ok(path.to_path_buf())
}

/// The bytes of a file written moments ago (a plot, embedded into the page).
pub fn read_back(path: &Path) -> Result<Vec<u8>, OutputError> {
    std::fs::read(path).map_err(|source| OutputError::ReadBack {
        path: path.to_path_buf(),
        source,
    })
}

/// Draws a picture into the file at the path it is given.
pub type Draw<'a> = dyn Fn(&Path) -> Result<(), OutputError> + 'a;

/// Writes the files of a sweep or a map into `stage`: its table as the CSV
/// `files.0`, its manifest as the JSON `files.1` and, when `png` is given,
/// a picture drawn into `files.2`; then moves them into place (a stale
/// picture is removed) and returns their final paths.
pub fn save_grid<M: serde::Serialize>(
    stage: staging::Staging,
    files: (&str, &str, &str),
    table: &crate::sweep::Table,
    manifest: &M,
    png: Option<&Draw<'_>>,
) -> Result<Vec<PathBuf>, OutputError> {
    let dir = stage.path();
    let mut written = Vec::new();
    let csv = super::csv_file::text_table(table)?;
    save(dir, files.0, &csv, &mut written)?;
    save_json(dir, files.1, manifest, &mut written)?;
    if let Some(draw) = png {
        let path = dir.join(files.2);
        draw(&path)?;
        written.push(path);
    }
    let written = final_paths(&stage, &written);
    stage.commit()?;
    Ok(written)
}

/// The final paths of the files `written` into `stage` (where they will be
/// once it is committed).
pub fn final_paths(stage: &staging::Staging, written: &[PathBuf]) -> Vec<PathBuf> {
    written.iter().map(|p| stage.final_path(p)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the streamed writer gets lands in the file, and any failure
    /// (here, no directory to create it in) names the file.
    #[test]
    fn a_streamed_file_is_written_whole_or_reported_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut written = Vec::new();
        save(dir.path(), "t.csv", b"a,b\n1,2\n", &mut written).unwrap();
        assert_eq!(written, [dir.path().join("t.csv")]);
        assert_eq!(std::fs::read(&written[0]).unwrap(), b"a,b\n1,2\n");
        let gone = dir.path().join("missing");
        let e = save_streamed(&gone, "t.csv", &mut written, Ok).unwrap_err();
        assert!(
            matches!(&e, OutputError::Write { path, .. } if *path == gone.join("t.csv")),
            "{e:?}"
        );
        assert_eq!(written.len(), 1);
    }
}
