//! Inbound envelopes (`docs/contract.md#envelope`), parsed strictly into typed events. Anything that does not
//! parse is poison: it can never succeed, so it is dead-lettered at once with the reason.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use strum::{EnumDiscriminants, EnumIter, EnumString, IntoStaticStr, VariantNames};
use utoipa::ToSchema;

use super::event_data::{
    CancellationRequested, OrderPlaced, PaymentSucceeded, RefundSucceeded, ShipmentDispatched,
};

use crate::domain::{
    BoundedText, CustomerId, EventId, Money, NewOrder, OrderId, Payment, Refund, Shipment,
    TransferId, ValidationError,
};
use crate::strict_json::{JsonObject, StrictJsonError, client_text};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InboundEvent {
    OrderPlaced(NewOrder),
    PaymentSucceeded(Payment),
    RefundSucceeded(Refund),
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
            InboundEvent::RefundSucceeded(refund) => refund.order_id,
            InboundEvent::ShipmentDispatched { order_id, .. }
            | InboundEvent::CancellationRequested { order_id, .. } => *order_id,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub event_id: EventId,
    /// The wire name of the event's type (a routing key of [`INBOUND_TYPES`]).
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

/// The envelope's frame. `type` is read as text first, so that an unknown type is poison that
/// names it rather than a generic "not an envelope". Its schema is the frame of every inbound
/// message in the AsyncAPI document.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = InboundEnvelope)]
pub(in crate::amqp) struct RawEnvelope {
    /// Unique per event (1–255 characters): the publisher's id of the fact, kept on the history
    /// row it caused.
    #[schema(min_length = 1, max_length = 255, example = "evt-7f3a9c")]
    event_id: String,
    /// The event type, which is also the routing key it was published with.
    #[serde(rename = "type")]
    event_type: String,
    /// When the fact happened, RFC 3339.
    occurred_at: DateTime<Utc>,
    /// The type's data.
    data: serde_json::Value,
}

/// The inbound wire: one variant per type the inbox is bound to, tagged by `type` with its
/// `data`. Each variant's wire name is stated for serde and for its [`InboundType`]
/// discriminant side by side; the unit tests parse every type through both.
#[derive(Deserialize, EnumDiscriminants)]
#[serde(tag = "type", content = "data")]
#[strum_discriminants(
    name(InboundType),
    vis(pub),
    derive(EnumString, IntoStaticStr, VariantNames, EnumIter)
)]
enum InboundWire {
    #[serde(rename = "order.placed")]
    #[strum_discriminants(strum(serialize = "order.placed"))]
    OrderPlaced(OrderPlaced),
    #[serde(rename = "payment.succeeded")]
    #[strum_discriminants(strum(serialize = "payment.succeeded"))]
    PaymentSucceeded(PaymentSucceeded),
    #[serde(rename = "refund.succeeded")]
    #[strum_discriminants(strum(serialize = "refund.succeeded"))]
    RefundSucceeded(RefundSucceeded),
    #[serde(rename = "shipment.dispatched")]
    #[strum_discriminants(strum(serialize = "shipment.dispatched"))]
    ShipmentDispatched(ShipmentDispatched),
    #[serde(rename = "order.cancellation_requested")]
    #[strum_discriminants(strum(serialize = "order.cancellation_requested"))]
    CancellationRequested(CancellationRequested),
}

/// The routing keys the inbox is bound to: every inbound type, from the wire enum itself.
pub const INBOUND_TYPES: &[&str] = InboundType::VARIANTS;

impl TryFrom<InboundWire> for InboundEvent {
    type Error = ValidationError;

