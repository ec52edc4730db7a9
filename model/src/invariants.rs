//! The invariants of docs/contract.md "Invariants" as predicates on one state of the model.

use crate::domain::{Command, Status};
use crate::protocol::{Protocol, RestRequest};
use crate::state::{Answer, Rest, State};

/// Invariants 1, 2 and 4: one ledger row per transfer id, one history row per order version,
/// each order into each status at most once, one outbox event per change and type.
pub fn effect_at_most_once(s: &State) -> bool {
    let db = &s.db;
    let committed_ledger: Vec<_> = db.ledger.iter().filter(|r| r.writer.is_none()).collect();
    let committed_history: Vec<_> = db.history.iter().filter(|r| r.writer.is_none()).collect();
    let events: Vec<_> = db
        .outbox
        .iter()
        .filter(|r| r.writer.is_none() && r.order.is_some())
        .map(|r| (r.order, r.version, r.event))
        .collect();
    distinct(committed_ledger.iter().map(|r| r.transfer))
        && distinct(committed_history.iter().map(|r| (r.order, r.version)))
        && distinct(
            committed_history
                .iter()
                .filter(|r| r.enters.is_some())
                .map(|r| (r.order, r.enters)),
        )
        && distinct(events.into_iter())
}

/// Invariant 5 and the guarantee "nothing applied is lost": what an acknowledged message or an
/// applied REST request did is in the committed state, and no later write undid it — every
/// order's `paid` is the count of its ledger rows, its history one row per version.
pub fn acknowledged_write_kept(m: &Protocol, s: &State) -> bool {
    let db = &s.db;
    let status = |order: u8| db.orders[usize::from(order)].committed.map(|o| o.status);
    let acked_kept = m.messages.iter().zip(&s.acked).all(|(&command, &acked)| {
        !acked
            || match command {
                Command::Place(order) => status(order).is_some(),
                Command::Pay { order, transfer } => db
                    .ledger
                    .iter()
                    .any(|r| r.writer.is_none() && r.transfer == transfer && r.order == order),
                Command::Ship(order) => status(order) == Some(Status::Shipped),
                Command::Cancel(order) => status(order) == Some(Status::Cancelled),
            }
    });
    let answered_kept = m
        .rest
        .iter()
        .zip(&s.rest)
        .all(|(request, rest)| match (request, rest) {
            (RestRequest::Cancel(order), Rest::Done(Answer::Applied)) => {
                status(*order) == Some(Status::Cancelled)
            }
            _ => true,
        });
    let orders_agree = db.orders.iter().enumerate().all(|(order, slot)| {
        let Some(row) = slot.committed else {
            return true;
        };
        let order = order as u8;
        let paid = db
            .ledger
            .iter()
            .filter(|r| r.writer.is_none() && r.order == order)
            .count();
        let versions = db
            .history
            .iter()
            .filter(|r| r.writer.is_none() && r.order == order)
            .count();
        usize::from(row.paid) == paid && usize::from(row.version) == versions
    });
    acked_kept && answered_kept && orders_agree
}

/// Invariant 4's "every outbox event is published at least once".
pub fn every_change_published(s: &State) -> bool {
    s.db.outbox
        .iter()
        .all(|row| row.writer.is_some() || s.published[usize::from(row.id)] > 0)
}

/// Invariant 6: at most one row holds the key, in either table, and at most one request under it
/// took effect.
pub fn key_is_one_request(s: &State) -> bool {
    let rows = s.db.history.iter().filter(|r| r.key_of.is_some()).count() + s.db.key_actions.len();
    let applied = s
        .rest
        .iter()
        .filter(|r| **r == Rest::Done(Answer::Applied))
        .count();
    rows <= 1 && applied <= 1
}

/// An order's later version written by a transaction whose xid is older than an earlier
/// version's: what `pos = greatest(…)` is for.
pub fn later_version_older_xid(s: &State) -> bool {
    let rows: Vec<_> = s.db.outbox.iter().filter(|r| r.order.is_some()).collect();
    rows.iter().any(|early| {
        rows.iter().any(|late| {
            late.order == early.order && late.version > early.version && late.xid < early.xid
        })
    })
}

fn distinct<T: PartialEq>(items: impl Iterator<Item = T>) -> bool {
    let items: Vec<T> = items.collect();
    items
        .iter()
        .enumerate()
        .all(|(i, item)| !items[i + 1..].contains(item))
}
