//! Idempotency-Key: replays, reuse for another request, malformed keys, concurrent duplicates and
//! the bounded wait for a request still in flight.

use std::time::Duration;

use axum::http::StatusCode;
use futures::future::join_all;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{
    TestApp, TestResponse, connection_heavy, order_body, payment_body, raw_post, shipment_body,
    unique_key,
};

/// The repeat answers like the first, byte for byte, and says it is a replay.
#[track_caller]
fn assert_replays(first: &TestResponse, repeat: &TestResponse, status: StatusCode) {
    assert_eq!(first.status, status, "{}", first.text);
    assert!(!first.is_replay());
    assert_eq!(repeat.status, status, "{}", repeat.text);
    assert!(
        repeat.is_replay(),
        "no Idempotent-Replayed: {:?}",
        repeat.headers
    );
    assert_eq!(repeat.text, first.text);
    assert_eq!(repeat.header("etag"), first.header("etag"));
}

#[tokio::test]
async fn a_repeated_placement_creates_one_order_and_replays_the_first_answer() {
    let app = TestApp::spawn().await;
    let body = order_body("c-1", 1000, "EUR");

    let first = app.place_order("place-1", &body).await;
    let repeat = app.place_order("place-1", &body).await;

    assert_replays(&first, &repeat, StatusCode::CREATED);
    assert_eq!(repeat.header("location"), first.header("location"));
    assert_eq!(app.snapshot().await, [1, 0, 1, 1]);
}

#[tokio::test]
async fn a_repeated_payment_records_one_transfer_and_replays_the_first_answer() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let body = payment_body("tr-1", 400, "EUR");

    let first = app.pay(order, "pay-1", &body).await;
    let repeat = app.pay(order, "pay-1", &body).await;

    assert_replays(&first, &repeat, StatusCode::CREATED);
    assert_eq!(app.snapshot().await, [1, 1, 2, 1]);
    let row = app.row(order).await;
    assert_eq!((row.version, row.paid_minor), (2, 400));
}

#[tokio::test]
async fn a_repeated_shipment_ships_once_and_replays_the_first_answer() {
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;
    let body = shipment_body("DHL", "T-1");

    let first = app.ship(order, "ship-1", &body).await;
    let repeat = app.ship(order, "ship-1", &body).await;

    assert_replays(&first, &repeat, StatusCode::OK);
    assert_eq!(app.snapshot().await, [1, 1, 3, 3]);
    assert_eq!(app.row(order).await.version, 3);
}

#[tokio::test]
async fn a_repeated_cancellation_cancels_once_and_replays_the_first_answer() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let body = json!({"reason": "changed my mind"});

    let first = app.cancel(order, "cancel-1", &body).await;
    let repeat = app.cancel(order, "cancel-1", &body).await;

    assert_replays(&first, &repeat, StatusCode::OK);
    assert_eq!(app.snapshot().await, [1, 0, 2, 2]);
    assert_eq!(app.row(order).await.version, 2);
}

#[tokio::test]
async fn the_same_key_with_another_body_is_422_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let first = app
        .place_order("key-1", &order_body("c-1", 1000, "EUR"))
        .await;
    assert_eq!(first.status, StatusCode::CREATED);
    let order: Uuid = first.body["id"].as_str().unwrap().parse().unwrap();
    app.pay(order, "pay-1", &payment_body("tr-1", 100, "EUR"))
        .await;
    let before = app.snapshot().await;

    let other_order = app
        .place_order("key-1", &order_body("c-1", 1001, "EUR"))
        .await;
    let other_payment = app
        .pay(order, "pay-1", &payment_body("tr-2", 100, "EUR"))
        .await;

    other_order.problem(StatusCode::UNPROCESSABLE_ENTITY);
    other_payment.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn the_same_key_on_another_endpoint_is_422_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let placed = app
        .place_order("key-1", &order_body("c-1", 1000, "EUR"))
        .await;
    let order: Uuid = placed.body["id"].as_str().unwrap().parse().unwrap();
    let before = app.snapshot().await;

    let cancel = app.cancel(order, "key-1", &json!({"reason": "r"})).await;
    let pay = app
        .pay(order, "key-1", &payment_body("tr-1", 1000, "EUR"))
        .await;

    cancel.problem(StatusCode::UNPROCESSABLE_ENTITY);
    pay.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(order).await.status, "PENDING_PAYMENT");
}

