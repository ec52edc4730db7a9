//! A batch in two statements, not two per item (docs/messaging.md "Batched consumer commits"):
//! one reads every order and ledger row the batch asks for, the domain decides every item in
//! memory, and one writes every change (`store::order_batches`).
//!
//! Items are decided in the order of their order ids (one order's items in the order they came),
//! each on the state the items before it leave: a second payment of one order sees the first, a
//! duplicate finds the ledger row its original is about to write and writes nothing. A change is
//! stamped with the read's time, or a microsecond after the order's change before it in the batch
//! ([`InBatch::time_of_change`]). An item that
//! decided on such a state *depends* on the order whose change made it. The write applies each
//! order whole or not at all: an order whose guard missed (a concurrent writer changed it since
//! the read) wrote none of its changes, and every item that wrote it or depended on it is decided
//! again in the next round, on a fresh read, in the same transaction. After
//! [`MAX_LOST_IN_BATCH`] rounds an item is set aside, as one that keeps losing is in the one by
//! one path.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use sqlx::{Connection, PgConnection};

use super::{Ended, Item, MAX_LOST_IN_BATCH, in_order_of_orders};
use crate::app::order_command::{Decided, OrderCommand, Prepared};
use crate::app::request::{Effect, Requested};
use crate::app::runner::Step;
use crate::app::{App, AppError, Outcome, deadline};
use crate::domain::{LedgerEntry, Order, OrderId, TransferId};
use crate::store;
use crate::store::order_batches;
use crate::store::order_changes::Snapshot;

impl App {
    /// Every item in one transaction of at most [`MAX_LOST_IN_BATCH`] rounds of two statements,
    /// committed; how each ended (in `items`' order) and how many races it lost on the way. `Err`
    /// when a statement failed: nothing is committed (the caller decides the items one by one).
    pub(super) async fn set_based(
        &self,
        items: &[Item],
        lock_wait: Duration,
    ) -> Result<Vec<(Ended, u64)>, AppError> {
        let commands: Vec<Requested<'_>> = items
            .iter()
            .map(|item| Requested::of(&item.request, &item.trace))
            .collect();
        let mut ended: Vec<Option<Ended>> = items.iter().map(|_| None).collect();
        let mut lost = vec![0_u64; items.len()];
        let mut connection = self.connection().await?;
        let mut tx = connection.begin().await?;
        if items.len() > 1 {
            // Waiting long here would hold every other item of the batch, and what it locked.
            store::wait_for_locks_at_most(&mut tx, lock_wait).await?;
        }
        let mut remaining = in_order_of_orders(items);
        for _ in 0..MAX_LOST_IN_BATCH {
            if remaining.is_empty() {
                break;
            }
            remaining = round(&mut tx, items, &commands, &remaining, &mut ended).await?;
            for &i in &remaining {
                lost[i] += 1;
            }
        }
        tx.commit().await?;
        Ok(ended
            .into_iter()
            .zip(lost)
            .map(|(end, lost)| (end.unwrap_or(Ended::SetAside), lost))
            .collect())
    }
}

