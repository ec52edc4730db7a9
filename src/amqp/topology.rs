//! The broker topology order-service owns, declared idempotently on every (re)connect:
//!
//! ```text
//! commerce.events (topic) ──order.placed, payment.succeeded,──▶ order-service.inbox (quorum)
//!                           shipment.dispatched,                    │  premature ▲ after the delay
//!                           order.cancellation_requested            ▼            │
//!                                              order-service.inbox.retry.<ms> (TTL, one per delay)
//! order-service.dlx (fanout) ──▶ order-service.dead-letter (quorum)   ◀── poison, terminal, exhausted
//! order-service.events (topic) ◀── outbox relay, routing key = event type
//! ```

use std::time::Duration;

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, ExchangeKind};

use super::envelope::INBOUND_TYPES;
use crate::config::AmqpConfig;

#[derive(Debug, Clone)]
pub struct Topology {
    pub inbound_exchange: String,
    pub inbox: String,
    pub dead_letter_exchange: String,
    pub dead_letter_queue: String,
    pub outbound_exchange: String,
    pub retry_delays: Vec<Duration>,
}

impl Topology {
    pub fn from_config(config: &AmqpConfig) -> Self {
        Self {
            inbound_exchange: config.inbound_exchange.clone(),
            inbox: config.inbox_queue.clone(),
            dead_letter_exchange: config.dead_letter_exchange.clone(),
            dead_letter_queue: config.dead_letter_queue.clone(),
            outbound_exchange: config.outbound_exchange.clone(),
            retry_delays: config.retry_delays(),
        }
    }

    /// The delay queue that holds a message for `delay`, then dead-letters it back to the inbox.
    pub fn retry_queue(&self, delay: Duration) -> String {
        format!("{}.retry.{}ms", self.inbox, delay.as_millis())
    }

    pub async fn declare(&self, channel: &Channel) -> lapin::Result<()> {
        declare_exchange(channel, &self.inbound_exchange, ExchangeKind::Topic).await?;
        declare_outbound(channel, &self.outbound_exchange).await?;
        declare_exchange(channel, &self.dead_letter_exchange, ExchangeKind::Fanout).await?;

        let durable_queue = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        channel
            .queue_declare(
                name(&self.dead_letter_queue),
                durable_queue,
                quorum(FieldTable::default()),
            )
            .await?;
        channel
            .queue_bind(
                name(&self.dead_letter_queue),
                name(&self.dead_letter_exchange),
                name(""),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;

        // Anything the broker itself gives up on (a rejected message) still reaches the DLQ.
        let mut inbox_args = FieldTable::default();
        inbox_args.insert(
            "x-dead-letter-exchange".into(),
            text(&self.dead_letter_exchange),
        );
        channel
            .queue_declare(name(&self.inbox), durable_queue, quorum(inbox_args))
            .await?;
        for routing_key in INBOUND_TYPES {
            channel
                .queue_bind(
                    name(&self.inbox),
                    name(&self.inbound_exchange),
                    name(routing_key),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }

        for delay in &self.retry_delays {
            let mut args = FieldTable::default();
            args.insert(
                "x-message-ttl".into(),
                AMQPValue::LongLongInt(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)),
            );
            // The default exchange routes by queue name: expired messages go back to the inbox.
            args.insert("x-dead-letter-exchange".into(), text(""));
            args.insert("x-dead-letter-routing-key".into(), text(&self.inbox));
            channel
                .queue_declare(name(&self.retry_queue(*delay)), durable_queue, args)
                .await?;
        }
        Ok(())
    }

    /// Removes every queue and exchange of this topology (tests use a topology of their own).
    pub async fn delete(&self, channel: &Channel) -> lapin::Result<()> {
        let mut queues = vec![self.inbox.clone(), self.dead_letter_queue.clone()];
        queues.extend(self.retry_delays.iter().map(|d| self.retry_queue(*d)));
        for queue in queues {
            channel
                .queue_delete(name(&queue), QueueDeleteOptions::default())
                .await?;
        }
        for exchange in [
            &self.inbound_exchange,
            &self.outbound_exchange,
            &self.dead_letter_exchange,
        ] {
            channel
                .exchange_delete(name(exchange), ExchangeDeleteOptions::default())
                .await?;
        }
        Ok(())
    }
}

/// The exchange the outbox relay publishes to; the relay declares it on its own connection.
pub async fn declare_outbound(channel: &Channel, exchange: &str) -> lapin::Result<()> {
    declare_exchange(channel, exchange, ExchangeKind::Topic).await
}

async fn declare_exchange(
    channel: &Channel,
    exchange: &str,
    kind: ExchangeKind,
) -> lapin::Result<()> {
    let durable = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    channel
        .exchange_declare(name(exchange), kind, durable, FieldTable::default())
        .await
}

fn name(value: &str) -> ShortString {
    value.into()
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(value.into())
}

fn quorum(mut args: FieldTable) -> FieldTable {
    args.insert("x-queue-type".into(), text("quorum"));
    args
}
