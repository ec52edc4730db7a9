//! Payment expiry: an order still waiting for its payment after the configured timeout is
//! cancelled with reason `payment_timeout` and history cause `timer`, through the same guarded
//! command as a client's cancellation (`docs/contract.md#transitions`).

use std::time::Duration;

use super::status_change::{Asked, StatusChange};
use super::{App, AppError, Outcome, deadline};
use crate::domain::{Cause, DomainError, VersionMatch};
use crate::store::orders;
use crate::telemetry::TraceContext;

/// What one sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// Orders this sweep cancelled.
    pub expired: usize,
    /// Overdue orders that needed nothing: paid by a racing payment, or cancelled by someone
    /// else (another instance's sweep, a client) in the meantime.
    pub settled_meanwhile: usize,
    /// Overdue orders left for the next sweep because a concurrent transaction held them.
    pub busy: usize,
    /// Whether the sweep hit its limit, so more overdue orders may be waiting.
    pub full: bool,
}

impl App {
    /// Cancels up to `limit` orders, oldest first, that have waited longer than `timeout` for
    /// their payment. Safe with any number of instances sweeping at once: each cancellation is
    /// a guarded write, so exactly one writer moves an order and the others see it done. The
    /// sweep's events carry `trace`, the context of the sweep's own span.
    pub async fn expire_overdue(
        &self,
        timeout: Duration,
        limit: u32,
        trace: &TraceContext,
    ) -> Result<Sweep, AppError> {
        let overdue = deadline::bounded(orders::pending_older_than(
            &self.pool,
            timeout,
            i64::from(limit),
        ))
        .await?;
        let mut sweep = Sweep {
            full: overdue.len() >= limit as usize,
            ..Sweep::default()
        };
        for order_id in overdue {
            let command = StatusChange::new(order_id, Asked::Expire, VersionMatch::Any, trace);
            match self.run(&command, &Cause::Timer).await {
                Ok(Outcome::Applied(_)) => sweep.expired += 1,
                Ok(Outcome::AlreadyApplied(_) | Outcome::Replayed(_))
                | Err(AppError::Refused {
                    reason: DomainError::InvalidTransition { .. },
                    ..
                }) => sweep.settled_meanwhile += 1,
                // A client holds this order's row: the next sweep finds it again if it is still
                // pending; the orders after it need not wait.
                Err(AppError::Busy) => sweep.busy += 1,
                Err(error) => return Err(error),
            }
        }
        Ok(sweep)
    }
}
