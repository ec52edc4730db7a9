//! The inbound door: consumes the inbox, takes deliveries together — up to `AMQP_BATCH_SIZE`,
//! waiting at most `AMQP_BATCH_WAIT_MS` after the first for more (docs/messaging.md "Batched
//! consumer commits") — and hands each batch to a [`Worker`], which applies it and settles each
//! delivery strictly after the transaction committed. Several batches are in flight at once (up to
//! `AMQP_PREFETCH` deliveries). Reconnects with backoff; on shutdown stops consuming and lets
//! in-flight messages finish.

use std::sync::Arc;

use futures::StreamExt;
use lapin::message::Delivery;
use lapin::options::{BasicCancelOptions, BasicRejectOptions, ConfirmSelectOptions};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use tokio::sync::OnceCell;

use super::attempt_seal::AttemptSeal;
use super::settlement::{Settled, Settler};
use super::worker::Worker;
use crate::amqp::connection::{AmqpError, Nodes, consume, reconnecting};
use crate::amqp::topology::Topology;
use crate::app::App;
use crate::config::{AmqpConfig, AmqpEndpoints};
use crate::health::Signal;

pub struct Consumer {
    app: App,
    nodes: Nodes,
    config: Arc<AmqpConfig>,
    topology: Arc<Topology>,
    ready: Signal,
    settled: Settled,
    max_message_bytes: usize,
    /// Read from the database by the first session, then kept.
    seal: OnceCell<Arc<AttemptSeal>>,
}

impl Consumer {
    pub fn new(app: App, endpoints: &AmqpEndpoints, config: AmqpConfig, ready: Signal) -> Self {
        Self {
            app,
            nodes: Nodes::new(endpoints),
            topology: Arc::new(Topology::from_config(&config)),
            config: Arc::new(config),
            ready,
            settled: Settled::default(),
            max_message_bytes: crate::config::DEFAULT_AMQP_MAX_MESSAGE_BYTES,
            seal: OnceCell::new(),
        }
    }

    /// Larger messages are dead-lettered without being parsed.
    pub fn with_max_message_bytes(mut self, max_message_bytes: usize) -> Self {
        self.max_message_bytes = max_message_bytes;
        self
    }

    pub fn settled(&self) -> Settled {
        self.settled.clone()
    }

    /// Consumes until `shutdown`, reconnecting (and re-declaring the topology) after failures.
    pub async fn run(self, shutdown: CancellationToken) {
        reconnecting("amqp consumer", "consumer", &self.ready, &shutdown, || {
            self.session(&shutdown)
        })
        .await;
    }

    /// The seal of retry counts, under the key every instance shares (`attempt_seal`).
    async fn seal(&self) -> Result<Arc<AttemptSeal>, AmqpError> {
        self.seal
            .get_or_try_init(|| async {
                let key = self.app.attempt_seal_key().await?;
                AttemptSeal::new(&key).map(Arc::new)
            })
            .await
            .cloned()
            .map_err(AmqpError::AttemptSealKey)
    }

