//! The arithmetic of the report: latency percentiles from an HDR histogram, the median of
//! repetitions and ratios between figures measured in the same run. Pure, so it is unit-tested.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies are recorded in microseconds, from 1 µs to 60 s, to 3 significant digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// Records one latency, saturating at the histogram's upper bound rather than failing.
pub fn record(histogram: &mut Histogram<u64>, latency: Duration) {
    let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
    histogram.saturating_record(micros.max(1));
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub samples: u64,
}

impl Latency {
    pub fn of(histogram: &Histogram<u64>) -> Self {
        let ms = |micros: u64| micros as f64 / 1_000.0;
        Self {
            p50_ms: ms(histogram.value_at_quantile(0.50)),
            p90_ms: ms(histogram.value_at_quantile(0.90)),
            p99_ms: ms(histogram.value_at_quantile(0.99)),
            max_ms: ms(histogram.max()),
            samples: histogram.len(),
        }
    }

    /// The repetition-wise median of each percentile (not a percentile of merged samples, so a
    /// single disturbed repetition cannot dominate).
    pub fn median_of(runs: &[Latency]) -> Option<Self> {
        let pick = |f: fn(&Latency) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        Some(Self {
            p50_ms: pick(|l| l.p50_ms)?,
            p90_ms: pick(|l| l.p90_ms)?,
            p99_ms: pick(|l| l.p99_ms)?,
            max_ms: pick(|l| l.max_ms)?,
            samples: runs.iter().map(|l| l.samples).sum(),
        })
    }
}

/// The median; the mean of the two middle values for an even count. `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    Some(if sorted.len().is_multiple_of(2) {
        (sorted[middle - 1] + sorted[middle]) / 2.0
    } else {
        sorted[middle]
    })
}

/// `numerator / denominator`, or `None` when the denominator is not a positive number.
pub fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator > 0.0 && numerator.is_finite() && denominator.is_finite())
        .then(|| numerator / denominator)
}

/// Events per second over `elapsed`.
pub fn rate(count: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64();
    if secs > 0.0 { count as f64 / secs } else { 0.0 }
}

/// The repetitions of one measurement and their median.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub unit: &'static str,
    pub runs: Vec<f64>,
    pub median: f64,
}

impl Series {
    pub fn new(unit: &'static str, runs: Vec<f64>) -> Self {
        let median = median(&runs).unwrap_or(0.0);
        Self { unit, runs, median }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_odd_count_is_the_middle_value() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn the_median_of_nothing_is_none_and_non_finite_values_are_ignored() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 5.0]), Some(5.0));
    }

    #[test]
    fn ratios_divide_and_refuse_a_zero_denominator() {
        assert_eq!(ratio(700.0, 1000.0), Some(0.7));
        assert_eq!(ratio(1.0, 0.0), None);
        assert_eq!(ratio(1.0, -2.0), None);
    }

    #[test]
    fn rate_is_count_over_seconds() {
        assert_eq!(rate(500, Duration::from_millis(250)), 2000.0);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
    }

    #[test]
    fn percentiles_come_from_the_histogram_in_milliseconds() {
        let mut histogram = latency_histogram();
        for ms in 1..=100u64 {
            record(&mut histogram, Duration::from_millis(ms));
        }
        let latency = Latency::of(&histogram);
        assert_eq!(latency.samples, 100);
        // Three significant digits: a recorded value is reported within 0.1 %.
        assert!((latency.p50_ms - 50.0).abs() <= 0.05, "{latency:?}");
        assert!((latency.p90_ms - 90.0).abs() <= 0.09, "{latency:?}");
        assert!((latency.p99_ms - 99.0).abs() <= 0.1, "{latency:?}");
        assert!((latency.max_ms - 100.0).abs() <= 0.1, "{latency:?}");
    }

    #[test]
    fn a_latency_beyond_the_range_saturates_instead_of_failing() {
        let mut histogram = latency_histogram();
        record(&mut histogram, Duration::from_secs(3600));
        assert_eq!(histogram.len(), 1);
    }

    #[test]
    fn the_median_latency_is_taken_percentile_by_percentile() {
        let run = |p50_ms| Latency {
            p50_ms,
            p90_ms: p50_ms * 2.0,
            p99_ms: p50_ms * 3.0,
            max_ms: p50_ms * 4.0,
            samples: 10,
        };
        let median = Latency::median_of(&[run(1.0), run(9.0), run(2.0)]).expect("three runs");
        assert_eq!(median.p50_ms, 2.0);
        assert_eq!(median.max_ms, 8.0);
        assert_eq!(median.samples, 30);
    }

    #[test]
    fn a_series_reports_the_median_of_its_runs() {
        let series = Series::new("tx/s", vec![900.0, 1100.0, 1000.0]);
        assert_eq!(series.median, 1000.0);
    }
}
