//! Settings of the outbox relay.

use std::time::Duration;

use clap::Args;

use super::{
    DEFAULT_OUTBOX_BATCH_SIZE, DEFAULT_OUTBOX_LINGER_MS, DEFAULT_OUTBOX_POLL_MS,
    DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS, DEFAULT_OUTBOX_RETENTION_HOURS,
    DEFAULT_OUTBOX_STALLED_AFTER_SECS,
};

/// The outbox relay: batching, wake-up fallback, retention, and when it counts as stalled.
#[derive(Debug, Clone, Args)]
pub struct RelayConfig {
    /// Outbox rows published (and confirmed) per batch.
    #[arg(long = "outbox-batch-size", global = true, env = "OUTBOX_BATCH_SIZE", default_value_t = DEFAULT_OUTBOX_BATCH_SIZE)]
    pub batch_size: u32,

    /// Poll interval when no NOTIFY arrives (milliseconds).
    #[arg(long = "outbox-poll-ms", global = true, env = "OUTBOX_POLL_MS", default_value_t = DEFAULT_OUTBOX_POLL_MS)]
    pub poll_ms: u64,

    /// After a read that found events, the next read waits until this long after it began
    /// (milliseconds; 0: at once): events committed meanwhile share one batch.
    #[arg(long = "outbox-linger-ms", global = true, env = "OUTBOX_LINGER_MS", default_value_t = DEFAULT_OUTBOX_LINGER_MS)]
    pub linger_ms: u64,

    /// Published rows older than this are deleted (hours; default 7 days).
    #[arg(long = "outbox-retention-hours", global = true, env = "OUTBOX_RETENTION_HOURS", default_value_t = DEFAULT_OUTBOX_RETENTION_HOURS)]
    pub retention_hours: u64,

    /// How often the relay prunes (seconds).
    #[arg(long = "outbox-prune-interval-secs", global = true, env = "OUTBOX_PRUNE_INTERVAL_SECS", default_value_t = DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS)]
    pub prune_interval_secs: u64,

    /// A relay without a successful batch this long while events wait is not ready (seconds).
    #[arg(long = "outbox-stalled-after-secs", global = true, env = "OUTBOX_STALLED_AFTER_SECS", default_value_t = DEFAULT_OUTBOX_STALLED_AFTER_SECS)]
    pub stalled_after_secs: u64,
}

impl Default for RelayConfig {
    fn default() -> Self {
        Self {
            batch_size: DEFAULT_OUTBOX_BATCH_SIZE,
            poll_ms: DEFAULT_OUTBOX_POLL_MS,
            linger_ms: DEFAULT_OUTBOX_LINGER_MS,
            retention_hours: DEFAULT_OUTBOX_RETENTION_HOURS,
            prune_interval_secs: DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS,
            stalled_after_secs: DEFAULT_OUTBOX_STALLED_AFTER_SECS,
        }
    }
}

impl RelayConfig {
    pub fn linger(&self) -> Duration {
        Duration::from_millis(self.linger_ms)
    }

    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_ms)
    }

    pub fn retention(&self) -> Duration {
        Duration::from_secs(self.retention_hours.saturating_mul(3600))
    }

    pub fn prune_interval(&self) -> Duration {
        Duration::from_secs(self.prune_interval_secs)
    }

    pub fn stalled_after(&self) -> Duration {
        Duration::from_secs(self.stalled_after_secs)
    }
}
