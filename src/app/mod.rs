//! The application layer: the commands both doors call (place, record a payment, ship, cancel)
//! and the queries the REST API serves. It is the only place that opens transactions and decides
//! outcomes; the doors translate requests in and outcomes out, nothing more.
//!
//! Every command runs the same loop: begin; if the request carries an Idempotency-Key that already
//! holds a change, replay it; otherwise read, let the domain decide, and write with guarded
//! statements. A guard that finds someone else got there first rolls the attempt back and the
//! loop re-reads and decides again.

/// Runs `$body` (which yields `Result<Attempt<Outcome<T>>, AppError>`) in a fresh transaction
/// until it commits or fails for a reason of its own; evaluates to `Result<Outcome<T>, AppError>`.
/// After committing an applied change it wakes the outbox relays (on the same connection, outside
/// the transaction: see [`crate::store::outbox::announce`]).
///
/// A macro rather than a function taking an async closure: the futures of async closures that
/// borrow their argument are not yet provably `Send`, and axum handlers must be.
macro_rules! in_transaction {
    ($app:expr, |$conn:ident| $body:block) => {{
        let mut result = Err($crate::app::AppError::Busy);
        let mut connection = $app.pool.acquire().await?;
        for _ in 0..$crate::app::MAX_ATTEMPTS {
            let mut tx = sqlx::Connection::begin(&mut *connection).await?;
            let attempt: Result<$crate::app::Attempt<_>, $crate::app::AppError> = async {
                let $conn: &mut sqlx::PgConnection = &mut tx;
                $body
            }
            .await;
            match attempt? {
                $crate::app::Attempt::Done(value) => {
                    tx.commit().await?;
                    if let $crate::app::Outcome::Applied(_) = &value {
                        // Committed already: a lost wake-up only delays publishing until the
                        // relay's next poll, so it must not fail the command.
                        if let Err(error) =
                            $crate::store::outbox::announce(&mut connection).await
                        {
                            tracing::debug!(%error, "could not wake the outbox relay");
                        }
                    }
                    result = Ok(value);
                    break;
                }
                $crate::app::Attempt::Lost => {
                    tx.rollback().await?;
                    metrics::counter!("order_write_conflicts_total").increment(1);
                }
            }
        }
        result
    }};
}

mod error;
mod events;
mod outcome;
mod payment;
mod place;
mod queries;
mod replay;
mod status_change;
pub mod views;

use sqlx::PgPool;

pub use error::AppError;
pub use outcome::Outcome;
pub use payment::Receipt;
pub use queries::{Cursor, OrderPage, PageRequest};

use crate::store::StoreError;

/// How many times a command re-reads and decides again after losing a race. Each lost race means
/// another writer committed, so the loop always makes progress; the bound only guards against a
/// pathological storm on one order.
const MAX_ATTEMPTS: usize = 200;

/// The result of one attempt inside a transaction.
enum Attempt<T> {
    /// Commit and return.
    Done(T),
    /// A guard lost a race: roll back, re-read, decide again.
    Lost,
}

/// The application: cheap to clone, shared by the HTTP handlers and the AMQP consumer.
#[derive(Clone)]
pub struct App {
    pool: PgPool,
}

impl App {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

/// Turns the store's "someone else got there first" signals into [`Attempt::Lost`].
fn lost_race<T>(result: Result<T, StoreError>) -> Result<Option<T>, AppError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(StoreError::Contended | StoreError::IdempotencyKeyTaken) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
