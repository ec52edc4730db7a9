//! The report's SVG charts: the scaling curve and the batch-size curve.

use crate::report::{BatchCurve, Scaling};
use crate::svg::{Line, line_chart};

/// The scaling curve: reference, consumer and REST by concurrency.
pub fn scaling(scaling: &Scaling) -> String {
    line_chart(
        "order-service throughput by concurrency",
        "concurrency (raw connections · consumer prefetch · REST clients)",
        "per second",
        &scaling.levels,
        &[
            Line::of("reference (tx/s)", "#1f77b4", &scaling.reference_tx_per_s),
            Line::of(
                "consumer (payments/s)",
                "#2ca02c",
                &scaling.consumer_msgs_per_s,
            ),
            Line::of("REST (req/s)", "#d62728", &scaling.rest_req_per_s),
        ],
    )
}

/// The batch-size curve: consumer and raw natural by batch size, the reference as a level line.
pub fn batch(curve: &BatchCurve) -> String {
    let mut lines = vec![
        Line::of(
            "consumer (payments/s)",
            "#2ca02c",
            &curve.consumer_msgs_per_s,
        ),
        Line::of(
            "raw natural (payments/s)",
            "#9467bd",
            &curve.natural_msgs_per_s,
        ),
    ];
    if let Some(reference) = curve.reference_tx_per_s {
        let level = vec![reference; curve.sizes.len()];
        lines.push(Line::of("reference (tx/s)", "#1f77b4", &level));
    }
    line_chart(
        "payments per second by batch size",
        "deliveries per transaction (consumer AMQP_BATCH_SIZE · raw batch)",
        "per second",
        &curve.sizes,
        &lines,
    )
}

#[cfg(test)]
mod tests {
    use crate::sample::sample;

    #[test]
    fn the_chart_has_both_batched_lines_and_the_reference_as_a_level() {
        let mut curve = sample().batch_curve.expect("a batch curve");
        let svg = super::batch(&curve);
        assert_eq!(svg.matches("<polyline").count(), 3);
        assert!(svg.contains(">64</text>") && svg.contains("reference (tx/s)"));
        curve.reference_tx_per_s = None;
        assert_eq!(super::batch(&curve).matches("<polyline").count(), 2);
    }
}
