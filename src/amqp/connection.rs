//! Connecting to RabbitMQ: which node of `AMQP_URL` a component connects to next ([`Nodes`]),
//! the reconnect loop with its capped, jittered exponential backoff that every component runs, and how a
//! consuming component (the consumer, the parker) starts reading its queue ([`consume`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use lapin::options::{BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use lapin::{Channel, Connection, ConnectionProperties};
use tokio_util::sync::CancellationToken;

use crate::config::{AmqpEndpoint, AmqpEndpoints};
use crate::health::Signal;
use crate::telemetry::error_chain;

/// A broker-side failure of a session; the session ends and reconnects.
#[derive(Debug, thiserror::Error)]
pub enum AmqpError {
    #[error(transparent)]
    Lapin(#[from] lapin::Error),
    #[error("cannot connect to {node}")]
    Connect {
        node: AmqpEndpoint,
        #[source]
        source: lapin::Error,
    },
    #[error("no connection to {node} within {CONNECT_TIMEOUT:?}")]
    ConnectTimeout { node: AmqpEndpoint },
    #[error("the broker cancelled the consumer")]
    ConsumerCancelled,
    #[error("the broker refused (nacked) a published message")]
    Nacked,
    #[error("no queue took a message published to {exchange:?} (is the topology intact?)")]
    Unroutable { exchange: String },
    #[error("the connection to the broker is gone")]
    Disconnected,
    #[error("the broker did not confirm in time (is it blocking publishers?)")]
    Timeout,
    #[error("a message could not be settled (retried, dead-lettered or acknowledged)")]
    SettleFailed,
    #[error("cannot read the key that seals retry counts")]
    AttemptSealKey(#[source] crate::app::AppError),
}

/// How long a session must have stayed up for the next reconnect to start again from the
/// shortest delay: a connection that dies at once (say, on a message that breaks it) backs off.
pub const STABLE_SESSION: Duration = Duration::from_secs(10);

/// How long one attempt to connect (TCP, TLS, AMQP handshake) may take before the next attempt
/// goes to another node: a node whose host vanished answers nothing, and the kernel alone would
/// keep trying for minutes.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `session` until it ends cleanly or `shutdown` fires. After a failure it lowers `ready`,
/// counts `amqp_reconnects_total{component}`, waits a growing delay ([`Backoff`]: 250 ms doubling
/// to 30 s, each drawn between half and all of its step; from the start again only when the
/// failed session had connected, i.e. raised `ready`, and stayed up [`STABLE_SESSION`]) and
/// starts a new session. `name` labels the logs.
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
        tracing::warn!(error = %error_chain(&error), retry_in = ?delay, "{name} disconnected from the broker");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = shutdown.cancelled() => break,
        }
    }
    ready.set(false);
    tracing::info!("{name} stopped");
}

/// One connection to the broker at `url`, named `name` (shown by the broker's tools).
pub async fn connect(url: &str, name: &str) -> lapin::Result<Connection> {
    let properties = ConnectionProperties::default().with_connection_name(name.into());
    Connection::connect(url, properties).await
}

