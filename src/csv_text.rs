//! The one way retrysim writes CSV: `\n` line ends, and every cell passed
//! through [`safe_cell`], so text that came from the user (a policy name,
//! a `--set` value echoed into `sweep.csv`) can never be read as a formula
//! by a spreadsheet.

use std::borrow::Cow;
use std::io::Write;

/// A cell as written to CSV: text a spreadsheet would evaluate (it starts
/// with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`,
/// the usual defence against CSV formula injection, unless it is a plain
/// number (`-1.5`, `-2e20`, `-inf`), which stays as it is. Idempotent: a
/// cell already written starts with `'` and is left alone, so a table read
/// back and written again (`merge`) keeps its bytes.
pub fn safe_cell(cell: &str) -> Cow<'_, str> {
    let risky = matches!(
        cell.as_bytes().first(),
        Some(b'=' | b'+' | b'-' | b'@' | b'\t' | b'\r')
    );
    if risky && cell.parse::<f64>().is_err() {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

/// A CSV writer with retrysim's settings (`\n` line ends).
pub fn writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out)
}

/// Writes one record, each cell through [`safe_cell`].
pub fn write_row<W: Write, S: AsRef<str>>(
    w: &mut csv::Writer<W>,
    cells: impl IntoIterator<Item = S>,
) -> Result<(), csv::Error> {
    w.write_record(
        cells
            .into_iter()
            .map(|c| safe_cell(c.as_ref()).into_owned()),
    )
}

/// The inner writer back once everything is flushed.
pub fn finish<W: Write>(w: csv::Writer<W>) -> Result<W, csv::Error> {
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_numbers_kept() {
        for (cell, written) in [
            ("=1+1", "'=1+1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
            ("-2+3", "'-2+3"),
            ("\t=1", "'\t=1"),
            ("\r=1", "'\r=1"),
            ("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
            ("-1.5", "-1.5"),
            ("-2e20", "-2e20"),
            ("+3", "+3"),
            ("-inf", "-inf"),
            ("full-jitter", "full-jitter"),
            ("a=b", "a=b"),
            ("", ""),
            ("'=1", "'=1"),
        ] {
            assert_eq!(safe_cell(cell), written, "{cell:?}");
            // Writing twice changes nothing more.
            assert_eq!(safe_cell(&safe_cell(cell)), written, "{cell:?}");
        }
    }

    #[test]
    fn every_cell_of_a_row_goes_through_it() {
        let mut w = writer(Vec::new());
        write_row(&mut w, ["policy", "=1+1"]).unwrap();
        write_row(&mut w, ["@x", "-1.5"]).unwrap();
        let text = String::from_utf8(finish(w).unwrap()).unwrap();
        assert_eq!(text, "policy,'=1+1\n'@x,-1.5\n");
    }
}
