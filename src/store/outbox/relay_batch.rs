//! The relay's read of the outbox as a log (docs/messaging.md "The outbox as a log"): under the
//! relay lease, the rows after the cursor and below the horizon, in `(pos, id)` order; then, in
//! the same short transaction, the cursor moved past what the broker confirmed (one row appended
//! to `outbox_publications` per batch, nothing written per event), the rows the relay cannot
//! publish moved to `outbox_set_aside` (docs/messaging.md "Rows the relay sets aside"), and, while
//! `outbox_relay_mode` says so, the published rows marked as 0.2.0 marks them.
//!
//! The transaction takes no row lock and gets a transaction id only at its last statement: while
//! the batch is published it holds the lease and a snapshot, neither of which holds back the
//! horizon of other relays or writers.

use std::collections::HashSet;

use sqlx::{FromRow, PgPool, Postgres, Transaction};

use super::pending::{
    self, MAX_SET_ASIDE_REASON_BYTES, PendingEvent, PendingRow, SetAside, UnreadableRow,
};
use crate::store::StoreError;

/// A place in the log: a row's `(pos, id)`, `pos` being the `xid8` as an integer (a 64-bit
/// transaction id, epoch included, far below `i64::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogPosition {
    pub pos: i64,
    pub id: i64,
}

/// What the relay found when it looked.
pub enum BatchRead {
    /// Another relay holds the lease: it publishes meanwhile.
    Leased,
    /// Nothing to publish below the horizon.
    Idle(Horizon),
    /// Rows to publish.
    Batch(RelayBatch),
}

/// Whether committed rows wait behind the horizon: rows after the cursor written by transactions
/// newer than one still running (anywhere on the server). They become readable the moment the
/// older transactions end, which no notification announces, so the relay looks again soon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Horizon {
    pub rows_behind: bool,
}

/// A batch read for publishing: the lease and the rows after the cursor, held in one
/// transaction until [`RelayBatch::finish`] moves the cursor. Dropping it unfinished rolls back:
/// the cursor stays, and the lease is released.
pub struct RelayBatch {
    tx: Transaction<'static, Postgres>,
    marks_published: bool,
    /// Every row read, in log order: those a relay of 0.2.0 already published (skipped, never
    /// in `rows`) and those after the byte budget included, so the cursor moves past exactly the
    /// settled prefix.
    read: Vec<LogPosition>,
    /// The rows read already published (marked by a relay of 0.2.0): skipped.
    skipped: HashSet<i64>,
    /// In log order; a row that cannot be read is there as an [`UnreadableRow`].
    pub rows: Vec<Result<PendingEvent, UnreadableRow>>,
    pub horizon: Horizon,
}

#[derive(FromRow)]
struct RelayState {
    leased: bool,
    cursor_pos: i64,
    marks_published: bool,
    /// The next transaction id this server will assign.
    next_xid: i64,
    /// A row is positioned at or past `next_xid`.
    rows_ahead: bool,
}

#[derive(FromRow)]
struct LogRow {
    pos: i64,
    /// Below the horizon: part of the batch. The one row that is not marks rows behind it.
    readable: bool,
    published: bool,
    #[sqlx(flatten)]
    row: PendingRow,
}

