//! The messages of the AsyncAPI document and their schemas: each inbound type with the envelope
//! the consumer parses and its `data` struct, each outbound type with the envelope the relay
//! publishes (`data` = the order as the REST API shows it), the dead letter, and the headers the
//! service reads and writes. Every schema is derived by utoipa from the type the code uses.

use serde_json::{Map, Value, json};
use strum::IntoEnumIterator;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

use super::Ordered;
use crate::amqp::headers::{
    ATTEMPT_HEADER, ATTEMPT_SEAL_HEADER, HEADERS_DROPPED_HEADER, ORIGINAL_ROUTING_KEY_HEADER,
    REASON_HEADER,
};
use crate::amqp::inbound::{InboundType, RawEnvelope, data_schema};
use crate::app::OutboundEnvelope;
use crate::domain::{EventType, MAX_REASON_BYTES};

/// W3C Trace Context headers: continued from an inbound message, carried by every outbound one.
pub use crate::telemetry::trace_context::{
    TRACEPARENT as TRACEPARENT_HEADER, TRACESTATE as TRACESTATE_HEADER,
};

/// The id of the dead letter's message in `components.messages`.
pub(super) const DEAD_LETTER: &str = "dead-letter";

/// Schema names of the headers in `components.schemas`.
const INBOUND_HEADERS: &str = "InboundHeaders";
const OUTBOUND_HEADERS: &str = "OutboundHeaders";
const DEAD_LETTER_HEADERS: &str = "DeadLetterHeaders";

/// The inbound types, as routing keys and message ids, in the wire enum's order.
pub(super) fn inbound_types() -> impl Iterator<Item = &'static str> {
    InboundType::iter().map(<&'static str>::from)
}

/// The outbound types, as routing keys and message ids, in the enum's order.
pub(super) fn outbound_types() -> impl Iterator<Item = &'static str> {
    EventType::iter().map(<&'static str>::from)
}

/// `#/components/<kind>/<name>`.
pub(super) fn reference(kind: &str, name: &str) -> Value {
    json!({ "$ref": format!("#/components/{kind}/{name}") })
}

/// `components.messages`: one message per inbound and outbound type, and the dead letter.
pub(super) fn messages() -> Ordered {
    let inbound_frame = schema_json(RawEnvelope::schema());
    let outbound_frame = schema_json(OutboundEnvelope::schema());
    let mut messages = Ordered::default();
    for kind in InboundType::iter() {
        let name: &'static str = kind.into();
        let (data, schema) = data_schema(kind);
        let summary = description_of(&schema_json(schema));
        let payload = typed(
            &inbound_frame,
            name,
            reference("schemas", &data),
            "The inbound envelope; a body that is not one (not JSON, a key given twice, not a \
             JSON object, a field missing or unknown, invalid data or data that is not an \
             object) is poison and dead-lettered.",
        );
        messages.insert(name, message(name, &summary, INBOUND_HEADERS, payload));
    }
    for kind in EventType::iter() {
        let name: &'static str = kind.into();
        let data = outbound_frame["properties"]["data"].clone();
        let payload = typed(
            &outbound_frame,
            name,
            data,
            "The outbound envelope: the same frame as inbound events, `data` the order.",
        );
        let mut message = message(name, summary_of(kind), OUTBOUND_HEADERS, payload);
        // The relay sets the AMQP `type` property too (inbound, only the envelope's is read).
        message["bindings"]["amqp"]["messageType"] = json!(name);
        messages.insert(name, message);
    }
    messages.insert(DEAD_LETTER, dead_letter());
    messages
}

/// `components.schemas`: the envelopes' `data` types and what they refer to, and the headers.
pub(super) fn schemas() -> Ordered {
    // The outbound frame is each outbound message's payload; only what it refers to is a
    // component.
    let mut found: Vec<(String, RefOr<Schema>)> = InboundType::iter().map(data_schema).collect();
    OutboundEnvelope::schemas(&mut found);
    let mut schemas = Ordered::default();
    for (name, schema) in found {
        schemas.insert(name, schema_json(schema));
    }
    schemas.insert(INBOUND_HEADERS, inbound_headers());
    schemas.insert(OUTBOUND_HEADERS, outbound_headers());
    schemas.insert(DEAD_LETTER_HEADERS, dead_letter_headers());
    schemas
}

fn message(name: &str, summary: &str, headers: &str, payload: Value) -> Value {
    json!({
        "name": name,
        "title": name,
        "summary": summary,
        "contentType": "application/json",
        "headers": reference("schemas", headers),
        "payload": payload,
        "correlationId": {
            "description": "The envelope's `event_id`, unique per event: a redelivered copy \
                carries the same one. Outbound it is also the AMQP `message_id`; publishers \
                should set theirs the same way.",
            "location": "$message.payload#/event_id"
        },
        "bindings": { "amqp": { "bindingVersion": super::bindings::VERSION } }
    })
}

