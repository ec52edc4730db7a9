//! Typed settings, read from the environment (or the equivalent command-line flags) with the
//! defaults of the README's "Configuration" section.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

// The defaults, each stated once: clap, `Default` impls, tests and the bench refer to these.

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/order_service";
pub const DEFAULT_AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
pub const DEFAULT_HTTP_ADDR: SocketAddr =
    SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));
pub const DEFAULT_DB_MAX_CONNECTIONS: u32 = 16;
pub const DEFAULT_LOCK_TIMEOUT_MS: u64 = 5_000;
/// [`DEFAULT_LOCK_TIMEOUT_MS`] as a duration, for code that builds a store without a `Config`.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_millis(DEFAULT_LOCK_TIMEOUT_MS);
pub const DEFAULT_SHUTDOWN_GRACE_SECS: u64 = 30;

pub const DEFAULT_INBOUND_EXCHANGE: &str = "commerce.events";
pub const DEFAULT_INBOX_QUEUE: &str = "order-service.inbox";
pub const DEFAULT_DEAD_LETTER_EXCHANGE: &str = "order-service.dlx";
pub const DEFAULT_DEAD_LETTER_QUEUE: &str = "order-service.dead-letter";
pub const DEFAULT_OUTBOUND_EXCHANGE: &str = "order-service.events";
pub const DEFAULT_AMQP_PREFETCH: u16 = 64;
pub const DEFAULT_AMQP_MAX_ATTEMPTS: u32 = 10;
pub const DEFAULT_AMQP_RETRY_BASE_MS: u64 = 1_000;
pub const DEFAULT_AMQP_RETRY_MAX_MS: u64 = 60_000;

pub const DEFAULT_OPEN_PATHS: [&str; 4] = ["/health", "/metrics", "/docs", "/openapi.json"];

pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 512;
pub const DEFAULT_AMQP_MAX_MESSAGE_BYTES: usize = 64 * 1024;

pub const DEFAULT_OUTBOX_BATCH_SIZE: u32 = 256;
pub const DEFAULT_OUTBOX_POLL_MS: u64 = 1_000;
pub const DEFAULT_OUTBOX_RETENTION_HOURS: u64 = 7 * 24;
pub const DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS: u64 = 60;
/// 0: unpaid orders never expire.
pub const DEFAULT_ORDER_PAYMENT_TIMEOUT_SECS: u64 = 0;
pub const DEFAULT_ORDER_EXPIRY_SWEEP_SECS: u64 = 30;
pub const DEFAULT_ORDER_EXPIRY_BATCH: u32 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Debug, Clone, Args)]
pub struct Config {
    /// Postgres; the database is created if missing and migrated at start.
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        default_value = DEFAULT_DATABASE_URL
    )]
    pub database_url: String,

    /// RabbitMQ.
    #[arg(long, global = true, env = "AMQP_URL", default_value = DEFAULT_AMQP_URL)]
    pub amqp_url: String,

    /// Where the REST API listens.
    #[arg(
        long,
        global = true,
        env = "HTTP_ADDR",
        default_value_t = DEFAULT_HTTP_ADDR
    )]
    pub http_addr: SocketAddr,

    #[arg(
        long,
        global = true,
        env = "LOG_FORMAT",
        value_enum,
        default_value = "pretty"
    )]
    pub log_format: LogFormat,

    /// Size of the Postgres connection pool.
    #[arg(long, global = true, env = "DB_MAX_CONNECTIONS", default_value_t = DEFAULT_DB_MAX_CONNECTIONS)]
    pub db_max_connections: u32,

    /// How long a request waits for a concurrent one holding the same key or order row before
    /// it answers 409 with Retry-After (milliseconds).
    #[arg(long, global = true, env = "LOCK_TIMEOUT_MS", default_value_t = DEFAULT_LOCK_TIMEOUT_MS)]
    pub lock_timeout_ms: u64,

    #[command(flatten)]
    pub amqp: AmqpConfig,

    #[command(flatten)]
    pub relay: RelayConfig,

    #[command(flatten)]
    pub auth: AuthConfig,

    #[command(flatten)]
    pub limits: LimitsConfig,

    #[command(flatten)]
    pub expiry: ExpiryConfig,

    /// How long in-flight work may take to finish after SIGTERM (seconds).
    #[arg(long, global = true, env = "SHUTDOWN_GRACE_SECS", default_value_t = DEFAULT_SHUTDOWN_GRACE_SECS)]
    pub shutdown_grace_secs: u64,
}

impl Config {
    pub fn lock_timeout(&self) -> Duration {
        Duration::from_millis(self.lock_timeout_ms)
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }
}

/// The RabbitMQ side: names of the topology (README "Messaging") and consumer tuning.
#[derive(Debug, Clone, Args)]
pub struct AmqpConfig {
    /// Run the AMQP consumer and outbox relay beside the API.
    #[arg(long = "amqp-enabled", global = true, env = "AMQP_ENABLED", default_value_t = true, action = clap::ArgAction::Set)]
    pub enabled: bool,

