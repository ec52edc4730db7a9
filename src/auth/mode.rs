//! The secure default: without configured clients the API runs open (every caller is the client
//! `anonymous` with every scope) only where nobody else can reach it, or when an operator says so
//! explicitly.

use std::net::SocketAddr;

use super::clients::ClientRegistry;

/// How the REST API treats callers.
#[derive(Debug, Clone)]
pub enum AuthMode {
    /// Every request outside the open paths needs a bearer token of a configured client.
    Enforced(ClientRegistry),
    /// Every caller is `anonymous`, with every scope.
    Open,
}

/// Why the service refuses to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeError {
    #[error(
        "no API clients are configured and HTTP_ADDR {0} is reachable from other hosts: \
         configure clients with AUTH_CLIENTS or AUTH_CLIENTS_FILE (`order-service token --client \
         <id>` makes one), or set AUTH_DISABLED=true to serve the API without authentication"
    )]
    Unprotected(SocketAddr),
    #[error(
        "AUTH_DISABLED=true contradicts the {0} configured API client(s): remove one or the other"
    )]
    Contradictory(usize),
}

/// The decision, as a pure function of the configuration so it can be tested exhaustively.
pub fn decide_mode(
    clients: ClientRegistry,
    http_addr: SocketAddr,
    auth_disabled: bool,
) -> Result<AuthMode, ModeError> {
    match (clients.is_empty(), auth_disabled) {
        (false, false) => Ok(AuthMode::Enforced(clients)),
        (false, true) => Err(ModeError::Contradictory(clients.len())),
        (true, true) => Ok(AuthMode::Open),
        (true, false) if is_loopback(http_addr) => Ok(AuthMode::Open),
        (true, false) => Err(ModeError::Unprotected(http_addr)),
    }
}

/// 127.0.0.0/8, `::1` and `::ffff:127.x.y.z`. The unspecified address (`0.0.0.0`, `::`) listens
/// on every interface, so it is not loopback.
fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::TokenDigest;

    fn some_clients() -> ClientRegistry {
        let line = format!("shop:{}:orders:read", TokenDigest::of("t").to_hex());
        ClientRegistry::parse(&line, "test").unwrap()
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn configured_clients_are_enforced_on_any_address() {
        for a in ["127.0.0.1:8080", "0.0.0.0:8080", "[::]:80", "10.1.2.3:8080"] {
            assert!(
                matches!(
                    decide_mode(some_clients(), addr(a), false),
                    Ok(AuthMode::Enforced(_))
                ),
                "{a}"
            );
        }
    }

    #[test]
    fn without_clients_a_loopback_address_runs_open() {
        for a in [
            "127.0.0.1:8080",
            "127.0.0.2:0",
            "[::1]:8080",
            "[::ffff:127.0.0.1]:8080",
        ] {
            assert!(
                matches!(
                    decide_mode(ClientRegistry::default(), addr(a), false),
                    Ok(AuthMode::Open)
                ),
                "{a}"
            );
        }
    }

    #[test]
    fn without_clients_any_other_address_refuses_to_start() {
        for a in [
            "0.0.0.0:8080",
            "[::]:8080",
            "192.168.1.10:8080",
            "[fe80::1]:8080",
            "[::ffff:10.0.0.1]:8080",
        ] {
            let decision = decide_mode(ClientRegistry::default(), addr(a), false);
            assert_eq!(
                decision.unwrap_err(),
                ModeError::Unprotected(addr(a)),
                "{a}"
            );
        }
    }

    #[test]
    fn auth_disabled_runs_open_on_any_address_but_not_beside_clients() {
        assert!(matches!(
            decide_mode(ClientRegistry::default(), addr("0.0.0.0:8080"), true),
            Ok(AuthMode::Open)
        ));
        assert_eq!(
            decide_mode(some_clients(), addr("0.0.0.0:8080"), true).unwrap_err(),
            ModeError::Contradictory(1)
        );
    }

    #[test]
    fn the_refusal_tells_the_operator_how_to_fix_it() {
        let message = ModeError::Unprotected(addr("0.0.0.0:8080")).to_string();
        for needle in [
            "AUTH_CLIENTS",
            "AUTH_CLIENTS_FILE",
            "AUTH_DISABLED=true",
            "token",
        ] {
            assert!(message.contains(needle), "{message}");
        }
    }
}
