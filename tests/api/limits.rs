//! What one request may cost: the cap on concurrent API requests (shed with 503 and
//! Retry-After, never queued), the time limit, and the size of bodies and headers.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::StatusCode;
use serde_json::json;
use sqlx::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tower::ServiceExt;
use uuid::Uuid;

use order_service::http::{self, HttpSettings, Limits, MAX_BODY_BYTES};

use crate::helpers::{TestApp, json_post, order_body, raw_post, unique_key};

fn with_limits(app: &mut TestApp, limits: Limits) {
    app.reroute(HttpSettings {
        limits,
        ..HttpSettings::default()
    });
}

/// A connection of the test's own holding the order's row lock until it is dropped or rolled
/// back: requests changing the order wait on it.
async fn lock_order(app: &TestApp, order: Uuid) -> sqlx::PgConnection {
    let mut connection = sqlx::PgConnection::connect(&app.db.url).await.unwrap();
    sqlx::query("BEGIN").execute(&mut connection).await.unwrap();
    sqlx::query("SELECT 1 FROM orders WHERE id = $1 FOR UPDATE")
        .bind(order)
        .execute(&mut connection)
        .await
        .unwrap();
    connection
}

async fn unlock(mut connection: sqlx::PgConnection) {
    sqlx::query("ROLLBACK")
        .execute(&mut connection)
        .await
        .unwrap();
}

#[tokio::test]
async fn requests_beyond_the_concurrency_cap_are_shed_with_503_and_retry_after() {
    let mut app = TestApp::spawn().await;
    let order = app.placed_order(100).await;
    with_limits(
        &mut app,
        Limits {
            max_concurrent_requests: 1,
            ..Limits::default()
        },
    );
    let lock = lock_order(&app, order).await;

    // The one slot is taken by a cancel waiting for the row lock.
    let router = app.router.clone();
    let cancel = json_post(
        &format!("/v1/orders/{order}/cancel"),
        json!({"reason": "too slow"}).to_string(),
    );
    let in_flight = tokio::spawn(async move { router.oneshot(cancel).await.unwrap().status() });

    app.wait_for_lock_waits(1).await;

    let shed = app.order(order).await;
    assert_eq!(
        shed.problem(StatusCode::SERVICE_UNAVAILABLE)["type"],
        "https://order-service.dev/problems/overloaded"
    );
    assert_eq!(shed.header("retry-after"), Some("1"));
    // Probes are outside the cap.
    assert_eq!(app.get("/health/live").await.status, StatusCode::OK);
    assert_eq!(app.get("/metrics").await.status, StatusCode::OK);

    unlock(lock).await;
    assert_eq!(in_flight.await.unwrap(), StatusCode::OK);
    // The slot is free again.
    assert_eq!(app.order(order).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_request_over_the_time_limit_is_503_and_its_retry_is_evaluated_afresh() {
    let mut app = TestApp::spawn().await;
    let order = app.placed_order(100).await;
    with_limits(
        &mut app,
        Limits {
            request_timeout: Duration::from_millis(300),
            ..Limits::default()
        },
    );
    let lock = lock_order(&app, order).await;
    let body = json!({"reason": "stuck"});

    let timed_out = app.cancel(order, "k-slow", &body).await;

    let problem = timed_out.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        problem["type"],
        "https://order-service.dev/problems/timeout"
    );
    assert_eq!(timed_out.header("retry-after"), Some("1"));
    unlock(lock).await;
    assert_eq!(
        app.row(order).await.status,
        "PENDING_PAYMENT",
        "nothing was committed"
    );

    // The retry runs under the default time limit: on a loaded machine a 300 ms bound could
    // cut it short too, and what is under test is what the abandoned attempt left behind.
    with_limits(&mut app, Limits::default());
    let retry = app.cancel(order, "k-slow", &body).await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.text);
    assert!(
        !retry.is_replay(),
        "the abandoned attempt left no row to replay"
    );
    assert_eq!(app.checked_history(order).await.len(), 2);
}

