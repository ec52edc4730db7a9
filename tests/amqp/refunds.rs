//! `refund.succeeded` runs the same command as `POST /v1/orders/{id}/refunds`: recorded once
//! however often it arrives, dead-lettered when it can never apply, and retried while it exceeds
//! what the order holds, since the payment it gives back may still be on its way.

use axum::http::StatusCode;
use lapin::options::{BasicGetOptions, BasicNackOptions};
use lapin::types::AMQPValue;
use serde_json::json;
use uuid::Uuid;

use order_service_testkit::eventually;

use crate::helpers::{Harness, WAIT, test_config};

/// Waits for the refund to be parked in the first retry queue and returns the reason it carries,
/// putting it back where it was.
async fn parked_retry_reason(h: &Harness) -> String {
    let queue = h.topology.retry_queue(h.config.retry_delay(1));
    eventually("the refund to be parked for retry", WAIT, || async {
        let message = h
            .channel
            .basic_get(queue.as_str().into(), BasicGetOptions::default())
            .await
            .expect("basic_get")?;
        let headers = message
            .delivery
            .properties
            .headers()
            .clone()
            .unwrap_or_default();
        let reason = match headers.inner().get("x-error-reason") {
            Some(AMQPValue::LongString(s)) => s.to_string(),
            other => panic!("a retry without a reason: {other:?}"),
        };
        message
            .delivery
            .nack(BasicNackOptions {
                requeue: true,
                ..BasicNackOptions::default()
            })
            .await
            .expect("requeue");
        Some(reason)
    })
    .await
}

