//! The broker topology order-service owns, declared idempotently on every (re)connect:
//!
//! ```text
//! commerce.events (topic) ──order.placed, payment.succeeded,──▶ order-service.inbox (quorum)
//!                           shipment.dispatched,                    │  premature ▲ after the delay
//!                           order.cancellation_requested            ▼            │
//!                                    order-service.inbox.delay.<ms>ms (quorum, TTL, one per delay)
//! order-service.dlx (fanout) ──▶ order-service.dead-letter (quorum)   ◀── poison, terminal, exhausted
//!                                        ├──▶ the parker: parked in Postgres, replayed through the outbox
//!                                        └──▶ order-service.dead-letter.last-resort (exchange and queue,
//!                                             nothing consumes it): what the parker failed to take
//!                                             `delivery_limit` times
//! order-service.events (topic) ◀── outbox relay, routing key = event type
//!        └──#──▶ order-service.events.stream (stream: every event, kept by age and size)
//! ```
//!
//! The inbox carries the crash-loop guard, `x-delivery-limit` (`AMQP_DELIVERY_LIMIT`): a message
//! the broker delivered that many times without a settlement (the consumer crashed or hung each
//! time) is dead-lettered by the broker into the same dead-letter exchange, with `x-death`
//! reason `delivery_limit`. An inbox declared by an earlier version without it cannot be
//! redeclared with it (the broker refuses with PRECONDITION_FAILED); [`Topology::declare_inbox_side`]
//! then keeps consuming the inbox as it is and says how to apply the limit with a policy
//! (docs/operations/upgrading.md "Upgrading: the inbox delivery limit").
//!
//! Every queue is a quorum queue, the delay queues too: a classic queue lives on one node of a
//! cluster, and while that node is down a session could neither redeclare it (the broker answers
//! NOT_FOUND, "home node … is down") nor park a retry in it. The delay queues dead-letter back at
//! least once (`x-dead-letter-strategy`), so an expired retry is not lost on its way back to the
//! inbox. An earlier version's classic `….retry.<ms>ms` queues are no longer declared; their
//! messages still expire back to the inbox (docs/operations/upgrading.md "Upgrading: the delay
//! queues").
//! (About 300 lines because it is the whole broker topology in one place: every name, argument
//! and binding the service declares, which the AsyncAPI generator and the tests read too.)

use std::time::Duration;

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::protocol::{AMQPErrorKind, AMQPSoftError};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{Channel, Connection, ErrorKind, ExchangeKind};

use super::inbound::INBOUND_TYPES;
use crate::config::AmqpConfig;

#[derive(Debug, Clone)]
pub struct Topology {
    pub inbound_exchange: String,
    pub inbox: String,
    pub dead_letter_exchange: String,
    pub dead_letter_queue: String,
    pub outbound_exchange: String,
    pub retry_delays: Vec<Duration>,
    /// `x-delivery-limit` of the inbox; 0 declares none (a broker policy may set it instead).
    pub delivery_limit: u32,
    /// The event stream's name, declared by the relay (`event_stream`), deleted here with the rest.
    pub event_stream: String,
}

/// Whether a queue is declared with this version's arguments or used as an earlier version left
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    Declare,
    AsItIs,
}

