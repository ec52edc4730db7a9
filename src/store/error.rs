//! The one place where Postgres error codes and constraint names become meanings.

/// A store failure, classified so that callers decide on meaning, not on SQLSTATE codes.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The `(client_id, idempotency_key)` pair is already taken by a committed change.
    #[error("the idempotency key is already used")]
    IdempotencyKeyTaken,
    /// A transfer names an order that does not exist.
    #[error("the order does not exist")]
    UnknownOrder,
    /// Another writer committed first on a guard that the caller relies on
    /// (unique status change, deadlock, serialization failure): re-read and decide again.
    #[error("lost a race with a concurrent writer")]
    Contended,
    /// A lock was not granted within `lock_timeout`: another transaction holds it.
    #[error("timed out waiting for a concurrent transaction")]
    Busy,
    /// Postgres cannot be reached or the pool is exhausted.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A stored value no longer parses into its domain type.
    #[error("stored data is invalid: {0}")]
    Corrupt(String),
    #[error("unexpected database error: {0}")]
    Unexpected(String),
}

impl From<sqlx::Error> for StoreError {
    fn from(error: sqlx::Error) -> Self {
        match &error {
            sqlx::Error::Database(db) => match (db.code().as_deref(), db.constraint()) {
                (Some("23505"), Some("order_transitions_idempotency_key")) => {
                    StoreError::IdempotencyKeyTaken
                }
                (Some("23503"), Some("transfers_order_fkey")) => StoreError::UnknownOrder,
                (Some("23505"), Some("order_transitions_status_change_once"))
                | (Some("23505"), Some("order_transitions_pkey"))
                | (Some("40001" | "40P01"), _) => StoreError::Contended,
                (Some("55P03"), _) => StoreError::Busy,
                // Connection-level failures reported by the server (shutdown, too many clients).
                (Some(code), _) if code.starts_with("08") || code.starts_with("57P") => {
                    StoreError::Unavailable(error.to_string())
                }
                (Some("53300"), _) => StoreError::Unavailable(error.to_string()),
                _ => StoreError::Unexpected(error.to_string()),
            },
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => StoreError::Unavailable(error.to_string()),
            _ => StoreError::Unexpected(error.to_string()),
        }
    }
}

impl StoreError {
    pub fn corrupt(what: impl std::fmt::Display) -> Self {
        StoreError::Corrupt(what.to_string())
    }
}
