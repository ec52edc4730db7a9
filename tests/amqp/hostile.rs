//! What a publisher can send through the exchange any publisher reaches, written byte by byte
//! (`raw_amqp/`), and what must become of it (docs/hostile-input.md): headers nested to
//! the deepest a frame can carry, a short string that is not UTF-8, an oversized header the
//! service used to copy. Each ends parked with its reason, the consumer never reconnects, and a
//! valid order placed and paid right behind them is applied meanwhile.

use serde_json::json;
use uuid::Uuid;

use order_service_testkit::AMQP_URL;

use crate::helpers::{Harness, Parked, relay_config};
use crate::raw_amqp::{
    Random, RawMessage, deepest_arrays, long_string, nested_arrays, nested_tables, publish,
    random_table, table,
};

const BROKER: &str = "127.0.0.1:5672";

/// Each hostile shape, with a poison body of its own (so each parks as a row of its own).
fn hostile_messages() -> Vec<(&'static str, RawMessage)> {
    let body = |name: &str| format!("not an envelope: {name}").into_bytes();
    let oversized_key = long_string(&vec![b'k'; 120 * 1024]);
    vec![
        (
            "100 arrays",
            RawMessage::with_headers(table("deep", &nested_arrays(100)), &body("100")),
        ),
        (
            "1,400 arrays",
            RawMessage::with_headers(table("deep", &nested_arrays(1_400)), &body("1400")),
        ),
        (
            "5,000 tables",
            RawMessage::with_headers(table("deep", &nested_tables(5_000)), &body("5000")),
        ),
        (
            "the deepest a frame holds",
            RawMessage::with_headers(
                table("deep", &nested_arrays(deepest_arrays("deep"))),
                &body("deepest"),
            ),
        ),
        (
            "a message_id that is not UTF-8",
            RawMessage::with_message_id(b"bad\xff", &body("utf8")),
        ),
        (
            "a 120 KiB x-original-routing-key",
            RawMessage::with_headers(
                table("x-original-routing-key", &oversized_key),
                &body("key"),
            ),
        ),
    ]
}

async fn publish_raw(exchange: String, messages: Vec<RawMessage>) {
    tokio::task::spawn_blocking(move || {
        publish(BROKER, "/", &exchange, "payment.succeeded", &messages);
    })
    .await
    .expect("the raw publisher");
}

/// Replays each parked dead letter over REST; each must be accepted.
async fn replay_each(h: &Harness, parked: &[Parked]) {
    for (n, letter) in parked.iter().enumerate() {
        let (status, body) = h
            .rest_post(
                &format!("/v1/dead-letters/{}/replay", letter.id),
                &format!("replay-{n}"),
                json!({}),
            )
            .await;
        assert_eq!(status, 200, "{}: {body}", letter.reason);
    }
}

#[tokio::test]
async fn hostile_properties_are_parked_while_the_consumer_goes_on_without_reconnecting() {
    let mut h = Harness::start().await;
    let consumer = h.spawn_consumer();
    h.spawn_parker();
    h.wait_for_readiness(&consumer, true).await;

    let (names, messages): (Vec<_>, Vec<_>) = hostile_messages().into_iter().unzip();
    publish_raw(h.topology.inbound_exchange.clone(), messages).await;
    let order = Uuid::new_v4();
    h.place("ev-place", order, 500).await;
    h.pay("ev-pay", order, "t-1", 500).await;

    h.wait_for_status(order, "PAID").await;
    let parked = h.wait_for_parked(names.len()).await;
    assert_eq!(parked.len(), names.len(), "{parked:?}");
    for letter in &parked {
        assert_eq!(letter.reason_class, "poison", "{}", letter.reason);
        assert_eq!(letter.routing_key, "payment.succeeded");
    }
    let dropped = parked
        .iter()
        .filter(|l| l.headers.get("x-original-headers-dropped").is_some())
        .count();
    // The four deep ones; the oversized x-original-routing-key is the service's own header,
    // written afresh rather than copied.
    assert_eq!(dropped, 4, "every header too deep to carry is said dropped");
    assert!(
        parked
            .iter()
            .any(|l| l.message_id.as_deref() == Some("bad\u{FFFD}")),
        "the message id is read with a replacement character"
    );
    assert_eq!(h.sessions(), 1, "the consumer never reconnected");
    assert_eq!(h.ready_count(&h.topology.last_resort()).await, 0);
}

