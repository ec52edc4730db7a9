//! A batch decided one item at a time, each under a savepoint of its own (docs/messaging.md
//! "Batched consumer commits"): the path a batch takes when its set-based statements cannot serve
//! it (an item carries an Idempotency-Key, or a statement failed for one item's reason).
//!
//! Each item runs the same step it runs alone ([`step`]: one read, one guarded write). One that is
//! refused (premature, a conflict) or fails unexpectedly is rolled back to its savepoint and keeps
//! its result, and the others go on. One that lost a race is rolled back and decided again: under
//! READ COMMITTED each statement reads the latest committed state, and an item sees what the items
//! before it wrote. One caught in a deadlock, in a lock wait longer than the batch allows, or in
//! races lost again and again is rolled back and set aside ([`Ended::SetAside`]).

use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tracing::Instrument;

use super::{Ended, Item, MAX_LOST_IN_BATCH, in_order_of_orders};
use crate::app::request::Requested;
use crate::app::runner::{Step, step};
use crate::app::{App, AppError};
use crate::store::{self, StoreError};

impl App {
    /// Every item in one transaction, each under its savepoint, committed; how each ended (in
    /// `items`' order) and how many races it lost on the way.
    pub(super) async fn one_by_one(
        &self,
        items: &[Item],
        lock_wait: Duration,
    ) -> Result<Vec<(Ended, u64)>, AppError> {
        let mut connection = self.connection().await?;
        let mut tx = connection.begin().await?;
        if items.len() > 1 {
            // Waiting long here would hold every other item of the batch, and what it locked.
            store::wait_for_locks_at_most(&mut tx, lock_wait).await?;
        }
        let mut ended = Vec::with_capacity(items.len());
        for i in in_order_of_orders(items) {
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
