//! Typed settings, read from the environment (or the equivalent command-line flags) with the
//! defaults that docs/operations/configuration.md and the README's first settings list. Every
//! default is a `DEFAULT_*` constant here, the one source that clap, the tests and the bench read;
//! each group of settings lives in a submodule of its own.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use clap::{Args, ValueEnum};

mod amqp;
mod endpoints;
mod event_stream;
mod expiry;
mod http;
mod relay;

pub use amqp::AmqpConfig;
pub use endpoints::{AmqpEndpoint, AmqpEndpoints, EndpointsError};
pub use event_stream::EventStreamConfig;
pub use expiry::ExpiryConfig;
pub use http::{AuthConfig, LimitsConfig};
pub use relay::RelayConfig;

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
/// The stream queue that keeps every published event (docs/messaging.md "Replaying events from
/// the stream").
pub const DEFAULT_EVENT_STREAM: &str = "order-service.events.stream";
/// A week, as long as the outbox keeps published events (`OUTBOX_RETENTION_HOURS`).
pub const DEFAULT_EVENT_STREAM_MAX_AGE: &str = "7D";
/// 10 GiB per node: a week of events up to about 17 a second (an event takes about 1 KiB);
/// above that the size decides, so that the stream never fills the broker's disk, which would
/// block every publisher.
pub const DEFAULT_EVENT_STREAM_MAX_BYTES: u64 = 10 * 1024 * 1024 * 1024;
/// 100 MiB segments: retention removes whole segments, so one is a hundredth of the stream.
pub const DEFAULT_EVENT_STREAM_SEGMENT_BYTES: u64 = 100 * 1024 * 1024;
/// Deliveries held unacknowledged: with the broker's largest message, the bound on what they
/// hold in memory (RabbitMQ has no byte-based prefetch; docs/hostile-input.md#memory).
pub const DEFAULT_AMQP_PREFETCH: u16 = 16;
/// Deliveries per consumer transaction: the whole prefetch in one batch. A batch costs two
/// statements whatever its size, so one of 16 measured faster and cheaper than two of 8
/// (docs/hostile-input.md#memory).
pub const DEFAULT_AMQP_BATCH_SIZE: u16 = 16;
pub const DEFAULT_AMQP_BATCH_WAIT_MS: u64 = 2;
/// How long a statement of a batch of several deliveries waits for a lock (docs/messaging.md
/// "Batched consumer commits"): a few of a concurrent batch's commits, so that a message whose
/// order stays locked leaves its batch quickly instead of holding the others' acknowledgements.
pub const DEFAULT_AMQP_BATCH_LOCK_WAIT_MS: u64 = 100;
/// Postgres keeps the ids of up to 64 subtransactions that wrote per session in shared memory
/// (`PGPROC_MAX_CACHED_SUBXIDS`); one more and every session's visibility checks must read
/// `pg_subtrans`. A batch writes under at most one savepoint per delivery.
pub const MAX_AMQP_BATCH_SIZE: u16 = 64;
pub const DEFAULT_AMQP_MAX_ATTEMPTS: u32 = 10;
/// Broker deliveries without a settlement before the broker dead-letters a message
/// (docs/messaging.md "What each inbound message does": the crash-loop guard).
pub const DEFAULT_AMQP_DELIVERY_LIMIT: u32 = 20;
pub const DEFAULT_AMQP_RETRY_BASE_MS: u64 = 1_000;
pub const DEFAULT_AMQP_RETRY_MAX_MS: u64 = 60_000;

pub const DEFAULT_OPEN_PATHS: [&str; 7] = [
    "/health",
    "/metrics",
    "/docs",
    // The console's page and assets: static, no data (the page calls /v1 with a token).
    "/console",
    "/openapi.json",
    "/asyncapi.json",
    // The service's icon, which browsers ask for without a token.
    "/favicon.ico",
];

pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 512;
pub const DEFAULT_AMQP_MAX_MESSAGE_BYTES: usize = 64 * 1024;
pub const DEFAULT_HTTP_HEADER_READ_TIMEOUT_MS: u64 = 10_000;
pub const DEFAULT_HTTP_BODY_READ_TIMEOUT_MS: u64 = 5_000;
pub const DEFAULT_HTTP_IDLE_TIMEOUT_SECS: u64 = 60;
/// Below the common file-descriptor limit of 1024, with room for the pool and the broker.
pub const DEFAULT_HTTP_MAX_CONNECTIONS: usize = 512;

pub const DEFAULT_OUTBOX_BATCH_SIZE: u32 = 256;
pub const DEFAULT_OUTBOX_POLL_MS: u64 = 1_000;
/// How long after a read that found events the relay reads again at the soonest, so events
/// committed meanwhile share a batch (docs/messaging.md "Batches that grow with load").
pub const DEFAULT_OUTBOX_LINGER_MS: u64 = 20;
pub const DEFAULT_OUTBOX_RETENTION_HOURS: u64 = 7 * 24;
pub const DEFAULT_OUTBOX_PRUNE_INTERVAL_SECS: u64 = 60;
/// How long a relay may go without a successful batch while events wait before readiness names it.
pub const DEFAULT_OUTBOX_STALLED_AFTER_SECS: u64 = 60;
/// 0: unpaid orders never expire.
pub const DEFAULT_ORDER_PAYMENT_TIMEOUT_SECS: u64 = 0;
pub const DEFAULT_ORDER_EXPIRY_SWEEP_SECS: u64 = 30;
pub const DEFAULT_ORDER_EXPIRY_BATCH: u32 = 500;
/// The service's name on exported spans unless OpenTelemetry's `OTEL_SERVICE_NAME` (or a
/// `service.name` in `OTEL_RESOURCE_ATTRIBUTES`) names it (docs/operations/observability.md
/// "Tracing").
pub const DEFAULT_SERVICE_NAME: &str = "order-service";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Json,
    Pretty,
}

#[derive(Debug, Clone, Args)]
pub struct Config {
    // URLs may hold a password: `--help` shows neither their environment value nor a default
    // with its password (`url_help`).
    #[arg(
        long,
        global = true,
        env = "DATABASE_URL",
        default_value = DEFAULT_DATABASE_URL,
        hide_env_values = true,
        hide_default_value = true,
        help = url_help(
            "Postgres: one host, or several in libpq's form (h1:p1,h2:p2 with \
             target_session_attrs, default read-write), followed across failovers; the \
             database is created if missing and migrated at start.",
            DEFAULT_DATABASE_URL,
        )
    )]
    pub database_url: String,

    #[arg(
        long,
        global = true,
        env = "AMQP_URL",
        default_value = DEFAULT_AMQP_URL,
        hide_env_values = true,
        hide_default_value = true,
        value_parser = AmqpEndpoints::value_parser(),
        help = url_help(
            "RabbitMQ: one node, or several nodes of one cluster separated by commas (each \
             component connects to one at random and, when it is lost, to another).",
            DEFAULT_AMQP_URL,
        )
    )]
    pub amqp_url: AmqpEndpoints,

    /// Where the REST API listens.
    #[arg(long, global = true, env = "HTTP_ADDR", default_value_t = DEFAULT_HTTP_ADDR)]
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

