//! What the broker's queues hold: a subscriber queue of the test's own on the outbound exchange,
//! the messages taken from a queue, and a queue's depth (ready, and held unacknowledged).

use std::time::Duration;

use lapin::message::Delivery;
use lapin::options::{BasicAckOptions, BasicGetOptions};
use lapin::types::FieldTable;
use serde_json::Value;

use order_service_testkit::declare_subscriber;

use super::{Harness, WAIT};

impl Harness {
    /// A queue of this test's, bound to every outbound event; deleted with the topology.
    pub async fn subscribe(&mut self) -> String {
        let queue = format!("{}.subscriber", self.topology.inbox);
        declare_subscriber(&self.channel, &queue, &self.topology.outbound_exchange).await;
        self.delete_at_end(queue.clone());
        queue
    }

    /// Takes every message now in `queue`, acknowledged, as it was delivered.
    pub async fn take_deliveries(&self, queue: &str) -> Vec<Delivery> {
        let mut deliveries = vec![];
        while let Some(message) = self
            .channel
            .basic_get(queue.into(), BasicGetOptions::default())
            .await
            .expect("basic_get")
        {
            message
                .delivery
                .ack(BasicAckOptions::default())
                .await
                .expect("ack");
            deliveries.push(message.delivery);
        }
        deliveries
    }

    /// Takes every message now in `queue`.
    pub async fn drain(&self, queue: &str) -> Vec<Published> {
        let deliveries = self.take_deliveries(queue).await;
        deliveries
            .iter()
            .map(|delivery| {
                let properties = &delivery.properties;
                Published {
                    routing_key: delivery.routing_key.to_string(),
                    message_id: properties.message_id().as_ref().map(|m| m.to_string()),
                    content_type: properties.content_type().as_ref().map(|c| c.to_string()),
                    delivery_mode: *properties.delivery_mode(),
                    headers: properties.headers().clone().unwrap_or_default(),
                    body: serde_json::from_slice(&delivery.data).expect("JSON body"),
                }
            })
            .collect()
    }

    /// Collects messages from `queue` until `n` arrived.
    pub async fn receive(&self, queue: &str, n: usize) -> Vec<Published> {
        let start = std::time::Instant::now();
        let mut messages = vec![];
        while messages.len() < n {
            assert!(
                start.elapsed() < WAIT,
                "received {} of {n} messages",
                messages.len()
            );
            messages.extend(self.drain(queue).await);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        messages
    }

    /// Messages in a queue that are ready for delivery (not those held unacknowledged).
    pub async fn ready_count(&self, queue: &str) -> u32 {
        order_service_testkit::ready_count(&self.channel, queue).await
    }

    /// Deliveries of `queue` held by consumers and not yet acknowledged, as the broker counts
    /// them (`rabbitmqctl`: the AMQP protocol does not tell).
    pub async fn unacked_count(&self, queue: &str) -> Option<u64> {
        let output = tokio::process::Command::new("rabbitmqctl")
            .args(["list_queues", "--quiet", "name", "messages_unacknowledged"])
            .output()
            .await
            .expect("run rabbitmqctl");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| {
                line.strip_prefix(&format!("{queue}\t"))?
                    .trim()
                    .parse()
                    .ok()
            })
    }
}

/// A message the relay published.
#[derive(Debug, Clone)]
pub struct Published {
    pub routing_key: String,
    pub message_id: Option<String>,
    pub content_type: Option<String>,
    pub delivery_mode: Option<u8>,
    pub headers: FieldTable,
    pub body: Value,
}
