//! Settling the messages of a batch whose commands are through: first every replacement (a
//! retry to its delay queue, or a dead letter) is published and confirmed by the broker, then the
//! originals are acknowledged — in as few acks as the channel's window allows (`ack_window`). A
//! replacement carries the original body with fresh, bounded properties (see `replacement`) and
//! the trace of the message's span. A failed publish or ack ends the session: the unsettled
//! messages come back, and the data model absorbs what they already did.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::future::join_all;
use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use lapin::{BasicProperties, Channel, Confirmation};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::ack_window::Acknowledger;
use super::attempt_seal::AttemptSeal;
use super::delivery::Message;
use super::disposition::Disposition;
use super::replacement::republished_properties;
use crate::amqp::connection::AmqpError;
use crate::amqp::topology::Topology;
use crate::config::AmqpConfig;
use crate::telemetry::escaped;

/// A disposition that settles the message now: every one but [`Disposition::Wait`]. A type of
/// its own so that a message that must wait cannot reach the broker by mistake.
pub(super) enum Settlement {
    Ack(&'static str),
    Retry(String),
    DeadLetter(String),
}

impl Settlement {
    /// The settlement `disposition` asks for, or the reason to wait.
    pub(super) fn of(disposition: Disposition) -> Result<Self, String> {
        match disposition {
            Disposition::Ack { outcome } => Ok(Settlement::Ack(outcome)),
            Disposition::Retry { reason } => Ok(Settlement::Retry(reason)),
            Disposition::DeadLetter { reason } => Ok(Settlement::DeadLetter(reason)),
            Disposition::Wait { reason } => Err(reason),
        }
    }
}

/// Settles messages on one session's channels: publishes replacements on `publisher` (with
/// confirms) and acknowledges originals on the consuming channel.
pub(super) struct Settler {
    publisher: Channel,
    acks: Acknowledger,
    config: Arc<AmqpConfig>,
    topology: Arc<Topology>,
    /// Cancelled when a settlement failed: the channels can no longer be trusted (the broker may
    /// have closed the publishing channel), so the session ends and reconnects.
    broken: CancellationToken,
    settled: Settled,
    /// Seals the attempt count a retry or dead letter carries.
    seal: Arc<AttemptSeal>,
}

impl Settler {
    pub(super) fn new(
        publisher: Channel,
        consuming: Channel,
        config: Arc<AmqpConfig>,
        topology: Arc<Topology>,
        broken: CancellationToken,
        settled: Settled,
        seal: Arc<AttemptSeal>,
    ) -> Self {
        Self {
            publisher,
            acks: Acknowledger::new(consuming),
            config,
            topology,
            broken,
            settled,
            seal,
        }
    }

    /// What seals and reads the attempt counts of this session's deliveries.
    pub(super) fn seal(&self) -> &AttemptSeal {
        &self.seal
    }

    /// Notes a delivery of the consuming channel, before any can be settled.
    pub(super) async fn received(&self, delivery_tag: u64) {
        self.acks.received(delivery_tag).await;
    }

    /// Publishes the replacements (all confirmed), then acknowledges the originals, and counts
    /// each message with how it ended.
    pub(super) async fn settle(&self, settling: Vec<(Message, Settlement)>) {
        if settling.is_empty() {
            return;
        }
        let replaced = join_all(settling.iter().map(|(message, settlement)| {
            self.replace(message, settlement)
                .instrument(message.span.clone())
        }))
        .await;
        let tags: Vec<u64> = settling
            .iter()
            .zip(&replaced)
            .filter(|(_, replaced)| replaced.is_ok())
            .map(|((message, _), _)| message.delivery.delivery_tag)
            .collect();
        let acked = self.acks.ack(&tags).await.map_err(AmqpError::from);
        for ((message, _), replaced) in settling.into_iter().zip(replaced) {
            let outcome = match (replaced, &acked) {
                (Ok(outcome), Ok(())) => {
                    self.settled.record(outcome);
                    outcome
                }
                (Err(error), _) => self.unsettled(&message, &error),
                (Ok(_), Err(error)) => self.unsettled(&message, error),
            };
            message.finish(outcome);
        }
    }

