//! W3C trace context end to end (docs/operations/observability.md "Tracing"): an event carries the
//! trace of the request or message that caused it, under a span of the service's own; retries and
//! dead letters keep the trace; a missing or malformed `traceparent` starts a new trace and never
//! fails anything.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use serde_json::json;
use uuid::Uuid;

use order_service_testkit::AMQP_URL;

use crate::helpers::{Harness, Published, envelope, relay_config};

/// The caller's span in a trace of its own, as a W3C `traceparent`.
const CALLER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";

fn caller_traceparent() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

/// A `traceparent` as the test reads it, independently of the service's parser.
#[derive(Debug, PartialEq, Eq)]
pub struct Traceparent {
    pub trace_id: String,
    pub span_id: String,
    pub flags: String,
}

/// Reads a version-00 `traceparent`, asserting it is well formed.
pub fn traceparent(value: &str) -> Traceparent {
    let fields: Vec<&str> = value.split('-').collect();
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            && s.bytes().any(|b| b != b'0')
    };
    assert!(
        fields.len() == 4
            && fields[0] == "00"
            && hex(fields[1], 32)
            && hex(fields[2], 16)
            && fields[3].len() == 2,
        "not a valid traceparent: {value:?}"
    );
    Traceparent {
        trace_id: fields[1].to_owned(),
        span_id: fields[2].to_owned(),
        flags: fields[3].to_owned(),
    }
}

/// A text header of a message, if present.
pub fn text_header(headers: &FieldTable, name: &str) -> Option<String> {
    match headers.inner().get(name)? {
        AMQPValue::LongString(text) => Some(String::from_utf8_lossy(text.as_bytes()).into_owned()),
        AMQPValue::ShortString(text) => Some(text.to_string()),
        other => panic!("{name} is not text: {other:?}"),
    }
}

/// The `traceparent` an event was published with.
pub fn event_traceparent(event: &Published) -> Traceparent {
    traceparent(
        &text_header(&event.headers, "traceparent")
            .unwrap_or_else(|| panic!("{} has no traceparent", event.routing_key)),
    )
}

fn with_trace(traceparent: &str, tracestate: Option<&str>) -> FieldTable {
    let mut headers = FieldTable::default();
    headers.insert(
        "traceparent".into(),
        AMQPValue::LongString(traceparent.into()),
    );
    if let Some(state) = tracestate {
        headers.insert("tracestate".into(), AMQPValue::LongString(state.into()));
    }
    headers
}

/// Publishes an inbound event with `headers`.
async fn publish_with(h: &Harness, event_type: &str, data: serde_json::Value, headers: FieldTable) {
    let event_id = Uuid::new_v4().to_string();
    let body = envelope(&event_id, event_type, data).to_string();
    h.publish_raw(
        event_type,
        body.as_bytes(),
        BasicProperties::default()
            .with_message_id(event_id.as_str().into())
            .with_content_type("application/json".into())
            .with_headers(headers),
    )
    .await;
}

fn place_body(order: Uuid) -> serde_json::Value {
    json!({"id": order, "customer_id": "c-1", "amount_minor": 1000, "currency": "EUR"})
}

#[tokio::test]
async fn an_event_caused_by_a_request_carries_the_requests_trace_under_the_services_span() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    h.spawn_relay(AMQP_URL, relay_config());

    let status = h
        .post_over_rest_with(
            "/v1/orders",
            "k-1",
            place_body(Uuid::new_v4()),
            &[
                ("traceparent", &caller_traceparent()),
                ("tracestate", "vendor=opaque"),
            ],
        )
        .await;
    assert_eq!(status, 201);

    let created = &h.receive(&events, 1).await[0];
    let sent = event_traceparent(created);
    assert_eq!(sent.trace_id, CALLER_TRACE, "the caller's trace");
    assert_ne!(
        sent.span_id, CALLER_SPAN,
        "under a span of the service's own"
    );
    assert_eq!(sent.flags, "01", "sampled, as the caller said");
    assert_eq!(
        text_header(&created.headers, "tracestate").as_deref(),
        Some("vendor=opaque")
    );
}