/// How the inbox was found when the topology was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbox {
    /// Declared (or found) with this configuration's arguments, delivery limit included.
    AsConfigured,
    /// Found with other arguments (an earlier version declared it without `x-delivery-limit`, or
    /// with another limit) and used as it is.
    Legacy,
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
            delivery_limit: config.delivery_limit,
            event_stream: config.event_stream.queue.clone(),
        }
    }

    /// The delay queue that holds a message for `delay`, then dead-letters it back to the inbox.
    pub fn retry_queue(&self, delay: Duration) -> String {
        format!("{}.delay.{}ms", self.inbox, delay.as_millis())
    }

    /// Declares every exchange and queue, the inbox with this configuration's arguments; fails
    /// (and the broker closes `channel`) if the inbox exists with other arguments.
    pub async fn declare(&self, channel: &Channel) -> lapin::Result<()> {
        self.declare_dead_letters(channel, Found::Declare).await?;
        self.declare_with(channel, Inbox::AsConfigured).await
    }

    /// [`Topology::declare`] on a channel of its own; an inbox that exists with other arguments
    /// (an upgrade from a version without the delivery limit) is used as it is, with an error in
    /// the log naming the command that applies the limit.
    pub async fn declare_inbox_side(&self, connection: &Connection) -> lapin::Result<Inbox> {
        self.declare_dead_letter_side(connection).await?;
        let channel = connection.create_channel().await?;
        let inbox = match self.declare_with(&channel, Inbox::AsConfigured).await {
            Ok(()) => Inbox::AsConfigured,
            Err(error) if is_precondition_failed(&error) => {
                tracing::error!(
                    queue = %self.inbox,
                    "the inbox exists with other arguments than this version declares (an earlier \
                     version declared it without x-delivery-limit): it is used as it is, and \
                     AMQP_DELIVERY_LIMIT does not apply to it (RabbitMQ 3.x then has no limit, \
                     4.x its default of 20) until a policy sets the limit: {} (see \
                     docs/operations/upgrading.md \"Upgrading: the inbox delivery limit\")",
                    self.policy_command()
                );
                let channel = connection.create_channel().await?;
                self.declare_with(&channel, Inbox::Legacy).await?;
                let _ = channel.close(200, "declared".into()).await;
                return Ok(Inbox::Legacy);
            }
            Err(error) => return Err(error),
        };
        let _ = channel.close(200, "declared".into()).await;
        Ok(inbox)
    }

    /// The command that gives an inbox declared without the limit the same crash-loop guard.
    pub fn policy_command(&self) -> String {
        let limit = if self.delivery_limit == 0 {
            crate::config::DEFAULT_AMQP_DELIVERY_LIMIT
        } else {
            self.delivery_limit
        };
        let pattern = format!("^{}$", self.inbox.replace('.', "\\."));
        format!(
            "rabbitmqctl set_policy --apply-to queues {}.delivery-limit '{pattern}' \
             '{{\"delivery-limit\":{limit}}}'",
            self.inbox
        )
    }

    /// The inbox side but the dead letters: exchanges, the inbox and its bindings, the delay
    /// queues.
    async fn declare_with(&self, channel: &Channel, inbox: Inbox) -> lapin::Result<()> {
        declare_topic(channel, &self.inbound_exchange).await?;
        declare_topic(channel, &self.outbound_exchange).await?;

        let durable_queue = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };

        match inbox {
            Inbox::AsConfigured => {
                channel
                    .queue_declare(name(&self.inbox), durable_queue, self.inbox_arguments())
                    .await?;
            }
            Inbox::Legacy => {
                let existing = QueueDeclareOptions {
                    passive: true,
                    ..durable_queue
                };
                channel
                    .queue_declare(name(&self.inbox), existing, FieldTable::default())
                    .await?;
            }
        }
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
            channel
                .queue_declare(
                    name(&self.retry_queue(*delay)),
                    durable_queue,
                    self.retry_queue_arguments(*delay),
                )
                .await?;
        }
        Ok(())
    }

    /// The dead-letter exchange and queue, and the last resort behind it: what the dead-letter
    /// parker needs, whoever declares first. A dead-letter queue declared by an earlier version
    /// (without its delivery limit and last resort) is used as it is, with an error in the log
    /// naming the policy that gives it both (docs/hostile-input.md).
    pub async fn declare_dead_letter_side(&self, connection: &Connection) -> lapin::Result<()> {
        let channel = connection.create_channel().await?;
        match self.declare_dead_letters(&channel, Found::Declare).await {
            Ok(()) => {}
            Err(error) if is_precondition_failed(&error) => {
                tracing::error!(
                    queue = %self.dead_letter_queue,
                    "the dead-letter queue exists with other arguments than this version declares \
                     (an earlier version declared it without a delivery limit and last resort): \
                     it is used as it is, and a dead letter the parker cannot take loops it until \
                     a policy applies both: {}",
                    self.dead_letter_policy_command()
                );
                let channel = connection.create_channel().await?;
                self.declare_dead_letters(&channel, Found::AsItIs).await?;
                let _ = channel.close(200, "declared".into()).await;
                return Ok(());
            }
            Err(error) => return Err(error),
        }
        let _ = channel.close(200, "declared".into()).await;
        Ok(())
    }

    async fn declare_dead_letters(&self, channel: &Channel, found: Found) -> lapin::Result<()> {
        let durable = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        let last_resort = self.last_resort();
        declare_exchange(channel, &last_resort, ExchangeKind::Fanout).await?;
        channel
            .queue_declare(name(&last_resort), durable, quorum(FieldTable::default()))
            .await?;
        bind_all(channel, &last_resort, &last_resort).await?;
        declare_exchange(channel, &self.dead_letter_exchange, ExchangeKind::Fanout).await?;
        let (options, arguments) = match found {
            Found::Declare => (durable, self.dead_letter_queue_arguments()),
            Found::AsItIs => (
                QueueDeclareOptions {
                    passive: true,
                    ..durable
                },
                FieldTable::default(),
            ),
        };
        channel
            .queue_declare(name(&self.dead_letter_queue), options, arguments)
            .await?;
        bind_all(channel, &self.dead_letter_queue, &self.dead_letter_exchange).await
    }

    /// The exchange and queue (one name) that take what the dead-letter queue gives up on: a
    /// dead letter delivered to the parker `delivery_limit` times without being parked (one the
    /// client library cannot read, or one that crashes the parker). Nothing consumes it; the
    /// parker counts it (`dead_letters_last_resort`) and an alert fires while it holds any.
    pub fn last_resort(&self) -> String {
        format!("{}.last-resort", self.dead_letter_queue)
    }

    /// A quorum queue like the inbox, with the same crash-loop guard, into the last resort.
    pub fn dead_letter_queue_arguments(&self) -> FieldTable {
        let mut args = FieldTable::default();
        args.insert("x-dead-letter-exchange".into(), text(&self.last_resort()));
        args.insert(
            "x-delivery-limit".into(),
            AMQPValue::LongLongInt(i64::from(self.dead_letter_delivery_limit())),
        );
        quorum(args)
    }

    /// The inbox's delivery limit, or the default where the inbox declares none: the
    /// dead-letter queue always has one.
    fn dead_letter_delivery_limit(&self) -> u32 {
        match self.delivery_limit {
            0 => crate::config::DEFAULT_AMQP_DELIVERY_LIMIT,
            limit => limit,
        }
    }

    /// The command that gives a dead-letter queue declared by an earlier version its delivery
    /// limit and last resort.
    pub fn dead_letter_policy_command(&self) -> String {
        let pattern = format!("^{}$", self.dead_letter_queue.replace('.', "\\."));
        format!(
            "rabbitmqctl set_policy --apply-to queues {}.last-resort '{pattern}' \
             '{{\"delivery-limit\":{},\"dead-letter-exchange\":\"{}\"}}'",
            self.dead_letter_queue,
            self.dead_letter_delivery_limit(),
            self.last_resort()
        )
    }

    /// A delay queue (quorum, like every queue here) holds each message for `delay`, then
    /// dead-letters it back to the inbox.
    pub fn retry_queue_arguments(&self, delay: Duration) -> FieldTable {
        let mut args = FieldTable::default();
        args.insert(
            "x-message-ttl".into(),
            AMQPValue::LongLongInt(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)),
        );
        // The default exchange routes by queue name: expired messages go back to the inbox,
        // held until the inbox confirmed them (at least once, which needs reject-publish).
        args.insert("x-dead-letter-exchange".into(), text(""));
        args.insert("x-dead-letter-routing-key".into(), text(&self.inbox));
        args.insert("x-dead-letter-strategy".into(), text("at-least-once"));
        args.insert("x-overflow".into(), text("reject-publish"));
        quorum(args)
    }

    /// Anything the broker itself gives up on (a rejected message, one delivered
    /// `delivery_limit` times without being settled) still reaches the DLQ.
    pub fn inbox_arguments(&self) -> FieldTable {
        let mut args = FieldTable::default();
        args.insert(
            "x-dead-letter-exchange".into(),
            text(&self.dead_letter_exchange),
        );
        if self.delivery_limit > 0 {
            args.insert(
                "x-delivery-limit".into(),
                AMQPValue::LongLongInt(i64::from(self.delivery_limit)),
            );
        }
        quorum(args)
    }

    /// Removes every queue and exchange of this topology (tests use a topology of their own).
    pub async fn delete(&self, channel: &Channel) -> lapin::Result<()> {
        let mut queues = vec![
            self.inbox.clone(),
            self.dead_letter_queue.clone(),
            self.last_resort(),
            self.event_stream.clone(),
        ];
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
            &self.last_resort(),
        ] {
            channel
                .exchange_delete(name(exchange), ExchangeDeleteOptions::default())
                .await?;
        }
        Ok(())
    }
}

/// A durable topic exchange, as the outbound and inbound exchanges are declared; the relay
/// declares those it publishes to (order events, replayed dead letters) on its own connection.
pub async fn declare_topic(channel: &Channel, exchange: &str) -> lapin::Result<()> {
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

/// Binds `queue` to the fanout `exchange`.
async fn bind_all(channel: &Channel, queue: &str, exchange: &str) -> lapin::Result<()> {
    channel
        .queue_bind(
            name(queue),
            name(exchange),
            name(""),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
}

fn name(value: &str) -> ShortString {
    value.into()
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(value.into())
}

pub(super) fn is_precondition_failed(error: &lapin::Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::ProtocolError(e)
            if matches!(e.kind(), AMQPErrorKind::Soft(AMQPSoftError::PRECONDITIONFAILED))
    )
}

fn quorum(mut args: FieldTable) -> FieldTable {
    args.insert("x-queue-type".into(), text("quorum"));
    args
}
