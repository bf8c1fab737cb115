//! One row of a sweep's or a map's table, stored compactly.

use std::ops::Index;

/// The cells of one table row: their text end to end in one buffer, with
/// where each ends. One allocation a row, and no slack, instead of one a
/// cell: a sweep of 100 k points holds 100 k rows of some forty cells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Row {
    text: Box<str>,
    /// `ends[i]`: the byte offset in `text` just past cell `i`.
    ends: Box<[u32]>,
}

impl Row {
    /// Number of cells.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the row has no cells.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Cell `i`, if the row has it.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        Some(&self.text[start..end])
    }

    /// The cells, first to last.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

impl Index<usize> for Row {
    type Output = str;

    fn index(&self, i: usize) -> &str {
        match self.get(i) {
            Some(cell) => cell,
            None => panic!("cell {i} of a row of {}", self.len()),
        }
    }
}

impl<S: AsRef<str>> FromIterator<S> for Row {
    fn from_iter<I: IntoIterator<Item = S>>(cells: I) -> Row {
        let mut text = String::new();
        let mut ends = Vec::new();
        for c in cells {
            text.push_str(c.as_ref());
            let end = u32::try_from(text.len()).expect("a table row under 4 GiB");
            ends.push(end);
        }
        Row {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A row gives back exactly the cells it was built from, empty
        /// cells and multi-byte text included.
        #[test]
        fn cells_round_trip(cells in proptest::collection::vec(".{0,6}", 0..12)) {
            let row: Row = cells.iter().collect();
            prop_assert_eq!(row.len(), cells.len());
            prop_assert!(row.iter().eq(cells.iter().map(String::as_str)));
            for (i, c) in cells.iter().enumerate() {
                prop_assert_eq!(&row[i], c.as_str());
            }
            prop_assert_eq!(row.get(cells.len()), None);
        }
    }
}
