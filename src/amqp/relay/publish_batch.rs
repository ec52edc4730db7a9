//! One batch of the relay: read the rows after the cursor (docs/messaging.md "The outbox as a
//! log"), publish each, await the broker's confirms, then in the batch's transaction move the
//! cursor past the confirmed rows and set aside, with the reason, each row that cannot be
//! published (docs/messaging.md "Rows the relay sets aside"): one it cannot read, one AMQP cannot
//! address, a replay the broker returned as unroutable. Rows after a set-aside row go on; the
//! cursor stops before the first row of a failure (a nack, a timeout, a lost channel), which the
//! next batch reads again, so nothing is skipped.
//!
//! Order events are published back to back and their confirms awaited after. A raw row (a
//! replayed dead letter) is published `mandatory` and alone: lapin hands a returned message to
//! whichever confirm it completes first, so with nothing else in flight the return is surely this
//! row's.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use lapin::{Channel, Confirmation, PublisherConfirm};
use sqlx::PgPool;
use tokio::time::{Instant, timeout_at};

use super::outbox_message::{self, Unpublishable};
use crate::amqp::connection::AmqpError;
use crate::amqp::topology;
use crate::app::bounded;
use crate::store::StoreError;
use crate::store::outbox::{self, BatchRead, Horizon, SetAside, UnreadableRow};
use crate::telemetry::{error_chain, escaped};

/// How long a batch may take to be published and confirmed before the relay gives up on the
/// connection (the rows stay unpublished and go again after the reconnect).
const BATCH_DEADLINE: Duration = Duration::from_secs(30);

/// Why a batch stopped.
#[derive(Debug, thiserror::Error)]
pub(super) enum BatchError {
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

/// Where a batch goes: the channel, the outbound exchange, and the exchanges of raw rows this
/// session already declared.
pub(super) struct Target<'a> {
    pub channel: &'a Channel,
    pub exchange: &'a str,
    pub declared: &'a mut HashSet<String>,
}

/// A row published and not yet confirmed.
struct InFlight {
    id: i64,
    created_at: DateTime<Utc>,
    confirm: PublisherConfirm,
}

/// What a batch did to its rows.
#[derive(Default)]
struct Settled {
    published: Vec<i64>,
    set_aside: Vec<SetAside>,
    /// What stopped it; the rows not yet settled stay for the next batch.
    failure: Option<AmqpError>,
}

impl Settled {
    fn set_aside(&mut self, id: i64, reason: String) {
        self.set_aside.push(SetAside { id, reason });
    }
}

/// What a batch found: how many rows it read (each now published, set aside, or skipped as
/// published by a relay of 0.2.0), and whether rows wait behind the horizon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Published {
    pub read: usize,
    pub horizon: Horizon,
}