/// The rows after the cursor and below the horizon, `$1` at most, in log order: every column but
/// a raw message's body, which `pending::load` reads for the rows within the batch's byte budget;
/// then, not readable, the first committed row at or past the horizon if there is one (its id
/// only): rows wait behind it. Each part is one range of `outbox_pos_id_idx`, the row comparison
/// and `xmin` (a constant of the statement's snapshot) its bounds (tests/amqp/outbox_log.rs checks
/// the plan on a large table). The second part's bound is one row comparison, `(pos, id) >
/// (xmin, 0)` or the cursor, whichever is later: given as two conditions, a row comparison and
/// `pos >= xmin`, the index scan started at the cursor and stepped over every readable row of a
/// backlog at each batch.
///
/// The statement reads the cursor itself, in its own snapshot, taken after the lease is held:
/// the statement that takes the lease took its snapshot before it, when the relay that held the
/// lease may not yet have committed its cursor, and a batch read after that older cursor would be
/// published a second time.
pub const READ_AFTER_CURSOR: &str = "WITH cursor AS MATERIALIZED (\
        SELECT through_pos, through_id FROM outbox_publications \
        ORDER BY through_pos DESC, through_id DESC LIMIT 1) \
    (SELECT pos::text::int8 AS pos, true AS readable, \
        published_at IS NOT NULL AS published, id, event_id, created_at, event_type, \
        payload::text AS payload, exchange, routing_key, properties::text AS properties, \
        octet_length(body)::int8 AS body_bytes, traceparent, tracestate \
    FROM outbox \
    WHERE (pos, id) > ((SELECT through_pos FROM cursor), (SELECT through_id FROM cursor)) \
      AND pos < pg_snapshot_xmin(pg_current_snapshot()) \
    ORDER BY outbox.pos, outbox.id LIMIT $1) \
    UNION ALL \
    (SELECT pos::text::int8, false, false, id, event_id, created_at, NULL, NULL, NULL, NULL, \
        NULL, NULL, NULL, NULL \
    FROM outbox \
    WHERE (pos, id) > (greatest(pg_snapshot_xmin(pg_current_snapshot()), \
                                (SELECT through_pos FROM cursor)), \
                       CASE WHEN pg_snapshot_xmin(pg_current_snapshot()) \
                                 > (SELECT through_pos FROM cursor) \
                            THEN 0 ELSE (SELECT through_id FROM cursor) END) \
    ORDER BY outbox.pos, outbox.id LIMIT 1)";

/// Reads up to `limit` rows after the cursor. Relays on several instances take turns batch by
/// batch (a transaction-scoped advisory lock, the one 0.2.0's relays take), so each order's
/// events are published in version order.
///
/// [`StoreError::OutboxAhead`] when the cursor or a row is positioned beyond every transaction id
/// this server has assigned: the database was restored from a dump or moved to another cluster,
/// where transaction ids start lower, and reading on would publish nothing
/// (docs/operations/runbook.md "OrderServiceOutboxRelayRefuses").
pub async fn read_batch(pool: &PgPool, limit: u32) -> Result<BatchRead, StoreError> {
    let mut tx = crate::store::begin(pool).await?;
    // One statement: the lease, the mode, and whether the cursor (the last batch published) or
    // anything else is positioned past the server's transaction ids (one probe of the `(pos, id)`
    // index from `xmax`, the statement snapshot's next transaction id). Its snapshot is older
    // than the lease: the batch reads the cursor again (`READ_AFTER_CURSOR`).
    let state = sqlx::query_as::<_, RelayState>(
        "WITH snapshot AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin, \
                                  pg_snapshot_xmax(pg_current_snapshot()) AS xmax), \
              cursor AS (SELECT through_pos FROM outbox_publications \
                         ORDER BY through_pos DESC, through_id DESC LIMIT 1) \
         SELECT pg_try_advisory_xact_lock(hashtext('order-service.outbox-relay')) AS leased, \
                cursor.through_pos::text::int8 AS cursor_pos, \
                mode.marks_published, snapshot.xmax::text::int8 AS next_xid, \
                (cursor.through_pos >= snapshot.xmax \
                 OR EXISTS (SELECT 1 FROM outbox WHERE pos >= snapshot.xmax)) AS rows_ahead \
         FROM snapshot, cursor, outbox_relay_mode AS mode",
    )
    .fetch_one(&mut *tx)
    .await?;
    // Each early end rolls back at once, releasing the lease (a dropped transaction rolls back
    // only when its connection is next used).
    if !state.leased {
        tx.rollback().await?;
        return Ok(BatchRead::Leased);
    }
    if state.rows_ahead {
        tx.rollback().await?;
        return Err(StoreError::OutboxAhead {
            cursor: state.cursor_pos,
            next_xid: state.next_xid,
        });
    }
    let mut rows = sqlx::query_as::<_, LogRow>(READ_AFTER_CURSOR)
        .bind(i64::from(limit))
        .fetch_all(&mut *tx)
        .await?;
    let horizon = Horizon {
        rows_behind: rows.last().is_some_and(|row| !row.readable),
    };
    rows.retain(|row| row.readable);
    if rows.is_empty() {
        tx.rollback().await?;
        return Ok(BatchRead::Idle(horizon));
    }
    let read = rows
        .iter()
        .map(|row| LogPosition {
            pos: row.pos,
            id: row.row.id,
        })
        .collect();
    let (skipped, waiting): (Vec<LogRow>, Vec<LogRow>) =
        rows.into_iter().partition(|row| row.published);
    let rows = pending::load(&mut tx, waiting.into_iter().map(|row| row.row).collect()).await?;
    Ok(BatchRead::Batch(RelayBatch {
        tx,
        marks_published: state.marks_published,
        read,
        skipped: skipped.iter().map(|row| row.row.id).collect(),
        rows,
        horizon,
    }))
}

