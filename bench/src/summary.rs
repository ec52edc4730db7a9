//! The plain table printed on stdout at the end of a run.

use std::fmt::Write;

use crate::markdown::{num, secs, times};
use crate::report::Report;

/// The summary printed on stdout.
pub fn table(report: &Report) -> String {
    let r = &report.ratios;
    let res = &report.resources;
    let mut out = String::new();
    let rows = [
        (
            "ceiling (raw sqlx)",
            format!("{} tx/s", num(report.ceiling.median)),
            "1.00×".to_owned(),
        ),
        (
            "dedup-table design",
            format!("{} tx/s", num(report.dedup_table.median)),
            format!("natural/dedup {}", times(r.natural_over_dedup_table)),
        ),
        (
            "consumer (service)",
            format!("{} msgs/s", num(report.consumer.series.median)),
            times(r.consumer_over_ceiling),
        ),
        (
            "REST (service)",
            format!("{} req/s", num(report.rest.series.median)),
            times(r.rest_over_ceiling),
        ),
    ];
    let _ = writeln!(
        out,
        "{:<22} {:>14}  ratio to ceiling",
        "measurement", "median"
    );
    for (name, value, ratio) in rows {
        let _ = writeln!(out, "{name:<22} {value:>14}  {ratio}");
    }
    if let Some(l) = &report.rest.latency {
        let _ = writeln!(
            out,
            "REST latency ms        p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
        );
    }
    let d = &report.duplicates;
    let _ = writeln!(
        out,
        "rows per duplicate     AMQP {} ({} dups)  REST {} ({} dups)",
        d.amqp.rows_per_duplicate, d.amqp.duplicates, d.rest.rows_per_duplicate, d.rest.duplicates
    );
    let _ = writeln!(
        out,
        "service peak RSS       {:.1} MiB; CPU per 1000 msgs {}, per 1000 requests {}",
        res.peak_rss_mib,
        secs(res.consumer_cpu_s_per_1000_messages),
        secs(res.rest_cpu_s_per_1000_requests)
    );
    let _ = writeln!(
        out,
        "other load             {:.0} % of the machine during timed runs",
        res.other_load_share * 100.0
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::sample;

    #[test]
    fn the_stdout_table_lists_every_measurement() {
        let table = table(&sample());
        for needle in [
            "ceiling (raw sqlx)",
            "dedup-table design",
            "consumer (service)",
            "REST (service)",
            "0.80×",
        ] {
            assert!(table.contains(needle), "{needle} missing from\n{table}");
        }
    }
}