/// The envelope frame with `type` fixed to `name` and `data` set to `data`, described for readers
/// (the frame's own description is the type's, written for the code's).
fn typed(frame: &Value, name: &str, data: Value, description: &str) -> Value {
    let mut payload = frame.clone();
    payload["description"] = json!(description);
    let description = description_of(&payload["properties"]["type"]);
    payload["properties"]["type"] = json!({
        "type": "string", "const": name, "description": description
    });
    payload["properties"]["data"] = data;
    payload
}

fn summary_of(kind: EventType) -> &'static str {
    match kind {
        EventType::OrderCreated => "An order was placed (REST or `order.placed`).",
        EventType::OrderPaid => "An order holds its amount and is PAID.",
        EventType::OrderShipped => "A PAID order was shipped.",
        EventType::OrderCancelled => {
            "An order was cancelled: on request, or unpaid past ORDER_PAYMENT_TIMEOUT_SECS."
        }
        EventType::OrderRefundRequired => {
            "The order holds money that must go back (`refund_required` turned on)."
        }
        EventType::OrderRefunded => "A refund was recorded in the order's ledger.",
    }
}

fn dead_letter() -> Value {
    json!({
        "name": DEAD_LETTER,
        "title": "dead letter",
        "summary": "A message that can never be applied, kept with the reason.",
        "description": "The original message untouched: its body byte for byte (an inbound \
            envelope, or whatever poison arrived) and its `message_id`, `type` and \
            `content_type`, with the headers below.",
        "headers": reference("schemas", DEAD_LETTER_HEADERS),
        "payload": { "description": "The original body, byte for byte; it may not be JSON." },
        "bindings": { "amqp": { "bindingVersion": super::bindings::VERSION } }
    })
}

fn trace_headers() -> Map<String, Value> {
    let mut headers = Map::new();
    headers.insert(
        TRACEPARENT_HEADER.into(),
        json!({
            "type": "string",
            "pattern": "^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
            "description": "W3C Trace Context: the trace of the request or message that caused it.",
            "examples": ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"]
        }),
    );
    headers.insert(
        TRACESTATE_HEADER.into(),
        json!({"type": "string", "description": "W3C Trace Context: vendor-specific trace state."}),
    );
    headers
}

fn retry_headers() -> Map<String, Value> {
    let mut headers = Map::new();
    headers.insert(
        ATTEMPT_HEADER.into(),
        json!({"type": "integer", "minimum": 1,
               "description": "Which delivery through the retry path the message is on: 2 on \
                   the first retry (absent means 1). Read only with a valid `x-attempt-seal`."}),
    );
    headers.insert(
        ATTEMPT_SEAL_HEADER.into(),
        json!({"type": "string", "pattern": "^[0-9a-f]{64}$",
               "description": "The service's seal on `x-attempt`: a lower-case hex HMAC-SHA256 \
                   of the count, the message id and the body under a key only the service holds. \
                   A count without a valid seal (a publisher's) reads as 1."}),
    );
    headers.insert(
        REASON_HEADER.into(),
        json!({"type": "string", "maxLength": MAX_REASON_BYTES,
               "description": format!("Why it was retried or dead-lettered (at most \
                   {MAX_REASON_BYTES} bytes, cut with `…`), as `<class>: <detail>`; the class \
                   is `poison`, `premature`, `conflict` or `unexpected`.")}),
    );
    headers.insert(
        ORIGINAL_ROUTING_KEY_HEADER.into(),
        json!({"type": "string",
               "description": "The routing key it first arrived with (its type)."}),
    );
    headers.insert(
        HEADERS_DROPPED_HEADER.into(),
        json!({"type": "integer",
               "description": "The size of the original's headers, left out because they were \
                   too large to repeat."}),
    );
    headers
}

fn headers_schema(description: &str, properties: Map<String, Value>, required: &[&str]) -> Value {
    let mut schema = json!({
        "type": "object",
        "description": description,
        "properties": properties,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn inbound_headers() -> Value {
    let mut properties = trace_headers();
    properties.extend(retry_headers());
    headers_schema(
        "All optional. The trace headers are continued when present; the service's own headers \
         are set on a retry as it comes back to the inbox. Other headers are kept.",
        properties,
        &[],
    )
}

fn outbound_headers() -> Value {
    headers_schema(
        "Every outbound event carries the trace of what caused it.",
        trace_headers(),
        &[TRACEPARENT_HEADER],
    )
}

fn dead_letter_headers() -> Value {
    let mut properties = trace_headers();
    properties.extend(retry_headers());
    properties.insert(
        "x-death".into(),
        json!({"type": "array", "items": {"type": "object"},
               "description": "Set by the broker on the messages it dead-letters itself (an \
                   inbox delivery limit reached: reason `delivery_limit`); those carry no \
                   `x-error-reason`."}),
    );
    headers_schema(
        "The service's dead letters carry `x-error-reason`; the broker's carry `x-death`.",
        properties,
        &[],
    )
}

fn schema_json(schema: RefOr<Schema>) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

fn description_of(schema: &Value) -> String {
    schema["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
