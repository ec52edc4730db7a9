//! The `outbox` table: events written in the transaction of the change they report, each with
//! the W3C trace context of its cause, then claimed, marked published and pruned by the relay.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::StoreError;
use crate::domain::{EventType, OrderId, Version};
use crate::telemetry::TraceContext;

pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: EventType,
    pub order_id: OrderId,
    pub order_version: Version,
    /// The whole envelope, exactly as it will be published.
    pub payload: serde_json::Value,
    /// The context of the span that caused the change, stored as its `traceparent` and
    /// `tracestate` headers.
    pub trace: TraceContext,
}

pub async fn insert(conn: &mut PgConnection, event: &NewEvent) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO outbox \
         (event_id, event_type, order_id, order_version, payload, traceparent, tracestate) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(event.event_id)
    .bind(event.event_type.as_ref())
    .bind(event.order_id.as_uuid())
    .bind(event.order_version.get())
    .bind(&event.payload)
    .bind(event.trace.traceparent())
    .bind(event.trace.tracestate())
    .execute(conn)
    .await?;
    Ok(())
}

/// The channel the relays listen on: a notification says events were committed.
pub const NOTIFY_CHANNEL: &str = "order_service_outbox";

/// Wakes the relays after a commit that wrote events. A statement of its own, outside the writing
/// transaction: a NOTIFY inside it would hold Postgres' cluster-wide notification lock through the
/// commit's WAL flush, so such commits would run one at a time (no group commit).
pub async fn announce(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(NOTIFY_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// An event waiting to be published.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PendingEvent {
    pub id: i64,
    pub event_id: Uuid,
    pub event_type: String,
    pub order_id: Uuid,
    pub order_version: i64,
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
    /// The cause's trace context as written; none on rows older than the column.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
}

/// A batch claimed for publishing: the relay lease and the oldest unpublished rows, held in one
/// transaction until [`ClaimedBatch::finish`] marks what the broker confirmed. Dropping it
/// unfinished rolls back: the rows stay unpublished and the lease is released.
pub struct ClaimedBatch {
    tx: Transaction<'static, Postgres>,
    pub events: Vec<PendingEvent>,
}

/// Claims up to `limit` of the oldest unpublished events. Relays take turns batch by batch (a
/// transaction-scoped advisory lock), so events of one order are published in order even with
/// several instances. `None`: another relay holds the lease, or nothing is waiting.
pub async fn claim_batch(pool: &PgPool, limit: u32) -> Result<Option<ClaimedBatch>, StoreError> {
    let mut tx = pool.begin().await?;
    let leased: bool = sqlx::query_scalar(
        "SELECT pg_try_advisory_xact_lock(hashtext('order-service.outbox-relay'))",
    )
    .fetch_one(&mut *tx)
    .await?;
    if !leased {
        return Ok(None);
    }
    // Rows another transaction holds are skipped rather than waited for.
    let events = sqlx::query_as::<_, PendingEvent>(
        "SELECT id, event_id, event_type, order_id, order_version, payload, created_at, \
         traceparent, tracestate \
         FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    if events.is_empty() {
        return Ok(None);
    }
    Ok(Some(ClaimedBatch { tx, events }))
}

impl ClaimedBatch {
    /// Marks the rows with these ids published and commits, releasing the lease.
    pub async fn finish(mut self, published: &[i64]) -> Result<(), StoreError> {
        sqlx::query("UPDATE outbox SET published_at = now() WHERE id = ANY($1)")
            .bind(published)
            .execute(&mut *self.tx)
            .await?;
        self.tx.commit().await?;
        Ok(())
    }
}

/// The events not yet published: how many, and how long the oldest has waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    pub events: i64,
    /// Seconds since the oldest unpublished event was committed (by the database's clock); 0
    /// when nothing waits.
    pub oldest_age_seconds: f64,
}

pub async fn backlog(pool: &PgPool) -> Result<Backlog, StoreError> {
    let (events, oldest_age_seconds): (i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*), extract(epoch FROM now() - min(created_at))::float8 \
         FROM outbox WHERE published_at IS NULL",
    )
    .fetch_one(pool)
    .await?;
    Ok(Backlog {
        events,
        oldest_age_seconds: oldest_age_seconds.unwrap_or(0.0).max(0.0),
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
