//! The one CSV writer of the reports, and the way a file declares its
//! columns: a list of [`Column`]s, each a name and how to read its cell
//! from a row, so that the header and the rows come from one declaration
//! and cannot drift apart. Cells are typed ([`Cell`]): a number is written
//! by the one number rule ([`crate::decimal::num`]; missing or not finite:
//! an empty cell), text through [`crate::csv_text::safe_cell`].
//!
//! Files whose columns depend on the run (the summary files' blocks and
//! optional columns, `sweep.csv`'s axes) build their header and rows from
//! the column tables of `crate::metrics::columns` and write them with
//! [`write`].

pub use crate::metrics::columns::Cell;
use std::io::Write;

/// One column of a file: its name in the header and its cell in a row.
pub struct Column<R> {
    /// The column's name in the header.
    pub name: &'static str,
    /// The cell of one row.
    pub cell: fn(&R) -> Cell,
}

/// A number cell.
pub fn num(x: f64) -> Cell {
    Cell::Num(Some(x))
}

/// A whole-number cell (a count, an index), written as its digits.
pub fn int(n: impl ToString) -> Cell {
    Cell::Text(n.to_string())
}

/// A text cell.
pub fn text(s: impl Into<String>) -> Cell {
    Cell::Text(s.into())
}

/// Writes `header` and `rows` as CSV into `out` (`\n` line ends) and
/// returns it.
pub fn write<W: Write, S: AsRef<str>, C: AsRef<str>>(
    out: W,
    header: &[S],
    rows: impl Iterator<Item = impl IntoIterator<Item = C>>,
) -> Result<W, csv::Error> {
    let mut w = crate::csv_text::writer(out);
    crate::csv_text::write_row(&mut w, header)?;
    for row in rows {
        crate::csv_text::write_row(&mut w, row)?;
    }
    crate::csv_text::finish(w)
}

/// [`write`] into memory.
pub fn bytes<S: AsRef<str>, C: AsRef<str>>(
    header: &[S],
    rows: impl Iterator<Item = impl IntoIterator<Item = C>>,
) -> Result<Vec<u8>, csv::Error> {
    write(Vec::new(), header, rows)
}

/// The CSV bytes of a table of text cells (`sweep.csv`, `map.csv`: tables
/// that `merge` reads back and writes again, byte for byte).
pub fn text_table(table: &crate::sweep::Table) -> Result<Vec<u8>, csv::Error> {
    bytes(&table.header, table.rows.iter().map(|r| r.iter()))
}

/// The file `columns` declare, one line per row.
pub fn table<'r, R: 'r>(
    columns: &'r [Column<R>],
    rows: impl IntoIterator<Item = &'r R> + 'r,
) -> Result<Vec<u8>, csv::Error> {
    bytes(&header(columns), cells(columns, rows))
}

/// [`table`] streamed into `out` (`schedule --csv`, on standard output).
pub fn write_table<'r, W: Write, R: 'r>(
    out: W,
    columns: &'r [Column<R>],
    rows: impl IntoIterator<Item = &'r R> + 'r,
) -> Result<W, csv::Error> {
    write(out, &header(columns), cells(columns, rows))
}

/// The header `columns` declare.
fn header<R>(columns: &[Column<R>]) -> Vec<&'static str> {
    columns.iter().map(|c| c.name).collect()
}

/// The rows' cells as text.
fn cells<'a, R: 'a>(
    columns: &'a [Column<R>],
    rows: impl IntoIterator<Item = &'a R> + 'a,
) -> impl Iterator<Item = Vec<String>> + 'a {
    rows.into_iter()
        .map(move |r| columns.iter().map(|c| (c.cell)(r).csv()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R(&'static str, f64);

    const COLS: &[Column<R>] = &[
        Column {
            name: "name",
            cell: |r| text(r.0),
        },
        Column {
            name: "x",
            cell: |r| num(r.1),
        },
    ];

    #[test]
    fn header_and_rows_come_from_one_declaration() {
        let rows = [R("=a", 1.0 / 3.0), R("b", f64::NAN)];
        let text = String::from_utf8(table(COLS, &rows).unwrap()).unwrap();
        // Numbers by the one rule (NaN is an empty cell), text made safe.
        assert_eq!(text, "name,x\n'=a,0.333333\nb,\n");
        let streamed = write_table(Vec::new(), COLS, &rows).unwrap();
        assert_eq!(String::from_utf8(streamed).unwrap(), text);
    }
}
