//! The `orders` table: one row per order, and how it is read. Every change is a guarded write on
//! status and version, made with the change's other rows in one statement (`order_changes`).

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::{StoreError, stored};
use crate::domain::{
    AmountMinor, BoundedText, Currency, CustomerId, Money, Order, OrderId, OrderStatus, Shipment,
    TransferId, Version,
};

/// The selected columns, as a macro so that queries stay `&'static str` (sqlx 0.9 requires it);
/// qualified, so that a statement may join other tables.
macro_rules! order_columns {
    () => {
        "orders.id, orders.customer_id, orders.amount_minor, orders.currency, orders.status, \
         orders.version, orders.paid_minor, orders.refunded_minor, orders.refund_required, \
         orders.carrier, orders.tracking_number, orders.cancellation_reason, orders.created_at, \
         orders.updated_at"
    };
}
pub(super) use order_columns;

#[derive(FromRow)]
pub(super) struct OrderRow {
    id: Uuid,
    customer_id: String,
    amount_minor: i64,
    currency: String,
    status: String,
    version: i64,
    paid_minor: i64,
    refunded_minor: i64,
    refund_required: bool,
    carrier: Option<String>,
    tracking_number: Option<String>,
    cancellation_reason: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl TryFrom<OrderRow> for Order {
    type Error = StoreError;

    fn try_from(row: OrderRow) -> Result<Self, Self::Error> {
        let shipment = match (row.carrier, row.tracking_number) {
            (Some(carrier), Some(tracking)) => Some(
                Shipment::parse(&carrier, &tracking).map_err(StoreError::corrupt("shipment"))?,
            ),
            _ => None,
        };
        Ok(Order {
            id: OrderId::from_uuid(row.id),
            customer_id: CustomerId::parse(&row.customer_id)
                .map_err(StoreError::corrupt("customer_id"))?,
            amount: stored_money(row.amount_minor, &row.currency)?,
            status: stored("status", &row.status)?,
            version: stored_version(row.version)?,
            paid_minor: row.paid_minor,
            refunded_minor: row.refunded_minor,
            refund_required: row.refund_required,
            shipment,
            cancellation_reason: row
                .cancellation_reason
                .map(|r| BoundedText::parse("cancellation_reason", &r, usize::MAX))
                .transpose()
                .map_err(StoreError::corrupt("cancellation_reason"))?,
            created_at: row.created_at,
            updated_at: row.updated_at,
        })
    }
}

pub async fn find(conn: &mut PgConnection, id: OrderId) -> Result<Option<Order>, StoreError> {
    sqlx::query_as::<_, OrderRow>(concat!(
        "SELECT ",
        order_columns!(),
        " FROM orders WHERE id = $1"
    ))
    .bind(id.as_uuid())
    .fetch_optional(conn)
    .await?
    .map(Order::try_from)
    .transpose()
}

/// Which orders a listing shows: every filter given must hold.
#[derive(Debug, Clone, Default)]
pub struct OrderFilter {
    pub status: Option<OrderStatus>,
    pub customer_id: Option<CustomerId>,
    /// Only the order whose ledger holds this transfer (a payment's or a refund's id).
    pub transfer_id: Option<TransferId>,
}

/// Newest first, keyset-paginated on `(created_at, id)`: the page starts strictly after `after`.
pub async fn list(
    pool: &PgPool,
    filter: &OrderFilter,
    after: Option<(DateTime<Utc>, OrderId)>,
    limit: i64,
) -> Result<Vec<Order>, StoreError> {
    sqlx::query_as::<_, OrderRow>(concat!(
        "SELECT ",
        order_columns!(),
        " FROM orders \
         WHERE ($1::text IS NULL OR status = $1) \
           AND ($5::text IS NULL OR customer_id = $5) \
           AND ($6::text IS NULL OR id = (SELECT order_id FROM transfers WHERE transfer_id = $6)) \
           AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3)) \
         ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(filter.status.map(|s| s.as_ref().to_owned()))
    .bind(after.map(|(created_at, _)| created_at))
    .bind(after.map(|(_, id)| id.as_uuid()))
    .bind(limit)
    .bind(filter.customer_id.as_ref().map(CustomerId::as_str))
    .bind(filter.transfer_id.as_ref().map(TransferId::as_str))
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(Order::try_from)
    .collect()
}

/// The oldest orders still waiting for payment that were placed more than `age` ago by the
/// database's clock (the one that stamped `created_at`), up to `limit` of them; the partial
/// index `orders_pending_created_at_idx` serves this.
pub async fn pending_older_than(
    pool: &PgPool,
    age: std::time::Duration,
    limit: i64,
) -> Result<Vec<OrderId>, StoreError> {
    let age = chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
    let ids: Vec<Uuid> = sqlx::query_scalar(
        "SELECT id FROM orders WHERE status = 'PENDING_PAYMENT' \
         AND created_at < now() - $1::interval ORDER BY created_at, id LIMIT $2",
    )
    .bind(age)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(ids.into_iter().map(OrderId::from_uuid).collect())
}

/// Money read back from an `amount_minor` and a `currency` column.
pub(super) fn stored_money(amount_minor: i64, currency: &str) -> Result<Money, StoreError> {
    Ok(Money::new(
        AmountMinor::parse(amount_minor).map_err(StoreError::corrupt("amount_minor"))?,
        Currency::parse(currency).map_err(StoreError::corrupt("currency"))?,
    ))
}

/// A version read back from the table (whose CHECK keeps it at 1 or more).
pub(super) fn stored_version(value: i64) -> Result<Version, StoreError> {
    Version::new(value).ok_or(StoreError::Corrupt {
        what: "version",
        source: format!("{value} is below 1").into(),
    })
}
