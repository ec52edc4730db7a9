//! Recording refunds over REST: money that went back is an outgoing ledger entry, recorded in every
//! status without changing it, never more than the order holds, and announced once per refund.

use axum::http::StatusCode;
use futures::future::join_all;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    MoneyRow, TestApp, TestResponse, connection_heavy, payment_body, refund_body, unique_key,
};

/// The `data` of each `order.refunded` event of the order, in insertion order.
async fn refunded_events(app: &TestApp, order: Uuid) -> Vec<Value> {
    sqlx::query_scalar(
        "SELECT payload FROM outbox WHERE order_id = $1 AND event_type = 'order.refunded' \
         ORDER BY id",
    )
    .bind(order)
    .fetch_all(&app.pool)
    .await
    .expect("read outbox")
    .into_iter()
    .map(|payload: Value| payload["data"].clone())
    .collect()
}

/// Asserts a problem of this status whose type ends with `slug`.
#[track_caller]
fn assert_problem(response: &TestResponse, status: StatusCode, slug: &str) -> Value {
    let problem = response.problem(status).clone();
    assert!(
        problem["type"].as_str().unwrap().ends_with(slug),
        "expected {slug}: {problem}"
    );
    problem
}

#[tokio::test]
async fn a_refund_of_an_overpayment_is_an_outgoing_ledger_entry_that_lowers_the_due_amount() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;

    let response = app
        .refund(order, "refund-key", &refund_body("re-1", 200, "EUR"))
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    assert!(!response.is_replay());
    assert_eq!(response.header("etag"), Some("\"3\""));
    let body = &response.body;
    assert_eq!(body["order"]["status"], "PAID");
    assert_eq!(body["order"]["version"], 3);
    assert_eq!(body["order"]["paid_minor"], 1500);
    assert_eq!(body["order"]["refunded_minor"], 200);
    assert_eq!(body["order"]["refund_due_minor"], 300);
    assert_eq!(body["order"]["refund_required"], true);
    assert_eq!(body["refund"]["transfer_id"], "re-1");
    assert_eq!(body["refund"]["order_id"], json!(order));
    assert_eq!(body["refund"]["direction"], "out");
    assert_eq!(body["refund"]["amount_minor"], 200);
    assert_eq!(body["refund"]["currency"], "EUR");
    assert_eq!(body["refund"]["source"], "api");

    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("PAID", 3));
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1500,
            refunded_minor: 200,
            refund_required: true
        }
    );
    assert_eq!(
        app.directed_transfers(order).await,
        vec![
            ("tr-1".into(), "in".into(), 1500),
            ("re-1".into(), "out".into(), 200)
        ]
    );
    let history = app.checked_history(order).await;
    assert_eq!(history[2]["kind"], "refund_recorded");
    assert_eq!(
        (&history[2]["from"], &history[2]["to"]),
        (&json!("PAID"), &json!("PAID"))
    );
    assert_eq!(history[2]["transfer_id"], "re-1");
    assert_eq!(history[2]["cause"]["source"], "api");
    assert_eq!(history[2]["cause"]["idempotency_key"], "refund-key");
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
    let events = refunded_events(&app, order).await;
    assert_eq!(
        events[0], body["order"],
        "the event carries the order as returned"
    );

    let ledger = app.ledger(order).await;
    let listed: Vec<_> = ledger
        .iter()
        .map(|e| (e["transfer_id"].clone(), e["direction"].clone()))
        .collect();
    assert_eq!(
        listed,
        vec![(json!("tr-1"), json!("in")), (json!("re-1"), json!("out"))],
        "both directions, oldest first"
    );
}

#[tokio::test]
async fn refund_required_turns_off_once_the_due_amount_is_refunded() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    app.refunded(order, "re-1", 200).await;

    let settled = app.refunded(order, "re-2", 300).await;

    assert_eq!(settled.body["order"]["refund_due_minor"], 0);
    assert_eq!(settled.body["order"]["refund_required"], false);
    assert_eq!(settled.body["order"]["status"], "PAID");
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1500,
            refunded_minor: 500,
            refund_required: false
        }
    );
    assert_eq!(app.row(order).await.version, 4);
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded",
            "order.refunded"
        ],
        "one order.refunded per refund; refund_required is announced once, turning on"
    );
    let events = refunded_events(&app, order).await;
    assert_eq!(events[0]["refund_required"], true);
    assert_eq!(events[1]["refund_required"], false);
    assert_eq!(events[1]["refunded_minor"], 500);
    assert_eq!(events[1]["version"], 4);
}

