//! One delivery of the inbox on its way through the worker: parsed (or found poison), counted
//! by type, and handled in a span of its own that continues the message's `traceparent` (or
//! starts a trace), whose context the events it writes and its replacement carry.

use std::time::Instant;

use lapin::message::Delivery;

use super::attempt_seal::AttemptSeal;
use crate::amqp::headers::trace_headers;
use crate::amqp::inbound::{self, Envelope, Poison};
use crate::telemetry::{TraceContext, continue_trace};

/// One delivery on its way through: parsed, with its span and the trace its effects carry.
pub(super) struct Message {
    pub(super) delivery: Delivery,
    pub(super) parsed: Result<Envelope, Poison>,
    event_type: &'static str,
    pub(super) attempt: u32,
    started: Instant,
    pub(super) span: tracing::Span,
    pub(super) trace: TraceContext,
}

impl Message {
    pub(super) fn receive(
        delivery: Delivery,
        max_message_bytes: usize,
        seal: &AttemptSeal,
    ) -> Self {
        let started = Instant::now();
        let attempt = seal.attempt_of(&delivery.properties, &delivery.data);
        let parsed = inbound::parse_bounded(&delivery.data, max_message_bytes);
        let (event_id, event_type, order_id) = match &parsed {
            Ok(e) => (
                e.event_id.to_string(),
                e.event_type,
                e.event.order_id().to_string(),
            ),
            Err(_) => (String::new(), "unparsable", String::new()),
        };
        if let Ok(envelope) = &parsed {
            // How late the message is handled: the publisher's clock against ours, so a skew
            // shows too; never below 0.
            let age = (chrono::Utc::now() - envelope.occurred_at)
                .to_std()
                .unwrap_or_default();
            metrics::histogram!("amqp_message_age_seconds", "type" => event_type)
                .record(age.as_secs_f64());
        }
        let span = tracing::info_span!(
            "amqp_message",
            %event_id,
            %event_type,
            %order_id,
            attempt,
            trace_id = tracing::field::Empty,
            span_id = tracing::field::Empty,
        );
        let sender = trace_headers::parent(delivery.properties.headers().as_ref());
        let trace = continue_trace(&span, sender.as_ref());
        Self {
            delivery,
            parsed,
            event_type,
            attempt,
            started,
            span,
            trace,
        }
    }

    /// Counts the message as handled, with how it ended.
    pub(super) fn finish(&self, outcome: &'static str) {
        let event_type = self.event_type;
        metrics::counter!("amqp_messages_total", "type" => event_type, "outcome" => outcome)
            .increment(1);
        metrics::histogram!("amqp_message_duration_seconds", "type" => event_type)
            .record(self.started.elapsed().as_secs_f64());
    }
}
