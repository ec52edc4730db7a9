//! The last lines of a log file, for a failure report.

use std::path::Path;

/// The last `lines` lines of the file at `path`, joined by newlines; empty if it cannot be read.
pub fn log_tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(lines).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
}
