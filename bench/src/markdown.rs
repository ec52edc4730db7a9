//! Renders a [`Report`] for people: the Markdown report (also what the README's Performance
//! section shows) and the plain table printed on stdout.

use std::fmt::Write;

use crate::report::Report;
use crate::stats::Latency;

pub(crate) fn num(value: f64) -> String {
    format!("{value:.0}")
}

pub(crate) fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.2}×"))
}

pub(crate) fn secs(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".into(), |v| format!("{v:.3} s"))
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

/// The Markdown report; `svg` is the chart's file name beside it, if there is a chart.
pub fn render(report: &Report, svg: Option<&str>) -> String {
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
    md.push_str("| measurement | median | repetitions | ratio (same run) |\n|---|---:|---|---:|\n");
    let _ = writeln!(
        md,
        "| ceiling: the payment transaction in raw sqlx, {} connections | {} tx/s | {} | 1.00× |",
        s.clients,
        num(report.ceiling.median),
        runs(&report.ceiling.runs)
    );
    let _ = writeln!(
        md,
        "| dedup-table design: the same behind `processed_messages` | {} tx/s | {} | natural ÷ dedup-table {} |",
        num(report.dedup_table.median),
        runs(&report.dedup_table.runs),
        times(r.natural_over_dedup_table)
    );
    let _ = writeln!(
        md,
        "| consumer: real service, {} orders × 2 events + {:.0} % duplicates, prefetch {}, pool {} | {} msgs/s | {} | {} of ceiling |",
        s.orders,
        s.duplicate_share * 100.0,
        s.service_prefetch,
        s.service_pool,
        num(report.consumer.series.median),
        runs(&report.consumer.series.runs),
        times(r.consumer_over_ceiling)
    );
    let _ = writeln!(
        md,
        "| REST: {} clients posting payments with Idempotency-Keys | {} req/s | {} | {} of ceiling |",
        s.clients,
        num(report.rest.series.median),
        runs(&report.rest.series.runs),
        times(r.rest_over_ceiling)
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
    let _ = writeln!(
        md,
        "\nRows written per applied payment (pg_stat): natural {:.2}, dedup-table {:.2}.",
        report.rows_per_payment.natural, report.rows_per_payment.dedup_table
    );
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
        ("ceiling transaction", &t.ceiling),
        ("dedup-table transaction", &t.dedup_table),
        ("consumer message", &t.consumer),
        ("REST request", &t.rest),
    ] {
        let _ = writeln!(
            md,
            "| {name} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            c.service_ms, c.postgres_ms, c.rabbitmq_ms, c.bench_ms, c.interrupts_ms, c.total_ms
        );
    }
    if let Some(scaling) = &report.scaling {
        md.push_str("\n## Scaling\n\n");
        if let Some(svg) = svg {
            let _ = writeln!(md, "![scaling]({svg})\n");
        }
        md.push_str("| concurrency |");
        for level in &scaling.levels {
            let _ = write!(md, " {level} |");
        }
        md.push_str("\n|---|");
        md.push_str(&"---:|".repeat(scaling.levels.len()));
        md.push('\n');
        for (name, values) in [
            ("ceiling tx/s (connections)", &scaling.ceiling_tx_per_s),
            ("consumer msgs/s (prefetch)", &scaling.consumer_msgs_per_s),
            ("REST req/s (clients)", &scaling.rest_req_per_s),
        ] {
            let _ = write!(md, "| {name} |");
            for value in values {
                let _ = write!(md, " {} |", num(*value));
            }
            md.push('\n');
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample;

    #[test]
    fn the_report_shows_medians_runs_and_ratios_side_by_side() {
        let md = render(&sample(), Some("latest.svg"));
        assert!(md.contains("| ceiling: the payment transaction in raw sqlx, 16 connections | 1000 tx/s | 1000, 1100, 900 | 1.00× |"));
        assert!(md.contains("| 800 msgs/s | 800, 750, 820 | 0.80× of ceiling |"));
        assert!(md.contains("| 620 req/s | 600, 640, 620 | 0.62× of ceiling |"));
        assert!(md.contains("natural ÷ dedup-table 1.18×"));
    }

    #[test]
    fn the_report_records_the_machine_and_the_command() {
        let md = render(&sample(), None);
        assert!(md.contains("Command: `./target/release/order-service-bench`"));
        assert!(md.contains("PostgreSQL 15.20"));
        assert!(md.contains("RabbitMQ 3.10.8"));
        assert!(md.contains("revision `abc1234`"));
    }

    #[test]
    fn latency_duplicates_and_scaling_have_their_tables() {
        let md = render(&sample(), Some("latest.svg"));
        assert!(md.contains("| closed loop, 16 clients | 4.2 | 7.5 | 12.3 | 40.0 |"));
        assert!(md.contains("| 3000 | 0 | 0 |"));
        assert!(md.contains("![scaling](latest.svg)"));
        assert!(md.contains("| concurrency | 1 | 2 | 4 |"));
        assert!(md.contains("| REST req/s (clients) | 200 | 380 | 600 |"));
    }

    #[test]
    fn the_cpu_cost_of_each_operation_is_tabulated() {
        let md = render(&sample(), None);
        assert!(md.contains("| REST request | 0.300 | 0.550 | 0.000 | 0.050 | 0.000 | 0.900 |"));
    }

    #[test]
    fn without_a_chart_there_is_no_image_link() {
        assert!(!render(&sample(), None).contains("!["));
    }
}
