//! An order's own records, a page at a time, oldest first: its history (by version), its ledger
//! (in the order its entries were recorded) and the events its changes wrote (in outbox order).
//! Each grows with every write to the order, without bound (an order of 10^12 takes 10^12
//! payments of 1), so none is ever read whole (docs/contract.md "Pages"). Each page's key is what
//! its store query orders by; the HTTP layer turns it into an opaque `next` token.

use super::queries::{Page, rows_for};
use super::{App, AppError};
use crate::domain::{HistoryEntry, LedgerEntry, OrderId, Version};
use crate::store::outbox::order_events::{self, HeldEvent};
use crate::store::{transfers, transitions};

/// Which page of an order's records: at most `limit` of them, after the one `after` names (from
/// the first when `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageAfter<K> {
    pub limit: u16,
    pub after: Option<K>,
}

/// Where a page of an order's history starts: after the entry of this version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryAfter(pub Version);

/// Where a page of an order's ledger starts: after the entry recorded by the change of this
/// version (each entry is recorded by one change).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerAfter(pub Version);

/// Where a page of an order's events starts: after the outbox row of this id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventsAfter(pub i64);

impl App {
    /// A page of the order's history, by version.
    pub async fn history(
        &self,
        id: OrderId,
        page: PageAfter<HistoryAfter>,
    ) -> Result<Page<HistoryEntry, HistoryAfter>, AppError> {
        self.order(id).await?;
        let after = page.after.map(|HistoryAfter(version)| version);
        let rows = transitions::page(&self.pool, id, after, rows_for(page.limit)).await?;
        Ok(Page::of(rows, page.limit, |entry| {
            HistoryAfter(entry.version)
        }))
    }

    /// A page of the order's ledger entries, both directions, in the order they were recorded.
    pub async fn payments(
        &self,
        id: OrderId,
        page: PageAfter<LedgerAfter>,
    ) -> Result<Page<LedgerEntry, LedgerAfter>, AppError> {
        self.order(id).await?;
        let after = page.after.map(|LedgerAfter(version)| version);
        let rows = transfers::page(&self.pool, id, after, rows_for(page.limit)).await?;
        let Page { items, next } = Page::of(rows, page.limit, |(version, _)| LedgerAfter(*version));
        Ok(Page {
            items: items.into_iter().map(|(_, entry)| entry).collect(),
            next,
        })
    }

    /// A page of the events the order's changes wrote that the outbox still holds
    /// (docs/messaging.md "Published events"), oldest first.
    pub async fn order_events(
        &self,
        id: OrderId,
        page: PageAfter<EventsAfter>,
    ) -> Result<Page<HeldEvent, EventsAfter>, AppError> {
        self.order(id).await?;
        let after = page.after.map(|EventsAfter(row)| row);
        let rows = order_events::page(&self.pool, id, after, rows_for(page.limit)).await?;
        Ok(Page::of(rows, page.limit, |event| EventsAfter(event.id)))
    }
}
