//! The report: every figure of a run, its ratios (computed within the run) and where it was
//! measured; written as JSON, Markdown and an SVG chart under the output directory, each also
//! copied as `latest.*`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::batch_curve::BatchCurve;
use crate::consumer;
use crate::costs::Resources;
use crate::duplicates::Duplicates;
use crate::machine::Machine;
use crate::markdown;
use crate::ratios::Ratios;
use crate::rest::{ClosedLoop, OpenLoop};
use crate::scaling::Scaling;
use crate::stats::{Latency, Series};

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub orders: usize,
    pub clients: usize,
    pub duplicate_share: f64,
    pub duration_s: f64,
    pub repetitions: u32,
    /// Deliveries per transaction of the batched raw designs.
    pub batch_size: usize,
    pub service_prefetch: u16,
    pub service_pool: u32,
    pub service_bin: String,
    /// `--service-env` overrides of the service's defaults.
    pub service_env: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub started_at: String,
    pub command: String,
    pub elapsed_s: f64,
    pub machine: Machine,
    pub settings: Settings,
    /// The headline reference: one data-modifying statement per payment, tx/s.
    pub reference: Series,
    /// The older ceiling: the service's multi-statement transaction in raw SQL, tx/s.
    pub ceiling: Series,
    pub batched: BatchedSummary,
    /// Rows written per applied payment (pg_stat), per design.
    pub rows_per_payment: RowsPerPayment,
    pub consumer: ConsumerSummary,
    pub rest: RestSummary,
    pub ratios: Ratios,
    pub duplicates: Duplicates,
    pub resources: Resources,
    pub scaling: Option<Scaling>,
    pub batch_curve: Option<BatchCurve>,
}

/// Natural and dedup-table designs batched identically, payment deliveries per second
/// (duplicates included).
#[derive(Debug, Clone, Serialize)]
pub struct BatchedSummary {
    pub batch_size: usize,
    pub natural: Series,
    pub dedup_table: Series,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowsPerPayment {
    pub reference: f64,
    pub ceiling: f64,
    pub natural_batched: f64,
    pub dedup_table_batched: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerSummary {
    /// Payment deliveries per second, duplicates included.
    pub series: Series,
    /// Payments that took effect per second.
    pub applied: Series,
    pub runs: Vec<consumer::Run>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RestSummary {
    pub series: Series,
    pub latency: Option<Latency>,
    pub open_loop_target_per_s: Option<f64>,
    pub open_loop_latency: Option<Latency>,
    pub errors: u64,
    pub runs: Vec<ClosedLoop>,
    pub open_loop_runs: Vec<OpenLoop>,
}

/// The files a report was written to.
pub struct Written {
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub svgs: Vec<PathBuf>,
}

/// The chart files beside a Markdown report, by file name; `None` when the curve was skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Charts<'a> {
    pub scaling: Option<&'a str>,
    pub batch: Option<&'a str>,
}

impl Report {
    /// Writes `<stamp>.json`, `<stamp>.md`, `<stamp>-scaling.svg` and `<stamp>-batch.svg` into
    /// `dir`, and copies them as `latest.json`, `latest.md`, `latest.svg` and `latest-batch.svg`.
    pub fn write(&self, dir: &Path, stamp: &str) -> anyhow::Result<Written> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let json = serde_json::to_string_pretty(self)? + "\n";
        let scaling = self.scaling.as_ref().map(Scaling::svg);
        let batch = self.batch_curve.as_ref().map(BatchCurve::svg);
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
            std::fs::write(&md_path, markdown::render(self, charts))?;
            written.get_or_insert(Written {
                json: json_path,
                markdown: md_path,
                svgs,
            });
        }
        written.context("nothing written")
    }
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
    fn the_json_has_the_keys_the_smoke_test_and_readers_rely_on() {
        let json = serde_json::to_value(sample()).expect("serializable");
        for key in [
            "machine",
            "reference",
            "ceiling",
            "batched",
            "consumer",
            "rest",
            "ratios",
            "batch_curve",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["batched"]["dedup_table"]["median"], 4000.0);
        assert_eq!(json["duplicates"]["amqp"]["rows_per_duplicate"], 0.0);
        assert_eq!(json["resources"]["peak_rss_mib"], 30.5);
    }

    #[test]
    fn writing_a_report_makes_the_stamped_files_and_the_latest_copies() {
        let dir = std::env::temp_dir().join(format!("bench-report-{}", uuid::Uuid::new_v4()));
        let written = sample().write(&dir, "20261122T000000Z").expect("written");
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
