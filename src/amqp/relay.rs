//! The outbox relay: publishes committed events to the outbound exchange, in order, and marks
//! each row published only after the broker confirmed it. At-least-once: a relay that dies
//! between the confirm and the mark leaves rows another relay publishes again, under the same
//! `message_id`.
//!
//! Relays on several instances take turns batch by batch (a transaction-scoped advisory lock),
//! which keeps each order's events in version order. A raw row (a replayed dead letter) is
//! published as it is to its own exchange (the inbound one), declared once per session. A relay
//! wakes when its own process committed events (in memory), on the NOTIFY any instance sends
//! after committing events (coalesced: README "Outbox and relay wake-up"), and polls slowly as a
//! fallback; however many wake-ups arrived meanwhile, one claim serves them all. It prunes old
//! published rows itself. Each row is published in a span under the trace
//! context stored with it, and carries that span's context as its `traceparent`, so its consumers
//! continue the trace of its cause (a replay's: the operator's request).
//!
//! (Over 300 lines because one relay session is one loop, read best in one place: claim, publish
//! both kinds of row, await the confirms, mark, prune and report the backlog. Publishing one row
//! is the part to move out if it grows.)

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Event};
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use tokio_util::sync::CancellationToken;

use super::connection::{AmqpError, Backoff, Nodes, reconnecting};
use super::trace_headers;
use crate::app::RelayWakeup;
use crate::config::{AmqpEndpoints, RelayConfig};
use crate::health::Signal;
use crate::store::StoreError;
use crate::store::outbox::{self, NOTIFY_CHANNEL, PendingEvent, PendingMessage};
use crate::telemetry::{TraceContext, continue_trace};

/// Rows deleted per pruning statement, to keep each delete short.
const PRUNE_BATCH: i64 = 1_000;

/// How long a batch may take to be published and confirmed before the relay gives up on the
/// connection (the rows stay unpublished and go again after the reconnect).
const BATCH_DEADLINE: Duration = Duration::from_secs(30);

pub struct Relay {
    pool: PgPool,
    nodes: Nodes,
    exchange: String,
    config: RelayConfig,
    ready: Signal,
    /// This process's commits of events.
    wakeup: Option<RelayWakeup>,
}

/// Why a batch stopped.
#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error(transparent)]
    Broker(#[from] AmqpError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<lapin::Error> for BatchError {
    fn from(error: lapin::Error) -> Self {
        BatchError::Broker(error.into())
    }
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
        }
    }

    /// Wakes at once when this process's application commits events (`App::relay_wakeup`), not
    /// only on a NOTIFY or the poll.
    pub fn woken_by(mut self, wakeup: RelayWakeup) -> Self {
        self.wakeup = Some(wakeup);
        self
    }

    /// Publishes until `shutdown`, reconnecting to the broker with backoff after failures.
    pub async fn run(self, shutdown: CancellationToken) {
        reconnecting("outbox relay", "relay", &self.ready, &shutdown, || async {
            let ended = self.session(&shutdown).await;
            if ended.is_err() {
                metrics::counter!("outbox_relay_failures_total").increment(1);
            }
            ended
        })
        .await;
    }

    async fn session(&self, shutdown: &CancellationToken) -> Result<(), AmqpError> {
        let connection = self.nodes.connect("order-service outbox relay").await?;
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        super::topology::declare_topic(&channel, &self.exchange).await?;
        self.ready.set(true);
        tracing::info!(exchange = %self.exchange, "outbox relay publishing");

        // The relay is idle most of the time: watch the connection so an outage lowers readiness
        // at once rather than at the next publish.
        let mut broker_events = connection.events_listener();
        let mut listener = self.listen().await;
        let mut db_backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
        let mut next_prune = Instant::now();
        let mut declared = HashSet::new();
        let result = loop {
            if shutdown.is_cancelled() {
                break Ok(());
            }
            if !channel.status().connected() {
                break Err(AmqpError::Disconnected);
            }
            let wait = match self.publish_batch(&channel, &mut declared).await {
                // A full batch: more are probably waiting.
                Ok(published) if published >= self.config.batch_size as usize => continue,
                Ok(_) => {
                    db_backoff.reset();
                    self.housekeeping(&mut next_prune).await;
                    self.config.poll_interval()
                }
                Err(BatchError::Broker(error)) => break Err(error),
                Err(BatchError::Store(error)) => {
                    metrics::counter!("outbox_relay_failures_total").increment(1);
                    let delay = db_backoff.next_delay();
                    tracing::warn!(%error, retry_in = ?delay, "outbox relay cannot reach postgres");
                    listener = None;
                    delay
                }
            };
            if listener.is_none() {
                listener = self.listen().await;
            }
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep(wait) => {}
                () = committed(self.wakeup.as_ref()) => drain(&mut listener),
                woke = notified(&mut listener) => if woke { drain(&mut listener) } else { listener = None },
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
        let mut listener = PgListener::connect_with(&self.pool).await.ok()?;
        listener.listen(NOTIFY_CHANNEL).await.ok()?;
        Some(listener)
    }

    /// Publishes the oldest unpublished events; returns how many were confirmed and marked.
    /// Stops at the first event the broker does not confirm, so nothing after it is marked out of
    /// order; the rest go again in the next batch.
    async fn publish_batch(
        &self,
        channel: &Channel,
        declared: &mut HashSet<String>,
    ) -> Result<usize, BatchError> {
        let Some(batch) = outbox::claim_batch(&self.pool, self.config.batch_size).await? else {
            return Ok(0);
        };
        let events = &batch.events;
        // A broker that blocks publishers (a memory or disk alarm) must not hold the lease, and
        // with it every instance's relay, forever: past the deadline the batch ends as a failure.
        let deadline = tokio::time::Instant::now() + BATCH_DEADLINE;
        let mut pending = Vec::with_capacity(events.len());
        // Each event's span lasts until the batch is confirmed.
        let mut spans = Vec::with_capacity(events.len());
        for event in events {
            // A raw message's exchange (the inbound one) is declared as the topology declares it,
            // so a replay never meets a missing exchange (which would close the channel).
            if let PendingMessage::Raw { exchange, .. } = &event.message
                && declared.insert(exchange.clone())
            {
                super::topology::declare_topic(channel, exchange).await?;
            }
            let (span, trace) = publish_span(event);
            let published =
                tokio::time::timeout_at(deadline, publish(channel, &self.exchange, event, &trace))
                    .await
                    .map_err(|_| AmqpError::Timeout)??;
            pending.push(published);
            spans.push(span);
        }
        let mut confirmed = Vec::with_capacity(events.len());
        let mut failure = None;
        for (event, confirm) in events.iter().zip(pending) {
            let Ok(confirm) = tokio::time::timeout_at(deadline, confirm).await else {
                failure = Some(AmqpError::Timeout);
                break;
            };
            match confirm {
                Ok(confirmation) if confirmation.is_ack() => {
                    confirmed.push(event.id);
                    let latency = (chrono::Utc::now() - event.created_at)
                        .to_std()
                        .unwrap_or_default();
                    metrics::histogram!("outbox_publish_latency_seconds")
                        .record(latency.as_secs_f64());
                }
                Ok(_) => {
                    failure = Some(AmqpError::Nacked);
                    break;
                }
                Err(error) => {
                    failure = Some(error.into());
                    break;
                }
            }
        }
        batch.finish(&confirmed).await?;
        metrics::counter!("outbox_published_total").increment(confirmed.len() as u64);
        match failure {
            Some(error) => Err(error.into()),
            None => Ok(confirmed.len()),
        }
    }

    /// Between batches: refresh the backlog gauge; prune when due.
    async fn housekeeping(&self, next_prune: &mut Instant) {
        if let Ok(backlog) = outbox::backlog(&self.pool).await {
            metrics::gauge!("outbox_backlog").set(backlog.events as f64);
            metrics::gauge!("outbox_oldest_unpublished_age_seconds")
                .set(backlog.oldest_age_seconds);
        }
        if Instant::now() < *next_prune {
            return;
        }
        *next_prune = Instant::now() + self.config.prune_interval();
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
        let pruned = outbox::prune(pool, retention, PRUNE_BATCH).await?;
        total += pruned;
        if pruned < PRUNE_BATCH as u64 {
            return Ok(total);
        }
    }
}

