//! Which of an order's events the outbox still holds, and where each stands: waiting for the
//! relay, published (the relay's cursor passed it: docs/messaging.md "The outbox as a log"), or
//! set aside (`outbox_set_aside`, which keeps the row's id). Read a page at a
//! time in outbox id order, the order the order's changes wrote them in, through the indexes on
//! `(order_id, id)` of both tables (migrations `20261127000001`, `20261127000003`); a row the
//! relay pruned (published, and older than `OUTBOX_RETENTION_HOURS`) is not found.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use crate::domain::OrderId;
use crate::store::StoreError;

/// An order event as the outbox (or the set-aside table) holds it.
#[derive(Debug, Clone, FromRow)]
pub struct HeldEvent {
    /// The row's id in the outbox (kept when it is set aside): its place in the order's events.
    pub id: i64,
    pub event_id: Uuid,
    pub event_type: Option<String>,
    pub order_version: Option<i64>,
    pub created_at: DateTime<Utc>,
    /// When the broker confirmed it: the time the relay's cursor passed it (the first batch in
    /// `outbox_publications` at or after its position), or, for a row a relay of 0.2.0
    /// published, the time that relay marked it. `None` while it waits or after it was set aside.
    pub published_at: Option<DateTime<Utc>>,
    /// Why the relay set it aside, if it did.
    pub set_aside_reason: Option<String>,
}

/// A page of the order's events, oldest first: up to `limit` rows of the outbox and of those set
/// aside with an id above `after` (from the first when `None`). Each table gives its first
/// `limit` by its index, and the two are merged: a row is in one table or the other, never both
/// (the relay moves it in one statement). An order's rows get their ids while its change holds
/// the order's row, so a later change's events always sort after an earlier one's.
pub async fn page(
    pool: &PgPool,
    order_id: OrderId,
    after: Option<i64>,
    limit: i64,
) -> Result<Vec<HeldEvent>, StoreError> {
    Ok(sqlx::query_as::<_, HeldEvent>(
        "SELECT id, event_id, event_type, order_version, created_at, published_at, \
                set_aside_reason \
         FROM (\
             (SELECT id, event_id, event_type, order_version, created_at, \
                     coalesce(published_at, (\
                         SELECT p.published_at FROM outbox_publications AS p \
                         WHERE (p.through_pos, p.through_id) >= (outbox.pos, outbox.id) \
                         ORDER BY p.through_pos, p.through_id LIMIT 1)) AS published_at, \
                     NULL::text AS set_aside_reason \
              FROM outbox WHERE order_id = $1 AND id > $2 ORDER BY id LIMIT $3) \
             UNION ALL \
             (SELECT id, event_id, event_type, order_version, created_at, NULL, reason \
              FROM outbox_set_aside WHERE order_id = $1 AND id > $2 ORDER BY id LIMIT $3)\
         ) AS held ORDER BY id LIMIT $3",
    )
    .bind(order_id.as_uuid())
    .bind(after.unwrap_or(0))
    .bind(limit)
    .fetch_all(pool)
    .await?)
}
