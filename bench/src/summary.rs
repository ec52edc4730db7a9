//! The plain table printed on stdout at the end of a run.

use std::fmt::Write;

use crate::format::{num, secs, times};
use crate::report::Report;

/// The summary printed on stdout.
pub fn table(report: &Report) -> String {
    let r = &report.ratios;
    let res = &report.resources;
    let b = &report.batched;
    let mut out = String::new();
    let rows = [
        (
            "one-statement reference",
            &report.reference,
            "tx/s",
            "1.00×".to_owned(),
            String::new(),
        ),
        (
            "multi-statement ceiling",
            &report.ceiling,
            "tx/s",
            times(r.ceiling_over_reference),
            "1.00×".to_owned(),
        ),
        (
            "design's minimal SQL",
            &report.app_layer,
            "pay/s",
            times(r.app_layer_over_reference),
            String::new(),
        ),
        (
            "natural, batched",
            &b.natural,
            "pay/s",
            times(r.natural_batched_over_reference),
            String::new(),
        ),
        (
            "dedup-table, batched",
            &b.dedup_table,
            "pay/s",
            String::new(),
            String::new(),
        ),
        (
            "consumer (service)",
            &report.consumer.series,
            "pay/s",
            times(r.consumer_over_reference),
            times(r.consumer_over_ceiling),
        ),
        (
            "REST (service)",
            &report.rest.series,
            "req/s",
            times(r.rest_over_reference),
            times(r.rest_over_ceiling),
        ),
    ];
    let _ = writeln!(
        out,
        "{:<24} {:>12}  {:>11}  {:>13}",
        "measurement", "median", "÷ reference", "÷ multi-stmt"
    );
    for (name, series, unit, to_reference, to_ceiling) in rows {
        let value = format!("{} {unit}", num(series.median));
        let _ = writeln!(
            out,
            "{name:<24} {value:>12}  {to_reference:>11}  {to_ceiling:>13}"
        );
    }
    let _ = writeln!(
        out,
        "REST ÷ minimal SQL       {} (what the service keeps of its design's own rate)",
        times(r.rest_over_app_layer)
    );
    let _ = writeln!(
        out,
        "natural ÷ dedup-table    {} (both batched by {})",
        times(r.natural_over_dedup_table),
        b.batch_size
    );
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
            "one-statement reference",
            "multi-statement ceiling",
            "dedup-table, batched",
            "design's minimal SQL",
            "REST ÷ minimal SQL       0.52×",
            "consumer (service)",
            "REST (service)",
            "0.40×",
            "0.80×",
            "1.25× (both batched by 32)",
        ] {
            assert!(table.contains(needle), "{needle} missing from\n{table}");
        }
    }
}
