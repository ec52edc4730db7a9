//! The `outbox` table: events written in the statement of the change they report (an order's
//! change in `order_changes`, a dead-letter replay in `dead_letter_actions`), each with the W3C
//! trace context of its cause, then claimed, marked published (or set aside: `claim`) and pruned
//! by the relay. A row is an order event or a raw message: a replayed dead letter, copied here by
//! the statement that marks it replayed.

mod claim;
pub mod order_events;

use std::time::Duration;

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::StoreError;
use crate::domain::EventType;

pub use claim::{
    ClaimedBatch, PendingEvent, PendingMessage, SetAside, Unreadable, UnreadableRow, claim_batch,
};

/// An order event to write with its change (`order_changes`): the row takes the order's id and
/// version, and the trace context of the change's cause, from the change.
pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: EventType,
    /// The whole envelope, exactly as it will be published: JSON text, serialized once (the
    /// column parses it).
    pub payload: String,
}

/// The channel the relays listen on: a notification says events were committed.
pub const NOTIFY_CHANNEL: &str = "order_service_outbox";

/// Wakes the relays listening on [`NOTIFY_CHANNEL`] (those of every instance). A statement of its
/// own, never part of a writing transaction: a NOTIFY inside one would hold Postgres' cluster-wide
/// notification lock through the commit's WAL flush, so such commits would run one at a time (no
/// group commit). The application sends it from a background task, coalesced (docs/messaging.md
/// "Outbox and relay wake-up").
pub async fn announce(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(NOTIFY_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// The events not yet published: how many, and how long the oldest has waited; and how many
/// rows the relays set aside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    pub events: i64,
    /// Seconds since the oldest unpublished event was committed (by the database's clock); 0
    /// when nothing waits.
    pub oldest_age_seconds: f64,
    /// Rows in `outbox_set_aside`: never published, waiting for an operator.
    pub set_aside: i64,
}

/// One statement, cheap enough to run every poll interval: the unpublished rows are read through
/// their partial index.
pub async fn backlog(pool: &PgPool) -> Result<Backlog, StoreError> {
    let (events, oldest_age_seconds, set_aside): (i64, Option<f64>, i64) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM now() - min(created_at))::float8, \
         (SELECT count(*) FROM outbox_set_aside) \
         FROM outbox WHERE published_at IS NULL",
    )
    .fetch_one(pool)
    .await?;
    Ok(Backlog {
        events,
        oldest_age_seconds: oldest_age_seconds.unwrap_or(0.0).max(0.0),
        set_aside,
    })
}

/// Deletes up to `batch` published rows older than `age`; returns how many went.
pub async fn prune(pool: &PgPool, age: Duration, batch: i64) -> Result<u64, StoreError> {
    let age = chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
    let result = sqlx::query(
        "DELETE FROM outbox WHERE id IN (\
             SELECT id FROM outbox WHERE published_at < now() - $1::interval \
             ORDER BY published_at LIMIT $2)",
    )
    .bind(age)
    .bind(batch)
    .execute(pool)
    .await?;
    Ok(result.rows_affected())
}
