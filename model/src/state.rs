//! The state the model checker explores: the database's rows (committed, or written by a
//! transaction still running), the broker's queue, the consumers, the REST caller and the relay.
//! Rows are kept sorted, so two interleavings that leave the same rows are one state.

use crate::domain::{Change, Decided, Event, Order, OrderId, Status, TransferId, Xid};

/// A consumer's transaction, by the consumer's index: each consumer runs one batch at a time.
pub type Txn = u8;

/// A table row's writer: `None` once committed, else the running transaction that wrote it (only
/// it sees the row; it holds the row's lock, or its unique index entry, until it ends).
pub type Writer = Option<Txn>;

/// One order's row: its committed version, and the version a running transaction wrote (which
/// holds the row lock).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct OrderSlot {
    pub committed: Option<Order>,
    pub pending: Option<(Txn, Order)>,
}

/// A row of `transfers`, the ledger.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LedgerRow {
    pub transfer: TransferId,
    pub order: OrderId,
    pub writer: Writer,
}

/// A row of `order_transitions`, the history.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HistoryRow {
    pub order: OrderId,
    pub version: u8,
    pub enters: Option<Status>,
    /// The REST request whose Idempotency-Key the row holds.
    pub key_of: Option<u8>,
    pub writer: Writer,
}

/// A row of `outbox`: an order's event, or a replayed dead letter (no order).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutboxRow {
    /// The identity, assigned when the row is inserted (after the order's row lock is held).
    pub id: u8,
    pub pos: Xid,
    /// The transaction id of its writer (what `pos` was before `greatest(…)`).
    pub xid: Xid,
    pub order: Option<OrderId>,
    pub version: u8,
    pub event: Event,
    /// For a replayed dead letter: the message it sends to the inbox again.
    pub message: Option<u8>,
    pub writer: Writer,
}

/// A parked dead letter's status (`dead_letters.status`), by message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DeadLetter {
    #[default]
    None,
    Parked,
    Replayed,
}

/// The database.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Db {
    pub orders: Vec<OrderSlot>,
    pub ledger: Vec<LedgerRow>,
    pub history: Vec<HistoryRow>,
    pub outbox: Vec<OutboxRow>,
    /// `dead_letter_actions` rows holding the key: the REST requests that wrote them.
    pub key_actions: Vec<u8>,
    pub dead_letters: Vec<DeadLetter>,
    /// The next transaction id Postgres hands out.
    pub next_xid: Xid,
    /// The next outbox identity.
    pub next_id: u8,
}

impl Db {
    /// The order as `reader` sees it (READ COMMITTED: the committed row, or its own write).
    pub fn order(&self, order: OrderId, reader: Option<Txn>) -> Option<Order> {
        let slot = &self.orders[usize::from(order)];
        match slot.pending {
            Some((writer, pending)) if Some(writer) == reader => Some(pending),
            _ => slot.committed,
        }
    }

    /// The order `transfer` was recorded for, as `reader` sees the ledger.
    pub fn entry(&self, transfer: TransferId, reader: Option<Txn>) -> Option<OrderId> {
        self.ledger
            .iter()
            .find(|row| row.transfer == transfer && visible(row.writer, reader))
            .map(|row| row.order)
    }

    /// Makes `txn`'s rows committed and releases its locks.
    pub fn commit(&mut self, txn: Txn) {
        for slot in &mut self.orders {
            if let Some((writer, order)) = slot.pending
                && writer == txn
            {
                slot.committed = Some(order);
                slot.pending = None;
            }
        }
        let mine = Some(txn);
        self.ledger
            .iter_mut()
            .filter(|r| r.writer == mine)
            .for_each(|r| r.writer = None);
        self.history
            .iter_mut()
            .filter(|r| r.writer == mine)
            .for_each(|r| r.writer = None);
        self.outbox
            .iter_mut()
            .filter(|r| r.writer == mine)
            .for_each(|r| r.writer = None);
        self.sort();
    }

    /// Throws `txn`'s rows away and releases its locks (a rollback; the identities it took are
    /// not given back, as a sequence's are not).
    pub fn abort(&mut self, txn: Txn) {
        for slot in &mut self.orders {
            if slot.pending.is_some_and(|(writer, _)| writer == txn) {
                slot.pending = None;
            }
        }
        let mine = Some(txn);
        self.ledger.retain(|r| r.writer != mine);
        self.history.retain(|r| r.writer != mine);
        self.outbox.retain(|r| r.writer != mine);
    }

