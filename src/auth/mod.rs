//! Who may call the REST API: configured clients (an id, the SHA-256 of a bearer token and
//! scopes), the token generator behind `order-service token`, and the start-up decision between
//! enforcing authentication and running open. The HTTP side (headers, 401/403) is
//! `http::auth`; this module knows nothing of HTTP.

mod clients;
mod mode;
mod token;

use std::path::Path;

use anyhow::Context;

pub use clients::{Client, ClientRegistry, ConfigError, Scope, Scopes};
pub use mode::{AuthMode, ModeError, decide_mode};
pub use token::{TOKEN_PREFIX, TokenDigest, generate_token};

use crate::config::AuthConfig;

/// Reads the clients of `AUTH_CLIENTS` and `AUTH_CLIENTS_FILE` (both may be set: their entries
/// are merged, and a client id or token configured twice is an error) and decides the mode for
/// an API bound to `http_addr`.
pub fn from_config(
    config: &AuthConfig,
    http_addr: std::net::SocketAddr,
) -> anyhow::Result<AuthMode> {
    let mut clients = ClientRegistry::default();
    if let Some(inline) = config.clients.as_deref() {
        clients = clients.merge(ClientRegistry::parse(inline, "AUTH_CLIENTS")?)?;
    }
    if let Some(path) = config.clients_file.as_deref() {
        clients = clients.merge(read_file(path)?)?;
    }
    Ok(decide_mode(clients, http_addr, config.disabled)?)
}

fn read_file(path: &Path) -> anyhow::Result<ClientRegistry> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read AUTH_CLIENTS_FILE {}", path.display()))?;
    Ok(ClientRegistry::parse(&text, &path.display().to_string())?)
}
