//! The deliveries the consumer takes together (a batch, docs/messaging.md "Batched consumer
//! commits"; one delivery when `AMQP_BATCH_SIZE` is 1): each is parsed, its event made a
//! [`Request`] — the same command the REST API runs — and all of them applied in one transaction
//! ([`App::apply_batch`]); [`decide`] says what becomes of each, and `settle` settles them —
//! acknowledged only after the commit, and after any replacement (a retry or a dead letter) is
//! confirmed. Messages that must wait (Postgres unavailable, a lock held elsewhere) stay
//! unacknowledged and are tried again, together, after a backoff, while the others are settled.
//!
//! Each delivery is handled in a span of its own that continues the message's `traceparent` (or
//! starts a trace): its command's work runs in that span, and the events it writes and its
//! replacement carry that span's context.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lapin::Channel;
use lapin::message::Delivery;
use tokio_util::sync::CancellationToken;

use super::ack_window::Acknowledger;
use super::connection::Backoff;
use super::consumer::Settled;
use super::decision::{Disposition, decide};
use super::envelope::{self, Envelope, InboundEvent, Poison};
use super::republish::attempt_of;
use super::settle::Settlement;
use super::topology::Topology;
use super::trace_headers;
use crate::app::{App, AppError, Item, Request};
use crate::config::AmqpConfig;
use crate::domain::{Cause, ReasonClass};
use crate::telemetry::{TraceContext, continue_trace, error_chain, escaped};

/// Everything a batch's handler needs.
pub(super) struct Worker {
    pub(super) app: App,
    pub(super) publisher: Channel,
    /// The consuming channel's acknowledgements.
    pub(super) acks: Acknowledger,
    pub(super) config: Arc<AmqpConfig>,
    pub(super) topology: Arc<Topology>,
    pub(super) session: CancellationToken,
    /// Cancelled when a settlement failed: the channels can no longer be trusted (the broker may
    /// have closed the publishing channel), so the session ends and reconnects.
    pub(super) broken: CancellationToken,
    pub(super) settled: Settled,
    pub(super) max_message_bytes: usize,
}

/// One delivery on its way through: parsed, with its span and the trace its effects carry.
pub(super) struct Message {
    pub(super) delivery: Delivery,
    parsed: Result<Envelope, Poison>,
    event_type: &'static str,
    pub(super) attempt: u32,
    started: Instant,
    pub(super) span: tracing::Span,
    pub(super) trace: TraceContext,
}

impl Message {
    fn receive(delivery: Delivery, max_message_bytes: usize) -> Self {
        let started = Instant::now();
        let attempt = attempt_of(&delivery.properties);
        let parsed = envelope::parse_bounded(&delivery.data, max_message_bytes);
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

impl Worker {
    pub(super) async fn handle(&self, deliveries: Vec<Delivery>) {
        metrics::histogram!("amqp_batch_size").record(deliveries.len() as f64);
        let mut pending: Vec<Message> = deliveries
            .into_iter()
            .map(|delivery| Message::receive(delivery, self.max_message_bytes))
            .collect();
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
        loop {
            let (settling, waiting) = self.decide(pending).await;
            self.settle(settling).await;
            if waiting.is_empty() {
                return;
            }
            let delay = backoff.next_delay();
            for (message, reason) in &waiting {
                message.span.in_scope(|| {
                    tracing::warn!(reason = %escaped(reason), retry_in = ?delay, "cannot process now; keeping the message");
                });
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                // Left unacknowledged: the broker redelivers them to whoever consumes next.
                () = self.session.cancelled() => return,
            }
            pending = waiting.into_iter().map(|(message, _)| message).collect();
        }
    }

    /// Applies the parsed messages together and decides each: those settled now, and those
    /// that must wait, with the reason.
    async fn decide(
        &self,
        messages: Vec<Message>,
    ) -> (Vec<(Message, Settlement)>, Vec<(Message, String)>) {
        let mut settling = Vec::with_capacity(messages.len());
        let mut parsed = Vec::with_capacity(messages.len());
        let mut items = Vec::with_capacity(messages.len());
        for message in messages {
            match &message.parsed {
                Ok(envelope) => {
                    items.push(Item {
                        request: request(&envelope.event),
                        cause: cause(envelope),
                        trace: message.trace.clone(),
                        span: message.span.clone(),
                    });
                    parsed.push(message);
                }
                Err(poison) => {
                    let reason = ReasonClass::Poison.reason(&poison.to_string());
                    settling.push((message, Settlement::DeadLetter(reason)));
                }
            }
        }
        let dispositions = dispositions(&self.app, &items, self.config.batch_lock_wait()).await;
        let mut waiting = Vec::new();
        for (message, disposition) in parsed.into_iter().zip(dispositions) {
            match Settlement::of(disposition) {
                Ok(settlement) => settling.push((message, settlement)),
                Err(reason) => waiting.push((message, reason)),
            }
        }
        (settling, waiting)
    }
}

/// The command an event asks for.
fn request(event: &InboundEvent) -> Request {
    match event {
        InboundEvent::OrderPlaced(new) => Request::Place(new.clone()),
        InboundEvent::PaymentSucceeded(payment) => Request::RecordPayment(payment.clone()),
        InboundEvent::RefundSucceeded(refund) => Request::RecordRefund(refund.clone()),
        InboundEvent::ShipmentDispatched { order_id, shipment } => Request::Ship {
            order_id: *order_id,
            shipment: shipment.clone(),
        },
        InboundEvent::CancellationRequested { order_id, reason } => Request::Cancel {
            order_id: *order_id,
            reason: reason.clone(),
        },
    }
}

fn cause(envelope: &Envelope) -> Cause {
    Cause::Amqp {
        event_id: envelope.event_id.clone(),
    }
}

/// Applies `items` together ([`App::apply_batch`]) and decides what becomes of each; when
/// Postgres is unavailable nothing of them committed, and every one waits.
async fn dispositions(app: &App, items: &[Item], lock_wait: Duration) -> Vec<Disposition> {
    match app.apply_batch(items, lock_wait).await {
        Ok(results) => results.iter().map(decide).collect(),
        Err(error) => {
            let reason = error_chain(&error);
            let wait = || Disposition::Wait {
                reason: reason.clone(),
            };
            std::iter::repeat_with(wait).take(items.len()).collect()
        }
    }
}

/// Runs the event's command as the consumer runs a delivery alone (a batch of one, in a
/// transaction of its own) under `trace`, the context of the delivery's span, and decides the
/// disposition.
pub async fn apply(app: &App, envelope: &Envelope, trace: &TraceContext) -> Disposition {
    let item = Item {
        request: request(&envelope.event),
        cause: cause(envelope),
        trace: trace.clone(),
        span: tracing::Span::current(),
    };
    // A batch of one waits `LOCK_TIMEOUT_MS`, whatever the lock wait given.
    dispositions(app, std::slice::from_ref(&item), Duration::ZERO)
        .await
        .pop()
        .unwrap_or_else(|| decide::<()>(&Err(AppError::Invariant("a batch of one has one result"))))
}