#[tokio::test]
async fn a_body_over_64_kib_is_413_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let customer = "c".repeat(MAX_BODY_BYTES);
    let body = json!({"customer_id": customer, "amount_minor": 1, "currency": "EUR"}).to_string();

    let response = app.request(json_post("/v1/orders", body)).await;

    response.problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(app.snapshot().await, [0, 0, 0, 0]);
}

/// Sends raw bytes to the service's server over TCP and returns the status line of its answer.
async fn status_line_of(raw: Vec<u8>) -> String {
    let app = TestApp::spawn().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(http::serve(
        listener,
        app.router.clone(),
        http::ConnectionLimits::default(),
        std::future::pending(),
    ));
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    // The server may answer and close before reading everything: a failed write is expected.
    let _ = stream.write_all(&raw).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer)).await;
    server.abort();
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test]
async fn headers_beyond_the_servers_limits_are_refused_with_431() {
    let huge = format!(
        "GET /health/live HTTP/1.1\r\nhost: x\r\nx-filler: {}\r\nconnection: close\r\n\r\n",
        "a".repeat(512 * 1024)
    );
    let status = status_line_of(huge.into_bytes()).await;
    assert!(status.starts_with("HTTP/1.1 431"), "{status:?}");

    let many: String = (0..150).map(|i| format!("x-h{i}: v\r\n")).collect();
    let status = status_line_of(
        format!("GET /health/live HTTP/1.1\r\nhost: x\r\n{many}connection: close\r\n\r\n")
            .into_bytes(),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 431"), "{status:?}");

    // Within the limits, the same request is served.
    let status = status_line_of(
        b"GET /health/live HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n".to_vec(),
    )
    .await;
    assert!(status.starts_with("HTTP/1.1 200"), "{status:?}");
}

/// A POST to `/v1/orders` whose body starts but never ends; `started` fires once the server has
/// begun reading it.
fn slow_body_post(started: tokio::sync::oneshot::Sender<()>) -> axum::http::Request<Body> {
    let chunks = futures::stream::unfold(Some(started), |started| async move {
        match started {
            Some(started) => {
                let _ = started.send(());
                Some((
                    Ok::<_, std::io::Error>(Bytes::from_static(b"{\"customer_id\":")),
                    None,
                ))
            }
            None => futures::future::pending().await,
        }
    });
    raw_post(
        "/v1/orders",
        &[
            ("content-type", b"application/json"),
            ("idempotency-key", unique_key().as_bytes()),
        ],
        Body::from_stream(chunks),
    )
}

#[tokio::test]
async fn slow_bodies_do_not_take_the_slots_of_other_requests() {
    let mut app = TestApp::spawn().await;
    let order = app.placed_order(100).await;
    with_limits(
        &mut app,
        Limits {
            max_concurrent_requests: 2,
            ..Limits::default()
        },
    );
    let mut slow = Vec::new();
    for _ in 0..2 {
        let (started, reading) = tokio::sync::oneshot::channel();
        let router = app.router.clone();
        let request = slow_body_post(started);
        slow.push(tokio::spawn(async move { router.oneshot(request).await }));
        reading.await.expect("the server reads the slow body");
    }

    let read = app.order(order).await;
    let placed = app
        .place_order(&unique_key(), &order_body("c-2", 100, "EUR"))
        .await;

    assert_eq!(read.status, StatusCode::OK, "{}", read.text);
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.text);
    for request in slow {
        request.abort();
    }
}

#[tokio::test]
async fn a_body_not_received_within_the_body_read_timeout_is_408() {
    let mut app = TestApp::spawn().await;
    with_limits(
        &mut app,
        Limits {
            body_read_timeout: Duration::from_millis(200),
            ..Limits::default()
        },
    );
    let (started, _) = tokio::sync::oneshot::channel();

    let response = app.request(slow_body_post(started)).await;

    assert_eq!(
        response.problem(StatusCode::REQUEST_TIMEOUT)["type"],
        "https://order-service.dev/problems/body-timeout"
    );
    assert_eq!(app.snapshot().await, [0, 0, 0, 0]);
}
