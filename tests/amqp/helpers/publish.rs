//! Publishing as the service's publishers do: inbound events (an envelope of a type, or raw
//! bytes with properties of the test's choosing) to the test's inbound exchange, and dead letters
//! straight to its dead-letter exchange; each persistent and confirmed by the broker.

use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Harness;

impl Harness {
    pub async fn publish_raw(&self, routing_key: &str, body: &[u8], properties: BasicProperties) {
        self.publish_to(
            &self.topology.inbound_exchange,
            routing_key,
            body,
            properties,
        )
        .await;
    }

    /// Publishes persistently to `exchange` and waits for the broker's confirm.
    async fn publish_to(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) {
        let confirm = self
            .channel
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                BasicPublishOptions::default(),
                body,
                properties.with_delivery_mode(2),
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
        assert!(confirm.is_ack());
    }

    /// Publishes an envelope of `event_type` with `data` and returns its body.
    pub async fn publish(&self, event_id: &str, event_type: &str, data: Value) -> Vec<u8> {
        let body = envelope(event_id, event_type, data)
            .to_string()
            .into_bytes();
        self.publish_raw(
            event_type,
            &body,
            BasicProperties::default()
                .with_message_id(event_id.into())
                .with_content_type("application/json".into()),
        )
        .await;
        body
    }

    pub async fn place(&self, event_id: &str, order: Uuid, amount: i64) {
        self.publish(
            event_id,
            "order.placed",
            json!({"order_id": order, "customer_id": "c-1", "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn pay(&self, event_id: &str, order: Uuid, transfer: &str, amount: i64) {
        self.publish(
            event_id,
            "payment.succeeded",
            json!({"order_id": order, "transfer_id": transfer, "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn refund(&self, event_id: &str, order: Uuid, refund_id: &str, amount: i64) {
        self.publish(
            event_id,
            "refund.succeeded",
            json!({"order_id": order, "refund_id": refund_id, "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn ship(&self, event_id: &str, order: Uuid, tracking: &str) {
        self.publish(
            event_id,
            "shipment.dispatched",
            json!({"order_id": order, "carrier": "DHL", "tracking_number": tracking}),
        )
        .await;
    }

    pub async fn cancel(&self, event_id: &str, order: Uuid) {
        self.publish(
            event_id,
            "order.cancellation_requested",
            json!({"order_id": order, "reason": "customer asked"}),
        )
        .await;
    }

    /// Publishes `body` straight to the dead-letter exchange, as a dead letter of the service's
    /// own (or the broker's) would arrive there.
    pub async fn publish_dead_letter(
        &self,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) {
        self.publish_to(
            &self.topology.dead_letter_exchange,
            routing_key,
            body,
            properties,
        )
        .await;
    }
}

pub fn envelope(event_id: &str, event_type: &str, data: Value) -> Value {
    json!({"event_id": event_id, "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
}
