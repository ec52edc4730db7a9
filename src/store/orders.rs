//! The `orders` table: one row per order. Every change is a guarded write on status and version.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::{Guarded, Inserted, StoreError};
use crate::domain::{
    AmountMinor, BoundedText, Change, Currency, CustomerId, Money, Order, OrderId, OrderStatus,
    Shipment, Version,
};

/// The selected columns, as a macro so that queries stay `&'static str` (sqlx 0.9 requires it).
macro_rules! columns {
    () => {
        "id, customer_id, amount_minor, currency, status, version, paid_minor, refunded_minor, \
         refund_required, \
         carrier, tracking_number, cancellation_reason, created_at, updated_at"
    };
}

#[derive(FromRow)]
struct OrderRow {
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
            status: row.status.parse().map_err(StoreError::corrupt("status"))?,
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
    sqlx::query_as::<_, OrderRow>(concat!("SELECT ", columns!(), " FROM orders WHERE id = $1"))
        .bind(id.as_uuid())
        .fetch_optional(conn)
        .await?
        .map(Order::try_from)
        .transpose()
}

/// Inserts a new order unless its id is taken (by a committed order, or by a concurrent
/// transaction this insert waited for).
pub async fn insert(conn: &mut PgConnection, order: &Order) -> Result<Inserted<Order>, StoreError> {
    let row = sqlx::query_as::<_, OrderRow>(concat!(
        "INSERT INTO orders (id, customer_id, amount_minor, currency, status, version) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING ",
        columns!()
    ))
    .bind(order.id.as_uuid())
    .bind(order.customer_id.as_str())
    .bind(order.amount.minor.get())
    .bind(order.amount.currency.as_str())
    .bind(order.status.as_ref())
    .bind(order.version.get())
    .fetch_optional(conn)
    .await?;
    match row {
        Some(row) => Ok(Inserted::New(row.try_into()?)),
        None => Ok(Inserted::Taken),
    }
}

/// The guarded write: applies `change` only if the order is still in `change.from` at the version
/// it was read at. A deadlock or serialization failure is the same news as zero rows: another
/// writer got there first.
pub async fn apply(conn: &mut PgConnection, change: &Change) -> Result<Guarded<Order>, StoreError> {
    let next = &change.next;
    let shipment = next.shipment.as_ref();
    let row = sqlx::query_as::<_, OrderRow>(concat!(
        "UPDATE orders SET status = $4, version = version + 1, paid_minor = $5, \
         refunded_minor = $10, refund_required = $6, carrier = $7, tracking_number = $8, \
         cancellation_reason = $9, updated_at = now() \
         WHERE id = $1 AND status = $2 AND version = $3 RETURNING ",
        columns!()
    ))
    .bind(next.id.as_uuid())
    .bind(change.from.as_ref())
    .bind(change.from_version.get())
    .bind(next.status.as_ref())
    .bind(next.paid_minor)
    .bind(next.refund_required)
    .bind(shipment.map(|s| s.carrier.as_str()))
    .bind(shipment.map(|s| s.tracking_number.as_str()))
    .bind(next.cancellation_reason.as_ref().map(|r| r.as_str()))
    .bind(next.refunded_minor)
    .fetch_optional(conn)
    .await;
    match row.map_err(StoreError::from) {
        Ok(Some(row)) => Ok(Guarded::Applied(row.try_into()?)),
        Ok(None) | Err(StoreError::Contended(_)) => Ok(Guarded::Lost),
        Err(error) => Err(error),
    }
}

/// Which orders a listing shows: every filter given must hold.
#[derive(Debug, Clone, Default)]
pub struct OrderFilter {
    pub status: Option<OrderStatus>,
    pub customer_id: Option<CustomerId>,
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
        columns!(),
        " FROM orders \
         WHERE ($1::text IS NULL OR status = $1) \
           AND ($5::text IS NULL OR customer_id = $5) \
           AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3)) \
         ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(filter.status.map(|s| s.as_ref().to_owned()))
    .bind(after.map(|(created_at, _)| created_at))
    .bind(after.map(|(_, id)| id.as_uuid()))
    .bind(limit)
    .bind(filter.customer_id.as_ref().map(CustomerId::as_str))
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