    /// Topic exchange the inbound events are published to.
    #[arg(
        long,
        global = true,
        env = "AMQP_INBOUND_EXCHANGE",
        default_value = DEFAULT_INBOUND_EXCHANGE
    )]
    pub inbound_exchange: String,

    /// Quorum queue the consumer reads.
    #[arg(
        long,
        global = true,
        env = "AMQP_INBOX_QUEUE",
        default_value = DEFAULT_INBOX_QUEUE
    )]
    pub inbox_queue: String,

    /// Exchange that routes dead letters to the dead-letter queue.
    #[arg(
        long,
        global = true,
        env = "AMQP_DEAD_LETTER_EXCHANGE",
        default_value = DEFAULT_DEAD_LETTER_EXCHANGE
    )]
    pub dead_letter_exchange: String,

    /// Queue holding messages that cannot be applied, each with an `x-error-reason` header.
    #[arg(
        long,
        global = true,
        env = "AMQP_DEAD_LETTER_QUEUE",
        default_value = DEFAULT_DEAD_LETTER_QUEUE
    )]
    pub dead_letter_queue: String,

    /// Topic exchange the outbox relay publishes order events to.
    #[arg(
        long,
        global = true,
        env = "AMQP_OUTBOUND_EXCHANGE",
        default_value = DEFAULT_OUTBOUND_EXCHANGE
    )]
    pub outbound_exchange: String,

    /// Unacknowledged messages the consumer holds (and processes concurrently) at once.
    #[arg(long, global = true, env = "AMQP_PREFETCH", default_value_t = DEFAULT_AMQP_PREFETCH)]
    pub prefetch: u16,

    /// Deliveries of a premature message (unknown order, ship before paid) before it is
    /// dead-lettered.
    #[arg(long, global = true, env = "AMQP_MAX_ATTEMPTS", default_value_t = DEFAULT_AMQP_MAX_ATTEMPTS)]
    pub max_attempts: u32,

    /// Delay before the first retry of a premature message; doubles per attempt (milliseconds).
    #[arg(
        long,
        global = true,
        env = "AMQP_RETRY_BASE_MS",
        default_value_t = DEFAULT_AMQP_RETRY_BASE_MS
    )]
    pub retry_base_ms: u64,

    /// Longest delay between two attempts (milliseconds).
    #[arg(
        long,
        global = true,
        env = "AMQP_RETRY_MAX_MS",
        default_value_t = DEFAULT_AMQP_RETRY_MAX_MS
    )]
    pub retry_max_ms: u64,
}

impl AmqpConfig {
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

/// Who may call the REST API (see `auth` for the client format and README "Authentication").
#[derive(Debug, Clone, Args)]
pub struct AuthConfig {
    /// API clients, `<client_id>:<sha256 hex of token>:<scopes>` separated by `;`.
    #[arg(long, global = true, env = "AUTH_CLIENTS", hide_env_values = true)]
    pub clients: Option<String>,

    /// A file of API clients, one `<client_id>:<sha256 hex>:<scopes>` per line, `#` comments.
    #[arg(long, global = true, env = "AUTH_CLIENTS_FILE")]
    pub clients_file: Option<PathBuf>,

    /// Serve the API without authentication even on a non-loopback address.
    #[arg(long = "auth-disabled", global = true, env = "AUTH_DISABLED", default_value_t = false, action = clap::ArgAction::Set)]
    pub disabled: bool,

    /// Path prefixes served without a token (matched per segment: `/health` covers `/health/live`).
    #[arg(
        long,
        global = true,
        env = "AUTH_OPEN_PATHS",
        value_delimiter = ',',
        default_values_t = DEFAULT_OPEN_PATHS.map(String::from)
    )]
    pub open_paths: Vec<String>,
}

/// Bounds on what one request or message may cost.
#[derive(Debug, Clone, Args)]
pub struct LimitsConfig {
    /// A request still running after this long is abandoned with 503 (milliseconds).
    #[arg(
        long,
        global = true,
        env = "HTTP_REQUEST_TIMEOUT_MS",
        default_value_t = DEFAULT_REQUEST_TIMEOUT_MS
    )]
    pub request_timeout_ms: u64,

    /// Requests under /v1 served at once; beyond it they are shed with 503 and Retry-After.
    #[arg(
        long,
        global = true,
        env = "HTTP_MAX_CONCURRENT_REQUESTS",
        default_value_t = DEFAULT_MAX_CONCURRENT_REQUESTS
    )]
    pub max_concurrent_requests: usize,

    /// Inbound AMQP messages larger than this are dead-lettered unread (bytes).
    #[arg(
        long,
        global = true,
        env = "AMQP_MAX_MESSAGE_BYTES",
        default_value_t = DEFAULT_AMQP_MAX_MESSAGE_BYTES
    )]
    pub amqp_max_message_bytes: usize,
}

