//! Typed settings, read from the environment (or the equivalent command-line flags) with the
//! defaults of DESIGN.md §5.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};

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
        default_value = "postgres://postgres@127.0.0.1:5432/order_service"
    )]
    pub database_url: String,

    /// RabbitMQ.
    #[arg(
        long,
        env = "AMQP_URL",
        default_value = "amqp://guest:guest@127.0.0.1:5672/%2f"
    )]
    pub amqp_url: String,

    /// Where the REST API listens.
    #[arg(
        long,
        global = true,
        env = "HTTP_ADDR",
        default_value = "127.0.0.1:8080"
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
    #[arg(long, global = true, env = "DB_MAX_CONNECTIONS", default_value_t = 16)]
    pub db_max_connections: u32,

    /// How long a request waits for a concurrent one holding the same key or order row before
    /// it answers 409 with Retry-After (milliseconds).
    #[arg(long, global = true, env = "LOCK_TIMEOUT_MS", default_value_t = 5_000)]
    pub lock_timeout_ms: u64,

    /// How long in-flight work may take to finish after SIGTERM (seconds).
    #[arg(long, global = true, env = "SHUTDOWN_GRACE_SECS", default_value_t = 30)]
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
