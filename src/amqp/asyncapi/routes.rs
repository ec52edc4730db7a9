//! The channels and operations of the AsyncAPI document: where each message travels, from the
//! [`Topology`] the service declares. Inbound: each type on the inbound exchange, received
//! through the inbox; premature ones wait in the delay queues, dead ones go to the dead-letter
//! exchange and queue. Outbound: each type on the outbound exchange, sent by the relay, and the
//! stream that keeps them all for replay.
//! (About 300 lines because it is every channel and operation of the document in one place, in
//! the order a reader of the document meets them.)

use serde_json::{Map, Value, json};

use super::bindings;
use super::messages::{DEAD_LETTER, inbound_types, outbound_types, reference};
use super::{Ordered, SERVER, setting};
use crate::amqp::{EventStream, Topology};
use crate::config::AmqpConfig;

/// Builds the channels and the operations on them.
pub(super) struct Routes<'a> {
    topology: &'a Topology,
    config: &'a AmqpConfig,
    vhost: &'a str,
    pub channels: Ordered,
    pub operations: Ordered,
}

impl<'a> Routes<'a> {
    pub fn new(topology: &'a Topology, config: &'a AmqpConfig, vhost: &'a str) -> Self {
        Self {
            topology,
            config,
            vhost,
            channels: Ordered::default(),
            operations: Ordered::default(),
        }
    }

    pub fn build(mut self) -> Self {
        self.inbound();
        self.retry();
        self.dead_letters();
        self.outbound();
        self.event_stream();
        self
    }

    /// Each inbound type on the inbound exchange, received through the inbox.
    fn inbound(&mut self) {
        let t = self.topology;
        for name in inbound_types() {
            let channel = format!("inbound.{name}");
            let description = format!(
                "Publish to the topic exchange `{}` ({}) with routing key `{name}`. The service \
                 consumes it from the quorum queue `{}` (channel `inbox`), bound to the \
                 exchange with that key.",
                t.inbound_exchange,
                setting("inbound_exchange"),
                t.inbox
            );
            let binding = bindings::exchange(&t.inbound_exchange, "topic", self.vhost);
            self.channel(&channel, name, &description, binding, &[name]);
            let description = format!(
                "Applied in one transaction with up to {} ({}) deliveries taken together (one \
                 read and one write statement for all of them), and acknowledged after that \
                 commit; each gets the answer it would get alone, and a duplicate changes \
                 nothing. Premature ⇒ `retry`; never applicable ⇒ `deadLetter`. Up to \
                 {} ({}) messages are handled at once.",
                setting("amqp_batch_size"),
                self.config.batch_size,
                setting("prefetch"),
                self.config.prefetch
            );
            let binding = json!({ "ack": true });
            let id = format!("receive.{name}");
            self.operation(&id, "receive", &channel, &[name], &description, binding);
        }
        let description = format!(
            "The quorum queue the service consumes ({}), bound to `{}` with each inbound \
             type; retries come back here from their delay queue. The broker dead-letters a \
             message delivered {} ({}) times without a settlement (the consumer crashed or hung \
             on it).",
            setting("inbox_queue"),
            t.inbound_exchange,
            setting("delivery_limit"),
            t.delivery_limit
        );
        let binding = bindings::queue(
            &t.inbox,
            self.vhost,
            json!({ "x-arguments": bindings::arguments(&t.inbox_arguments()) }),
        );
        let inbound: Vec<&str> = inbound_types().collect();
        self.channel("inbox", &t.inbox, &description, binding, &inbound);
    }

