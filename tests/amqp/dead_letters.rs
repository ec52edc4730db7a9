//! Parked dead letters end to end (docs/contract.md#parked-dead-letters): what the consumer
//! dead-letters, the parker moves into Postgres with its reason and original routing key.

use std::net::SocketAddr;

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use serde_json::json;
use uuid::Uuid;

use crate::common::eventually;
use crate::common::proxy::Proxy;
use crate::helpers::{Harness, Parked, WAIT, envelope, test_config};

/// The one parked dead letter of this message id.
fn by_message_id<'a>(parked: &'a [Parked], id: &str) -> &'a Parked {
    parked
        .iter()
        .find(|p| p.message_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("{id} is not parked: {parked:#?}"))
}

/// Headers of a message of the test's own, beside the service's bookkeeping.
fn traced() -> FieldTable {
    let mut headers = FieldTable::default();
    headers.insert(
        "traceparent".into(),
        AMQPValue::LongString("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
    );
    headers
}

#[tokio::test]
async fn poison_and_exhausted_messages_are_parked_with_their_reason_and_first_routing_key() {
    let mut config = test_config();
    config.max_attempts = 2;
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();
    h.spawn_parker();

    h.publish_raw(
        "payment.succeeded",
        b"{not json",
        BasicProperties::default()
            .with_message_id("m-poison".into())
            .with_headers(traced()),
    )
    .await;
    h.publish_raw(
        "order.placed",
        envelope("e-type", "order.exploded", json!({}))
            .to_string()
            .as_bytes(),
        BasicProperties::default().with_message_id("e-type".into()),
    )
    .await;
    let orphan = Uuid::new_v4();
    h.pay("orphan", orphan, "t-1", 1000).await;

    let parked = h.wait_for_parked(3).await;
    assert_eq!(parked.len(), 3, "{parked:#?}");

    let poison = by_message_id(&parked, "m-poison");
    assert!(
        poison.reason.starts_with("poison: not a JSON envelope"),
        "{}",
        poison.reason
    );
    assert_eq!(poison.reason_class, "poison");
    assert_eq!((&poison.event_id, &poison.event_type), (&None, &None));
    assert_eq!(poison.routing_key, "payment.succeeded");
    assert_eq!(poison.body, b"{not json");
    // The original's own header stays; the service's bookkeeping does not.
    assert_eq!(
        poison.headers,
        json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
    );
    assert_eq!((poison.times, poison.status.as_str()), (1, "parked"));

    let unknown = by_message_id(&parked, "e-type");
    assert!(
        unknown.reason.starts_with("poison: unknown event type"),
        "{}",
        unknown.reason
    );
    assert_eq!(unknown.event_id.as_deref(), Some("e-type"));
    assert_eq!(unknown.event_type.as_deref(), Some("order.exploded"));
    assert_eq!(unknown.routing_key, "order.placed");

    // Retried once (its retry came back with the inbox's name as routing key), then given up.
    let exhausted = by_message_id(&parked, "orphan");
    assert_eq!(exhausted.reason_class, "premature");
    assert_eq!(
        exhausted.reason,
        format!("premature: order {orphan} does not exist yet (gave up after 2 attempts)")
    );
    assert_eq!(exhausted.routing_key, "payment.succeeded");
    assert_eq!(exhausted.event_type.as_deref(), Some("payment.succeeded"));
    assert_eq!(exhausted.headers, json!({}));
}

#[tokio::test]
async fn the_same_message_dead_lettered_twice_is_one_row_counted_twice() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    h.spawn_parker();
    let with_id = BasicProperties::default().with_message_id("m-1".into());
    h.publish_raw("payment.succeeded", b"{one", with_id.clone())
        .await;
    h.publish_raw("payment.succeeded", b"anonymous", Default::default())
        .await;
    h.wait_for_parked(2).await;
    // Again: the same id (another body), the same routing key and body; then another body.
    h.publish_raw("payment.succeeded", b"{one, edited", with_id)
        .await;
    h.publish_raw("payment.succeeded", b"anonymous", Default::default())
        .await;
    h.publish_raw("payment.succeeded", b"anonymous too", Default::default())
        .await;

    let parked = h
        .wait_for_parked_where("the repeats to be counted", |p| {
            p.len() == 3 && p.iter().filter(|p| p.times == 2).count() == 2
        })
        .await;
    let first = by_message_id(&parked, "m-1");
    assert_eq!(first.times, 2);
    assert_eq!(first.body, b"{one, edited", "the latest copy is kept");
    let anonymous: Vec<(&[u8], i32)> = parked
        .iter()
        .filter(|p| p.message_id.is_none())
        .map(|p| (p.body.as_slice(), p.times))
        .collect();
    assert_eq!(
        anonymous,
        [(&b"anonymous"[..], 2), (&b"anonymous too"[..], 1)]
    );
}

#[tokio::test]
async fn the_parker_is_not_ready_while_it_cannot_reach_the_broker_and_parks_once_it_can() {
    let mut h = Harness::start().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let ready = h.spawn_parker_on(&format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port));
    eventually("the parker to connect", WAIT, || async {
        ready.is_ready().then_some(())
    })
    .await;

    proxy.sever();
    eventually("readiness to drop", WAIT, || async {
        (!ready.is_ready()).then_some(())
    })
    .await;
    h.publish_dead_letter("order.placed", b"{", BasicProperties::default())
        .await;
    proxy.restore();

    let parked = h.wait_for_parked(1).await;
    assert_eq!(parked[0].body, b"{");
    assert!(ready.is_ready());
}
