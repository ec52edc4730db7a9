//! Reads for the REST API: one order, a newest-first page of orders (by status, customer, transfer
//! or all), an order's ledger (both directions), history and published events.

use super::{App, AppError};
use crate::domain::{
    CustomerId, HistoryEntry, LedgerEntry, Order, OrderId, OrderStatus, TransferId,
};
use chrono::{DateTime, Utc};

use strum::IntoEnumIterator;
use uuid::Uuid;

use super::events::event_id;
use crate::domain::{EventType, Version};
use crate::store::orders::{self, OrderFilter};
use crate::store::outbox::order_events::{self, HeldEvent};
use crate::store::{transfers, transitions};

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

#[derive(Debug, Clone)]
pub struct OrderPage {
    pub items: Vec<Order>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}

impl App {
    pub async fn order(&self, id: OrderId) -> Result<Order, AppError> {
        let mut conn = self.connection().await?;
        orders::find(&mut conn, id)
            .await?
            .ok_or(AppError::NotFound(id))
    }

    pub async fn orders(&self, page: PageRequest) -> Result<OrderPage, AppError> {
        let limit = usize::from(page.limit);
        // One extra row tells whether another page follows.
        let filter = OrderFilter {
            status: page.status,
            customer_id: page.customer_id,
            transfer_id: page.transfer_id,
        };
        let mut items = orders::list(
            &self.pool,
            &filter,
            page.after.map(|c| (c.at, c.id)),
            limit as i64 + 1,
        )
        .await?;
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(Cursor::after)
        } else {
            None
        };
        Ok(OrderPage { items, next })
    }

    pub async fn payments(&self, id: OrderId) -> Result<Vec<LedgerEntry>, AppError> {
        self.order(id).await?;
        Ok(transfers::for_order(&self.pool, id).await?)
    }

    pub async fn history(&self, id: OrderId) -> Result<Vec<HistoryEntry>, AppError> {
        self.order(id).await?;
        Ok(transitions::for_order(&self.pool, id).await?)
    }

    /// The events the order's changes wrote that the outbox still holds (docs/messaging.md
    /// "Published events"), oldest first: every event id any of its versions could have
    /// emitted, looked up by id.
    pub async fn order_events(&self, id: OrderId) -> Result<Vec<HeldEvent>, AppError> {
        let order = self.order(id).await?;
        let candidates: Vec<Uuid> = (1..=order.version.get())
            .filter_map(Version::new)
            .flat_map(|version| EventType::iter().map(move |kind| event_id(id, version, kind)))
            .collect();
        Ok(order_events::held(&self.pool, &candidates).await?)
    }
}
