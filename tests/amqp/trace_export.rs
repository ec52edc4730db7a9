//! The service's binary exporting its spans over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set
//! (and flushing the last ones at shutdown), sending nothing when it is not, and writing
//! `trace_id`/`span_id` into its JSON logs (docs/operations/observability.md "Tracing").

use serde_json::{Value, json};

use order_service_testkit::{eventually, http};

use crate::collector::Collector;
use crate::helpers::{Harness, TempFile, WAIT};
use crate::trace_propagation::{Traceparent, event_traceparent, traceparent};

const CALLER_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

fn caller() -> String {
    format!("00-{CALLER_TRACE}-{CALLER_SPAN}-01")
}

/// Places an order over the running binary's REST API as a caller in [`CALLER_TRACE`]; returns
/// the response body.
async fn place_traced(port: u16) -> Value {
    let body = json!({"customer_id": "c-1", "amount_minor": 1000, "currency": "EUR"}).to_string();
    let (status, answer) = http::post_with(
        port,
        "/v1/orders",
        "k-traced",
        &body,
        &[("traceparent", &caller())],
    )
    .await
    .expect("POST /v1/orders");
    assert_eq!(status, 201, "{answer}");
    serde_json::from_str(&answer).expect("an order")
}

/// The event the service published for the request, read from the test's subscriber queue.
async fn published_trace(h: &Harness, queue: &str) -> Traceparent {
    let sent = event_traceparent(&h.receive(queue, 1).await[0]);
    assert_eq!(sent.trace_id, CALLER_TRACE);
    sent
}

#[tokio::test]
async fn spans_are_exported_over_otlp_and_the_last_ones_flushed_at_shutdown() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    let collector = Collector::start().await;
    let service = h.start_service(
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.as_str()),
            // No scheduled export: whatever arrives was flushed by the shutdown.
            ("OTEL_BSP_SCHEDULE_DELAY", "3600000"),
        ],
        None,
    );
    service.wait_ready().await;

    place_traced(service.http_port).await;
    let sent = published_trace(&h, &events).await;
    assert!(collector.received().is_empty(), "nothing before shutdown");
    assert!(service.terminate().await.success());

    let received = collector.received();
    assert!(!received.is_empty(), "the shutdown flushed the spans");
    for request in &received {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/traces")
        );
        assert_eq!(
            request.content_type.as_deref(),
            Some("application/x-protobuf")
        );
    }
    let ours: Vec<_> = collector
        .spans()
        .into_iter()
        .filter(|span| hex::encode(&span.trace_id) == CALLER_TRACE)
        .collect();
    let request = ours
        .iter()
        .find(|span| span.name == "http")
        .expect("the request's span, in the caller's trace");
    assert_eq!(hex::encode(&request.parent_span_id), CALLER_SPAN);
    let publish = ours
        .iter()
        .find(|span| hex::encode(&span.span_id) == sent.span_id)
        .expect("the span the event names as its parent was exported");
    assert_eq!(publish.name, "publish");
    assert_eq!(
        publish.parent_span_id, request.span_id,
        "published under the request's span"
    );
    assert!(
        ours.iter()
            .all(|span| span.service_name.as_deref() == Some("order-service")),
        "{ours:?}"
    );
}

#[tokio::test]
async fn without_the_endpoint_no_span_is_sent_and_traces_still_propagate() {
    let mut h = Harness::start().await;
    let events = h.subscribe().await;
    let collector = Collector::start().await;
    let traces = format!("{}/v1/traces", collector.endpoint);
    let service = h.start_service(
        &[
            // Every other OpenTelemetry setting points at the collector and would send at once.
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_BSP_SCHEDULE_DELAY", "10"),
        ],
        None,
    );
    service.wait_ready().await;

    place_traced(service.http_port).await;
    published_trace(&h, &events).await;
    assert!(service.terminate().await.success());
    assert!(
        collector.received().is_empty(),
        "{:?}",
        collector.received()
    );
}

#[tokio::test]
async fn a_json_log_line_of_a_traced_request_carries_its_trace_and_span_ids() {
    let h = Harness::start().await;
    let log = TempFile(std::env::temp_dir().join(format!("{}.log", h.db.name)));
    let service = h.start_service(
        &[
            ("LOG_FORMAT", "json"),
            // The request's span logs its start and end at debug level.
            ("RUST_LOG", "info,tower_http=debug"),
        ],
        Some(&log.0),
    );
    service.wait_ready().await;

    let order = place_traced(service.http_port).await;
    // The request's own span: the context the outbox row of its event keeps.
    let stored: String = sqlx::query_scalar("SELECT traceparent FROM outbox WHERE order_id = $1")
        .bind(uuid::Uuid::parse_str(order["id"].as_str().expect("an id")).expect("a UUID"))
        .fetch_one(&h.db.pool)
        .await
        .expect("the event's row");
    let request_span = traceparent(&stored);
    assert_eq!(request_span.trace_id, CALLER_TRACE);

    let lines = eventually("log lines of the request", WAIT, || async {
        let text = std::fs::read_to_string(&log.0).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).expect("every line is JSON"))
            .filter(|line: &Value| line["spans"][0]["name"] == "http")
            .filter(|line| line["trace_id"] == CALLER_TRACE)
            .collect();
        (!lines.is_empty()).then_some(lines)
    })
    .await;
    for line in &lines {
        assert_eq!(line["span_id"], request_span.span_id.as_str(), "{line}");
    }
    assert!(service.terminate().await.success());
}