    /// The delay queues a premature message waits in before it comes back to the inbox: one
    /// channel whose address has the delay as a parameter.
    fn retry(&mut self) {
        let t = self.topology;
        let Some((address, delays)) = retry_address(t) else {
            return; // A single attempt: nothing is retried.
        };
        let queues: Vec<Value> = t
            .retry_delays
            .iter()
            .map(|delay| {
                let arguments = bindings::arguments(&t.retry_queue_arguments(*delay));
                json!({ "name": t.retry_queue(*delay), "arguments": arguments })
            })
            .collect();
        let description = format!(
            "One durable quorum queue per delay, published to through the default exchange \
             (routing key = the queue's name). Each holds a message for its delay \
             (`x-message-ttl`), then dead-letters it back to `{}`, at least once (kept until the \
             inbox confirmed it). The delay before attempt n + 1 is {} · 2^(n−1) \
             ({} ms), capped at {} ({} ms).",
            t.inbox,
            setting("retry_base_ms"),
            self.config.retry_base_ms,
            setting("retry_max_ms"),
            self.config.retry_max_ms
        );
        let binding = bindings::queue(&address, self.vhost, json!({ "x-queues": queues }));
        let inbound: Vec<&str> = inbound_types().collect();
        let channel = self.channel("retry", &address, &description, binding, &inbound);
        channel["parameters"] = json!({
            "delay": { "description": "The delay in milliseconds.", "enum": delays }
        });
        let description = format!(
            "Premature: an unknown order, a shipment before the payment, a refund of more than \
             the order holds yet, or an unexpected failure. Republished with the original body, \
             `message_id`, `type` and `content_type`, `x-attempt` + 1, the reason in \
             `x-error-reason` and `x-original-routing-key`, and confirmed before the original \
             is acknowledged. After {} ({}) deliveries it is dead-lettered instead.",
            setting("max_attempts"),
            self.config.max_attempts
        );
        let binding = json!({ "deliveryMode": 2 });
        self.operation("retry", "send", "retry", &inbound, &description, binding);
    }

    fn dead_letters(&mut self) {
        let t = self.topology;
        let description = format!(
            "The fanout exchange of dead letters ({}; any routing key: the service keeps the \
             original's), bound to `{}`.",
            setting("dead_letter_exchange"),
            t.dead_letter_queue
        );
        let binding = bindings::exchange(&t.dead_letter_exchange, "fanout", self.vhost);
        self.channel(
            "dead-letter-exchange",
            &t.dead_letter_exchange,
            &description,
            binding,
            &[DEAD_LETTER],
        );
        let description = format!(
            "The durable quorum queue every dead letter goes through ({}): the service's parker \
             consumes it and parks each dead letter in Postgres, where operators find, group, \
             replay and discard them (docs/operations/dead-letters.md).",
            setting("dead_letter_queue")
        );
        let binding = bindings::queue(
            &t.dead_letter_queue,
            self.vhost,
            json!({ "x-arguments": bindings::arguments(&t.dead_letter_queue_arguments()) }),
        );
        self.channel(
            "dead-letter-queue",
            &t.dead_letter_queue,
            &description,
            binding,
            &[DEAD_LETTER],
        );
        self.operation(
            "deadLetter",
            "send",
            "dead-letter-exchange",
            &[DEAD_LETTER],
            "Poison (not JSON, not an envelope, an unknown type, invalid data, too large), a \
             terminal conflict (an id reused with other content, an invalid transition), or \
             retries exhausted: republished with the reason, and confirmed before the original \
             is acknowledged.",
            json!({ "deliveryMode": 2 }),
        );
        self.operation(
            "parkDeadLetter",
            "receive",
            "dead-letter-queue",
            &[DEAD_LETTER],
            "Parked in Postgres (the same message again is the same row, counted) and \
             acknowledged after the commit. A replay publishes the original body and properties, \
             without the bookkeeping headers, to the inbound exchange with the original routing \
             key, through the outbox: it arrives as any inbound message does.",
            json!({ "ack": true }),
        );
    }

    /// Each outbound type on the outbound exchange, published by the outbox relay.
    fn outbound(&mut self) {
        let exchange = &self.topology.outbound_exchange;
        for name in outbound_types() {
            let channel = format!("outbound.{name}");
            let description = format!(
                "Bind a queue to the topic exchange `{exchange}` ({}) with routing key `{name}` \
                 (or a pattern such as `order.*`).",
                setting("outbound_exchange")
            );
            let binding = bindings::exchange(exchange, "topic", self.vhost);
            self.channel(&channel, name, &description, binding, &[name]);
            self.operation(
                &format!("send.{name}"),
                "send",
                &channel,
                &[name],
                "Written to the outbox in the transaction of the change, then published by the \
                 relay at least once, in version order per order, persistent, with publisher \
                 confirms; `message_id` = `event_id`, `type` = the event type, `app_id` = \
                 `order-service`, `timestamp` = when it was written.",
                json!({ "deliveryMode": 2, "timestamp": true, "mandatory": false }),
            );
        }
    }