    fn unsettled(&self, message: &Message, error: &AmqpError) -> &'static str {
        message.span.in_scope(|| {
            tracing::warn!(%error, "could not settle the message; it will be redelivered");
        });
        self.broken.cancel();
        "unsettled"
    }

    /// Publishes what replaces the original, if anything, and waits for the broker's confirm;
    /// returns how the message ended.
    async fn replace(
        &self,
        message: &Message,
        settlement: &Settlement,
    ) -> Result<&'static str, AmqpError> {
        let attempt = message.attempt;
        match settlement {
            Settlement::Ack(outcome) => {
                tracing::debug!(outcome, "applied");
                Ok(outcome)
            }
            Settlement::Retry(reason) if attempt < self.config.max_attempts => {
                let delay = self.config.retry_delay(attempt);
                tracing::info!(reason = %escaped(reason), ?delay, "premature; retrying later");
                let properties = republished_properties(
                    &message.delivery,
                    attempt + 1,
                    &self.seal,
                    reason,
                    &message.trace,
                );
                let queue = self.topology.retry_queue(delay);
                self.publish("", &queue, message, properties).await?;
                Ok("retried")
            }
            Settlement::Retry(reason) => {
                let reason = format!("{reason} (gave up after {attempt} attempts)");
                self.dead_letter(message, &reason).await?;
                Ok("dead_lettered")
            }
            Settlement::DeadLetter(reason) => {
                self.dead_letter(message, reason).await?;
                Ok("dead_lettered")
            }
        }
    }

    async fn dead_letter(&self, message: &Message, reason: &str) -> Result<(), AmqpError> {
        tracing::warn!(reason = %escaped(reason), "dead-lettering");
        let delivery = &message.delivery;
        let properties = republished_properties(
            delivery,
            message.attempt,
            &self.seal,
            reason,
            &message.trace,
        );
        let routing_key = delivery.routing_key.as_str().to_owned();
        self.publish(
            &self.topology.dead_letter_exchange,
            &routing_key,
            message,
            properties,
        )
        .await
    }

    /// Publishes the original body with `properties`, `mandatory`, and waits for the broker's
    /// confirm. A message no queue took (an operator deleted a delay queue or the dead-letter
    /// queue's binding) comes back: the original stays unacknowledged, and the session ends and
    /// reconnects, declaring the topology again.
    async fn publish(
        &self,
        exchange: &str,
        routing_key: &str,
        message: &Message,
        properties: BasicProperties,
    ) -> Result<(), AmqpError> {
        let confirm = self
            .publisher
            .basic_publish(
                ShortString::from(exchange),
                ShortString::from(routing_key),
                BasicPublishOptions {
                    mandatory: true,
                    ..BasicPublishOptions::default()
                },
                &message.delivery.data,
                properties,
            )
            .await?
            .await?;
        match confirm {
            Confirmation::Nack(_) => Err(AmqpError::Nacked),
            Confirmation::Ack(Some(_)) => Err(AmqpError::Unroutable {
                exchange: exchange.to_owned(),
            }),
            Confirmation::Ack(None) | Confirmation::NotRequested => Ok(()),
        }
    }
}

/// How many deliveries this consumer has settled (acknowledged after applying, retrying or
/// dead-lettering), and how many of those went to the retry path and will come back. Lets tests
/// and benchmarks know when a batch is through: `settled == published + retried`. Also counts
/// the sessions (connections that started consuming): more than one means it reconnected.
#[derive(Clone, Default, Debug)]
pub struct Settled {
    settled: Arc<AtomicU64>,
    retried: Arc<AtomicU64>,
    sessions: Arc<AtomicU64>,
}

impl Settled {
    pub fn count(&self) -> u64 {
        self.settled.load(Ordering::Relaxed)
    }

    pub fn retried(&self) -> u64 {
        self.retried.load(Ordering::Relaxed)
    }

    /// Sessions that started consuming; each one after the first is a reconnect.
    pub fn sessions(&self) -> u64 {
        self.sessions.load(Ordering::Relaxed)
    }

    pub(super) fn session_started(&self) {
        self.sessions.fetch_add(1, Ordering::Relaxed);
    }

    fn record(&self, outcome: &str) {
        if outcome == "retried" {
            self.retried.fetch_add(1, Ordering::Relaxed);
        }
        self.settled.fetch_add(1, Ordering::Relaxed);
    }
}
