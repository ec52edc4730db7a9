//! Shipping, cancelling and expiring: status changes decided by the domain, written with a
//! guarded update, optionally conditional on the versions the client names (`If-Match`).

use super::order_command::{Decided, OrderChange, OrderCommand};
use super::{App, AppError, Outcome};
use crate::domain::{
    BoundedText, Cause, Decision, DomainError, Order, OrderId, Shipment, TransferId, VersionMatch,
};
use crate::store::order_changes::Snapshot;
use crate::telemetry::TraceContext;

impl App {
    pub async fn ship(
        &self,
        order_id: OrderId,
        shipment: &Shipment,
        if_match: VersionMatch,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Order>, AppError> {
        let command = StatusChange::new(order_id, Asked::Ship(shipment), if_match, trace);
        self.run(&command, cause).await
    }

    pub async fn cancel(
        &self,
        order_id: OrderId,
        reason: &BoundedText,
        if_match: VersionMatch,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Order>, AppError> {
        let command = StatusChange::new(order_id, Asked::Cancel(reason), if_match, trace);
        self.run(&command, cause).await
    }
}

/// The status change asked for, with what the domain decides it on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Asked<'a> {
    Ship(&'a Shipment),
    Cancel(&'a BoundedText),
    /// Cancelling for want of a payment in time (`Order::expire`).
    Expire,
}

impl Asked<'_> {
    /// The domain's decision on `order`.
    fn decide(self, order: &Order) -> Result<Decision, DomainError> {
        match self {
            Asked::Ship(shipment) => order.ship(shipment),
            Asked::Cancel(reason) => order.cancel(reason),
            Asked::Expire => order.expire(),
        }
    }
}

/// A change of one order's status that the domain decides from the order as read; its events
/// carry `trace`.
pub(super) struct StatusChange<'a> {
    order_id: OrderId,
    asked: Asked<'a>,
    if_match: VersionMatch,
    trace: &'a TraceContext,
}

impl<'a> StatusChange<'a> {
    pub(super) fn new(
        order_id: OrderId,
        asked: Asked<'a>,
        if_match: VersionMatch,
        trace: &'a TraceContext,
    ) -> Self {
        Self {
            order_id,
            asked,
            if_match,
            trace,
        }
    }
}

impl OrderCommand for StatusChange<'_> {
    type Output = Order;

    fn reads(&self) -> (OrderId, Option<&TransferId>) {
        (self.order_id, None)
    }

    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Order>, AppError> {
        let order = found.order.ok_or(AppError::NotFound(self.order_id))?;
        let stale = !self.if_match.admits(order.version);
        match (self.asked.decide(&order), stale) {
            // A change already made is reported as such even to a stale If-Match
            // (RFC 9110 §13.1.1): what the client asked for holds.
            (Ok(Decision::AlreadyApplied), _) => Ok(Decided::AlreadyApplied(order)),
            (_, true) => Err(AppError::PreconditionFailed {
                current_version: order.version,
            }),
            (Ok(Decision::Apply(change)), false) => Ok(Decided::Write(Box::new(OrderChange::of(
                *change, self.trace,
            )))),
            (Err(reason), false) => Err(AppError::refused(
                reason,
                Some((order.status, order.version)),
            )),
        }
    }
}
