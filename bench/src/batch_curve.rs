//! The batch-size curve: the consumer with `AMQP_BATCH_SIZE` = 1, 4, 16, 64 (the service's own
//! batching, set through its environment) next to the natural raw design batched identically,
//! one shorter run per point, interleaved size by size; with what a message cost in CPU at each
//! size. Drawn as an SVG chart (with the one-statement reference's median as a level line) and a
//! Markdown table.

use serde::Serialize;

use crate::Bench;
use crate::batched::Dedup;
use crate::consumer;
use crate::cpu::CpuPerOp;
use crate::markdown::{curve_table, num};
use crate::raw::{self, Design};
use crate::scratch::Db;
use crate::service::Overrides;
use crate::svg::{Line, line_chart};

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

/// One raw and one consumer run per batch size.
pub async fn measure(
    bench: &Bench,
    raw_db: &Db,
    reference_tx_per_s: Option<f64>,
) -> anyhow::Result<BatchCurve> {
    let plan = &bench.plan;
    let mut curve = BatchCurve {
        sizes: plan.batch_sizes.clone(),
        consumer_msgs_per_s: vec![],
        natural_msgs_per_s: vec![],
        consumer_service_cpu_s_per_1000: vec![],
        consumer_cpu_per_message: vec![],
        natural_cpu_per_message: vec![],
        reference_tx_per_s,
    };
    for &size in &plan.batch_sizes {
        let design = Design::Batched(Dedup::Natural, size);
        let share = plan.duplicate_share;
        let run = raw::run(raw_db, design, plan.clients, plan.curve_duration, share).await?;
        eprintln!(
            "batch curve: raw natural, batches of {size}: {:.0} msgs/s",
            run.per_s
        );
        curve.natural_msgs_per_s.push(run.per_s);
        curve
            .natural_cpu_per_message
            .push(run.cpu.per_op(run.deliveries));

        let overrides = Overrides {
            prefetch: None,
            batch_size: Some(size),
        };
        let label = format!("batch{size}");
        let run = consumer::run(bench, &label, plan.curve_orders, overrides).await?;
        eprintln!(
            "batch curve: consumer, AMQP_BATCH_SIZE={size}: {:.0} msgs/s",
            run.msgs_per_s
        );
        curve.consumer_msgs_per_s.push(run.msgs_per_s);
        curve
            .consumer_service_cpu_s_per_1000
            .push(run.cpu_s_per_1000);
        curve
            .consumer_cpu_per_message
            .push(run.cpu.per_op(run.deliveries));
    }
    Ok(curve)
}

impl BatchCurve {
    pub fn svg(&self) -> String {
        let mut lines = vec![
            Line::of(
                "consumer (payments/s)",
                "#2ca02c",
                &self.consumer_msgs_per_s,
            ),
            Line::of(
                "raw natural (payments/s)",
                "#9467bd",
                &self.natural_msgs_per_s,
            ),
        ];
        if let Some(reference) = self.reference_tx_per_s {
            let level = vec![reference; self.sizes.len()];
            lines.push(Line::of("reference (tx/s)", "#1f77b4", &level));
        }
        line_chart(
            "payments per second by batch size",
            "deliveries per transaction (consumer AMQP_BATCH_SIZE · raw batch)",
            "per second",
            &self.sizes,
            &lines,
        )
    }

    /// The Markdown section; `svg` is the chart's file name beside the report, if written.
    pub fn markdown(&self, svg: Option<&str>) -> String {
        let values = |v: &[f64]| v.iter().map(|v| num(*v)).collect();
        let secs = |v: Vec<f64>| v.iter().map(|v| format!("{v:.3}")).collect();
        let total = |v: &[CpuPerOp]| secs(v.iter().map(|c| c.total_ms).collect());
        let postgres = |v: &[CpuPerOp]| secs(v.iter().map(|c| c.postgres_ms).collect());
        curve_table(
            "Batch size",
            svg,
            "deliveries per transaction",
            &self.sizes,
            &[
                ("consumer payments/s", values(&self.consumer_msgs_per_s)),
                ("raw natural payments/s", values(&self.natural_msgs_per_s)),
                (
                    "consumer: service CPU s per 1 000 msgs",
                    secs(self.consumer_service_cpu_s_per_1000.clone()),
                ),
                (
                    "consumer: Postgres CPU s per 1 000 msgs",
                    postgres(&self.consumer_cpu_per_message),
                ),
                (
                    "consumer: all CPU s per 1 000 msgs",
                    total(&self.consumer_cpu_per_message),
                ),
                (
                    "raw natural: Postgres CPU s per 1 000 msgs",
                    postgres(&self.natural_cpu_per_message),
                ),
                (
                    "raw natural: all CPU s per 1 000 msgs",
                    total(&self.natural_cpu_per_message),
                ),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::sample::sample;

    #[test]
    fn the_chart_has_both_batched_lines_and_the_reference_as_a_level() {
        let mut curve = sample().batch_curve.expect("a batch curve");
        let svg = curve.svg();
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(svg.contains(">64</text>") && svg.contains("reference (tx/s)"));
        curve.reference_tx_per_s = None;
        assert_eq!(curve.svg().matches("<polyline").count(), 2);
    }
}
