//! The event stream after the node losses: a subscriber replaying it from `first` gets every
//! event the outbox holds, each order's first publications in version order
//! (docs/messaging.md "Replaying events from the stream").

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use lapin::Channel;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::{AMQPValue, FieldTable};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

/// What the replay found: deliveries read, and events among them published more than once.
#[derive(Debug)]
pub struct Replayed {
    pub deliveries: usize,
    pub republished: usize,
}

/// Replays `stream` from `first` on `channel` until every event of the outbox arrived, checking
/// that each order's events first appear in version order.
pub async fn replay_everything(pool: &PgPool, channel: &Channel, stream: &str) -> Replayed {
    let outbox: BTreeSet<String> = sqlx::query_scalar::<_, Uuid>("SELECT event_id FROM outbox")
        .fetch_all(pool)
        .await
        .expect("read the outbox")
        .into_iter()
        .map(|id| id.to_string())
        .collect();
    channel
        .basic_qos(1_000, BasicQosOptions::default())
        .await
        .expect("qos");
    let mut arguments = FieldTable::default();
    arguments.insert(
        "x-stream-offset".into(),
        AMQPValue::LongString("first".into()),
    );
    let mut consumer = channel
        .basic_consume(
            stream.into(),
            "cluster-replay".into(),
            BasicConsumeOptions::default(),
            arguments,
        )
        .await
        .expect("consume the event stream");
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut versions: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut deliveries = 0;
    while seen.len() < outbox.len() {
        let delivery = tokio::time::timeout(Duration::from_secs(60), consumer.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the stream replayed {} of the outbox's {} events",
                    seen.len(),
                    outbox.len()
                )
            })
            .expect("a delivery")
            .expect("a delivery");
        deliveries += 1;
        let body: Value = serde_json::from_slice(&delivery.data).expect("an envelope");
        let id = body["event_id"].as_str().expect("event_id").to_owned();
        assert!(
            outbox.contains(&id),
            "in the stream, yet not in the outbox: {id}"
        );
        if seen.insert(id) {
            let order = body["data"]["id"].as_str().expect("order").to_owned();
            let version = body["data"]["version"].as_i64().expect("version");
            versions.entry(order).or_default().push(version);
        }
        delivery.ack(BasicAckOptions::default()).await.expect("ack");
    }
    for (order, versions) in &versions {
        assert!(
            versions.windows(2).all(|pair| pair[0] < pair[1]),
            "order {order}: first published in the order {versions:?}"
        );
    }
    Replayed {
        deliveries,
        republished: deliveries - seen.len(),
    }
}