#[tokio::test]
async fn a_refund_on_a_cancelled_order_leaves_it_cancelled_and_owes_the_rest_of_what_it_holds() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 400).await;
    app.cancelled(order, "changed my mind").await;
    assert_eq!(app.order(order).await.body["refund_due_minor"], 400);

    let part = app.refunded(order, "re-1", 150).await;

    assert_eq!(part.body["order"]["status"], "CANCELLED");
    assert_eq!(part.body["order"]["refund_due_minor"], 250);
    assert_eq!(part.body["order"]["refund_required"], true);
    assert_eq!(part.body["order"]["cancellation_reason"], "changed my mind");
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 400,
            refunded_minor: 150,
            refund_required: true
        }
    );

    let rest = app.refunded(order, "re-2", 250).await;

    assert_eq!(rest.body["order"]["status"], "CANCELLED");
    assert_eq!(rest.body["order"]["refund_due_minor"], 0);
    assert_eq!(rest.body["order"]["refund_required"], false);
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.refund_required),
        ("CANCELLED", 5, false)
    );
    app.checked_money(order).await;
    let history = app.checked_history(order).await;
    let kinds: Vec<_> = history
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "created",
            "payment_recorded",
            "cancelled",
            "refund_recorded",
            "refund_recorded"
        ]
    );
    assert!(
        history[3..]
            .iter()
            .all(|e| e["from"] == "CANCELLED" && e["to"] == "CANCELLED")
    );
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.cancelled",
            "order.refund_required",
            "order.refunded",
            "order.refunded"
        ]
    );
}

#[tokio::test]
async fn a_goodwill_refund_on_a_paid_order_keeps_it_paid_with_nothing_due() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;

    let response = app.refunded(order, "re-goodwill", 100).await;

    assert_eq!(response.body["order"]["status"], "PAID");
    assert_eq!(response.body["order"]["refunded_minor"], 100);
    assert_eq!(
        response.body["order"]["refund_due_minor"], 0,
        "never below 0"
    );
    assert_eq!(response.body["order"]["refund_required"], false);
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("PAID", 3));
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1000,
            refunded_minor: 100,
            refund_required: false
        }
    );
    app.checked_history(order).await;
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.paid", "order.refunded"]
    );
}

#[tokio::test]
async fn a_refund_on_a_shipped_order_keeps_it_shipped_with_its_shipment() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1000).await;
    app.shipped(order, "DHL", "T-1").await;
    app.paid_with(order, "tr-extra", 50).await;
    assert_eq!(app.order(order).await.body["refund_due_minor"], 50);

    let returned = app.refunded(order, "re-return", 1050).await;

    let order_view = &returned.body["order"];
    assert_eq!(order_view["status"], "SHIPPED");
    assert_eq!(order_view["shipment"]["tracking_number"], "T-1");
    assert_eq!(order_view["refunded_minor"], 1050);
    assert_eq!(order_view["refund_due_minor"], 0);
    assert_eq!(order_view["refund_required"], false);
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("SHIPPED", 5));
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1050,
            refunded_minor: 1050,
            refund_required: false
        }
    );
    let history = app.checked_history(order).await;
    assert_eq!(history[4]["kind"], "refund_recorded");
    assert_eq!(history[4]["to"], "SHIPPED");
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.paid",
            "order.shipped",
            "order.refund_required",
            "order.refunded"
        ]
    );
}

#[tokio::test]
async fn a_refund_repeated_under_the_same_key_replays_the_first_answer_and_writes_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let body = refund_body("re-1", 500, "EUR");
    let first = app.refund(order, "refund-1", &body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    let before = app.snapshot().await;

    let again = app.refund(order, "refund-1", &body).await;

    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
    assert!(again.is_replay());
    assert_eq!(again.header("etag"), Some("\"3\""));
    assert_eq!(again.body, first.body);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.checked_money(order).await.refunded_minor, 500);
    assert_eq!(refunded_events(&app, order).await.len(), 1);
}

#[tokio::test]
async fn a_refund_repeated_with_the_same_content_under_a_new_key_is_a_replay() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let first = app.refunded(order, "re-1", 500).await;
    let before = app.snapshot().await;

    let again = app
        .refund(order, &unique_key(), &refund_body("re-1", 500, "EUR"))
        .await;

    assert_eq!(again.status, StatusCode::CREATED, "{}", again.text);
    assert!(again.is_replay());
    assert_eq!(again.body, first.body);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(order).await.version, 3);
    assert_eq!(app.checked_money(order).await.refunded_minor, 500);
}