#[tokio::test]
async fn the_same_key_on_another_orders_payment_endpoint_is_422() {
    let app = TestApp::spawn().await;
    let first = app.placed_order(1000).await;
    let second = app.placed_order(1000).await;
    let body = payment_body("tr-1", 1000, "EUR");
    let paid = app.pay(first, "pay-1", &body).await;
    assert_eq!(paid.status, StatusCode::CREATED, "{}", paid.text);
    let before = app.snapshot().await;

    let response = app.pay(second, "pay-1", &body).await;

    response.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(second).await.version, 1);
}

#[tokio::test]
async fn a_post_without_an_idempotency_key_is_400() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let paid = app.paid_order(1000).await;
    let before = app.snapshot().await;

    for (path, body) in [
        ("/v1/orders".to_owned(), order_body("c-1", 1000, "EUR")),
        (
            format!("/v1/orders/{order}/payments"),
            payment_body("tr-1", 1000, "EUR"),
        ),
        (
            format!("/v1/orders/{paid}/ship"),
            shipment_body("DHL", "T-1"),
        ),
        (format!("/v1/orders/{order}/cancel"), json!({"reason": "r"})),
    ] {
        let response = app.post_with(&path, None, &[], &body).await;
        response.problem(StatusCode::BAD_REQUEST);
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_malformed_idempotency_key_is_400() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let paid = app.paid_order(1000).await;
    let before = app.snapshot().await;
    let too_long = "k".repeat(256);
    let keys: [&[u8]; 7] = [
        b"",
        too_long.as_bytes(),
        "café".as_bytes(),
        b"tab\there",
        b"\"unterminated",
        b"\"\"",
        b"\"a\"trailing",
    ];

    for key in keys {
        for (path, body) in [
            ("/v1/orders".to_owned(), order_body("c-1", 1000, "EUR")),
            (
                format!("/v1/orders/{order}/payments"),
                payment_body("tr-1", 1000, "EUR"),
            ),
            (
                format!("/v1/orders/{paid}/ship"),
                shipment_body("DHL", "T-1"),
            ),
            (format!("/v1/orders/{order}/cancel"), json!({"reason": "r"})),
        ] {
            let request = raw_post(
                &path,
                &[
                    ("content-type", b"application/json"),
                    ("idempotency-key", key),
                ],
                body.to_string(),
            );
            let response = app.request(request).await;
            response.problem(StatusCode::BAD_REQUEST);
        }
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn keys_of_one_and_of_255_printable_characters_are_accepted() {
    let app = TestApp::spawn().await;

    for key in ["k".to_owned(), "k".repeat(255), "with space ~!".to_owned()] {
        let response = app.place_order(&key, &order_body("c-1", 1000, "EUR")).await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    }
    assert_eq!(app.count("orders").await, 3);
}

#[tokio::test]
async fn a_quoted_structured_field_key_is_the_same_key_as_the_bare_one() {
    let app = TestApp::spawn().await;
    let body = order_body("c-1", 1000, "EUR");

    let bare = app.place_order("abc", &body).await;
    let quoted = app.place_order("\"abc\"", &body).await;

    assert_replays(&bare, &quoted, StatusCode::CREATED);
    assert_eq!(app.count("orders").await, 1);
    let order: Uuid = bare.body["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        app.history(order).await[0]["cause"]["idempotency_key"],
        "abc"
    );
}

#[tokio::test]
async fn the_fingerprint_ignores_json_key_order_and_whitespace() {
    let app = TestApp::spawn().await;
    let send = |body: &'static str| {
        app.request(raw_post(
            "/v1/orders",
            &[
                ("content-type", b"application/json"),
                ("idempotency-key", b"canonical-1"),
            ],
            body,
        ))
    };

    let first = send(r#"{"customer_id":"c-1","amount_minor":1000,"currency":"EUR"}"#).await;
    let reordered = send(
        "{\n  \"currency\" : \"EUR\",\n\t\"amount_minor\": 1000 ,  \"customer_id\":\"c-1\"\n}\n",
    )
    .await;

    assert_replays(&first, &reordered, StatusCode::CREATED);
    assert_eq!(app.count("orders").await, 1);
}

#[tokio::test]
async fn a_payment_that_found_no_order_left_no_row_so_its_retry_is_evaluated_afresh() {
    let app = TestApp::spawn().await;
    let id = Uuid::new_v4();
    let body = payment_body("tr-1", 1000, "EUR");

    let early = app.pay(id, "pay-1", &body).await;
    early.problem(StatusCode::NOT_FOUND);
    assert_eq!(app.snapshot().await, [0, 0, 0, 0]);

    let mut order = order_body("c-1", 1000, "EUR");
    order["id"] = json!(id);
    let placed = app.place_order(&unique_key(), &order).await;
    assert_eq!(placed.status, StatusCode::CREATED, "{}", placed.text);
    let retry = app.pay(id, "pay-1", &body).await;

    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.text);
    assert!(!retry.is_replay());
    assert_eq!(retry.body["order"]["status"], "PAID");
    assert_eq!(app.transfers(id).await.len(), 1);
}

#[tokio::test]
async fn a_shipment_refused_before_payment_left_no_row_so_its_retry_ships() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let body = shipment_body("DHL", "T-1");

    let early = app.ship(order, "ship-1", &body).await;
    early.problem(StatusCode::CONFLICT);
    app.paid(order, 1000).await;
    let retry = app.ship(order, "ship-1", &body).await;

    assert_eq!(retry.status, StatusCode::OK, "{}", retry.text);
    assert!(!retry.is_replay());
    assert_eq!(retry.body["status"], "SHIPPED");
    assert_eq!(app.row(order).await.status, "SHIPPED");
    app.checked_history(order).await;
}

