//! Parked dead letters end to end (docs/contract.md#parked-dead-letters): what the consumer
//! dead-letters, the parker moves into Postgres with its reason and original routing key; a replay
//! goes back through the outbox and the relay to the inbox, where it applies once, and where the
//! data model absorbs a replayed duplicate.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use lapin::BasicProperties;
use lapin::options::{BasicAckOptions, BasicGetOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use serde_json::{Value, json};
use uuid::Uuid;

use order_service_testkit::proxy::Proxy;
use order_service_testkit::{AMQP_URL, eventually};

use crate::helpers::{Harness, Parked, WAIT, envelope, relay_config, test_config};

/// The one parked dead letter of this message id.
fn by_message_id<'a>(parked: &'a [Parked], id: &str) -> &'a Parked {
    parked
        .iter()
        .find(|p| p.message_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("{id} is not parked: {parked:#?}"))
}

/// The names of a parked dead letter's headers.
fn header_names(parked: &Parked) -> Vec<&str> {
    parked
        .headers
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
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

/// The kinds of the order's history rows and the order events of its outbox.
async fn trail(h: &Harness, order: Uuid) -> (Vec<String>, Vec<String>) {
    let kinds = h
        .history_kinds(order)
        .await
        .into_iter()
        .map(|(_, kind)| kind);
    (kinds.collect(), h.outbox_types(order).await)
}

/// A consumer giving up on a premature message after `max_attempts`, a parker and a relay: all a
/// replay goes through.
async fn replaying(max_attempts: u32) -> Harness {
    let mut config = test_config();
    config.max_attempts = max_attempts;
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();
    h.spawn_parker();
    h.spawn_relay(AMQP_URL, relay_config());
    h
}

async fn replay(h: &Harness, id: Uuid, key: &str) -> (StatusCode, Value) {
    h.rest_post(&format!("/v1/dead-letters/{id}/replay"), key, json!({}))
        .await
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
    // The message's own trace stays (under the span that handled it); the service's bookkeeping
    // does not.
    assert_eq!(header_names(poison), ["traceparent"]);
    assert!(
        poison.headers["traceparent"]
            .as_str()
            .unwrap()
            .starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "{}",
        poison.headers
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
    assert_eq!(header_names(exhausted), ["traceparent"]);
}

#[tokio::test]
async fn a_payment_parked_for_want_of_its_order_applies_once_when_replayed_after_it() {
    let h = replaying(1).await;
    let order = Uuid::new_v4();
    h.pay("early", order, "t-1", 1000).await;
    let id = h.wait_for_parked(1).await[0].id;

    // Replayed before its order exists: dead-lettered again, the same row, parked again.
    let (status, body) = replay(&h, id, "too-soon").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "replayed");
    let parked = h
        .wait_for_parked_where("the replay to come back", |p| p[0].times == 2)
        .await;
    assert_eq!(parked.len(), 1);
    assert_eq!(parked[0].status, "parked");

    // Once the order is there, a replay applies it.
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    let (status, body) = replay(&h, id, "replay-1").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    h.wait_for_status(order, "PAID").await;

    // A second replay under another key is refused: it is no longer parked.
    let (status, problem) = replay(&h, id, "replay-2").await;
    assert_eq!(status, StatusCode::CONFLICT, "{problem}");
    assert_eq!(problem["current_status"], "replayed");
    // The retry of the first, under its key, answers as before and sends nothing again.
    let (status, again) = replay(&h, id, "replay-1").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], body["id"]);

    // early (dead-lettered), its first replay (dead-lettered), placed, its second replay.
    h.wait_until_drained(4).await;
    assert_eq!(h.transfers(order).await.len(), 1);
    assert_eq!(
        trail(&h, order).await,
        (
            vec!["created".into(), "paid".into()],
            vec!["order.created".into(), "order.paid".into()]
        )
    );
    let raw: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox WHERE body IS NOT NULL")
        .fetch_one(&h.db.pool)
        .await
        .unwrap();
    assert_eq!(raw, 2, "one outbox row per replay that was applied");
    let parked = h.parked().await;
    assert_eq!(
        (parked[0].times, parked[0].status.as_str()),
        (2, "replayed")
    );
}