/// Starts consuming `queue` on `channel` with at most `prefetch` deliveries unacknowledged, under
/// a consumer tag of this session's own (`<tag_prefix>-<uuid>`; the stream's `tag()` cancels it).
pub(super) async fn consume(
    channel: &Channel,
    queue: &str,
    prefetch: u16,
    tag_prefix: &str,
) -> Result<lapin::Consumer, AmqpError> {
    channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await?;
    let tag = format!("{tag_prefix}-{}", uuid::Uuid::new_v4().simple());
    let deliveries = channel
        .basic_consume(
            queue.into(),
            tag.as_str().into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;
    Ok(deliveries)
}

/// The nodes of `AMQP_URL` as one component (the consumer, the relay, …) uses them: in an order
/// of its own, drawn at random, each [`Nodes::connect`] taking the next. A component thus starts
/// on a node chosen at random (the components of many instances spread over the cluster), and
/// after losing its node it tries every other one before coming back to it. The delay between
/// attempts is [`reconnecting`]'s (docs/operations/scaling.md).
#[derive(Debug)]
pub struct Nodes {
    order: Vec<AmqpEndpoint>,
    next: AtomicUsize,
}

impl Nodes {
    pub fn new(endpoints: &AmqpEndpoints) -> Self {
        // Without a random source the order is a fixed one: still every node in turn.
        Self::shuffled(endpoints, || getrandom::u64().unwrap_or(0))
    }

    /// `endpoints` in an order drawn with `random` (Fisher–Yates).
    fn shuffled(endpoints: &AmqpEndpoints, mut random: impl FnMut() -> u64) -> Self {
        let mut order = endpoints.as_slice().to_vec();
        for last in (1..order.len()).rev() {
            let pick = random() % (last as u64 + 1);
            order.swap(last, usize::try_from(pick).unwrap_or(last));
        }
        Self {
            order,
            next: AtomicUsize::new(0),
        }
    }

    /// The node the next connection goes to; advances the rotation.
    fn take_next(&self) -> &AmqpEndpoint {
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        &self.order[turn % self.order.len()]
    }

    /// Connects to the next node, within [`CONNECT_TIMEOUT`], and logs which one (its password
    /// redacted) as `name`.
    pub async fn connect(&self, name: &str) -> Result<Connection, AmqpError> {
        let node = self.take_next();
        match tokio::time::timeout(CONNECT_TIMEOUT, connect(node.url(), name)).await {
            Ok(Ok(connection)) => {
                tracing::info!(%node, connection = name, "connected to the broker");
                Ok(connection)
            }
            Ok(Err(source)) => Err(AmqpError::Connect {
                node: node.clone(),
                source,
            }),
            Err(_) => Err(AmqpError::ConnectTimeout { node: node.clone() }),
        }
    }
}

/// Delays that double from `initial` up to `max`, each drawn at random between half and all of
/// its step ("equal jitter"), so that the components and instances that lost a broker together
/// do not all come back at the same instant; `reset` after a success. backon draws them.
#[derive(Debug)]
pub struct Backoff {
    steps: ExponentialBuilder,
    delays: ExponentialBackoff,
    max: Duration,
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Self {
        // backon's jitter adds up to one whole delay (d becomes d to 2d): from steps of half the
        // size, each delay falls between half and all of its doubling step.
        let steps = ExponentialBuilder::new()
            .with_min_delay(initial / 2)
            .with_max_delay(max / 2)
            .with_factor(2.0)
            .with_jitter()
            .without_max_times();
        Self {
            delays: steps.build(),
            steps,
            max,
        }
    }

    /// The next delay; never above `max` (backon's float arithmetic may pass a step by a few
    /// nanoseconds).
    pub fn next_delay(&mut self) -> Duration {
        self.delays
            .next()
            .map_or(self.max, |delay| delay.min(self.max))
    }

    pub fn reset(&mut self) {
        self.delays = self.steps.build();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(count: u16) -> AmqpEndpoints {
        let list: Vec<String> = (1..=count)
            .map(|n| format!("amqp://guest:secret@node-{n}:5672/%2f"))
            .collect();
        AmqpEndpoints::parse(&list.join(",")).unwrap()
    }

    fn taken(nodes: &Nodes, count: usize) -> Vec<String> {
        (0..count)
            .map(|_| nodes.take_next().url().replace("amqp://guest:secret@", ""))
            .collect()
    }

    #[test]
    fn each_connect_takes_the_next_node_and_every_other_comes_before_a_node_again() {
        let nodes = Nodes::shuffled(&endpoints(3), || 0);
        let cycle = taken(&nodes, 3);
        let mut sorted = cycle.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            ["node-1:5672/%2f", "node-2:5672/%2f", "node-3:5672/%2f"],
            "one turn visits every node once"
        );
        assert_eq!(taken(&nodes, 6), [cycle.clone(), cycle].concat());
    }

    #[test]
    fn the_first_node_is_drawn_at_random() {
        let list = endpoints(3);
        let mut draws = [7u64, 0, 1, 1, 0, 0].into_iter().cycle();
        let firsts: std::collections::BTreeSet<String> = (0..3)
            .map(|_| {
                let nodes = Nodes::shuffled(&list, || draws.next().unwrap_or(0));
                taken(&nodes, 1).remove(0)
            })
            .collect();
        assert_eq!(
            firsts.len(),
            3,
            "each node comes first for some draw: {firsts:?}"
        );

        let random: std::collections::BTreeSet<String> = (0..64)
            .map(|_| taken(&Nodes::new(&list), 1).remove(0))
            .collect();
        assert_eq!(random.len(), 3, "64 random orders all start on one node");
    }

    #[test]
    fn a_single_node_is_always_the_next() {
        let nodes = Nodes::new(&endpoints(1));
        assert_eq!(taken(&nodes, 3), ["node-1:5672/%2f"; 3]);
    }

    #[tokio::test]
    async fn a_failed_connect_names_the_node_without_its_password_and_moves_on() {
        // Port 1 on loopback refuses at once.
        let list = "amqp://guest:secret@127.0.0.1:1/%2f,amqp://guest:secret@localhost:1/%2f";
        let nodes = Nodes::new(&AmqpEndpoints::parse(list).unwrap());
        let mut named = vec![];
        for _ in 0..2 {
            let error = nodes.connect("test").await.expect_err("nothing listens");
            let AmqpError::Connect { node, .. } = &error else {
                panic!("{error:?}");
            };
            assert!(!error.to_string().contains("secret"), "{error}");
            named.push(node.to_string());
        }
        named.sort();
        assert_eq!(
            named,
            [
                "amqp://guest:***@127.0.0.1:1/%2f",
                "amqp://guest:***@localhost:1/%2f"
            ]
        );
    }

    /// Steps of whole seconds, which backon's `f32` arithmetic computes exactly.
    const STEPS_MS: [u64; 5] = [1_000, 2_000, 4_000, 4_000, 4_000];

    #[test]
    fn backoff_delays_double_up_to_the_cap_each_between_half_and_all_of_its_step() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(4));
        for _ in 0..50 {
            for step in STEPS_MS {
                let delay = backoff.next_delay().as_millis();
                let step = u128::from(step);
                assert!(
                    (step / 2..=step).contains(&delay),
                    "{delay} ms for a step of {step} ms"
                );
            }
            backoff.reset();
        }
    }

    #[test]
    fn backoff_delays_vary_between_backoffs_and_after_a_reset() {
        let firsts: std::collections::BTreeSet<Duration> = (0..32)
            .map(|_| Backoff::new(Duration::from_secs(1), Duration::from_secs(4)).next_delay())
            .collect();
        assert!(firsts.len() > 1, "32 backoffs all began with {firsts:?}");

        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(4));
        let capped: std::collections::BTreeSet<Duration> = (0..32)
            .map(|_| {
                backoff.reset();
                (0..STEPS_MS.len())
                    .map(|_| backoff.next_delay())
                    .last()
                    .unwrap_or_default()
            })
            .collect();
        assert!(
            capped.len() > 1,
            "the capped delay never varied: {capped:?}"
        );
    }
}