#[tokio::test]
async fn a_request_without_a_valid_traceparent_succeeds_and_its_event_starts_a_trace() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    h.spawn_relay(AMQP_URL, relay_config());

    let without = h
        .post_over_rest("/v1/orders", "k-none", place_body(Uuid::new_v4()))
        .await;
    let malformed = h
        .post_over_rest_with(
            "/v1/orders",
            "k-bad",
            place_body(Uuid::new_v4()),
            &[
                ("traceparent", &caller_traceparent().to_uppercase()),
                ("tracestate", "a=1"),
            ],
        )
        .await;
    assert_eq!((without.as_u16(), malformed.as_u16()), (201, 201));

    let received = h.receive(&events, 2).await;
    let traces: Vec<Traceparent> = received.iter().map(event_traceparent).collect();
    assert_ne!(traces[0].trace_id, traces[1].trace_id, "a trace each");
    assert!(traces.iter().all(|t| t.trace_id != CALLER_TRACE));
    assert!(
        received
            .iter()
            .all(|e| text_header(&e.headers, "tracestate").is_none()),
        "a tracestate without a valid traceparent means nothing"
    );
}

#[tokio::test]
async fn a_messages_trace_goes_through_a_retry_into_the_event_it_finally_causes() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    h.spawn_relay(AMQP_URL, relay_config());
    h.spawn_consumer();
    let order = Uuid::new_v4();

    // The payment arrives before its order: premature, so it goes through the retry path.
    publish_with(
        &h,
        "payment.succeeded",
        json!({"order_id": order, "transfer_id": "t-1", "amount_minor": 1000, "currency": "EUR"}),
        with_trace(&caller_traceparent(), None),
    )
    .await;
    h.wait_until_retried(1).await;
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PAID").await;

    let received = h.receive(&events, 2).await;
    let of = |kind: &str| {
        let event = received
            .iter()
            .find(|e| e.routing_key == kind)
            .unwrap_or_else(|| panic!("no {kind}"));
        event_traceparent(event)
    };
    let paid = of("order.paid");
    assert_eq!(paid.trace_id, CALLER_TRACE, "the payment message's trace");
    assert_ne!(paid.span_id, CALLER_SPAN);
    assert_ne!(
        of("order.created").trace_id,
        CALLER_TRACE,
        "the order was placed by a message without a trace: a trace of its own"
    );
}

#[tokio::test]
async fn a_dead_letter_keeps_the_messages_trace() {
    let mut h = Harness::start().await;
    h.spawn_consumer();

    h.publish_raw(
        "payment.succeeded",
        b"{poison",
        BasicProperties::default().with_headers(with_trace(&caller_traceparent(), Some("v=1"))),
    )
    .await;

    let letter = &h.wait_for_dead_letters(1).await[0];
    let kept = traceparent(&text_header(&letter.headers, "traceparent").expect("a traceparent"));
    assert_eq!(kept.trace_id, CALLER_TRACE);
    assert_ne!(
        kept.span_id, CALLER_SPAN,
        "named by the span that handled it"
    );
    assert_eq!(
        text_header(&letter.headers, "tracestate").as_deref(),
        Some("v=1")
    );
}

#[tokio::test]
async fn a_message_with_a_malformed_trace_context_is_applied_in_a_new_trace() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    h.spawn_relay(AMQP_URL, relay_config());
    h.spawn_consumer();
    let order = Uuid::new_v4();

    let headers = with_trace("00-not-a-trace-01", Some(&"k=v,".repeat(5_000)));
    publish_with(
        &h,
        "order.placed",
        json!({"order_id": order, "customer_id": "c-1", "amount_minor": 1000, "currency": "EUR"}),
        headers,
    )
    .await;

    h.wait_for_status(order, "PENDING_PAYMENT").await;
    let created = &h.receive(&events, 1).await[0];
    assert_ne!(event_traceparent(created).trace_id, CALLER_TRACE);
    assert_eq!(text_header(&created.headers, "tracestate"), None);
}

#[tokio::test]
async fn an_event_stored_without_a_trace_context_is_published_in_a_trace_of_its_own() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    // A row as the service wrote it before the outbox kept trace contexts.
    sqlx::query(
        "INSERT INTO outbox (event_id, event_type, order_id, order_version, payload) \
         VALUES ($1, 'order.created', $2, 1, '{\"type\": \"order.created\"}')",
    )
    .bind(Uuid::new_v4())
    .bind(Uuid::new_v4())
    .execute(&h.db.pool)
    .await
    .expect("an outbox row without a trace context");
    h.spawn_relay(AMQP_URL, relay_config());

    let published = &h.receive(&events, 1).await[0];
    assert_eq!(event_traceparent(published).flags, "01");
}
