//! Plain-text tables and fields for people: columns padded to their widest cell, and every value
//! written without its control characters (a dead letter's reason or body is anyone's text, and
//! an escape sequence in it must not rewrite the operator's terminal).

use crate::telemetry::escaped;

/// A table with a header row; `render` pads each column to its widest cell.
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Self {
        Self {
            rows: vec![header.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// Adds a row; each cell is put on one line, its control characters escaped.
    pub fn row(&mut self, cells: &[&str]) {
        self.rows
            .push(cells.iter().map(|c| escaped(c).to_string()).collect());
    }

    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (cell, width) in row.iter().zip(&widths) {
                line.push_str(&format!("{cell:<width$}  "));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `text` cut to `max` characters, marked with `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// Multi-line text as it may be printed: its lines kept, every other control character escaped.
pub fn printable(text: &str) -> String {
    text.split('\n')
        .map(|line| escaped(line).to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_to_their_widest_cell() {
        let mut table = Table::new(&["ID", "REASON"]);
        table.row(&["a", "poison: x"]);
        table.row(&["abcd", "conflict: y"]);
        assert_eq!(
            table.render(),
            "ID    REASON\na     poison: x\nabcd  conflict: y\n"
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let mut table = Table::new(&["REASON"]);
        table.row(&["a\nb\u{1b}[31m"]);
        assert_eq!(table.render(), "REASON\na\\nb\\u{1b}[31m\n");
        assert_eq!(printable("one\ntwo\u{1b}"), "one\ntwo\\u{1b}");
    }

    #[test]
    fn long_text_is_cut_and_marked() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdef", 4), "abc…");
    }
}
