//! Recording payments and reading the ledger: money is a fact, recorded whatever the status.

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{TestApp, payment_body, unique_key};

#[tokio::test]
async fn partial_payments_add_up_to_paid_and_only_the_completing_one_emits_an_event() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;

    let first = app
        .pay(order, &unique_key(), &payment_body("tr-1", 300, "EUR"))
        .await;

    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    assert!(!first.is_replay());
    assert_eq!(first.header("etag"), Some("\"2\""));
    assert_eq!(first.body["order"]["status"], "PENDING_PAYMENT");
    assert_eq!(first.body["order"]["paid_minor"], 300);
    assert_eq!(first.body["order"]["version"], 2);
    assert_eq!(first.body["transfer"]["transfer_id"], "tr-1");
    assert_eq!(first.body["transfer"]["amount_minor"], 300);
    assert_eq!(app.outbox_types(order).await, vec!["order.created"]);

    let second = app
        .pay(order, &unique_key(), &payment_body("tr-2", 700, "EUR"))
        .await;

    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text);
    assert_eq!(second.header("etag"), Some("\"3\""));
    assert_eq!(second.body["order"]["status"], "PAID");
    assert_eq!(second.body["order"]["paid_minor"], 1000);
    assert_eq!(second.body["order"]["refund_required"], false);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("PAID", 3, 1000)
    );
    assert!(!row.refund_required);
    let history = app.checked_history(order).await;
    let kinds: Vec<_> = history
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["created", "payment_recorded", "paid"]);
    assert_eq!(history[1]["transfer_id"], "tr-1");
    assert_eq!(
        (&history[1]["from"], &history[1]["to"]),
        (&json!("PENDING_PAYMENT"), &json!("PENDING_PAYMENT"))
    );
    assert_eq!(history[2]["transfer_id"], "tr-2");
    assert_eq!(
        (&history[2]["from"], &history[2]["to"]),
        (&json!("PENDING_PAYMENT"), &json!("PAID"))
    );
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.paid"]
    );
    assert_eq!(app.transfers(order).await.len(), 2);
}

#[tokio::test]
async fn the_ledger_lists_every_transfer_of_the_order_oldest_first() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let other = app.placed_order(1000).await;
    app.paid_with(order, "tr-a", 250).await;
    app.paid_with(order, "tr-b", 100).await;
    app.paid_with(other, "tr-c", 100).await;

    let response = app.get(&format!("/v1/orders/{order}/payments")).await;

    assert_eq!(response.status, StatusCode::OK, "{}", response.text);
    let mut keys: Vec<_> = response.body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["items", "next"]);
    assert!(response.body["next"].is_null());
    let items = response.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{}", response.text);
    for (item, (transfer_id, amount)) in items.iter().zip([("tr-a", 250), ("tr-b", 100)]) {
        let mut fields: Vec<_> = item.as_object().unwrap().keys().collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                "amount_minor",
                "currency",
                "direction",
                "order_id",
                "received_at",
                "source",
                "transfer_id"
            ]
        );
        assert_eq!(item["transfer_id"], transfer_id);
        assert_eq!(item["order_id"], json!(order));
        assert_eq!(item["amount_minor"], amount);
        assert_eq!(item["currency"], "EUR");
        assert_eq!(item["source"], "api");
        assert_eq!(item["direction"], "in");
        chrono::DateTime::parse_from_rfc3339(item["received_at"].as_str().unwrap())
            .expect("received_at is RFC 3339");
    }
    let stored = app.transfers(order).await;
    assert_eq!(
        stored,
        vec![
            ("tr-a".into(), 250, "EUR".into(), "api".into()),
            ("tr-b".into(), 100, "EUR".into(), "api".into()),
        ]
    );
    assert_eq!(app.row(order).await.paid_minor, 350);
}

#[tokio::test]
async fn the_ledger_of_an_unknown_order_is_404() {
    let app = TestApp::spawn().await;

    app.get(&format!("/v1/orders/{}/payments", Uuid::new_v4()))
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_transfer_id_reused_with_other_content_conflicts_and_leaves_the_ledger_unchanged() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let other = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 300).await;
    let before = app.snapshot().await;

    let other_amount = app
        .pay(order, &unique_key(), &payment_body("tr-1", 301, "EUR"))
        .await;
    let other_order = app
        .pay(other, &unique_key(), &payment_body("tr-1", 300, "EUR"))
        .await;

    other_amount.problem(StatusCode::CONFLICT);
    other_order.problem(StatusCode::CONFLICT);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.transfers(order).await,
        vec![("tr-1".into(), 300, "EUR".into(), "api".into())]
    );
    assert!(app.transfers(other).await.is_empty());
    assert_eq!(app.row(order).await.paid_minor, 300);
    assert_eq!(app.row(other).await.version, 1);
}

#[tokio::test]
async fn a_transfer_repeated_with_the_same_content_under_a_new_key_is_a_replay() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let first = app.paid_with(order, "tr-1", 300).await;
    let before = app.snapshot().await;

    let again = app
        .pay(order, &unique_key(), &payment_body("tr-1", 300, "EUR"))
        .await;

    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
    assert!(again.is_replay());
    assert_eq!(again.body, first.body);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.transfers(order).await.len(), 1);
    let row = app.row(order).await;
    assert_eq!((row.version, row.paid_minor), (2, 300));
}

