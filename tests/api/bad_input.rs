//! Bad input at every mutating endpoint: each is refused with problem+json (never 500, never an
//! internal detail) and leaves every table as it was. Unknown fields are rejected, not ignored.

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{TestApp, TestResponse, json_post, raw_post, unique_key};

/// An application with a pending order (for payments and cancellations) and a paid one (for
/// shipments), so that a request which slipped through validation would visibly change something.
struct Fixture {
    app: TestApp,
    place: String,
    pay: String,
    ship: String,
    cancel: String,
}

async fn fixture() -> Fixture {
    let app = TestApp::spawn().await;
    let pending = app.placed_order(1000).await;
    let paid = app.paid_order(1000).await;
    Fixture {
        app,
        place: "/v1/orders".into(),
        pay: format!("/v1/orders/{pending}/payments"),
        ship: format!("/v1/orders/{paid}/ship"),
        cancel: format!("/v1/orders/{pending}/cancel"),
    }
}

/// A problem+json with `status`, and nothing in it that only the server's insides should know.
#[track_caller]
fn assert_clean_problem(response: &TestResponse, status: StatusCode, context: &str) {
    assert_eq!(response.status, status, "{context}: {}", response.text);
    response.problem(status);
    let text = response.text.to_lowercase();
    for internal in [
        "sqlx",
        "postgres",
        "sqlstate",
        "panicked",
        "order_transitions",
    ] {
        assert!(
            !text.contains(internal),
            "{context}: the problem leaks {internal:?}: {}",
            response.text
        );
    }
}

impl Fixture {
    /// Sends `body` byte for byte (JSON content type, fresh key) and checks that it is refused
    /// with `status` and that no table changed.
    async fn rejects(&self, path: &str, body: &str, status: StatusCode) {
        let before = self.app.snapshot().await;
        let response = self.app.request(json_post(path, body.to_owned())).await;
        let context = format!("POST {path} {}", truncated(body));
        assert_clean_problem(&response, status, &context);
        assert_eq!(self.app.snapshot().await, before, "{context}");
    }

    async fn accepts(&self, path: &str, body: &str) -> TestResponse {
        let response = self.app.request(json_post(path, body.to_owned())).await;
        assert!(
            response.status.is_success(),
            "POST {path} {}: {}",
            truncated(body),
            response.text
        );
        response
    }
}

fn truncated(body: &str) -> String {
    body.chars().take(120).collect()
}

