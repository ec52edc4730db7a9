//! Connecting to RabbitMQ, and the capped exponential backoff every reconnect loop uses.

use std::time::Duration;

use lapin::{Connection, ConnectionProperties};
use tokio_util::sync::CancellationToken;

use crate::health::Signal;

/// A broker-side failure of a session; the session ends and reconnects.
#[derive(Debug, thiserror::Error)]
pub enum AmqpError {
    #[error(transparent)]
    Lapin(#[from] lapin::Error),
    #[error("the broker cancelled the consumer")]
    ConsumerCancelled,
    #[error("the broker refused (nacked) a published message")]
    Nacked,
    #[error("the connection to the broker is gone")]
    Disconnected,
    #[error("the broker did not confirm in time (is it blocking publishers?)")]
    Timeout,
    #[error("a message could not be settled (retried, dead-lettered or acknowledged)")]
    SettleFailed,
}

/// How long a session must have stayed up for the next reconnect to start again from the
/// shortest delay: a connection that dies at once (say, on a message that breaks it) backs off.
pub const STABLE_SESSION: Duration = Duration::from_secs(10);

/// Runs `session` until it ends cleanly or `shutdown` fires. After a failure it lowers `ready`,
/// counts `amqp_reconnects_total{component}`, waits a growing delay (250 ms doubling to 30 s,
/// from the start again only when the failed session had connected, i.e. raised `ready`, and
/// stayed up [`STABLE_SESSION`]) and starts a new session. `name` labels the logs.
pub async fn reconnecting<Fut>(
    name: &str,
    component: &'static str,
    ready: &Signal,
    shutdown: &CancellationToken,
    mut session: impl FnMut() -> Fut,
) where
    Fut: Future<Output = Result<(), AmqpError>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(250), Duration::from_secs(30));
    while !shutdown.is_cancelled() {
        let started = std::time::Instant::now();
        let Err(error) = session().await else {
            break;
        };
        if ready.is_ready() && started.elapsed() >= STABLE_SESSION {
            backoff.reset();
        }
        ready.set(false);
        metrics::counter!("amqp_reconnects_total", "component" => component).increment(1);
        let delay = backoff.next_delay();
        tracing::warn!(%error, retry_in = ?delay, "{name} disconnected from the broker");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.cancelled() => break,
        }
    }
    ready.set(false);
    tracing::info!("{name} stopped");
}

pub async fn connect(url: &str, name: &str) -> lapin::Result<Connection> {
    let properties = ConnectionProperties::default().with_connection_name(name.into());
    Connection::connect(url, properties).await
}

/// Doubling delays from `initial` up to `max`; `reset` after a success.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            next: initial,
        }
    }

    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        delay
    }

    pub fn reset(&mut self) {
        self.next = self.initial;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let delays: Vec<_> = (0..4).map(|_| backoff.next_delay().as_millis()).collect();
        assert_eq!(delays, vec![100, 200, 350, 350]);
        backoff.reset();
        assert_eq!(backoff.next_delay().as_millis(), 100);
    }
}
