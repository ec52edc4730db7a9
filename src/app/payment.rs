//! Recording a payment: a ledger insert and, in the same transaction, the order's change.

use super::events::{record_metrics, write_change};
use super::replay::prior_change;
use super::{App, AppError, Attempt, Outcome};
use crate::domain::{Cause, Decision, LedgerEntry, Order, Payment, TransferId};
use crate::store::transfers::{self, Recorded};
use crate::store::transitions::KeyedChange;
use crate::store::{StoreError, orders};

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
        let outcome = in_transaction!(self, |conn| {
            if let Some(prior) = prior_change(conn, cause).await? {
                let receipt = replayed(conn, &prior).await?;
                return Ok(Attempt::Done(Outcome::Replayed((receipt, None))));
            }
            // The ledger insert comes first: a concurrent insert of the same transfer makes it
            // wait for that transaction, so everything read after it is current.
            let entry = match transfers::record(conn, &payment, cause.source()).await {
                Ok(Recorded::New(entry)) => entry,
                Ok(Recorded::Existing(recorded)) => {
                    // The insert may have waited for a twin carrying this request's key: now
                    // that it committed, its key decides (replay, or 422 for another body).
                    if let Some(prior) = prior_change(conn, cause).await? {
                        let receipt = replayed(conn, &prior).await?;
                        return Ok(Attempt::Done(Outcome::Replayed((receipt, None))));
                    }
                    return match payment.decide_against(&recorded.payment) {
                        Ok(Decision::AlreadyApplied) => {
                            let receipt = receipt(conn, &payment.transfer_id).await?;
                            Ok(Attempt::Done(Outcome::AlreadyApplied((receipt, None))))
                        }
                        Ok(Decision::Apply(_)) => Err(AppError::Unexpected(
                            "a recorded transfer cannot apply again".into(),
                        )),
                        Err(reason) => Err(AppError::refused(reason, None)),
                    };
                }
                Err(StoreError::UnknownOrder) => {
                    return Err(AppError::NotFound(payment.order_id));
                }
                Err(StoreError::Contended) => return Ok(Attempt::Lost),
                Err(e) => return Err(e.into()),
            };
            let order = orders::find(conn, payment.order_id)
                .await?
                .ok_or(AppError::NotFound(payment.order_id))?;
            let change = order
                .record_payment(&payment.money)
                .map_err(|reason| AppError::refused(reason, Some((order.status, order.version))))?;
            match write_change(conn, &change, Some(&payment.transfer_id), cause).await? {
                Some(order) => Ok(Attempt::Done(Outcome::Applied((
                    Receipt { order, entry },
                    Some((change.kind, change.from)),
                )))),
                None => Ok(Attempt::Lost),
            }
        });
        let outcome = outcome?;
        if let (_, Some((kind, from))) = outcome.value() {
            let to = outcome.value().0.order.status;
            record_metrics(kind.as_ref(), from.as_ref(), to.as_ref(), cause);
        }
        Ok(outcome.map(|(receipt, _)| receipt))
    }
}

/// The current receipt of the payment a request's key already recorded.
async fn replayed(conn: &mut sqlx::PgConnection, prior: &KeyedChange) -> Result<Receipt, AppError> {
    let transfer_id = prior
        .transfer_id
        .as_deref()
        .map(TransferId::parse)
        .transpose()
        .map_err(|e| AppError::Unexpected(e.to_string()))?
        .ok_or_else(|| AppError::Unexpected("keyed payment has no transfer".into()))?;
    receipt(conn, &transfer_id).await
}

async fn receipt(
    conn: &mut sqlx::PgConnection,
    transfer_id: &TransferId,
) -> Result<Receipt, AppError> {
    let entry = transfers::find(conn, transfer_id)
        .await?
        .ok_or_else(|| AppError::Unexpected("recorded transfer vanished".into()))?;
    let order = orders::find(conn, entry.payment.order_id)
        .await?
        .ok_or(AppError::NotFound(entry.payment.order_id))?;
    Ok(Receipt { order, entry })
}
