//! Replaying and discarding parked dead letters. Both are commands of the one runner, so their
//! Idempotency-Keys behave exactly as an order request's do; the key lives on the action's own
//! row, and inserting that row is the guard a concurrent twin loses on. Only a parked dead letter
//! can be acted on; a replay copies it into the outbox in the statement that marks it replayed,
//! with the trace context of the caller's span (the replayed message continues the replay's
//! trace, as an event continues the trace of its change). A replay goes only where the inbox is
//! bound (domain::ReplayRoutes): one dead letter with another routing key is refused, a bulk replay
//! skips such ones and says how many.

use sqlx::PgConnection;

use super::{BulkReplay, DeadLetterDetails, DeadLetterFilter, details};
use crate::app::runner::{Command, Step, Written};
use crate::app::{App, AppError, Outcome};
use crate::app::{deadline, key_replay};
use crate::domain::{
    BoundedText, Cause, DeadLetterAction, DeadLetterId, DeadLetterStatus, KeyScope,
    MAX_BULK_REPLAY, ReplayRoutes,
};
use crate::store::Guarded;
use crate::store::dead_letter_actions::{self, Actor, ReplayTo, TargetState, Targets};
use crate::store::keys::{KeyHolder, Keyed};
use crate::telemetry::TraceContext;

impl App {
    /// Replays the parked dead letters `filter` matches that can be replayed, oldest first, at
    /// most [`MAX_BULK_REPLAY`]; returns how many, and how many it skipped.
    pub async fn replay_dead_letters(
        &self,
        filter: DeadLetterFilter,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<BulkReplay>, AppError> {
        let command = ReplayMatching {
            filter,
            to: self.destination(trace),
        };
        self.run(&command, cause).await
    }

    /// Replays (sends back to the inbound exchange, through the outbox) or discards (its row
    /// stays, `discarded`, as the record of it) one parked dead letter; `note`, what the
    /// operator said about it (a discard's reason, say), is kept with the action.
    pub async fn act_on_dead_letter(
        &self,
        id: DeadLetterId,
        action: DeadLetterAction,
        note: Option<&BoundedText>,
        cause: &Cause,
        trace: &TraceContext,
    ) -> Result<Outcome<DeadLetterDetails>, AppError> {
        let command = ActOnOne {
            id,
            action,
            note,
            to: self.destination(trace),
        };
        self.run(&command, cause).await
    }

    fn destination<'a>(&'a self, trace: &'a TraceContext) -> Destination<'a> {
        Destination {
            exchange: &self.replay_exchange,
            routes: self.replay_routes,
            trace,
        }
    }
}

/// Where a replay goes: the exchange and the routing keys it may use, and the trace its messages
/// continue.
#[derive(Clone, Copy)]
struct Destination<'a> {
    exchange: &'a str,
    routes: ReplayRoutes,
    trace: &'a TraceContext,
}

/// Replays or discards one dead letter, which must be parked.
struct ActOnOne<'a> {
    id: DeadLetterId,
    action: DeadLetterAction,
    note: Option<&'a BoundedText>,
    to: Destination<'a>,
}

