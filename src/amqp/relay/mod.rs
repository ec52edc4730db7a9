//! The outbox relay: publishes committed events to the outbound exchange, in order, reading the
//! outbox as a log behind a cursor it moves only after the broker confirmed (docs/messaging.md
//! "The outbox as a log"). At-least-once: a relay that dies between the confirm and the cursor's
//! commit leaves rows another relay publishes again, under the same `message_id`. A row it cannot
//! publish is set aside with its reason, and the rows after it go on (docs/messaging.md "Rows the
//! relay sets aside").
//!
//! Relays on several instances take turns batch by batch (a transaction-scoped advisory lock),
//! which keeps each order's events in version order. Rows committed while an older transaction
//! still runs wait behind the horizon; no notification says when it moves, so the relay then
//! looks again after 5 ms, doubling up to the poll interval while they wait, and meanwhile lets
//! commits gather instead of reading at each. After a read that found events, the next waits out
//! the linger, so under load events gather into batches that grow with the rate (docs/messaging.md
//! "Batches that grow with load"). A raw row (a replayed dead letter) is
//! published as it is to its own exchange (the inbound one), declared once per session. A relay
//! wakes when its own process committed events (in memory), on the NOTIFY any instance sends after
//! committing events (coalesced: docs/messaging.md "Outbox and relay wake-up"), and polls slowly as
//! a fallback; however many wake-ups arrived meanwhile, one read serves them all. It prunes old
//! published rows itself. Each row is published in a span under the trace context stored with it,
//! and carries that span's context as its `traceparent`, so its consumers continue the trace of its
//! cause (a replay's: the operator's request).
//!
//! Here the session loop; a batch's life in `publish_batch`, the message a row becomes in
//! `outbox_message`, and in `outbox_watch` what runs beside the sessions: the backlog gauges and
//! whether the relay is stalled.

mod outbox_message;
mod outbox_watch;
mod publish_batch;

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::Event;
use lapin::options::ConfirmSelectOptions;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use self::outbox_watch::{Progress, watch};
use self::publish_batch::{BatchError, Target, publish_batch};
use crate::amqp::EventStream;
use crate::amqp::connection::{AmqpError, Backoff, Nodes, reconnecting};
use crate::app::{RelayWakeup, bounded};
use crate::config::{AmqpEndpoints, RelayConfig};
use crate::health::Signal;
use crate::store::StoreError;
use crate::store::outbox::{self, NOTIFY_CHANNEL};
use crate::telemetry::error_chain;

/// Rows deleted per pruning statement, to keep each delete short.
const PRUNE_BATCH: i64 = 1_000;

/// The first look again while rows wait behind the horizon; it doubles up to `OUTBOX_POLL_MS`.
const HORIZON_FIRST_LOOK: Duration = Duration::from_millis(5);

pub struct Relay {
    pool: PgPool,
    nodes: Nodes,
    exchange: String,
    config: RelayConfig,
    ready: Signal,
    /// This process's commits of events.
    wakeup: Option<RelayWakeup>,
    progress: Progress,
    /// Where every published event is kept too, if anywhere.
    stream: Option<EventStream>,
}

impl Relay {
    pub fn new(
        pool: PgPool,
        endpoints: &AmqpEndpoints,
        exchange: String,
        config: RelayConfig,
        ready: Signal,
    ) -> Self {
        Self {
            pool,
            nodes: Nodes::new(endpoints),
            exchange,
            config,
            ready,
            wakeup: None,
            progress: Progress::new(),
            stream: None,
        }
    }

    /// Keeps every event it publishes in `stream` too (`AMQP_EVENT_STREAM_ENABLED`): declared,
    /// and bound to the exchange, at the start of every session, before anything is published.
    pub fn keeping_events_in(mut self, stream: Option<EventStream>) -> Self {
        self.stream = stream;
        self
    }

    /// Wakes at once when this process's application commits events (`App::relay_wakeup`), not
    /// only on a NOTIFY or the poll.
    pub fn woken_by(mut self, wakeup: RelayWakeup) -> Self {
        self.wakeup = Some(wakeup);
        self
    }

    /// Publishes until `shutdown`, reconnecting to the broker with backoff after failures, and
    /// meanwhile watches the backlog (`outbox_watch`).
    pub async fn run(self, shutdown: CancellationToken) {
        let publishing = reconnecting("outbox relay", "relay", &self.ready, &shutdown, || async {
            let ended = Box::pin(self.session(&shutdown)).await;
            if ended.is_err() {
                metrics::counter!("outbox_relay_failures_total").increment(1);
            }
            ended
        });
        let watching = watch(
            &self.pool,
            &self.config,
            &self.ready,
            &self.progress,
            &shutdown,
        );
        tokio::join!(publishing, watching);
    }