    /// The same domain constructors the REST API uses, so both doors apply one rule.
    fn try_from(wire: InboundWire) -> Result<Self, Self::Error> {
        Ok(match wire {
            InboundWire::OrderPlaced(d) => InboundEvent::OrderPlaced(NewOrder {
                id: OrderId::from_uuid(d.order_id),
                customer_id: CustomerId::parse(&d.customer_id)?,
                amount: Money::parse(d.amount_minor, &d.currency)?,
            }),
            InboundWire::PaymentSucceeded(d) => InboundEvent::PaymentSucceeded(Payment {
                transfer_id: TransferId::parse(&d.transfer_id)?,
                order_id: OrderId::from_uuid(d.order_id),
                money: Money::parse(d.amount_minor, &d.currency)?,
            }),
            InboundWire::RefundSucceeded(d) => InboundEvent::RefundSucceeded(Refund {
                refund_id: TransferId::parse_refund_id(&d.refund_id)?,
                order_id: OrderId::from_uuid(d.order_id),
                money: Money::parse(d.amount_minor, &d.currency)?,
            }),
            InboundWire::ShipmentDispatched(d) => InboundEvent::ShipmentDispatched {
                order_id: OrderId::from_uuid(d.order_id),
                shipment: Shipment::parse(&d.carrier, &d.tracking_number)?,
            },
            InboundWire::CancellationRequested(d) => InboundEvent::CancellationRequested {
                order_id: OrderId::from_uuid(d.order_id),
                reason: BoundedText::cancellation_reason(&d.reason)?,
            },
        })
    }
}

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

