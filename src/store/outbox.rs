//! The `outbox` table: events written in the statement of the change they report (an order's
//! change in `order_changes`, a dead-letter replay in `dead_letter_actions`), each with the W3C
//! trace context of its cause, then claimed, marked published and pruned by the relay. A row is an
//! order event or a raw message: a replayed dead letter, copied here by the statement that marks it
//! replayed.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

use super::StoreError;
use crate::domain::EventType;

/// The most body bytes of raw messages one claimed batch holds (beyond its first row, which is
/// always taken): replayed dead letters may be large, and a batch is held in memory while it is
/// published.
const RAW_BATCH_BYTES: i64 = 16 * 1024 * 1024;

/// An order event to write with its change (`order_changes`): the row takes the order's id and
/// version, and the trace context of the change's cause, from the change.
pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: EventType,
    /// The whole envelope, exactly as it will be published.
    pub payload: serde_json::Value,
}

/// The channel the relays listen on: a notification says events were committed.
pub const NOTIFY_CHANNEL: &str = "order_service_outbox";

/// Wakes the relays listening on [`NOTIFY_CHANNEL`] (those of every instance). A statement of its
/// own, never part of a writing transaction: a NOTIFY inside one would hold Postgres'
/// cluster-wide notification lock through the commit's WAL flush, so such commits would run one at
/// a time (no group commit). The application sends it from a background task, coalesced (README
/// "Outbox and relay wake-up").
pub async fn announce(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(NOTIFY_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// A row waiting to be published.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    pub id: i64,
    pub event_id: Uuid,
    pub created_at: DateTime<Utc>,
    /// The cause's trace context as written; none on rows older than the column.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub message: PendingMessage,
}

/// What a row publishes.
#[derive(Debug, Clone)]
pub enum PendingMessage {
    /// An order event: its envelope, to the outbound exchange with its type as the routing key.
    Event {
        event_type: String,
        payload: serde_json::Value,
    },
    /// A raw message (a replayed dead letter), published as it is.
    Raw {
        exchange: String,
        routing_key: String,
        body: Vec<u8>,
        /// The `amqp::properties` encoding of its properties.
        properties: serde_json::Value,
    },
}

#[derive(sqlx::FromRow)]
struct PendingRow {
    id: i64,
    event_id: Uuid,
    created_at: DateTime<Utc>,
    event_type: Option<String>,
    payload: Option<serde_json::Value>,
    exchange: Option<String>,
    routing_key: Option<String>,
    properties: Option<serde_json::Value>,
    body_bytes: Option<i64>,
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl PendingRow {
    /// The row, its body (if raw) taken from `bodies`.
    fn into_pending(self, bodies: &mut HashMap<i64, Vec<u8>>) -> Result<PendingEvent, StoreError> {
        let message = match (self.event_type, self.payload) {
            (Some(event_type), Some(payload)) => PendingMessage::Event {
                event_type,
                payload,
            },
            _ => {
                let body = bodies.remove(&self.id);
                match (self.exchange, self.routing_key, self.properties, body) {
                    (Some(exchange), Some(routing_key), Some(properties), Some(body)) => {
                        PendingMessage::Raw {
                            exchange,
                            routing_key,
                            body,
                            properties,
                        }
                    }
                    _ => {
                        return Err(StoreError::Corrupt {
                            what: "outbox row",
                            source: "neither an order event nor a raw message".into(),
                        });
                    }
                }
            }
        };
        Ok(PendingEvent {
            id: self.id,
            event_id: self.event_id,
            created_at: self.created_at,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            message,
        })
    }
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
    // Rows another transaction holds are skipped rather than waited for. Bodies of raw messages
    // are read in a second step, only for the rows within the batch's byte budget.
    let mut rows = sqlx::query_as::<_, PendingRow>(
        "SELECT id, event_id, created_at, event_type, payload, exchange, routing_key, properties, \
         octet_length(body)::int8 AS body_bytes, traceparent, tracestate \
         FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
    )
    .bind(i64::from(limit))
    .fetch_all(&mut *tx)
    .await?;
    if rows.is_empty() {
        return Ok(None);
    }
    let mut budget = RAW_BATCH_BYTES;
    let within = rows
        .iter()
        .enumerate()
        .position(|(at, row)| {
            budget -= row.body_bytes.unwrap_or(0);
            at > 0 && budget < 0
        })
        .unwrap_or(rows.len());
    rows.truncate(within);
    let raw: Vec<i64> = rows
        .iter()
        .filter(|row| row.body_bytes.is_some())
        .map(|row| row.id)
        .collect();
    let mut bodies: HashMap<i64, Vec<u8>> = if raw.is_empty() {
        HashMap::new()
    } else {
        sqlx::query_as::<_, (i64, Vec<u8>)>("SELECT id, body FROM outbox WHERE id = ANY($1)")
            .bind(&raw)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .collect()
    };
    let events = rows
        .into_iter()
        .map(|row| row.into_pending(&mut bodies))
        .collect::<Result<_, _>>()?;
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
