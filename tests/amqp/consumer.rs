//! Inbound events drive the same transitions as the REST API: applied once however often they
//! arrive, retried while premature, dead-lettered when they can never apply.

use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Harness, test_config};

#[tokio::test]
async fn each_event_type_is_applied_end_to_end() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let shipped = Uuid::new_v4();
    let cancelled = Uuid::new_v4();

    h.place("e-1", shipped, 1000).await;
    h.wait_for_status(shipped, "PENDING_PAYMENT").await;
    h.pay("e-2", shipped, "t-1", 1000).await;
    h.wait_for_status(shipped, "PAID").await;
    h.ship("e-3", shipped, "TRACK-1").await;
    h.place("e-4", cancelled, 500).await;
    h.wait_for_status(cancelled, "PENDING_PAYMENT").await;
    h.cancel("e-5", cancelled).await;

    assert_eq!(
        h.wait_for_status(shipped, "SHIPPED").await,
        ("SHIPPED".into(), 3, 1000)
    );
    assert_eq!(
        h.wait_for_status(cancelled, "CANCELLED").await,
        ("CANCELLED".into(), 2, 0)
    );
    let causes: Vec<(String, Option<String>)> = sqlx::query_as(
        "SELECT cause_source, event_id FROM order_transitions WHERE order_id = $1 ORDER BY version",
    )
    .bind(shipped)
    .fetch_all(&h.db.pool)
    .await
    .unwrap();
    assert_eq!(
        causes,
        vec![
            ("amqp".into(), Some("e-1".into())),
            ("amqp".into(), Some("e-2".into())),
            ("amqp".into(), Some("e-3".into())),
        ]
    );
    let source: String =
        sqlx::query_scalar("SELECT source FROM transfers WHERE transfer_id = 't-1'")
            .fetch_one(&h.db.pool)
            .await
            .unwrap();
    assert_eq!(source, "amqp");
    assert_eq!(
        h.outbox_types(shipped).await,
        ["order.created", "order.paid", "order.shipped"]
    );
    assert_eq!(
        h.outbox_types(cancelled).await,
        ["order.created", "order.cancelled"]
    );
}

#[tokio::test]
async fn the_same_message_published_ten_times_has_one_effect() {
    let mut h = Harness::start().await;
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    for _ in 0..10 {
        h.pay("paid-once", order, "t-1", 400).await;
    }
    h.spawn_consumer();

    h.wait_until_drained(11).await;
    h.stop_consumers().await;

    assert_eq!(h.db.count("transfers").await, 1);
    assert_eq!(
        h.history_kinds(order).await,
        [(1, "created".into()), (2, "payment_recorded".into())]
    );
    assert_eq!(
        h.order_state(order).await,
        Some(("PENDING_PAYMENT".into(), 2, 400))
    );
    assert_eq!(
        h.ready_count(&h.topology.inbox).await,
        0,
        "every copy was acknowledged"
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn one_transfer_under_two_event_ids_is_recorded_once() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    h.pay("first-delivery", order, "t-1", 1000).await;
    h.pay("provider-resent-it", order, "t-1", 1000).await;
    h.wait_until_drained(3).await;
    h.stop_consumers().await;

    assert_eq!(h.db.count("transfers").await, 1);
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(h.outbox_types(order).await, ["order.created", "order.paid"]);
}

#[tokio::test]
async fn a_payment_before_its_order_is_retried_and_finally_applied() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();

    h.pay("early", order, "t-1", 1000).await;
    h.wait_until_retried(1).await;
    h.place("late", order, 1000).await;

    assert_eq!(
        h.wait_for_status(order, "PAID").await,
        ("PAID".into(), 2, 1000)
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_shipment_before_payment_is_applied_once_the_payment_arrives() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    h.ship("early-shipment", order, "TRACK-1").await;
    h.wait_until_retried(1).await;
    h.pay("payment", order, "t-1", 1000).await;

    assert_eq!(
        h.wait_for_status(order, "SHIPPED").await,
        ("SHIPPED".into(), 3, 1000)
    );
    assert_eq!(
        h.history_kinds(order).await,
        [
            (1, "created".into()),
            (2, "paid".into()),
            (3, "shipped".into())
        ]
    );
}

#[tokio::test]
async fn poison_is_dead_lettered_with_its_reason_and_the_queue_keeps_flowing() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();

    h.publish_raw("payment.succeeded", b"{not json", Default::default())
        .await;
    let unknown = h.publish("e-unknown", "payment.succeeded", json!({})).await;
    h.publish_raw(
        "order.placed",
        &crate::helpers::envelope("e-type", "order.exploded", json!({}))
            .to_string()
            .into_bytes(),
        Default::default(),
    )
    .await;
    let lower_case = h
        .publish(
            "e-invalid",
            "order.placed",
            json!({"order_id": order, "customer_id": "c", "amount_minor": 5, "currency": "eur"}),
        )
        .await;
    h.place("e-good", order, 1000).await;

    h.wait_for_status(order, "PENDING_PAYMENT").await;
    let mut letters = h.wait_for_dead_letters(4).await;
    letters.sort_by(|a, b| a.reason.cmp(&b.reason));
    let reasons: Vec<&str> = letters.iter().map(|l| l.reason.as_str()).collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("poison: not a JSON envelope")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("unknown event type \"order.exploded\"")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("invalid order.placed data") && r.contains("currency")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("invalid payment.succeeded data")),
        "{reasons:?}"
    );
    // The original bodies travel untouched.
    let bodies: Vec<&[u8]> = letters.iter().map(|l| l.body.as_slice()).collect();
    assert!(bodies.contains(&b"{not json".as_slice()));
    assert!(bodies.contains(&unknown.as_slice()));
    assert!(bodies.contains(&lower_case.as_slice()));
    assert_eq!(h.db.count("orders").await, 1);
}

