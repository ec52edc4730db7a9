//! Shipping and cancelling: status changes decided by the domain, written with a guarded update,
//! optionally conditional on the version the client last saw (`If-Match`).

use sqlx::PgConnection;

use super::events::write_change;
use super::keys::keyed_order;
use super::runner::{Attempt, Command, run};
use super::{App, AppError, Outcome};
use crate::domain::{BoundedText, Cause, Decision, DomainError, Order, OrderId, Shipment, Version};
use crate::store::keys::KeyHolder;
use crate::store::orders;
use crate::telemetry::TraceContext;

impl App {
    pub async fn ship(
        &self,
        order_id: OrderId,
        shipment: &Shipment,
        if_match: Option<Version>,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Order>, AppError> {
        let decide = |order: &Order| order.ship(shipment);
        run(
            &self.pool,
            &StatusChange::new(order_id, if_match, decide, trace),
            cause,
        )
        .await
    }

    pub async fn cancel(
        &self,
        order_id: OrderId,
        reason: &BoundedText,
        if_match: Option<Version>,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Order>, AppError> {
        let decide = |order: &Order| order.cancel(reason);
        run(
            &self.pool,
            &StatusChange::new(order_id, if_match, decide, trace),
            cause,
        )
        .await
    }
}

/// A change of one order's status that the domain decides from the order as read; its events
/// carry `trace`.
pub(super) struct StatusChange<'a, F> {
    order_id: OrderId,
    if_match: Option<Version>,
    decide: F,
    trace: &'a TraceContext,
}

impl<'a, F> StatusChange<'a, F> {
    pub(super) fn new(
        order_id: OrderId,
        if_match: Option<Version>,
        decide: F,
        trace: &'a TraceContext,
    ) -> Self {
        Self {
            order_id,
            if_match,
            decide,
            trace,
        }
    }
}

impl<F> Command for StatusChange<'_, F>
where
    F: Fn(&Order) -> Result<Decision, DomainError> + Sync,
{
    type Output = Order;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<Order>, AppError> {
        let order = orders::find(conn, self.order_id)
            .await?
            .ok_or(AppError::NotFound(self.order_id))?;
        let stale = self.if_match.filter(|expected| *expected != order.version);
        let change = match ((self.decide)(&order), stale) {
            // A change already made is reported as such even to a stale If-Match
            // (RFC 9110 §13.1.1): what the client asked for holds.
            (Ok(Decision::AlreadyApplied), _) => return Ok(Attempt::AlreadyApplied(order)),
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
        write_change(conn, &change, None, cause, self.trace, |order| order).await
    }

    async fn replay(&self, conn: &mut PgConnection, prior: &KeyHolder) -> Result<Order, AppError> {
        keyed_order(conn, prior).await
    }
}