#[tokio::test]
async fn a_replayed_duplicate_changes_nothing_and_goes_back_as_it_came() {
    let h = replaying(test_config().max_attempts).await;
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    let payment = h
        .publish(
            "pay-1",
            "payment.succeeded",
            json!({"order_id": order, "transfer_id": "t-1", "amount_minor": 1000, "currency": "EUR"}),
        )
        .await;
    h.wait_for_status(order, "PAID").await;
    let before = trail(&h, order).await;

    // A copy of the applied payment lands in the dead letters (as a redelivery racing its
    // original might, after a broker hiccup), with the service's bookkeeping headers.
    let mut headers = traced();
    headers.insert(
        "x-error-reason".into(),
        AMQPValue::LongString("unexpected: the database hiccuped".into()),
    );
    headers.insert("x-attempt".into(), AMQPValue::LongUInt(10));
    headers.insert(
        "x-original-routing-key".into(),
        AMQPValue::LongString("payment.succeeded".into()),
    );
    h.publish_dead_letter(
        "payment.succeeded",
        &payment,
        BasicProperties::default()
            .with_message_id("pay-1".into())
            .with_content_type("application/json".into())
            .with_headers(headers),
    )
    .await;
    let id = h.wait_for_parked(1).await[0].id;

    // What the replay publishes, seen by a queue of the test's own beside the inbox.
    let spy = format!("{}.spy", h.topology.inbox);
    h.channel
        .queue_declare(
            spy.as_str().into(),
            QueueDeclareOptions {
                auto_delete: true,
                ..QueueDeclareOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .unwrap();
    h.channel
        .queue_bind(
            spy.as_str().into(),
            h.topology.inbound_exchange.as_str().into(),
            "payment.succeeded".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .unwrap();
    // The operator's request is traced: the replayed message continues that trace.
    let replay_trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let status = h
        .post_over_rest_with(
            &format!("/v1/dead-letters/{id}/replay"),
            "replay",
            json!({}),
            &[("traceparent", replay_trace)],
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    h.wait_until_drained(3).await;

    assert_eq!(h.transfers(order).await.len(), 1);
    assert_eq!(
        trail(&h, order).await,
        before,
        "no new history row or event"
    );
    assert_eq!(h.parked().await[0].status, "replayed");

    let replayed = eventually("the replay to be published", WAIT, || async {
        h.channel
            .basic_get(spy.as_str().into(), BasicGetOptions::default())
            .await
            .unwrap()
    })
    .await;
    replayed
        .delivery
        .ack(BasicAckOptions::default())
        .await
        .unwrap();
    let sent = &replayed.delivery;
    assert_eq!(sent.data, payment, "the original body");
    assert_eq!(sent.routing_key.as_str(), "payment.succeeded");
    let properties = &sent.properties;
    assert_eq!(properties.message_id().as_ref().unwrap().as_str(), "pay-1");
    assert_eq!(*properties.delivery_mode(), Some(2));
    let headers = properties.headers().clone().unwrap_or_default();
    let names: Vec<&str> = headers.inner().keys().map(|k| k.as_str()).collect();
    assert_eq!(names, ["traceparent"], "no bookkeeping header goes back");
    let traceparent = match headers.inner().get("traceparent") {
        Some(AMQPValue::LongString(text)) => text.to_string(),
        other => panic!("a traceparent: {other:?}"),
    };
    assert!(
        traceparent.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "the replay's trace, not the original publisher's: {traceparent}"
    );
}

#[tokio::test]
async fn a_bulk_replay_by_reason_sends_back_every_matching_parked_letter_and_nothing_else() {
    let h = replaying(1).await;
    let orders: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (i, order) in orders.iter().enumerate() {
        h.pay(&format!("early-{i}"), *order, &format!("t-{i}"), 500)
            .await;
    }
    h.publish_raw("order.placed", b"poison", BasicProperties::default())
        .await;
    h.wait_for_parked(4).await;
    let (status, summary) = h.rest_get("/v1/dead-letters/summary").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(summary["parked"], 4, "{summary}");

    for (i, order) in orders.iter().enumerate() {
        h.place(&format!("placed-{i}"), *order, 500).await;
        h.wait_for_status(*order, "PENDING_PAYMENT").await;
    }
    let (status, body) = h
        .rest_post(
            "/v1/dead-letters/replay",
            "bulk",
            json!({"reason": "PREMATURE: order", "type": "payment.succeeded"}),
        )
        .await;
    assert_eq!(
        (status, &body),
        (StatusCode::OK, &json!({"replayed": 3, "skipped": 0}))
    );
    for order in &orders {
        h.wait_for_status(*order, "PAID").await;
    }
    let statuses: Vec<(String, String)> = h
        .parked()
        .await
        .into_iter()
        .map(|p| (p.reason_class, p.status))
        .collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|s| *s == &("premature".to_owned(), "replayed".to_owned()))
            .count(),
        3,
        "{statuses:?}"
    );
    assert!(statuses.contains(&("poison".into(), "parked".into())));
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
    h.wait_for_readiness(&ready, true).await;

    proxy.sever();
    h.wait_for_readiness(&ready, false).await;
    h.publish_dead_letter("order.placed", b"{", BasicProperties::default())
        .await;
    proxy.restore();

    let parked = h.wait_for_parked(1).await;
    assert_eq!(parked[0].body, b"{");
    assert!(ready.is_ready());
}

#[tokio::test]
async fn the_parker_keeps_a_dead_letter_while_postgres_is_unreachable_and_parks_it_once_it_is_back()
{
    let mut h = Harness::start().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5432))).await;
    let app = h.app_through(&proxy);
    proxy.sever();
    h.spawn_parker_with(app, AMQP_URL);
    h.publish_dead_letter("order.placed", b"{", BasicProperties::default())
        .await;
    // Several attempts fail meanwhile (the parker backs off from 250 ms).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(h.parked().await.is_empty());

    proxy.restore();
    let parked = h.wait_for_parked(1).await;
    assert_eq!(parked[0].body, b"{");
}

