//! Recording money in or out: a ledger row written with the order's change. Payments and refunds
//! share the ledger's one id space, so both run the same command.

use super::order_command::{Answer, Decided, OrderChange, OrderCommand};
use super::{App, AppError, Outcome};
use crate::domain::{Cause, Decision, LedgerEntry, Order, OrderId, Transfer, TransferId};
use crate::store::order_changes::Snapshot;
use crate::telemetry::TraceContext;

/// What a recorded payment or refund returns: the order after it, and the ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub order: Order,
    pub entry: LedgerEntry,
}

impl App {
    /// Records money in (a [`Payment`](crate::domain::Payment)) or out (a
    /// [`Refund`](crate::domain::Refund)). The ledger keeps each id once, for both directions: a
    /// repeat with the same order, amount and currency is a replay; anything else under that id
    /// (a payment's id given to a refund included), a conflict. A refund of more than the order
    /// holds is refused.
    pub async fn record(
        &self,
        transfer: impl Into<Transfer>,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Receipt>, AppError> {
        let command = RecordTransfer {
            transfer: transfer.into(),
            trace,
        };
        self.run(&command, cause).await
    }
}

/// A payment or refund, and the trace its events carry.
pub(super) struct RecordTransfer<'a> {
    pub(super) transfer: Transfer,
    pub(super) trace: &'a TraceContext,
}

impl OrderCommand for RecordTransfer<'_> {
    type Output = Receipt;

    fn reads(&self) -> (OrderId, Option<&TransferId>) {
        (self.transfer.order_id, Some(&self.transfer.id))
    }

    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Receipt>, AppError> {
        let transfer = &self.transfer;
        // The id is in the ledger already: the same transfer again, or a conflict. (A concurrent
        // insert of the id makes this command's write fail whole, and the next read finds it.)
        if let Some(recorded) = found.entry {
            return match transfer.decide_against(&recorded.transfer) {
                Ok(Decision::AlreadyApplied) => Ok(Decided::AlreadyApplied(Receipt {
                    order: found.order.ok_or(AppError::Invariant(
                        "a recorded transfer's order has no row",
                    ))?,
                    entry: recorded,
                })),
                Ok(Decision::Apply(_)) => Err(AppError::Invariant(
                    "a recorded transfer cannot apply again",
                )),
                Err(reason) => Err(AppError::refused(reason, None)),
            };
        }
        let order = found.order.ok_or(AppError::NotFound(transfer.order_id))?;
        let change = order
            .record(transfer)
            .map_err(|reason| AppError::refused(reason, Some((order.status, order.version))))?;
        Ok(Decided::Write(Box::new(
            OrderChange::of(change, self.trace).recording(transfer),
        )))
    }
}

impl Answer for Receipt {
    fn written(order: Order, entry: Option<LedgerEntry>) -> Result<Self, AppError> {
        let entry = entry.ok_or(AppError::Invariant("a receipt records a transfer"))?;
        Ok(Receipt { order, entry })
    }

    fn replayed(found: Snapshot) -> Result<Self, AppError> {
        match (found.order, found.entry) {
            (Some(order), Some(entry)) => Ok(Receipt { order, entry }),
            _ => Err(AppError::Invariant(
                "a keyed transfer or its order has no row",
            )),
        }
    }
}