    /// The stream queue that keeps every published event, for subscribers that replay
    /// (`AMQP_EVENT_STREAM_ENABLED`; absent when off).
    fn event_stream(&mut self) {
        let Some(stream) = EventStream::from_config(self.config) else {
            return;
        };
        let outbound: Vec<&str> = outbound_types().collect();
        let description = format!(
            "A stream queue ({}), bound to `{}` with `#`: it keeps every event the relay \
             publishes, in the order the relay published it, for {} ({}) or up to {} bytes per \
             node ({}), whichever is reached first; retention removes whole segments of {} \
             bytes ({}). Declared by the relay before it publishes. A subscriber that arrives \
             late reads it over AMQP 0-9-1 from any point (docs/messaging.md \"Replaying events \
             from the stream\").",
            setting("event_stream"),
            stream.exchange,
            self.config.event_stream.max_age,
            setting("event_stream_max_age"),
            self.config.event_stream.max_bytes,
            setting("event_stream_max_bytes"),
            self.config.event_stream.segment_bytes,
            setting("event_stream_segment_bytes"),
        );
        let binding = bindings::queue(
            &stream.queue,
            self.vhost,
            json!({ "x-arguments": bindings::arguments(&stream.arguments()) }),
        );
        self.channel(
            "event-stream",
            &stream.queue,
            &description,
            binding,
            &outbound,
        );
        self.operation(
            "replay",
            "receive",
            "event-stream",
            &outbound,
            "Consume with `basic.qos` set (a prefetch is required) and manual acknowledgements \
             (an ack only moves the consumer's window; nothing is removed), and the consumer \
             argument `x-stream-offset`: `first` (everything retained), `last` (from the last \
             chunk), `next` (only what comes), an offset (a number: where the stream's \
             `x-stream-offset` header of an earlier delivery left off), or a timestamp (AMQP \
             type `timestamp`, seconds: the broker starts at the chunk before it, so discard \
             messages whose `timestamp` property is earlier). Each publication of an event \
             appears once, in the order published (per order: version order); a republication \
             after a relay failure appears again, with the same `message_id`.",
            json!({ "ack": true }),
        );
    }

    fn channel(
        &mut self,
        id: &str,
        address: &str,
        description: &str,
        mut binding: Value,
        messages: &[&str],
    ) -> &mut Value {
        binding["bindingVersion"] = json!(bindings::VERSION);
        let messages: Map<String, Value> = messages
            .iter()
            .map(|m| ((*m).to_owned(), reference("messages", m)))
            .collect();
        self.channels.insert(
            id,
            json!({
                "address": address,
                "title": address,
                "description": description,
                "servers": [{ "$ref": format!("#/servers/{SERVER}") }],
                "messages": messages,
                "bindings": { "amqp": binding },
            }),
        )
    }

    /// An operation on `channel` (added before it), titled with its action and the address.
    fn operation(
        &mut self,
        id: &str,
        action: &'static str,
        channel: &str,
        messages: &[&str],
        description: &str,
        mut binding: Value,
    ) {
        binding["bindingVersion"] = json!(bindings::VERSION);
        let address = self
            .channels
            .get(channel)
            .map(|c| c["address"].as_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let title = format!("{action} {address}");
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| channel_message(channel, m))
            .collect();
        self.operations.insert(
            id,
            json!({
                "action": action,
                "channel": { "$ref": format!("#/channels/{channel}") },
                "title": title,
                "description": description,
                "messages": messages,
                "bindings": { "amqp": binding },
            }),
        );
    }
}

/// The retry channel's address, a delay queue's name with `{delay}` for its milliseconds, and
/// the values of `delay`; `None` without delay queues.
pub(super) fn retry_address(topology: &Topology) -> Option<(String, Vec<String>)> {
    let first = topology.retry_delays.first()?;
    let template = topology.retry_queue(*first).replacen(
        &format!(".{}ms", first.as_millis()),
        ".{delay}ms",
        1,
    );
    let delays = topology
        .retry_delays
        .iter()
        .map(|d| d.as_millis().to_string())
        .collect();
    Some((template, delays))
}

/// A reference to a message of a channel (what an operation lists).
fn channel_message(channel: &str, message: &str) -> Value {
    json!({ "$ref": format!("#/channels/{channel}/messages/{message}") })
}
