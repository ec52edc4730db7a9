//! What an operator does to the relay's cursor (docs/operations/upgrading.md "Upgrading: the
//! outbox as a log", docs/operations/runbook.md "OrderServiceOutboxRelayRefuses"): read where it
//! stands; stop or start marking published rows (`outbox_relay_mode`), which decides whether a
//! relay of 0.2.0 can run beside this release or replace it; and rebase the log's positions after
//! a restore into a cluster whose transaction ids are lower. Each change takes the relay lease
//! first, so no batch is between its read and its cursor meanwhile.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};

use super::LogPosition;
use crate::store::StoreError;

/// Where the relay stands.
#[derive(Debug, Clone, FromRow)]
pub struct RelayStatus {
    /// Whether relays also set `published_at` on what they publish (for 0.2.0).
    pub marks_published: bool,
    pub cursor_pos: i64,
    pub cursor_id: i64,
    /// When the cursor last moved.
    pub cursor_moved_at: DateTime<Utc>,
    /// The next transaction id the server assigns; a cursor at or past it is [`StoreError::OutboxAhead`].
    pub next_xid: i64,
}

impl RelayStatus {
    pub fn cursor(&self) -> LogPosition {
        LogPosition {
            pos: self.cursor_pos,
            id: self.cursor_id,
        }
    }

    pub fn ahead(&self) -> bool {
        self.cursor_pos >= self.next_xid
    }
}

pub async fn status(pool: &PgPool) -> Result<RelayStatus, StoreError> {
    Ok(sqlx::query_as::<_, RelayStatus>(
        "SELECT mode.marks_published, cursor.through_pos::text::int8 AS cursor_pos, \
                cursor.through_id AS cursor_id, cursor.published_at AS cursor_moved_at, \
                pg_snapshot_xmax(pg_current_snapshot())::text::int8 AS next_xid \
         FROM outbox_relay_mode AS mode, \
              (SELECT through_pos, through_id, published_at FROM outbox_publications \
               ORDER BY through_pos DESC, through_id DESC LIMIT 1) AS cursor",
    )
    .fetch_one(pool)
    .await?)
}

/// The relay lease, waited for: held until the transaction ends.
const TAKE_LEASE: &str = "SELECT pg_advisory_xact_lock(hashtext('order-service.outbox-relay'))";

/// Relays stop setting `published_at`. Returns whether they did until now.
pub async fn stop_marking(pool: &PgPool) -> Result<bool, StoreError> {
    set_marking(pool, false).await.map(|(was, _)| was)
}

/// Relays set `published_at` again, and every row the cursor passed that is not marked is marked
/// now, so that a relay of 0.2.0 does not publish it again. Returns whether they marked already,
/// and how many rows were marked.
pub async fn start_marking(pool: &PgPool) -> Result<(bool, u64), StoreError> {
    set_marking(pool, true).await
}

async fn set_marking(pool: &PgPool, marks: bool) -> Result<(bool, u64), StoreError> {
    let mut tx = crate::store::begin(pool).await?;
    sqlx::query(TAKE_LEASE).execute(&mut *tx).await?;
    let (was,): (bool,) = sqlx::query_as(
        "UPDATE outbox_relay_mode AS mode SET marks_published = $1, changed_at = now() \
         FROM outbox_relay_mode AS before WHERE before.relay = mode.relay \
         RETURNING before.marks_published",
    )
    .bind(marks)
    .fetch_one(&mut *tx)
    .await?;
    let marked = if marks {
        sqlx::query(
            "UPDATE outbox SET published_at = now() \
             FROM (SELECT through_pos, through_id FROM outbox_publications \
                   ORDER BY through_pos DESC, through_id DESC LIMIT 1) AS cursor \
             WHERE (outbox.pos, outbox.id) <= (cursor.through_pos, cursor.through_id) \
               AND outbox.published_at IS NULL",
        )
        .execute(&mut *tx)
        .await?
        .rows_affected()
    } else {
        0
    };
    tx.commit().await?;
    Ok((was, marked))
}

/// After a restore into a cluster whose transaction ids are lower than the positions in the log
/// ([`StoreError::OutboxAhead`]): the rows the cursor passed move to position 1, every other row
/// to position 2 (so they stay in id order, which is each order's version order), the orders
/// forget their last position, and the cursor restarts between the two. What was published
/// stays published; what waited is published next, in order; new events follow. `None` when the
/// cursor is not ahead (nothing to do). Rewrites every row of the outbox: a rare, manual step.
pub async fn rebase(pool: &PgPool) -> Result<Option<u64>, StoreError> {
    let mut tx = crate::store::begin(pool).await?;
    sqlx::query(TAKE_LEASE).execute(&mut *tx).await?;
    let (ahead,): (bool,) = sqlx::query_as(
        "SELECT (SELECT max(through_pos) FROM outbox_publications) \
                    >= pg_snapshot_xmax(pg_current_snapshot()) \
                OR EXISTS (SELECT 1 FROM outbox \
                           WHERE pos >= pg_snapshot_xmax(pg_current_snapshot()))",
    )
    .fetch_one(&mut *tx)
    .await?;
    if !ahead {
        return Ok(None);
    }
    let moved = sqlx::query(
        "UPDATE outbox SET pos = CASE WHEN (outbox.pos, outbox.id) \
                                           <= (cursor.through_pos, cursor.through_id) \
                                      THEN '1'::xid8 ELSE '2'::xid8 END \
         FROM (SELECT through_pos, through_id FROM outbox_publications \
               ORDER BY through_pos DESC, through_id DESC LIMIT 1) AS cursor \
         WHERE outbox.pos IS NOT NULL",
    )
    .execute(&mut *tx)
    .await?
    .rows_affected();
    sqlx::query("UPDATE orders SET last_event_pos = NULL WHERE last_event_pos IS NOT NULL")
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM outbox_publications")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO outbox_publications (through_pos, through_id, events) \
         VALUES ('1', 9223372036854775807, 0)",
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Some(moved))
}
