//! What the run cost: the service's peak memory, its CPU per 1 000 messages and requests, where
//! the machine's CPU went during the timed door runs, and the CPU one operation of each
//! measurement took by process (median of repetitions).

use serde::Serialize;

use crate::consumer;
use crate::cpu::{CpuPerOp, CpuSplit};
use crate::raw;
use crate::rest::ClosedLoop;
use crate::stats::median;

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

/// CPU per transaction (unbatched raw designs), per delivery (batched designs, consumer) or per
/// request (REST).
#[derive(Debug, Clone, Serialize)]
pub struct CpuTable {
    pub reference: CpuPerOp,
    pub ceiling: CpuPerOp,
    pub app_layer: CpuPerOp,
    pub natural_batched: CpuPerOp,
    pub dedup_table_batched: CpuPerOp,
    pub consumer: CpuPerOp,
    pub rest: CpuPerOp,
}

fn per_op<T>(runs: &[T], op: impl Fn(&T) -> CpuPerOp) -> CpuPerOp {
    CpuPerOp::median_of(&runs.iter().map(op).collect::<Vec<_>>())
}

impl Resources {
    pub fn of(
        raw: &raw::Runs,
        consumer: &[consumer::Run],
        rest: &[ClosedLoop],
        peak_rss_kib: u64,
    ) -> Self {
        let per_delivery = |runs: &[raw::Run]| per_op(runs, |r| r.cpu.per_op(r.deliveries));
        let cpu_per_operation = CpuTable {
            reference: per_delivery(&raw.reference),
            ceiling: per_delivery(&raw.ceiling),
            app_layer: per_delivery(&raw.app_layer),
            natural_batched: per_delivery(&raw.natural),
            dedup_table_batched: per_delivery(&raw.dedup_table),
            consumer: per_op(consumer, |r| r.cpu.per_op(r.deliveries)),
            rest: per_op(rest, |r| r.cpu.per_op(r.requests)),
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
