//! The `order_transitions` table: the history, one row per order version. A REST request's row
//! also carries its Idempotency-Key and fingerprint, under `UNIQUE (client_id, idempotency_key)`:
//! that is how a retry finds the change its first attempt made (see `keys`).

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::orders::stored_version;
use super::{Inserted, StoreError, keyed_insert};
use crate::domain::{
    Cause, HistoryEntry, OrderId, OrderStatus, TransferId, TransitionKind, Version,
};

/// A history row to write.
pub struct NewTransition<'a> {
    pub order_id: OrderId,
    pub version: Version,
    pub kind: TransitionKind,
    pub from: Option<OrderStatus>,
    pub to: OrderStatus,
    pub transfer_id: Option<&'a TransferId>,
    pub cause: &'a Cause,
}

/// Writes the history row of a change. [`Inserted::Taken`]: another writer holds the request's
/// key, this version, or the order's one change into this status (the insert waits, up to
/// `lock_timeout`, while that writer is uncommitted); the transaction is spoilt, so the caller
/// rolls back and decides again.
pub async fn insert(
    conn: &mut PgConnection,
    row: NewTransition<'_>,
) -> Result<Inserted<()>, StoreError> {
    let (client, key, fingerprint, event_id) = match row.cause {
        Cause::Api {
            client,
            key,
            fingerprint,
        } => (
            Some(client.as_str()),
            Some(key.as_str()),
            Some(fingerprint.as_str()),
            None,
        ),
        Cause::Amqp { event_id } => (None, None, None, Some(event_id.as_str())),
        Cause::Timer => (None, None, None, None),
        // No order command runs from the command line: the table's cause check refuses it.
        Cause::Cli { key, fingerprint } => (
            Some(crate::domain::CLI_CLIENT),
            Some(key.as_str()),
            Some(fingerprint.as_str()),
            None,
        ),
    };
    let written = sqlx::query(
        "INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
         transfer_id, cause_source, client_id, idempotency_key, request_fingerprint, event_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(row.order_id.as_uuid())
    .bind(row.version.get())
    .bind(row.kind.as_ref())
    .bind(row.from.map(|s| s.as_ref().to_owned()))
    .bind(row.to.as_ref())
    .bind(row.transfer_id.map(TransferId::as_str))
    .bind(row.cause.source().as_ref())
    .bind(client)
    .bind(key)
    .bind(fingerprint)
    .bind(event_id)
    .execute(conn)
    .await;
    keyed_insert(written)
}

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
            kind: row.kind.parse().map_err(StoreError::corrupt("kind"))?,
            from: row
                .from_status
                .map(|s| s.parse())
                .transpose()
                .map_err(StoreError::corrupt("from_status"))?,
            to: row
                .to_status
                .parse()
                .map_err(StoreError::corrupt("to_status"))?,
            source: row
                .cause_source
                .parse()
                .map_err(StoreError::corrupt("cause_source"))?,
            client_id: row.client_id,
            idempotency_key: row.idempotency_key,
            event_id: row.event_id,
            transfer_id: row.transfer_id,
            at: row.at,
        })
    }
}

/// The order's history, oldest first.
pub async fn for_order(pool: &PgPool, order_id: OrderId) -> Result<Vec<HistoryEntry>, StoreError> {
    sqlx::query_as::<_, HistoryRow>(
        "SELECT order_id, version, kind, from_status, to_status, transfer_id, cause_source, \
         client_id, idempotency_key, event_id, at FROM order_transitions \
         WHERE order_id = $1 ORDER BY version",
    )
    .bind(order_id.as_uuid())
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(HistoryEntry::try_from)
    .collect()
}
