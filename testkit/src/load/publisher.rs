//! The test's own publisher of inbound events: confirms every batch, stays on its node until
//! that node fails it, then moves to the next node and sends the unconfirmed batch again, as a
//! real publisher does. Every step is bounded: a connection to a node dying under it may never
//! answer.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::{BasicProperties, Channel, Connection};

use super::{Message, RETRY_PAUSE, Tally};
use order_service::amqp::connect;

/// Bound on each step (connect, publish, confirm, close).
const STEP: Duration = Duration::from_secs(10);

/// `step` within [`STEP`], its error or the timeout as text.
async fn bounded<T, E: std::fmt::Display>(
    what: &str,
    step: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(STEP, step).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(format!("{what}: {error}")),
        Err(_) => Err(format!("{what}: no answer within {STEP:?}")),
    }
}

/// A confirming publisher that stays on its node until that node fails it, then moves to the
/// next and sends the unconfirmed batch again.
pub struct Publisher {
    nodes: Vec<String>,
    exchange: String,
    current: usize,
    session: Option<(Connection, Channel)>,
}

impl Publisher {
    pub fn new(nodes: Vec<String>, exchange: &str) -> Self {
        Self {
            nodes,
            exchange: exchange.to_owned(),
            current: 0,
            session: None,
        }
    }

    pub async fn send(&mut self, batch: &[Message], tally: &Tally) {
        if batch.is_empty() {
            return;
        }
        loop {
            match self.try_send(batch).await {
                Ok(()) => {
                    tally
                        .published
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    return;
                }
                Err(_) => {
                    self.close().await;
                    self.current = (self.current + 1) % self.nodes.len();
                    tally.publisher_reconnects.fetch_add(1, Ordering::Relaxed);
                    tally
                        .resent
                        .fetch_add(batch.len() as u64, Ordering::Relaxed);
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }

    async fn try_send(&mut self, batch: &[Message]) -> Result<(), String> {
        if self.session.is_none() {
            let url = &self.nodes[self.current];
            let connection = bounded("connect", connect(url, "cluster test publisher")).await?;
            let channel = bounded("channel", connection.create_channel()).await?;
            bounded(
                "confirms",
                channel.confirm_select(ConfirmSelectOptions::default()),
            )
            .await?;
            self.session = Some((connection, channel));
        }
        let Some((_, channel)) = &self.session else {
            return Err("no channel".into());
        };
        let mut confirms = vec![];
        for message in batch {
            let properties = BasicProperties::default()
                .with_delivery_mode(2)
                .with_message_id(message.event_id.as_str().into())
                .with_content_type("application/json".into());
            let publish = channel.basic_publish(
                self.exchange.as_str().into(),
                message.routing_key.into(),
                BasicPublishOptions::default(),
                &message.body,
                properties,
            );
            confirms.push(bounded("publish", publish).await?);
        }
        for confirm in confirms {
            if !bounded("confirm", confirm).await?.is_ack() {
                return Err("nacked".into());
            }
        }
        Ok(())
    }

    pub async fn close(&mut self) {
        if let Some((connection, _)) = self.session.take() {
            let _ = bounded("close", connection.close(200, "bye".into())).await;
        }
    }
}
