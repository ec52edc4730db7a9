//! A small hand-written SVG line chart: throughput against concurrency or batch size, one line
//! per door or design. The x axis is categorical (the levels, evenly spaced — 1, 2, 4, 8, 16 or
//! 1, 4, 16, 64 is a log scale), the y axis linear from zero to a round maximum.

use std::fmt::Write;

/// One line of the chart: `values[i]` belongs to the i-th level; `None` leaves a gap.
pub struct Line<'a> {
    pub label: &'a str,
    pub color: &'a str,
    pub values: Vec<Option<f64>>,
}

impl<'a> Line<'a> {
    /// A line with a value at every level.
    pub fn of(label: &'a str, color: &'a str, values: &[f64]) -> Self {
        Self {
            label,
            color,
            values: values.iter().map(|v| Some(*v)).collect(),
        }
    }
}

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 210.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;

/// The smallest 1, 2 or 5 × 10^k not below `value` (and at least 1).
pub fn round_up(value: f64) -> f64 {
    if !value.is_finite() || value <= 1.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(value.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|step| step * magnitude)
        .find(|candidate| *candidate >= value)
        .unwrap_or(10.0 * magnitude)
}

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Renders the chart as a standalone SVG document.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    levels: &[usize],
    lines: &[Line<'_>],
) -> String {
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let max = lines
        .iter()
        .flat_map(|l| l.values.iter().flatten())
        .fold(0.0f64, |a, &b| a.max(b));
    let y_max = round_up(max * 1.05);
    let x = |i: usize| {
        if levels.len() <= 1 {
            LEFT + plot_w / 2.0
        } else {
            LEFT + plot_w * i as f64 / (levels.len() - 1) as f64
        }
    };
    let y = |v: f64| TOP + plot_h * (1.0 - v / y_max);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        LEFT,
        escape(title)
    );
    // Horizontal grid lines with their values.
    for step in 0..=5 {
        let value = y_max * step as f64 / 5.0;
        let at = y(value);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 8.0,
            at + 4.0,
            format_value(value)
        );
    }
    for (i, level) in levels.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{level}</text>"#,
            x(i),
            TOP + plot_h + 18.0
        );
    }
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.1}" stroke="#333"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/>"##,
        TOP + plot_h,
        TOP + plot_h,
        LEFT + plot_w,
        TOP + plot_h
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 16.0,
        escape(x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + plot_h / 2.0,
        escape(y_label)
    );
    for (n, line) in lines.iter().enumerate() {
        let points: Vec<String> = line
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| format!("{:.1},{:.1}", x(i), y(v))))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{}" stroke-width="2.5" points="{}"/>"#,
            line.color,
            points.join(" ")
        );
        for point in &points {
            let (px, py) = point.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                svg,
                r#"<circle cx="{px}" cy="{py}" r="3.5" fill="{}"/>"#,
                line.color
            );
        }
        let legend_y = TOP + 10.0 + 22.0 * n as f64;
        let legend_x = LEFT + plot_w + 20.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{legend_x}" y1="{legend_y}" x2="{:.1}" y2="{legend_y}" stroke="{}" stroke-width="2.5"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            legend_x + 22.0,
            line.color,
            legend_x + 28.0,
            legend_y + 4.0,
            escape(line.label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn format_value(value: f64) -> String {
    if value >= 10_000.0 {
        format!("{:.0}k", value / 1_000.0)
    } else {
        format!("{value:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> String {
        line_chart(
            "Throughput <by> concurrency",
            "concurrency",
            "per second",
            &[1, 2, 4],
            &[
                Line {
                    label: "ceiling",
                    color: "#1f77b4",
                    values: vec![Some(100.0), Some(180.0), Some(260.0)],
                },
                Line {
                    label: "REST & co",
                    color: "#d62728",
                    values: vec![Some(60.0), None, Some(150.0)],
                },
            ],
        )
    }

    #[test]
    fn the_chart_is_one_svg_document_with_a_line_per_series() {
        let svg = chart();
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 5, "a gap has no marker");
    }

    #[test]
    fn text_is_escaped_and_levels_are_labelled() {
        let svg = chart();
        assert!(svg.contains("Throughput &lt;by&gt; concurrency"));
        assert!(svg.contains("REST &amp; co"));
        assert!(svg.contains(">4</text>"));
    }

    #[test]
    fn the_y_axis_ends_on_a_round_number_above_the_highest_value() {
        assert_eq!(round_up(260.0), 500.0);
        assert_eq!(round_up(1_800.0), 2_000.0);
        assert_eq!(round_up(0.0), 1.0);
        assert!(chart().contains(">500</text>"));
    }
}
