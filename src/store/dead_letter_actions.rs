//! The `dead_letter_actions` table: one row per replay or discard — who, when, which dead letters —
//! carrying the request's Idempotency-Key and fingerprint under `UNIQUE (client_id,
//! idempotency_key)`, as an order request's history row does (see `keys`).

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use super::{Inserted, StoreError, keyed_insert};
use crate::domain::{DeadLetterAction, DeadLetterId, KeyScope, Source};

/// Records an action. [`Inserted::Taken`]: another request holds this key (the insert waits, up to
/// `lock_timeout`, while that one is uncommitted); the transaction is spoilt, so the caller rolls
/// back and decides again.
pub async fn insert(
    conn: &mut PgConnection,
    action: DeadLetterAction,
    ids: &[DeadLetterId],
    source: Source,
    scope: KeyScope<'_>,
) -> Result<Inserted<()>, StoreError> {
    let ids: Vec<Uuid> = ids.iter().map(DeadLetterId::as_uuid).collect();
    let written = sqlx::query(
        "INSERT INTO dead_letter_actions (action, dead_letter_ids, cause_source, client_id, \
         idempotency_key, request_fingerprint) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(action.as_ref())
    .bind(ids)
    .bind(source.as_ref())
    .bind(scope.client)
    .bind(scope.key.as_str())
    .bind(scope.fingerprint.as_str())
    .execute(conn)
    .await;
    keyed_insert(written)
}

/// An action as shown with a dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenAction {
    pub action: DeadLetterAction,
    pub source: Source,
    pub client_id: String,
    pub at: DateTime<Utc>,
}

#[derive(FromRow)]
struct ActionRow {
    action: String,
    cause_source: String,
    client_id: String,
    at: DateTime<Utc>,
}

/// The newest `limit` actions taken on `id` (alone or in a bulk replay), newest first.
pub async fn for_dead_letter(
    conn: &mut PgConnection,
    id: DeadLetterId,
    limit: i64,
) -> Result<Vec<TakenAction>, StoreError> {
    sqlx::query_as::<_, ActionRow>(
        "SELECT action, cause_source, client_id, at FROM dead_letter_actions \
         WHERE dead_letter_ids @> ARRAY[$1]::uuid[] ORDER BY id DESC LIMIT $2",
    )
    .bind(id.as_uuid())
    .bind(limit)
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|row| {
        Ok(TakenAction {
            action: row.action.parse().map_err(StoreError::corrupt("action"))?,
            source: row
                .cause_source
                .parse()
                .map_err(StoreError::corrupt("cause_source"))?,
            client_id: row.client_id,
            at: row.at,
        })
    })
    .collect()
}