#[tokio::test]
async fn a_refund_id_reused_with_other_content_conflicts_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let other = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1000).await;
    app.paid_with(other, "tr-2", 1000).await;
    app.refunded(order, "re-1", 300).await;
    let before = app.snapshot().await;

    let other_amount = app
        .refund(order, &unique_key(), &refund_body("re-1", 301, "EUR"))
        .await;
    let other_order = app
        .refund(other, &unique_key(), &refund_body("re-1", 300, "EUR"))
        .await;
    let as_a_payment = app
        .pay(order, &unique_key(), &payment_body("re-1", 300, "EUR"))
        .await;

    assert_problem(&other_amount, StatusCode::CONFLICT, "transfer-conflict");
    assert_problem(&other_order, StatusCode::CONFLICT, "transfer-conflict");
    assert_problem(&as_a_payment, StatusCode::CONFLICT, "transfer-conflict");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.directed_transfers(order).await,
        vec![
            ("tr-1".into(), "in".into(), 1000),
            ("re-1".into(), "out".into(), 300)
        ]
    );
    assert_eq!(app.checked_money(other).await.refunded_minor, 0);
    assert_eq!(app.row(other).await.version, 2);
}

#[tokio::test]
async fn a_payments_transfer_id_used_as_a_refund_id_conflicts_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let before = app.snapshot().await;

    // Same order, amount and currency: only the direction differs.
    let response = app
        .refund(order, &unique_key(), &refund_body("tr-1", 1500, "EUR"))
        .await;

    let problem = assert_problem(&response, StatusCode::CONFLICT, "transfer-conflict");
    assert!(
        problem["detail"].as_str().unwrap().contains("tr-1"),
        "{problem}"
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.directed_transfers(order).await,
        vec![("tr-1".into(), "in".into(), 1500)]
    );
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1500,
            refunded_minor: 0,
            refund_required: true
        }
    );
}

#[tokio::test]
async fn a_refund_beyond_the_money_the_order_holds_is_409_and_records_nothing() {
    let app = TestApp::spawn().await;
    let unpaid = app.placed_order(1000).await;
    let order = app.paid_order(1000).await;
    app.refunded(order, "re-1", 600).await;
    let before = app.snapshot().await;

    let beyond = app
        .refund(order, &unique_key(), &refund_body("re-2", 401, "EUR"))
        .await;
    let nothing_held = app
        .refund(unpaid, &unique_key(), &refund_body("re-3", 1, "EUR"))
        .await;

    let problem = assert_problem(&beyond, StatusCode::CONFLICT, "refund-exceeds-balance");
    assert_eq!(problem["current_status"], "PAID");
    assert_eq!(problem["current_version"], 3);
    assert!(
        problem["detail"].as_str().unwrap().contains("400"),
        "{problem}"
    );
    let problem = assert_problem(
        &nothing_held,
        StatusCode::CONFLICT,
        "refund-exceeds-balance",
    );
    assert_eq!(problem["current_status"], "PENDING_PAYMENT");
    assert_eq!(app.snapshot().await, before);
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1000,
            refunded_minor: 600,
            refund_required: false
        }
    );
    assert_eq!(app.checked_money(unpaid).await.refunded_minor, 0);

    // Exactly what is held is fine, and the refused id was not taken.
    let rest = app.refunded(order, "re-2", 400).await;
    assert_eq!(rest.body["order"]["refunded_minor"], 1000);
    assert_eq!(app.checked_money(order).await.refunded_minor, 1000);
}

#[tokio::test]
async fn a_refund_in_another_currency_than_the_order_is_422_and_records_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let before = app.snapshot().await;

    let response = app
        .refund(order, &unique_key(), &refund_body("re-1", 100, "USD"))
        .await;

    assert_problem(
        &response,
        StatusCode::UNPROCESSABLE_ENTITY,
        "currency-mismatch",
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.checked_money(order).await.refunded_minor, 0);
}

#[tokio::test]
async fn a_refund_of_an_unknown_order_is_404_and_writes_nothing() {
    let app = TestApp::spawn().await;
    app.paid_order(1000).await;
    let before = app.snapshot().await;

    let response = app
        .refund(
            Uuid::new_v4(),
            &unique_key(),
            &refund_body("re-1", 100, "EUR"),
        )
        .await;

    response.problem(StatusCode::NOT_FOUND);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_refund_key_reused_for_another_refund_is_422_and_records_nothing_more() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let first = app
        .refund(order, "refund-1", &refund_body("re-1", 100, "EUR"))
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    let before = app.snapshot().await;

    let other = app
        .refund(order, "refund-1", &refund_body("re-2", 100, "EUR"))
        .await;

    assert_problem(
        &other,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    );
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.checked_money(order).await.refunded_minor, 100);
}

