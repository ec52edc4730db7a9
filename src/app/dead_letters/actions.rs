//! Replaying and discarding parked dead letters. Both are commands of the one runner, so their
//! Idempotency-Keys behave exactly as an order request's do; the key lives on the action's own
//! row, and inserting that row is the guard a concurrent twin loses on. Only a parked dead letter
//! can be acted on; a replay copies it into the outbox in the transaction that marks it replayed,
//! with the trace context of the caller's span (the replayed message continues the replay's
//! trace, as an event continues the trace of its change).

use sqlx::PgConnection;

use super::{DeadLetterDetails, DeadLetterFilter, details};
use crate::app::keys;
use crate::app::runner::{Attempt, Command, Written, run};
use crate::app::{App, AppError, Outcome};
use crate::domain::{Cause, DeadLetterAction, DeadLetterId, DeadLetterStatus, MAX_BULK_REPLAY};
use crate::store::keys::KeyHolder;
use crate::store::{Inserted, dead_letter_actions, dead_letters, outbox};
use crate::telemetry::TraceContext;

impl App {
    /// Sends one parked dead letter back to the inbound exchange (through the outbox).
    pub async fn replay_dead_letter(
        &self,
        id: DeadLetterId,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<DeadLetterDetails>, AppError> {
        self.act_on_one(id, DeadLetterAction::Replay, cause, trace)
            .await
    }

    /// Drops one parked dead letter (its row stays, `discarded`, as the record of it).
    pub async fn discard_dead_letter(
        &self,
        id: DeadLetterId,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<DeadLetterDetails>, AppError> {
        self.act_on_one(id, DeadLetterAction::Discard, cause, trace)
            .await
    }

    /// Replays the parked dead letters `filter` matches, oldest first, at most
    /// [`MAX_BULK_REPLAY`]; returns how many.
    pub async fn replay_dead_letters(
        &self,
        filter: DeadLetterFilter,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<u64>, AppError> {
        let command = ReplayMatching {
            filter,
            to: Destination {
                exchange: &self.replay_exchange,
                trace,
            },
        };
        run(&self.pool, &command, cause).await
    }

    async fn act_on_one(
        &self,
        id: DeadLetterId,
        action: DeadLetterAction,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<DeadLetterDetails>, AppError> {
        let command = ActOnOne {
            id,
            action,
            to: Destination {
                exchange: &self.replay_exchange,
                trace,
            },
        };
        run(&self.pool, &command, cause).await
    }
}

/// Where a replay goes: the exchange, and the trace its messages continue.
#[derive(Clone, Copy)]
struct Destination<'a> {
    exchange: &'a str,
    trace: &'a TraceContext,
}

/// Replays or discards one dead letter, which must be parked.
struct ActOnOne<'a> {
    id: DeadLetterId,
    action: DeadLetterAction,
    to: Destination<'a>,
}

impl Command for ActOnOne<'_> {
    type Output = DeadLetterDetails;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<DeadLetterDetails>, AppError> {
        let status = dead_letters::lock(conn, self.id)
            .await?
            .ok_or(AppError::DeadLetterNotFound(self.id))?;
        if status != DeadLetterStatus::Parked {
            return Err(AppError::NotParked {
                id: self.id,
                status,
            });
        }
        let Some(written) = act(conn, self.action, &[self.id], self.to, cause).await? else {
            return Ok(Attempt::Lost);
        };
        Ok(Attempt::Applied(details(conn, self.id).await?, written))
    }

    async fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
    ) -> Result<DeadLetterDetails, AppError> {
        let id = keys::action(prior)?
            .dead_letter_ids
            .first()
            .copied()
            .ok_or(AppError::Invariant(
                "a keyed action on one dead letter names none",
            ))?;
        details(conn, id).await
    }
}

/// Replays the parked dead letters a filter matches.
struct ReplayMatching<'a> {
    filter: DeadLetterFilter,
    to: Destination<'a>,
}

impl Command for ReplayMatching<'_> {
    type Output = u64;

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<Attempt<u64>, AppError> {
        let ids = dead_letters::lock_parked(conn, &self.filter, MAX_BULK_REPLAY as i64).await?;
        let Some(written) = act(conn, DeadLetterAction::Replay, &ids, self.to, cause).await? else {
            return Ok(Attempt::Lost);
        };
        Ok(Attempt::Applied(ids.len() as u64, written))
    }

    async fn replay(&self, _: &mut PgConnection, prior: &KeyHolder) -> Result<u64, AppError> {
        Ok(keys::action(prior)?.dead_letter_ids.len() as u64)
    }
}

/// Takes `action` on `ids` (parked, and locked by the caller): records it with the request's key,
/// settles them, and for a replay writes their outbox rows. `None`: the key was taken meanwhile.
async fn act(
    conn: &mut PgConnection,
    action: DeadLetterAction,
    ids: &[DeadLetterId],
    to: Destination<'_>,
    cause: &Cause,
) -> Result<Option<Written>, AppError> {
    let scope = cause.key_scope().ok_or(AppError::Invariant(
        "a dead-letter action needs an Idempotency-Key",
    ))?;
    let Inserted::New(()) =
        dead_letter_actions::insert(conn, action, ids, cause.source(), scope).await?
    else {
        return Ok(None);
    };
    let settled = dead_letters::settle(conn, ids, action.status()).await?;
    if settled != ids.len() as u64 {
        return Err(AppError::Invariant(
            "a locked parked dead letter did not settle",
        ));
    }
    if action == DeadLetterAction::Replay {
        outbox::insert_dead_letters(conn, ids, to.exchange, to.trace).await?;
    }
    Ok(Some(Written::DeadLetters {
        action,
        count: settled,
    }))
}
