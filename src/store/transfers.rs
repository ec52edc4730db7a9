//! The `transfers` table: the ledger, money in (payments) and out (refunds), and how it is read.
//! `transfer_id` is the primary key across both directions, so a transfer is recorded at most
//! once: the row is written with its order's change (`order_changes`), and a second insert of an
//! id fails that whole statement; the caller reads the recorded row and compares contents.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use super::orders::stored_money;
use super::{StoreError, stored};
use crate::domain::{LedgerEntry, OrderId, Transfer, TransferId};

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

/// The order's ledger, oldest first.
pub async fn for_order(pool: &PgPool, order_id: OrderId) -> Result<Vec<LedgerEntry>, StoreError> {
    sqlx::query_as::<_, TransferRow>(concat!(
        "SELECT ",
        ledger_columns!(),
        " FROM transfers WHERE order_id = $1 ORDER BY received_at, transfer_id"
    ))
    .bind(order_id.as_uuid())
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(LedgerEntry::try_from)
    .collect()
}
