//! Every published event is also kept in the event stream (docs/messaging.md "Replaying events
//! from the stream"): a subscriber that arrives late replays all of it from `first`, or what came
//! after a point in time, in the order the relay published it; the stream has the retention the
//! configuration names, is used as it is when declared otherwise, and is not declared when off.

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

use order_service::amqp::{EventStream, connect};
use order_service_testkit::{AMQP_URL, eventually};

use crate::helpers::rabbitmqctl::{arguments, listed, named};
use crate::helpers::{Harness, WAIT, relay_config, test_config};

/// One delivery of the stream, as a subscriber reads it.
#[derive(Debug)]
struct Replayed {
    event_id: String,
    /// The relay's `timestamp` property: when the event was written (seconds).
    timestamp: u64,
    order_id: String,
    version: i64,
}

/// Reads the stream from `offset` (the consumer argument `x-stream-offset`) with a prefetch and
/// manual acks, as docs/messaging.md says to, until `enough` holds of what arrived.
async fn replay(
    stream: &str,
    offset: AMQPValue,
    enough: impl Fn(&[Replayed]) -> bool,
) -> Vec<Replayed> {
    let connection = connect(AMQP_URL, "stream subscriber")
        .await
        .expect("connect");
    let channel = connection.create_channel().await.expect("channel");
    channel
        .basic_qos(100, BasicQosOptions::default())
        .await
        .expect("basic.qos: a stream needs a prefetch");
    let mut arguments = FieldTable::default();
    arguments.insert("x-stream-offset".into(), offset);
    let mut consumer = channel
        .basic_consume(
            stream.into(),
            "replay".into(),
            BasicConsumeOptions::default(),
            arguments,
        )
        .await
        .expect("consume the stream");
    let mut replayed = vec![];
    let deadline = tokio::time::Instant::now() + WAIT;
    while !enough(&replayed) {
        let delivery = tokio::time::timeout_at(deadline, consumer.next())
            .await
            .unwrap_or_else(|_| panic!("only {} events replayed", replayed.len()))
            .expect("the consumer goes on")
            .expect("a delivery");
        let body: Value = serde_json::from_slice(&delivery.data).expect("a JSON envelope");
        replayed.push(Replayed {
            event_id: body["event_id"].as_str().expect("event_id").to_owned(),
            timestamp: delivery.properties.timestamp().expect("a timestamp"),
            order_id: body["data"]["id"].as_str().expect("the order").to_owned(),
            version: body["data"]["version"].as_i64().expect("its version"),
        });
        delivery.ack(BasicAckOptions::default()).await.expect("ack");
    }
    let _ = connection.close(200, "replayed".into()).await;
    replayed
}

/// Waits until the outbox holds `n` events, all published.
async fn published(h: &Harness, n: i64) {
    eventually("the relay to publish every event", WAIT, || async {
        let (all, waiting): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM outbox_waiting)",
        )
        .fetch_one(&h.db.pool)
        .await
        .ok()?;
        (all == n && waiting == 0).then_some(())
    })
    .await;
}

async fn outbox_ids(h: &Harness) -> BTreeSet<String> {
    sqlx::query_scalar::<_, String>("SELECT event_id::text FROM outbox")
        .fetch_all(&h.db.pool)
        .await
        .expect("the outbox")
        .into_iter()
        .collect()
}

/// Places and pays `orders` orders through the inbox: two events each.
async fn place_and_pay(h: &Harness, orders: usize, tag: &str) -> Vec<Uuid> {
    let ids: Vec<Uuid> = (0..orders).map(|_| Uuid::new_v4()).collect();
    for (n, order) in ids.iter().enumerate() {
        h.place(&format!("{tag}-placed-{n}"), *order, 1000).await;
        h.pay(
            &format!("{tag}-paid-{n}"),
            *order,
            &format!("{tag}-t-{n}"),
            1000,
        )
        .await;
    }
    ids
}

#[tokio::test]
async fn a_subscriber_arriving_after_500_changes_replays_them_all_from_first_in_version_order() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    h.spawn_relay(AMQP_URL, relay_config());
    place_and_pay(&h, 250, "late").await;
    published(&h, 500).await;

    let stream = &h.config.event_stream.queue;
    let replayed = replay(stream, AMQPValue::LongString("first".into()), |r| {
        r.len() >= 500
    })
    .await;

    let ids: BTreeSet<String> = replayed.iter().map(|r| r.event_id.clone()).collect();
    assert_eq!(ids.len(), 500, "each change once");
    assert_eq!(ids, outbox_ids(&h).await);
    let mut versions: BTreeMap<&str, Vec<i64>> = BTreeMap::new();
    for event in &replayed {
        versions
            .entry(&event.order_id)
            .or_default()
            .push(event.version);
    }
    assert_eq!(versions.len(), 250);
    for (order, versions) in versions {
        assert_eq!(versions, [1, 2], "order {order}: in version order");
    }
}

