//! The guarded write of one order, as one statement of `src/store/order_changes.rs` (`write`) or
//! one order's part of `src/store/order_batches.rs` (`write_many`) does it: wait for the row lock
//! (and for a unique entry another transaction holds), check the guard against the row's latest
//! version, then write the order with its ledger, history and outbox rows — or nothing, when the
//! guard misses or a unique index refuses a row.

use crate::domain::{Change, OrderId, Xid};
use crate::protocol::Variant;
use crate::state::{Db, HistoryRow, LedgerRow, OutboxRow, Txn, Writer, visible};

/// What a guarded write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    Applied,
    /// The order is no longer as its first change expected (or, placing it, its id is taken).
    GuardMissed,
    /// A unique index (or the key's trigger) refused a row: the statement failed whole.
    Refused(&'static str),
}

/// The running transaction that `me`'s write of `changes` to `order` must wait for: the holder of
/// the order's row lock, or of an uncommitted ledger row with one of its transfer ids.
pub fn blocker(
    db: &Db,
    variant: Variant,
    order: OrderId,
    changes: &[Change],
    me: Option<Txn>,
) -> Option<Txn> {
    if let Some((holder, _)) = db.orders[usize::from(order)].pending
        && Some(holder) != me
    {
        return Some(holder);
    }
    if !variant.ledger_unique() {
        return None;
    }
    changes
        .iter()
        .filter_map(|c| c.transfer)
        .find_map(|transfer| {
            db.ledger
                .iter()
                .find(|row| row.transfer == transfer && row.writer.is_some() && row.writer != me)
                .and_then(|row| row.writer)
        })
}

/// Writes `changes` (one order's, in the order decided) as `writer` with transaction id `xid`;
/// the history rows hold the key of REST request `key_of`, if any. Nothing is written unless it
/// returns [`Written::Applied`]. The caller has waited for [`blocker`].
pub fn write_order(
    db: &mut Db,
    variant: Variant,
    writer: Writer,
    xid: Xid,
    order: OrderId,
    changes: &[Change],
    key_of: Option<u8>,
) -> Written {
    let Some(first) = changes.first() else {
        return Written::Applied;
    };
    // After the lock wait, READ COMMITTED re-reads the row's latest version.
    let current = db.order(order, writer);
    let guard_holds = match (first.expected, current) {
        (None, current) => current.is_none(),
        (Some(_), None) => false,
        (Some(expected), Some(row)) => {
            !variant.version_guard() || (row.status, row.version) == expected
        }
    };
    if !guard_holds {
        return Written::GuardMissed;
    }
    if let Some(index) = refused_by_unique(db, variant, writer, order, changes, key_of) {
        return Written::Refused(index);
    }
    let last_pos = current.map_or(0, |row| row.last_event_pos);
    // `greatest(pg_current_xact_id(), orders.last_event_pos)`, or the broken `pg_current_xact_id()`.
    let pos = if variant.pos_is_own_xid() {
        xid
    } else {
        xid.max(last_pos)
    };
    for change in changes {
        if let Some(transfer) = change.transfer {
            db.ledger.push(LedgerRow {
                transfer,
                order,
                writer,
            });
        }
        db.history.push(HistoryRow {
            order,
            version: change.next.version,
            enters: change.enters,
            key_of,
            writer,
        });
        for &event in &change.events {
            db.outbox.push(OutboxRow {
                id: db.next_id,
                pos,
                xid,
                order: Some(order),
                version: change.next.version,
                event,
                message: None,
                writer,
            });
            db.next_id += 1;
        }
    }
    let mut row = changes[changes.len() - 1].next;
    row.last_event_pos = last_pos.max(xid);
    let slot = &mut db.orders[usize::from(order)];
    match writer {
        Some(txn) => slot.pending = Some((txn, row)),
        None => slot.committed = Some(row),
    }
    db.sort();
    Written::Applied
}

/// The unique index (or trigger) that refuses one of `changes`' rows, if one does.
fn refused_by_unique(
    db: &Db,
    variant: Variant,
    writer: Writer,
    order: OrderId,
    changes: &[Change],
    key_of: Option<u8>,
) -> Option<&'static str> {
    let seen = |row: &HistoryRow| visible(row.writer, writer);
    for change in changes {
        if variant.ledger_unique()
            && let Some(transfer) = change.transfer
            && db
                .ledger
                .iter()
                .any(|row| row.transfer == transfer && visible(row.writer, writer))
        {
            return Some("transfers_pkey");
        }
        let version = change.next.version;
        if variant.history_version_unique()
            && db
                .history
                .iter()
                .any(|r| seen(r) && r.order == order && r.version == version)
        {
            return Some("order_transitions_pkey");
        }
        if change.enters.is_some()
            && db
                .history
                .iter()
                .any(|r| seen(r) && r.order == order && r.enters == change.enters)
        {
            return Some("order_transitions_status_change_once");
        }
    }
    if key_of.is_some() {
        if db.history.iter().any(|r| seen(r) && r.key_of.is_some()) {
            return Some("order_transitions_idempotency_key");
        }
        if variant.key_across_tables() && !db.key_actions.is_empty() {
            return Some("idempotency_key_held_elsewhere");
        }
    }
    None
}