    async fn session(&self, shutdown: &CancellationToken) -> Result<(), AmqpError> {
        let connection = self.nodes.connect("order-service outbox relay").await?;
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        crate::amqp::topology::declare_topic(&channel, &self.exchange).await?;
        if let Some(stream) = &self.stream {
            stream.declare(&connection).await?;
        }
        self.ready.set(true);
        tracing::info!(exchange = %self.exchange, "outbox relay publishing");

        // The relay is idle most of the time: watch the connection so an outage lowers readiness
        // at once rather than at the next publish.
        let mut broker_events = connection.events_listener();
        let mut listener = self.listen().await;
        let mut db_backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
        let mut horizon_looks = Backoff::new(HORIZON_FIRST_LOOK, self.config.poll_interval());
        let mut next_prune = Some(Instant::now());
        let mut declared = HashSet::new();
        let result = loop {
            if shutdown.is_cancelled() {
                break Ok(());
            }
            if !channel.status().connected() {
                break Err(AmqpError::Disconnected);
            }
            let target = Target {
                channel: &channel,
                exchange: &self.exchange,
                declared: &mut declared,
            };
            let read_at = Instant::now();
            // Boxed: a batch's future is kilobytes large, and would be copied into this loop's.
            let batch = Box::pin(publish_batch(&self.pool, self.config.batch_size, target)).await;
            if batch.is_ok() {
                self.progress.made();
                self.ready.set_stalled(false);
            }
            let ahead = matches!(
                batch,
                Err(BatchError::Store(StoreError::OutboxAhead { .. }))
            );
            metrics::gauge!("outbox_cursor_ahead").set(if ahead { 1.0 } else { 0.0 });
            // While rows wait behind the horizon, only the timer wakes the relay: commits keep
            // coming under load, and reading at each would find the newest rows behind the
            // horizon again (an idle transaction per commit); waiting gathers them into a batch.
            let mut behind = false;
            // After a read that found events, the next waits out the linger (docs/messaging.md
            // "Batches that grow with load"), whatever wakes the relay meanwhile.
            let lingers = matches!(&batch, Ok(published) if published.read > 0);
            let wait = match batch {
                // A full batch: more are probably waiting.
                Ok(published) if published.read >= self.config.batch_size as usize => continue,
                Ok(published) => {
                    db_backoff.reset();
                    self.housekeeping(&mut next_prune).await;
                    behind = published.horizon.rows_behind;
                    // The wait grows only while looks find nothing to publish.
                    if published.read > 0 || !behind {
                        horizon_looks.reset();
                    }
                    if behind {
                        horizon_looks.next_delay()
                    } else {
                        self.config.poll_interval()
                    }
                }
                Err(BatchError::Broker(error)) => break Err(error),
                Err(BatchError::Store(error)) => {
                    metrics::counter!("outbox_relay_failures_total").increment(1);
                    let delay = db_backoff.next_delay();
                    let cause = error_chain(&error);
                    if matches!(error, StoreError::Unavailable(_)) {
                        tracing::warn!(error = %cause, retry_in = ?delay, "outbox relay cannot reach postgres");
                    } else {
                        tracing::error!(error = %cause, retry_in = ?delay, "outbox relay cannot read its batch or move its cursor");
                    }
                    listener = None;
                    delay
                }
            };
            if listener.is_none() {
                listener = self.listen().await;
            }
            let waiting_since = Instant::now();
            if lingers {
                let linger = self.config.linger().saturating_sub(read_at.elapsed());
                tokio::select! {
                    () = shutdown.cancelled() => break Ok(()),
                    () = tokio::time::sleep(linger) => {}
                }
            }
            // Wake-ups that came during the linger are still pending: the read follows at once.
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep(wait.saturating_sub(waiting_since.elapsed())) => {}
                () = committed(self.wakeup.as_ref()), if !behind => drain(&mut listener),
                woke = notified(&mut listener), if !behind => if woke { drain(&mut listener) } else { listener = None },
                event = broker_events.next() => match event {
                    Some(Event::Error(error)) => break Err(error.into()),
                    None => break Err(AmqpError::Disconnected),
                    Some(_) => {}
                },
            }
        };
        let _ = connection.close(200, "bye".into()).await;
        result
    }

    async fn listen(&self) -> Option<PgListener> {
        let listening = async {
            let mut listener = Box::pin(PgListener::connect_with(&self.pool)).await?;
            Box::pin(listener.listen(NOTIFY_CHANNEL)).await?;
            Ok::<_, StoreError>(listener)
        };
        bounded(listening).await.ok()
    }

    /// Between batches: prune when due (never again once the interval is too long for the clock).
    async fn housekeeping(&self, next_prune: &mut Option<Instant>) {
        if next_prune.is_none_or(|due| Instant::now() < due) {
            return;
        }
        *next_prune = Instant::now().checked_add(self.config.prune_interval());
        match prune(&self.pool, self.config.retention()).await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "pruned published outbox rows"),
            Err(error) => tracing::warn!(%error, "could not prune the outbox"),
        }
    }
}

/// Deletes published rows older than `retention`, in small batches; returns how many went.
pub async fn prune(pool: &PgPool, retention: Duration) -> Result<u64, StoreError> {
    let mut total = 0;
    loop {
        let pruned = bounded(outbox::prune(pool, retention, PRUNE_BATCH)).await?;
        total += pruned;
        if pruned < PRUNE_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// Waits for this process to commit events; without a wake-up, never returns.
async fn committed(wakeup: Option<&RelayWakeup>) {
    match wakeup {
        Some(wakeup) => wakeup.committed().await,
        None => std::future::pending().await,
    }
}

/// Takes the notifications already received, without waiting: the read that follows serves
/// them all.
fn drain(listener: &mut Option<PgListener>) {
    if let Some(listener) = listener {
        while listener.next_buffered().is_some() {}
    }
}

/// Waits for a NOTIFY; without a listener, never returns (the poll timer wakes the relay).
/// `false` when the listener broke.
async fn notified(listener: &mut Option<PgListener>) -> bool {
    match listener {
        // Boxed: sqlx's receive future is kilobytes large, and this one waits in a `select!`.
        Some(listener) => Box::pin(listener.recv()).await.is_ok(),
        None => std::future::pending().await,
    }
}
