//! The event stream: a RabbitMQ stream queue bound to the outbound exchange with `#`, so it keeps
//! every event the relay publishes, in the order it published them, for as long as its retention
//! allows (age and size). A subscriber that comes late, or lost its queue, reads it from `first`,
//! a timestamp or an offset over plain AMQP 0-9-1 (docs/messaging.md "Replaying events from the
//! stream"). The relay declares it, and its binding, before it publishes anything in a session,
//! so no event it publishes misses the stream. A stream that exists with other arguments (an
//! operator declared it, or changed the retention) is used as it is, and the log says so; a
//! policy changes the retention of a stream in place.

use lapin::Connection;
use lapin::options::{QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};

use super::topology::is_precondition_failed;
use crate::config::AmqpConfig;

/// The stream queue this configuration asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventStream {
    pub queue: String,
    /// The outbound exchange it is bound to.
    pub exchange: String,
    max_age: String,
    max_bytes: u64,
    segment_bytes: u64,
}

/// How the stream was found when it was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    /// Declared, or found, with this configuration's arguments.
    AsConfigured,
    /// Found with other arguments, and used as it is.
    AsItIs,
}

impl EventStream {
    /// The stream of `config`; `None` when `AMQP_EVENT_STREAM_ENABLED` is false.
    pub fn from_config(config: &AmqpConfig) -> Option<Self> {
        let stream = &config.event_stream;
        stream.enabled.then(|| Self {
            queue: stream.queue.clone(),
            exchange: config.outbound_exchange.clone(),
            max_age: stream.max_age.clone(),
            max_bytes: stream.max_bytes,
            segment_bytes: stream.segment_bytes,
        })
    }

    /// A stream queue with its retention: age, size, and the segment size retention works in.
    pub fn arguments(&self) -> FieldTable {
        let mut args = FieldTable::default();
        args.insert("x-queue-type".into(), text("stream"));
        args.insert("x-max-age".into(), text(&self.max_age));
        args.insert("x-max-length-bytes".into(), bytes(self.max_bytes));
        args.insert(
            "x-stream-max-segment-size-bytes".into(),
            bytes(self.segment_bytes),
        );
        args
    }

    /// Declares the stream and binds it to the outbound exchange (which must exist) for every
    /// routing key. A stream found with other arguments is bound and used as it is, with an
    /// error in the log naming what differs and how a policy changes it.
    pub async fn declare(&self, connection: &Connection) -> lapin::Result<Declared> {
        let channel = connection.create_channel().await?;
        let durable = QueueDeclareOptions {
            durable: true,
            ..QueueDeclareOptions::default()
        };
        let declared = match channel
            .queue_declare(self.queue.as_str().into(), durable, self.arguments())
            .await
        {
            Ok(_) => Declared::AsConfigured,
            Err(error) if is_precondition_failed(&error) => {
                tracing::error!(
                    queue = %self.queue,
                    "the event stream exists with other arguments than this configuration \
                     declares (AMQP_EVENT_STREAM_MAX_AGE, _MAX_BYTES, _SEGMENT_BYTES): it is used \
                     as it is; a policy changes its retention in place: {} (see \
                     docs/messaging.md \"Replaying events from the stream\")",
                    self.policy_command()
                );
                // The failed declare closed that channel.
                let channel = connection.create_channel().await?;
                let existing = QueueDeclareOptions {
                    passive: true,
                    ..durable
                };
                channel
                    .queue_declare(self.queue.as_str().into(), existing, FieldTable::default())
                    .await?;
                self.bind(&channel).await?;
                let _ = channel.close(200, "declared".into()).await;
                return Ok(Declared::AsItIs);
            }
            Err(error) => return Err(error),
        };
        self.bind(&channel).await?;
        let _ = channel.close(200, "declared".into()).await;
        Ok(declared)
    }

    async fn bind(&self, channel: &lapin::Channel) -> lapin::Result<()> {
        channel
            .queue_bind(
                self.queue.as_str().into(),
                self.exchange.as_str().into(),
                "#".into(),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await
    }

    /// The command that gives an existing stream this configuration's retention.
    pub fn policy_command(&self) -> String {
        let pattern = format!("^{}$", self.queue.replace('.', "\\."));
        format!(
            "rabbitmqctl set_policy --apply-to queues {}.retention '{pattern}' \
             '{{\"max-age\":\"{}\",\"max-length-bytes\":{},\"stream-max-segment-size-bytes\":{}}}'",
            self.queue, self.max_age, self.max_bytes, self.segment_bytes
        )
    }
}

fn text(value: &str) -> AMQPValue {
    AMQPValue::LongString(value.into())
}

fn bytes(value: u64) -> AMQPValue {
    AMQPValue::LongLongInt(i64::try_from(value).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_is_declared_with_its_retention_and_not_at_all_when_off() {
        let mut config = AmqpConfig::default();
        let stream = EventStream::from_config(&config).expect("on by default");
        assert_eq!(stream.queue, "order-service.events.stream");
        assert_eq!(stream.exchange, "order-service.events");
        let args = stream.arguments();
        let args = args.inner();
        assert_eq!(args.get("x-queue-type"), Some(&text("stream")));
        assert_eq!(args.get("x-max-age"), Some(&text("7D")));
        assert_eq!(
            args.get("x-max-length-bytes"),
            Some(&AMQPValue::LongLongInt(10 * 1024 * 1024 * 1024))
        );
        assert_eq!(
            args.get("x-stream-max-segment-size-bytes"),
            Some(&AMQPValue::LongLongInt(100 * 1024 * 1024))
        );
        config.event_stream.enabled = false;
        assert_eq!(EventStream::from_config(&config), None);
    }
}
