//! The `transfers` table: the ledger, money in (payments) and out (refunds), and how it is read.
//! `transfer_id` is the primary key across both directions, so a transfer is recorded at most
//! once: the row is written with its order's change (`order_changes`), and a second insert of an
//! id fails that whole statement; the caller reads the recorded row and compares contents.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use super::orders::{stored_money, stored_version};
use super::{StoreError, stored};
use crate::domain::{LedgerEntry, OrderId, Transfer, TransferId, Version};

/// The selected columns, named `ledger_*` so that a statement may select them beside an order's.
macro_rules! ledger_columns {
    () => {
        "transfers.transfer_id AS ledger_id, transfers.order_id AS ledger_order_id, \
         transfers.direction AS ledger_direction, transfers.amount_minor AS ledger_amount_minor, \
         transfers.currency AS ledger_currency, transfers.source AS ledger_source, \
         transfers.received_at AS ledger_received_at"
    };
}
pub(super) use ledger_columns;

#[derive(FromRow)]
pub(super) struct TransferRow {
    ledger_id: String,
    ledger_order_id: Uuid,
    ledger_direction: String,
    ledger_amount_minor: i64,
    ledger_currency: String,
    ledger_source: String,
    ledger_received_at: DateTime<Utc>,
}

impl TryFrom<TransferRow> for LedgerEntry {
    type Error = StoreError;

    fn try_from(row: TransferRow) -> Result<Self, Self::Error> {
        Ok(LedgerEntry {
            transfer: Transfer {
                id: TransferId::parse(&row.ledger_id)
                    .map_err(StoreError::corrupt("transfer_id"))?,
                order_id: OrderId::from_uuid(row.ledger_order_id),
                direction: stored("direction", &row.ledger_direction)?,
                money: stored_money(row.ledger_amount_minor, &row.ledger_currency)?,
            },
            source: stored("source", &row.ledger_source)?,
            received_at: row.ledger_received_at,
        })
    }
}

/// A ledger entry as a page lists it: with the version of the order's change that recorded it
/// (every entry is recorded by exactly one change, whose history row names it).
#[derive(FromRow)]
struct PagedRow {
    recorded_version: i64,
    #[sqlx(flatten)]
    entry: TransferRow,
}

/// A page of the order's ledger in the order its entries were recorded: up to `limit` entries
/// recorded after version `after` (from the first when `None`), each with the version that
/// recorded it. The history's primary key `(order_id, version)` serves it, then the ledger's:
/// no scan of the order's rows, however many. The version is the key rather than
/// `received_at`, a timestamp taken before the write waits for the order's row, so an entry
/// committed after a page was read can never sort before that page's end: a reader following
/// `next` sees every entry exactly once, even while payments arrive.
pub async fn page(
    pool: &PgPool,
    order_id: OrderId,
    after: Option<Version>,
    limit: i64,
) -> Result<Vec<(Version, LedgerEntry)>, StoreError> {
    sqlx::query_as::<_, PagedRow>(concat!(
        "SELECT history.version AS recorded_version, ",
        ledger_columns!(),
        " FROM order_transitions AS history \
         JOIN transfers ON transfers.transfer_id = history.transfer_id \
         WHERE history.order_id = $1 AND history.version > $2 \
           AND history.transfer_id IS NOT NULL \
         ORDER BY history.version LIMIT $3"
    ))
    .bind(order_id.as_uuid())
    .bind(after.map_or(0, Version::get))
    .bind(limit)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|row| Ok((stored_version(row.recorded_version)?, row.entry.try_into()?)))
    .collect()
}
