//! The time a command has to take effect: a REST request's time limit
//! (docs/operations/configuration.md "Limits and timeouts"), set around the request by the HTTP
//! door. A command's write carries what is left of it to the server (`store::order_changes`,
//! `store::dead_letter_actions`), which refuses to take effect past it: a request answered 503 for
//! its time limit leaves nothing behind, even when its statement was still waiting for a lock. Work
//! nobody waits on (a batch of messages, a dead letter parked, an expiry sweep, a relay round) gets
//! [`UNATTENDED_LIMIT`] through [`bounded`]: a primary that stops answering without closing its
//! sockets (a paused VM, a partition) would otherwise hold it for as long as TCP keeps a silent
//! connection (hours), while a standby has long been promoted (docs/postgres-failover.md).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::store::StoreError;

/// How long work without a caller's deadline may wait on Postgres before it is given up as if
/// Postgres were unreachable ([`StoreError::Unavailable`]) and tried again: far above what any
/// such work takes (a batch waits at most `AMQP_BATCH_LOCK_WAIT_MS` for a lock, a command
/// `LOCK_TIMEOUT_MS`), and under the 20 s in which a failover must be over.
pub const UNATTENDED_LIMIT: Duration = Duration::from_secs(10);

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `work` with `limit` from now to take effect, and gives up on it then (`None`). `work` is
/// held by value: a large one is boxed by the caller, as [`bounded`] does.
pub async fn within<F: Future>(limit: Duration, work: F) -> Option<F::Output> {
    let deadline = Instant::now() + limit;
    tokio::time::timeout_at(deadline, DEADLINE.scope(deadline, work))
        .await
        .ok()
}

/// What is left of the deadline of the work running now, if it has one.
pub(super) fn remaining() -> Option<Duration> {
    DEADLINE
        .try_with(|deadline| deadline.saturating_duration_since(Instant::now()))
        .ok()
}

/// Runs `work` within the deadline of the caller if it has one, else within
/// [`UNATTENDED_LIMIT`]; work past it is dropped (its transaction, if any, is not committed by
/// us) and answers [`StoreError::Unavailable`].
pub async fn bounded<T, E>(work: impl Future<Output = Result<T, E>>) -> Result<T, E>
where
    E: From<StoreError>,
{
    // Boxed once, first: a command's or a batch's future is kilobytes large, and would otherwise
    // be held twice here (as the argument, and inside `within`'s future) and copied into each
    // wrapper (bench/README.md "Where the service's CPU goes").
    let work = Box::pin(work);
    if remaining().is_some() {
        return work.await;
    }
    within(UNATTENDED_LIMIT, work).await.unwrap_or_else(|| {
        Err(StoreError::Unavailable(sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("postgres did not answer within {UNATTENDED_LIMIT:?}"),
        )))
        .into())
    })
}
