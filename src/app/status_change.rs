//! Shipping, cancelling and expiring: status changes decided by the domain, written with a
//! guarded update, optionally conditional on the version the client last saw (`If-Match`).

use super::order_command::{Decided, OrderChange, OrderCommand};
use super::{App, AppError, Outcome};
use crate::domain::{
    BoundedText, Cause, Decision, DomainError, Order, OrderId, Shipment, TransferId, Version,
};
use crate::store::order_changes::Snapshot;
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
        self.run(&shipping(order_id, shipment, if_match, trace), cause)
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
        self.run(&cancelling(order_id, reason, if_match, trace), cause)
            .await
    }
}

/// How a status change decides, from the order as read.
pub(super) type Decide<'a> =
    Box<dyn Fn(&Order) -> Result<Decision, DomainError> + Send + Sync + 'a>;

/// Shipping `order_id` with `shipment`.
pub(super) fn shipping<'a>(
    order_id: OrderId,
    shipment: &'a Shipment,
    if_match: Option<Version>,
    trace: &'a TraceContext,
) -> StatusChange<'a, Decide<'a>> {
    let decide = Box::new(move |order: &Order| order.ship(shipment));
    StatusChange::new(order_id, if_match, decide, trace)
}

/// Cancelling `order_id` for `reason`.
pub(super) fn cancelling<'a>(
    order_id: OrderId,
    reason: &'a BoundedText,
    if_match: Option<Version>,
    trace: &'a TraceContext,
) -> StatusChange<'a, Decide<'a>> {
    let decide = Box::new(move |order: &Order| order.cancel(reason));
    StatusChange::new(order_id, if_match, decide, trace)
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

impl<F> OrderCommand for StatusChange<'_, F>
where
    F: Fn(&Order) -> Result<Decision, DomainError> + Sync,
{
    type Output = Order;

    fn reads(&self) -> (OrderId, Option<&TransferId>) {
        (self.order_id, None)
    }

    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Order>, AppError> {
        let order = found.order.ok_or(AppError::NotFound(self.order_id))?;
        let stale = self.if_match.filter(|expected| *expected != order.version);
        match ((self.decide)(&order), stale) {
            // A change already made is reported as such even to a stale If-Match
            // (RFC 9110 §13.1.1): what the client asked for holds.
            (Ok(Decision::AlreadyApplied), _) => Ok(Decided::AlreadyApplied(order)),
            (_, Some(expected)) => Err(AppError::PreconditionFailed {
                expected,
                current_version: order.version,
            }),
            (Ok(Decision::Apply(change)), None) => Ok(Decided::Write(Box::new(OrderChange::of(
                *change, self.trace,
            )))),
            (Err(reason), None) => Err(AppError::refused(
                reason,
                Some((order.status, order.version)),
            )),
        }
    }
}
