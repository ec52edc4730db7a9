//! Shipping and cancelling: the legal transitions, their replays, their conflicts, and `If-Match`.

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, shipment_body, unique_key};

#[tokio::test]
async fn shipping_a_paid_order_ships_it_with_its_history_and_event() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;
    assert_eq!(app.order(order).await.header("etag"), Some("\"2\""));

    let response = app
        .ship(order, "ship-1", &shipment_body("DHL", "JD0146"))
        .await;

    assert_eq!(response.status, StatusCode::OK, "{}", response.text);
    assert!(!response.is_replay());
    assert_eq!(response.header("etag"), Some("\"3\""));
    assert_eq!(response.body["status"], "SHIPPED");
    assert_eq!(response.body["version"], 3);
    assert_eq!(
        response.body["shipment"],
        json!({"carrier": "DHL", "tracking_number": "JD0146"})
    );
    assert_eq!(app.order(order).await.header("etag"), Some("\"3\""));
    let (status, version, carrier, tracking): (String, i64, String, String) = sqlx::query_as(
        "SELECT status, version, carrier, tracking_number FROM orders WHERE id = $1",
    )
    .bind(order)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        (
            status.as_str(),
            version,
            carrier.as_str(),
            tracking.as_str()
        ),
        ("SHIPPED", 3, "DHL", "JD0146")
    );
    let history = app.checked_history(order).await;
    assert_eq!(history[2]["kind"], "shipped");
    assert_eq!(history[2]["from"], "PAID");
    assert_eq!(history[2]["to"], "SHIPPED");
    assert_eq!(history[2]["cause"]["idempotency_key"], "ship-1");
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.paid", "order.shipped"]
    );
}

#[tokio::test]
async fn shipping_a_pending_order_is_an_invalid_transition_with_the_current_state() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let before = app.snapshot().await;

    let response = app
        .ship(order, &unique_key(), &shipment_body("DHL", "T-1"))
        .await;

    let problem = response.problem(StatusCode::CONFLICT);
    assert_eq!(problem["current_status"], "PENDING_PAYMENT");
    assert_eq!(problem["current_version"], 1);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(order).await.status, "PENDING_PAYMENT");
}

#[tokio::test]
async fn shipping_a_cancelled_order_is_an_invalid_transition() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.cancelled(order, "r").await;
    let before = app.snapshot().await;

    let response = app
        .ship(order, &unique_key(), &shipment_body("DHL", "T-1"))
        .await;

    let problem = response.problem(StatusCode::CONFLICT);
    assert_eq!(problem["current_status"], "CANCELLED");
    assert_eq!(problem["current_version"], 2);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn shipping_again_with_the_same_shipment_replays_and_with_another_conflicts() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;
    let first = app.shipped(order, "DHL", "T-1").await;
    let before = app.snapshot().await;

    let same = app
        .ship(order, &unique_key(), &shipment_body("DHL", "T-1"))
        .await;
    let other_tracking = app
        .ship(order, &unique_key(), &shipment_body("DHL", "T-2"))
        .await;
    let other_carrier = app
        .ship(order, &unique_key(), &shipment_body("UPS", "T-1"))
        .await;

    assert_eq!(same.status, StatusCode::OK, "{}", same.text);
    assert!(same.is_replay());
    assert_eq!(same.body, first.body);
    assert_eq!(same.header("etag"), Some("\"3\""));
    for conflict in [other_tracking, other_carrier] {
        let problem = conflict.problem(StatusCode::CONFLICT);
        assert_eq!(problem["current_status"], "SHIPPED");
        assert_eq!(problem["current_version"], 3);
    }
    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.order(order).await.body["shipment"]["tracking_number"],
        "T-1"
    );
}

#[tokio::test]
async fn cancelling_a_pending_order_cancels_it_with_its_reason_and_event() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;

    let response = app
        .cancel(
            order,
            "cancel-1",
            &json!({"reason": "customer changed their mind"}),
        )
        .await;

    assert_eq!(response.status, StatusCode::OK, "{}", response.text);
    assert!(!response.is_replay());
    assert_eq!(response.header("etag"), Some("\"2\""));
    assert_eq!(response.body["status"], "CANCELLED");
    assert_eq!(
        response.body["cancellation_reason"],
        "customer changed their mind"
    );
    assert_eq!(response.body["refund_required"], false);
    let (status, reason): (String, String) =
        sqlx::query_as("SELECT status, cancellation_reason FROM orders WHERE id = $1")
            .bind(order)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("CANCELLED", "customer changed their mind")
    );
    let history = app.checked_history(order).await;
    assert_eq!(history[1]["kind"], "cancelled");
    assert_eq!(history[1]["cause"]["idempotency_key"], "cancel-1");
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled"]
    );
}

#[tokio::test]
async fn cancelling_a_cancelled_order_again_is_a_replay() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let first = app
        .cancel(order, &unique_key(), &json!({"reason": "first"}))
        .await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    let before = app.snapshot().await;

    let again = app
        .cancel(order, &unique_key(), &json!({"reason": "first"}))
        .await;

    assert_eq!(again.status, StatusCode::OK, "{}", again.text);
    assert!(again.is_replay());
    assert_eq!(again.body, first.body);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(order).await.version, 2);
}

