//! Waking the outbox relays once a command committed events (docs/messaging.md "Outbox and relay
//! wake-up"), off the command's path: the relay of this process at once, in memory; the relays of
//! other instances with a Postgres NOTIFY that a background task sends — one at once, then at most
//! one per [`NOTIFY_EVERY`] however many commits follow, so a busy instance sends at most 50 a
//! second, not one per command. A NOTIFY is a statement of its own, never inside a writing
//! transaction (which would serialise commits). A wake-up that is lost only delays publishing until
//! the relays' next poll.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::Notify;

use crate::store::{self, StoreError, outbox};

/// The least time between two NOTIFYs of one process: the default linger, since under load a relay
/// reads no more often than that (docs/messaging.md "Batches that grow with load"), and each
/// NOTIFY costs every listening relay's backend a wake-up.
pub const NOTIFY_EVERY: Duration = Duration::from_millis(crate::config::DEFAULT_OUTBOX_LINGER_MS);

/// No NOTIFY task runs.
const IDLE: u8 = 0;
/// The task runs, and nothing was committed since its last NOTIFY.
const SENT: u8 = 1;
/// The task runs, and events were committed since its last NOTIFY.
const DUE: u8 = 2;

/// The wake-up of this process's relay and of the others'. Cheap to clone; clones share it.
#[derive(Clone)]
pub struct RelayWakeup {
    inner: Arc<Inner>,
}

struct Inner {
    pool: PgPool,
    local: Notify,
    notify: AtomicU8,
    /// NOTIFYs attempted, for the tests.
    #[cfg(test)]
    sent: std::sync::atomic::AtomicUsize,
}

impl RelayWakeup {
    pub(super) fn new(pool: PgPool) -> Self {
        Self {
            inner: Arc::new(Inner {
                pool,
                local: Notify::new(),
                notify: AtomicU8::new(IDLE),
                #[cfg(test)]
                sent: std::sync::atomic::AtomicUsize::new(0),
            }),
        }
    }

    /// Events were committed: wake the relays.
    pub(super) fn events_committed(&self) {
        self.inner.local.notify_one();
        if self.inner.notify.swap(DUE, Ordering::AcqRel) == IDLE {
            tokio::spawn(announce(self.inner.clone()));
        }
    }

    /// Wakes the relays of every instance now, and waits until the NOTIFY is sent: for a process
    /// about to exit (the command line), whose background task might not get to send it.
    pub(super) async fn now(&self) {
        if let Err(error) = send(&self.inner.pool).await {
            tracing::debug!(%error, "could not wake the outbox relays");
        }
    }

    /// Resolves once this process committed events since the last time it resolved (at once if
    /// it did meanwhile): what this process's relay waits for.
    pub async fn committed(&self) {
        self.inner.local.notified().await;
    }
}

/// Sends a NOTIFY while commits keep coming, at most one per [`NOTIFY_EVERY`]; ends when a period
/// passed without any.
async fn announce(inner: Arc<Inner>) {
    loop {
        inner.notify.store(SENT, Ordering::Release);
        #[cfg(test)]
        inner.sent.fetch_add(1, Ordering::AcqRel);
        if let Err(error) = send(&inner.pool).await {
            tracing::debug!(%error, "could not wake the other outbox relays");
        }
        tokio::time::sleep(NOTIFY_EVERY).await;
        if inner
            .notify
            .compare_exchange(SENT, IDLE, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
    }
}

async fn send(pool: &PgPool) -> Result<(), StoreError> {
    outbox::announce(&mut *store::acquire(pool).await?).await
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use sqlx::postgres::PgPoolOptions;

    use super::*;

    /// A wake-up whose NOTIFYs go nowhere (they fail, and are counted): the rest is in memory.
    fn wakeup() -> RelayWakeup {
        let pool = PgPoolOptions::new()
            .acquire_timeout(Duration::from_millis(20))
            .connect_lazy("postgres://nobody@127.0.0.1:1/nothing")
            .expect("a valid URL");
        RelayWakeup::new(pool)
    }

    fn sent(wakeup: &RelayWakeup) -> usize {
        wakeup.inner.sent.load(Ordering::Acquire)
    }

    async fn until(what: impl Fn() -> bool) {
        while !what() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn a_commit_wakes_this_process_relay_and_commits_meanwhile_make_one_wake_up() {
        let wakeup = wakeup();
        assert!(wakeup.committed().now_or_never().is_none(), "nothing yet");
        for _ in 0..3 {
            wakeup.events_committed();
        }
        assert!(wakeup.committed().now_or_never().is_some(), "woken at once");
        assert!(
            wakeup.committed().now_or_never().is_none(),
            "three commits before the relay looked are one wake-up"
        );
    }

    #[tokio::test]
    async fn a_burst_of_commits_sends_one_notify_and_a_commit_after_it_one_more() {
        let wakeup = wakeup();
        for _ in 0..100 {
            wakeup.events_committed();
        }
        until(|| sent(&wakeup) == 1).await;
        // Committed after that NOTIFY went out: another one must follow (within one period).
        wakeup.events_committed();
        until(|| wakeup.inner.notify.load(Ordering::Acquire) == IDLE).await;
        assert_eq!(
            sent(&wakeup),
            2,
            "one for the burst, one for the commit after it"
        );
    }
}
