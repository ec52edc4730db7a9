//! The `order_transitions` table: the history, one row per order version. A REST request's row
//! also carries its Idempotency-Key and fingerprint, under `UNIQUE (client_id, idempotency_key)`:
//! that is how a retry finds the change its first attempt made.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::orders::stored_version;
use super::{Inserted, StoreError};
use crate::domain::{
    Cause, ClientId, Fingerprint, HistoryEntry, IdempotencyKey, OrderId, OrderStatus, TransferId,
    TransitionKind, Version,
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
    match written.map_err(StoreError::from) {
        Ok(_) => Ok(Inserted::New(())),
        Err(StoreError::Contended(_)) => Ok(Inserted::Taken),
        Err(error) => Err(error),
    }
}

/// The change a client's key is attached to.
#[derive(Debug, Clone)]
pub struct KeyedChange {
    pub order_id: OrderId,
    pub kind: TransitionKind,
    pub transfer_id: Option<TransferId>,
    pub fingerprint: Fingerprint,
}

#[derive(FromRow)]
struct KeyedRow {
    order_id: Uuid,
    kind: String,
    transfer_id: Option<String>,
    request_fingerprint: Option<String>,
}

pub async fn find_by_key(
    conn: &mut PgConnection,
    client: &ClientId,
    key: &IdempotencyKey,
) -> Result<Option<KeyedChange>, StoreError> {
    let Some(row) = sqlx::query_as::<_, KeyedRow>(
        "SELECT order_id, kind, transfer_id, request_fingerprint FROM order_transitions \
         WHERE client_id = $1 AND idempotency_key = $2",
    )
    .bind(client.as_str())
    .bind(key.as_str())
    .fetch_optional(conn)
    .await?
    else {
        return Ok(None);
    };
    Ok(Some(KeyedChange {
        order_id: OrderId::from_uuid(row.order_id),
        kind: row.kind.parse().map_err(StoreError::corrupt("kind"))?,
        transfer_id: row
            .transfer_id
            .map(|t| TransferId::parse(&t))
            .transpose()
            .map_err(StoreError::corrupt("transfer_id"))?,
        fingerprint: Fingerprint::from_stored(row.request_fingerprint.ok_or(
            StoreError::Corrupt {
                what: "request_fingerprint",
                source: "a keyed transition has none".into(),
            },
        )?),
    }))
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
