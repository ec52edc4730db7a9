//! The events a change emits, as its outbox rows hold them: the envelope of docs/messaging.md
//! "Published events", with the order as the REST API shows it as `data`. Each row also
//! keeps the trace context of the request or message that caused the change, which the relay
//! sends on (docs/operations/observability.md "Tracing").

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::AppError;
use super::views::OrderView;
use crate::domain::{EventType, Order, OrderId, Version};
use crate::store::outbox::NewEvent;

/// Namespace for event ids: `event_id = uuidv5(NS, "<order_id>/<version>/<type>")`, so an event
/// has the same id however many times the change that emits it is attempted.
const EVENT_NAMESPACE: Uuid = Uuid::from_u128(0x6f72_6465_722d_7365_7276_6963_652d_6576);

pub(super) fn event_id(order_id: OrderId, version: Version, event_type: EventType) -> Uuid {
    Uuid::new_v5(
        &EVENT_NAMESPACE,
        format!("{order_id}/{version}/{event_type}").as_bytes(),
    )
}

/// An outbound event as published: the same envelope as inbound events carry. Its schema is the
/// payload of every outbound message in the AsyncAPI document.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutboundEnvelope {
    /// `uuidv5(order_id/version/type)`: the same however often the change is attempted, and the
    /// AMQP `message_id`.
    pub event_id: Uuid,
    /// The event type, which is also the routing key.
    #[serde(rename = "type")]
    pub event_type: &'static str,
    /// The `updated_at` of the order's version the change produced.
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub occurred_at: DateTime<Utc>,
    /// The order at that version, as the REST API shows it.
    pub data: OrderView,
}

impl OutboundEnvelope {
    pub fn new(event_type: EventType, order: &Order) -> Self {
        Self {
            event_id: event_id(order.id, order.version, event_type),
            event_type: event_type.into(),
            occurred_at: order.updated_at,
            data: OrderView::from(order),
        }
    }
}

/// The outbox rows of `events`, each announcing `order` as the change left it.
pub(super) fn new_events(events: &[EventType], order: &Order) -> Result<Vec<NewEvent>, AppError> {
    events
        .iter()
        .map(|&event_type| {
            let envelope = OutboundEnvelope::new(event_type, order);
            let payload = serde_json::to_string(&envelope)
                .map_err(|_| AppError::Invariant("an outbound envelope must serialize"))?;
            Ok(NewEvent {
                event_id: envelope.event_id,
                event_type,
                payload,
            })
        })
        .collect()
}
