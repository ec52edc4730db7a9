//! The two designs batched as the consumer batches (bench/README.md): a batch of payment
//! deliveries, duplicates among them, applied in one transaction, each message under a savepoint
//! of its own so that one failing message would not sink the others.
//!
//! - **Natural idempotency**: per message, the one-statement payment ([`crate::cte`]); a
//!   duplicate misses the guard and writes nothing.
//! - **Dedup table**: per message, `INSERT INTO processed_messages … ON CONFLICT DO NOTHING`
//!   first, then, if the id was new, the same one-statement payment.
//!
//! ```text
//! BEGIN
//! SAVEPOINT message                              -- before the first message
//! [INSERT INTO processed_messages …]  WITH paid AS (UPDATE orders …) …
//! RELEASE SAVEPOINT message; SAVEPOINT message   -- between messages: one round trip
//! …
//! COMMIT                                         -- releases the last savepoint
//! ```
//!
//! A batch of one message takes no savepoint (its transaction is the message). Each batch is
//! applied in order-id order, so concurrent batches lock rows in one order and never deadlock
//! when a duplicate and its original are in flight at once.

use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use crate::cte;
use crate::workload;

/// How a batched design recognises a duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedup {
    /// The ledger's key and the guarded update absorb it.
    Natural,
    /// A table of processed message ids in front of the writes.
    Table,
}

/// The table of the dedup-table design, created only in the bench's own database.
pub const DEDUP_TABLE: &str = "processed_messages";

pub const CREATE_DEDUP_TABLE: &str = "CREATE TABLE processed_messages (\
     message_id   text        NOT NULL PRIMARY KEY, \
     processed_at timestamptz NOT NULL DEFAULT now())";

/// Applies one batch (each entry names the order its payment delivery pays) in one transaction;
/// returns how many payments took effect (duplicates do not).
pub async fn apply(conn: &mut PgConnection, batch: &[Uuid], dedup: Dedup) -> anyhow::Result<u64> {
    let mut batch = batch.to_vec();
    batch.sort_unstable();
    let savepoints = batch.len() > 1;
    let mut tx = conn.begin().await?;
    let mut applied = 0;
    for (i, &order_id) in batch.iter().enumerate() {
        if savepoints {
            let sql = if i == 0 {
                "SAVEPOINT message"
            } else {
                "RELEASE SAVEPOINT message; SAVEPOINT message"
            };
            sqlx::raw_sql(sql).execute(&mut *tx).await?;
        }
        if dedup == Dedup::Table && !first_delivery(&mut tx, order_id).await? {
            continue;
        }
        let written = cte::pay(&mut tx, order_id).await?;
        if dedup == Dedup::Table && !written {
            anyhow::bail!("a first delivery of order {order_id}'s payment missed its guard");
        }
        applied += u64::from(written);
    }
    tx.commit().await?;
    Ok(applied)
}

/// Records the delivery's message id; `false` when it was recorded before (a duplicate).
async fn first_delivery(conn: &mut PgConnection, order_id: Uuid) -> anyhow::Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO processed_messages (message_id) VALUES ($1) ON CONFLICT DO NOTHING",
    )
    .bind(workload::paid_event_id(order_id))
    .execute(conn)
    .await?
    .rows_affected();
    Ok(inserted == 1)
}
