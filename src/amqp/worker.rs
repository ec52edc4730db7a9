//! One delivery's life: parse it, run its command through [`apply`] (the same command the REST
//! API runs), decide with [`decide`], and settle it — the original is acknowledged only after its
//! command committed, or after its replacement (a retry or a dead letter) is confirmed.
//! A replacement carries the original body with fresh, bounded properties (see `republish`).
//! Each delivery is handled in a span of its own that continues the message's `traceparent` (or
//! starts a trace): the events its command writes and its replacement carry that span's context.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicPublishOptions};
use lapin::types::ShortString;
use lapin::{BasicProperties, Channel};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::connection::{AmqpError, Backoff};
use super::consumer::Settled;
use super::decision::{Disposition, decide};
use super::envelope::{self, Envelope, InboundEvent};
use super::republish::{attempt_of, republished_properties};
use super::topology::Topology;
use super::trace_headers;
use crate::app::App;
use crate::config::AmqpConfig;
use crate::domain::{Cause, ReasonClass};
use crate::telemetry::{TraceContext, continue_trace, escaped};

/// Everything a delivery's handler needs.
pub(super) struct Worker {
    pub(super) app: App,
    pub(super) publisher: Channel,
    pub(super) config: Arc<AmqpConfig>,
    pub(super) topology: Arc<Topology>,
    pub(super) session: CancellationToken,
    /// Cancelled when a settlement failed: the channels can no longer be trusted (the broker may
    /// have closed the publishing channel), so the session ends and reconnects.
    pub(super) broken: CancellationToken,
    pub(super) settled: Settled,
    pub(super) max_message_bytes: usize,
}

