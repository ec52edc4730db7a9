//! Settings of the REST side: who may call it, and what one request (or message) may cost.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{
    DEFAULT_AMQP_MAX_MESSAGE_BYTES, DEFAULT_HTTP_BODY_READ_TIMEOUT_MS,
    DEFAULT_HTTP_HEADER_READ_TIMEOUT_MS, DEFAULT_HTTP_IDLE_TIMEOUT_SECS,
    DEFAULT_HTTP_MAX_CONNECTIONS, DEFAULT_MAX_CONCURRENT_REQUESTS, DEFAULT_OPEN_PATHS,
    DEFAULT_REQUEST_TIMEOUT_MS,
};

/// Who may call the REST API (see `auth` for the client format and
/// docs/operations/authentication.md).
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
    #[arg(long, global = true, env = "AUTH_OPEN_PATHS", value_delimiter = ',', default_values_t = DEFAULT_OPEN_PATHS.map(String::from))]
    pub open_paths: Vec<String>,
}

/// Bounds on what one request or message may cost.
#[derive(Debug, Clone, Args)]
pub struct LimitsConfig {
    /// A request still running after this long is abandoned with 503 (milliseconds).
    #[arg(long, global = true, env = "HTTP_REQUEST_TIMEOUT_MS", default_value_t = DEFAULT_REQUEST_TIMEOUT_MS)]
    pub request_timeout_ms: u64,

    /// Requests under /v1 served at once; beyond it they are shed with 503 and Retry-After.
    #[arg(long, global = true, env = "HTTP_MAX_CONCURRENT_REQUESTS", default_value_t = DEFAULT_MAX_CONCURRENT_REQUESTS)]
    pub max_concurrent_requests: usize,

    /// A request body not fully received this long after its head is refused with 408
    /// (milliseconds); it is read before the request takes one of the concurrent slots.
    #[arg(long, global = true, env = "HTTP_BODY_READ_TIMEOUT_MS", default_value_t = DEFAULT_HTTP_BODY_READ_TIMEOUT_MS)]
    pub body_read_timeout_ms: u64,

    /// A connection that has not sent a complete request head this long after it opened (or
    /// after its previous answer) is closed (milliseconds).
    #[arg(long, global = true, env = "HTTP_HEADER_READ_TIMEOUT_MS", default_value_t = DEFAULT_HTTP_HEADER_READ_TIMEOUT_MS)]
    pub header_read_timeout_ms: u64,

    /// A connection on which no byte moved either way this long is closed (seconds); must
    /// exceed the request timeout.
    #[arg(long, global = true, env = "HTTP_IDLE_TIMEOUT_SECS", default_value_t = DEFAULT_HTTP_IDLE_TIMEOUT_SECS)]
    pub idle_timeout_secs: u64,

    /// Connections open at once; beyond it new ones wait in the listen backlog. Keep it below
    /// the file-descriptor limit minus the database pool.
    #[arg(long, global = true, env = "HTTP_MAX_CONNECTIONS", default_value_t = DEFAULT_HTTP_MAX_CONNECTIONS)]
    pub max_connections: usize,

    /// Inbound AMQP messages larger than this are dead-lettered unread (bytes).
    #[arg(long, global = true, env = "AMQP_MAX_MESSAGE_BYTES", default_value_t = DEFAULT_AMQP_MAX_MESSAGE_BYTES)]
    pub amqp_max_message_bytes: usize,
}

impl LimitsConfig {
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.request_timeout_ms)
    }

    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }
}
