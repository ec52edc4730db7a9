//! What every command on an order shares (placing, recording money, shipping, cancelling,
//! expiring): one statement reads the order with the request holding its Idempotency-Key (and,
//! for money, the ledger row of its id); the command decides on what was read; one guarded
//! statement writes the change with its ledger, history and outbox rows (`store::order_changes`).
//! A command states only what it reads and how it decides: [`OrderCommand`].

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::deadline;
use super::outbound_events::new_events;
use super::runner::{Command, Step, Transition, Written};
use super::{AppError, Outcome};
use crate::domain::{
    Cause, Change, EventType, LedgerEntry, Order, OrderId, OrderStatus, Transfer, TransferId,
    TransitionKind, Version,
};
use crate::store::Guarded;
use crate::store::keys::{KeyHolder, Keyed};
use crate::store::order_changes::{self, OrderWrite, Snapshot};
use crate::store::outbox::NewEvent;
use crate::telemetry::TraceContext;

/// A command on one order. Every one is a [`Command`] of the runner.
pub(super) trait OrderCommand: Sync {
    type Output: Answer;

    /// The order it reads, and the payment or refund whose ledger row it reads with it.
    fn reads(&self) -> (OrderId, Option<&TransferId>);

    /// Its decision on what the read found (the order as of `found.read_at`).
    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Self::Output>, AppError>;
}

/// What an order command answers with.
pub(super) trait Answer: Sized + Send {
    /// Once a change wrote `order` (and `entry`, the ledger row it recorded).
    fn written(order: Order, entry: Option<LedgerEntry>) -> Result<Self, AppError>;

    /// When the request's key replays: `found` is what the key's change touched, as it is now.
    fn replayed(found: Snapshot) -> Result<Self, AppError>;
}

impl Answer for Order {
    fn written(order: Order, _: Option<LedgerEntry>) -> Result<Self, AppError> {
        Ok(order)
    }

    fn replayed(found: Snapshot) -> Result<Self, AppError> {
        found
            .order
            .ok_or(AppError::Invariant("a keyed change's order has no row"))
    }
}

/// What an order command decided.
pub(super) enum Decided<'a, T> {
    /// The effect exists already: nothing to write.
    AlreadyApplied(T),
    /// A change to write.
    Write(Box<OrderChange<'a>>),
}

/// A change to write: `next` replaces the order if it is still as `expected`.
pub(super) struct OrderChange<'a> {
    /// The status and version the order must still have; `None` places it.
    pub expected: Option<(OrderStatus, Version)>,
    pub kind: TransitionKind,
    pub next: Order,
    pub events: Vec<EventType>,
    /// The payment or refund it records.
    pub transfer: Option<&'a Transfer>,
    /// The context of the caller's span, which its events carry.
    pub trace: &'a TraceContext,
}

impl<'a> OrderChange<'a> {
    /// The change the domain decided on an order, its events carrying `trace`.
    pub(super) fn of(change: Change, trace: &'a TraceContext) -> Self {
        Self {
            expected: Some((change.from, change.from_version)),
            kind: change.kind,
            next: change.next,
            events: change.events,
            transfer: None,
            trace,
        }
    }

    /// Recording `transfer` in the ledger as part of the change.
    pub(super) fn recording(self, transfer: &'a Transfer) -> Self {
        Self {
            transfer: Some(transfer),
            ..self
        }
    }
}

/// A decided change made ready to write: the order as it leaves it, stamped with the database's
/// time of the read it was decided on, and the outbox rows of its events.
pub(super) struct Prepared<'a> {
    pub change: OrderChange<'a>,
    pub events: Vec<NewEvent>,
}

impl<'a> Prepared<'a> {
    /// `change`, decided on what was read `at`.
    pub(super) fn new(change: OrderChange<'a>, at: DateTime<Utc>) -> Result<Self, AppError> {
        let next = Order {
            updated_at: at,
            ..change.next
        };
        let events = new_events(&change.events, &next)?;
        Ok(Self {
            change: OrderChange { next, ..change },
            events,
        })
    }

    /// The change as the store writes it, caused by `cause`.
    pub(super) fn write<'w>(&'w self, cause: &'w Cause) -> OrderWrite<'w> {
        let change = &self.change;
        OrderWrite {
            next: &change.next,
            expected: change.expected,
            kind: change.kind,
            transfer: change.transfer,
            cause,
            events: &self.events,
            trace: change.trace,
        }
    }

    /// The ledger entry the change records (if any), as it is once written.
    pub(super) fn entry(&self, cause: &Cause) -> Option<LedgerEntry> {
        self.change.transfer.map(|transfer| LedgerEntry {
            transfer: transfer.clone(),
            source: cause.source(),
            received_at: self.change.next.updated_at,
        })
    }

    /// What the command answers once the change is written.
    pub(super) fn applied<T: Answer>(self, cause: &Cause) -> Result<Step<T>, AppError> {
        let entry = self.entry(cause);
        let change = self.change;
        let transition = Transition {
            kind: change.kind,
            from: change.expected.map(|(status, _)| status),
            to: change.next.status,
        };
        let value = T::written(change.next, entry)?;
        Ok(Step::Applied(value, Written::Order(transition)))
    }
}

impl<C: OrderCommand> Command for C {
    type Output = C::Output;
    type State = Snapshot;

    async fn read(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<(Option<Keyed>, Snapshot), AppError> {
        let (order_id, transfer_id) = self.reads();
        Ok(order_changes::read(conn, order_id, cause.key_scope(), transfer_id).await?)
    }

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
        found: Snapshot,
    ) -> Result<Step<C::Output>, AppError> {
        let at = found.read_at;
        let change = match self.decide(found)? {
            Decided::AlreadyApplied(value) => {
                return Ok(Step::Unchanged(Outcome::AlreadyApplied(value)));
            }
            Decided::Write(change) => Prepared::new(*change, at)?,
        };
        Ok(
            match order_changes::write(conn, &change.write(cause), deadline::remaining()).await? {
                Guarded::Lost => Step::Lost,
                Guarded::Applied(()) => change.applied(cause)?,
            },
        )
    }

    async fn replay(
        &self,
        _: &mut PgConnection,
        _: &KeyHolder,
        found: Snapshot,
    ) -> Result<C::Output, AppError> {
        C::Output::replayed(found)
    }
}
