//! Placing an order: the order row, its first history row and `order.created`, or the order that
//! already holds the id (a replay with the same content, a conflict with other content).

use chrono::Utc;
use sqlx::PgConnection;

use super::events::{write_events, write_history};
use super::keys::keyed_order;
use super::runner::{Attempt, Command, Transition, Written, run};
use super::{App, AppError, Outcome};
use crate::domain::{Cause, Decision, EventType, NewOrder, Order, TransitionKind};
use crate::store::keys::KeyHolder;
use crate::store::{Inserted, orders};
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
        run(&self.pool, &Place { new, trace }, cause).await
    }
}

struct Place<'a> {
    new: NewOrder,
    trace: &'a TraceContext,
}

impl Command for Place<'_> {
    type Output = Order;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<Order>, AppError> {
        let Place { new, trace } = self;
        if let Some(existing) = orders::find(conn, new.id).await? {
            return match new.decide_against(&existing) {
                Ok(Decision::AlreadyApplied) => Ok(Attempt::AlreadyApplied(existing)),
                Ok(Decision::Apply(_)) => Err(AppError::Invariant(
                    "placing an existing order cannot apply",
                )),
                Err(reason) => Err(AppError::refused(
                    reason,
                    Some((existing.status, existing.version)),
                )),
            };
        }
        // Taken: a concurrent placement of the same id committed while this one waited.
        let Inserted::New(order) =
            orders::insert(conn, &new.clone().into_order(Utc::now())).await?
        else {
            return Ok(Attempt::Lost);
        };
        let transition = Transition {
            kind: TransitionKind::Created,
            from: None,
            to: order.status,
        };
        let Inserted::New(()) = write_history(conn, &transition, &order, None, cause).await? else {
            return Ok(Attempt::Lost);
        };
        write_events(conn, &[EventType::OrderCreated], &order, trace).await?;
        Ok(Attempt::Applied(order, Written::Order(transition)))
    }

    async fn replay(&self, conn: &mut PgConnection, prior: &KeyHolder) -> Result<Order, AppError> {
        keyed_order(conn, prior).await
    }
}
