//! The ratios of a run, each between medians measured in that run. The headline ones are to the
//! one-statement reference; the older ones, to the service's multi-statement transaction in raw
//! SQL, are kept (and labelled so) for comparison with earlier reports.

use serde::Serialize;

use crate::stats::{Series, ratio};

#[derive(Debug, Clone, Serialize)]
pub struct Ratios {
    /// Consumer payment deliveries per second (duplicates included) ÷ reference tx/s.
    pub consumer_over_reference: Option<f64>,
    /// Consumer payments that took effect per second (duplicates not counted) ÷ reference tx/s.
    pub consumer_applied_over_reference: Option<f64>,
    pub rest_over_reference: Option<f64>,
    /// The design's minimal SQL (the application layer's read and guarded write) ÷ the
    /// reference: what the design's read and key cost beside the one statement.
    pub app_layer_over_reference: Option<f64>,
    /// REST ÷ the design's minimal SQL: the share the service keeps of what its design allows
    /// (the rest goes to HTTP, JSON, the relay and publishing).
    pub rest_over_app_layer: Option<f64>,
    /// The multi-statement ceiling ÷ the reference: what the extra round trips cost.
    pub ceiling_over_reference: Option<f64>,
    pub natural_batched_over_reference: Option<f64>,
    /// Older: consumer ÷ the multi-statement ceiling.
    pub consumer_over_ceiling: Option<f64>,
    /// Older: REST ÷ the multi-statement ceiling.
    pub rest_over_ceiling: Option<f64>,
    /// Natural ÷ dedup-table design, both batched identically with the same duplicates.
    pub natural_over_dedup_table: Option<f64>,
}

/// The series a run's ratios are taken between.
pub struct Measured<'a> {
    pub reference: &'a Series,
    pub ceiling: &'a Series,
    pub app_layer: &'a Series,
    /// The batched designs.
    pub natural: &'a Series,
    pub dedup_table: &'a Series,
    /// Consumer deliveries (duplicates included), and the payments that took effect.
    pub consumer: &'a Series,
    pub applied: &'a Series,
    pub rest: &'a Series,
}

impl Ratios {
    pub fn of(m: &Measured<'_>) -> Self {
        let to_reference = |s: &Series| ratio(s.median, m.reference.median);
        Self {
            consumer_over_reference: to_reference(m.consumer),
            consumer_applied_over_reference: to_reference(m.applied),
            rest_over_reference: to_reference(m.rest),
            app_layer_over_reference: to_reference(m.app_layer),
            rest_over_app_layer: ratio(m.rest.median, m.app_layer.median),
            ceiling_over_reference: to_reference(m.ceiling),
            natural_batched_over_reference: to_reference(m.natural),
            consumer_over_ceiling: ratio(m.consumer.median, m.ceiling.median),
            rest_over_ceiling: ratio(m.rest.median, m.ceiling.median),
            natural_over_dedup_table: ratio(m.natural.median, m.dedup_table.median),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::sample::sample;

    #[test]
    fn ratios_compare_medians_of_the_same_run() {
        let r = sample().ratios;
        assert_eq!(r.consumer_over_reference, Some(0.4));
        assert_eq!(r.consumer_applied_over_reference, Some(0.32));
        assert_eq!(r.rest_over_reference, Some(0.31));
        assert_eq!(r.app_layer_over_reference, Some(0.6));
        assert_eq!(r.rest_over_app_layer, Some(620.0 / 1_200.0));
        assert_eq!(r.ceiling_over_reference, Some(0.5));
        assert_eq!(r.natural_batched_over_reference, Some(2.5));
        assert_eq!(r.consumer_over_ceiling, Some(0.8));
        assert_eq!(r.rest_over_ceiling, Some(0.62));
        assert_eq!(r.natural_over_dedup_table, Some(5000.0 / 4000.0));
    }
}
