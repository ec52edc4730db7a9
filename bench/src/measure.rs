//! The order of a run: the side-by-side repetitions (the raw designs and the design's minimal SQL
//! in an order that rotates from one repetition to the next, then the consumer, then REST), the duplicates phase, the two
//! curves; and the report assembled from their medians.

use std::time::Instant;

use crate::batched::Dedup;
use crate::costs::Resources;
use crate::ratios::{Measured, Ratios};
use crate::raw::{self, Design};
use crate::report::{self, BatchedSummary, ConsumerSummary, Report, RestSummary, RowsPerPayment};
use crate::stats::{Latency, Series, median};
use crate::{Bench, batch_curve, consumer, duplicates, machine, rest, scaling};

/// Every phase of a run, and the report of it.
pub async fn all(bench: &Bench) -> anyhow::Result<Report> {
    let started = Instant::now();
    let plan = &bench.plan;
    let mut machine = machine::Machine::describe(&bench.scratch.admin).await;
    let raw_db = raw::prepare(&bench.scratch).await?;
    let mut designs = [
        Design::OneStatement,
        Design::MultiStatement,
        Design::AppLayer,
        Design::Batched(Dedup::Natural, plan.batch_size),
        Design::Batched(Dedup::Table, plan.batch_size),
    ];
    let mut raw_runs = raw::Runs::default();
    let (mut consumer_runs, mut rest_runs, mut open_runs) = (vec![], vec![], vec![]);
    let mut peak_rss_kib = 0;
    for rep in 0..plan.repetitions {
        eprintln!("repetition {} of {}", rep + 1, plan.repetitions);
        for design in designs {
            let share = plan.duplicate_share;
            let run = raw::run(&raw_db, design, plan.clients, plan.duration, share).await?;
            eprintln!(
                "  {}: {:.0}/s ({} deliveries, {} transactions, {:.2} rows per payment)",
                design.label(),
                run.per_s,
                run.deliveries,
                run.transactions,
                run.rows_per_payment
            );
            raw_runs.push(design, run);
        }
        designs.rotate_left(1);
        let run = consumer::run(
            bench,
            &format!("consumer{rep}"),
            plan.orders,
            Default::default(),
        )
        .await?;
        eprintln!("  consumer: {:.0} payments/s", run.msgs_per_s);
        peak_rss_kib = peak_rss_kib.max(run.peak_rss_kib);
        consumer_runs.push(run);

        let target = rest::Target::start(bench, &format!("rest{rep}")).await?;
        let closed = rest::closed_loop(&target, plan.clients, plan.duration).await?;
        eprintln!("  REST: {:.0} req/s", closed.req_per_s);
        let open = rest::open_loop(&target, closed.req_per_s / 2.0, plan.duration).await?;
        eprintln!(
            "  REST open loop at {:.0} req/s: p99 {:.1} ms",
            open.target_per_s, open.latency.p99_ms
        );
        peak_rss_kib = peak_rss_kib.max(target.service.peak_rss_kib());
        target.stop(bench).await?;
        rest_runs.push(closed);
        open_runs.push(open);
    }

    eprintln!("duplicates");
    let duplicates = duplicates::run(bench).await?;
    let reference = rates(&raw_runs.reference, |r| r.per_s, "tx/s");
    let scaling = if plan.scaling_levels.is_empty() {
        None
    } else {
        Some(scaling::measure(bench, &raw_db).await?)
    };
    let batch_curve = if plan.batch_sizes.is_empty() {
        None
    } else {
        let level = Some(reference.median).filter(|m| *m > 0.0);
        Some(batch_curve::measure(bench, &raw_db, level).await?)
    };
    bench.scratch.drop_database(&raw_db).await?;
    machine.load_at_end = machine::load_average();

    let ceiling = rates(&raw_runs.ceiling, |r| r.per_s, "tx/s");
    let app_layer = rates(&raw_runs.app_layer, |r| r.per_s, "payments/s");
    let batched = BatchedSummary {
        batch_size: plan.batch_size,
        natural: rates(&raw_runs.natural, |r| r.per_s, "payments/s"),
        dedup_table: rates(&raw_runs.dedup_table, |r| r.per_s, "payments/s"),
    };
    let consumer = ConsumerSummary {
        series: rates(&consumer_runs, |r| r.msgs_per_s, "payments/s"),
        applied: rates(&consumer_runs, |r| r.applied_per_s, "payments/s"),
        runs: consumer_runs,
    };
    let rest = RestSummary {
        series: rates(&rest_runs, |r| r.req_per_s, "req/s"),
        latency: Latency::median_of(&rest_runs.iter().map(|r| r.latency).collect::<Vec<_>>()),
        open_loop_target_per_s: median(
            &open_runs.iter().map(|r| r.target_per_s).collect::<Vec<_>>(),
        ),
        open_loop_latency: Latency::median_of(
            &open_runs.iter().map(|r| r.latency).collect::<Vec<_>>(),
        ),
        errors: rest_runs.iter().map(|r| r.errors).sum::<u64>()
            + open_runs.iter().map(|r| r.errors).sum::<u64>(),
        runs: rest_runs,
        open_loop_runs: open_runs,
    };
    Ok(Report {
        started_at: String::new(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        elapsed_s: started.elapsed().as_secs_f64(),
        machine,
        settings: report::Settings {
            orders: plan.orders,
            clients: plan.clients,
            duplicate_share: plan.duplicate_share,
            duration_s: plan.duration.as_secs_f64(),
            repetitions: plan.repetitions,
            batch_size: plan.batch_size,
            // The child runs with a cleared environment, so it gets exactly the defaults, but
            // for what `--service-env` sets.
            service_prefetch: plan
                .service_env_value("AMQP_PREFETCH")
                .unwrap_or(order_service::config::DEFAULT_AMQP_PREFETCH),
            service_pool: plan
                .service_env_value("DB_MAX_CONNECTIONS")
                .unwrap_or(order_service::config::DEFAULT_DB_MAX_CONNECTIONS),
            service_bin: bench.service_bin.display().to_string(),
            service_env: plan
                .service_env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect(),
        },
        ratios: Ratios::of(&Measured {
            reference: &reference,
            ceiling: &ceiling,
            app_layer: &app_layer,
            natural: &batched.natural,
            dedup_table: &batched.dedup_table,
            consumer: &consumer.series,
            applied: &consumer.applied,
            rest: &rest.series,
        }),
        rows_per_payment: RowsPerPayment {
            reference: raw::rows_per_payment(&raw_runs.reference),
            ceiling: raw::rows_per_payment(&raw_runs.ceiling),
            app_layer: raw::rows_per_payment(&raw_runs.app_layer),
            natural_batched: raw::rows_per_payment(&raw_runs.natural),
            dedup_table_batched: raw::rows_per_payment(&raw_runs.dedup_table),
        },
        resources: Resources::of(&raw_runs, &consumer.runs, &rest.runs, peak_rss_kib),
        reference,
        ceiling,
        app_layer,
        batched,
        consumer,
        rest,
        duplicates,
        scaling,
        batch_curve,
    })
}

fn rates<T>(runs: &[T], rate: impl Fn(&T) -> f64, unit: &'static str) -> Series {
    Series::new(unit, runs.iter().map(rate).collect())
}
