//! Shipping and cancelling: status changes decided by the domain, written with a guarded update,
//! optionally conditional on the version the client last saw (`If-Match`).

use super::events::{record_metrics, write_change};
use super::replay::prior_change;
use super::{App, AppError, Attempt, Outcome};
use crate::domain::{BoundedText, Cause, Decision, DomainError, Order, OrderId, Shipment};
use crate::store::orders;

impl App {
    pub async fn ship(
        &self,
        order_id: OrderId,
        shipment: &Shipment,
        if_match: Option<i64>,
        cause: &Cause,
    ) -> Result<Outcome<Order>, AppError> {
        self.change_status(order_id, if_match, cause, |order| order.ship(shipment))
            .await
    }

    pub async fn cancel(
        &self,
        order_id: OrderId,
        reason: &BoundedText,
        if_match: Option<i64>,
        cause: &Cause,
    ) -> Result<Outcome<Order>, AppError> {
        self.change_status(order_id, if_match, cause, |order| order.cancel(reason))
            .await
    }

    async fn change_status(
        &self,
        order_id: OrderId,
        if_match: Option<i64>,
        cause: &Cause,
        decide: impl Fn(&Order) -> Result<Decision, DomainError>,
    ) -> Result<Outcome<Order>, AppError> {
        let outcome = in_transaction!(self, |conn| {
            if let Some(prior) = prior_change(conn, cause).await? {
                let order = orders::find(conn, prior.order_id)
                    .await?
                    .ok_or(AppError::NotFound(prior.order_id))?;
                return Ok(Attempt::Done(Outcome::Replayed((order, None))));
            }
            let order = orders::find(conn, order_id)
                .await?
                .ok_or(AppError::NotFound(order_id))?;
            let stale = if_match.filter(|expected| *expected != order.version);
            let change = match (decide(&order), stale) {
                // A change already made is reported as such even to a stale If-Match
                // (RFC 9110 §13.1.1): what the client asked for holds.
                (Ok(Decision::AlreadyApplied), _) => {
                    return Ok(Attempt::Done(Outcome::AlreadyApplied((order, None))));
                }
                (_, Some(expected)) => {
                    return Err(AppError::PreconditionFailed {
                        expected,
                        current_version: order.version,
                    });
                }
                (Ok(Decision::Apply(change)), None) => change,
                (Err(reason), None) => {
                    return Err(AppError::refused(
                        reason,
                        Some((order.status, order.version)),
                    ));
                }
            };
            match write_change(conn, &change, None, cause).await? {
                Some(order) => Ok(Attempt::Done(Outcome::Applied((
                    order,
                    Some((change.kind, change.from)),
                )))),
                None => Ok(Attempt::Lost),
            }
        })?;
        if let (order, Some((kind, from))) = outcome.value() {
            record_metrics(kind.as_ref(), from.as_ref(), order.status.as_ref(), cause);
        }
        Ok(outcome.map(|(order, _)| order))
    }
}
