//! Reads for the REST API: one order, and a newest-first page of orders (by status, customer,
//! transfer or all); [`Page`], what every listing answers. An order's own records, a page at a
//! time, are in `order_records.rs`.

use super::{App, AppError};
use crate::domain::{CustomerId, Order, OrderId, OrderStatus, TransferId};
use chrono::{DateTime, Utc};

use crate::store::orders::{self, OrderFilter};

/// Where a page of a newest-first listing starts: strictly after the item with this time and id
/// (an order's `created_at`, a dead letter's `last_dead_lettered_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor<Id = OrderId> {
    pub at: DateTime<Utc>,
    pub id: Id,
}

impl Cursor {
    fn after(order: &Order) -> Self {
        Self {
            at: order.created_at,
            id: order.id,
        }
    }
}

/// A page request: optional filters (all must hold), a page size and where the previous page
/// ended.
#[derive(Debug, Clone)]
pub struct PageRequest {
    pub status: Option<OrderStatus>,
    pub customer_id: Option<CustomerId>,
    pub transfer_id: Option<TransferId>,
    pub limit: u16,
    pub after: Option<Cursor>,
}

/// A page of a listing: at most the page size asked for, and where the next page starts (the
/// key of its last item), `None` on the last page.
#[derive(Debug, Clone)]
pub struct Page<T, K> {
    pub items: Vec<T>,
    pub next: Option<K>,
}

impl<T, K> Page<T, K> {
    /// The page of `limit` items out of `rows`, read with one row more than `limit`: that extra
    /// row, dropped here, tells whether another page follows.
    pub(super) fn of(mut rows: Vec<T>, limit: u16, key: impl Fn(&T) -> K) -> Self {
        let limit = usize::from(limit);
        let next = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(key)
        } else {
            None
        };
        Self { items: rows, next }
    }
}

/// How many rows to read for a page of `limit` (see [`Page::of`]).
pub(super) fn rows_for(limit: u16) -> i64 {
    i64::from(limit) + 1
}

pub type OrderPage = Page<Order, Cursor>;

impl App {
    pub async fn order(&self, id: OrderId) -> Result<Order, AppError> {
        let mut conn = self.connection().await?;
        orders::find(&mut conn, id)
            .await?
            .ok_or(AppError::NotFound(id))
    }

    pub async fn orders(&self, page: PageRequest) -> Result<OrderPage, AppError> {
        let filter = OrderFilter {
            status: page.status,
            customer_id: page.customer_id,
            transfer_id: page.transfer_id,
        };
        let rows = orders::list(
            &self.pool,
            &filter,
            page.after.map(|c| (c.at, c.id)),
            rows_for(page.limit),
        )
        .await?;
        Ok(Page::of(rows, page.limit, Cursor::after))
    }
}
