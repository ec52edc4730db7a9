//! Dead letters: those in the test's dead-letter queue (taken, acknowledged, with the reason
//! the service gave), and those the parker stored (their rows), with waits for either.

use lapin::types::{AMQPValue, FieldTable};
use serde_json::Value;
use uuid::Uuid;

use order_service_testkit::eventually;

use super::{Harness, WAIT};

impl Harness {
    /// Takes every message out of the dead-letter queue, acknowledged, as it was delivered.
    pub async fn take_dead_letter_deliveries(&self) -> Vec<lapin::message::Delivery> {
        self.take_deliveries(&self.topology.dead_letter_queue).await
    }

    /// Takes every message out of the dead-letter queue: each one the service dead-lettered,
    /// with its `x-error-reason`.
    pub async fn take_dead_letters(&self) -> Vec<DeadLetter> {
        self.take_dead_letter_deliveries()
            .await
            .into_iter()
            .map(|delivery| {
                let headers = delivery.properties.headers().clone().unwrap_or_default();
                let reason = match headers.inner().get("x-error-reason") {
                    Some(AMQPValue::LongString(s)) => s.to_string(),
                    other => panic!("dead letter without a reason: {other:?}"),
                };
                let properties = &delivery.properties;
                DeadLetter {
                    body: delivery.data.clone(),
                    reason,
                    message_id: properties.message_id().as_ref().map(|m| m.to_string()),
                    expiration: properties.expiration().as_ref().map(|e| e.to_string()),
                    user_id: properties.user_id().as_ref().map(|u| u.to_string()),
                    headers,
                }
            })
            .collect()
    }

    /// Waits until `n` dead letters arrived, and returns them.
    pub async fn wait_for_dead_letters(&self, n: usize) -> Vec<DeadLetter> {
        // Each look takes what arrived since the last one; they add up here.
        let letters = std::sync::Mutex::new(vec![]);
        eventually(&format!("{n} dead letters"), WAIT, || async {
            let arrived = self.take_dead_letters().await;
            let mut letters = letters.lock().expect("the letters taken so far");
            letters.extend(arrived);
            (letters.len() >= n).then_some(())
        })
        .await;
        letters.into_inner().expect("the letters taken")
    }

    /// The parked dead letters, oldest first.
    pub async fn parked(&self) -> Vec<Parked> {
        sqlx::query_as(
            "SELECT id, message_id, event_id, event_type, routing_key, reason, reason_class, \
             body, headers, times, status FROM dead_letters ORDER BY first_dead_lettered_at, id",
        )
        .fetch_all(&self.db.pool)
        .await
        .expect("read the dead letters")
    }

    /// Waits until `n` dead letters are parked and the dead-letter queue is empty; returns them.
    pub async fn wait_for_parked(&self, n: usize) -> Vec<Parked> {
        eventually(&format!("{n} parked dead letters"), WAIT, || async {
            let parked = self.parked().await;
            (parked.len() >= n && self.ready_count(&self.topology.dead_letter_queue).await == 0)
                .then_some(parked)
        })
        .await
    }

    /// Waits until the dead letters match `done`; returns them.
    pub async fn wait_for_parked_where(
        &self,
        what: &str,
        done: impl Fn(&[Parked]) -> bool,
    ) -> Vec<Parked> {
        eventually(what, WAIT, || async {
            let parked = self.parked().await;
            done(&parked).then_some(parked)
        })
        .await
    }
}

/// A parked dead letter's row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Parked {
    pub id: Uuid,
    pub message_id: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub routing_key: String,
    pub reason: String,
    pub reason_class: String,
    pub body: Vec<u8>,
    pub headers: Value,
    pub times: i32,
    pub status: String,
}

/// A dead letter as taken from the dead-letter queue, with the reason the service gave.
pub struct DeadLetter {
    pub body: Vec<u8>,
    pub reason: String,
    pub message_id: Option<String>,
    pub expiration: Option<String>,
    pub user_id: Option<String>,
    pub headers: FieldTable,
}
