//! The batch-size curve: the consumer with `AMQP_BATCH_SIZE` = 1, 4, 16, 64 (the service's own
//! batching, set through its environment) next to the natural raw design batched identically,
//! one shorter run per point, interleaved size by size; with what a message cost in CPU at each
//! size (drawn by `charts.rs`, tabulated by `markdown.rs`).

use crate::Bench;
use crate::batched::Dedup;
use crate::consumer;
use crate::raw::{self, Design};
use crate::report::BatchCurve;
use crate::scratch::Db;
use crate::service::Overrides;

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