#[tokio::test]
async fn a_refund_event_is_recorded_as_an_outgoing_ledger_entry_without_a_status_change() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.pay("overpaid", order, "t-1", 1500).await;
    h.wait_for_status(order, "PAID").await;

    h.refund("refunded", order, "re-1", 500).await;

    assert_eq!(h.wait_for_refunded(order, 500).await, (1500, 500, false));
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 3, 1500)));
    assert_eq!(
        h.transfers(order).await,
        vec![
            ("t-1".into(), "in".into(), 1500, "amqp".into()),
            ("re-1".into(), "out".into(), 500, "amqp".into())
        ]
    );
    let (kind, from, to, transfer, source, event): (
        String,
        String,
        String,
        String,
        String,
        String,
    ) = sqlx::query_as(
        "SELECT kind, from_status, to_status, transfer_id, cause_source, event_id \
             FROM order_transitions WHERE order_id = $1 AND version = 3",
    )
    .bind(order)
    .fetch_one(&h.db.pool)
    .await
    .unwrap();
    assert_eq!(
        (kind.as_str(), from.as_str(), to.as_str()),
        ("refund_recorded", "PAID", "PAID")
    );
    assert_eq!(
        (transfer.as_str(), source.as_str(), event.as_str()),
        ("re-1", "amqp", "refunded")
    );
    assert_eq!(
        h.outbox_types(order).await,
        [
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_refund_event_on_a_cancelled_order_leaves_it_cancelled_and_settles_what_it_held() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.pay("partial", order, "t-1", 400).await;
    eventually("the partial payment", WAIT, || async {
        h.order_state(order).await.filter(|s| s.2 == 400)
    })
    .await;
    h.cancel("cancelled", order).await;
    h.wait_for_status(order, "CANCELLED").await;
    assert_eq!(h.order_money(order).await, Some((400, 0, true)));

    h.refund("refunded", order, "re-1", 400).await;

    assert_eq!(h.wait_for_refunded(order, 400).await, (400, 400, false));
    assert_eq!(
        h.order_state(order).await,
        Some(("CANCELLED".into(), 4, 400))
    );
    assert_eq!(
        h.history_kinds(order).await,
        [
            (1, "created".into()),
            (2, "payment_recorded".into()),
            (3, "cancelled".into()),
            (4, "refund_recorded".into())
        ]
    );
    assert_eq!(
        h.outbox_types(order).await,
        [
            "order.created",
            "order.cancelled",
            "order.refund_required",
            "order.refunded"
        ]
    );
}

#[tokio::test]
async fn a_refund_delivered_many_times_and_through_rest_too_is_recorded_once() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.pay("overpaid", order, "t-1", 1500).await;
    h.wait_for_status(order, "PAID").await;
    let status = h
        .post_over_rest(
            &format!("/v1/orders/{order}/refunds"),
            "rest-1",
            json!({"refund_id": "re-shared", "amount_minor": 500, "currency": "EUR"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);

    for _ in 0..5 {
        h.refund("provider-event", order, "re-shared", 500).await;
    }
    h.refund("provider-resent-it", order, "re-shared", 500)
        .await;
    h.wait_until_drained(2 + 6).await;
    h.stop_consumers().await;

    assert_eq!(
        h.transfers(order).await,
        vec![
            ("t-1".into(), "in".into(), 1500, "amqp".into()),
            ("re-shared".into(), "out".into(), 500, "api".into())
        ]
    );
    assert_eq!(h.order_money(order).await, Some((1500, 500, false)));
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 3, 1500)));
    assert_eq!(
        h.outbox_types(order).await,
        [
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
    assert_eq!(h.ready_count(&h.topology.inbox).await, 0);
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn refunds_reusing_an_id_or_in_another_currency_are_dead_lettered_with_their_reason() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.pay("overpaid", order, "t-1", 1500).await;
    h.refund("refunded", order, "re-1", 300).await;
    h.wait_for_refunded(order, 300).await;

    h.refund("other-amount", order, "re-1", 301).await;
    h.refund("payment-id", order, "t-1", 1500).await;
    h.publish(
        "dollars",
        "refund.succeeded",
        json!({"order_id": order, "refund_id": "re-usd", "amount_minor": 5, "currency": "USD"}),
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
    assert!(
        reason_of("other-amount").contains("transfer re-1 was already recorded"),
        "{}",
        reason_of("other-amount")
    );
    assert!(
        reason_of("payment-id").contains("transfer t-1 was already recorded"),
        "{}",
        reason_of("payment-id")
    );
    assert!(
        reason_of("dollars").contains("currency"),
        "{}",
        reason_of("dollars")
    );
    assert_eq!(
        h.transfers(order).await,
        vec![
            ("t-1".into(), "in".into(), 1500, "amqp".into()),
            ("re-1".into(), "out".into(), 300, "amqp".into())
        ]
    );
    assert_eq!(h.order_money(order).await, Some((1500, 300, true)));
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 3, 1500)));
    assert_eq!(
        h.outbox_types(order).await,
        [
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
}

#[tokio::test]
async fn a_refund_before_its_payment_is_retried_and_applied_once_the_payment_arrives() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    h.refund("early-refund", order, "re-1", 400).await;
    let reason = parked_retry_reason(&h).await;
    assert!(
        reason.contains("exceeds") && reason.contains("holds"),
        "{reason}"
    );
    assert!(h.transfers(order).await.is_empty(), "nothing recorded yet");
    h.pay("late-payment", order, "t-1", 1400).await;

    assert_eq!(h.wait_for_refunded(order, 400).await, (1400, 400, false));
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 3, 1400)));
    assert_eq!(
        h.history_kinds(order).await,
        [
            (1, "created".into()),
            (2, "paid".into()),
            (3, "refund_recorded".into())
        ]
    );
    assert_eq!(
        h.transfers(order).await,
        vec![
            ("t-1".into(), "in".into(), 1400, "amqp".into()),
            ("re-1".into(), "out".into(), 400, "amqp".into())
        ]
    );
    assert_eq!(
        h.outbox_types(order).await,
        [
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.refunded"
        ]
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_refund_whose_payment_never_arrives_is_dead_lettered_after_the_last_attempt() {
    let mut config = test_config();
    config.max_attempts = 2;
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    h.refund("orphan-refund", order, "re-1", 400).await;

    let letters = h.wait_for_dead_letters(1).await;
    assert_eq!(letters[0].message_id.as_deref(), Some("orphan-refund"));
    assert!(
        letters[0]
            .reason
            .contains("a refund of 400 exceeds the 0 the order holds"),
        "{}",
        letters[0].reason
    );
    assert!(
        letters[0].reason.contains("gave up after 2 attempts"),
        "{}",
        letters[0].reason
    );
    assert!(h.transfers(order).await.is_empty());
    assert_eq!(h.order_money(order).await, Some((0, 0, false)));
    assert_eq!(
        h.order_state(order).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
    assert_eq!(h.outbox_types(order).await, ["order.created"]);
}
