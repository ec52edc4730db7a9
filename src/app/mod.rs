//! The application layer: the commands both doors call (place, record a payment or a refund,
//! ship, cancel), the payment-expiry sweep, the queries the REST API serves, and parked dead
//! letters (`dead_letters`: parking, reading, replaying and discarding them). It is the only place that opens transactions and decides
//! outcomes; the doors translate requests in and outcomes out, nothing more.
//!
//! Every command runs through one function, [`runner::run`]: begin; if the request's
//! Idempotency-Key already holds a change, replay it; otherwise read, let the domain decide, and
//! write with guarded statements. A guard that finds someone else got there first rolls the
//! attempt back and the runner re-reads and decides again.

pub mod dead_letters;
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

use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;

pub use error::AppError;
pub use events::OutboundEnvelope;
pub use expiry::Sweep;
pub use ledger::Receipt;
pub use outcome::Outcome;
pub use queries::{Cursor, OrderPage, PageRequest};

use crate::config::DEFAULT_INBOUND_EXCHANGE;
use crate::store;

/// How long readiness waits for Postgres to answer.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The application: cheap to clone, shared by the HTTP handlers and the AMQP consumer.
#[derive(Clone)]
pub struct App {
    pool: PgPool,
    /// Where a replayed dead letter goes: the inbound exchange (`AMQP_INBOUND_EXCHANGE`).
    replay_exchange: Arc<str>,
}

impl App {
    /// The application over `pool`, replaying dead letters to the default inbound exchange.
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            replay_exchange: DEFAULT_INBOUND_EXCHANGE.into(),
        }
    }

    /// Replayed dead letters go to `exchange` (the configured inbound exchange).
    pub fn replaying_to(mut self, exchange: &str) -> Self {
        self.replay_exchange = exchange.into();
        self
    }

    /// Whether the database answers now (within a short bound): what readiness reports.
    pub async fn database_reachable(&self) -> bool {
        matches!(
            tokio::time::timeout(READINESS_TIMEOUT, store::ping(&self.pool)).await,
            Ok(Ok(()))
        )
    }
}
