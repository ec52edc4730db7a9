//! Settings of the REST side: who may call it, and what one request (or message) may cost.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::{
    DEFAULT_AMQP_MAX_MESSAGE_BYTES, DEFAULT_MAX_CONCURRENT_REQUESTS, DEFAULT_OPEN_PATHS,
    DEFAULT_REQUEST_TIMEOUT_MS,
};

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
