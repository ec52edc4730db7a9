//! The time a command has to take effect: a REST request's time limit (README "Limits and
//! timeouts"), set around the request by the HTTP door. A command's write carries what is left of
//! it to the server (`store::order_changes`, `store::dead_letter_actions`), which refuses to take
//! effect past it: a request answered 503 for its time limit leaves nothing behind, even when its
//! statement was still waiting for a lock. Commands without one (messages, the expiry sweep) have
//! all the time they need.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Runs `work` with `limit` from now to take effect, and gives up on it then (`None`).
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