#[tokio::test]
async fn a_payment_on_a_cancelled_order_is_recorded_and_requires_a_refund() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.cancelled(order, "changed my mind").await;

    let response = app
        .pay(order, &unique_key(), &payment_body("tr-late", 1000, "EUR"))
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    assert!(!response.is_replay());
    assert_eq!(response.body["order"]["status"], "CANCELLED");
    assert_eq!(response.body["order"]["refund_required"], true);
    assert_eq!(response.body["order"]["paid_minor"], 1000);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("CANCELLED", 3, 1000)
    );
    assert!(row.refund_required);
    assert_eq!(app.transfers(order).await.len(), 1);
    let history = app.checked_history(order).await;
    assert_eq!(history[2]["kind"], "payment_recorded");
    assert_eq!(history[2]["from"], "CANCELLED");
    assert_eq!(history[2]["to"], "CANCELLED");
    assert_eq!(history[2]["transfer_id"], "tr-late");
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled", "order.refund_required"]
    );
}

#[tokio::test]
async fn more_money_on_an_order_already_owing_a_refund_is_recorded_without_a_second_event() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.cancelled(order, "changed my mind").await;
    app.paid_with(order, "tr-late-1", 300).await;

    let response = app.paid_with(order, "tr-late-2", 200).await;

    assert!(!response.is_replay());
    assert_eq!(response.body["order"]["refund_required"], true);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("CANCELLED", 4, 500)
    );
    assert_eq!(app.ledger(order).await.len(), 2);
    app.checked_history(order).await;
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled", "order.refund_required"]
    );
}

#[tokio::test]
async fn an_overpayment_pays_the_order_and_requires_a_refund() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;

    let response = app
        .pay(order, &unique_key(), &payment_body("tr-1", 1500, "EUR"))
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    assert_eq!(response.body["order"]["status"], "PAID");
    assert_eq!(response.body["order"]["refund_required"], true);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("PAID", 2, 1500)
    );
    assert!(row.refund_required);
    let history = app.checked_history(order).await;
    assert_eq!(history[1]["kind"], "paid");
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.paid", "order.refund_required"]
    );
}

#[tokio::test]
async fn a_payment_in_another_currency_than_the_order_is_422_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let before = app.snapshot().await;

    let response = app
        .pay(order, &unique_key(), &payment_body("tr-1", 1000, "USD"))
        .await;

    response.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("PENDING_PAYMENT", 1, 0)
    );
    assert!(app.ledger(order).await.is_empty());
}

#[tokio::test]
async fn a_payment_to_an_unknown_order_is_404_and_writes_nothing() {
    let app = TestApp::spawn().await;
    app.placed_order(1000).await;
    let before = app.snapshot().await;

    let response = app
        .pay(
            Uuid::new_v4(),
            &unique_key(),
            &payment_body("tr-1", 1000, "EUR"),
        )
        .await;

    response.problem(StatusCode::NOT_FOUND);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn payments_on_a_shipped_order_are_recorded_and_require_a_refund() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;
    app.shipped(order, "DHL", "T-1").await;

    let response = app
        .pay(order, &unique_key(), &payment_body("tr-extra", 50, "EUR"))
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    assert_eq!(response.body["order"]["status"], "SHIPPED");
    assert_eq!(response.body["order"]["refund_required"], true);
    assert_eq!(response.body["order"]["shipment"]["carrier"], "DHL");
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("SHIPPED", 4, 1050)
    );
    assert!(row.refund_required);
    assert_eq!(app.ledger(order).await.len(), 2);
    let history = app.checked_history(order).await;
    assert_eq!(history[3]["kind"], "payment_recorded");
    assert_eq!(history[3]["to"], "SHIPPED");
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.paid",
            "order.shipped",
            "order.refund_required"
        ]
    );
}

#[tokio::test]
async fn a_payment_that_would_take_the_paid_sum_past_2_pow_53_minus_1_is_422_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let held = app.db.seed_largest_payments(order, 9_007, "api").await;
    let room = order_service::domain::MAX_SUM_MINOR - held;
    let before = app.snapshot().await;

    let refused = app
        .pay(
            order,
            &unique_key(),
            &payment_body("one-too-many", room + 1, "EUR"),
        )
        .await;

    let problem = refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        problem["type"]
            .as_str()
            .unwrap()
            .ends_with("ledger-overflow"),
        "{problem}"
    );
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("9007199254740991"),
        "{problem}"
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(order).await.paid_minor, held);

    // Up to the bound it is recorded, and every figure the answer carries stays exact.
    let last = app
        .pay(order, &unique_key(), &payment_body("the-last", room, "EUR"))
        .await;
    assert_eq!(last.status, StatusCode::CREATED, "{}", last.text);
    assert_eq!(last.body["order"]["paid_minor"], 9_007_199_254_740_991_i64);
    assert_eq!(app.row(order).await.paid_minor, 9_007_199_254_740_991);
}
