//! The AMQP harness: a database and a broker topology of the test's own (unique names, deleted at
//! the end), and the service's components run in-process over the real application: consumers,
//! a dead-letter parker, an outbox relay. What a test does with it (publish, read the database,
//! take messages, start the binary) is in the files beside this one.

use std::time::Duration;

use lapin::options::ConfirmSelectOptions;
use lapin::{Channel, Connection};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use order_service::amqp::inbound::INBOUND_TYPES;
use order_service::amqp::inbox::Settled;
use order_service::amqp::{Consumer, EventStream, Parker, Relay, Topology, connect};
use order_service::app::App;
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::config::{AmqpConfig, AmqpEndpoints, RelayConfig};
use order_service::domain::ReplayRoutes;
use order_service::health::{Readiness, Signal};
use order_service::store;
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{AMQP_URL, TestDb, amqp_config, delete_amqp_names, eventually};

/// How long a test waits for anything asynchronous before it fails.
pub const WAIT: Duration = Duration::from_secs(30);

pub struct Harness {
    pub db: TestDb,
    pub app: App,
    pub config: AmqpConfig,
    pub topology: Topology,
    pub channel: Channel,
    connection: Connection,
    consumers: Vec<(CancellationToken, JoinHandle<()>)>,
    settled: Vec<Settled>,
    extra_queues: Vec<String>,
}

/// `AMQP_URL` as the service parses it: one URL or a comma-separated list.
fn endpoints(amqp_url: &str) -> AmqpEndpoints {
    AmqpEndpoints::parse(amqp_url).expect("a valid AMQP_URL")
}

/// The default AMQP settings (docs/operations/configuration.md) with names unique to one test.
pub fn test_config() -> AmqpConfig {
    amqp_config(&format!("test-{}", Uuid::new_v4().simple()))
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_with(test_config()).await
    }

    pub async fn start_with(config: AmqpConfig) -> Self {
        let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
        let app = App::new(db.pool.clone())
            .replaying_to(&config.inbound_exchange, ReplayRoutes::new(INBOUND_TYPES));
        let topology = Topology::from_config(&config);
        let connection = connect(AMQP_URL, "order-service tests")
            .await
            .expect("connect");
        topology
            .declare_inbox_side(&connection)
            .await
            .expect("declare topology");
        let channel = connection.create_channel().await.expect("channel");
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirms");
        Self {
            db,
            app,
            config,
            topology,
            channel,
            connection,
            consumers: vec![],
            settled: vec![],
            extra_queues: vec![],
        }
    }

    /// Starts one more consumer instance (its own connection) over this test's database.
    pub fn spawn_consumer(&mut self) -> Signal {
        self.spawn_consumer_on(self.app.clone(), AMQP_URL)
    }

    pub fn spawn_consumer_on(&mut self, app: App, amqp_url: &str) -> Signal {
        let ready = Readiness::default().register("consumer");
        let consumer = Consumer::new(
            app,
            &endpoints(amqp_url),
            self.config.clone(),
            ready.clone(),
        );
        self.settled.push(consumer.settled());
        let token = CancellationToken::new();
        let handle = tokio::spawn(consumer.run(token.clone()));
        self.consumers.push((token, handle));
        ready
    }

    /// Sessions started by all consumers of this test so far (each after the first of a consumer
    /// is a reconnect).
    pub fn sessions(&self) -> u64 {
        self.settled.iter().map(Settled::sessions).sum()
    }

    /// Deliveries settled by all consumers of this test so far.
    pub fn settled(&self) -> u64 {
        self.settled.iter().map(Settled::count).sum()
    }

    /// Of those, the deliveries parked in the retry path (each comes back once more).
    pub fn retried(&self) -> u64 {
        self.settled.iter().map(Settled::retried).sum()
    }

    /// Waits until all `published` messages went through, including every trip through the
    /// retry path (each retry is one more delivery to settle).
    pub async fn wait_until_drained(&self, published: u64) {
        eventually(&format!("{published} messages to drain"), WAIT, || async {
            (self.settled() >= published + self.retried()).then_some(())
        })
        .await;
    }

    /// Waits until a component's readiness `signal` is `ready`.
    pub async fn wait_for_readiness(&self, signal: &Signal, ready: bool) {
        eventually(&format!("readiness to be {ready}"), WAIT, || async {
            (signal.is_ready() == ready).then_some(())
        })
        .await;
    }

    /// Waits until `n` deliveries were found premature and parked in the retry path.
    pub async fn wait_until_retried(&self, n: u64) {
        eventually(
            &format!("{n} deliveries to be parked for retry"),
            WAIT,
            || async { (self.retried() >= n).then_some(()) },
        )
        .await;
    }

    /// The application over this test's database reached through `proxy`, so a test can cut
    /// Postgres from a component without cutting its own reads.
    pub fn app_through(&self, proxy: &Proxy) -> App {
        let url = self.db.url_through(proxy.port);
        let options = store::connect_options(&url, DEFAULT_LOCK_TIMEOUT).expect("the URL");
        App::new(store::pool(options, 4))
    }

    /// Starts a dead-letter parker over this test's database and dead-letter queue.
    pub fn spawn_parker(&mut self) -> Signal {
        self.spawn_parker_on(AMQP_URL)
    }

    pub fn spawn_parker_on(&mut self, amqp_url: &str) -> Signal {
        self.spawn_parker_with(self.app.clone(), amqp_url)
    }

    /// A parker over `app` (one whose pool goes through a proxy, say).
    pub fn spawn_parker_with(&mut self, app: App, amqp_url: &str) -> Signal {
        let ready = Readiness::default().register("parker");
        let parker = Parker::new(app, &endpoints(amqp_url), &self.config, ready.clone());
        let token = CancellationToken::new();
        let handle = tokio::spawn(parker.run(token.clone()));
        self.consumers.push((token, handle));
        ready
    }

    /// Starts an outbox relay publishing this test's database to its outbound exchange, keeping
    /// every event in the test's event stream unless its configuration turns the stream off.
    pub fn spawn_relay(&mut self, amqp_url: &str, config: RelayConfig) -> Signal {
        let ready = Readiness::default().register("relay");
        let relay = Relay::new(
            self.db.pool.clone(),
            &endpoints(amqp_url),
            self.topology.outbound_exchange.clone(),
            config,
            ready.clone(),
        )
        .keeping_events_in(EventStream::from_config(&self.config));
        let token = CancellationToken::new();
        let handle = tokio::spawn(relay.run(token.clone()));
        self.consumers.push((token, handle));
        ready
    }

    /// Graceful shutdown of every consumer, as on SIGTERM.
    pub async fn stop_consumers(&mut self) {
        for (token, handle) in self.consumers.drain(..) {
            token.cancel();
            handle.await.expect("consumer task");
        }
    }

    /// Registers a queue of the test's own, deleted with its topology at the end.
    pub(super) fn delete_at_end(&mut self, queue: String) {
        self.extra_queues.push(queue);
    }
}

impl Drop for Harness {
    /// Stops the consumers and deletes the test's queues and exchanges, pass or fail.
    fn drop(&mut self) {
        for (token, handle) in self.consumers.drain(..) {
            token.cancel();
            handle.abort();
        }
        delete_amqp_names(
            self.topology.clone(),
            std::mem::take(&mut self.extra_queues),
        );
        let _ = &self.connection;
    }
}

/// Relay settings for tests: a short poll so fallbacks are quick; default retention and stall
/// bound.
pub fn relay_config() -> RelayConfig {
    RelayConfig {
        poll_ms: 200,
        prune_interval_secs: 3600,
        ..RelayConfig::default()
    }
}
