//! The `order_transitions` table: the history, one row per order version, and how it is read. A
//! REST request's row also carries its Idempotency-Key and fingerprint, under `UNIQUE (client_id,
//! idempotency_key)`: that is how a retry finds the change its first attempt made (see `keys`).
//! Rows are written with their change, in one statement (`order_changes`).

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use super::orders::stored_version;
use super::{StoreError, stored};
use crate::domain::{HistoryEntry, OrderId, RecordedCause, Version};

#[derive(FromRow)]
struct HistoryRow {
    order_id: Uuid,
    version: i64,
    kind: String,
    from_status: Option<String>,
    to_status: String,
    transfer_id: Option<String>,
    cause_source: String,
    client_id: Option<String>,
    idempotency_key: Option<String>,
    event_id: Option<String>,
    at: DateTime<Utc>,
}

impl TryFrom<HistoryRow> for HistoryEntry {
    type Error = StoreError;

    fn try_from(row: HistoryRow) -> Result<Self, Self::Error> {
        Ok(HistoryEntry {
            order_id: OrderId::from_uuid(row.order_id),
            version: stored_version(row.version)?,
            kind: stored("kind", &row.kind)?,
            from: row
                .from_status
                .map(|s| stored("from_status", &s))
                .transpose()?,
            to: stored("to_status", &row.to_status)?,
            cause: RecordedCause {
                source: stored("cause_source", &row.cause_source)?,
                client_id: row.client_id,
                idempotency_key: row.idempotency_key,
                event_id: row.event_id,
            },
            transfer_id: row.transfer_id,
            at: row.at,
        })
    }
}

/// A page of the order's history, oldest first: up to `limit` entries after version `after`
/// (from the first when `None`). The primary key `(order_id, version)` serves it, so a page
/// costs the same at version 10 and at version 10^6.
pub async fn page(
    pool: &PgPool,
    order_id: OrderId,
    after: Option<Version>,
    limit: i64,
) -> Result<Vec<HistoryEntry>, StoreError> {
    sqlx::query_as::<_, HistoryRow>(
        "SELECT order_id, version, kind, from_status, to_status, transfer_id, cause_source, \
         client_id, idempotency_key, event_id, at FROM order_transitions \
         WHERE order_id = $1 AND version > $2 ORDER BY version LIMIT $3",
    )
    .bind(order_id.as_uuid())
    .bind(after.map_or(0, Version::get))
    .bind(limit)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(HistoryEntry::try_from)
    .collect()
}