/// The span publishing `event`, under the trace context stored with it (a row without one, from
/// before the column, starts a trace), and that span's context, which the message carries.
fn publish_span(event: &PendingEvent) -> (tracing::Span, TraceContext) {
    let event_type = match &event.message {
        PendingMessage::Event { event_type, .. } => event_type,
        PendingMessage::Raw { routing_key, .. } => routing_key,
    };
    let span = tracing::info_span!(
        "publish",
        event_id = %event.event_id,
        event_type = %event_type,
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    let cause =
        TraceContext::from_headers(event.traceparent.as_deref(), event.tracestate.as_deref());
    let trace = continue_trace(&span, cause.as_ref());
    (span, trace)
}

async fn publish(
    channel: &Channel,
    exchange: &str,
    event: &PendingEvent,
    trace: &TraceContext,
) -> lapin::Result<lapin::PublisherConfirm> {
    let (exchange, routing_key, body, properties) = match &event.message {
        PendingMessage::Event {
            event_type,
            payload,
        } => {
            let mut headers = FieldTable::default();
            trace_headers::insert(&mut headers, trace);
            let properties = BasicProperties::default()
                .with_message_id(event.event_id.to_string().into())
                .with_content_type("application/json".into())
                .with_type(event_type.as_str().into())
                .with_app_id("order-service".into())
                .with_timestamp(u64::try_from(event.created_at.timestamp()).unwrap_or(0))
                .with_delivery_mode(2)
                .with_headers(headers);
            (
                exchange,
                event_type.as_str(),
                Cow::Owned(serde_json::to_vec(payload).unwrap_or_default()),
                properties,
            )
        }
        // A replayed dead letter: its own properties, under the replay's trace.
        PendingMessage::Raw {
            exchange,
            routing_key,
            body,
            properties,
        } => {
            let properties = super::properties::decode(properties);
            let headers = trace_headers::replaced(properties.headers().as_ref(), trace);
            (
                exchange.as_str(),
                routing_key.as_str(),
                Cow::Borrowed(body.as_slice()),
                properties.with_headers(headers),
            )
        }
    };
    channel
        .basic_publish(
            ShortString::try_new(exchange).unwrap_or_default(),
            ShortString::try_new(routing_key).unwrap_or_default(),
            BasicPublishOptions::default(),
            &body,
            properties,
        )
        .await
}

/// Waits for this process to commit events; without a wake-up, never returns.
async fn committed(wakeup: Option<&RelayWakeup>) {
    match wakeup {
        Some(wakeup) => wakeup.committed().await,
        None => std::future::pending().await,
    }
}

/// Takes the notifications already received, without waiting: the claim that follows serves
/// them all.
fn drain(listener: &mut Option<PgListener>) {
    if let Some(listener) = listener {
        while let Some(Ok(_)) = listener.recv().now_or_never() {}
    }
}

/// Waits for a NOTIFY; without a listener, never returns (the poll timer wakes the relay).
/// `false` when the listener broke.
async fn notified(listener: &mut Option<PgListener>) -> bool {
    match listener {
        Some(listener) => listener.recv().await.is_ok(),
        None => std::future::pending().await,
    }
}