/// Publishes the rows after the cursor.
pub(super) async fn publish_batch(
    pool: &PgPool,
    limit: u32,
    target: Target<'_>,
) -> Result<Published, BatchError> {
    let mut batch = match bounded(outbox::read_batch(pool, limit)).await? {
        BatchRead::Batch(batch) => batch,
        BatchRead::Idle(horizon) => return Ok(Published { read: 0, horizon }),
        // The other relay publishes; it does not say what waits behind the horizon.
        BatchRead::Leased => {
            return Ok(Published {
                read: 0,
                horizon: Horizon { rows_behind: false },
            });
        }
    };
    let horizon = batch.horizon;
    let read = batch.read_count();
    let rows = std::mem::take(&mut batch.rows);
    // A broker that blocks publishers (a memory or disk alarm) must not hold the lease, and with
    // it every instance's relay, forever: past the deadline the batch ends as a failure.
    let deadline = Instant::now() + BATCH_DEADLINE;
    let mut settled = Settled::default();
    let mut in_flight = Vec::new();
    // Each row's span lasts until the batch is settled.
    let mut spans = Vec::with_capacity(rows.len());
    for row in &rows {
        let event = match row {
            Ok(event) => event,
            Err(unreadable) => {
                settled.set_aside(unreadable.id, undecodable(unreadable));
                continue;
            }
        };
        let (span, trace) = outbox_message::publish_span(event);
        spans.push(span);
        let message = match outbox_message::outgoing(target.exchange, event, &trace) {
            Ok(message) => message,
            Err(error) => {
                settled.set_aside(event.id, reason(&error));
                continue;
            }
        };
        let alone = message.mandatory;
        if alone {
            if !settle(&mut in_flight, &mut settled, deadline).await {
                break;
            }
            // Declared as the topology declares it, so a replay never meets a missing exchange
            // (which would close the channel).
            if target.declared.insert(message.exchange.to_string()) {
                topology::declare_topic(target.channel, message.exchange.as_str()).await?;
            }
        }
        // Boxed: lapin's publish future is kilobytes large, and would be copied per row.
        let publish = Box::pin(outbox_message::publish(target.channel, message));
        let confirm = timeout_at(deadline, publish)
            .await
            .map_err(|_| AmqpError::Timeout)??;
        in_flight.push(InFlight {
            id: event.id,
            created_at: event.created_at,
            confirm,
        });
        if alone && !settle(&mut in_flight, &mut settled, deadline).await {
            break;
        }
    }
    if settled.failure.is_none() {
        settle(&mut in_flight, &mut settled, deadline).await;
    }
    drop(in_flight);
    bounded(batch.finish(&settled.published, &settled.set_aside)).await?;
    metrics::counter!("outbox_published_total").increment(settled.published.len() as u64);
    if !settled.published.is_empty() {
        // How far the linger grows batches (docs/messaging.md "Batches that grow with load").
        metrics::histogram!("outbox_relay_batch_events").record(settled.published.len() as f64);
    }
    report(&settled.set_aside);
    drop(spans);
    match settled.failure {
        Some(error) => Err(error.into()),
        None => Ok(Published { read, horizon }),
    }
}

/// Awaits the confirms in flight, oldest first: an ack marks its row published, a returned
/// message sets it aside as unroutable. A nack, an error or the deadline stops there (`false`):
/// that row and those after it stay unpublished.
async fn settle(in_flight: &mut Vec<InFlight>, settled: &mut Settled, deadline: Instant) -> bool {
    for sent in in_flight.drain(..) {
        let confirmation = match timeout_at(deadline, sent.confirm).await {
            Ok(Ok(confirmation)) => confirmation,
            Ok(Err(error)) => {
                settled.failure = Some(error.into());
                return false;
            }
            Err(_) => {
                settled.failure = Some(AmqpError::Timeout);
                return false;
            }
        };
        match confirmation {
            Confirmation::Ack(None) => {
                settled.published.push(sent.id);
                let latency = (Utc::now() - sent.created_at).to_std().unwrap_or_default();
                metrics::histogram!("outbox_publish_latency_seconds").record(latency.as_secs_f64());
            }
            Confirmation::Ack(Some(returned)) => settled.set_aside(
                sent.id,
                format!(
                    "unroutable: the broker returned it ({} {}): no binding of exchange {:?} \
                     matches routing key {:?}",
                    returned.reply_code,
                    returned.reply_text,
                    returned.delivery.exchange.as_str(),
                    returned.delivery.routing_key.as_str(),
                ),
            ),
            Confirmation::Nack(_) | Confirmation::NotRequested => {
                settled.failure = Some(AmqpError::Nacked);
                return false;
            }
        }
    }
    true
}

fn undecodable(row: &UnreadableRow) -> String {
    format!("undecodable: {}", error_chain(&row.cause))
}

fn reason(error: &Unpublishable) -> String {
    format!("{}: {}", error.class(), error_chain(error))
}

/// Logs and counts the rows set aside, once their move committed.
fn report(set_aside: &[SetAside]) {
    for row in set_aside {
        tracing::error!(
            outbox_id = row.id,
            reason = %escaped(&row.reason),
            "outbox row set aside: it cannot be published (docs/messaging.md \"Rows the relay sets aside\")"
        );
    }
    metrics::counter!("outbox_events_set_aside_total").increment(set_aside.len() as u64);
}
