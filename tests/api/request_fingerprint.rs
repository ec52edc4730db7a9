//! The fingerprint of a request is taken of the request as the service reads it: the order id in
//! its path however the client spelled it, so a retry is a replay in every spelling that names the
//! same order, and another order is another request.

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, unique_key};

#[tokio::test]
async fn a_cancel_retried_with_the_order_id_spelled_otherwise_is_a_replay() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let key = unique_key();
    let body = json!({"reason": "changed my mind"});
    let first = app
        .post(&format!("/v1/orders/{order}/cancel"), &key, &body)
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);

    let hyphenated = order.hyphenated().to_string();
    for spelled in [
        hyphenated.to_uppercase(),
        format!("{{{hyphenated}}}"),
        order.simple().to_string(),
        format!("%7B{hyphenated}%7D"),
    ] {
        let retry = app
            .post(&format!("/v1/orders/{spelled}/cancel"), &key, &body)
            .await;
        assert_eq!(retry.status, StatusCode::OK, "{spelled}: {}", retry.text);
        assert!(retry.is_replay(), "{spelled}: {:?}", retry.headers);
        assert_eq!(retry.text, first.text, "{spelled}");
    }
    assert_eq!(app.row(order).await.version, 2);
}

#[tokio::test]
async fn the_same_key_on_another_orders_cancel_is_still_another_request() {
    let app = TestApp::spawn().await;
    let (one, other) = (app.placed_order(1000).await, app.placed_order(1000).await);
    let key = unique_key();
    let body = json!({"reason": "r"});
    let first = app
        .post(&format!("/v1/orders/{one}/cancel"), &key, &body)
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let spelled = other.simple().to_string().to_uppercase();
    app.post(&format!("/v1/orders/{spelled}/cancel"), &key, &body)
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.row(other).await.status, "PENDING_PAYMENT");
}