#[tokio::test]
async fn a_request_rejected_as_invalid_left_no_row_so_its_key_is_still_free() {
    let app = TestApp::spawn().await;

    let invalid = app.place_order("key-1", &order_body("c-1", 0, "EUR")).await;
    invalid.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let valid = app
        .place_order("key-1", &order_body("c-1", 1000, "EUR"))
        .await;

    assert_eq!(valid.status, StatusCode::CREATED, "{}", valid.text);
    assert!(!valid.is_replay());
    assert_eq!(app.snapshot().await, [1, 0, 1, 1]);
}

/// All answers succeed with `status` and carry the same body; returns it.
#[track_caller]
fn assert_all_identical(responses: &[TestResponse], status: StatusCode) -> Value {
    for response in responses {
        assert_eq!(response.status, status, "{}", response.text);
        assert_eq!(response.text, responses[0].text);
    }
    assert_eq!(
        responses.iter().filter(|r| !r.is_replay()).count(),
        1,
        "exactly one answer made the change"
    );
    responses[0].body.clone()
}

#[tokio::test]
async fn sixty_four_concurrent_identical_placements_create_one_order() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let body = order_body("c-1", 1000, "EUR");

    let responses = join_all((0..64).map(|_| app.place_order("place-1", &body))).await;

    let order = assert_all_identical(&responses, StatusCode::CREATED);
    assert_eq!(app.snapshot().await, [1, 0, 1, 1]);
    let id: Uuid = order["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(app.outbox_types(id).await, vec!["order.created"]);
}

#[tokio::test]
async fn sixty_four_concurrent_identical_payments_record_one_transfer() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let body = payment_body("tr-1", 1000, "EUR");

    let responses = join_all((0..64).map(|_| app.pay(order, "pay-1", &body))).await;

    let receipt = assert_all_identical(&responses, StatusCode::CREATED);
    assert_eq!(receipt["order"]["status"], "PAID");
    assert_eq!(app.snapshot().await, [1, 1, 2, 2]);
    let row = app.row(order).await;
    assert_eq!((row.version, row.paid_minor), (2, 1000));
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.paid"]
    );
}

#[tokio::test]
async fn sixty_four_concurrent_identical_shipments_ship_once() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.paid_order(1000).await;
    let body = shipment_body("DHL", "T-1");

    let responses = join_all((0..64).map(|_| app.ship(order, "ship-1", &body))).await;

    let shipped = assert_all_identical(&responses, StatusCode::OK);
    assert_eq!(shipped["status"], "SHIPPED");
    assert_eq!(app.snapshot().await, [1, 1, 3, 3]);
    assert_eq!(app.row(order).await.version, 3);
    app.checked_history(order).await;
}

#[tokio::test]
async fn sixty_four_concurrent_payments_with_their_own_keys_all_land_and_pay_once() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let bodies: Vec<_> = (0..64)
        .map(|i| {
            (
                format!("key-{i}"),
                payment_body(&format!("tr-{i}"), 100, "EUR"),
            )
        })
        .collect();

    let responses = join_all(bodies.iter().map(|(key, body)| app.pay(order, key, body))).await;

    for response in &responses {
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        assert!(!response.is_replay());
    }
    let row = app.row(order).await;
    assert_eq!(
        (row.status.as_str(), row.version, row.paid_minor),
        ("PAID", 65, 6400)
    );
    assert!(row.refund_required);
    let mut transfers: Vec<_> = app
        .transfers(order)
        .await
        .into_iter()
        .map(|t| t.0)
        .collect();
    transfers.sort();
    let mut expected: Vec<_> = (0..64).map(|i| format!("tr-{i}")).collect();
    expected.sort();
    assert_eq!(transfers, expected);
    let history = app.checked_history(order).await;
    assert_eq!(history.iter().filter(|e| e["kind"] == "paid").count(), 1);
    assert_eq!(
        history
            .iter()
            .filter(|e| e["kind"] == "payment_recorded")
            .count(),
        63
    );
    // The tenth payment covers the amount; the eleventh turns refund_required on, which is
    // announced once however many payments follow.
    let paid_at = history.iter().position(|e| e["kind"] == "paid").unwrap();
    assert_eq!(paid_at, 10);
    let events = app.outbox_types(order).await;
    assert_eq!(
        events,
        vec!["order.created", "order.paid", "order.refund_required"]
    );
}

