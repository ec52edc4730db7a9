//! The dead-letter consumer: parks every message of the dead-letter queue in Postgres (as
//! `dead_letter_record::dead_letter_of` reads it) and acknowledges it only after the commit, so a crash leaves
//! it in the queue. It holds at most [`PREFETCH`] messages, one parked at a time; a database that
//! cannot be reached is waited out with the message kept. It also keeps the `dead_letters_parked`
//! gauge (by reason class) fresh from the database: after it parks (at most once a second) and
//! every [`GAUGE_REFRESH`], so replays and discards, on any instance, show too; and, as often,
//! `dead_letters_last_resort`, what the dead-letter queue gave up on (`Topology::last_resort`),
//! and `inbox_ready_messages`, what waits in the inbox.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::dead_letter_record::{dead_letter_of, refused_unread};
use crate::amqp::connection::{AmqpError, Backoff, Nodes, consume, reconnecting};
use crate::amqp::topology::Topology;
use crate::app::App;
use crate::config::{AmqpConfig, AmqpEndpoints};
use crate::health::Signal;
use crate::telemetry::{error_chain, escaped};

/// Dead letters held unacknowledged at once. Small: a dead letter may be as large as the broker
/// allows a message to be, and the parker takes one at a time anyway
/// (docs/hostile-input.md#memory).
const PREFETCH: u16 = 1;
/// How often the gauge is refreshed when nothing is parked meanwhile.
const GAUGE_REFRESH: Duration = Duration::from_secs(15);
/// How soon after parking the gauge is refreshed: a flood of dead letters costs at most one count
/// a second, not one per message.
const GAUGE_AFTER_PARKING: Duration = Duration::from_secs(1);

pub struct Parker {
    app: App,
    nodes: Nodes,
    topology: Arc<Topology>,
    ready: Signal,
    max_message_bytes: usize,
}

impl Parker {
    pub fn new(app: App, endpoints: &AmqpEndpoints, config: &AmqpConfig, ready: Signal) -> Self {
        Self {
            app,
            nodes: Nodes::new(endpoints),
            topology: Arc::new(Topology::from_config(config)),
            ready,
            max_message_bytes: crate::config::DEFAULT_AMQP_MAX_MESSAGE_BYTES,
        }
    }

    /// The consumer's `AMQP_MAX_MESSAGE_BYTES`: a larger dead letter is one the consumer refused
    /// unread, and its reason says so.
    pub fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Self {
        self.max_message_bytes = max_message_bytes;
        self
    }

    /// Parks until `shutdown`, reconnecting (and re-declaring its queue) after failures.
    pub async fn run(self, shutdown: CancellationToken) {
        reconnecting(
            "dead-letter parker",
            "parker",
            &self.ready,
            &shutdown,
            || self.session(&shutdown),
        )
        .await;
    }

    async fn session(&self, shutdown: &CancellationToken) -> Result<(), AmqpError> {
        let connection = self
            .nodes
            .connect("order-service dead-letter parker")
            .await?;
        let channel = connection.create_channel().await?;
        self.topology.declare_dead_letter_side(&connection).await?;
        let mut deliveries = consume(
            &channel,
            &self.topology.dead_letter_queue,
            PREFETCH,
            "order-service-parker",
        )
        .await?;
        self.ready.set(true);
        tracing::info!(queue = %self.topology.dead_letter_queue, "parking dead letters");

        // Counted at once, then every GAUGE_REFRESH, and within GAUGE_AFTER_PARKING of parking.
        let mut next_refresh = Instant::now();
        let ended = loop {
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = tokio::time::sleep_until(next_refresh) => {
                    self.refresh_gauge().await;
                    self.count_last_resort(&channel).await?;
                    self.count_inbox(&connection).await;
                    next_refresh = Instant::now() + GAUGE_REFRESH;
                }
                next = deliveries.next() => match next {
                    Some(Ok(delivery)) => {
                        if !self.park(&delivery, shutdown).await? {
                            break Ok(());
                        }
                        next_refresh = next_refresh.min(Instant::now() + GAUGE_AFTER_PARKING);
                    }
                    Some(Err(error)) => break Err(error.into()),
                    None => break Err(AmqpError::ConsumerCancelled),
                },
            }
        };
        let _ = connection.close(200, "bye".into()).await;
        ended
    }

    /// Parks one dead letter and acknowledges it. While the database refuses, waits (the message
    /// stays unacknowledged); `false` when shutdown came first, leaving it to be redelivered.
    async fn park(
        &self,
        delivery: &Delivery,
        shutdown: &CancellationToken,
    ) -> Result<bool, AmqpError> {
        let mut letter = dead_letter_of(
            delivery.routing_key.as_str(),
            &delivery.properties,
            &delivery.data,
            self.topology.delivery_limit,
        );
        if delivery.data.len() > self.max_message_bytes {
            letter.reason = refused_unread(delivery.data.len(), self.max_message_bytes);
        }
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
        loop {
            match self.app.park(&letter).await {
                Ok(id) => {
                    tracing::info!(%id, reason = %escaped(&letter.reason), "parked a dead letter");
                    delivery.ack(BasicAckOptions::default()).await?;
                    return Ok(true);
                }
                Err(error) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(error = %escaped(&error_chain(&error)), retry_in = ?delay, "cannot park a dead letter now; keeping it");
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = shutdown.cancelled() => return Ok(false),
                    }
                }
            }
        }
    }

    /// Sets `inbox_ready_messages` to the messages waiting in the inbox that no consumer holds
    /// yet: the backlog an operator sees in the console and on the dashboard. (AMQP 0-9-1 says
    /// how many, not how old the oldest is.) On a channel of its own: the inbox is the consumer's
    /// to declare, and asking for one that does not exist (yet) closes the channel that asked,
    /// which must not be the parker's.
    async fn count_inbox(&self, connection: &lapin::Connection) {
        let counted = async {
            let channel = connection.create_channel().await?;
            let waiting = ready_messages(&channel, &self.topology.inbox).await?;
            metrics::gauge!("inbox_ready_messages").set(f64::from(waiting));
            let _ = channel.close(200, "counted".into()).await;
            Ok::<(), lapin::Error>(())
        };
        if let Err(error) = counted.await {
            tracing::debug!(error = %error, "could not count the inbox's messages");
        }
    }

    /// Sets `dead_letters_last_resort` to what the last resort holds (`Topology::last_resort`):
    /// dead letters the parker could not take, which only an operator can look at.
    async fn count_last_resort(&self, channel: &lapin::Channel) -> Result<(), AmqpError> {
        let held = ready_messages(channel, &self.topology.last_resort()).await?;
        metrics::gauge!("dead_letters_last_resort").set(f64::from(held));
        Ok(())
    }

    async fn refresh_gauge(&self) {
        match self.app.parked_by_class().await {
            Ok(counts) => {
                for (class, count) in counts {
                    let class: &'static str = class.into();
                    metrics::gauge!("dead_letters_parked", "class" => class).set(count as f64);
                }
            }
            Err(error) => {
                tracing::debug!(error = %error_chain(&error), "could not count parked dead letters");
            }
        }
    }
}

/// How many messages `queue` holds that no consumer holds yet, from a passive declare (which
/// closes `channel` if the queue does not exist).
async fn ready_messages(channel: &lapin::Channel, queue: &str) -> Result<u32, lapin::Error> {
    let declared = channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                passive: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await?;
    Ok(declared.message_count())
}