fn place(customer_id: &str, amount: &str, currency: &str) -> String {
    format!(r#"{{"customer_id":{customer_id},"amount_minor":{amount},"currency":{currency}}}"#)
}

fn pay(transfer_id: &str, amount: &str, currency: &str) -> String {
    format!(r#"{{"transfer_id":{transfer_id},"amount_minor":{amount},"currency":{currency}}}"#)
}

fn ship(carrier: &str, tracking: &str) -> String {
    format!(r#"{{"carrier":{carrier},"tracking_number":{tracking}}}"#)
}

/// A JSON string of `n` copies of `c`.
fn text(c: char, n: usize) -> String {
    json!(c.to_string().repeat(n)).to_string()
}

#[tokio::test]
async fn malformed_json_is_400() {
    let f = fixture().await;

    for path in [&f.place, &f.pay, &f.ship, &f.cancel] {
        for body in [
            "",
            "not json",
            "{\"customer_id\": \"c\",",
            "{'a': 1}",
            "{}}",
        ] {
            f.rejects(path, body, StatusCode::BAD_REQUEST).await;
        }
    }
}

#[tokio::test]
async fn fields_of_the_wrong_type_are_422() {
    let f = fixture().await;

    for body in [
        place(r#""c""#, r#""1000""#, r#""EUR""#),
        place(r#""c""#, "10.5", r#""EUR""#),
        place(r#""c""#, "1000.0", r#""EUR""#),
        place(r#""c""#, "1e3", r#""EUR""#),
        place("42", "1000", r#""EUR""#),
        place(r#""c""#, "1000", "978"),
        place(r#""c""#, "null", r#""EUR""#),
    ] {
        f.rejects(&f.place, &body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    }
    for body in [
        pay(r#""t""#, r#""1000""#, r#""EUR""#),
        pay(r#""t""#, "999.99", r#""EUR""#),
        pay("7", "1000", r#""EUR""#),
    ] {
        f.rejects(&f.pay, &body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    }
    f.rejects(
        &f.ship,
        &ship("1", r#""T""#),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    f.rejects(
        &f.cancel,
        r#"{"reason":true}"#,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}

#[tokio::test]
async fn a_missing_field_is_422() {
    let f = fixture().await;

    for (path, body) in [
        (&f.place, r#"{"customer_id":"c","amount_minor":1000}"#),
        (&f.place, r#"{"customer_id":"c","currency":"EUR"}"#),
        (&f.place, r#"{"amount_minor":1000,"currency":"EUR"}"#),
        (&f.pay, r#"{"amount_minor":1000,"currency":"EUR"}"#),
        (&f.pay, r#"{"transfer_id":"t","currency":"EUR"}"#),
        (&f.ship, r#"{"carrier":"DHL"}"#),
        (&f.ship, r#"{"tracking_number":"T"}"#),
        (&f.cancel, "{}"),
    ] {
        f.rejects(path, body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    }
}

#[tokio::test]
async fn amounts_outside_one_to_ten_to_the_twelfth_are_422() {
    let f = fixture().await;

    for amount in ["-1", "0", "1000000000001", "10000000000000000000"] {
        f.rejects(
            &f.place,
            &place(r#""c""#, amount, r#""EUR""#),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        f.rejects(
            &f.pay,
            &pay(r#""t""#, amount, r#""EUR""#),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
}

#[tokio::test]
async fn currencies_must_be_known_upper_case_iso_4217_codes() {
    let f = fixture().await;

    for currency in [r#""eur""#, r#""ABC""#, r#""EURO""#, r#""EU""#, r#""""#] {
        f.rejects(
            &f.place,
            &place(r#""c""#, "1000", currency),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        f.rejects(
            &f.pay,
            &pay(r#""t""#, "1000", currency),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    }
}

#[tokio::test]
async fn text_fields_beyond_their_bounds_are_422() {
    let f = fixture().await;
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;

    for customer in [text('c', 65), text('é', 65), json!("").to_string()] {
        let body = place(&customer, "1000", r#""EUR""#);
        f.rejects(&f.place, &body, unprocessable).await;
    }
    f.rejects(
        &f.place,
        &place(r#""a\nb""#, "1000", r#""EUR""#),
        unprocessable,
    )
    .await;
    for transfer in [text('t', 129), json!("").to_string()] {
        let body = pay(&transfer, "1000", r#""EUR""#);
        f.rejects(&f.pay, &body, unprocessable).await;
    }
    for (carrier, tracking) in [
        (text('c', 65), r#""T""#.to_owned()),
        (r#""DHL""#.to_owned(), text('t', 65)),
        (json!("").to_string(), r#""T""#.to_owned()),
        (r#""DHL""#.to_owned(), json!("").to_string()),
    ] {
        f.rejects(&f.ship, &ship(&carrier, &tracking), unprocessable)
            .await;
    }
    for reason in [text('r', 501), json!("").to_string()] {
        let body = format!(r#"{{"reason":{reason}}}"#);
        f.rejects(&f.cancel, &body, unprocessable).await;
    }
}

#[tokio::test]
async fn values_at_their_bounds_are_accepted() {
    let f = fixture().await;

    let order = f
        .accepts(
            &f.place,
            &place(&text('c', 64), "1000000000000", r#""EUR""#),
        )
        .await;
    assert_eq!(order.body["amount_minor"], 1_000_000_000_000_i64);
    let pending: Uuid = order.body["id"].as_str().unwrap().parse().unwrap();
    f.accepts(
        &format!("/v1/orders/{pending}/payments"),
        &pay(&text('t', 128), "1", r#""EUR""#),
    )
    .await;
    f.accepts(&f.ship, &ship(&text('c', 64), &text('t', 64)))
        .await;
    f.accepts(
        &format!("/v1/orders/{pending}/cancel"),
        &format!(r#"{{"reason":{}}}"#, text('r', 500)),
    )
    .await;
}

#[tokio::test]
async fn unknown_fields_are_rejected_with_422() {
    let f = fixture().await;

    for (path, body) in [
        (
            &f.place,
            r#"{"customer_id":"c","amount_minor":1000,"currency":"EUR","note":"x"}"#,
        ),
        (
            &f.place,
            r#"{"customer_id":"c","amount_minor":1000,"currency":"EUR","status":"PAID"}"#,
        ),
        (
            &f.pay,
            r#"{"transfer_id":"t","amount_minor":1000,"currency":"EUR","amount":5}"#,
        ),
        (
            &f.ship,
            r#"{"carrier":"DHL","tracking_number":"T","eta":"tomorrow"}"#,
        ),
        (&f.cancel, r#"{"reason":"r","refund":false}"#),
    ] {
        f.rejects(path, body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    }
}

#[tokio::test]
async fn a_body_over_64_kib_is_413() {
    let f = fixture().await;
    let huge = text('x', 70 * 1024);

    f.rejects(
        &f.place,
        &place(&huge, "1000", r#""EUR""#),
        StatusCode::PAYLOAD_TOO_LARGE,
    )
    .await;
    f.rejects(
        &f.pay,
        &pay(&huge, "1000", r#""EUR""#),
        StatusCode::PAYLOAD_TOO_LARGE,
    )
    .await;
    f.rejects(
        &f.cancel,
        &format!(r#"{{"reason":{huge}}}"#),
        StatusCode::PAYLOAD_TOO_LARGE,
    )
    .await;
}

#[tokio::test]
async fn a_body_that_is_not_declared_as_json_is_415() {
    let f = fixture().await;
    let before = f.app.snapshot().await;
    let body = place(r#""c""#, "1000", r#""EUR""#);

    for content_type in [None, Some(&b"text/plain"[..]), Some(b"application/xml")] {
        let key = unique_key();
        let mut headers: Vec<(&str, &[u8])> = vec![("idempotency-key", key.as_bytes())];
        if let Some(content_type) = content_type {
            headers.push(("content-type", content_type));
        }
        let response = f
            .app
            .request(raw_post(&f.place, &headers, body.clone()))
            .await;
        assert_clean_problem(
            &response,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            &format!("content type {content_type:?}"),
        );
    }
    assert_eq!(f.app.snapshot().await, before);
}

#[tokio::test]
async fn an_order_id_in_the_body_that_is_not_a_uuid_is_422() {
    let f = fixture().await;

    for id in [r#""not-a-uuid""#, "42", r#""""#] {
        let body =
            format!(r#"{{"id":{id},"customer_id":"c","amount_minor":1000,"currency":"EUR"}}"#);
        f.rejects(&f.place, &body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
    }
}

#[tokio::test]
async fn an_order_id_in_the_path_that_is_not_a_uuid_is_400() {
    let f = fixture().await;

    for path in [
        "/v1/orders/not-a-uuid/payments",
        "/v1/orders/not-a-uuid/ship",
        "/v1/orders/not-a-uuid/cancel",
    ] {
        f.rejects(path, r#"{"reason":"r"}"#, StatusCode::BAD_REQUEST)
            .await;
    }
}

#[tokio::test]
async fn deeply_nested_json_is_refused_without_a_crash() {
    let f = fixture().await;
    let depth = 20_000;
    let nested = format!(
        r#"{{"customer_id":"c","amount_minor":1000,"currency":"EUR","x":{}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let before = f.app.snapshot().await;

    let response = f.app.request(json_post(&f.place, nested)).await;

    assert!(
        matches!(
            response.status,
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY
        ),
        "{}",
        response.text
    );
    assert_clean_problem(&response, response.status, "deeply nested JSON");
    assert_eq!(f.app.snapshot().await, before);
}
