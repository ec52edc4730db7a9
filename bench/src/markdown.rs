//! Renders a [`Report`] for people as Markdown: the report file, also what bench/README.md shows
//! (the plain table printed on stdout is `summary.rs`).

use std::fmt::Write;

use crate::format::{curve_table, num, secs, times};
use crate::report::{BatchCurve, Report, Scaling};
use crate::stats::Latency;

/// The chart files beside a Markdown report, by file name; `None` when the curve was skipped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Charts<'a> {
    pub scaling: Option<&'a str>,
    pub batch: Option<&'a str>,
}

fn runs(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| num(*v))
        .collect::<Vec<_>>()
        .join(", ")
}

fn latency_cells(latency: Option<&Latency>) -> String {
    match latency {
        Some(l) => format!(
            "{:.1} | {:.1} | {:.1} | {:.1}",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        ),
        None => "n/a | n/a | n/a | n/a".into(),
    }
}

/// The Markdown report, linking the chart files beside it.
pub fn render(report: &Report, charts: Charts<'_>) -> String {
    let s = &report.settings;
    let m = &report.machine;
    let r = &report.ratios;
    let mut md = String::new();
    let _ = writeln!(md, "# order-service benchmark, {}\n", report.started_at);
    let _ = writeln!(md, "Command: `{}`  ", report.command);
    if !s.service_env.is_empty() {
        let _ = writeln!(md, "Service environment: `{}`  ", s.service_env.join(" "));
    }
    let _ = writeln!(
        md,
        "Machine: {} cores ({}), {:.1} GiB, Linux {}; PostgreSQL {} ({}); RabbitMQ {}; revision `{}`  ",
        m.cores,
        m.cpu,
        m.memory_mib as f64 / 1024.0,
        m.kernel,
        m.postgres,
        m.postgres_settings,
        m.rabbitmq,
        m.git_revision
    );
    let _ = writeln!(
        md,
        "Load average at start {} and end {}; other processes used {:.0} % of the machine's CPU \
         during the timed consumer and REST runs. Run took {:.0} s.\n",
        m.load_at_start,
        m.load_at_end,
        report.resources.other_load_share * 100.0,
        report.elapsed_s
    );
    let _ = writeln!(
        md,
        "## Throughput: median of {} repetitions, concurrency {}\n",
        s.repetitions, s.clients
    );
    md.push_str(
        "| measurement | median | repetitions | ÷ reference | older: ÷ multi-statement ceiling |\n\
         |---|---:|---|---:|---:|\n",
    );
    let b = &report.batched;
    let dups = s.duplicate_share * 100.0;
    for (name, series, unit, to_reference, to_ceiling) in [
        (
            format!(
                "reference: one data-modifying statement per payment, autocommit, {} connections",
                s.clients
            ),
            &report.reference,
            "tx/s",
            "1.00×".to_owned(),
            String::new(),
        ),
        (
            format!(
                "multi-statement ceiling: the service's payment transaction in raw sqlx, {} connections",
                s.clients
            ),
            &report.ceiling,
            "tx/s",
            times(r.ceiling_over_reference),
            "1.00×".to_owned(),
        ),
        (
            format!(
                "design's minimal SQL: the application layer's read and guarded write with the key, \
                 autocommit, nothing published, pool of {}",
                s.clients
            ),
            &report.app_layer,
            "payments/s",
            times(r.app_layer_over_reference),
            String::new(),
        ),
        (
            format!(
                "natural design batched: {} deliveries per transaction, a savepoint each, {dups:.0} % duplicates",
                b.batch_size
            ),
            &b.natural,
            "payments/s",
            times(r.natural_batched_over_reference),
            String::new(),
        ),
        (
            "dedup-table design batched identically: `processed_messages` row first".to_owned(),
            &b.dedup_table,
            "payments/s",
            String::new(),
            String::new(),
        ),
        (
            format!(
                "consumer: real service, {} seeded orders, their payments + {dups:.0} % duplicates, prefetch {}, pool {}",
                s.orders, s.service_prefetch, s.service_pool
            ),
            &report.consumer.series,
            "payments/s",
            times(r.consumer_over_reference),
            times(r.consumer_over_ceiling),
        ),
        (
            format!(
                "REST: {} clients posting payments with Idempotency-Keys",
                s.clients
            ),
            &report.rest.series,
            "req/s",
            times(r.rest_over_reference),
            times(r.rest_over_ceiling),
        ),
    ] {
        let _ = writeln!(
            md,
            "| {name} | {} {unit} | {} | {to_reference} | {to_ceiling} |",
            num(series.median),
            runs(&series.runs)
        );
    }
    let _ = writeln!(
        md,
        "\nNatural ÷ dedup-table, both batched by {}: **{}**. Consumer payments that took effect \
         (duplicates not counted): {}/s, {} of the reference. REST ÷ the design's minimal SQL: \
         **{}** (what the service keeps of the rate its own statements allow).",
        b.batch_size,
        times(r.natural_over_dedup_table),
        num(report.consumer.applied.median),
        times(r.consumer_applied_over_reference),
        times(r.rest_over_app_layer)
    );
    md.push_str("\n### REST latency (ms, median of repetitions)\n\n| load | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n");
    let _ = writeln!(
        md,
        "| closed loop, {} clients | {} |",
        s.clients,
        latency_cells(report.rest.latency.as_ref())
    );
    let _ = writeln!(
        md,
        "| open loop at {} req/s (half the maximum) | {} |",
        report.rest.open_loop_target_per_s.map_or("n/a".into(), num),
        latency_cells(report.rest.open_loop_latency.as_ref())
    );
    let d = &report.duplicates;
    md.push_str("\n## Duplicates\n\n| delivered only duplicates | duplicates | rows written | rows per duplicate |\n|---|---:|---:|---:|\n");
    let _ = writeln!(
        md,
        "| AMQP: the same events again + the same payments under new event ids | {} | {} | {} |",
        d.amqp.duplicates, d.amqp.rows_written, d.amqp.rows_per_duplicate
    );
    let _ = writeln!(
        md,
        "| REST: retries with their keys + the same payments under new keys | {} | {} | {} |",
        d.rest.duplicates, d.rest.rows_written, d.rest.rows_per_duplicate
    );
    let rows = &report.rows_per_payment;
    let _ = writeln!(
        md,
        "\nRows written per applied payment (pg_stat): reference {:.2}, multi-statement ceiling \
         {:.2}, design's minimal SQL {:.2}, natural batched {:.2}, dedup-table batched {:.2}.",
        rows.reference,
        rows.ceiling,
        rows.app_layer,
        rows.natural_batched,
        rows.dedup_table_batched
    );
    md.push_str(&resources_section(report));
    if let Some(scaling) = &report.scaling {
        md.push_str(&scaling_section(scaling, charts.scaling));
    }
    if let Some(curve) = &report.batch_curve {
        md.push_str(&batch_section(curve, charts.batch));
    }
    md
}