#[tokio::test]
async fn hostile_dead_letters_are_parked_and_replay_without_stopping_the_relay() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    h.spawn_parker();
    h.spawn_relay(AMQP_URL, relay_config());

    // As the broker dead-letters a message (a delivery limit): the original's headers untouched.
    let (names, messages): (Vec<_>, Vec<_>) = hostile_messages().into_iter().unzip();
    publish_raw(h.topology.dead_letter_exchange.clone(), messages).await;
    let parked = h.wait_for_parked(names.len()).await;

    // Every one replays (stored bounded, so the relay can decode and publish it) and comes back
    // as poison, parked again; a valid order meanwhile goes through the relay as usual.
    replay_each(&h, &parked).await;
    let order = Uuid::new_v4();
    h.place("ev-place", order, 500).await;
    h.pay("ev-pay", order, "t-1", 500).await;
    h.wait_for_status(order, "PAID").await;
    h.wait_for_parked_where("every replay parked again", |parked| {
        parked.len() == names.len() && parked.iter().all(|l| l.times == 2 && l.status == "parked")
    })
    .await;
    assert_eq!(h.ready_count(&h.topology.last_resort()).await, 0);
}

/// `levels` JSON objects, each holding the next.
fn nested_json(levels: usize) -> serde_json::Value {
    let mut value = json!(true);
    for _ in 0..levels {
        value = json!({ "t": value });
    }
    value
}

#[tokio::test]
async fn a_dead_letter_stored_with_deep_headers_by_an_earlier_version_reads_and_discards() {
    let h = Harness::start().await;
    // As an earlier version parked it: its headers as deep as the publisher sent them.
    let mut letter = order_service::amqp::parking::dead_letter_of(
        "payment.succeeded",
        &lapin::BasicProperties::default(),
        b"not an envelope",
        20,
    );
    letter.headers = nested_json(200);
    letter.properties = json!({ "headers": nested_json(200) });
    let id = h.app.park(&letter).await.expect("park");

    let (status, list) = h.rest_get("/v1/dead-letters").await;
    assert_eq!(status, 200, "{list}");
    assert!(
        list["items"][0]["headers"]["x-original-headers-dropped"].is_u64(),
        "{list}"
    );
    let (status, one) = h.rest_get(&format!("/v1/dead-letters/{id}")).await;
    assert_eq!(status, 200, "{one}");
    let (status, discarded) = h
        .rest_post(
            &format!("/v1/dead-letters/{id}/discard"),
            "discard-1",
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{discarded}");
    assert_eq!(discarded["status"], "discarded");
}

/// Random header tables (every type, up to 40 levels, names that are not always UTF-8) on
/// poison messages: each parks, the consumer never reconnects, and each replays and parks again.
#[tokio::test]
async fn random_header_tables_through_the_consumer_the_parker_and_a_replay() {
    const MESSAGES: u64 = 40;
    let mut h = Harness::start().await;
    let consumer = h.spawn_consumer();
    h.spawn_parker();
    h.spawn_relay(AMQP_URL, relay_config());
    h.wait_for_readiness(&consumer, true).await;

    let seed = 22;
    let mut random = Random::new(seed);
    let messages: Vec<RawMessage> = (0..MESSAGES)
        .map(|n| {
            let headers = random_table(&mut random, 40, 100 * 1024);
            RawMessage::with_headers(headers, format!("random {seed}/{n}").as_bytes())
        })
        .collect();
    publish_raw(h.topology.inbound_exchange.clone(), messages).await;
    let parked = h.wait_for_parked(MESSAGES as usize).await;
    assert_eq!(
        h.sessions(),
        1,
        "the consumer never reconnected (seed {seed})"
    );
    replay_each(&h, &parked).await;
    h.wait_for_parked_where("every replay parked again", |parked| {
        parked.len() == MESSAGES as usize && parked.iter().all(|l| l.times == 2)
    })
    .await;
    assert_eq!(
        h.sessions(),
        1,
        "the consumer never reconnected (seed {seed})"
    );
    assert_eq!(h.ready_count(&h.topology.last_resort()).await, 0);
}
