//! A small, complete report for the rendering tests (test builds only).

use crate::costs::{CpuTable, Resources};
use crate::cpu::{CpuPerOp, CpuSplit};
use crate::duplicates::{Cost, Duplicates};
use crate::machine::Machine;
use crate::ratios::{Measured, Ratios};
use crate::report::{
    BatchCurve, BatchedSummary, ConsumerSummary, Report, RestSummary, RowsPerPayment, Scaling,
    Settings,
};
use crate::stats::{Latency, Series};

pub fn sample() -> Report {
    let latency = Latency {
        p50_ms: 4.2,
        p90_ms: 7.5,
        p99_ms: 12.3,
        max_ms: 40.0,
        samples: 5_000,
    };
    let no_writes = Cost {
        duplicates: 3_000,
        rows_written: 0,
        rows_per_duplicate: 0.0,
        by_table: [("orders".to_owned(), 0)].into(),
    };
    let reference = Series::new("tx/s", vec![2_000.0, 2_100.0, 1_900.0]);
    let ceiling = Series::new("tx/s", vec![1_000.0, 1_100.0, 900.0]);
    let app_layer = Series::new("payments/s", vec![1_200.0, 1_250.0, 1_150.0]);
    let batched = BatchedSummary {
        batch_size: 32,
        natural: Series::new("payments/s", vec![5_000.0, 5_100.0, 4_900.0]),
        dedup_table: Series::new("payments/s", vec![4_000.0, 4_100.0, 3_900.0]),
    };
    let consumer = ConsumerSummary {
        series: Series::new("payments/s", vec![800.0, 750.0, 820.0]),
        applied: Series::new("payments/s", vec![640.0, 600.0, 656.0]),
        runs: vec![],
    };
    let rest = Series::new("req/s", vec![600.0, 640.0, 620.0]);
    Report {
        started_at: "2026-11-22T00:00:00Z".into(),
        command: "./target/release/order-service-bench".into(),
        elapsed_s: 200.0,
        machine: Machine {
            cores: 2,
            cpu: "Test CPU".into(),
            memory_mib: 24_105,
            kernel: "6.1".into(),
            postgres: "15.20".into(),
            postgres_settings: "fsync=on".into(),
            rabbitmq: "3.10.8".into(),
            git_revision: "abc1234".into(),
            load_at_start: "0.10 0.20 0.30".into(),
            load_at_end: "1.00 0.90 0.50".into(),
        },
        settings: Settings {
            orders: 2_000,
            clients: 16,
            duplicate_share: 0.2,
            duration_s: 5.0,
            repetitions: 3,
            batch_size: 32,
            service_prefetch: 64,
            service_pool: 16,
            service_bin: "target/release/order-service".into(),
            service_env: vec![],
        },
        ratios: Ratios::of(&Measured {
            reference: &reference,
            ceiling: &ceiling,
            app_layer: &app_layer,
            natural: &batched.natural,
            dedup_table: &batched.dedup_table,
            consumer: &consumer.series,
            applied: &consumer.applied,
            rest: &rest,
        }),
        rows_per_payment: RowsPerPayment {
            reference: 4.0,
            ceiling: 4.0,
            app_layer: 4.0,
            natural_batched: 4.0,
            dedup_table_batched: 5.0,
        },
        reference,
        ceiling,
        app_layer,
        batched,
        consumer,
        rest: RestSummary {
            series: rest,
            latency: Some(latency),
            open_loop_target_per_s: Some(310.0),
            open_loop_latency: Some(latency),
            errors: 0,
            runs: vec![],
            open_loop_runs: vec![],
        },
        duplicates: Duplicates {
            amqp: no_writes.clone(),
            rest: Cost {
                duplicates: 2_000,
                ..no_writes
            },
            amqp_outcomes: [("already_applied".to_owned(), 3_000)].into(),
            rest_replayed: 2_000,
        },
        resources: Resources {
            peak_rss_mib: 30.5,
            consumer_cpu_s_per_1000_messages: Some(0.21),
            rest_cpu_s_per_1000_requests: Some(0.35),
            cpu_split: CpuSplit::default(),
            other_load_share: 0.05,
            cpu_per_operation: CpuTable {
                reference: per_op(0.0, 0.3, 0.1),
                ceiling: per_op(0.0, 0.5, 0.1),
                app_layer: per_op(0.0, 0.35, 0.15),
                natural_batched: per_op(0.0, 0.2, 0.05),
                dedup_table_batched: per_op(0.0, 0.25, 0.05),
                consumer: per_op(0.2, 0.45, 0.0),
                rest: per_op(0.3, 0.55, 0.05),
            },
        },
        scaling: Some(Scaling {
            levels: vec![1, 2, 4],
            reference_tx_per_s: vec![300.0, 550.0, 900.0],
            consumer_msgs_per_s: vec![250.0, 450.0, 700.0],
            rest_req_per_s: vec![200.0, 380.0, 600.0],
        }),
        batch_curve: Some(BatchCurve {
            sizes: vec![1, 4, 16, 64],
            consumer_msgs_per_s: vec![900.0, 1_500.0, 2_200.0, 2_400.0],
            natural_msgs_per_s: vec![1_800.0, 3_500.0, 5_000.0, 5_500.0],
            consumer_service_cpu_s_per_1000: vec![0.3, 0.2, 0.15, 0.14],
            consumer_cpu_per_message: vec![per_op(0.3, 0.5, 0.0); 4],
            natural_cpu_per_message: vec![per_op(0.0, 0.3, 0.1); 4],
            reference_tx_per_s: Some(2_000.0),
        }),
    }
}

fn per_op(service_ms: f64, postgres_ms: f64, bench_ms: f64) -> CpuPerOp {
    CpuPerOp {
        service_ms,
        postgres_ms,
        rabbitmq_ms: 0.0,
        bench_ms,
        interrupts_ms: 0.0,
        total_ms: service_ms + postgres_ms + bench_ms,
    }
}
