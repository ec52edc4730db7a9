//! The one way a command runs. [`run`] owns the transaction around it: begin; replay the change
//! the request's Idempotency-Key already made, if any; otherwise let the command read, decide and
//! write with guarded statements; commit, or roll back and try again when a guard lost a race.
//! The outcome metrics are counted here, once, for both doors.

use std::future::Future;

use sqlx::{Connection, PgConnection, PgPool};

use super::keys::prior_change;
use super::{AppError, Outcome};
use crate::domain::{Cause, DeadLetterAction, OrderStatus, TransitionKind};
use crate::store::keys::KeyHolder;
use crate::store::outbox;

/// How many times a command re-reads and decides again after losing a race. Each lost race means
/// another writer committed, so the loop always makes progress; the bound only guards against a
/// pathological storm on one order.
const MAX_ATTEMPTS: usize = 200;

/// A command of the application layer: what [`run`] attempts inside its transaction.
pub(super) trait Command: Sync {
    type Output: Send;

    /// One attempt: read, let the domain decide, write with guarded statements.
    fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> impl Future<Output = Result<Attempt<Self::Output>, AppError>> + Send;

    /// The current state of what `prior` (the change or action this request's key already made)
    /// touched.
    fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
    ) -> impl Future<Output = Result<Self::Output, AppError>> + Send;
}

/// How one attempt ended.
pub(super) enum Attempt<T> {
    /// This attempt wrote the change: commit.
    Applied(T, Written),
    /// The effect already exists: nothing was written.
    AlreadyApplied(T),
    /// A guard found that another writer got there first: roll back, re-read, decide again.
    Lost,
}

/// What a command wrote, for the metrics.
pub(super) enum Written {
    /// An order changed: one history row.
    Order(Transition),
    /// Dead letters were replayed or discarded: one action row, for `count` of them.
    DeadLetters {
        action: DeadLetterAction,
        count: u64,
    },
}

/// An order's change as its history row records it.
pub(super) struct Transition {
    pub kind: TransitionKind,
    /// `None` at creation.
    pub from: Option<OrderStatus>,
    pub to: OrderStatus,
}

/// How one attempt ended, as the runner acts on it.
enum Step<T> {
    /// The command wrote a change: commit, count it, wake the outbox relays.
    Applied(T, Written),
    /// Nothing was written (the effect already existed, or the request's key replays it):
    /// commit the read-only transaction and answer.
    Unchanged(Outcome<T>),
    /// A guard lost a race: roll back and try again.
    Lost,
}

/// Runs `command` until it commits or fails for a reason of its own.
pub(super) async fn run<C: Command>(
    pool: &PgPool,
    command: &C,
    cause: &Cause,
) -> Result<Outcome<C::Output>, AppError> {
    let mut connection = pool.acquire().await?;
    for _ in 0..MAX_ATTEMPTS {
        let mut tx = connection.begin().await?;
        let step = match step(&mut tx, command, cause).await {
            Ok(step) => step,
            Err(error) => {
                count_refusal(&error, cause);
                return Err(error);
            }
        };
        match step {
            Step::Lost => {
                tx.rollback().await?;
                metrics::counter!("order_write_conflicts_total").increment(1);
            }
            Step::Applied(value, written) => {
                tx.commit().await?;
                count_change(&written, cause);
                // Committed already: a lost wake-up only delays publishing until the relay's
                // next poll, so it must not fail the command.
                if let Err(error) = outbox::announce(&mut connection).await {
                    tracing::debug!(%error, "could not wake the outbox relay");
                }
                return Ok(Outcome::Applied(value));
            }
            Step::Unchanged(outcome) => {
                tx.commit().await?;
                if let Outcome::Replayed(_) = outcome {
                    metrics::counter!("idempotent_replays_total").increment(1);
                }
                return Ok(outcome);
            }
        }
    }
    Err(AppError::Busy)
}

/// One attempt in `conn`'s transaction.
async fn step<C: Command>(
    conn: &mut PgConnection,
    command: &C,
    cause: &Cause,
) -> Result<Step<C::Output>, AppError> {
    if let Some(prior) = prior_change(conn, cause).await? {
        let value = command.replay(conn, &prior).await?;
        return Ok(Step::Unchanged(Outcome::Replayed(value)));
    }
    let attempt = command.attempt(conn, cause).await;
    // An attempt that wrote nothing may have waited for a concurrent twin carrying this
    // request's key (its ledger insert or row lock did): now that the twin committed, its key
    // decides — a replay, or a key reused for another request.
    let unwritten = match attempt {
        Ok(Attempt::Applied(value, written)) => return Ok(Step::Applied(value, written)),
        Ok(Attempt::Lost) => return Ok(Step::Lost),
        Ok(Attempt::AlreadyApplied(value)) => Ok(value),
        Err(error @ (AppError::Refused { .. } | AppError::NotParked { .. })) => Err(error),
        Err(error) => return Err(error),
    };
    if let Some(prior) = prior_change(conn, cause).await? {
        let value = command.replay(conn, &prior).await?;
        return Ok(Step::Unchanged(Outcome::Replayed(value)));
    }
    unwritten.map(|value| Step::Unchanged(Outcome::AlreadyApplied(value)))
}

/// Counts a command the domain refused, by reason and by the door it came through.
fn count_refusal(error: &AppError, cause: &Cause) {
    if let AppError::Refused { reason, .. } = error {
        let source: &'static str = cause.source().into();
        metrics::counter!(
            "order_conflicts_total",
            "reason" => reason.code(),
            "source" => source,
        )
        .increment(1);
    }
}

fn count_change(written: &Written, cause: &Cause) {
    let source: &'static str = cause.source().into();
    match written {
        Written::Order(transition) => {
            let from: &'static str = transition.from.map_or("none", Into::into);
            let to: &'static str = transition.to.into();
            let kind: &'static str = transition.kind.into();
            metrics::counter!(
                "order_changes_total",
                "kind" => kind,
                "from" => from,
                "to" => to,
                "source" => source,
            )
            .increment(1);
        }
        Written::DeadLetters { action, count } => {
            let action: &'static str = action.into();
            metrics::counter!(
                "dead_letter_actions_total",
                "action" => action,
                "source" => source,
            )
            .increment(*count);
        }
    }
}
