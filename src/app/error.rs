//! What a command or query can fail with. Each door maps these exhaustively, once.

use crate::domain::{DomainError, OrderId, OrderStatus};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("order {0} not found")]
    NotFound(OrderId),
    /// The domain refused the command; the order's current status and version explain why.
    #[error("{reason}")]
    Refused {
        reason: DomainError,
        current_status: Option<OrderStatus>,
        current_version: Option<i64>,
    },
    /// The Idempotency-Key already belongs to a different request (another body, endpoint or order).
    #[error("the Idempotency-Key was already used for a different request")]
    KeyReused,
    /// `If-Match` named a version the order no longer has.
    #[error("the order is at version {current_version}, not {expected}")]
    PreconditionFailed { expected: i64, current_version: i64 },
    /// A concurrent request holding the same key or row did not finish within the wait bound,
    /// or contention did not settle within the retry budget.
    #[error("a concurrent request is still in flight")]
    Busy,
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("unexpected: {0}")]
    Unexpected(String),
}

impl AppError {
    pub(crate) fn refused(reason: DomainError, current: Option<(OrderStatus, i64)>) -> Self {
        AppError::Refused {
            reason,
            current_status: current.map(|c| c.0),
            current_version: current.map(|c| c.1),
        }
    }
}

impl From<StoreError> for AppError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Busy => AppError::Busy,
            StoreError::Unavailable(e) => AppError::Unavailable(e),
            // These are handled where they carry meaning; reaching here means they escaped.
            e @ (StoreError::IdempotencyKeyTaken
            | StoreError::UnknownOrder
            | StoreError::Contended
            | StoreError::Corrupt(_)
            | StoreError::Unexpected(_)) => AppError::Unexpected(e.to_string()),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(error: sqlx::Error) -> Self {
        StoreError::from(error).into()
    }
}
