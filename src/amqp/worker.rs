//! One delivery's life: parse it, run its command through [`apply`] (the same command the REST
//! API runs), decide with [`decide`], and settle it — the original is acknowledged only after its
//! command committed, or after its replacement (a retry or a dead letter) is confirmed.
//!
//! A replacement is a new message of the service's own: the original body, `message_id`, `type`
//! and `content_type`, persistent, with fresh headers ([`republished_properties`]). Nothing else
//! of the original is repeated: another user's `user_id` would make the broker close the
//! publishing channel, an `expiration` would let the evidence expire in the dead-letter queue,
//! and unbounded headers could push the header frame past the broker's frame size.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicPublishOptions};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::connection::{AmqpError, Backoff};
use super::consumer::{
    ATTEMPT_HEADER, HEADERS_DROPPED_HEADER, ORIGINAL_ROUTING_KEY_HEADER, REASON_HEADER, Settled,
};
use super::decision::{Disposition, decide};
use super::envelope::{self, Envelope, InboundEvent};
use super::topology::Topology;
use crate::app::App;
use crate::config::AmqpConfig;
use crate::domain::Cause;
use crate::telemetry::escaped;

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
        let span = tracing::info_span!("amqp_message", %event_id, %event_type, %order_id, attempt);
        async move {
            let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
            let disposition = loop {
                let disposition = match &parsed {
                    Err(poison) => Disposition::DeadLetter { reason: poison.to_string() },
                    Ok(envelope) => apply(&self.app, envelope).await,
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
            let outcome = match self.settle(&delivery, attempt, disposition).await {
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
    /// dead letter) is confirmed by the broker.
    async fn settle(
        &self,
        delivery: &Delivery,
        attempt: u32,
        disposition: Disposition,
    ) -> Result<&'static str, AmqpError> {
        let outcome = match disposition {
            Disposition::Ack { outcome } => {
                tracing::debug!(outcome, "applied");
                outcome
            }
            Disposition::Retry { reason } if attempt < self.config.max_attempts => {
                let delay = self.config.retry_delay(attempt);
                tracing::info!(reason = %escaped(&reason), ?delay, "premature; retrying later");
                let properties = republished_properties(delivery, attempt + 1, &reason);
                self.publish("", &self.topology.retry_queue(delay), delivery, properties)
                    .await?;
                "retried"
            }
            Disposition::Retry { reason } => {
                let reason = format!("{reason} (gave up after {attempt} attempts)");
                self.dead_letter(delivery, reason).await?;
                "dead_lettered"
            }
            Disposition::DeadLetter { reason } => {
                self.dead_letter(delivery, reason).await?;
                "dead_lettered"
            }
            Disposition::Wait { .. } => return Ok("unsettled"),
        };
        delivery.ack(BasicAckOptions::default()).await?;
        Ok(outcome)
    }

    async fn dead_letter(&self, delivery: &Delivery, reason: String) -> Result<(), AmqpError> {
        tracing::warn!(reason = %escaped(&reason), "dead-lettering");
        let attempt = attempt_of(&delivery.properties);
        let properties = republished_properties(delivery, attempt, &reason);
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

/// Runs the event's command — the same one the REST API runs — and decides the disposition.
pub async fn apply(app: &App, envelope: &Envelope) -> Disposition {
    let cause = Cause::Amqp {
        event_id: envelope.event_id.clone(),
    };
    match &envelope.event {
        InboundEvent::OrderPlaced(new) => decide(&app.place(new.clone(), &cause).await),
        InboundEvent::PaymentSucceeded(payment) => {
            decide(&app.record_payment(payment.clone(), &cause).await)
        }
        InboundEvent::RefundSucceeded(refund) => {
            decide(&app.record_refund(refund.clone(), &cause).await)
        }
        InboundEvent::ShipmentDispatched { order_id, shipment } => {
            decide(&app.ship(*order_id, shipment, None, &cause).await)
        }
        InboundEvent::CancellationRequested { order_id, reason } => {
            decide(&app.cancel(*order_id, reason, None, &cause).await)
        }
    }
}

/// The longest `x-error-reason`, in bytes; a longer reason is cut (at a character boundary).
pub const REASON_MAX_BYTES: usize = 1024;
/// The most (encoded) bytes of the original's headers a replacement repeats; larger headers are
/// dropped whole and `x-original-headers-dropped` says how large they were. With the reason and
/// the rest, a replacement's header frame stays far below RabbitMQ's frame size (128 KiB).
pub const ORIGINAL_HEADERS_MAX_BYTES: usize = 16 * 1024;

/// The properties of a retry or dead letter of `delivery`: its `message_id`, `type` and
/// `content_type`, persistent; the original's own headers if they fit
/// [`ORIGINAL_HEADERS_MAX_BYTES`]; and the service's headers: `x-attempt`, `x-error-reason` (cut
/// to [`REASON_MAX_BYTES`]) and `x-original-routing-key` (kept from the first trip: a retry
/// comes back with the inbox's name as its routing key).
fn republished_properties(delivery: &Delivery, attempt: u32, reason: &str) -> BasicProperties {
    let original = &delivery.properties;
    let own = [
        ATTEMPT_HEADER,
        REASON_HEADER,
        ORIGINAL_ROUTING_KEY_HEADER,
        HEADERS_DROPPED_HEADER,
    ];
    let mut headers = FieldTable::default();
    let mut routing_key = AMQPValue::LongString(delivery.routing_key.as_str().into());
    if let Some(table) = original.headers() {
        if let Some(first) = table.inner().get(ORIGINAL_ROUTING_KEY_HEADER) {
            routing_key = first.clone();
        }
        let size = table_size(table);
        if size <= ORIGINAL_HEADERS_MAX_BYTES {
            for (key, value) in table.inner() {
                if !own.contains(&key.as_str()) {
                    headers.insert(key.clone(), value.clone());
                }
            }
        } else {
            headers.insert(
                HEADERS_DROPPED_HEADER.into(),
                AMQPValue::LongLongInt(i64::try_from(size).unwrap_or(i64::MAX)),
            );
        }
    }
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(attempt));
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString(bounded(reason, REASON_MAX_BYTES).into()),
    );
    headers.insert(ORIGINAL_ROUTING_KEY_HEADER.into(), routing_key);

    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers);
    if let Some(id) = original.message_id() {
        properties = properties.with_message_id(id.clone());
    }
    if let Some(kind) = original.kind() {
        properties = properties.with_type(kind.clone());
    }
    if let Some(content_type) = original.content_type() {
        properties = properties.with_content_type(content_type.clone());
    }
    properties
}

/// `text` cut to at most `max` bytes at a character boundary, marked with `…` when cut.
fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let marker = "…";
    let mut end = max - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

/// An upper bound of the encoded size of a field table (AMQP 0-9-1 §4.2.5.5).
fn table_size(table: &FieldTable) -> usize {
    4 + table
        .inner()
        .iter()
        .map(|(key, value)| 1 + key.as_str().len() + value_size(value))
        .sum::<usize>()
}

fn value_size(value: &AMQPValue) -> usize {
    1 + match value {
        AMQPValue::ShortString(s) => 1 + s.as_str().len(),
        AMQPValue::LongString(s) => 4 + s.as_bytes().len(),
        AMQPValue::ByteArray(b) => 4 + b.as_slice().len(),
        AMQPValue::FieldTable(t) => table_size(t),
        AMQPValue::FieldArray(a) => 4 + a.as_slice().iter().map(value_size).sum::<usize>(),
        // Numbers, booleans, decimals, timestamps, void: at most 9 bytes.
        _ => 9,
    }
}

/// Which delivery through the retry path this is: 1 for a message never retried.
fn attempt_of(properties: &BasicProperties) -> u32 {
    let value = properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(ATTEMPT_HEADER).cloned());
    let attempt = match value {
        Some(AMQPValue::LongUInt(n)) => i64::from(n),
        Some(AMQPValue::LongInt(n)) => i64::from(n),
        Some(AMQPValue::LongLongInt(n)) => n,
        Some(AMQPValue::ShortUInt(n)) => i64::from(n),
        Some(AMQPValue::ShortInt(n)) => i64::from(n),
        Some(AMQPValue::ShortShortUInt(n)) => i64::from(n),
        Some(AMQPValue::ShortShortInt(n)) => i64::from(n),
        _ => 1,
    };
    u32::try_from(attempt.max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_at_a_character_boundary_and_marked() {
        assert_eq!(bounded("short", 10), "short");
        let cut = bounded(&"é".repeat(1000), REASON_MAX_BYTES);
        assert!(cut.len() <= REASON_MAX_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn the_size_of_headers_bounds_their_encoding() {
        let mut headers = FieldTable::default();
        headers.insert(
            "x-trace".into(),
            AMQPValue::LongString("t".repeat(100).into()),
        );
        headers.insert("n".into(), AMQPValue::LongUInt(1));
        // table length 4; "x-trace": 1 + 7 + type 1 + 4 + 100; "n": 1 + 1 + type 1 + at most 9.
        assert_eq!(table_size(&headers), 4 + 113 + 12);
    }
}