    pub fn sort(&mut self) {
        self.ledger.sort();
        self.history.sort();
        self.outbox.sort();
    }
}

/// Whether a row written by `writer` is visible to `reader`.
pub fn visible(writer: Writer, reader: Option<Txn>) -> bool {
    writer.is_none() || writer == reader
}

/// A delivery of a message: which message, and the attempt its headers count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Copy {
    pub message: u8,
    pub attempt: u8,
}

/// How an item of a batch ended inside its transaction (`Ended` in `src/app/batch/mod.rs`, with
/// the consumer's disposition of its result, `src/amqp/inbox/disposition.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum End {
    /// Applied, or already applied: acknowledge after the commit.
    Ack,
    /// Premature: retry later (dead-lettered when the attempts run out).
    Retry,
    /// A final refusal: dead-letter.
    DeadLetter,
    /// Lost too many races, or gave up a lock wait: wait, unacknowledged, and try again.
    SetAside,
}

impl End {
    pub fn of(decided: &Decided) -> Option<End> {
        match decided {
            Decided::AlreadyApplied => Some(End::Ack),
            Decided::Refused { later: true } | Decided::NotFound => Some(End::Retry),
            Decided::Refused { later: false } => Some(End::DeadLetter),
            Decided::Write(_) => None,
        }
    }
}

/// One order's write in a set-based batch's statement: guarded by its first change's expected
/// status and version, leaving its last change's row, with every change's rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OrderWrite {
    pub order: OrderId,
    pub changes: Vec<(u8, Change)>,
}

/// An item's decision in a set-based round, and the orders whose in-batch changes it decided on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ItemDecision {
    pub item: u8,
    pub decided: Decided,
    pub depends_on: Vec<OrderId>,
}

/// Where a batch is (`src/app/batch/`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// A set-based round's read is next, for these items (in the order of their order ids).
    SetRead { round: u8, remaining: Vec<u8> },
    /// A set-based round's write statement, one order row at a time (`at`), in id order.
    SetWrite {
        round: u8,
        decisions: Vec<ItemDecision>,
        writes: Vec<OrderWrite>,
        at: u8,
        written: Vec<OrderId>,
    },
    /// One by one under savepoints: item `order[at]` is next, having lost `lost` races; `change`
    /// is its decided write, when its read decided one.
    OneByOne {
        order: Vec<u8>,
        at: u8,
        lost: u8,
        change: Option<Change>,
    },
    /// Every item ended; the commit is next.
    Commit,
    /// Committed; the settlement (replacements confirmed, then acks) is next.
    Settle,
}

/// A consumer's batch: the deliveries it took, its transaction's xid, how far it is, and how each
/// item ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Batch {
    pub copies: Vec<Copy>,
    pub xid: Option<Xid>,
    pub stage: Stage,
    pub ended: Vec<Option<End>>,
}

/// A REST request's progress.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rest {
    /// Its read (the key in both tables, with the state) is next.
    Read,
    /// Its write is next: the change it decided (`None` for a dead-letter replay).
    Write(Option<Change>),
    Done(Answer),
}

/// What a REST request answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Answer {
    Applied,
    AlreadyApplied,
    /// Its key held another request: 422.
    KeyReused,
    Refused,
}

/// The relay: its committed cursor, and the position it published up to but has not yet
/// committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Relay {
    pub cursor: (Xid, u8),
    pub published_to: Option<(Xid, u8)>,
}

/// Everything the checker explores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub db: Db,
    /// The inbox queue, as a sorted multiset of deliveries.
    pub queue: Vec<Copy>,
    pub workers: Vec<Option<Batch>>,
    pub rest: Vec<Rest>,
    pub relay: Relay,
    /// Messages acknowledged after their effect (or its absence: already applied) committed.
    pub acked: Vec<bool>,
    /// How often each outbox row (by identity) was published.
    pub published: Vec<u8>,
    /// Per order, the highest version published so far.
    pub published_version: Vec<u8>,
    /// A first publication of an event came after a later version of its order's.
    pub out_of_order: bool,
    pub consumer_crashes: u8,
    pub relay_crashes: u8,
}

impl State {
    /// The oldest transaction id still running (`pg_snapshot_xmin(pg_current_snapshot())`): the
    /// xid of a batch that wrote and has not committed, else the next xid.
    pub fn xmin(&self) -> Xid {
        self.workers
            .iter()
            .flatten()
            .filter(|batch| !matches!(batch.stage, Stage::Settle))
            .filter_map(|batch| batch.xid)
            .min()
            .unwrap_or(self.db.next_xid)
    }
}