impl Command for ActOnOne<'_> {
    type Output = DeadLetterDetails;
    /// The dead letter's status and routing key, if it exists.
    type State = Option<TargetState>;

    async fn read(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<(Option<Keyed>, Self::State), AppError> {
        Ok(dead_letter_actions::read(conn, key_scope(cause)?, Some(self.id)).await?)
    }

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
        state: Self::State,
    ) -> Result<Step<DeadLetterDetails>, AppError> {
        let state = state.ok_or(AppError::DeadLetterNotFound(self.id))?;
        match state.status {
            DeadLetterStatus::Parked => {}
            status => {
                return Err(AppError::NotParked {
                    id: self.id,
                    status,
                });
            }
        }
        if self.action == DeadLetterAction::Replay {
            self.to
                .routes
                .check(&state.routing_key)
                .map_err(|reason| AppError::Unreplayable {
                    id: self.id,
                    reason,
                })?;
        }
        let one = DeadLetterFilter {
            ids: Some(vec![self.id]),
            ..DeadLetterFilter::default()
        };
        let targets = Targets {
            filter: &one,
            limit: 1,
            at_least: 1,
        };
        // Lost: settled by someone else since the read, which the next read finds.
        let note = self.note.map(BoundedText::as_str);
        let Some(written) = act(conn, self.action, &targets, self.to, cause, note).await? else {
            return Ok(Step::Lost);
        };
        Ok(Step::Applied(details(conn, self.id).await?, written))
    }

    async fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
        _: Self::State,
    ) -> Result<DeadLetterDetails, AppError> {
        let id = key_replay::action(prior)?
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
    type Output = BulkReplay;
    type State = ();

    async fn read(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
    ) -> Result<(Option<Keyed>, ()), AppError> {
        let (key, _) = dead_letter_actions::read(conn, key_scope(cause)?, None).await?;
        Ok((key, ()))
    }

    async fn attempt(
        &self,
        conn: &mut PgConnection,
        cause: &Cause,
        (): (),
    ) -> Result<Step<BulkReplay>, AppError> {
        let targets = Targets {
            filter: &self.filter,
            limit: MAX_BULK_REPLAY as i64,
            at_least: 0,
        };
        let action = DeadLetterAction::Replay;
        let Some(written) = act(conn, action, &targets, self.to, cause, None).await? else {
            return Ok(Step::Lost);
        };
        let Written::DeadLetters { count, .. } = written else {
            return Err(AppError::Invariant("a replay wrote no action"));
        };
        let replayed = BulkReplay {
            replayed: count,
            skipped: self.skipped(conn).await?,
        };
        Ok(Step::Applied(replayed, written))
    }

    async fn replay(
        &self,
        conn: &mut PgConnection,
        prior: &KeyHolder,
        (): (),
    ) -> Result<BulkReplay, AppError> {
        Ok(BulkReplay {
            replayed: key_replay::action(prior)?.dead_letter_ids.len() as u64,
            skipped: self.skipped(conn).await?,
        })
    }
}

impl ReplayMatching<'_> {
    /// The parked dead letters the filter matches that a replay refuses, as they are now.
    async fn skipped(&self, conn: &mut PgConnection) -> Result<u64, AppError> {
        let keys = self.to.routes.keys();
        Ok(dead_letter_actions::unreplayable(conn, &self.filter, keys).await?)
    }
}

/// A dead-letter action's key: every one has one.
fn key_scope(cause: &Cause) -> Result<KeyScope<'_>, AppError> {
    cause.key_scope().ok_or(AppError::Invariant(
        "a dead-letter action needs an Idempotency-Key",
    ))
}

/// Takes `action` on `targets` (those still parked) with one statement: records it with the
/// request's key, settles them, and for a replay writes their outbox rows. `None`: none was
/// written (too few were still parked, or the key was taken meanwhile).
async fn act(
    conn: &mut PgConnection,
    action: DeadLetterAction,
    targets: &Targets<'_>,
    to: Destination<'_>,
    cause: &Cause,
    note: Option<&str>,
) -> Result<Option<Written>, AppError> {
    let replay_to = ReplayTo {
        exchange: to.exchange,
        routing_keys: to.routes.keys(),
        trace: to.trace,
    };
    let replay_to = (action == DeadLetterAction::Replay).then_some(&replay_to);
    let by = Actor {
        source: cause.source(),
        scope: key_scope(cause)?,
        note,
    };
    let within = deadline::remaining();
    let taken = dead_letter_actions::act(conn, action, targets, &by, replay_to, within);
    match taken.await? {
        Guarded::Applied(ids) => Ok(Some(Written::DeadLetters {
            action,
            count: ids.len() as u64,
        })),
        Guarded::Lost => Ok(None),
    }
}
