//! The report: every figure of a run, its ratios (computed within the run) and where it was
//! measured. Data only: `output.rs` writes it as JSON, Markdown (`markdown.rs`) and SVG charts
//! (`charts.rs`).

use serde::Serialize;

use crate::consumer;
use crate::costs::Resources;
use crate::cpu::CpuPerOp;
use crate::duplicates::Duplicates;
use crate::machine::Machine;
use crate::ratios::Ratios;
use crate::rest::{ClosedLoop, OpenLoop};
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
    /// The design's minimal SQL: the application layer's read and guarded write, autocommit,
    /// nothing published, payments/s.
    pub app_layer: Series,
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
    pub app_layer: f64,
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

/// Throughput at each concurrency level.
#[derive(Debug, Clone, Serialize)]
pub struct Scaling {
    pub levels: Vec<usize>,
    pub reference_tx_per_s: Vec<f64>,
    pub consumer_msgs_per_s: Vec<f64>,
    pub rest_req_per_s: Vec<f64>,
}

/// Throughput and CPU at each batch size.
#[derive(Debug, Clone, Serialize)]
pub struct BatchCurve {
    pub sizes: Vec<usize>,
    /// Payment deliveries per second, duplicates included.
    pub consumer_msgs_per_s: Vec<f64>,
    pub natural_msgs_per_s: Vec<f64>,
    /// Service CPU seconds per 1 000 consumed messages.
    pub consumer_service_cpu_s_per_1000: Vec<f64>,
    /// CPU per message by process (ms per message = s per 1 000 messages).
    pub consumer_cpu_per_message: Vec<CpuPerOp>,
    pub natural_cpu_per_message: Vec<CpuPerOp>,
    /// The side-by-side median of the one-statement reference, drawn as a level line.
    pub reference_tx_per_s: Option<f64>,
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
            "app_layer",
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
}