/// A URL as it may be shown: the password of its user info, if any, replaced by `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => match user_info.split_once(':') {
            Some((user, _password)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

fn url_help(what: &str, default: &str) -> String {
    format!("{what} [default: {}]", redact_url(default))
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
        assert_eq!(
            config.amqp_url.as_slice()[0].url(),
            "amqp://guest:guest@127.0.0.1:5672/%2f"
        );
        assert_eq!(config.amqp_url.as_slice().len(), 1);
        assert_eq!(config.http_addr.to_string(), "127.0.0.1:8080");
        assert_eq!(config.amqp.inbound_exchange, "commerce.events");
        assert_eq!(config.amqp.inbox_queue, "order-service.inbox");
        assert_eq!(config.amqp.dead_letter_queue, "order-service.dead-letter");
        assert_eq!(config.amqp.outbound_exchange, "order-service.events");
        assert_eq!(config.amqp.max_attempts, 10);
        assert_eq!(config.amqp.batch_size, DEFAULT_AMQP_BATCH_SIZE);
        assert_eq!(config.amqp.batch_wait(), Duration::from_millis(2));
        assert_eq!(config.amqp.delivery_limit, 20);
        assert_eq!(config.relay.retention(), Duration::from_secs(7 * 24 * 3600));
        assert!(config.auth.clients.is_none() && config.auth.clients_file.is_none());
        assert!(!config.auth.disabled);
        assert_eq!(
            config.auth.open_paths,
            [
                "/health",
                "/metrics",
                "/docs",
                "/console",
                "/openapi.json",
                "/asyncapi.json",
                "/favicon.ico"
            ]
        );
        assert_eq!(config.limits.request_timeout(), Duration::from_secs(10));
        assert_eq!(config.limits.max_concurrent_requests, 512);
        assert_eq!(config.limits.amqp_max_message_bytes, 65_536);
        assert_eq!(config.limits.header_read_timeout(), Duration::from_secs(10));
        assert_eq!(config.limits.body_read_timeout(), Duration::from_secs(5));
        assert_eq!(config.limits.idle_timeout(), Duration::from_secs(60));
        assert_eq!(config.limits.max_connections, 512);
    }

    #[test]
    fn the_amqp_default_is_what_clap_applies() {
        assert_eq!(AmqpConfig::default(), defaults().amqp);
    }

    #[test]
    fn a_batch_size_is_from_one_to_the_subtransaction_cache() {
        assert!(Cli::try_parse_from(["order-service", "--amqp-batch-size", "0"]).is_err());
        assert!(Cli::try_parse_from(["order-service", "--amqp-batch-size", "65"]).is_err());
        let most = Cli::try_parse_from(["order-service", "--amqp-batch-size", "64"]).expect("64");
        assert_eq!(most.config.amqp.batch_size, MAX_AMQP_BATCH_SIZE);
        let one = Cli::try_parse_from(["order-service", "--amqp-batch-size", "1"]).expect("one");
        assert_eq!(one.config.amqp.batch_size, 1);
    }

    #[test]
    fn a_batch_takes_no_more_than_the_prefetch_lets_the_broker_send() {
        let limit = |batch_size, prefetch| {
            AmqpConfig {
                prefetch,
                batch_size,
                ..AmqpConfig::default()
            }
            .batch_limit()
        };
        assert_eq!(limit(16, 16), 16);
        assert_eq!(limit(8, 64), 8);
        assert_eq!(limit(16, 4), 4);
        assert_eq!(limit(16, 1), 1);
        // A prefetch of 0 is no limit at all.
        assert_eq!(limit(16, 0), 16);
    }

    #[test]
    fn a_urls_password_is_redacted_and_the_rest_kept() {
        assert_eq!(
            redact_url("amqp://guest:guest@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(
            redact_url("postgres://app:p%40ss:w@db:5432/x?sslmode=require"),
            "postgres://app:***@db:5432/x?sslmode=require"
        );
        assert_eq!(redact_url(DEFAULT_DATABASE_URL), DEFAULT_DATABASE_URL);
        assert_eq!(redact_url("not a url"), "not a url");
    }

    #[test]
    fn a_malformed_amqp_url_list_is_refused_naming_the_item_without_its_password() {
        let refused = Cli::try_parse_from([
            "order-service",
            "--amqp-url",
            "amqp://app:s3cret@mq-1:5672/%2f,,amqp://app:s3cret@mq-2:5672/%2f",
        ])
        .err()
        .expect("refused");
        let message = refused.to_string();
        assert!(message.contains("item 2 of AMQP_URL is empty"), "{message}");
        assert!(!message.contains("s3cret"), "{message}");

        let listed = Cli::try_parse_from([
            "order-service",
            "--amqp-url",
            "amqp://app:s3cret@mq-1:5672/%2f,amqp://app:s3cret@mq-2:5672/%2f",
        ])
        .expect("two nodes");
        assert_eq!(listed.config.amqp_url.as_slice().len(), 2);
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
