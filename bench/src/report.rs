//! The report: every figure of a run, its ratios (computed within the run) and where it was
//! measured; written as JSON, Markdown and an SVG chart under the output directory, each also
//! copied as `latest.*`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Serialize;

use crate::ceiling;
use crate::consumer;
use crate::cpu::{CpuPerOp, CpuSplit};
use crate::duplicates::Duplicates;
use crate::machine::Machine;
use crate::markdown;
use crate::rest::{ClosedLoop, OpenLoop};
use crate::stats::{Latency, Series, median, ratio};
use crate::svg::{Line, line_chart};

#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub orders: usize,
    pub clients: usize,
    pub duplicate_share: f64,
    pub duration_s: f64,
    pub repetitions: u32,
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
    pub ceiling: Series,
    pub dedup_table: Series,
    /// Rows written per committed payment transaction (pg_stat), per design.
    pub rows_per_payment: RowsPerPayment,
    pub consumer: ConsumerSummary,
    pub rest: RestSummary,
    pub ratios: Ratios,
    pub duplicates: Duplicates,
    pub resources: Resources,
    pub scaling: Option<Scaling>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RowsPerPayment {
    pub natural: f64,
    pub dedup_table: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerSummary {
    pub series: Series,
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

#[derive(Debug, Clone, Serialize)]
pub struct Ratios {
    pub consumer_over_ceiling: Option<f64>,
    pub rest_over_ceiling: Option<f64>,
    pub natural_over_dedup_table: Option<f64>,
}

impl Ratios {
    pub fn of(ceiling: &Series, dedup: &Series, consumer: &Series, rest: &Series) -> Self {
        Self {
            consumer_over_ceiling: ratio(consumer.median, ceiling.median),
            rest_over_ceiling: ratio(rest.median, ceiling.median),
            natural_over_dedup_table: ratio(ceiling.median, dedup.median),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Resources {
    /// Highest `VmHWM` of any service process of the run.
    pub peak_rss_mib: f64,
    pub consumer_cpu_s_per_1000_messages: Option<f64>,
    pub rest_cpu_s_per_1000_requests: Option<f64>,
    /// Where the machine's CPU went during the timed consumer and REST runs.
    pub cpu_split: CpuSplit,
    /// Share of the machine used by processes other than the service, Postgres, RabbitMQ and
    /// the bench during those runs: how much the measurement was disturbed.
    pub other_load_share: f64,
    /// CPU one operation costs, by process (median of repetitions): on a saturated machine,
    /// throughput is the cores divided by this.
    pub cpu_per_operation: CpuTable,
}

#[derive(Debug, Clone, Serialize)]
pub struct CpuTable {
    pub ceiling: CpuPerOp,
    pub dedup_table: CpuPerOp,
    pub consumer: CpuPerOp,
    pub rest: CpuPerOp,
}

impl Resources {
    pub fn of(
        ceiling: (&[ceiling::Run], &[ceiling::Run]),
        consumer: &[consumer::Run],
        rest: &[ClosedLoop],
        peak_rss_kib: u64,
    ) -> Self {
        let transactions = |runs: &[ceiling::Run]| {
            CpuPerOp::median_of(
                &runs
                    .iter()
                    .map(|r| r.cpu.per_op(r.transactions))
                    .collect::<Vec<_>>(),
            )
        };
        let cpu_per_operation = CpuTable {
            ceiling: transactions(ceiling.0),
            dedup_table: transactions(ceiling.1),
            consumer: CpuPerOp::median_of(
                &consumer
                    .iter()
                    .map(|r| r.cpu.per_op(r.deliveries))
                    .collect::<Vec<_>>(),
            ),
            rest: CpuPerOp::median_of(
                &rest
                    .iter()
                    .map(|r| r.cpu.per_op(r.requests))
                    .collect::<Vec<_>>(),
            ),
        };
        let mut cpu_split = CpuSplit::default();
        for split in consumer
            .iter()
            .map(|r| &r.cpu)
            .chain(rest.iter().map(|r| &r.cpu))
        {
            cpu_split.add(split);
        }
        Self {
            peak_rss_mib: peak_rss_kib as f64 / 1024.0,
            consumer_cpu_s_per_1000_messages: median(
                &consumer
                    .iter()
                    .map(|r| r.cpu_s_per_1000)
                    .collect::<Vec<_>>(),
            ),
            rest_cpu_s_per_1000_requests: median(
                &rest.iter().map(|r| r.cpu_s_per_1000).collect::<Vec<_>>(),
            ),
            other_load_share: cpu_split.other_share(),
            cpu_split,
            cpu_per_operation,
        }
    }
}

/// Throughput at each concurrency level (ceiling connections, consumer prefetch, REST clients).
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub levels: Vec<usize>,
    pub ceiling_tx_per_s: Vec<f64>,
    pub consumer_msgs_per_s: Vec<f64>,
    pub rest_req_per_s: Vec<f64>,
}

impl Scaling {
    pub fn svg(&self) -> String {
        let line = |label, color, values: &[f64]| Line {
            label,
            color,
            values: values.iter().map(|v| Some(*v)).collect(),
        };
        line_chart(
            "order-service throughput by concurrency",
            "concurrency (ceiling connections · consumer prefetch · REST clients)",
            "per second",
            &self.levels,
            &[
                line("ceiling (raw SQL, tx/s)", "#1f77b4", &self.ceiling_tx_per_s),
                line("consumer (msgs/s)", "#2ca02c", &self.consumer_msgs_per_s),
                line("REST (req/s)", "#d62728", &self.rest_req_per_s),
            ],
        )
    }
}

/// The files a report was written to.
pub struct Written {
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub svg: Option<PathBuf>,
}

impl Report {
    /// Writes `<stamp>.json`, `<stamp>.md` and `<stamp>-scaling.svg` into `dir`, and copies them
    /// as `latest.json`, `latest.md` and `latest.svg`.
    pub fn write(&self, dir: &Path, stamp: &str) -> anyhow::Result<Written> {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let json = serde_json::to_string_pretty(self)? + "\n";
        let svg = self.scaling.as_ref().map(Scaling::svg);
        let mut written = None;
        for (name, svg_name) in [
            (stamp.to_owned(), format!("{stamp}-scaling.svg")),
            ("latest".to_owned(), "latest.svg".to_owned()),
        ] {
            let json_path = dir.join(format!("{name}.json"));
            let md_path = dir.join(format!("{name}.md"));
            std::fs::write(&json_path, &json)?;
            let svg_ref = svg.as_ref().map(|_| svg_name.as_str());
            std::fs::write(&md_path, markdown::render(self, svg_ref))?;
            let svg_path = match &svg {
                Some(svg) => {
                    let path = dir.join(&svg_name);
                    std::fs::write(&path, svg)?;
                    Some(path)
                }
                None => None,
            };
            written.get_or_insert(Written {
                json: json_path,
                markdown: md_path,
                svg: svg_path,
            });
        }
        written.context("nothing written")
    }
}

#[cfg(test)]
mod tests {
    use crate::sample::sample;

    #[test]
    fn ratios_compare_medians_of_the_same_run() {
        let report = sample();
        assert_eq!(report.ratios.consumer_over_ceiling, Some(0.8));
        assert_eq!(report.ratios.rest_over_ceiling, Some(0.62));
        assert_eq!(report.ratios.natural_over_dedup_table, Some(1000.0 / 850.0));
    }

    #[test]
    fn the_json_has_the_keys_the_smoke_test_and_readers_rely_on() {
        let json = serde_json::to_value(sample()).expect("serializable");
        for key in [
            "machine",
            "ceiling",
            "dedup_table",
            "consumer",
            "rest",
            "ratios",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
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
            "latest.json",
            "latest.md",
            "latest.svg",
        ] {
            assert!(dir.join(name).is_file(), "{name} missing");
        }
        let latest = std::fs::read_to_string(dir.join("latest.md")).expect("latest.md");
        assert!(latest.contains("![scaling](latest.svg)"));
        assert!(
            std::fs::read_to_string(written.markdown)
                .expect("stamped md")
                .contains("![scaling](20261122T000000Z-scaling.svg)")
        );
        std::fs::remove_dir_all(dir).expect("cleanup");
    }
}
