//! Numbers and tables as the reports write them: whole rates, ratios, seconds, and the table of a
//! curve. Text only: it knows nothing of what was measured.

use std::fmt::Write;

/// A rate, whole.
pub(crate) fn num(value: f64) -> String {
    format!("{value:.0}")
}

/// A ratio, or `n/a`.
pub(crate) fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.2}×"))
}

/// Seconds, or `n/a`.
pub(crate) fn secs(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.3} s"))
}

/// A curve's section: its chart (when written) and a table with a column per level.
pub(crate) fn curve_table(
    title: &str,
    svg: Option<&str>,
    header: &str,
    levels: &[usize],
    rows: &[(&str, Vec<String>)],
) -> String {
    let mut md = format!("\n## {title}\n\n");
    if let Some(svg) = svg {
        let _ = writeln!(md, "![{}]({svg})\n", title.to_lowercase());
    }
    let _ = write!(md, "| {header} |");
    for level in levels {
        let _ = write!(md, " {level} |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(levels.len()));
    md.push('\n');
    for (name, values) in rows {
        let _ = writeln!(md, "| {name} | {} |", values.join(" | "));
    }
    md
}
