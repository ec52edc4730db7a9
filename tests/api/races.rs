//! Concurrent commands on one order: whatever the interleaving, exactly one of two competing
//! transitions wins, money is never lost, and the history stays one legal line; a change decided
//! on a version that moved on writes nothing.

use axum::http::StatusCode;
use futures::future::join_all;
use order_service::domain::{
    AmountMinor, Cause, Currency, Direction, EventId, EventType, Money, OrderId, Transfer,
    TransferId,
};
use order_service::store::Guarded;
use order_service::store::order_changes::{self, OrderWrite};
use order_service::store::outbox::NewEvent;
use order_service::telemetry::TraceContext;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{TestApp, connection_heavy, payment_body, shipment_body, unique_key};

#[tokio::test]
async fn a_cancel_racing_the_completing_payment_either_cancels_or_pays_never_both() {
    let _heavy = connection_heavy().await;
    let app = TestApp::spawn().await;
    let mut orders = vec![];
    for _ in 0..20 {
        orders.push(app.placed_order(1000).await);
    }

    let rounds = join_all(orders.iter().map(|&order| {
        let app = &app;
        async move {
            let cancel_key = unique_key();
            let pay_key = unique_key();
            let cancel_body = json!({"reason": "changed my mind"});
            let pay_body = payment_body(&format!("tr-{order}"), 1000, "EUR");
            let (cancel, pay) = futures::join!(
                app.cancel(order, &cancel_key, &cancel_body),
                app.pay(order, &pay_key, &pay_body),
            );
            (order, cancel, pay)
        }
    }))
    .await;

    let mut outcomes = (0, 0);
    for (order, cancel, pay) in rounds {
        assert_eq!(pay.status, StatusCode::CREATED, "{}", pay.text);
        let row = app.row(order).await;
        let cancelled = cancel.status == StatusCode::OK;
        assert!(
            cancelled != (row.status == "PAID"),
            "order {order}: cancel answered {} and the order is {}",
            cancel.status,
            row.status
        );
        assert_eq!(app.transfers(order).await.len(), 1, "order {order}");
        assert_eq!(row.paid_minor, 1000);
        let events = app.outbox_types(order).await;
        if cancelled {
            assert_eq!(row.status, "CANCELLED");
            assert!(row.refund_required, "order {order}");
            assert_eq!(cancel.body["status"], "CANCELLED");
            assert_eq!(pay.body["order"]["status"], "CANCELLED");
            assert_eq!(
                events,
                vec!["order.created", "order.cancelled", "order.refund_required"]
            );
            assert_eq!(row.version, 3);
            outcomes.0 += 1;
        } else {
            let problem = cancel.problem(StatusCode::CONFLICT);
            assert_eq!(problem["current_status"], "PAID");
            assert!(!row.refund_required, "order {order}");
            assert_eq!(events, vec!["order.created", "order.paid"]);
            assert_eq!(row.version, 2);
            outcomes.1 += 1;
        }
        app.checked_history(order).await;
    }
    assert_eq!(outcomes.0 + outcomes.1, 20, "{outcomes:?}");
}

#[tokio::test]
async fn a_shipment_racing_a_cancel_on_a_paid_order_ships_and_the_cancel_is_refused() {
    let app = TestApp::spawn().await;
    let mut orders: Vec<Uuid> = vec![];
    for _ in 0..10 {
        orders.push(app.paid_order(1000).await);
    }

    let rounds = join_all(orders.iter().map(|&order| {
        let app = &app;
        async move {
            let (ship_key, cancel_key) = (unique_key(), unique_key());
            let ship_body = shipment_body("DHL", &format!("T-{order}"));
            let cancel_body = json!({"reason": "r"});
            let (ship, cancel) = futures::join!(
                app.ship(order, &ship_key, &ship_body),
                app.cancel(order, &cancel_key, &cancel_body),
            );
            (order, ship, cancel)
        }
    }))
    .await;

    for (order, ship, cancel) in rounds {
        assert_eq!(ship.status, StatusCode::OK, "{}", ship.text);
        assert!(!ship.is_replay());
        let problem = cancel.problem(StatusCode::CONFLICT);
        assert!(
            matches!(problem["current_status"].as_str(), Some("PAID" | "SHIPPED")),
            "{problem}"
        );
        let row = app.row(order).await;
        assert_eq!((row.status.as_str(), row.version), ("SHIPPED", 3));
        assert_eq!(
            app.outbox_types(order).await,
            vec!["order.created", "order.paid", "order.shipped"]
        );
        app.checked_history(order).await;
    }
}

#[tokio::test]
async fn sixteen_concurrent_cancels_with_their_own_keys_cancel_once_and_all_succeed() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let keys: Vec<_> = (0..16).map(|i| format!("cancel-{i}")).collect();
    let body = json!({"reason": "changed my mind"});

    let responses = join_all(keys.iter().map(|key| app.cancel(order, key, &body))).await;

    for response in &responses {
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        assert_eq!(response.body["status"], "CANCELLED");
        assert_eq!(response.body["version"], 2);
    }
    assert_eq!(responses.iter().filter(|r| !r.is_replay()).count(), 1);
    let history = app.checked_history(order).await;
    assert_eq!(
        history.iter().filter(|e| e["kind"] == "cancelled").count(),
        1
    );
    let (cancelled_rows,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM order_transitions WHERE order_id = $1 AND kind = 'cancelled'",
    )
    .bind(order)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(cancelled_rows, 1);
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled"]
    );
    assert_eq!(app.row(order).await.version, 2);
}

#[tokio::test]
async fn a_change_decided_on_a_version_that_moved_on_writes_no_row_at_all() {
    // The write is one statement whose ledger, history and outbox rows are taken from the guarded
    // update's result: when the guard misses, none of them may be written.
    let app = TestApp::spawn().await;
    let order = OrderId::from_uuid(app.placed_order(1000).await);
    let payment = Transfer {
        id: TransferId::parse("t-late").unwrap(),
        order_id: order,
        direction: Direction::In,
        money: Money::new(
            AmountMinor::parse(1000).unwrap(),
            Currency::parse("EUR").unwrap(),
        ),
    };
    let mut conn = app.pool.acquire().await.unwrap();
    let (_, found) = order_changes::read(&mut conn, order, None, Some(&payment.id))
        .await
        .unwrap();
    let change = found.order.unwrap().record(&payment).unwrap();
    let cancelled = app.cancelled(order.as_uuid(), "meanwhile").await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.text);
    let before = app.snapshot().await;

    let written = order_changes::write(
        &mut conn,
        &OrderWrite {
            next: &change.next,
            expected: Some((change.from, change.from_version)),
            kind: change.kind,
            transfer: Some(&payment),
            cause: &Cause::Amqp {
                event_id: EventId::parse("e-late").unwrap(),
            },
            events: &[NewEvent {
                event_id: Uuid::new_v4(),
                event_type: EventType::OrderPaid,
                payload: "{}".to_owned(),
            }],
            trace: &TraceContext::start(),
        },
        None,
    )
    .await
    .unwrap();

    assert!(matches!(written, Guarded::Lost), "{written:?}");
    assert_eq!(
        app.snapshot().await,
        before,
        "orders, ledger, history, outbox"
    );
}
