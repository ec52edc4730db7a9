//! The configured API clients and the lookup of a presented token among them.
//!
//! Configuration format (the same for `AUTH_CLIENTS` and the file named by `AUTH_CLIENTS_FILE`):
//! entries separated by newlines or `;`, each
//!
//! ```text
//! <client_id>:<sha256 of the token, 64 hex digits>:<scope>[,<scope>…]
//! ```
//!
//! `#` starts a comment running to the end of the line; blank entries are ignored. A client id is
//! what `ClientId::parse` accepts (1–64 characters of `A-Z a-z 0-9 . _ @ -`). Scopes are `orders:read`, `orders:write` and `orders:admin`,
//! separated by `,` (or `+`).

use std::fmt;

use subtle::{Choice, ConditionallySelectable};

use super::token::TokenDigest;
use crate::domain::ClientId;

/// What a client may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Every GET under `/v1` but the dead letters.
    OrdersRead,
    /// Every POST under `/v1` but the dead letters.
    OrdersWrite,
    /// Everything under `/v1/dead-letters`: reading, replaying and discarding dead letters.
    OrdersAdmin,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::OrdersRead, Scope::OrdersWrite, Scope::OrdersAdmin];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::OrdersRead => "orders:read",
            Scope::OrdersWrite => "orders:write",
            Scope::OrdersAdmin => "orders:admin",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }

    fn bit(self) -> u8 {
        match self {
            Scope::OrdersRead => 1,
            Scope::OrdersWrite => 2,
            Scope::OrdersAdmin => 4,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Scopes(u8);

impl Scopes {
    pub fn all() -> Self {
        Scope::ALL.into_iter().collect()
    }

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The scopes in the set, in [`Scope::ALL`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL
            .into_iter()
            .filter(move |scope| self.contains(*scope))
    }

    /// Parses `orders:read,orders:write` (`+` also separates).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut scopes = Scopes::default();
        for name in text.split([',', '+']).map(str::trim) {
            let scope = Scope::parse(name).ok_or_else(|| {
                let known: Vec<&str> = Scope::ALL.into_iter().map(Scope::as_str).collect();
                format!("unknown scope {name:?} (known: {})", known.join(", "))
            })?;
            scopes.0 |= scope.bit();
        }
        Ok(scopes)
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(scopes: I) -> Self {
        Scopes(scopes.into_iter().fold(0, |bits, s| bits | s.bit()))
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Scope::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .map(Scope::as_str)
            .collect();
        f.write_str(&names.join(","))
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: ClientId,
    pub scopes: Scopes,
}

impl Client {
    /// The caller of an API running without authentication: one client with every scope.
    pub fn anonymous() -> Self {
        Self {
            id: ClientId::anonymous(),
            scopes: Scopes::all(),
        }
    }

    /// The configuration line for this client and token digest.
    pub fn config_line(&self, digest: &TokenDigest) -> String {
        format!("{}:{}:{}", self.id, digest.to_hex(), self.scopes)
    }
}

/// A configuration entry that cannot be used; start-up stops on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}, entry {entry}: {reason}")]
pub struct ConfigError {
    origin: String,
    /// 1-based position among the non-blank entries.
    entry: usize,
    reason: String,
}

/// The configured clients, each under the digest of its token.
#[derive(Debug, Clone, Default)]
pub struct ClientRegistry {
    entries: Vec<(TokenDigest, Client)>,
}

impl ClientRegistry {
    /// Parses the configuration format described in the module documentation. `origin` names
    /// where the text came from, for error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConfigError> {
        let entries = text
            .lines()
            .map(|line| line.split_once('#').map_or(line, |(before, _)| before))
            .flat_map(|line| line.split(';'))
            .map(str::trim)
            .filter(|entry| !entry.is_empty());
        let mut registry = Self::default();
        for (index, entry) in entries.enumerate() {
            let error = |reason: String| ConfigError {
                origin: origin.to_owned(),
                entry: index + 1,
                reason,
            };
            let (digest, client) = parse_entry(entry).map_err(error)?;
            registry.insert(digest, client).map_err(error)?;
        }
        Ok(registry)
    }

    /// The clients of both registries; a token in both is an error.
    pub fn merge(mut self, other: ClientRegistry) -> Result<Self, ConfigError> {
        for (index, (digest, client)) in other.entries.into_iter().enumerate() {
            self.insert(digest, client).map_err(|reason| ConfigError {
                origin: "merged client configuration".into(),
                entry: index + 1,
                reason,
            })?;
        }
        Ok(self)
    }

    /// A client id may hold several tokens (to rotate one without a gap: add the new line, move
    /// the caller over, remove the old); a token may belong to one client only.
    fn insert(&mut self, digest: TokenDigest, client: Client) -> Result<(), String> {
        if self.entries.iter().any(|(d, _)| *d == digest) {
            return Err(format!(
                "client {} uses a token configured already",
                client.id
            ));
        }
        self.entries.push((digest, client));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each configured client id once, in configuration order.
    pub fn client_ids(&self) -> Vec<&ClientId> {
        let mut ids: Vec<&ClientId> = Vec::new();
        for (_, client) in &self.entries {
            if !ids.contains(&&client.id) {
                ids.push(&client.id);
            }
        }
        ids
    }

    /// The client holding `token`, if any. The token's digest is compared with every configured
    /// digest in constant time, and the scan never stops early, so the time taken says nothing
    /// about which (or whether a) stored digest shares a prefix with the presented one.
    pub fn authenticate(&self, token: &str) -> Option<&Client> {
        let presented = TokenDigest::of(token);
        let mut found = Choice::from(0);
        let mut index = 0u64;
        for (i, (digest, _)) in self.entries.iter().enumerate() {
            let matches = digest.ct_eq(&presented);
            index.conditional_assign(&(i as u64), matches);
            found |= matches;
        }
        bool::from(found)
            .then(|| usize::try_from(index).ok())
            .flatten()
            .and_then(|i| self.entries.get(i))
            .map(|(_, client)| client)
    }
}

fn parse_entry(entry: &str) -> Result<(TokenDigest, Client), String> {
    let mut fields = entry.splitn(3, ':');
    let (Some(id), Some(hash), Some(scopes)) = (fields.next(), fields.next(), fields.next()) else {
        return Err("expected <client_id>:<sha256 hex>:<scopes>".into());
    };
    let id = parse_client_id(id.trim())?;
    let digest = TokenDigest::from_hex(hash.trim()).ok_or_else(|| {
        format!("client {id}: the token hash must be 64 hexadecimal digits (a SHA-256)")
    })?;
    let scopes = Scopes::parse(scopes).map_err(|e| format!("client {id}: {e}"))?;
    Ok((digest, Client { id, scopes }))
}

fn parse_client_id(text: &str) -> Result<ClientId, String> {
    ClientId::parse(text).map_err(|e| format!("client id {text:?} {}", e.reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, token: &str, scopes: &str) -> String {
        format!("{id}:{}:{scopes}", TokenDigest::of(token).to_hex())
    }

    /// One [`line`] per `(id, token, scopes)`, separated by `;` as `AUTH_CLIENTS` takes them.
    fn lines(clients: &[(&str, &str, &str)]) -> String {
        let lines: Vec<String> = clients
            .iter()
            .map(|(id, token, scopes)| line(id, token, scopes))
            .collect();
        lines.join(";")
    }

    #[test]
    fn entries_separated_by_semicolons_or_lines_with_comments_parse() {
        let text = format!(
            "# the shop\n{}\n\n{} ; {} # reporting\n",
            line("shop", "t1", "orders:read,orders:write"),
            line("billing", "t2", "orders:read+orders:write"),
            line("reports", "t3", "orders:read"),
        );
        let registry = ClientRegistry::parse(&text, "test").unwrap();
        assert_eq!(registry.len(), 3);
        let reports = registry.authenticate("t3").unwrap();
        assert_eq!(reports.id.as_str(), "reports");
        assert!(reports.scopes.contains(Scope::OrdersRead));
        assert!(!reports.scopes.contains(Scope::OrdersWrite));
        assert_eq!(
            registry.authenticate("t2").unwrap().scopes,
            Scopes::parse("orders:write,orders:read").unwrap()
        );
        assert!(
            !registry
                .authenticate("t2")
                .unwrap()
                .scopes
                .contains(Scope::OrdersAdmin)
        );
    }

    #[test]
    fn orders_admin_is_a_scope_of_its_own() {
        let registry = ClientRegistry::parse(&line("ops", "t", "orders:admin"), "test").unwrap();
        let ops = registry.authenticate("t").unwrap();
        assert!(ops.scopes.contains(Scope::OrdersAdmin));
        assert!(!ops.scopes.contains(Scope::OrdersRead));
        assert_eq!(ops.scopes.to_string(), "orders:admin");
        assert!(Client::anonymous().scopes.contains(Scope::OrdersAdmin));
    }

    #[test]
    fn only_the_exact_token_authenticates() {
        let registry =
            ClientRegistry::parse(&line("shop", "ost_secret", "orders:read"), "test").unwrap();
        assert!(registry.authenticate("ost_secret").is_some());
        for wrong in ["", "ost_secre", "ost_secret ", "OST_SECRET", "ost_secreu"] {
            assert!(registry.authenticate(wrong).is_none(), "{wrong:?}");
        }
        // The configured hash itself is not a token.
        let hash = TokenDigest::of("ost_secret").to_hex();
        assert!(registry.authenticate(&hash).is_none());
    }

    #[test]
    fn the_last_of_many_clients_is_found() {
        let text: Vec<String> = (0..10)
            .map(|i| line(&format!("c{i}"), &format!("t{i}"), "orders:read"))
            .collect();
        let registry = ClientRegistry::parse(&text.join(";"), "test").unwrap();
        assert_eq!(registry.authenticate("t9").unwrap().id.as_str(), "c9");
        assert_eq!(registry.authenticate("t0").unwrap().id.as_str(), "c0");
        assert!(registry.authenticate("t10").is_none());
    }

    #[test]
    fn bad_entries_are_refused_with_their_position() {
        let hash = TokenDigest::of("t").to_hex();
        for (text, needle) in [
            ("shop".to_owned(), "expected"),
            (format!("shop:{hash}"), "expected"),
            ("shop:abc:orders:read".to_owned(), "64 hexadecimal"),
            (format!("shop:{hash}:orders:delete"), "unknown scope"),
            (format!("shop:{hash}:"), "unknown scope"),
            (format!(":{hash}:orders:read"), "client id"),
            (format!("sh op:{hash}:orders:read"), "client id"),
            (
                format!("{}:{hash}:orders:read", "c".repeat(65)),
                "client id",
            ),
        ] {
            let error = ClientRegistry::parse(&text, "AUTH_CLIENTS")
                .unwrap_err()
                .to_string();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.starts_with("AUTH_CLIENTS, entry 1"), "{error}");
        }
    }

    #[test]
    fn a_token_configured_twice_is_refused() {
        let shared = lines(&[("a", "t", "orders:read"), ("b", "t", "orders:read")]);
        assert!(ClientRegistry::parse(&shared, "x").is_err());
        let one = ClientRegistry::parse(&line("a", "t1", "orders:read"), "x").unwrap();
        let again = ClientRegistry::parse(&line("b", "t1", "orders:write"), "y").unwrap();
        assert!(one.merge(again).is_err());
    }

    #[test]
    fn a_client_may_hold_two_tokens_while_one_is_rotated() {
        let both = lines(&[
            ("shop", "old", "orders:read,orders:write"),
            ("shop", "new", "orders:read,orders:write"),
        ]);
        let registry = ClientRegistry::parse(&both, "x").unwrap();
        assert_eq!(registry.authenticate("old").unwrap().id.as_str(), "shop");
        assert_eq!(registry.authenticate("new").unwrap().id.as_str(), "shop");
        assert_eq!(registry.client_ids().len(), 1);
    }

    #[test]
    fn a_config_line_parses_back_into_the_same_client() {
        let client = Client {
            id: ClientId::parse("shop").unwrap(),
            scopes: Scopes::all(),
        };
        let digest = TokenDigest::of("ost_x");
        let registry = ClientRegistry::parse(&client.config_line(&digest), "x").unwrap();
        assert_eq!(registry.authenticate("ost_x"), Some(&client));
    }
}
