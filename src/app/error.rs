//! What a command or query can fail with. Each door maps these exhaustively, once; the causes of
//! the unexpected ones travel as `#[source]` so the door logs the whole chain.

use crate::domain::{
    DeadLetterId, DeadLetterStatus, DomainError, OrderId, OrderStatus, Unreplayable, Version,
};
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("order {0} not found")]
    NotFound(OrderId),
    #[error("dead letter {0} not found")]
    DeadLetterNotFound(DeadLetterId),
    /// Only a parked dead letter can be replayed or discarded; this one was already settled.
    #[error("dead letter {id} is {status}, not parked")]
    NotParked {
        id: DeadLetterId,
        status: DeadLetterStatus,
    },
    /// A replay would lose or misroute this dead letter: the inbox is not bound to its routing key
    /// (domain::ReplayRoutes). It stays parked.
    #[error("dead letter {id} cannot be replayed: {reason}")]
    Unreplayable {
        id: DeadLetterId,
        reason: Unreplayable,
    },
    /// The domain refused the command; the order's current status and version explain why.
    #[error("{reason}")]
    Refused {
        reason: DomainError,
        current_status: Option<OrderStatus>,
        current_version: Option<Version>,
    },
    /// The Idempotency-Key already belongs to a different request (another body, endpoint or order).
    #[error("the Idempotency-Key was already used for a different request")]
    KeyReused,
    /// `If-Match` names no version the order is at.
    #[error("the order is at version {current_version}, which If-Match does not name")]
    PreconditionFailed { current_version: Version },
    /// A concurrent request holding the same key or row did not finish within the wait bound,
    /// or contention did not settle within the retry budget.
    #[error("a concurrent request is still in flight")]
    Busy,
    /// Postgres cannot be reached now; the same command may succeed once it is back.
    #[error("the database is unavailable")]
    Unavailable(#[source] StoreError),
    /// A failure nobody planned for (a driver error, corrupt stored data).
    #[error("unexpected store failure")]
    Unexpected(#[source] StoreError),
    /// The data broke an expectation of this layer (a keyed change without its row, say).
    #[error("broken invariant: {0}")]
    Invariant(&'static str),
}

impl AppError {
    pub(crate) fn refused(reason: DomainError, current: Option<(OrderStatus, Version)>) -> Self {
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
            StoreError::Busy(_) => AppError::Busy,
            e @ StoreError::Unavailable(_) => AppError::Unavailable(e),
            // The others carry meaning only where a command expects them; reaching here means
            // one escaped.
            e @ (StoreError::Contended(_)
            | StoreError::Corrupt { .. }
            | StoreError::Migrate(_)
            | StoreError::IncompatibleSchema { .. }
            | StoreError::OutboxAhead { .. }
            | StoreError::Unexpected(_)) => AppError::Unexpected(e),
        }
    }
}

impl From<sqlx::Error> for AppError {
    fn from(error: sqlx::Error) -> Self {
        StoreError::from(error).into()
    }
}