    /// One connection's life: declare, consume, and on its end wait for in-flight messages.
    async fn session(&self, shutdown: &CancellationToken) -> Result<(), AmqpError> {
        let seal = self.seal().await?;
        let connection = self.nodes.connect("order-service consumer").await?;
        self.topology.declare_inbox_side(&connection).await?;
        let channel = connection.create_channel().await?;
        let publisher = connection.create_channel().await?;
        publisher
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let mut deliveries = consume(
            &channel,
            &self.topology.inbox,
            self.config.prefetch,
            "order-service",
        )
        .await?;
        self.ready.set(true);
        self.settled.session_started();
        tracing::info!(
            queue = %self.topology.inbox,
            prefetch = self.config.prefetch,
            batch_size = self.config.batch_size,
            "consuming"
        );

        // Cancelled when this session ends, so handlers waiting on the database give up their
        // (then unackable) deliveries instead of holding the reconnect back.
        let session = shutdown.child_token();
        let broken = CancellationToken::new();
        let settler = Settler::new(
            publisher,
            channel.clone(),
            self.config.clone(),
            self.topology.clone(),
            broken.clone(),
            self.settled.clone(),
            seal,
        );
        let worker = Arc::new(Worker::new(
            self.app.clone(),
            self.config.clone(),
            settler,
            session.clone(),
            self.max_message_bytes,
        ));
        let in_flight = TaskTracker::new();
        let ended = loop {
            tokio::select! {
                () = shutdown.cancelled() => break Ok(()),
                () = broken.cancelled() => break Err(AmqpError::SettleFailed),
                next = deliveries.next() => {
                    let first = match next {
                        Some(Ok(delivery)) => delivery,
                        Some(Err(error)) => break Err(error.into()),
                        None => break Err(AmqpError::ConsumerCancelled),
                    };
                    let (batch, end) = collect(first, &mut deliveries, &self.config).await;
                    let batch = match refuse_oversized(batch, self.max_message_bytes).await {
                        Ok(batch) => batch,
                        Err(error) => break Err(error.into()),
                    };
                    if !batch.is_empty() {
                        // In the order the channel numbered them, before any can be settled.
                        for delivery in &batch {
                            worker.received(delivery.delivery_tag).await;
                        }
                        let worker = worker.clone();
                        // Boxed: a batch's future is tens of kilobytes, which spawning would
                        // otherwise copy several times (bench/README.md "Where the service's CPU
                        // goes").
                        in_flight.spawn(Box::pin(async move { worker.handle(batch).await }));
                    }
                    if let Some(end) = end {
                        break end;
                    }
                }
            }
        };
        if ended.is_ok() {
            tracing::info!("stopping: finishing in-flight messages");
            let _ = channel
                .basic_cancel(deliveries.tag(), BasicCancelOptions::default())
                .await;
        } else {
            session.cancel();
        }
        in_flight.close();
        in_flight.wait().await;
        session.cancel();
        let _ = connection.close(200, "bye".into()).await;
        ended
    }
}

/// `batch` without its deliveries larger than `max_message_bytes`, which are rejected at once
/// without requeueing: the broker dead-letters them itself (the parker names why), so their
/// bodies are neither parsed nor copied nor held a moment longer (docs/hostile-input.md#memory).
async fn refuse_oversized(
    batch: Vec<Delivery>,
    max_message_bytes: usize,
) -> Result<Vec<Delivery>, lapin::Error> {
    let mut kept = Vec::with_capacity(batch.len());
    for delivery in batch {
        if delivery.data.len() <= max_message_bytes {
            kept.push(delivery);
            continue;
        }
        tracing::warn!(
            bytes = delivery.data.len(),
            limit = max_message_bytes,
            "refusing an oversized message unread; the broker dead-letters it"
        );
        metrics::counter!("amqp_messages_total", "type" => "unparsable", "outcome" => "refused_oversized")
            .increment(1);
        delivery
            .reject(BasicRejectOptions { requeue: false })
            .await?;
    }
    Ok(kept)
}

/// A batch: `first` and the deliveries that follow it, up to `AMQP_BATCH_SIZE` (and never more
/// than the prefetch lets the broker send: [`AmqpConfig::batch_limit`]), waiting at most
/// `AMQP_BATCH_WAIT_MS` after `first` for them. Also how the stream ended, if it did meanwhile.
async fn collect(
    first: Delivery,
    deliveries: &mut lapin::Consumer,
    config: &AmqpConfig,
) -> (Vec<Delivery>, Option<Result<(), AmqpError>>) {
    let size = config.batch_limit();
    let mut batch = Vec::with_capacity(size);
    batch.push(first);
    let deadline = tokio::time::Instant::now() + config.batch_wait();
    while batch.len() < size {
        tokio::select! {
            // Deliveries at hand first: under load a batch fills without waiting.
            biased;
            next = deliveries.next() => match next {
                Some(Ok(delivery)) => batch.push(delivery),
                Some(Err(error)) => return (batch, Some(Err(error.into()))),
                None => return (batch, Some(Err(AmqpError::ConsumerCancelled))),
            },
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    (batch, None)
}
