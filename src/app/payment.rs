//! Recording a payment: a ledger insert and, in the same transaction, the order's change.

use sqlx::PgConnection;

use super::events::write_change;
use super::runner::{Attempt, Command, run};
use super::{App, AppError, Outcome};
use crate::domain::{Cause, Decision, LedgerEntry, Order, Payment};
use crate::store::transitions::KeyedChange;
use crate::store::{Inserted, StoreError, orders, transfers};

/// What a recorded payment returns: the order after it, and the ledger entry.
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
    ) -> Result<Outcome<Receipt>, AppError> {
        run(&self.pool, &RecordPayment(payment), cause).await
    }
}

struct RecordPayment(Payment);

impl Command for RecordPayment {
    type Output = Receipt;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<Receipt>, AppError> {
        let RecordPayment(payment) = self;
        // The ledger insert comes first: a concurrent insert of the same transfer makes it wait
        // for that transaction, so everything read after it is current.
        let entry = match transfers::record(conn, payment, cause.source()).await {
            Ok(Inserted::New(entry)) => entry,
            Ok(Inserted::Taken) => {
                let Some(recorded) = transfers::find(conn, &payment.transfer_id).await? else {
                    // The row that held the id was a concurrent transaction's, rolled back.
                    return Ok(Attempt::Lost);
                };
                return match payment.decide_against(&recorded.payment) {
                    Ok(Decision::AlreadyApplied) => {
                        Ok(Attempt::AlreadyApplied(receipt(conn, recorded).await?))
                    }
                    Ok(Decision::Apply(_)) => Err(AppError::Invariant(
                        "a recorded transfer cannot apply again",
                    )),
                    Err(reason) => Err(AppError::refused(reason, None)),
                };
            }
            Err(StoreError::UnknownOrder(_)) => return Err(AppError::NotFound(payment.order_id)),
            Err(StoreError::Contended(_)) => return Ok(Attempt::Lost),
            Err(error) => return Err(error.into()),
        };
        let order = orders::find(conn, payment.order_id)
            .await?
            .ok_or(AppError::NotFound(payment.order_id))?;
        let change = order
            .record_payment(&payment.money)
            .map_err(|reason| AppError::refused(reason, Some((order.status, order.version))))?;
        write_change(conn, &change, Some(&payment.transfer_id), cause, |order| {
            Receipt { order, entry }
        })
        .await
    }

    async fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyedChange,
    ) -> Result<Receipt, AppError> {
        let transfer_id = prior
            .transfer_id
            .as_ref()
            .ok_or(AppError::Invariant("a keyed payment has no transfer"))?;
        let entry = transfers::find(conn, transfer_id)
            .await?
            .ok_or(AppError::Invariant("a keyed transfer has no row"))?;
        receipt(conn, entry).await
    }
}

/// The ledger entry with its order as it is now.
async fn receipt(conn: &mut PgConnection, entry: LedgerEntry) -> Result<Receipt, AppError> {
    let order = orders::find(conn, entry.payment.order_id)
        .await?
        .ok_or(AppError::NotFound(entry.payment.order_id))?;
    Ok(Receipt { order, entry })
}
