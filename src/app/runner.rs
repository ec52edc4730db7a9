//! The one way a command runs. [`App::run`] repeats [`step`] until it settles: read (one
//! statement: the command's state and the request that holds its Idempotency-Key); replay that
//! request's change if there is one; otherwise let the domain decide and write the change with one
//! guarded statement. A guard that lost a race wrote nothing, and the next step re-reads.
//!
//! No transaction is opened: each statement is atomic, and the version guard makes the write valid
//! only against the state it was decided on, however long ago that was read (docs/contract.md "How
//! each idempotency case is resolved"). [`step`] is therefore as good inside a transaction the
//! caller holds (under a savepoint, say) as in autocommit; it never begins or ends one. The outcome
//! metrics and the relay's wake-up are counted here, once, for both doors.

use std::future::Future;

use sqlx::PgConnection;

use super::key_replay::prior_change;
use super::{App, AppError, Outcome, deadline};
use crate::domain::{Cause, DeadLetterAction, OrderStatus, TransitionKind};
use crate::store::keys::{KeyHolder, Keyed};

/// How many times a command re-reads and decides again after losing a race. Each lost race means
/// another writer committed, so the loop always makes progress; the bound only guards against a
/// pathological storm on one order.
const MAX_ATTEMPTS: usize = 200;

/// A command of the application layer: what [`step`] reads, decides and writes.
pub(super) trait Command: Sync {
    type Output: Send;
    /// What the command decides on.
    type State: Send;

    /// The read: the state, and the committed request holding the key `cause` carries (if any),
    /// in one statement, so the two agree.
    fn read(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> impl Future<Output = Result<(Option<Keyed>, Self::State), AppError>> + Send;

    /// Let the domain decide on `state`, and write the change with one guarded statement.
    fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
        state: Self::State,
    ) -> impl Future<Output = Result<Step<Self::Output>, AppError>> + Send;

    /// The current state of what `prior` (the change or action this request's key already made)
    /// touched; `state` is what the read found for it.
    fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
        state: Self::State,
    ) -> impl Future<Output = Result<Self::Output, AppError>> + Send;
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

/// How one step (a command's attempt, or the replay of its key) ended, as the runner (or a
/// batch, `batch/`) acts on it.
pub(super) enum Step<T> {
    /// The command wrote a change: count it, wake the outbox relays (once it is committed).
    Applied(T, Written),
    /// Nothing was written (the effect already existed, or the request's key replays it).
    Unchanged(Outcome<T>),
    /// A guard lost a race: nothing was written; step again.
    Lost,
}

impl App {
    /// Runs `command` until it settles or fails for a reason of its own, within the caller's
    /// deadline or [`deadline::UNATTENDED_LIMIT`].
    pub(super) async fn run<C: Command>(
        &self,
        command: &C,
        cause: &Cause,
    ) -> Result<Outcome<C::Output>, AppError> {
        deadline::bounded(self.run_unbounded(command, cause)).await
    }

    async fn run_unbounded<C: Command>(
        &self,
        command: &C,
        cause: &Cause,
    ) -> Result<Outcome<C::Output>, AppError> {
        let mut connection = self.connection().await?;
        for _ in 0..MAX_ATTEMPTS {
            let stepped = step(&mut connection, command, cause).await;
            if let Some(settled) = self.conclude(stepped, cause) {
                // The command line's process exits next: its wake-up of the relays must not be
                // left to a background task.
                if let (Cause::Cli { .. }, Ok(Outcome::Applied(_))) = (cause, &settled) {
                    self.wakeup.now().await;
                }
                return settled;
            }
        }
        Err(AppError::Busy)
    }

    /// What a step ended with, once what it wrote is committed (at once, in autocommit): counted,
    /// and the relays woken after a change. `None`: it lost a race; step again.
    pub(super) fn conclude<T>(
        &self,
        stepped: Result<Step<T>, AppError>,
        cause: &Cause,
    ) -> Option<Result<Outcome<T>, AppError>> {
        match stepped {
            Ok(Step::Lost) => {
                metrics::counter!("order_write_conflicts_total").increment(1);
                None
            }
            Ok(Step::Applied(value, written)) => {
                count_change(&written, cause);
                self.wakeup.events_committed();
                Some(Ok(Outcome::Applied(value)))
            }
            Ok(Step::Unchanged(outcome)) => {
                if let Outcome::Replayed(_) = outcome {
                    metrics::counter!("idempotent_replays_total").increment(1);
                }
                Some(Ok(outcome))
            }
            Err(error) => {
                count_refusal(&error, cause);
                Some(Err(error))
            }
        }
    }
}

/// One read, decision and (guarded) write of `command`, on `conn` as it is: in autocommit, or in
/// a transaction the caller holds. It begins and ends no transaction, and counts nothing.
pub(super) async fn step<C: Command>(
    conn: &mut PgConnection,
    command: &C,
    cause: &Cause,
) -> Result<Step<C::Output>, AppError> {
    let (key, state) = command.read(conn, cause).await?;
    if let Some(prior) = prior_change(key, cause)? {
        let value = command.replay(conn, &prior, state).await?;
        return Ok(Step::Unchanged(Outcome::Replayed(value)));
    }
    command.attempt(conn, cause, state).await
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
