//! Writing a decided change: the guarded update, its history row and its outbox events, all in
//! the caller's transaction. Outbound events use the envelope of the README's "Published events"
//! section, with the order as the REST API shows it as `data`; each outbox row also keeps the
//! trace context of the request or message that caused the change, which the relay sends on
//! (README "Tracing").

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::PgConnection;
use utoipa::ToSchema;
use uuid::Uuid;

use super::AppError;
use super::runner::{Attempt, Transition, Written};
use super::views::OrderView;
use crate::domain::{Cause, Change, EventType, Order, OrderId, TransferId, Version};
use crate::store::outbox::{self, NewEvent};
use crate::store::transitions::{self, NewTransition};
use crate::store::{Guarded, Inserted, orders};
use crate::telemetry::TraceContext;

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

fn new_event(
    event_type: EventType,
    order: &Order,
    trace: &TraceContext,
) -> Result<NewEvent, AppError> {
    let envelope = OutboundEnvelope::new(event_type, order);
    let payload = serde_json::to_value(&envelope)
        .map_err(|_| AppError::Invariant("an outbound envelope must serialize"))?;
    Ok(NewEvent {
        event_id: envelope.event_id,
        event_type,
        order_id: order.id,
        order_version: order.version,
        payload,
        trace: trace.clone(),
    })
}

/// The outbox rows of `events`, each carrying `trace`: the context of the door's span.
pub(super) async fn write_events(
    conn: &mut PgConnection,
    events: &[EventType],
    order: &Order,
    trace: &TraceContext,
) -> Result<(), AppError> {
    for &event_type in events {
        outbox::insert(conn, &new_event(event_type, order, trace)?).await?;
    }
    Ok(())
}

/// The history row of the change that produced `order`.
pub(super) async fn write_history(
    conn: &mut PgConnection,
    transition: &Transition,
    order: &Order,
    transfer_id: Option<&TransferId>,
    cause: &Cause,
) -> Result<Inserted<()>, AppError> {
    let row = NewTransition {
        order_id: order.id,
        version: order.version,
        kind: transition.kind,
        from: transition.from,
        to: transition.to,
        transfer_id,
        cause,
    };
    Ok(transitions::insert(conn, row).await?)
}

/// Applies `change` with its guarded update, then writes its history row and its events under
/// `trace`. `value` makes what the command returns of the written order.
pub(super) async fn write_change<T>(
    conn: &mut PgConnection,
    change: &Change,
    transfer_id: Option<&TransferId>,
    cause: &Cause,
    trace: &TraceContext,
    value: impl FnOnce(Order) -> T,
) -> Result<Attempt<T>, AppError> {
    let Guarded::Applied(order) = orders::apply(conn, change).await? else {
        return Ok(Attempt::Lost);
    };
    let transition = Transition {
        kind: change.kind,
        from: Some(change.from),
        to: order.status,
    };
    let Inserted::New(()) = write_history(conn, &transition, &order, transfer_id, cause).await?
    else {
        return Ok(Attempt::Lost);
    };
    write_events(conn, &change.events, &order, trace).await?;
    Ok(Attempt::Applied(value(order), Written::Order(transition)))
}
