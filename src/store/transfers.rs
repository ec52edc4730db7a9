//! The `transfers` table: the ledger, money in (payments) and out (refunds). `transfer_id` is the
//! primary key across both directions, so a transfer is recorded at most once; a second insert is
//! a no-op and the caller compares contents.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::orders::stored_money;
use super::{Inserted, StoreError};
use crate::domain::{LedgerEntry, OrderId, Transfer, TransferId};

macro_rules! columns {
    () => {
        "transfer_id, order_id, direction, amount_minor, currency, source, received_at"
    };
}

#[derive(FromRow)]
struct TransferRow {
    transfer_id: String,
    order_id: Uuid,
    direction: String,
    amount_minor: i64,
    currency: String,
    source: String,
    received_at: DateTime<Utc>,
}

impl TryFrom<TransferRow> for LedgerEntry {
    type Error = StoreError;

    fn try_from(row: TransferRow) -> Result<Self, Self::Error> {
        Ok(LedgerEntry {
            transfer: Transfer {
                id: TransferId::parse(&row.transfer_id)
                    .map_err(StoreError::corrupt("transfer_id"))?,
                order_id: OrderId::from_uuid(row.order_id),
                direction: row
                    .direction
                    .parse()
                    .map_err(StoreError::corrupt("direction"))?,
                money: stored_money(row.amount_minor, &row.currency)?,
            },
            source: row.source.parse().map_err(StoreError::corrupt("source"))?,
            received_at: row.received_at,
        })
    }
}

/// `INSERT … ON CONFLICT DO NOTHING`: the ledger keeps each transfer id once. A concurrent insert
/// of the same id waits for the other transaction; [`Inserted::Taken`] then means the id is in the
/// ledger (or was, if that transaction rolled back), and the caller compares what it holds.
pub async fn record(
    conn: &mut PgConnection,
    transfer: &Transfer,
    source: crate::domain::Source,
) -> Result<Inserted<LedgerEntry>, StoreError> {
    let inserted = sqlx::query_as::<_, TransferRow>(concat!(
        "INSERT INTO transfers (transfer_id, order_id, direction, amount_minor, currency, source) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (transfer_id) DO NOTHING RETURNING ",
        columns!()
    ))
    .bind(transfer.id.as_str())
    .bind(transfer.order_id.as_uuid())
    .bind(transfer.direction.as_ref())
    .bind(transfer.money.minor.get())
    .bind(transfer.money.currency.as_str())
    .bind(source.as_ref())
    .fetch_optional(&mut *conn)
    .await?;
    match inserted {
        Some(row) => Ok(Inserted::New(row.try_into()?)),
        None => Ok(Inserted::Taken),
    }
}

pub async fn find(
    conn: &mut PgConnection,
    transfer_id: &TransferId,
) -> Result<Option<LedgerEntry>, StoreError> {
    sqlx::query_as::<_, TransferRow>(concat!(
        "SELECT ",
        columns!(),
        " FROM transfers WHERE transfer_id = $1"
    ))
    .bind(transfer_id.as_str())
    .fetch_optional(conn)
    .await?
    .map(LedgerEntry::try_from)
    .transpose()
}

/// The order's ledger, oldest first.
pub async fn for_order(pool: &PgPool, order_id: OrderId) -> Result<Vec<LedgerEntry>, StoreError> {
    sqlx::query_as::<_, TransferRow>(concat!(
        "SELECT ",
        columns!(),
        " FROM transfers WHERE order_id = $1 ORDER BY received_at, transfer_id"
    ))
    .bind(order_id.as_uuid())
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(LedgerEntry::try_from)
    .collect()
}
