//! The one place where Postgres error codes and constraint names become meanings.

/// A store failure, classified so that callers decide on meaning, not on SQLSTATE codes. Every
/// variant that comes from the driver keeps it as its source, so the log shows the whole chain.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another writer committed first on a guard that the caller relies on (the key of a change,
    /// one change into each status, the history's version, a transfer id, a deadlock, a
    /// serialization failure): the statement wrote nothing; re-read and decide again.
    #[error("lost a race with a concurrent writer")]
    Contended(#[source] sqlx::Error),
    /// A lock was not granted within `lock_timeout`: another transaction holds it.
    #[error("timed out waiting for a concurrent transaction")]
    Busy(#[source] sqlx::Error),
    /// Postgres cannot be reached or the pool is exhausted.
    #[error("database unavailable")]
    Unavailable(#[source] sqlx::Error),
    /// A stored value no longer parses into its domain type.
    #[error("stored {what} is invalid")]
    Corrupt {
        what: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The schema holds a migration this release does not know (a newer release applied it)
    /// that is not declared compatible with this release (`migrations.rs`).
    #[error(
        "the database was migrated by a newer release: migration {migration}{} is not one this \
         release knows (its newest is {knows}) and {}; run {}",
        release.as_ref().map(|r| format!(" (release {r})")).unwrap_or_default(),
        match needs {
            Some(needs) => format!("it needs a release that knows migration {needs}"),
            None => "it is not declared compatible with older releases".to_owned(),
        },
        release.as_ref().map_or("a release that knows it".to_owned(), |r| format!("release {r} or later")),
    )]
    IncompatibleSchema {
        migration: i64,
        /// The release that added the migration, where the schema says.
        release: Option<String>,
        needs: Option<i64>,
        knows: i64,
    },
    /// The outbox cursor, or a row of the outbox, is positioned at or beyond the next transaction
    /// id this server assigns: the database was restored from a dump or moved to another cluster
    /// (transaction ids start lower there), and the relay would publish nothing.
    #[error(
        "the outbox cursor (position {cursor}) is ahead of this server's transaction ids (next \
         {next_xid}): the database was restored from a dump or moved to another cluster; stop the \
         relays and run `order-service outbox rebase` (docs/operations/runbook.md \
         \"OrderServiceOutboxRelayRefuses\")"
    )]
    OutboxAhead { cursor: i64, next_xid: i64 },
    #[error("migrating the database failed")]
    Migrate(#[source] sqlx::migrate::MigrateError),
    #[error("unexpected database error")]
    Unexpected(#[source] sqlx::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        let meaning = match &error {
            sqlx::Error::Database(db) => match (db.code().as_deref(), db.constraint()) {
                (Some("23505"), Some("order_transitions_idempotency_key"))
                | (Some("23505"), Some("dead_letter_actions_idempotency_key"))
                | (Some("23505"), Some("order_transitions_status_change_once"))
                | (Some("23505"), Some("order_transitions_pkey"))
                | (Some("23505"), Some("transfers_pkey"))
                | (Some("40001" | "40P01"), _) => StoreError::Contended,
                (Some("55P03"), _) => StoreError::Busy,
                // Connection-level failures reported by the server (shutdown, too many clients).
                (Some(code), _) if code.starts_with("08") || code.starts_with("57P") => {
                    StoreError::Unavailable
                }
                // Too many clients; a server that is read-only (a demoted primary still reachable
                // while the writer endpoint fails over): wait it out as an outage.
                (Some("53300" | "25006"), _) => StoreError::Unavailable,
                // Cancelled: a statement past its caller's time limit (`order_service_in_time`)
                // or an operator's `statement_timeout`; it wrote nothing.
                (Some("57014"), _) => StoreError::Unavailable,
                _ => StoreError::Unexpected,
            },
            // A connection whose first bytes are not Postgres' (say, a proxy or load balancer
            // in front of a server that is down) is an outage, not a fault of the command.
            sqlx::Error::Io(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable,
            _ => StoreError::Unexpected,
        };
        meaning(error)
    }
}

impl StoreError {
    /// A stored value of `what` that its domain type refuses: `.map_err(StoreError::corrupt("status"))`.
    pub fn corrupt<E>(what: &'static str) -> impl FnOnce(E) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        move |source| StoreError::Corrupt {
            what,
            source: Box::new(source),
        }
    }
}