#[tokio::test]
async fn a_subscriber_from_a_point_in_time_gets_exactly_the_events_written_since() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    h.spawn_relay(AMQP_URL, relay_config());
    place_and_pay(&h, 10, "before").await;
    published(&h, 20).await;
    let written: chrono::DateTime<chrono::Utc> =
        sqlx::query_scalar("SELECT max(created_at) FROM outbox")
            .fetch_one(&h.db.pool)
            .await
            .expect("the newest event");
    // The next whole second after every earlier event: the stream's timestamps are seconds.
    let since = written.timestamp() + 1;
    eventually("the clock to pass a second", WAIT, || async {
        (chrono::Utc::now().timestamp() >= since).then_some(())
    })
    .await;
    let before = outbox_ids(&h).await;
    place_and_pay(&h, 10, "after").await;
    published(&h, 40).await;
    let after: BTreeSet<String> = outbox_ids(&h).await.difference(&before).cloned().collect();

    let since = u64::try_from(since).expect("after 1970");
    let replayed = replay(
        &h.config.event_stream.queue,
        AMQPValue::Timestamp(since),
        |r| r.iter().filter(|e| after.contains(&e.event_id)).count() == after.len(),
    )
    .await;

    // The broker starts at the chunk before the point; the subscriber drops what predates it.
    let kept: BTreeSet<String> = replayed
        .iter()
        .filter(|e| e.timestamp >= since)
        .map(|e| e.event_id.clone())
        .collect();
    assert_eq!(kept, after);
}

/// The stream's arguments as the broker holds them.
fn declared_arguments(stream: &str) -> Value {
    arguments(named(
        &listed("list_queues", &["name", "arguments"]),
        stream,
    ))
}

#[tokio::test]
async fn the_stream_has_the_configured_retention_and_a_stream_declared_otherwise_is_used_as_it_is()
{
    let mut config = test_config();
    config.event_stream.max_age = "3h".into();
    config.event_stream.max_bytes = 123_456_789;
    config.event_stream.segment_bytes = 4_567_890;
    let mut h = Harness::start_with(config).await;
    h.spawn_relay(AMQP_URL, relay_config());
    let stream = h.config.event_stream.queue.clone();
    eventually("the relay to declare the stream", WAIT, || async {
        listed("list_queues", &["name"])
            .iter()
            .any(|row| row["name"] == stream.as_str())
            .then_some(())
    })
    .await;
    let arguments = declared_arguments(&stream);
    assert_eq!(arguments["x-queue-type"], "stream");
    assert_eq!(arguments["x-max-age"], "3h");
    assert_eq!(arguments["x-max-length-bytes"], 123_456_789);
    assert_eq!(arguments["x-stream-max-segment-size-bytes"], 4_567_890);
    h.stop_consumers().await;

    // A relay configured with another retention uses the stream as it is, and keeps publishing
    // into it.
    h.config.event_stream.max_age = "1D".into();
    h.spawn_consumer();
    h.spawn_relay(AMQP_URL, relay_config());
    place_and_pay(&h, 1, "as-it-is").await;
    published(&h, 2).await;
    let replayed = replay(&stream, AMQPValue::LongString("first".into()), |r| {
        r.len() >= 2
    })
    .await;
    assert_eq!(replayed.len(), 2);
    assert_eq!(declared_arguments(&stream)["x-max-age"], "3h");
}

#[tokio::test]
async fn with_the_stream_off_the_relay_declares_none() {
    let mut config = test_config();
    config.event_stream.enabled = false;
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();
    h.spawn_relay(AMQP_URL, relay_config());
    place_and_pay(&h, 1, "off").await;
    published(&h, 2).await;

    let connection = connect(AMQP_URL, "stream check").await.expect("connect");
    let channel = connection.create_channel().await.expect("channel");
    let passive = QueueDeclareOptions {
        passive: true,
        durable: true,
        ..QueueDeclareOptions::default()
    };
    let found = channel
        .queue_declare(
            h.config.event_stream.queue.as_str().into(),
            passive,
            FieldTable::default(),
        )
        .await;
    assert!(found.is_err(), "a stream was declared: {found:?}");
    assert!(EventStream::from_config(&h.config).is_none());
}
