//! A publisher's bookkeeping headers decide nothing: a count of attempts (`x-attempt`) that the
//! service did not seal is not read, so a premature message that claims to be on its last attempt
//! is retried like any other, and applied once it can be.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Harness, envelope};

/// A premature payment of `order` claiming to be delivery `attempt` through the retry path,
/// with `seal` as its seal if any.
async fn forged_payment(
    h: &Harness,
    event_id: &str,
    order: Uuid,
    attempt: AMQPValue,
    seal: Option<&str>,
) {
    let body = envelope(
        event_id,
        "payment.succeeded",
        json!({"order_id": order, "transfer_id": event_id, "amount_minor": 1000, "currency": "EUR"}),
    )
    .to_string();
    let mut headers = FieldTable::default();
    headers.insert("x-attempt".into(), attempt);
    if let Some(seal) = seal {
        headers.insert("x-attempt-seal".into(), AMQPValue::LongString(seal.into()));
    }
    h.publish_raw(
        "payment.succeeded",
        body.as_bytes(),
        BasicProperties::default()
            .with_message_id(event_id.into())
            .with_content_type("application/json".into())
            .with_headers(headers),
    )
    .await;
}

#[tokio::test]
async fn a_premature_payment_with_a_forged_attempt_count_is_retried_and_applied() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let orders = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    let max = h.config.max_attempts;

    forged_payment(
        &h,
        "last-attempt",
        orders[0],
        AMQPValue::LongUInt(max),
        None,
    )
    .await;
    forged_payment(
        &h,
        "far-past",
        orders[1],
        AMQPValue::LongInt(i32::MAX),
        None,
    )
    .await;
    forged_payment(
        &h,
        "sealed-by-guess",
        orders[2],
        AMQPValue::LongUInt(max),
        Some(&"ab".repeat(32)),
    )
    .await;
    h.wait_until_retried(3).await;
    for (n, order) in orders.iter().enumerate() {
        h.place(&format!("placed-{n}"), *order, 1000).await;
    }

    for order in orders {
        assert_eq!(
            h.wait_for_status(order, "PAID").await,
            ("PAID".into(), 2, 1000)
        );
    }
    assert!(h.take_dead_letters().await.is_empty());
}