#[tokio::test]
async fn an_array_or_a_key_given_twice_is_poison_and_changes_nothing() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("e-place", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    // `data` as an array of the fields in order: serde would read the struct from it.
    let array = h
        .publish(
            "e-array",
            "payment.succeeded",
            json!([order, "t-array", 1000, "EUR"]),
        )
        .await;
    // A key twice: the last one would win and pay the order in full.
    let twice = format!(
        r#"{{"event_id":"e-twice","type":"payment.succeeded","occurred_at":"2026-11-21T10:00:00Z",
        "data":{{"order_id":"{order}","transfer_id":"t-twice","amount_minor":1,"amount_minor":1000,"currency":"EUR"}}}}"#
    );
    h.publish_raw("payment.succeeded", twice.as_bytes(), Default::default())
        .await;
    // The whole envelope as an array.
    let frame = json!(["e-frame", "order.cancellation_requested", "2026-11-21T10:00:00Z",
        {"order_id": order, "reason": "r"}])
    .to_string();
    h.publish_raw(
        "order.cancellation_requested",
        frame.as_bytes(),
        Default::default(),
    )
    .await;

    let mut letters = h.wait_for_dead_letters(3).await;
    letters.sort_by(|a, b| a.reason.cmp(&b.reason));
    let reasons: Vec<&str> = letters.iter().map(|l| l.reason.as_str()).collect();
    assert!(
        reasons.iter().all(|r| r.starts_with("poison: ")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("invalid payment.succeeded data") && r.contains("JSON object")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("not a JSON envelope") && r.contains("twice")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("not a JSON envelope") && r.contains("JSON object")),
        "{reasons:?}"
    );
    let bodies: Vec<&[u8]> = letters.iter().map(|l| l.body.as_slice()).collect();
    assert!(bodies.contains(&array.as_slice()));
    assert!(bodies.contains(&twice.as_bytes()));
    assert!(bodies.contains(&frame.as_bytes()));
    assert_eq!(
        h.order_state(order).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
    assert!(h.transfers(order).await.is_empty());
}

#[tokio::test]
async fn a_message_over_the_size_limit_is_dead_lettered_unread_with_its_size() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    h.spawn_parker();
    let oversize = Uuid::new_v4();
    let order = Uuid::new_v4();
    // A valid envelope padded with insignificant whitespace: only its size is wrong.
    let mut body = crate::helpers::envelope(
        "e-big",
        "order.placed",
        json!({"order_id": oversize, "customer_id": "c", "amount_minor": 5, "currency": "EUR"}),
    )
    .to_string()
    .into_bytes();
    body.resize(64 * 1024 + 1, b' ');

    h.publish_raw("order.placed", &body, Default::default())
        .await;
    h.place("e-good", order, 1000).await;

    h.wait_for_status(order, "PENDING_PAYMENT").await;
    // Rejected unread, dead-lettered by the broker, parked with why.
    let parked = h.wait_for_parked(1).await;
    assert!(
        parked[0].reason.contains("65537 bytes")
            && parked[0].reason.contains("65536")
            && parked[0].reason.ends_with("refused unread"),
        "{}",
        parked[0].reason
    );
    assert_eq!(parked[0].reason_class, "poison");
    assert_eq!(parked[0].body, body, "the original travels untouched");
    assert_eq!(h.order_state(oversize).await, None);
    assert_eq!(h.db.count("orders").await, 1);
}