/// One round over the `remaining` items (in order of their order ids): one read, the decisions,
/// one write. Settles in `ended` every item whose outcome stands; returns the others, to be
/// decided again.
async fn round(
    tx: &mut PgConnection,
    items: &[Item],
    commands: &[Requested<'_>],
    remaining: &[usize],
    ended: &mut [Option<Ended>],
) -> Result<Vec<usize>, AppError> {
    let asked: Vec<(OrderId, Option<&TransferId>)> =
        remaining.iter().map(|&i| commands[i].reads()).collect();
    let snapshots = order_batches::read_many(tx, &asked).await?;
    let mut state = InBatch::default();
    let mut verdicts = Vec::with_capacity(remaining.len());
    for ((&i, found), (order_id, transfer_id)) in remaining.iter().zip(snapshots).zip(&asked) {
        let (found, depends_on) = state.as_batch_leaves(found, *order_id, *transfer_id);
        let at = state.time_of_change(*order_id, found.read_at);
        let verdict = items[i].span.in_scope(|| decide(&commands[i], found, at));
        if let Ok(ItemVerdict::Write(prepared)) = &verdict {
            state.record(prepared, &items[i]);
        }
        verdicts.push((i, verdict, depends_on));
    }
    let writes: Vec<_> = verdicts
        .iter()
        .filter_map(|(i, verdict, _)| match verdict {
            Ok(ItemVerdict::Write(prepared)) => Some(prepared.write(&items[*i].cause)),
            _ => None,
        })
        .collect();
    let written = if writes.is_empty() {
        HashSet::new()
    } else {
        order_batches::write_many(tx, &writes, deadline::remaining()).await?
    };
    drop(writes);
    let mut again = Vec::new();
    for (i, verdict, depends_on) in verdicts {
        if depends_on.iter().any(|order| !written.contains(order)) {
            again.push(i);
            continue;
        }
        let stepped = match verdict {
            Ok(ItemVerdict::Write(prepared)) => {
                if !written.contains(&prepared.change.next.id) {
                    again.push(i);
                    continue;
                }
                prepared.applied(&items[i].cause)
            }
            Ok(ItemVerdict::Unchanged(value)) => {
                Ok(Step::Unchanged(Outcome::AlreadyApplied(value)))
            }
            Err(error) => Err(error),
        };
        ended[i] = Some(Ended::Settled(Box::new(stepped)));
    }
    Ok(again)
}

/// What one item of the batch writes, as the domain decided it on the state the items before it
/// leave: nothing (its change is already there, answered as [`Decided::AlreadyApplied`] is), or
/// its change, stamped with its time in the batch. Not the domain's `Decision` (on an order as
/// read) nor the command's `Decided` (not yet stamped).
enum ItemVerdict<'a> {
    Unchanged(Effect),
    Write(Prepared<'a>),
}

/// The domain's decision on `found`, made ready to write as a change at `at`.
fn decide<'a>(
    command: &'a Requested<'_>,
    found: Snapshot,
    at: DateTime<Utc>,
) -> Result<ItemVerdict<'a>, AppError> {
    Ok(match command.decide(found)? {
        Decided::AlreadyApplied(value) => ItemVerdict::Unchanged(value),
        Decided::Write(change) => ItemVerdict::Write(Prepared::new(*change, at)?),
    })
}

/// What the changes decided so far in a round leave: orders and ledger rows not yet written.
#[derive(Default)]
struct InBatch {
    orders: HashMap<OrderId, Order>,
    entries: HashMap<TransferId, LedgerEntry>,
}

impl InBatch {
    /// `found` as the changes decided so far leave it, and the orders whose changes it then
    /// depends on.
    fn as_batch_leaves(
        &self,
        mut found: Snapshot,
        order_id: OrderId,
        transfer_id: Option<&TransferId>,
    ) -> (Snapshot, Vec<OrderId>) {
        let mut depends_on = Vec::new();
        if let Some(order) = self.orders.get(&order_id) {
            found.order = Some(order.clone());
            depends_on.push(order_id);
        }
        if let Some(entry) = transfer_id.and_then(|id| self.entries.get(id)) {
            found.entry = Some(entry.clone());
            depends_on.push(entry.transfer.order_id);
        }
        (found, depends_on)
    }

    /// The time a change of `order_id` decided now is stamped with: the read's, as a command
    /// alone is, but a microsecond after the order's change before it in the batch, so that an
    /// order's changes (and the ledger rows they record) keep their order in time.
    fn time_of_change(&self, order_id: OrderId, read_at: DateTime<Utc>) -> DateTime<Utc> {
        match self.orders.get(&order_id) {
            Some(order) => read_at.max(order.updated_at + TimeDelta::microseconds(1)),
            None => read_at,
        }
    }

    /// What `prepared`, `item`'s change, leaves for the items after it.
    fn record(&mut self, prepared: &Prepared<'_>, item: &Item) {
        let next = &prepared.change.next;
        self.orders.insert(next.id, next.clone());
        if let Some(entry) = prepared.entry(&item.cause) {
            self.entries.insert(entry.transfer.id.clone(), entry);
        }
    }
}