impl Worker {
    pub(super) async fn handle(&self, delivery: Delivery) {
        let started = Instant::now();
        let attempt = attempt_of(&delivery.properties);
        let parsed = envelope::parse_bounded(&delivery.data, self.max_message_bytes);
        let (event_id, event_type, order_id) = match &parsed {
            Ok(e) => (
                e.event_id.to_string(),
                e.event_type,
                e.event.order_id().to_string(),
            ),
            Err(_) => (String::new(), "unparsable", String::new()),
        };
        if let Ok(envelope) = &parsed {
            // How late the message is handled: the publisher's clock against ours, so a skew
            // shows too; never below 0.
            let age = (chrono::Utc::now() - envelope.occurred_at)
                .to_std()
                .unwrap_or_default();
            metrics::histogram!("amqp_message_age_seconds", "type" => event_type)
                .record(age.as_secs_f64());
        }
        let span = tracing::info_span!(
            "amqp_message",
            %event_id,
            %event_type,
            %order_id,
            attempt,
            trace_id = tracing::field::Empty,
            span_id = tracing::field::Empty,
        );
        let sender = trace_headers::parent(delivery.properties.headers().as_ref());
        let trace = continue_trace(&span, sender.as_ref());
        async move {
            let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
            let disposition = loop {
                let disposition = match &parsed {
                    Err(poison) => Disposition::DeadLetter {
                        reason: ReasonClass::Poison.reason(&poison.to_string()),
                    },
                    Ok(envelope) => apply(&self.app, envelope, &trace).await,
                };
                let Disposition::Wait { reason } = disposition else {
                    break disposition;
                };
                let delay = backoff.next_delay();
                tracing::warn!(reason = %escaped(&reason), retry_in = ?delay, "cannot process now; keeping the message");
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    // Left unacknowledged: the broker redelivers it to whoever consumes next.
                    () = self.session.cancelled() => return,
                }
            };
            let outcome = match self.settle(&delivery, attempt, disposition, &trace).await {
                Ok(outcome) => {
                    self.settled.record(outcome);
                    outcome
                }
                Err(error) => {
                    tracing::warn!(%error, "could not settle the message; it will be redelivered");
                    self.broken.cancel();
                    "unsettled"
                }
            };
            metrics::counter!("amqp_messages_total", "type" => event_type, "outcome" => outcome)
                .increment(1);
            metrics::histogram!("amqp_message_duration_seconds", "type" => event_type)
                .record(started.elapsed().as_secs_f64());
        }
        .instrument(span)
        .await
    }

    /// Acts on the decision; the original is acknowledged only once its replacement (retry or
    /// dead letter), carrying `trace`, is confirmed by the broker.
    async fn settle(
        &self,
        delivery: &Delivery,
        attempt: u32,
        disposition: Disposition,
        trace: &TraceContext,
    ) -> Result<&'static str, AmqpError> {
        let outcome = match disposition {
            Disposition::Ack { outcome } => {
                tracing::debug!(outcome, "applied");
                outcome
            }
            Disposition::Retry { reason } if attempt < self.config.max_attempts => {
                let delay = self.config.retry_delay(attempt);
                tracing::info!(reason = %escaped(&reason), ?delay, "premature; retrying later");
                let properties = republished_properties(delivery, attempt + 1, &reason, trace);
                self.publish("", &self.topology.retry_queue(delay), delivery, properties)
                    .await?;
                "retried"
            }
            Disposition::Retry { reason } => {
                let reason = format!("{reason} (gave up after {attempt} attempts)");
                self.dead_letter(delivery, reason, trace).await?;
                "dead_lettered"
            }
            Disposition::DeadLetter { reason } => {
                self.dead_letter(delivery, reason, trace).await?;
                "dead_lettered"
            }
            Disposition::Wait { .. } => return Ok("unsettled"),
        };
        delivery.ack(BasicAckOptions::default()).await?;
        Ok(outcome)
    }

    async fn dead_letter(
        &self,
        delivery: &Delivery,
        reason: String,
        trace: &TraceContext,
    ) -> Result<(), AmqpError> {
        tracing::warn!(reason = %escaped(&reason), "dead-lettering");
        let attempt = attempt_of(&delivery.properties);
        let properties = republished_properties(delivery, attempt, &reason, trace);
        let routing_key = delivery.routing_key.as_str().to_owned();
        self.publish(
            &self.topology.dead_letter_exchange,
            &routing_key,
            delivery,
            properties,
        )
        .await
    }

    /// Publishes the original body with `properties` and waits for the broker's confirm.
    async fn publish(
        &self,
        exchange: &str,
        routing_key: &str,
        delivery: &Delivery,
        properties: BasicProperties,
    ) -> Result<(), AmqpError> {
        let confirm = self
            .publisher
            .basic_publish(
                ShortString::from(exchange),
                ShortString::from(routing_key),
                BasicPublishOptions::default(),
                &delivery.data,
                properties,
            )
            .await?
            .await?;
        if confirm.is_nack() {
            return Err(AmqpError::Nacked);
        }
        Ok(())
    }
}

/// Runs the event's command — the same one the REST API runs — under `trace`, the context of
/// the delivery's span, and decides the disposition.
pub async fn apply(app: &App, envelope: &Envelope, trace: &TraceContext) -> Disposition {
    let cause = Cause::Amqp {
        event_id: envelope.event_id.clone(),
    };
    match &envelope.event {
        InboundEvent::OrderPlaced(new) => decide(&app.place(new.clone(), &cause, trace).await),
        InboundEvent::PaymentSucceeded(payment) => {
            decide(&app.record_payment(payment.clone(), &cause, trace).await)
        }
        InboundEvent::RefundSucceeded(refund) => {
            decide(&app.record_refund(refund.clone(), &cause, trace).await)
        }
        InboundEvent::ShipmentDispatched { order_id, shipment } => {
            decide(&app.ship(*order_id, shipment, None, &cause, trace).await)
        }
        InboundEvent::CancellationRequested { order_id, reason } => {
            decide(&app.cancel(*order_id, reason, None, &cause, trace).await)
        }
    }
}