impl LimitsConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }
}

/// The outbox relay: batching, wake-up fallback and retention.
#[derive(Debug, Clone, Args)]
pub struct RelayConfig {
    /// Outbox rows published (and confirmed) per batch.
    #[arg(
        long = "outbox-batch-size",
        global = true,
        env = "OUTBOX_BATCH_SIZE",
        default_value_t = DEFAULT_OUTBOX_BATCH_SIZE
    )]
    pub batch_size: u32,

    /// Poll interval when no NOTIFY arrives (milliseconds).
    #[arg(
        long = "outbox-poll-ms",
        global = true,
        env = "OUTBOX_POLL_MS",
        default_value_t = DEFAULT_OUTBOX_POLL_MS
    )]
    pub poll_ms: u64,

    /// Published rows older than this are deleted (hours; default 7 days).
    #[arg(
        long = "outbox-retention-hours",
        global = true,
        env = "OUTBOX_RETENTION_HOURS",
        default_value_t = DEFAULT_OUTBOX_RETENTION_HOURS
    )]
    pub retention_hours: u64,

    /// How often the relay prunes (seconds).
    #[arg(
        long = "outbox-prune-interval-secs",
        global = true,
        env = "OUTBOX_PRUNE_INTERVAL_SECS",
        default_value_t = DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS
    )]
    pub prune_interval_secs: u64,
}

impl RelayConfig {
    pub fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.poll_ms)
    }

    pub fn retention(&self) -> Duration {
        Duration::from_secs(self.retention_hours.saturating_mul(3600))
    }

    pub fn prune_interval(&self) -> Duration {
        Duration::from_secs(self.prune_interval_secs)
    }
}

/// Payment expiry: how long an order may wait for its payment, and how each instance sweeps.
#[derive(Debug, Clone, Args)]
pub struct ExpiryConfig {
    /// An order still PENDING_PAYMENT this long after it was placed is cancelled with reason
    /// `payment_timeout` (seconds; 0 = never).
    #[arg(
        long = "order-payment-timeout-secs",
        global = true,
        env = "ORDER_PAYMENT_TIMEOUT_SECS",
        default_value_t = DEFAULT_ORDER_PAYMENT_TIMEOUT_SECS
    )]
    pub payment_timeout_secs: u64,

    /// How often an instance looks for expired orders (seconds).
    #[arg(
        long = "order-expiry-sweep-secs",
        global = true,
        env = "ORDER_EXPIRY_SWEEP_SECS",
        default_value_t = DEFAULT_ORDER_EXPIRY_SWEEP_SECS,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub sweep_secs: u64,

    /// The most orders one sweep cancels; a full sweep is followed by another at once.
    #[arg(
        long = "order-expiry-batch",
        global = true,
        env = "ORDER_EXPIRY_BATCH",
        default_value_t = DEFAULT_ORDER_EXPIRY_BATCH,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub batch: u32,
}

impl ExpiryConfig {
    /// `None` when orders never expire.
    pub fn payment_timeout(&self) -> Option<Duration> {
        (self.payment_timeout_secs > 0).then(|| Duration::from_secs(self.payment_timeout_secs))
    }

    pub fn sweep_interval(&self) -> Duration {
        Duration::from_secs(self.sweep_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: Config,
    }

    fn defaults() -> Config {
        Cli::parse_from(["order-service"]).config
    }

    #[test]
    fn defaults_follow_the_design() {
        let config = defaults();
        assert_eq!(
            config.database_url,
            "postgres://postgres@127.0.0.1:5432/order_service"
        );
        assert_eq!(config.amqp_url, "amqp://guest:guest@127.0.0.1:5672/%2f");
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(config.amqp.inbound_exchange, "commerce.events");
        assert_eq!(config.amqp.inbox_queue, "order-service.inbox");
        assert_eq!(config.amqp.dead_letter_queue, "order-service.dead-letter");
        assert_eq!(config.amqp.outbound_exchange, "order-service.events");
        assert_eq!(config.amqp.max_attempts, 10);
        assert_eq!(config.relay.retention(), Duration::from_secs(7 * 24 * 3600));
        assert!(config.auth.clients.is_none() && config.auth.clients_file.is_none());
        assert!(!config.auth.disabled);
        assert_eq!(
            config.auth.open_paths,
            ["/health", "/metrics", "/docs", "/openapi.json"]
        );
        assert_eq!(config.limits.request_timeout(), Duration::from_secs(10));
        assert_eq!(config.limits.max_concurrent_requests, 512);
        assert_eq!(config.limits.amqp_max_message_bytes, 65_536);
    }

    #[test]
    fn retry_delays_start_at_the_base_double_and_are_capped() {
        let amqp = defaults().amqp;
        let delays: Vec<u64> = (1..=9).map(|a| amqp.retry_delay(a).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(
            amqp.retry_delays().len(),
            7,
            "one delay queue per distinct delay"
        );
    }
}
