//! Several requests in one transaction (docs/messaging.md "Batched consumer commits"): what the
//! AMQP consumer does with the deliveries it takes together, so that they share one commit.
//!
//! Each item runs the same step it runs alone ([`step`]: one read, one guarded write) under a
//! savepoint of its own: one that is refused (premature, a conflict) or fails unexpectedly is
//! rolled back to its savepoint and keeps its result, and the others go on. One that lost a race
//! is rolled back to its savepoint and decided again: under READ COMMITTED each statement reads
//! the latest committed state, and an item sees what the items before it wrote (a duplicate in
//! the same batch finds the first copy's uncommitted rows and writes nothing). One caught in a
//! deadlock, in a lock wait longer than the batch allows, or in races lost again and again is
//! rolled back to its savepoint and set aside: its result is [`AppError::Busy`], and the caller
//! tries it again later, while the rest of the batch commits and is settled. Each item's outcome
//! is counted after the commit, as the runner counts a command alone (`App::conclude`), which
//! also wakes the outbox relays (coalesced, `wakeup`).
//!
//! Items are taken in the order of their order ids (a stable sort, so one order's items keep
//! their order): concurrent batches lock the orders they share in the same order, and so do not
//! deadlock on each other.

use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tracing::Instrument;

use super::deadline;
use super::request::{Effect, Request, Requested};
use super::runner::{Step, step};
use super::{App, AppError, Outcome};
use crate::domain::Cause;
use crate::store::{self, StoreError};
use crate::telemetry::{TraceContext, error_chain};

/// How often an item that lost a race is decided again inside its batch before it is set aside
/// (and tried again by the caller, after the commit).
const MAX_LOST_IN_BATCH: u64 = 3;

/// One request of a batch, with what it carries alone: its cause, the trace its events carry,
/// and the span its work runs in (its message's).
pub struct Item {
    pub request: Request,
    pub cause: Cause,
    pub trace: TraceContext,
    pub span: tracing::Span,
}

/// How one item of a batch ended.
pub type ItemResult = Result<Outcome<Effect>, AppError>;

/// How an item ended inside the batch's transaction, before the commit.
enum Ended {
    /// It wrote its change or found it there (released into the batch's transaction), or the
    /// domain refused it or it failed (rolled back to its savepoint).
    Settled(Box<Result<Step<Effect>, AppError>>),
    /// A deadlock, a lock wait that timed out, or too many lost races: rolled back to its
    /// savepoint and set aside.
    SetAside,
}

impl App {
    /// Applies `items` in one transaction; result `i` is item `i`'s, as its command's own method
    /// (`App::place`, `App::record`, …) would have given it alone, or [`AppError::Busy`] for an
    /// item set aside (the others do not wait for it). `Err` only when the database is
    /// unavailable: nothing of the batch is committed, and every item may be tried again.
    ///
    /// In a batch of several items a statement waits at most `lock_wait` for a lock another
    /// transaction holds; a lone item waits the pool's `LOCK_TIMEOUT_MS`, as a command alone does.
    /// Even a single item runs in a transaction (docs/messaging.md "Batched consumer commits"): a
    /// process that dies before the commit leaves nothing behind, though its statement may still be
    /// waiting for a lock at the server; the message is redelivered and decided again.
    pub async fn apply_batch(
        &self,
        items: &[Item],
        lock_wait: Duration,
    ) -> Result<Vec<ItemResult>, AppError> {
        if items.is_empty() {
            return Ok(vec![]);
        }
        let ended = match deadline::bounded(self.in_one_transaction(items, lock_wait)).await {
            Ok(ended) => ended,
            Err(error @ AppError::Unavailable(_)) => return Err(error),
            // Nothing of it committed; alone, each item gets the answer it would have had.
            Err(error) if items.len() > 1 => {
                tracing::warn!(error = %error_chain(&error), "a batch failed; applying its items one by one");
                let mut results = Vec::with_capacity(items.len());
                for item in items {
                    results.push(self.apply_alone(item).await);
                }
                return Ok(results);
            }
            Err(error) => return Ok(vec![Err(error)]),
        };
        let mut results = Vec::with_capacity(items.len());
        for (item, (ended, lost)) in items.iter().zip(ended) {
            if lost > 0 {
                metrics::counter!("order_write_conflicts_total").increment(lost);
            }
            // Counted (and the relays woken) as a command alone is, now that it is committed.
            results.push(match ended {
                Ended::Settled(stepped) => {
                    self.conclude(*stepped, &item.cause)
                        .unwrap_or(Err(AppError::Invariant(
                            "a settled step did not lose a race",
                        )))
                }
                Ended::SetAside => Err(AppError::Busy),
            });
        }
        Ok(results)
    }