#[tokio::test]
async fn terminal_conflicts_are_dead_lettered_with_their_reason() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let paid = Uuid::new_v4();
    h.place("placed", paid, 1000).await;
    h.wait_for_status(paid, "PENDING_PAYMENT").await;
    h.pay("payment", paid, "t-1", 1000).await;
    h.wait_for_status(paid, "PAID").await;

    h.pay("reused-transfer", paid, "t-1", 999).await;
    h.cancel("too-late", paid).await;
    h.publish(
        "dollars",
        "payment.succeeded",
        json!({"order_id": paid, "transfer_id": "t-usd", "amount_minor": 5, "currency": "USD"}),
    )
    .await;

    let letters = h.wait_for_dead_letters(3).await;
    let reason_of = |id: &str| {
        letters
            .iter()
            .find(|l| l.message_id.as_deref() == Some(id))
            .map(|l| l.reason.clone())
            .unwrap_or_else(|| panic!("{id} was not dead-lettered"))
    };
    assert!(reason_of("reused-transfer").contains("transfer t-1 was already recorded"));
    assert!(reason_of("too-late").contains("cannot move from PAID to CANCELLED"));
    assert!(reason_of("dollars").contains("currency"));
    assert_eq!(h.db.count("transfers").await, 1);
    assert_eq!(h.order_state(paid).await, Some(("PAID".into(), 2, 1000)));
}

#[tokio::test]
async fn a_message_still_premature_after_the_last_attempt_is_dead_lettered() {
    let mut config = test_config();
    config.max_attempts = 2;
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();

    h.pay("orphan", Uuid::new_v4(), "t-1", 1000).await;

    let letters = h.wait_for_dead_letters(1).await;
    assert!(
        letters[0].reason.contains("does not exist yet"),
        "{}",
        letters[0].reason
    );
    assert!(
        letters[0].reason.contains("gave up after 2 attempts"),
        "{}",
        letters[0].reason
    );
    assert_eq!(h.db.count("transfers").await, 0);
}

#[tokio::test]
async fn a_rest_payment_and_an_amqp_payment_of_one_transfer_make_one_ledger_row() {
    use axum::http::StatusCode;

    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    let status = h
        .post_over_rest(
            &format!("/v1/orders/{order}/payments"),
            "rest-1",
            json!({"transfer_id": "t-shared", "amount_minor": 1000, "currency": "EUR"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    h.pay("amqp-copy", order, "t-shared", 1000).await;
    h.wait_until_drained(2).await;
    h.stop_consumers().await;

    let sources: Vec<String> = sqlx::query_scalar("SELECT source FROM transfers")
        .fetch_all(&h.db.pool)
        .await
        .unwrap();
    assert_eq!(sources, ["api"]);
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 2, 1000)));
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_refused_event_is_counted_as_a_conflict_like_a_refused_request() {
    let metrics = order_service::telemetry::metrics();
    // Counted where the outcome is decided, for both doors: the AMQP door's line carries
    // `source="amqp"`.
    let conflicts = |reason: &str| {
        let reason = format!("reason=\"{reason}\"");
        metrics
            .render()
            .lines()
            .filter(|line| line.starts_with("order_conflicts_total{"))
            .filter(|line| line.contains(&reason) && line.contains("source=\"amqp\""))
            .find_map(|line| line.rsplit(' ').next().map(str::to_owned))
            .map_or(0.0, |n| n.parse::<f64>().unwrap())
    };
    let before = conflicts("transfer-conflict");
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.pay("payment", order, "t-1", 1000).await;
    h.wait_for_status(order, "PAID").await;

    h.pay("reused-transfer", order, "t-1", 999).await;
    h.wait_for_dead_letters(1).await;
    assert!(conflicts("transfer-conflict") >= before + 1.0);
}

#[tokio::test]
async fn how_late_a_message_is_handled_is_measured_by_type() {
    let metrics = order_service::telemetry::metrics();
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    let rendered = metrics.render();
    assert!(
        rendered
            .lines()
            .any(|line| line.starts_with("amqp_message_age_seconds_count{type=\"order.placed\"}")),
        "{rendered}"
    );
}