/// The report's "Resources" section.
fn resources_section(report: &Report) -> String {
    let mut md = String::new();
    let res = &report.resources;
    let c = &res.cpu_split;
    md.push_str("\n## Resources\n\n| | |\n|---|---:|\n");
    let _ = writeln!(md, "| service peak RSS | {:.1} MiB |", res.peak_rss_mib);
    let _ = writeln!(
        md,
        "| service CPU per 1 000 consumed messages | {} |",
        secs(res.consumer_cpu_s_per_1000_messages)
    );
    let _ = writeln!(
        md,
        "| service CPU per 1 000 REST requests | {} |",
        secs(res.rest_cpu_s_per_1000_requests)
    );
    let _ = writeln!(
        md,
        "\nCPU during the timed consumer and REST runs ({:.1} s × {} cores): service {:.1} s, \
         Postgres {:.1} s, RabbitMQ {:.1} s, bench clients {:.1} s, kernel interrupts {:.1} s, \
         other processes {:.1} s, idle {:.1} s.",
        c.wall_s,
        c.cores,
        c.service_s,
        c.postgres_s,
        c.rabbitmq_s,
        c.bench_s,
        c.interrupts_s,
        c.other_s,
        c.idle_s
    );
    md.push_str(
        "\n| CPU per operation (ms) | service | Postgres | RabbitMQ | bench client | kernel irq | total |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let t = &res.cpu_per_operation;
    for (name, c) in [
        ("reference transaction", &t.reference),
        ("multi-statement transaction", &t.ceiling),
        ("design's minimal SQL, per payment", &t.app_layer),
        ("natural batched, per delivery", &t.natural_batched),
        ("dedup-table batched, per delivery", &t.dedup_table_batched),
        ("consumer message", &t.consumer),
        ("REST request", &t.rest),
    ] {
        let _ = writeln!(
            md,
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            c.service_ms, c.postgres_ms, c.rabbitmq_ms, c.bench_ms, c.interrupts_ms, c.total_ms
        );
    }
    md
}

/// The scaling section; `svg` is the chart's file name beside the report, if written.
fn scaling_section(scaling: &Scaling, svg: Option<&str>) -> String {
    curve_table(
        "Scaling",
        svg,
        "concurrency",
        &scaling.levels,
        &[
            (
                "reference tx/s (connections)",
                rates(&scaling.reference_tx_per_s),
            ),
            (
                "consumer payments/s (prefetch)",
                rates(&scaling.consumer_msgs_per_s),
            ),
            ("REST req/s (clients)", rates(&scaling.rest_req_per_s)),
        ],
    )
}

/// The batch-size section; `svg` is the chart's file name beside the report, if written.
fn batch_section(curve: &BatchCurve, svg: Option<&str>) -> String {
    let consumer = &curve.consumer_cpu_per_message;
    let natural = &curve.natural_cpu_per_message;
    curve_table(
        "Batch size",
        svg,
        "deliveries per transaction",
        &curve.sizes,
        &[
            ("consumer payments/s", rates(&curve.consumer_msgs_per_s)),
            ("raw natural payments/s", rates(&curve.natural_msgs_per_s)),
            (
                "consumer: service CPU s per 1 000 msgs",
                thousandths(curve.consumer_service_cpu_s_per_1000.iter().copied()),
            ),
            (
                "consumer: Postgres CPU s per 1 000 msgs",
                thousandths(consumer.iter().map(|c| c.postgres_ms)),
            ),
            (
                "consumer: all CPU s per 1 000 msgs",
                thousandths(consumer.iter().map(|c| c.total_ms)),
            ),
            (
                "raw natural: Postgres CPU s per 1 000 msgs",
                thousandths(natural.iter().map(|c| c.postgres_ms)),
            ),
            (
                "raw natural: all CPU s per 1 000 msgs",
                thousandths(natural.iter().map(|c| c.total_ms)),
            ),
        ],
    )
}

/// A curve's row of rates, whole.
fn rates(values: &[f64]) -> Vec<String> {
    values.iter().map(|v| num(*v)).collect()
}

/// A curve's row of seconds, to the millisecond.
fn thousandths(values: impl Iterator<Item = f64>) -> Vec<String> {
    values.map(|v| format!("{v:.3}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample;

    const CHARTS: Charts<'static> = Charts {
        scaling: Some("latest.svg"),
        batch: Some("latest-batch.svg"),
    };

    #[test]
    fn the_report_shows_medians_runs_and_both_ratios_side_by_side() {
        let md = render(&sample(), CHARTS);
        assert!(md.contains("| reference: one data-modifying statement per payment, autocommit, 16 connections | 2000 tx/s | 2000, 2100, 1900 | 1.00× |  |"));
        assert!(md.contains("| 1000 tx/s | 1000, 1100, 900 | 0.50× | 1.00× |"));
        assert!(md.contains("| 800 payments/s | 800, 750, 820 | 0.40× | 0.80× |"));
        assert!(md.contains("| 620 req/s | 600, 640, 620 | 0.31× | 0.62× |"));
        assert!(md.contains("Natural ÷ dedup-table, both batched by 32: **1.25×**"));
        assert!(md.contains("640/s, 0.32× of the reference"));
    }

    #[test]
    fn the_report_records_the_machine_and_the_command() {
        let md = render(&sample(), Charts::default());
        assert!(md.contains("Command: `./target/release/order-service-bench`"));
        assert!(md.contains("PostgreSQL 15.20"));
        assert!(md.contains("RabbitMQ 3.10.8"));
        assert!(md.contains("revision `abc1234`"));
    }

    #[test]
    fn latency_duplicates_and_both_curves_have_their_tables() {
        let md = render(&sample(), CHARTS);
        assert!(md.contains("| closed loop, 16 clients | 4.2 | 7.5 | 12.3 | 40.0 |"));
        assert!(md.contains("| 3000 | 0 | 0 |"));
        assert!(md.contains("reference 4.00, multi-statement ceiling 4.00, design's minimal SQL 4.00, natural batched 4.00, dedup-table batched 5.00"));
        assert!(md.contains("![scaling](latest.svg)"));
        assert!(md.contains("| concurrency | 1 | 2 | 4 |"));
        assert!(md.contains("| REST req/s (clients) | 200 | 380 | 600 |"));
        assert!(md.contains("![batch size](latest-batch.svg)"));
        assert!(md.contains("| deliveries per transaction | 1 | 4 | 16 | 64 |"));
        assert!(md.contains("| consumer payments/s | 900 | 1500 | 2200 | 2400 |"));
        assert!(md.contains(
            "| consumer: service CPU s per 1 000 msgs | 0.300 | 0.200 | 0.150 | 0.140 |"
        ));
    }

    #[test]
    fn the_cpu_cost_of_each_operation_is_tabulated() {
        let md = render(&sample(), Charts::default());
        assert!(md.contains("| REST request | 0.300 | 0.550 | 0.000 | 0.050 | 0.000 | 0.900 |"));
        assert!(md.contains(
            "| natural batched, per delivery | 0.000 | 0.200 | 0.000 | 0.050 | 0.000 | 0.250 |"
        ));
    }

    #[test]
    fn without_charts_there_is_no_image_link() {
        assert!(!render(&sample(), Charts::default()).contains("!["));
    }
}
