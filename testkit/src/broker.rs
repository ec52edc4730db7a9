//! The shared RabbitMQ as the tests use it: exchange and queue names of a test's own
//! ([`amqp_config`], with the consumer's batching the suites run with), a subscriber's queue, a
//! queue's depth, and the deletion of a test's names when it ends.

use lapin::options::{QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;

use order_service::amqp::{Topology, connect};
use order_service::config::AmqpConfig;

use crate::block_on_detached;

/// The shared broker, as the service's default `AMQP_URL` names it.
pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// A test's exchanges and queues on the shared broker (its `topology`, and `queues` of its own
/// such as a subscriber's), deleted when dropped, pass or fail.
pub struct AmqpNames {
    pub topology: Topology,
    pub queues: Vec<String>,
}

impl Drop for AmqpNames {
    fn drop(&mut self) {
        delete_amqp_names(self.topology.clone(), std::mem::take(&mut self.queues));
    }
}

/// Deletes a test's exchanges and queues (its `topology` and `queues` of its own) from the shared
/// broker; for `Drop`, pass or fail.
pub fn delete_amqp_names(topology: Topology, queues: Vec<String>) {
    block_on_detached(async move {
        if let Ok(connection) = connect(AMQP_URL, "order-service test cleanup").await
            && let Ok(channel) = connection.create_channel().await
        {
            for queue in queues {
                let _ = channel
                    .queue_delete(queue.as_str().into(), Default::default())
                    .await;
            }
            let _ = topology.delete(&channel).await;
            let _ = connection.close(200, "bye".into()).await;
        }
    });
}

/// Declares `queue` (a classic queue, default options) and binds it to every message of
/// `exchange` (`#`): a subscriber's queue, such as one that captures the outbound events.
pub async fn declare_subscriber(channel: &lapin::Channel, queue: &str, exchange: &str) {
    channel
        .queue_declare(
            queue.into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("declare the subscriber's queue");
    channel
        .queue_bind(
            queue.into(),
            exchange.into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("bind the subscriber's queue");
}

/// The default AMQP settings (docs/operations/configuration.md) with every name under `prefix`, so that a test (or a chaos
/// run) owns its exchanges and queues.
pub fn amqp_config(prefix: &str) -> AmqpConfig {
    AmqpConfig {
        enabled: true,
        prefetch: 64,
        batch_size: batch_size(),
        batch_wait_ms: batch_wait_ms(),
        batch_lock_wait_ms: order_service::config::DEFAULT_AMQP_BATCH_LOCK_WAIT_MS,
        max_attempts: 10,
        delivery_limit: order_service::config::DEFAULT_AMQP_DELIVERY_LIMIT,
        retry_base_ms: 1_000,
        retry_max_ms: 60_000,
        ..AmqpConfig::default()
    }
    .named_under(prefix)
}

/// The consumer's batch size for the suites: `AMQP_BATCH_SIZE` of the test's own environment
/// if set (`AMQP_BATCH_SIZE=1 cargo test --test amqp` runs the suite one message at a time),
/// else the service's default (docs/messaging.md "Batched consumer commits").
fn batch_size() -> u16 {
    std::env::var("AMQP_BATCH_SIZE")
        .ok()
        .and_then(|size| size.parse().ok())
        .filter(|size| (1..=order_service::config::MAX_AMQP_BATCH_SIZE).contains(size))
        .unwrap_or(order_service::config::DEFAULT_AMQP_BATCH_SIZE)
}

/// How long the suites' batches wait for more deliveries: `AMQP_BATCH_WAIT_MS` of the test's own
/// environment if set (a longer wait fills batches where deliveries trickle in, as in the chaos
/// checker), else the service's default.
fn batch_wait_ms() -> u64 {
    std::env::var("AMQP_BATCH_WAIT_MS")
        .ok()
        .and_then(|wait| wait.parse().ok())
        .unwrap_or(order_service::config::DEFAULT_AMQP_BATCH_WAIT_MS)
}

/// Messages in `queue` that are ready for delivery (not those held unacknowledged), as a
/// passive declare reports them.
pub async fn ready_count(channel: &lapin::Channel, queue: &str) -> u32 {
    let passive = lapin::options::QueueDeclareOptions {
        passive: true,
        ..Default::default()
    };
    channel
        .queue_declare(queue.into(), passive, Default::default())
        .await
        .expect("passive declare")
        .message_count()
}
