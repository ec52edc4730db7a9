//! Inbound envelopes (DESIGN.md §3), parsed strictly into typed events. Anything that does not
//! parse is poison: it can never succeed, so it is dead-lettered at once with the reason.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use crate::domain::{
    AmountMinor, BoundedText, Currency, CustomerId, EventId, Money, NewOrder, OrderId, Payment,
    Shipment, TransferId, ValidationError,
};

/// The longest cancellation reason accepted, in characters (as over REST).
const MAX_REASON_CHARS: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundEvent {
    OrderPlaced(NewOrder),
    PaymentSucceeded(Payment),
    ShipmentDispatched {
        order_id: OrderId,
        shipment: Shipment,
    },
    CancellationRequested {
        order_id: OrderId,
        reason: BoundedText,
    },
}

impl InboundEvent {
    pub fn order_id(&self) -> OrderId {
        match self {
            InboundEvent::OrderPlaced(order) => order.id,
            InboundEvent::PaymentSucceeded(payment) => payment.order_id,
            InboundEvent::ShipmentDispatched { order_id, .. }
            | InboundEvent::CancellationRequested { order_id, .. } => *order_id,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub event_id: EventId,
    pub event_type: &'static str,
    pub occurred_at: DateTime<Utc>,
    pub event: InboundEvent,
}

/// Why a message can never be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Poison {
    #[error("message of {bytes} bytes exceeds the limit of {limit} bytes")]
    TooLarge { bytes: usize, limit: usize },
    #[error("not a JSON envelope: {0}")]
    NotAnEnvelope(String),
    #[error("unknown event type {0:?}")]
    UnknownType(String),
    #[error("invalid {event_type} data: {reason}")]
    InvalidData {
        event_type: &'static str,
        reason: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnvelope {
    event_id: String,
    #[serde(rename = "type")]
    event_type: String,
    occurred_at: DateTime<Utc>,
    data: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderPlaced {
    order_id: Uuid,
    customer_id: String,
    amount_minor: i64,
    currency: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PaymentSucceeded {
    order_id: Uuid,
    transfer_id: String,
    amount_minor: i64,
    currency: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShipmentDispatched {
    order_id: Uuid,
    carrier: String,
    tracking_number: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CancellationRequested {
    order_id: Uuid,
    reason: String,
}

pub const ORDER_PLACED: &str = "order.placed";
pub const PAYMENT_SUCCEEDED: &str = "payment.succeeded";
pub const SHIPMENT_DISPATCHED: &str = "shipment.dispatched";
pub const CANCELLATION_REQUESTED: &str = "order.cancellation_requested";

/// The routing keys the inbox is bound to.
pub const INBOUND_TYPES: [&str; 4] = [
    ORDER_PLACED,
    PAYMENT_SUCCEEDED,
    SHIPMENT_DISPATCHED,
    CANCELLATION_REQUESTED,
];

/// [`parse`], but a body over `limit` bytes is poison without being read: parsing is linear, yet
/// a huge message would still hold memory and a worker for nothing that could ever be valid.
pub fn parse_bounded(body: &[u8], limit: usize) -> Result<Envelope, Poison> {
    if body.len() > limit {
        return Err(Poison::TooLarge {
            bytes: body.len(),
            limit,
        });
    }
    parse(body)
}

pub fn parse(body: &[u8]) -> Result<Envelope, Poison> {
    let raw: RawEnvelope =
        serde_json::from_slice(body).map_err(|e| Poison::NotAnEnvelope(e.to_string()))?;
    let event_id =
        EventId::parse(&raw.event_id).map_err(|e| Poison::NotAnEnvelope(e.to_string()))?;
    let event_type = INBOUND_TYPES
        .into_iter()
        .find(|t| *t == raw.event_type)
        .ok_or_else(|| Poison::UnknownType(raw.event_type.clone()))?;
    let invalid = |reason: String| Poison::InvalidData { event_type, reason };
    let event = typed(event_type, raw.data).map_err(invalid)?;
    Ok(Envelope {
        event_id,
        event_type,
        occurred_at: raw.occurred_at,
        event,
    })
}

fn typed(event_type: &str, data: serde_json::Value) -> Result<InboundEvent, String> {
    fn data_of<T: serde::de::DeserializeOwned>(data: serde_json::Value) -> Result<T, String> {
        serde_json::from_value(data).map_err(|e| e.to_string())
    }
    let valid = |e: ValidationError| e.to_string();
    match event_type {
        ORDER_PLACED => {
            let d: OrderPlaced = data_of(data)?;
            Ok(InboundEvent::OrderPlaced(NewOrder {
                id: OrderId::from_uuid(d.order_id),
                customer_id: CustomerId::parse(&d.customer_id).map_err(valid)?,
                amount: money(d.amount_minor, &d.currency).map_err(valid)?,
            }))
        }
        PAYMENT_SUCCEEDED => {
            let d: PaymentSucceeded = data_of(data)?;
            Ok(InboundEvent::PaymentSucceeded(Payment {
                transfer_id: TransferId::parse(&d.transfer_id).map_err(valid)?,
                order_id: OrderId::from_uuid(d.order_id),
                money: money(d.amount_minor, &d.currency).map_err(valid)?,
            }))
        }
        SHIPMENT_DISPATCHED => {
            let d: ShipmentDispatched = data_of(data)?;
            Ok(InboundEvent::ShipmentDispatched {
                order_id: OrderId::from_uuid(d.order_id),
                shipment: Shipment::parse(&d.carrier, &d.tracking_number).map_err(valid)?,
            })
        }
        _ => {
            let d: CancellationRequested = data_of(data)?;
            Ok(InboundEvent::CancellationRequested {
                order_id: OrderId::from_uuid(d.order_id),
                reason: BoundedText::parse("reason", &d.reason, MAX_REASON_CHARS).map_err(valid)?,
            })
        }
    }
}

fn money(minor: i64, currency: &str) -> Result<Money, ValidationError> {
    Ok(Money::new(
        AmountMinor::parse(minor)?,
        Currency::parse(currency)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(event_type: &str, data: serde_json::Value) -> Vec<u8> {
        json!({"event_id": "e-1", "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn each_inbound_type_parses_into_its_event() {
        let order_id = Uuid::new_v4();
        let placed = parse(&envelope(
            ORDER_PLACED,
            json!({"order_id": order_id, "customer_id": "c", "amount_minor": 10, "currency": "EUR"}),
        ))
        .unwrap();
        assert!(matches!(placed.event, InboundEvent::OrderPlaced(_)));
        assert_eq!(placed.event.order_id().as_uuid(), order_id);
        assert_eq!(placed.event_id.as_str(), "e-1");

        let paid = parse(&envelope(
            PAYMENT_SUCCEEDED,
            json!({"order_id": order_id, "transfer_id": "t", "amount_minor": 10, "currency": "EUR"}),
        ))
        .unwrap();
        assert!(matches!(paid.event, InboundEvent::PaymentSucceeded(_)));

        let shipped = parse(&envelope(
            SHIPMENT_DISPATCHED,
            json!({"order_id": order_id, "carrier": "DHL", "tracking_number": "T"}),
        ))
        .unwrap();
        assert!(matches!(
            shipped.event,
            InboundEvent::ShipmentDispatched { .. }
        ));

        let cancel = parse(&envelope(
            CANCELLATION_REQUESTED,
            json!({"order_id": order_id, "reason": "r"}),
        ))
        .unwrap();
        assert!(matches!(
            cancel.event,
            InboundEvent::CancellationRequested { .. }
        ));
    }

    #[test]
    fn a_message_over_the_limit_is_poison_that_names_its_size() {
        let body = envelope(
            CANCELLATION_REQUESTED,
            json!({"order_id": Uuid::new_v4(), "reason": "r"}),
        );
        assert!(parse_bounded(&body, body.len()).is_ok());
        let poison = parse_bounded(&body, body.len() - 1).unwrap_err();
        assert_eq!(
            poison,
            Poison::TooLarge {
                bytes: body.len(),
                limit: body.len() - 1
            }
        );
        assert!(poison.to_string().contains("exceeds the limit"), "{poison}");
    }

    #[test]
    fn garbage_unknown_types_and_invalid_data_are_poison() {
        assert!(matches!(parse(b"not json"), Err(Poison::NotAnEnvelope(_))));
        assert!(matches!(parse(b"{}"), Err(Poison::NotAnEnvelope(_))));
        assert!(matches!(
            parse(&envelope("order.exploded", json!({}))),
            Err(Poison::UnknownType(_))
        ));
        for data in [
            json!({"order_id": "nope", "transfer_id": "t", "amount_minor": 10, "currency": "EUR"}),
            json!({"order_id": Uuid::new_v4(), "transfer_id": "t", "amount_minor": 0, "currency": "EUR"}),
            json!({"order_id": Uuid::new_v4(), "transfer_id": "t", "amount_minor": 10, "currency": "eur"}),
            json!({"order_id": Uuid::new_v4(), "transfer_id": "", "amount_minor": 10, "currency": "EUR"}),
            json!({"order_id": Uuid::new_v4(), "transfer_id": "t", "amount_minor": 10.5, "currency": "EUR"}),
            json!({"order_id": Uuid::new_v4(), "transfer_id": "t", "amount_minor": 10, "currency": "EUR", "extra": 1}),
        ] {
            assert!(
                matches!(
                    parse(&envelope(PAYMENT_SUCCEEDED, data.clone())),
                    Err(Poison::InvalidData { .. })
                ),
                "{data}"
            );
        }
    }
}
