//! Placing an order.

use chrono::Utc;

use super::events::{record_metrics, write_events};
use super::replay::prior_change;
use super::{App, AppError, Attempt, Outcome, lost_race};
use crate::domain::{Cause, Decision, EventType, NewOrder, Order, TransitionKind};
use crate::store::orders;
use crate::store::transitions::{self, NewTransition};

impl App {
    /// Creates the order in PENDING_PAYMENT. The same id with the same content is a replay;
    /// with other content, a conflict.
    pub async fn place(&self, new: NewOrder, cause: &Cause) -> Result<Outcome<Order>, AppError> {
        let outcome = in_transaction!(self, |conn| {
            if let Some(prior) = prior_change(conn, cause).await? {
                let order = orders::find(conn, prior.order_id)
                    .await?
                    .ok_or_else(|| AppError::Unexpected("keyed order vanished".into()))?;
                return Ok(Attempt::Done(Outcome::Replayed(order)));
            }
            if let Some(existing) = orders::find(conn, new.id).await? {
                return match new.decide_against(&existing) {
                    Ok(Decision::AlreadyApplied) => {
                        Ok(Attempt::Done(Outcome::AlreadyApplied(existing)))
                    }
                    Ok(Decision::Apply(_)) => Err(AppError::Unexpected(
                        "placing an existing order cannot apply".into(),
                    )),
                    Err(reason) => Err(AppError::refused(
                        reason,
                        Some((existing.status, existing.version)),
                    )),
                };
            }
            let inserted = orders::insert(conn, &new.clone().into_order(Utc::now())).await;
            let Some(order) = lost_race(inserted)?.flatten() else {
                return Ok(Attempt::Lost);
            };
            let history = NewTransition {
                order_id: order.id,
                version: order.version,
                kind: TransitionKind::Created,
                from: None,
                to: order.status,
                transfer_id: None,
                cause,
            };
            if lost_race(transitions::insert(conn, history).await)?.is_none() {
                return Ok(Attempt::Lost);
            }
            write_events(conn, &[EventType::OrderCreated], &order).await?;
            Ok(Attempt::Done(Outcome::Applied(order)))
        })?;
        if let Outcome::Applied(order) = &outcome {
            record_metrics("created", "none", order.status.as_ref(), cause);
        }
        Ok(outcome)
    }
}
