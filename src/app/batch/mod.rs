//! Several requests in one transaction (docs/messaging.md "Batched consumer commits"): what the
//! AMQP consumer does with the deliveries it takes together, so that they share one commit.
//!
//! A batch is read with one statement and written with one ([`set_based`](set_based.rs)), in a
//! round or a few: an item whose order changed under it since the read is decided again on a
//! fresh read. When one of those statements fails for a reason of one item (a unique guard a
//! concurrent writer holds, a lock wait longer than the batch allows, a deadlock), nothing of the
//! batch is committed and it is applied again item by item, each under a savepoint, where that
//! item alone is refused or set aside ([`one_by_one`](one_by_one.rs)); so is a batch whose items
//! carry Idempotency-Keys, which the set-based read does not look up. Either way each item ends as
//! it would have alone, or is set aside ([`AppError::Busy`]) for the caller to try again later,
//! while the rest of the batch commits. Each item's outcome is counted after the commit, as the
//! runner counts a command alone (`App::conclude`), which also wakes the outbox relays
//! (coalesced, `wakeup`).
//!
//! Items are taken in the order of their order ids (a stable sort, so one order's items keep
//! their order): concurrent batches lock the orders they share in the same order, and so do not
//! deadlock on each other.

mod one_by_one;
mod set_based;

use std::time::Duration;

use super::deadline;
use super::request::{Effect, Request};
use super::runner::Step;
use super::{App, AppError, Outcome};
use crate::domain::Cause;
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
    /// It wrote its change or found it there, or the domain refused it, or it failed (and wrote
    /// nothing).
    Settled(Box<Result<Step<Effect>, AppError>>),
    /// A deadlock, a lock wait that timed out, or too many lost races: it wrote nothing, and is
    /// set aside.
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

    /// Every item in one transaction, committed; how each ended (in `items`' order) and how many
    /// races it lost on the way. Set-based, unless the batch's items carry Idempotency-Keys or its
    /// statements failed for a reason of one item: then one by one.
    async fn in_one_transaction(
        &self,
        items: &[Item],
        lock_wait: Duration,
    ) -> Result<Vec<(Ended, u64)>, AppError> {
        if items.iter().any(|item| item.cause.key_scope().is_some()) {
            return self.one_by_one(items, lock_wait).await;
        }
        match self.set_based(items, lock_wait).await {
            Err(error @ AppError::Unavailable(_)) => Err(error),
            Err(error) => {
                tracing::debug!(error = %error_chain(&error), "a batch's statements failed; deciding its items one by one");
                metrics::counter!("amqp_batch_fallbacks_total").increment(1);
                self.one_by_one(items, lock_wait).await
            }
            settled => settled,
        }
    }
}

/// The indexes of `items`, in the order of their order ids (one order's items as they came).
fn in_order_of_orders(items: &[Item]) -> Vec<usize> {
    let mut sequence: Vec<usize> = (0..items.len()).collect();
    sequence.sort_by_key(|&i| items[i].request.order_id());
    sequence
}
