//! The AMQP message an outbox row becomes, under the span that publishes it: an order event as
//! docs/messaging.md "Published events" describes it, or a raw row (a replayed dead letter) with
//! its own properties, each carrying its span's trace context. A row whose exchange, routing key or
//! type AMQP cannot carry (a short string holds at most 255 bytes) becomes no message: the relay
//! sets it aside (docs/messaging.md "Rows the relay sets aside").

use std::borrow::Cow;

use lapin::options::BasicPublishOptions;
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Channel, PublisherConfirm};

use crate::amqp::headers::trace_headers;
use crate::amqp::properties;
use crate::store::outbox::{PendingEvent, PendingMessage};
use crate::telemetry::{TraceContext, continue_trace};

/// What one row publishes.
pub(super) struct Outgoing<'a> {
    pub exchange: ShortString,
    pub routing_key: ShortString,
    pub body: Cow<'a, [u8]>,
    pub properties: BasicProperties,
    /// Published `mandatory`: the broker returns it when no binding matches. A replay is, since
    /// it must reach the inbox; an order event is not, since an event no service subscribes to
    /// is not lost but unwanted.
    pub mandatory: bool,
}

/// Why a row becomes no message.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unpublishable {
    #[error("{what} is {bytes} bytes long; an AMQP short string holds at most 255")]
    TooLong { what: &'static str, bytes: usize },
}

impl Unpublishable {
    /// The class its reason starts with.
    pub(super) fn class(&self) -> &'static str {
        match self {
            Unpublishable::TooLong { .. } => "unaddressable",
        }
    }
}

/// The message `event` publishes, with `trace` as its `traceparent`; order events go to
/// `exchange` (the outbound one).
pub(super) fn outgoing<'a>(
    exchange: &str,
    event: &'a PendingEvent,
    trace: &TraceContext,
) -> Result<Outgoing<'a>, Unpublishable> {
    match &event.message {
        PendingMessage::Event {
            event_type,
            payload,
        } => {
            let mut headers = FieldTable::default();
            trace_headers::insert(&mut headers, trace);
            let kind = short("event type", event_type)?;
            let properties = BasicProperties::default()
                .with_message_id(event.event_id.to_string().into())
                .with_content_type("application/json".into())
                .with_type(kind.clone())
                .with_app_id("order-service".into())
                .with_timestamp(u64::try_from(event.created_at.timestamp()).unwrap_or(0))
                .with_delivery_mode(2)
                .with_headers(headers);
            Ok(Outgoing {
                exchange: short("exchange", exchange)?,
                routing_key: kind,
                body: Cow::Borrowed(payload.as_bytes()),
                properties,
                mandatory: false,
            })
        }
        // A replayed dead letter: its own properties, under the replay's trace.
        PendingMessage::Raw {
            exchange,
            routing_key,
            body,
            properties,
        } => {
            let properties = properties::decode(properties);
            let headers = trace_headers::replaced(properties.headers().as_ref(), trace);
            Ok(Outgoing {
                exchange: short("exchange", exchange)?,
                routing_key: short("routing key", routing_key)?,
                body: Cow::Borrowed(body.as_slice()),
                properties: properties.with_headers(headers),
                mandatory: true,
            })
        }
    }
}

fn short(what: &'static str, text: &str) -> Result<ShortString, Unpublishable> {
    ShortString::try_new(text).map_err(|_| Unpublishable::TooLong {
        what,
        bytes: text.len(),
    })
}

pub(super) async fn publish(
    channel: &Channel,
    message: Outgoing<'_>,
) -> lapin::Result<PublisherConfirm> {
    let options = BasicPublishOptions {
        mandatory: message.mandatory,
        ..BasicPublishOptions::default()
    };
    channel
        .basic_publish(
            message.exchange,
            message.routing_key,
            options,
            &message.body,
            message.properties,
        )
        .await
}

/// The span publishing `event`, under the trace context stored with it (a row without one, from
/// before the column, starts a trace), and that span's context, which the message carries.
pub(super) fn publish_span(event: &PendingEvent) -> (tracing::Span, TraceContext) {
    let event_type = match &event.message {
        PendingMessage::Event { event_type, .. } => event_type,
        PendingMessage::Raw { routing_key, .. } => routing_key,
    };
    let span = tracing::info_span!(
        "publish",
        event_id = %event.event_id,
        event_type = %crate::telemetry::escaped(event_type),
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    let cause =
        TraceContext::from_headers(event.traceparent.as_deref(), event.tracestate.as_deref());
    let trace = continue_trace(&span, cause.as_ref());
    (span, trace)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn raw(routing_key: &str) -> PendingEvent {
        PendingEvent {
            id: 1,
            event_id: Uuid::nil(),
            created_at: Utc::now(),
            traceparent: None,
            tracestate: None,
            message: PendingMessage::Raw {
                exchange: "commerce.events".into(),
                routing_key: routing_key.into(),
                body: b"{}".to_vec(),
                properties: json!({"message_id": "m-1", "headers": {}}),
            },
        }
    }

    #[test]
    fn a_replay_is_mandatory_with_its_own_routing_key() {
        let event = raw("payment.succeeded");
        let message = outgoing("order-service.events", &event, &TraceContext::start()).unwrap();
        assert!(message.mandatory);
        assert_eq!(message.exchange.as_str(), "commerce.events");
        assert_eq!(message.routing_key.as_str(), "payment.succeeded");
        assert_eq!(
            message.properties.message_id().as_ref().map(|m| m.as_str()),
            Some("m-1")
        );
    }

    #[test]
    fn a_routing_key_longer_than_a_short_string_is_unaddressable_not_published_with_another() {
        let event = raw(&"k".repeat(300));
        let Err(error) = outgoing("order-service.events", &event, &TraceContext::start()) else {
            panic!("a 300-byte routing key became a message");
        };
        assert_eq!(error.class(), "unaddressable");
        assert_eq!(
            error.to_string(),
            "routing key is 300 bytes long; an AMQP short string holds at most 255"
        );
    }

    #[test]
    fn an_order_event_goes_to_the_outbound_exchange_under_its_type_not_mandatory() {
        let event = PendingEvent {
            message: PendingMessage::Event {
                event_type: "order.paid".into(),
                payload: r#"{"type": "order.paid"}"#.into(),
            },
            ..raw("unused")
        };
        let message = outgoing("order-service.events", &event, &TraceContext::start()).unwrap();
        assert!(!message.mandatory);
        assert_eq!(message.exchange.as_str(), "order-service.events");
        assert_eq!(message.routing_key.as_str(), "order.paid");
        assert_eq!(
            message.body.as_ref(),
            br#"{"type": "order.paid"}"#,
            "as stored"
        );
    }
}