impl RelayBatch {
    /// How many rows the batch read, those skipped included: a full batch means more may wait.
    pub fn read_count(&self) -> usize {
        self.read.len()
    }

    /// Moves the cursor past the settled prefix of the batch (rows `published`, `set_aside` or
    /// skipped; it stops before the first row that is none of these, which the next batch reads
    /// again), moves the rows `set_aside` to `outbox_set_aside` with their reasons, marks the
    /// rows `published` if the mode says so, and commits, releasing the lease.
    pub async fn finish(
        mut self,
        published: &[i64],
        set_aside: &[SetAside],
    ) -> Result<(), StoreError> {
        let settled: HashSet<i64> = published
            .iter()
            .copied()
            .chain(set_aside.iter().map(|row| row.id))
            .chain(self.skipped.iter().copied())
            .collect();
        let Some(through) = settled_through(&self.read, &settled) else {
            self.tx.rollback().await?;
            return Ok(());
        };
        if !set_aside.is_empty() {
            move_aside(&mut self.tx, set_aside).await?;
        }
        sqlx::query(
            "INSERT INTO outbox_publications (through_pos, through_id, events) \
             VALUES ($1::int8::text::xid8, $2, $3)",
        )
        .bind(through.pos)
        .bind(through.id)
        .bind(i32::try_from(published.len()).unwrap_or(i32::MAX))
        .execute(&mut *self.tx)
        .await?;
        // A statement of its own, sent only while relays mark: one statement doing both whatever
        // the mode was planned anew at every batch (its plan for either mode is cheaper than one
        // that serves both), at about 90 µs of Postgres CPU each.
        if self.marks_published {
            sqlx::query("UPDATE outbox SET published_at = now() WHERE id = ANY($1)")
                .bind(published)
                .execute(&mut *self.tx)
                .await?;
        }
        self.tx.commit().await?;
        Ok(())
    }
}

/// The last position of the longest prefix of `read` whose rows are all `settled`.
fn settled_through(read: &[LogPosition], settled: &HashSet<i64>) -> Option<LogPosition> {
    read.iter()
        .take_while(|at| settled.contains(&at.id))
        .last()
        .copied()
}

/// Moves the rows `set_aside` to `outbox_set_aside`, each with its reason cut to 1 KiB.
async fn move_aside(
    tx: &mut Transaction<'static, Postgres>,
    set_aside: &[SetAside],
) -> Result<(), StoreError> {
    let ids: Vec<i64> = set_aside.iter().map(|row| row.id).collect();
    let reasons: Vec<&str> = set_aside
        .iter()
        .map(|row| pending::cut(&row.reason, MAX_SET_ASIDE_REASON_BYTES))
        .collect();
    sqlx::query(
        "WITH reasons AS (SELECT * FROM unnest($1::int8[], $2::text[]) AS r(id, reason)), \
         moved AS (\
             DELETE FROM outbox USING reasons WHERE outbox.id = reasons.id \
             RETURNING outbox.id, event_id, event_type, order_id, order_version, payload, \
                 exchange, routing_key, body, properties, traceparent, tracestate, \
                 created_at, reasons.reason) \
         INSERT INTO outbox_set_aside (id, event_id, event_type, order_id, order_version, \
             payload, exchange, routing_key, body, properties, traceparent, tracestate, \
             created_at, reason) \
         SELECT * FROM moved",
    )
    .bind(&ids)
    .bind(&reasons)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(pos: i64, id: i64) -> LogPosition {
        LogPosition { pos, id }
    }

    #[test]
    fn the_cursor_stops_before_the_first_row_not_settled() {
        let read = [at(5, 1), at(5, 2), at(7, 3), at(9, 4)];
        let settled = HashSet::from([1, 2, 4]);
        assert_eq!(settled_through(&read, &settled), Some(at(5, 2)));
        assert_eq!(settled_through(&read, &HashSet::from([2, 3])), None);
        assert_eq!(
            settled_through(&read, &HashSet::from([1, 2, 3, 4])),
            Some(at(9, 4))
        );
    }
}