#[tokio::test]
async fn the_parker_reports_how_many_messages_wait_in_the_inbox() {
    let h = Harness::start_with(test_config()).await;
    let order = Uuid::new_v4();
    h.place("placed-waiting", order, 1000).await;
    // One message at a time: the consumer holds one, the rest wait in the inbox.
    let service = h.start_service(&[("AMQP_PREFETCH", "1"), ("AMQP_BATCH_SIZE", "1")], None);
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    let lock = h.lock_order(order).await;
    for n in 1..=5 {
        let data = json!({"order_id": order, "transfer_id": format!("t-{n}"), "amount_minor": 100, "currency": "EUR"});
        h.publish(&format!("waiting-{n}"), "payment.succeeded", data)
            .await;
    }
    eventually("the gauge to count the waiting messages", WAIT, || async {
        let (_, metrics) = order_service_testkit::http::get(service.http_port, "/metrics")
            .await
            .ok()?;
        let waiting: f64 = metrics
            .lines()
            .find_map(|line| line.strip_prefix("inbox_ready_messages "))?
            .parse()
            .ok()?;
        (waiting >= 3.0).then_some(())
    })
    .await;
    lock.rollback().await.expect("unlock");
    eventually("the waiting payments to apply", WAIT, || async {
        let paid: i64 = sqlx::query_scalar("SELECT paid_minor FROM orders WHERE id = $1")
            .bind(order)
            .fetch_one(&h.db.pool)
            .await
            .ok()?;
        (paid == 500).then_some(())
    })
    .await;
}
