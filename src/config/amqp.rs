//! Settings of the RabbitMQ side: the topology's names and the consumer's tuning.

use std::time::Duration;

use clap::Args;

use super::EventStreamConfig;
use super::{
    DEFAULT_AMQP_BATCH_LOCK_WAIT_MS, DEFAULT_AMQP_BATCH_SIZE, DEFAULT_AMQP_BATCH_WAIT_MS,
    DEFAULT_AMQP_DELIVERY_LIMIT, DEFAULT_AMQP_MAX_ATTEMPTS, DEFAULT_AMQP_PREFETCH,
    DEFAULT_AMQP_RETRY_BASE_MS, DEFAULT_AMQP_RETRY_MAX_MS, DEFAULT_DEAD_LETTER_EXCHANGE,
    DEFAULT_DEAD_LETTER_QUEUE, DEFAULT_INBOUND_EXCHANGE, DEFAULT_INBOX_QUEUE,
    DEFAULT_OUTBOUND_EXCHANGE, MAX_AMQP_BATCH_SIZE,
};

/// The RabbitMQ side: names of the topology (docs/messaging.md) and consumer tuning.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct AmqpConfig {
    /// Run the AMQP consumer and outbox relay beside the API.
    #[arg(long = "amqp-enabled", global = true, env = "AMQP_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,

    /// Topic exchange the inbound events are published to.
    #[arg(long, global = true, env = "AMQP_INBOUND_EXCHANGE", default_value = DEFAULT_INBOUND_EXCHANGE)]
    pub inbound_exchange: String,

    /// Quorum queue the consumer reads.
    #[arg(long, global = true, env = "AMQP_INBOX_QUEUE", default_value = DEFAULT_INBOX_QUEUE)]
    pub inbox_queue: String,

    /// Exchange that routes dead letters to the dead-letter queue.
    #[arg(long, global = true, env = "AMQP_DEAD_LETTER_EXCHANGE", default_value = DEFAULT_DEAD_LETTER_EXCHANGE)]
    pub dead_letter_exchange: String,

    /// Queue holding messages that cannot be applied, each with an `x-error-reason` header.
    #[arg(long, global = true, env = "AMQP_DEAD_LETTER_QUEUE", default_value = DEFAULT_DEAD_LETTER_QUEUE)]
    pub dead_letter_queue: String,

    /// Topic exchange the outbox relay publishes order events to.
    #[arg(long, global = true, env = "AMQP_OUTBOUND_EXCHANGE", default_value = DEFAULT_OUTBOUND_EXCHANGE)]
    pub outbound_exchange: String,

    /// Unacknowledged messages the consumer holds (and processes concurrently) at once.
    #[arg(long, global = true, env = "AMQP_PREFETCH", default_value_t = DEFAULT_AMQP_PREFETCH)]
    pub prefetch: u16,

    /// Deliveries applied together in one transaction and acknowledged after its commit
    /// (docs/messaging.md "Batched consumer commits"); 1 applies each on its own. A batch takes
    /// at most `AMQP_PREFETCH` of them, as no more are ever held; at most 64, as a batch applied
    /// again one message at a time puts each under a savepoint, and more savepoints that write in
    /// one transaction overflow Postgres' per-session cache of them and slow every session's
    /// snapshots.
    #[arg(id = "amqp_batch_size", long = "amqp-batch-size", global = true, env = "AMQP_BATCH_SIZE", default_value_t = DEFAULT_AMQP_BATCH_SIZE, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAX_AMQP_BATCH_SIZE)))]
    pub batch_size: u16,

    /// How long a batch waits for more deliveries after its first, when no more are at hand
    /// (milliseconds).
    #[arg(id = "amqp_batch_wait_ms", long = "amqp-batch-wait-ms", global = true, env = "AMQP_BATCH_WAIT_MS", default_value_t = DEFAULT_AMQP_BATCH_WAIT_MS)]
    pub batch_wait_ms: u64,

    /// How long a statement in a batch of several deliveries waits for a row or key lock another
    /// transaction holds before its message is rolled back to its savepoint and tried again, on
    /// its own, after a backoff (milliseconds). A batch of one waits `LOCK_TIMEOUT_MS`.
    #[arg(id = "amqp_batch_lock_wait_ms", long = "amqp-batch-lock-wait-ms", global = true, env = "AMQP_BATCH_LOCK_WAIT_MS", default_value_t = DEFAULT_AMQP_BATCH_LOCK_WAIT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch_lock_wait_ms: u64,

    /// Deliveries of a premature message (unknown order, ship before paid) before it is
    /// dead-lettered.
    #[arg(long, global = true, env = "AMQP_MAX_ATTEMPTS", default_value_t = DEFAULT_AMQP_MAX_ATTEMPTS)]
    pub max_attempts: u32,

    /// The crash-loop guard: deliveries of one message that end without it being settled (the
    /// consumer crashed or hung on it) before the broker dead-letters it with `x-death` reason
    /// `delivery_limit`. The inbox's `x-delivery-limit`; 0 declares none. Separate from
    /// `AMQP_MAX_ATTEMPTS`, which counts the service's own retries of premature messages.
    #[arg(long, global = true, env = "AMQP_DELIVERY_LIMIT", default_value_t = DEFAULT_AMQP_DELIVERY_LIMIT)]
    pub delivery_limit: u32,

    /// Delay before the first retry of a premature message; doubles per attempt (milliseconds).
    #[arg(long, global = true, env = "AMQP_RETRY_BASE_MS", default_value_t = DEFAULT_AMQP_RETRY_BASE_MS)]
    pub retry_base_ms: u64,

    /// Longest delay between two attempts (milliseconds).
    #[arg(long, global = true, env = "AMQP_RETRY_MAX_MS", default_value_t = DEFAULT_AMQP_RETRY_MAX_MS)]
    pub retry_max_ms: u64,

    #[command(flatten)]
    pub event_stream: EventStreamConfig,
}