/// Holds `SELECT … FOR UPDATE` on the order row in a transaction of its own, like a concurrent
/// request that has not committed yet.
async fn lock_order(app: &TestApp, order: Uuid) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SELECT id FROM orders WHERE id = $1 FOR UPDATE")
        .bind(order)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

#[track_caller]
fn assert_busy(response: &TestResponse) {
    response.problem(StatusCode::CONFLICT);
    let retry_after = response
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {:?}", response.headers));
    retry_after
        .parse::<u32>()
        .unwrap_or_else(|_| panic!("Retry-After is not delta-seconds: {retry_after}"));
}

#[tokio::test]
async fn a_shipment_that_cannot_get_the_order_within_the_bounded_wait_is_409_with_retry_after() {
    let app = TestApp::spawn_with_lock_timeout(Duration::from_millis(300)).await;
    let order = app.paid_order(1000).await;
    let body = shipment_body("DHL", "T-1");
    let lock = lock_order(&app, order).await;
    let before = app.snapshot().await;

    let busy = app.ship(order, "ship-1", &body).await;

    assert_busy(&busy);
    assert_eq!(app.snapshot().await, before);
    lock.rollback().await.unwrap();
    let retry = app.ship(order, "ship-1", &body).await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.text);
    assert!(!retry.is_replay());
    assert_eq!(app.row(order).await.status, "SHIPPED");
}

#[tokio::test]
async fn a_cancellation_that_cannot_get_the_order_within_the_bounded_wait_is_409_with_retry_after()
{
    let app = TestApp::spawn_with_lock_timeout(Duration::from_millis(300)).await;
    let order = app.placed_order(1000).await;
    let body = json!({"reason": "r"});
    let lock = lock_order(&app, order).await;
    let before = app.snapshot().await;

    let busy = app.cancel(order, "cancel-1", &body).await;

    assert_busy(&busy);
    assert_eq!(app.snapshot().await, before);
    lock.rollback().await.unwrap();
    let retry = app.cancel(order, "cancel-1", &body).await;
    assert_eq!(retry.status, StatusCode::OK, "{}", retry.text);
    assert!(!retry.is_replay());
    assert_eq!(app.row(order).await.status, "CANCELLED");
}

#[tokio::test]
async fn a_payment_that_cannot_get_the_order_within_the_bounded_wait_is_409_with_retry_after() {
    let app = TestApp::spawn_with_lock_timeout(Duration::from_millis(300)).await;
    let order = app.placed_order(1000).await;
    let body = payment_body("tr-1", 1000, "EUR");
    let lock = lock_order(&app, order).await;
    let before = app.snapshot().await;

    let busy = app.pay(order, "pay-1", &body).await;

    assert_busy(&busy);
    assert_eq!(app.snapshot().await, before);
    lock.rollback().await.unwrap();
    let retry = app.pay(order, "pay-1", &body).await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.text);
    assert!(!retry.is_replay());
    assert_eq!(app.row(order).await.status, "PAID");
}

#[tokio::test]
async fn a_key_reused_for_another_payment_while_the_first_is_in_flight_is_422() {
    // Found in review: the second request's ledger insert waited for the first, found the
    // transfer recorded with another amount and answered 409 before looking at its key again.
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let path = format!("/v1/orders/{order}/payments");
    let lock = lock_order(&app, order).await;

    // The first request records transfer t-1 and then waits on the order row.
    let (hundred, fifty) = (
        payment_body("t-1", 100, "EUR"),
        payment_body("t-1", 50, "EUR"),
    );
    let first = app.post(&path, "K", &hundred);
    let second = async {
        app.wait_for_lock_waits(1).await;
        // Same key, same transfer, another amount: it waits on the first one's ledger row.
        let second = app.post(&path, "K", &fifty);
        let release = async {
            app.wait_for_lock_waits(2).await;
            lock.rollback().await.unwrap();
        };
        tokio::join!(second, release).0
    };
    let (first, second) = tokio::join!(first, second);

    assert_eq!(first.status, StatusCode::CREATED, "{}", first.text);
    second.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.count("transfers").await, 1);
}
