//! The application layer: the commands both doors call (place, record a payment or a refund,
//! ship, cancel), the payment-expiry sweep, the queries the REST API serves, and parked dead
//! letters (`dead_letters`: parking, reading, replaying and discarding them). It is the only
//! place that decides outcomes and opens the transactions commands need (a command alone needs
//! none; a consumer batch is one); the doors translate requests in and outcomes out, nothing
//! more.
//!
//! Every command runs through one function, `App::run` (`runner`): read its state and the request
//! holding its Idempotency-Key in one statement; replay that request's change if there is one;
//! otherwise let the domain decide, and write the change with one guarded statement. A guard that
//! finds someone else got there first wrote nothing, and the runner re-reads and decides again.
//! After a change, the outbox relays are woken (`wakeup`).
//!
//! A door that receives commands mixed names them with one [`Request`] type; the consumer runs
//! them in one transaction ([`App::apply_batch`], `batch/`), read and written in two statements,
//! or each step under a savepoint of its own (docs/messaging.md "Batched consumer commits").
//!
//! `App`'s methods, by the file that holds them:
//!
//! | methods | file |
//! |---|---|
//! | `new`, `replaying_to`, `relay_wakeup`, `database_writable` | `mod.rs` (here) |
//! | `place` | `place.rs` |
//! | `record` (a payment or a refund) | `record_transfer.rs` |
//! | `ship`, `cancel` | `status_change.rs` |
//! | `apply_batch` (the consumer's batch of [`Request`]s) | `batch/` |
//! | `expire_overdue` | `expiry.rs` |
//! | `order`, `orders` | `queries.rs` |
//! | `history`, `payments`, `order_events` (an order's records, a page at a time) | `order_records.rs` |
//! | `park`, `dead_letter`, `dead_letters`, `parked_summary`, `parked_by_class` | `dead_letters/mod.rs` |
//! | `replay_dead_letters`, `act_on_dead_letter` | `dead_letters/actions.rs` |
//! | `run`, `conclude` (private: the runner every command goes through) | `runner.rs` |

mod batch;
pub mod dead_letters;
mod deadline;
mod error;
mod expiry;
pub mod field_schemas;
pub mod fingerprint;
pub mod json_time;
mod key_replay;
mod order_command;
mod order_records;
mod outbound_events;
mod outbox_cursor;
mod outcome;
pub mod page_tokens;
mod place;
mod queries;
mod record_transfer;
mod request;
mod runner;
mod status_change;
pub mod views;
mod wakeup;

use std::sync::Arc;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::{PgPool, Postgres};

pub use batch::{Item, ItemResult};
pub use deadline::{UNATTENDED_LIMIT, bounded, within};
pub use error::AppError;
pub use expiry::Sweep;
pub use order_records::{EventsAfter, HistoryAfter, LedgerAfter, PageAfter};
pub use outbound_events::OutboundEnvelope;
pub use outcome::Outcome;
pub use page_tokens::{DEFAULT_PAGE, MAX_PAGE};
pub use queries::{Cursor, OrderPage, Page, PageRequest};
pub use record_transfer::Receipt;
pub use request::{Effect, Request};
pub use wakeup::RelayWakeup;

use crate::config::DEFAULT_INBOUND_EXCHANGE;
use crate::domain::ReplayRoutes;
use crate::store;

/// How long readiness waits for Postgres to answer.
const READINESS_TIMEOUT: Duration = Duration::from_secs(2);

/// The application: cheap to clone, shared by the HTTP handlers and the AMQP consumer.
#[derive(Clone)]
pub struct App {
    pool: PgPool,
    /// Where a replayed dead letter goes: the inbound exchange (`AMQP_INBOUND_EXCHANGE`)...
    replay_exchange: Arc<str>,
    /// ...under one of the routing keys its inbox is bound to.
    replay_routes: ReplayRoutes,
    /// Woken after every change: the outbox relays.
    wakeup: RelayWakeup,
}

impl App {
    /// The application over `pool`. It replays no dead letter (refusing each) until
    /// [`App::replaying_to`] says where replays go.
    pub fn new(pool: PgPool) -> Self {
        Self {
            wakeup: RelayWakeup::new(pool.clone()),
            pool,
            replay_exchange: DEFAULT_INBOUND_EXCHANGE.into(),
            replay_routes: ReplayRoutes::NONE,
        }
    }

    /// What this application wakes after every change: this process's relay waits on it.
    pub fn relay_wakeup(&self) -> RelayWakeup {
        self.wakeup.clone()
    }

    /// Replayed dead letters go to `exchange` (the configured inbound exchange), under one of
    /// `routes` (the routing keys its inbox is bound to: `amqp::inbound::INBOUND_TYPES`); a dead
    /// letter with another routing key is not replayed.
    pub fn replaying_to(mut self, exchange: &str, routes: ReplayRoutes) -> Self {
        self.replay_exchange = exchange.into();
        self.replay_routes = routes;
        self
    }

    /// A connection of the pool, for one command, query or batch ([`store::acquire`]).
    async fn connection(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        store::acquire(&self.pool).await
    }

    /// The key that seals the consumer's retry count, the same for every instance
    /// (docs/hostile-input.md "Properties decide nothing").
    pub async fn attempt_seal_key(&self) -> Result<Vec<u8>, AppError> {
        Ok(store::service_keys::attempt_seal(&self.pool).await?)
    }

    /// Whether the database answers now (within a short bound) and would take a write: what
    /// readiness reports.
    pub async fn database_writable(&self) -> bool {
        matches!(
            tokio::time::timeout(READINESS_TIMEOUT, store::accepts_writes(&self.pool)).await,
            Ok(Ok(true))
        )
    }
}