    /// One item of a batch that failed as a whole, in a transaction of its own.
    async fn apply_alone(&self, item: &Item) -> ItemResult {
        // A batch of one waits `LOCK_TIMEOUT_MS`, whatever the lock wait given.
        let alone = self.apply_batch(std::slice::from_ref(item), Duration::ZERO);
        match Box::pin(alone).await {
            Ok(mut results) => results
                .pop()
                .unwrap_or(Err(AppError::Invariant("a batch of one has one result"))),
            Err(error) => Err(error),
        }
    }

    /// Every item in one transaction, committed; how each ended (in `items`' order) and how
    /// many races it lost on the way.
    async fn in_one_transaction(
        &self,
        items: &[Item],
        lock_wait: Duration,
    ) -> Result<Vec<(Ended, u64)>, AppError> {
        let mut sequence: Vec<usize> = (0..items.len()).collect();
        sequence.sort_by_key(|&i| items[i].request.order_id());
        let mut connection = self.pool.acquire().await?;
        let mut tx = connection.begin().await?;
        if items.len() > 1 {
            // Waiting long here would hold every other item of the batch, and what it locked.
            store::wait_for_locks_at_most(&mut tx, lock_wait).await?;
        }
        let mut ended = Vec::with_capacity(items.len());
        for i in sequence {
            let item = &items[i];
            let end = in_savepoint(&mut tx, item)
                .instrument(item.span.clone())
                .await?;
            ended.push((i, end));
        }
        tx.commit().await?;
        ended.sort_by_key(|(i, _)| *i);
        Ok(ended.into_iter().map(|(_, end)| end).collect())
    }
}

/// One item under a savepoint of `tx`, decided again after each lost race (up to
/// [`MAX_LOST_IN_BATCH`]). `Err` when the batch as a whole cannot go on.
async fn in_savepoint(tx: &mut PgConnection, item: &Item) -> Result<(Ended, u64), AppError> {
    let command = Requested::of(&item.request, &item.trace);
    let mut lost = 0;
    loop {
        let mut savepoint = tx.begin().await?;
        let ended = match step(&mut savepoint, &command, &item.cause).await {
            Ok(Step::Lost) => {
                savepoint.rollback().await?;
                lost += 1;
                if lost < MAX_LOST_IN_BATCH {
                    continue;
                }
                return Ok((Ended::SetAside, lost));
            }
            Err(error @ AppError::Unavailable(_)) => return Err(error),
            // Waiting here would hold the whole batch (and what it locked): the caller tries it
            // again after the commit.
            Err(AppError::Busy | AppError::Unexpected(StoreError::Contended(_))) => {
                savepoint.rollback().await?;
                return Ok((Ended::SetAside, lost));
            }
            Err(error) => {
                savepoint.rollback().await?;
                return Ok((Ended::Settled(Box::new(Err(error))), lost));
            }
            Ok(stepped) => Ended::Settled(Box::new(Ok(stepped))),
        };
        savepoint.commit().await?;
        return Ok((ended, lost));
    }
}