/// Reads an envelope as the REST API reads a request body (`strict_json`): the envelope and its
/// `data` are JSON objects, never arrays, and no key is given twice anywhere in the message.
pub fn parse(body: &[u8]) -> Result<Envelope, Poison> {
    let not_an_envelope = |e: StrictJsonError| Poison::NotAnEnvelope(e.to_string());
    let raw: RawEnvelope = JsonObject::parse(body)
        .and_then(|frame| frame.read())
        .map_err(not_an_envelope)?;
    let event_id =
        EventId::parse(&raw.event_id).map_err(|e| Poison::NotAnEnvelope(e.to_string()))?;
    let kind: InboundType = raw
        .event_type
        .parse()
        .map_err(|_| Poison::UnknownType(raw.event_type.clone()))?;
    let event_type: &'static str = kind.into();
    let invalid = |reason: String| Poison::InvalidData { event_type, reason };
    // Checked here because the tagged enum below reads its content through serde's buffer,
    // which would take a sequence for a struct as well.
    let data = JsonObject::from_value(raw.data).map_err(|e| invalid(e.to_string()))?;
    let tagged = serde_json::json!({ "type": event_type, "data": data.into_value() });
    let wire = InboundWire::deserialize(tagged).map_err(|e| invalid(client_text(&e)))?;
    let event = InboundEvent::try_from(wire).map_err(|e| invalid(e.to_string()))?;
    Ok(Envelope {
        event_id,
        event_type,
        occurred_at: raw.occurred_at,
        event,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use uuid::Uuid;

    fn envelope(event_type: &str, data: serde_json::Value) -> Vec<u8> {
        json!({"event_id": "e-1", "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
            .to_string()
            .into_bytes()
    }

    /// The inbound type an event was parsed from, by its variant (exhaustive, so a new event
    /// cannot be left out of the test below).
    fn kind(event: &InboundEvent) -> InboundType {
        match event {
            InboundEvent::OrderPlaced(_) => InboundType::OrderPlaced,
            InboundEvent::PaymentSucceeded(_) => InboundType::PaymentSucceeded,
            InboundEvent::RefundSucceeded(_) => InboundType::RefundSucceeded,
            InboundEvent::ShipmentDispatched { .. } => InboundType::ShipmentDispatched,
            InboundEvent::CancellationRequested { .. } => InboundType::CancellationRequested,
        }
    }

    #[test]
    fn each_inbound_type_parses_into_its_event() {
        let order_id = Uuid::new_v4();
        for (event_type, data) in [
            (
                "order.placed",
                json!({"order_id": order_id, "customer_id": "c", "amount_minor": 10, "currency": "EUR"}),
            ),
            (
                "payment.succeeded",
                json!({"order_id": order_id, "transfer_id": "t", "amount_minor": 10, "currency": "EUR"}),
            ),
            (
                "refund.succeeded",
                json!({"order_id": order_id, "refund_id": "r", "amount_minor": 10, "currency": "EUR"}),
            ),
            (
                "shipment.dispatched",
                json!({"order_id": order_id, "carrier": "DHL", "tracking_number": "T"}),
            ),
            (
                "order.cancellation_requested",
                json!({"order_id": order_id, "reason": "r"}),
            ),
        ] {
            let parsed = parse(&envelope(event_type, data)).unwrap();
            let kind_name: &'static str = kind(&parsed.event).into();
            assert_eq!(kind_name, event_type);
            assert_eq!(parsed.event_type, event_type);
            assert_eq!(parsed.event.order_id().as_uuid(), order_id, "{event_type}");
            assert_eq!(parsed.event_id.as_str(), "e-1");
        }
    }

    #[test]
    fn a_message_over_the_limit_is_poison_that_names_its_size() {
        let body = envelope(
            "order.cancellation_requested",
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
        // A known type's frame with a field missing is not an envelope at all.
        assert!(matches!(
            parse(br#"{"event_id": "e-1", "type": "order.placed", "data": {}}"#),
            Err(Poison::NotAnEnvelope(_))
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
                    parse(&envelope("payment.succeeded", data.clone())),
                    Err(Poison::InvalidData { .. })
                ),
                "{data}"
            );
        }
    }

    #[test]
    fn an_envelope_or_data_that_is_not_an_object_is_poison() {
        let order_id = Uuid::new_v4();
        // Each array holds the fields in order, as serde would read a struct from a sequence.
        let data = json!([order_id, "t", 10, "EUR"]);
        let poison = parse(&envelope("payment.succeeded", data)).unwrap_err();
        let Poison::InvalidData { event_type, reason } = &poison else {
            panic!("{poison:?}");
        };
        assert_eq!(*event_type, "payment.succeeded");
        assert!(reason.contains("JSON object"), "{reason}");
        for data in [json!(null), json!("text"), json!(5)] {
            let result = parse(&envelope("payment.succeeded", data.clone()));
            assert!(
                matches!(result, Err(Poison::InvalidData { .. })),
                "{data}: {result:?}"
            );
        }
        let frame = json!(["e-1", "order.cancellation_requested", "2026-11-21T10:00:00Z",
            {"order_id": order_id, "reason": "r"}]);
        let poison = parse(frame.to_string().as_bytes()).unwrap_err();
        assert!(
            matches!(&poison, Poison::NotAnEnvelope(reason) if reason.contains("JSON object")),
            "{poison:?}"
        );
    }

    #[test]
    fn a_key_given_twice_in_the_envelope_or_its_data_is_poison() {
        let order_id = Uuid::new_v4();
        for body in [
            format!(
                r#"{{"event_id":"e-1","type":"payment.succeeded","occurred_at":"2026-11-21T10:00:00Z",
                "data":{{"order_id":"{order_id}","transfer_id":"t","amount_minor":1,"amount_minor":10,"currency":"EUR"}}}}"#
            ),
            format!(
                r#"{{"event_id":"e-1","event_id":"e-2","type":"order.cancellation_requested",
                "occurred_at":"2026-11-21T10:00:00Z","data":{{"order_id":"{order_id}","reason":"r"}}}}"#
            ),
        ] {
            let poison = parse(body.as_bytes()).unwrap_err();
            assert!(
                matches!(&poison, Poison::NotAnEnvelope(reason) if reason.contains("twice")),
                "{poison:?}"
            );
        }
    }

    #[test]
    fn an_unknown_type_is_dead_lettered_with_a_reason_naming_it() {
        let poison = parse(&envelope(
            "order.exploded",
            json!({"order_id": Uuid::new_v4()}),
        ))
        .unwrap_err();
        assert_eq!(poison, Poison::UnknownType("order.exploded".into()));
        assert_eq!(poison.to_string(), r#"unknown event type "order.exploded""#);
    }

    #[test]
    fn invalid_data_names_the_type_and_the_field() {
        let poison = parse(&envelope(
            "order.cancellation_requested",
            json!({"order_id": Uuid::new_v4(), "reason": "r".repeat(501)}),
        ))
        .unwrap_err();
        let Poison::InvalidData { event_type, reason } = &poison else {
            panic!("{poison:?}");
        };
        assert_eq!(*event_type, "order.cancellation_requested");
        assert!(reason.starts_with("reason: "), "{reason}");
    }

    #[test]
    fn the_inbox_is_bound_to_every_wire_type_once() {
        assert_eq!(
            INBOUND_TYPES,
            [
                "order.placed",
                "payment.succeeded",
                "refund.succeeded",
                "shipment.dispatched",
                "order.cancellation_requested"
            ]
        );
    }
}
