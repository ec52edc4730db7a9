//! The application layer: the commands both doors call (place, record a payment or a refund,
//! ship, cancel), the payment-expiry sweep, and the queries the REST API serves. It is the only place that opens transactions and decides
//! outcomes; the doors translate requests in and outcomes out, nothing more.
//!
//! Every command runs through one function, [`runner::run`]: begin; if the request's
//! Idempotency-Key already holds a change, replay it; otherwise read, let the domain decide, and
//! write with guarded statements. A guard that finds someone else got there first rolls the
//! attempt back and the runner re-reads and decides again.

mod error;
mod events;
mod expiry;
pub mod field_schemas;
mod keys;
mod ledger;
mod outcome;
mod place;
mod queries;
mod runner;
mod status_change;
pub mod views;

use std::time::Duration;

use sqlx::PgPool;

pub use error::AppError;
pub use events::OutboundEnvelope;
pub use expiry::Sweep;
pub use ledger::Receipt;
pub use outcome::Outcome;
pub use queries::{Cursor, OrderPage, PageRequest};

use crate::store;

/// How long readiness waits for Postgres to answer.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The application: cheap to clone, shared by the HTTP handlers and the AMQP consumer.
#[derive(Clone)]
pub struct App {
    pool: PgPool,
}

impl App {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Whether the database answers now (within a short bound): what readiness reports.
    pub async fn database_reachable(&self) -> bool {
        matches!(
            tokio::time::timeout(READINESS_TIMEOUT, store::ping(&self.pool)).await,
            Ok(Ok(()))
        )
    }
}
