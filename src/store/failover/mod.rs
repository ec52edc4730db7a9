//! Several Postgres hosts behind one `DATABASE_URL`, as libpq takes them
//! (docs/postgres-failover.md): which host a connection goes to and which connections the pool
//! may keep.
//! `conninfo` reads the URL; this module checks a node's role (`target_session_attrs`) and
//! finds the first host that has it; `follow` keeps a pool on that host across failovers. One
//! host behaves as it always did: a plain pool, no checks.

mod follow;
#[cfg(test)]
mod tests;

use std::time::Duration;

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection, PgPool, Row};

/// The role a node must have for the service to use it; with several hosts the service asks
/// for [`SessionAttrs::ReadWrite`] unless told otherwise.
pub use super::conninfo::SessionAttrs;
use super::conninfo::{Conninfo, ConninfoError};

/// Bounds a connect attempt to one host when the URL does not (docs/operations/configuration.md).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// What `DATABASE_URL` names: the hosts in order, each with all the URL's other parameters, the
/// role wanted, and how long one host may take to accept a connection.
#[derive(Clone)]
pub struct Database {
    hosts: Vec<PgConnectOptions>,
    attrs: SessionAttrs,
    connect_timeout: Duration,
}

/// Hosts and ports only: the options' own `Debug` would show the password.
impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("hosts", &super::conninfo::shown_hosts(&self.hosts))
            .field("attrs", &self.attrs)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl From<Conninfo> for Database {
    fn from(conninfo: Conninfo) -> Self {
        Self {
            attrs: conninfo.attrs().unwrap_or(SessionAttrs::ReadWrite),
            connect_timeout: conninfo
                .connect_timeout()
                .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            hosts: conninfo.into_hosts(),
        }
    }
}

/// Why no host would do: the last host's refusal (its I/O or server error, or [`WrongRole`]).
#[derive(Debug, thiserror::Error)]
#[error("no host of DATABASE_URL is {attrs}")]
pub struct NoHost {
    pub attrs: SessionAttrs,
    #[source]
    pub last: sqlx::Error,
}

/// A node answered but has the wrong role (a standby, or a primary turned read-only).
#[derive(Debug, thiserror::Error)]
#[error("{host}:{port} is not {attrs}")]
pub struct WrongRole {
    pub host: String,
    pub port: u16,
    pub attrs: SessionAttrs,
}

/// Which server a connection is on, as the server says (`inet_server_addr()`,
/// `inet_server_port()`; both `None` over a Unix socket): how the pool tells a connection to the
/// node it chose from one to another node, whatever name the URL gave either.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Node {
    address: Option<String>,
    port: Option<i32>,
}

/// A node's answer to the role check.
struct NodeReport {
    /// `transaction_read_only` is `off`.
    writable: bool,
    /// `pg_is_in_recovery()`.
    standby: bool,
    /// The check ran inside a transaction block opened before it (its statement started after
    /// its transaction): a connection the pool must not hand out (`follow`).
    in_transaction: bool,
    node: Node,
}

impl Database {
    /// Reads `url` as libpq reads it (`conninfo`); the hosts are kept in the order written.
    pub fn parse(url: &str) -> Result<Self, ConninfoError> {
        Conninfo::parse(url).map(Self::from)
    }

    /// `options` applied to every host (the service's `lock_timeout`, …).
    pub fn map_hosts(mut self, options: impl Fn(PgConnectOptions) -> PgConnectOptions) -> Self {
        self.hosts = self.hosts.into_iter().map(options).collect();
        self
    }

    pub fn hosts(&self) -> &[PgConnectOptions] {
        &self.hosts
    }

    pub fn attrs(&self) -> SessionAttrs {
        self.attrs
    }

    pub fn connect_timeout(&self) -> Duration {
        self.connect_timeout
    }

    /// The first host, in the order written, that accepts a connection within the connect
    /// timeout and has the role wanted, with that connection. One host is taken as it is.
    pub async fn find(&self) -> Result<(usize, PgConnection), NoHost> {
        let mut last = None;
        for (index, host) in self.hosts.iter().enumerate() {
            match self.try_host(host).await {
                Ok(conn) => return Ok((index, conn)),
                Err(error) => {
                    tracing::debug!(host = host.get_host(), port = host.get_port(), %error, "skipping host");
                    last = Some(error);
                }
            }
        }
        Err(NoHost {
            attrs: self.attrs,
            last: last.unwrap_or_else(|| wrong_role(&PgConnectOptions::new(), self.attrs)),
        })
    }

    async fn try_host(&self, host: &PgConnectOptions) -> Result<PgConnection, sqlx::Error> {
        let mut conn = tokio::time::timeout(self.connect_timeout, host.connect())
            .await
            .map_err(|_| timed_out(host))??;
        if self.hosts.len() == 1 || self.is_acceptable(&mut conn).await? {
            Ok(conn)
        } else {
            if let Err(error) = conn.close().await {
                tracing::debug!(%error, "closing a connection to a node of the wrong role");
            }
            Err(wrong_role(host, self.attrs))
        }
    }

    /// Whether the node `conn` is on has the role wanted, asked within the connect timeout.
    async fn is_acceptable(&self, conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
        Ok(self.wants(&self.report(conn).await?))
    }

    /// What the node `conn` is on says of itself, asked within the connect timeout. Sent as a
    /// simple query, which starts its own transaction when it starts (the extended protocol's
    /// would start at its `Parse`, before the statement's own timestamp): inside a block opened
    /// earlier, the statement started after its transaction; in autocommit, at the same instant.
    async fn report(&self, conn: &mut PgConnection) -> Result<NodeReport, sqlx::Error> {
        let asked = sqlx::raw_sql(
            "SELECT current_setting('transaction_read_only'), pg_is_in_recovery(), \
             host(inet_server_addr()), inet_server_port(), \
             statement_timestamp() <> transaction_timestamp()",
        )
        .fetch_one(conn);
        let row = tokio::time::timeout(self.connect_timeout, asked)
            .await
            .map_err(|_| {
                sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "no answer to the role check",
                ))
            })??;
        Ok(NodeReport {
            writable: row.try_get::<String, _>(0)? == "off",
            standby: row.try_get(1)?,
            in_transaction: row.try_get(4)?,
            node: Node {
                address: row.try_get(2)?,
                port: row.try_get(3)?,
            },
        })
    }

    fn wants(&self, report: &NodeReport) -> bool {
        match self.attrs {
            SessionAttrs::Any => true,
            SessionAttrs::ReadWrite => report.writable,
            SessionAttrs::Primary => !report.standby,
        }
    }

    /// The pool the service uses: on one host, the plain lazily connecting pool of
    /// [`super::pool`]; on several, one that follows the node with the role wanted (`follow`).
    pub fn pool(&self, max_connections: u32) -> PgPool {
        match self.hosts.as_slice() {
            [one] => super::pool(one.clone(), max_connections),
            _ => follow::pool(self.clone(), max_connections),
        }
    }
}

fn wrong_role(host: &PgConnectOptions, attrs: SessionAttrs) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::other(WrongRole {
        host: host.get_host().to_owned(),
        port: host.get_port(),
        attrs,
    }))
}

fn timed_out(host: &PgConnectOptions) -> sqlx::Error {
    sqlx::Error::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!(
            "{}:{} did not accept a connection in time",
            host.get_host(),
            host.get_port()
        ),
    ))
}
