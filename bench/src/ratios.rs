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

impl Ratios {
    /// `consumer` counts deliveries (duplicates included), `applied` the payments that took
    /// effect; `natural` and `dedup_table` are the batched designs.
    pub fn of(
        reference: &Series,
        ceiling: &Series,
        natural: &Series,
        dedup_table: &Series,
        consumer: &Series,
        applied: &Series,
        rest: &Series,
    ) -> Self {
        let to_reference = |s: &Series| ratio(s.median, reference.median);
        Self {
            consumer_over_reference: to_reference(consumer),
            consumer_applied_over_reference: to_reference(applied),
            rest_over_reference: to_reference(rest),
            ceiling_over_reference: to_reference(ceiling),
            natural_batched_over_reference: to_reference(natural),
            consumer_over_ceiling: ratio(consumer.median, ceiling.median),
            rest_over_ceiling: ratio(rest.median, ceiling.median),
            natural_over_dedup_table: ratio(natural.median, dedup_table.median),
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
        assert_eq!(r.ceiling_over_reference, Some(0.5));
        assert_eq!(r.natural_batched_over_reference, Some(2.5));
        assert_eq!(r.consumer_over_ceiling, Some(0.8));
        assert_eq!(r.rest_over_ceiling, Some(0.62));
        assert_eq!(r.natural_over_dedup_table, Some(5000.0 / 4000.0));
    }
}
