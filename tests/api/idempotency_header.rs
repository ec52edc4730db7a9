//! One request, one key (docs/decisions.md): a request with two `Idempotency-Key` fields,
//! or with a list of keys in one, is refused with 400 and changes nothing, since taking one of
//! them silently would let a retry under the other apply the request twice. A comma inside a
//! quoted structured-field string is part of one key.

use axum::http::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::helpers::{
    TestApp, order_body, payment_body, raw_post, refund_body, shipment_body, unique_key,
};

/// Every POST on orders, each on an order its body would change, with that body.
async fn every_order_post(app: &TestApp) -> Vec<(String, Value)> {
    let pending = app.placed_order(1000).await;
    let paid = app.paid_order(1000).await;
    vec![
        ("/v1/orders".to_owned(), order_body("c-1", 1000, "EUR")),
        (
            format!("/v1/orders/{pending}/payments"),
            payment_body("tr-1", 1000, "EUR"),
        ),
        (
            format!("/v1/orders/{paid}/refunds"),
            refund_body("re-1", 100, "EUR"),
        ),
        (
            format!("/v1/orders/{paid}/ship"),
            shipment_body("DHL", "T-1"),
        ),
        (
            format!("/v1/orders/{pending}/cancel"),
            serde_json::json!({"reason": "r"}),
        ),
    ]
}

#[tokio::test]
async fn two_idempotency_key_fields_are_400_and_change_nothing() {
    let app = TestApp::spawn().await;
    let posts = every_order_post(&app).await;
    let before = app.snapshot().await;

    for (path, body) in &posts {
        let (first, second) = (unique_key(), unique_key());
        for keys in [[&first, &second], [&first, &first]] {
            let request = raw_post(
                path,
                &[
                    ("content-type", b"application/json"),
                    ("idempotency-key", keys[0].as_bytes()),
                    ("idempotency-key", keys[1].as_bytes()),
                ],
                body.to_string(),
            );
            let response = app.request(request).await;
            let problem = response.problem(StatusCode::BAD_REQUEST);
            assert_eq!(
                problem["type"], "https://order-service.dev/problems/invalid-idempotency-key",
                "POST {path}: {}",
                response.text
            );
        }
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_list_of_keys_in_one_field_is_400_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let posts = every_order_post(&app).await;
    let before = app.snapshot().await;

    for (path, body) in &posts {
        for list in ["a, b", "a,b", "k-1,", ",k-1", "\"a\", \"b\"", "\"a\",b"] {
            let request = raw_post(
                path,
                &[
                    ("content-type", b"application/json"),
                    ("idempotency-key", list.as_bytes()),
                ],
                body.to_string(),
            );
            let response = app.request(request).await;
            response.problem(StatusCode::BAD_REQUEST);
            assert_eq!(
                response.body["type"], "https://order-service.dev/problems/invalid-idempotency-key",
                "POST {path} with {list:?}: {}",
                response.text
            );
        }
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_comma_inside_a_quoted_key_is_part_of_the_one_key() {
    let app = TestApp::spawn().await;
    let body = order_body("c-1", 1000, "EUR");

    let placed = app.place_order("\"a, b\"", &body).await;

    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.text);
    let order: Uuid = placed.body["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        app.history(order).await[0]["cause"]["idempotency_key"],
        "a, b"
    );
    let again = app.place_order("\"a, b\"", &body).await;
    assert!(again.is_replay(), "{}", again.text);
    assert_eq!(app.count("orders").await, 1);
}