impl Default for AmqpConfig {
    /// The defaults clap applies when nothing is configured (without reading the environment):
    /// what the committed AsyncAPI document describes.
    fn default() -> Self {
        Self {
            enabled: true,
            inbound_exchange: DEFAULT_INBOUND_EXCHANGE.to_owned(),
            inbox_queue: DEFAULT_INBOX_QUEUE.to_owned(),
            dead_letter_exchange: DEFAULT_DEAD_LETTER_EXCHANGE.to_owned(),
            dead_letter_queue: DEFAULT_DEAD_LETTER_QUEUE.to_owned(),
            outbound_exchange: DEFAULT_OUTBOUND_EXCHANGE.to_owned(),
            prefetch: DEFAULT_AMQP_PREFETCH,
            batch_size: DEFAULT_AMQP_BATCH_SIZE,
            batch_wait_ms: DEFAULT_AMQP_BATCH_WAIT_MS,
            batch_lock_wait_ms: DEFAULT_AMQP_BATCH_LOCK_WAIT_MS,
            max_attempts: DEFAULT_AMQP_MAX_ATTEMPTS,
            delivery_limit: DEFAULT_AMQP_DELIVERY_LIMIT,
            retry_base_ms: DEFAULT_AMQP_RETRY_BASE_MS,
            retry_max_ms: DEFAULT_AMQP_RETRY_MAX_MS,
            event_stream: EventStreamConfig::default(),
        }
    }
}

impl AmqpConfig {
    /// The same settings with every exchange and queue name under `prefix`: what a test or a
    /// benchmark run owns, apart from any other on the same broker.
    pub fn named_under(self, prefix: &str) -> Self {
        Self {
            inbound_exchange: format!("{prefix}.commerce.events"),
            inbox_queue: format!("{prefix}.inbox"),
            dead_letter_exchange: format!("{prefix}.dlx"),
            dead_letter_queue: format!("{prefix}.dead-letter"),
            outbound_exchange: format!("{prefix}.order-events"),
            event_stream: EventStreamConfig {
                queue: format!("{prefix}.order-events.stream"),
                ..self.event_stream
            },
            ..self
        }
    }

    /// The most deliveries one batch takes: `batch_size`, but never more than `prefetch` (0 sets
    /// no prefetch limit). The broker sends no more than `prefetch` unacknowledged deliveries,
    /// and a batch acknowledges its own only after its commit: a batch waiting for more would
    /// wait out `batch_wait_ms` every time (docs/messaging.md "Batched consumer commits").
    pub fn batch_limit(&self) -> usize {
        let size = self.batch_size.max(1);
        usize::from(match self.prefetch {
            0 => size,
            prefetch => size.min(prefetch),
        })
    }

    /// [`AmqpConfig::batch_wait_ms`] as a duration.
    pub fn batch_wait(&self) -> Duration {
        Duration::from_millis(self.batch_wait_ms)
    }

    /// [`AmqpConfig::batch_lock_wait_ms`] as a duration.
    pub fn batch_lock_wait(&self) -> Duration {
        Duration::from_millis(self.batch_lock_wait_ms)
    }

    /// The delay before attempt `attempt + 1`, for `attempt >= 1`: base · 2^(attempt-1), capped.
    pub fn retry_delay(&self, attempt: u32) -> Duration {
        let factor = 1u64 << attempt.saturating_sub(1).min(20);
        Duration::from_millis(
            self.retry_base_ms
                .saturating_mul(factor)
                .min(self.retry_max_ms),
        )
    }

    /// Every distinct retry delay, shortest first: one delay queue each.
    pub fn retry_delays(&self) -> Vec<Duration> {
        let mut delays: Vec<Duration> = (1..self.max_attempts.max(1))
            .map(|a| self.retry_delay(a))
            .collect();
        delays.dedup();
        delays
    }
}
