//! The deliveries the consumer takes together (a batch, docs/messaging.md "Batched consumer
//! commits"; one delivery when `AMQP_BATCH_SIZE` is 1): each is parsed, its event made a
//! [`Request`] — the same command the REST API runs — and all of them applied in one transaction
//! ([`App::apply_batch`]); [`disposition_of`] says what becomes of each, and the [`Settler`] settles them
//! — acknowledged only after the commit, and after any replacement (a retry or a dead letter) is
//! confirmed. Messages that must wait (Postgres unavailable, a lock held elsewhere) stay
//! unacknowledged and are tried again, together, after a backoff, while the others are settled.
//! Each delivery's command runs in the delivery's own span ([`Message`]).

use std::sync::Arc;
use std::time::Duration;

use lapin::message::Delivery;
use tokio_util::sync::CancellationToken;

use super::delivery::Message;
use super::disposition::{Disposition, disposition_of};
use super::settlement::{Settlement, Settler};
use crate::amqp::connection::Backoff;
use crate::amqp::inbound::{Envelope, InboundEvent};
use crate::app::{App, AppError, Item, Request};
use crate::config::AmqpConfig;
use crate::domain::{Cause, ReasonClass};
use crate::telemetry::{TraceContext, error_chain, escaped};

/// Everything a batch's handler needs.
pub(super) struct Worker {
    app: App,
    config: Arc<AmqpConfig>,
    settler: Settler,
    /// Cancelled when the session ends: messages waiting to be tried again are given up (left
    /// unacknowledged, so the broker redelivers them).
    session: CancellationToken,
    max_message_bytes: usize,
}

impl Worker {
    pub(super) fn new(
        app: App,
        config: Arc<AmqpConfig>,
        settler: Settler,
        session: CancellationToken,
        max_message_bytes: usize,
    ) -> Self {
        Self {
            app,
            config,
            settler,
            session,
            max_message_bytes,
        }
    }

    /// Notes a delivery as received, in the order the channel numbered them and before any
    /// can be settled.
    pub(super) async fn received(&self, delivery_tag: u64) {
        self.settler.received(delivery_tag).await;
    }

    pub(super) async fn handle(&self, deliveries: Vec<Delivery>) {
        metrics::histogram!("amqp_batch_size").record(deliveries.len() as f64);
        let mut pending: Vec<Message> = deliveries
            .into_iter()
            .map(|delivery| Message::receive(delivery, self.max_message_bytes, self.settler.seal()))
            .collect();
        let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(10));
        loop {
            let (settling, waiting) = self.apply_together(pending).await;
            self.settler.settle(settling).await;
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
    async fn apply_together(
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
        Ok(results) => results.iter().map(disposition_of).collect(),
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
        .unwrap_or_else(|| {
            disposition_of::<()>(&Err(AppError::Invariant("a batch of one has one result")))
        })
}
