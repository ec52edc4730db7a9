//! Waiting without sleeping blind: [`eventually`] polls a condition within a bound, and
//! [`block_on_detached`] runs cleanup to completion from a `Drop`, whatever runtime it is in.

use std::time::{Duration, Instant};

/// Polls `check` until it returns `Some`, or panics with `what` after `limit`. A bound on waiting
/// for asynchronous work, not a performance assertion.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < limit,
            "gave up waiting for {what} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs `work` to completion on a runtime of its own, in a thread of its own: for cleanup in
/// `Drop`, which may run inside (and block) the test's runtime.
pub(crate) fn block_on_detached(work: impl Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(work);
    })
    .join();
}
