//! Writes a report's files: JSON, Markdown and the SVG charts under the output directory, each
//! also copied as `latest.*`.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::charts;
use crate::markdown::{self, Charts};
use crate::report::Report;

/// The files a report was written to.
pub struct Written {
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub svgs: Vec<PathBuf>,
}

/// Writes `<stamp>.json`, `<stamp>.md`, `<stamp>-scaling.svg` and `<stamp>-batch.svg` into `dir`,
/// and copies them as `latest.json`, `latest.md`, `latest.svg` and `latest-batch.svg`.
pub fn write(report: &Report, dir: &Path, stamp: &str) -> anyhow::Result<Written> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let json = serde_json::to_string_pretty(report)? + "\n";
    let scaling = report.scaling.as_ref().map(charts::scaling);
    let batch = report.batch_curve.as_ref().map(charts::batch);
    let mut written = None;
    for (name, scaling_name, batch_name) in [
        (
            stamp.to_owned(),
            format!("{stamp}-scaling.svg"),
            format!("{stamp}-batch.svg"),
        ),
        (
            "latest".to_owned(),
            "latest.svg".to_owned(),
            "latest-batch.svg".to_owned(),
        ),
    ] {
        let json_path = dir.join(format!("{name}.json"));
        let md_path = dir.join(format!("{name}.md"));
        std::fs::write(&json_path, &json)?;
        let mut svgs = vec![];
        let charts = Charts {
            scaling: write_chart(dir, scaling.as_deref(), &scaling_name, &mut svgs)?,
            batch: write_chart(dir, batch.as_deref(), &batch_name, &mut svgs)?,
        };
        std::fs::write(&md_path, markdown::render(report, charts))?;
        written.get_or_insert(Written {
            json: json_path,
            markdown: md_path,
            svgs,
        });
    }
    written.context("nothing written")
}

/// Writes `svg` (if any) as `dir/file`; returns the name to link.
fn write_chart<'a>(
    dir: &Path,
    svg: Option<&str>,
    file: &'a str,
    written: &mut Vec<PathBuf>,
) -> std::io::Result<Option<&'a str>> {
    let Some(svg) = svg else {
        return Ok(None);
    };
    let path = dir.join(file);
    std::fs::write(&path, svg)?;
    written.push(path);
    Ok(Some(file))
}

#[cfg(test)]
mod tests {
    use crate::sample::sample;

    #[test]
    fn writing_a_report_makes_the_stamped_files_and_the_latest_copies() {
        let dir = std::env::temp_dir().join(format!("bench-report-{}", uuid::Uuid::new_v4()));
        let written = super::write(&sample(), &dir, "20261122T000000Z").expect("written");
        for name in [
            "20261122T000000Z.json",
            "20261122T000000Z.md",
            "20261122T000000Z-scaling.svg",
            "20261122T000000Z-batch.svg",
            "latest.json",
            "latest.md",
            "latest.svg",
            "latest-batch.svg",
        ] {
            assert!(dir.join(name).is_file(), "{name} missing");
        }
        assert_eq!(written.svgs.len(), 2);
        let latest = std::fs::read_to_string(dir.join("latest.md")).expect("latest.md");
        assert!(latest.contains("![scaling](latest.svg)"));
        assert!(latest.contains("![batch size](latest-batch.svg)"));
        assert!(
            std::fs::read_to_string(written.markdown)
                .expect("stamped md")
                .contains("![scaling](20261122T000000Z-scaling.svg)")
        );
        std::fs::remove_dir_all(dir).expect("cleanup");
    }
}
