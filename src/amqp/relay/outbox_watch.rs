//! The relay's watch, beside its publishing sessions: every `OUTBOX_POLL_MS`, whether the relay
//! publishes or not (the broker down, every batch failing), it refreshes the outbox gauges from
//! the database — `outbox_backlog`, `outbox_oldest_unpublished_age_seconds`, `outbox_set_aside`,
//! and what the horizon holds back: `outbox_behind_horizon` and `outbox_horizon_age_seconds`
//! (docs/messaging.md "The outbox as a log") — so the lag alerts see a stuck relay; and it says the
//! relay is stalled (not ready) while events wait and no batch has succeeded for
//! `OUTBOX_STALLED_AFTER_SECS` (docs/messaging.md "Rows the relay sets aside").

use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

use crate::app::bounded;
use crate::config::RelayConfig;
use crate::health::Signal;
use crate::store::outbox::{self, Backlog};
use crate::telemetry::error_chain;

/// When the relay last finished a batch without failure (or started).
#[derive(Debug)]
pub(super) struct Progress(Mutex<Instant>);

impl Progress {
    pub(super) fn new() -> Self {
        Self(Mutex::new(Instant::now()))
    }

    pub(super) fn made(&self) {
        if let Ok(mut last) = self.0.lock() {
            *last = Instant::now();
        }
    }

    fn since(&self) -> Duration {
        self.0.lock().map(|last| last.elapsed()).unwrap_or_default()
    }
}

/// Refreshes the gauges and the stall flag of `ready` until `shutdown`.
pub(super) async fn watch(
    pool: &PgPool,
    config: &RelayConfig,
    ready: &Signal,
    progress: &Progress,
    shutdown: &CancellationToken,
) {
    while !shutdown.is_cancelled() {
        match bounded(outbox::backlog(pool)).await {
            Ok(backlog) => {
                metrics::gauge!("outbox_backlog").set(backlog.events as f64);
                metrics::gauge!("outbox_oldest_unpublished_age_seconds")
                    .set(backlog.oldest_age_seconds);
                metrics::gauge!("outbox_set_aside").set(backlog.set_aside as f64);
                metrics::gauge!("outbox_behind_horizon").set(backlog.behind_horizon as f64);
                metrics::gauge!("outbox_horizon_age_seconds").set(backlog.horizon_age_seconds);
                ready.set_stalled(stalled(&backlog, progress.since(), config.stalled_after()));
            }
            // The relay's own batches log the outage, and readiness names the database.
            Err(error) => tracing::debug!(error = %error_chain(&error), "outbox backlog unknown"),
        }
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = tokio::time::sleep(config.poll_interval()) => {}
        }
    }
}

/// Stalled: events wait, and the relay has finished no batch for longer than `bound`.
fn stalled(backlog: &Backlog, since_progress: Duration, bound: Duration) -> bool {
    backlog.events > 0 && since_progress > bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(events: i64) -> Backlog {
        Backlog {
            events,
            oldest_age_seconds: 0.0,
            behind_horizon: 0,
            horizon_age_seconds: 0.0,
            set_aside: 0,
        }
    }

    #[test]
    fn a_relay_is_stalled_only_while_events_wait_past_the_bound_since_its_last_batch() {
        let bound = Duration::from_secs(60);
        assert!(stalled(&waiting(1), Duration::from_secs(61), bound));
        assert!(!stalled(&waiting(1), Duration::from_secs(59), bound));
        assert!(
            !stalled(&waiting(0), Duration::from_secs(3600), bound),
            "an idle relay is not stalled"
        );
    }
}
