//! Settings of the event stream: a RabbitMQ stream queue that keeps every event the relay
//! publishes, so a subscriber that comes late (or lost its queue) replays them
//! (docs/messaging.md "Replaying events from the stream").

use clap::Args;

use super::{
    DEFAULT_EVENT_STREAM, DEFAULT_EVENT_STREAM_MAX_AGE, DEFAULT_EVENT_STREAM_MAX_BYTES,
    DEFAULT_EVENT_STREAM_SEGMENT_BYTES,
};

/// The stream queue bound to the outbound exchange and its retention.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct EventStreamConfig {
    /// Keep every published event in the stream queue too; `false` declares no stream.
    #[arg(id = "event_stream_enabled", long = "amqp-event-stream-enabled", global = true, env = "AMQP_EVENT_STREAM_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,

    /// The stream queue, bound to the outbound exchange with `#` (every event type).
    #[arg(id = "event_stream", long = "amqp-event-stream", global = true, env = "AMQP_EVENT_STREAM", default_value = DEFAULT_EVENT_STREAM)]
    pub queue: String,

    /// Events older than this leave the stream, a segment at a time: RabbitMQ's `x-max-age`, a
    /// whole number and a unit (`Y`, `M`, `D`, `h`, `m` or `s`).
    #[arg(id = "event_stream_max_age", long = "amqp-event-stream-max-age", global = true, env = "AMQP_EVENT_STREAM_MAX_AGE", default_value = DEFAULT_EVENT_STREAM_MAX_AGE, value_parser = max_age)]
    pub max_age: String,

    /// The most the stream keeps on each node's disk (bytes); past it the oldest segments go.
    #[arg(id = "event_stream_max_bytes", long = "amqp-event-stream-max-bytes", global = true, env = "AMQP_EVENT_STREAM_MAX_BYTES", default_value_t = DEFAULT_EVENT_STREAM_MAX_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_bytes: u64,

    /// The size of one segment file (bytes): retention removes whole segments.
    #[arg(id = "event_stream_segment_bytes", long = "amqp-event-stream-segment-bytes", global = true, env = "AMQP_EVENT_STREAM_SEGMENT_BYTES", default_value_t = DEFAULT_EVENT_STREAM_SEGMENT_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub segment_bytes: u64,
}

impl Default for EventStreamConfig {
    /// What clap applies when nothing is configured.
    fn default() -> Self {
        Self {
            enabled: true,
            queue: DEFAULT_EVENT_STREAM.to_owned(),
            max_age: DEFAULT_EVENT_STREAM_MAX_AGE.to_owned(),
            max_bytes: DEFAULT_EVENT_STREAM_MAX_BYTES,
            segment_bytes: DEFAULT_EVENT_STREAM_SEGMENT_BYTES,
        }
    }
}

/// An `x-max-age` RabbitMQ takes: digits, then one unit letter.
fn max_age(value: &str) -> Result<String, String> {
    let (digits, unit) = value.split_at(value.len().saturating_sub(1));
    let number_ok =
        !digits.is_empty() && digits.len() <= 9 && digits.bytes().all(|b| b.is_ascii_digit());
    if number_ok
        && matches!(unit, "Y" | "M" | "D" | "h" | "m" | "s")
        && digits.parse::<u32>().is_ok_and(|n| n > 0)
    {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "{value:?} is not an age RabbitMQ takes: a whole number above 0 and a unit, Y, M, D, h, m or s (7D, 12h)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_age_is_a_number_and_a_unit() {
        for good in ["7D", "12h", "30m", "45s", "1Y", "3M", "100D"] {
            assert_eq!(max_age(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "D",
            "7",
            "7d",
            "0D",
            "-1D",
            "7 D",
            "1.5D",
            "7DD",
            "9999999999D",
        ] {
            assert!(max_age(bad).is_err(), "{bad:?}");
        }
    }
}
