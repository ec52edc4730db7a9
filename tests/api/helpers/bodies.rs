//! What tests send: request bodies of each command, fresh keys, raw requests built byte by byte,
//! and inbound envelopes.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request};
use serde_json::{Value, json};
use uuid::Uuid;

/// A GET of `path`, without a body.
pub(super) fn get_request(path: &str) -> Request<Body> {
    Request::get(path)
        .body(Body::empty())
        .expect("valid request")
}

/// A POST built byte by byte: header values may be anything the HTTP layer lets through, and the
/// body is sent exactly as given (no content type unless one is among `headers`).
pub fn raw_post(path: &str, headers: &[(&str, &[u8])], body: impl Into<Body>) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(path);
    for (name, value) in headers {
        builder = builder.header(
            *name,
            HeaderValue::from_bytes(value).expect("a header value the HTTP layer accepts"),
        );
    }
    builder.body(body.into()).expect("valid request")
}

/// A raw JSON POST with a fresh Idempotency-Key.
pub fn json_post(path: &str, body: impl Into<Body>) -> Request<Body> {
    raw_post(
        path,
        &[
            ("content-type", b"application/json"),
            ("idempotency-key", unique_key().as_bytes()),
        ],
        body,
    )
}

/// An inbound envelope's bytes.
pub fn envelope(event_id: &str, event_type: &str, data: Value) -> Vec<u8> {
    json!({"event_id": event_id, "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
        .to_string()
        .into_bytes()
}

pub fn unique_key() -> String {
    Uuid::new_v4().to_string()
}

pub fn order_body(customer: &str, amount: i64, currency: &str) -> Value {
    json!({"customer_id": customer, "amount_minor": amount, "currency": currency})
}

pub fn payment_body(transfer_id: &str, amount: i64, currency: &str) -> Value {
    json!({"transfer_id": transfer_id, "amount_minor": amount, "currency": currency})
}

pub fn shipment_body(carrier: &str, tracking: &str) -> Value {
    json!({"carrier": carrier, "tracking_number": tracking})
}

pub fn refund_body(refund_id: &str, amount: i64, currency: &str) -> Value {
    json!({"refund_id": refund_id, "amount_minor": amount, "currency": currency})
}