#[tokio::test]
async fn cancelling_a_paid_or_shipped_order_is_an_invalid_transition() {
    let app = TestApp::spawn().await;
    let paid = app.paid_order(1000).await;
    let shipped = app.paid_order(1000).await;
    app.shipped(shipped, "DHL", "T-1").await;
    let before = app.snapshot().await;

    let paid_response = app
        .cancel(paid, &unique_key(), &json!({"reason": "too late"}))
        .await;
    let shipped_response = app
        .cancel(shipped, &unique_key(), &json!({"reason": "too late"}))
        .await;

    let problem = paid_response.problem(StatusCode::CONFLICT);
    assert_eq!(problem["current_status"], "PAID");
    assert_eq!(problem["current_version"], 2);
    let problem = shipped_response.problem(StatusCode::CONFLICT);
    assert_eq!(problem["current_status"], "SHIPPED");
    assert_eq!(problem["current_version"], 3);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(paid).await.status, "PAID");
}

#[tokio::test]
async fn cancelling_a_partly_paid_order_requires_a_refund() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid(order, 400).await;

    let response = app
        .cancel(order, &unique_key(), &json!({"reason": "out of stock"}))
        .await;

    assert_eq!(response.status, StatusCode::OK, "{}", response.text);
    assert_eq!(response.body["status"], "CANCELLED");
    assert_eq!(response.body["refund_required"], true);
    assert_eq!(response.body["paid_minor"], 400);
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("CANCELLED", 3));
    assert!(row.refund_required);
    app.checked_history(order).await;
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled", "order.refund_required"]
    );
}

#[tokio::test]
async fn a_stale_if_match_is_412_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let paid = app.paid_order(1000).await;
    let pending = app.placed_order(1000).await;
    app.paid(pending, 100).await;
    let before = app.snapshot().await;

    let ship = app
        .post_with(
            &format!("/v1/orders/{paid}/ship"),
            Some(&unique_key()),
            &[("if-match", "\"1\"")],
            &shipment_body("DHL", "T-1"),
        )
        .await;
    let cancel = app
        .post_with(
            &format!("/v1/orders/{pending}/cancel"),
            Some(&unique_key()),
            &[("if-match", "\"1\"")],
            &json!({"reason": "r"}),
        )
        .await;

    let problem = ship.problem(StatusCode::PRECONDITION_FAILED);
    assert_eq!(problem["current_version"], 2);
    let problem = cancel.problem(StatusCode::PRECONDITION_FAILED);
    assert_eq!(problem["current_version"], 2);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(paid).await.status, "PAID");
    assert_eq!(app.row(pending).await.status, "PENDING_PAYMENT");
}

#[tokio::test]
async fn the_current_if_match_lets_the_change_through() {
    let app = TestApp::spawn().await;
    let paid = app.paid_order(1000).await;
    let pending = app.placed_order(1000).await;
    let etag = app.order(paid).await.header("etag").unwrap().to_owned();

    let ship = app
        .post_with(
            &format!("/v1/orders/{paid}/ship"),
            Some(&unique_key()),
            &[("if-match", &etag)],
            &shipment_body("DHL", "T-1"),
        )
        .await;
    let cancel = app
        .post_with(
            &format!("/v1/orders/{pending}/cancel"),
            Some(&unique_key()),
            &[("if-match", "\"1\"")],
            &json!({"reason": "r"}),
        )
        .await;

    assert_eq!(ship.status, StatusCode::OK, "{}", ship.text);
    assert_eq!(ship.header("etag"), Some("\"3\""));
    assert_eq!(cancel.status, StatusCode::OK, "{}", cancel.text);
    assert_eq!(cancel.header("etag"), Some("\"2\""));
    assert_eq!(app.row(paid).await.status, "SHIPPED");
    assert_eq!(app.row(pending).await.status, "CANCELLED");
}

#[tokio::test]
async fn a_malformed_if_match_is_400_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let paid = app.paid_order(1000).await;
    let pending = app.placed_order(1000).await;
    let before = app.snapshot().await;

    for if_match in ["2", "\"2", "not an etag"] {
        app.post_with(
            &format!("/v1/orders/{paid}/ship"),
            Some(&unique_key()),
            &[("if-match", if_match)],
            &shipment_body("DHL", "T-1"),
        )
        .await
        .problem(StatusCode::BAD_REQUEST);
        app.post_with(
            &format!("/v1/orders/{pending}/cancel"),
            Some(&unique_key()),
            &[("if-match", if_match)],
            &json!({"reason": "r"}),
        )
        .await
        .problem(StatusCode::BAD_REQUEST);
    }

    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn the_history_of_a_full_life_is_contiguous_and_legal() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid(order, 100).await;
    app.paid(order, 200).await;
    app.paid(order, 700).await;
    app.paid(order, 5).await;
    app.shipped(order, "DHL", "T-1").await;
    app.paid(order, 5).await;

    let history = app.checked_history(order).await;

    let steps: Vec<_> = history
        .iter()
        .map(|e| {
            (
                e["version"].as_i64().unwrap(),
                e["kind"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (1, "created", "PENDING_PAYMENT"),
            (2, "payment_recorded", "PENDING_PAYMENT"),
            (3, "payment_recorded", "PENDING_PAYMENT"),
            (4, "paid", "PAID"),
            (5, "payment_recorded", "PAID"),
            (6, "shipped", "SHIPPED"),
            (7, "payment_recorded", "SHIPPED"),
        ]
    );
    for entry in &history {
        assert_eq!(entry["cause"]["source"], "api");
        chrono::DateTime::parse_from_rfc3339(entry["at"].as_str().unwrap()).unwrap();
    }
    assert_eq!(app.row(order).await.version, 7);
}
