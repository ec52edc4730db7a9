//! Recording money in or out: a ledger insert and, in the same transaction, the order's change.
//! Payments and refunds share the ledger's one id space, so both run the same command.

use sqlx::PgConnection;

use super::events::write_change;
use super::keys;
use super::runner::{Attempt, Command, run};
use super::{App, AppError, Outcome};
use crate::domain::{Cause, Decision, LedgerEntry, Order, Payment, Refund, Transfer};
use crate::store::keys::KeyHolder;
use crate::store::{Inserted, StoreError, orders, transfers};
use crate::telemetry::TraceContext;

/// What a recorded payment or refund returns: the order after it, and the ledger entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub order: Order,
    pub entry: LedgerEntry,
}

impl App {
    /// Records money that arrived. The ledger keeps each `transfer_id` once: a repeat with the
    /// same order, amount and currency is a replay; with anything else, a conflict.
    pub async fn record_payment(
        &self,
        payment: Payment,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Receipt>, AppError> {
        let command = RecordTransfer {
            transfer: payment.into(),
            trace,
        };
        run(&self.pool, &command, cause).await
    }

    /// Records money that went back. It shares the ledger's ids with payments: a repeat with the
    /// same order, amount and currency is a replay; anything else under that id (a payment's id
    /// included), a conflict. More than the order holds is refused.
    pub async fn record_refund(
        &self,
        refund: Refund,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Receipt>, AppError> {
        let command = RecordTransfer {
            transfer: refund.into(),
            trace,
        };
        run(&self.pool, &command, cause).await
    }
}

/// A payment or refund, and the trace its events carry.
struct RecordTransfer<'a> {
    transfer: Transfer,
    trace: &'a TraceContext,
}

impl Command for RecordTransfer<'_> {
    type Output = Receipt;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<Receipt>, AppError> {
        let RecordTransfer { transfer, trace } = self;
        // The ledger insert comes first: a concurrent insert of the same transfer makes it wait
        // for that transaction, so everything read after it is current.
        let entry = match transfers::record(conn, transfer, cause.source()).await {
            Ok(Inserted::New(entry)) => entry,
            Ok(Inserted::Taken) => {
                let Some(recorded) = transfers::find(conn, &transfer.id).await? else {
                    // The row that held the id was a concurrent transaction's, rolled back.
                    return Ok(Attempt::Lost);
                };
                return match transfer.decide_against(&recorded.transfer) {
                    Ok(Decision::AlreadyApplied) => {
                        Ok(Attempt::AlreadyApplied(receipt(conn, recorded).await?))
                    }
                    Ok(Decision::Apply(_)) => Err(AppError::Invariant(
                        "a recorded transfer cannot apply again",
                    )),
                    Err(reason) => Err(AppError::refused(reason, None)),
                };
            }
            Err(StoreError::UnknownOrder(_)) => return Err(AppError::NotFound(transfer.order_id)),
            Err(StoreError::Contended(_)) => return Ok(Attempt::Lost),
            Err(error) => return Err(error.into()),
        };
        let order = orders::find(conn, transfer.order_id)
            .await?
            .ok_or(AppError::NotFound(transfer.order_id))?;
        let change = order
            .record(transfer)
            .map_err(|reason| AppError::refused(reason, Some((order.status, order.version))))?;
        write_change(conn, &change, Some(&transfer.id), cause, trace, |order| {
            Receipt { order, entry }
        })
        .await
    }

    async fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
    ) -> Result<Receipt, AppError> {
        let transfer_id = keys::change(prior)?
            .transfer_id
            .as_ref()
            .ok_or(AppError::Invariant("a keyed ledger change has no transfer"))?;
        let entry = transfers::find(conn, transfer_id)
            .await?
            .ok_or(AppError::Invariant("a keyed transfer has no row"))?;
        receipt(conn, entry).await
    }
}

/// The ledger entry with its order as it is now.
async fn receipt(conn: &mut PgConnection, entry: LedgerEntry) -> Result<Receipt, AppError> {
    let order = orders::find(conn, entry.transfer.order_id)
        .await?
        .ok_or(AppError::NotFound(entry.transfer.order_id))?;
    Ok(Receipt { order, entry })
}
