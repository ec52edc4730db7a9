//! Placing an order: the order row, its first history row and `order.created`, or the order that
//! already holds the id (a replay with the same content, a conflict with other content).

use super::order_command::{Decided, OrderChange, OrderCommand};
use super::{App, AppError, Outcome};
use crate::domain::{
    Cause, Decision, EventType, NewOrder, Order, OrderId, TransferId, TransitionKind,
};
use crate::store::order_changes::Snapshot;
use crate::telemetry::TraceContext;

impl App {
    /// Creates the order in PENDING_PAYMENT. The same id with the same content is a replay;
    /// with other content, a conflict. `trace` is the context of the caller's span, which the
    /// order's first event carries.
    pub async fn place(
        &self,
        new: NewOrder,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<Order>, AppError> {
        self.run(&Place { new, trace }, cause).await
    }
}

/// Placing `new`; its first event carries `trace`.
pub(super) struct Place<'a> {
    pub(super) new: NewOrder,
    pub(super) trace: &'a TraceContext,
}

impl OrderCommand for Place<'_> {
    type Output = Order;

    fn reads(&self) -> (OrderId, Option<&TransferId>) {
        (self.new.id, None)
    }

    fn decide(&self, found: Snapshot) -> Result<Decided<'_, Order>, AppError> {
        let Some(existing) = found.order else {
            // Written only if the id is still free: a placement that took it meanwhile makes
            // this attempt lose, and the next one finds that order.
            return Ok(Decided::Write(Box::new(OrderChange {
                expected: None,
                kind: TransitionKind::Created,
                next: self.new.clone().into_order(found.read_at),
                events: vec![EventType::OrderCreated],
                transfer: None,
                trace: self.trace,
            })));
        };
        match self.new.decide_against(&existing) {
            Ok(Decision::AlreadyApplied) => Ok(Decided::AlreadyApplied(existing)),
            Ok(Decision::Apply(_)) => Err(AppError::Invariant(
                "placing an existing order cannot apply",
            )),
            Err(reason) => Err(AppError::refused(
                reason,
                Some((existing.status, existing.version)),
            )),
        }
    }
}
