//! Which of an order's events the outbox still holds, and where each stands: waiting for the
//! relay, published, or set aside (`outbox_set_aside`). The caller names the events by id (an
//! order event's id is derived from the order, its version and the type: `app::events`), so the
//! read goes through the unique index on `outbox.event_id` and needs no index by order; a row
//! the relay pruned (published, and older than `OUTBOX_RETENTION_HOURS`) is not found.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use crate::store::StoreError;

/// An order event as the outbox (or the set-aside table) holds it.
#[derive(Debug, Clone, FromRow)]
pub struct HeldEvent {
    pub event_id: Uuid,
    pub event_type: Option<String>,
    pub order_version: Option<i64>,
    pub created_at: DateTime<Utc>,
    /// When the broker confirmed it; `None` while it waits or after it was set aside.
    pub published_at: Option<DateTime<Utc>>,
    /// Why the relay set it aside, if it did.
    pub set_aside_reason: Option<String>,
}

/// The rows of `event_ids` in the outbox and among those set aside, oldest first. The set-aside
/// table holds only what an operator must look at, so its scan stays small.
pub async fn held(pool: &PgPool, event_ids: &[Uuid]) -> Result<Vec<HeldEvent>, StoreError> {
    Ok(sqlx::query_as::<_, HeldEvent>(
        "SELECT event_id, event_type, order_version, created_at, published_at, \
                NULL::text AS set_aside_reason \
         FROM outbox WHERE event_id = ANY($1) \
         UNION ALL \
         SELECT event_id, event_type, order_version, created_at, NULL, reason \
         FROM outbox_set_aside WHERE event_id = ANY($1) \
         ORDER BY created_at, event_id",
    )
    .bind(event_ids)
    .fetch_all(pool)
    .await?)
}