#[tokio::test]
async fn sixty_four_concurrent_identical_refunds_under_one_key_record_one_refund() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let body = refund_body("re-1", 500, "EUR");

    let responses = join_all((0..64).map(|_| app.refund(order, "refund-1", &body))).await;

    assert_one_refund_recorded(&app, order, &responses).await;
}

#[tokio::test]
async fn sixty_four_concurrent_identical_refunds_under_their_own_keys_record_one_refund() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1500).await;
    let body = refund_body("re-1", 500, "EUR");
    let keys: Vec<_> = (0..64).map(|i| format!("refund-{i}")).collect();

    let responses = join_all(keys.iter().map(|key| app.refund(order, key, &body))).await;

    assert_one_refund_recorded(&app, order, &responses).await;
}

/// Every answer is 201 for the one refund `re-1` of 500 (made by exactly one of them), and the
/// database holds it once: one ledger row, one history row, one `order.refunded`.
async fn assert_one_refund_recorded(app: &TestApp, order: Uuid, responses: &[TestResponse]) {
    for response in responses {
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        assert_eq!(response.body["refund"]["transfer_id"], "re-1");
        assert_eq!(response.body["order"]["version"], 3);
        assert_eq!(response.body["order"]["refunded_minor"], 500);
    }
    assert_eq!(
        responses.iter().filter(|r| !r.is_replay()).count(),
        1,
        "exactly one answer made the change"
    );
    assert_eq!(
        app.directed_transfers(order).await,
        vec![
            ("tr-1".into(), "in".into(), 1500),
            ("re-1".into(), "out".into(), 500)
        ]
    );
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 1500,
            refunded_minor: 500,
            refund_required: false
        }
    );
    let history = app.checked_history(order).await;
    assert_eq!(
        history
            .iter()
            .filter(|e| e["kind"] == "refund_recorded")
            .count(),
        1
    );
    assert_eq!(
        app.outbox_types(order).await,
        vec![
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
}

#[tokio::test]
async fn concurrent_refunds_with_their_own_ids_never_exceed_the_money_held() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 1000).await;
    // 64 refunds of 70 against 1000 held: 14 fit (980); once fewer than 70 are held, every
    // other one is refused, whatever the interleaving.
    let requests: Vec<_> = (0..64)
        .map(|i| (unique_key(), refund_body(&format!("re-{i}"), 70, "EUR")))
        .collect();

    let responses = join_all(
        requests
            .iter()
            .map(|(key, body)| app.refund(order, key, body)),
    )
    .await;

    let mut recorded = vec![];
    for (response, (_, body)) in responses.iter().zip(&requests) {
        if response.status == StatusCode::CREATED {
            assert!(!response.is_replay());
            recorded.push(body["refund_id"].as_str().unwrap().to_owned());
        } else {
            assert_problem(response, StatusCode::CONFLICT, "refund-exceeds-balance");
        }
    }
    assert_eq!(recorded.len(), 14, "{recorded:?}");
    let money = app.checked_money(order).await;
    assert_eq!((money.paid_minor, money.refunded_minor), (1000, 980));
    assert!(money.refunded_minor <= money.paid_minor);
    let mut refunds: Vec<_> = app
        .directed_transfers(order)
        .await
        .into_iter()
        .filter(|(_, direction, _)| direction == "out")
        .map(|(id, _, amount)| {
            assert_eq!(amount, 70);
            id
        })
        .collect();
    refunds.sort();
    recorded.sort();
    assert_eq!(
        refunds, recorded,
        "the ledger holds exactly the refunds answered 201"
    );
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("PAID", 2 + 14));
    let history = app.checked_history(order).await;
    assert_eq!(
        history
            .iter()
            .filter(|e| e["kind"] == "refund_recorded")
            .count(),
        14
    );
    assert_eq!(refunded_events(&app, order).await.len(), 14);
}

#[tokio::test]
async fn the_database_refuses_an_order_that_refunded_more_than_it_was_paid() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;

    // Below the domain: a writer that skipped the balance check still cannot break invariant 2.
    let error = sqlx::query("UPDATE orders SET refunded_minor = paid_minor + 1 WHERE id = $1")
        .bind(order)
        .execute(&app.pool)
        .await
        .expect_err("the check constraint refuses it");

    let constraint = error
        .as_database_error()
        .and_then(|e| e.constraint())
        .map(str::to_owned);
    assert_eq!(constraint.as_deref(), Some("orders_refunded_within_paid"));
    assert_eq!(app.checked_money(order).await.refunded_minor, 0);
}
