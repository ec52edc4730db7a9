//! The AMQP harness: a database and a broker topology of the test's own (unique names, deleted at
//! the end), in-process consumers over the real application, a publisher for inbound events, and
//! the service's binary started over the same database and topology.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use uuid::Uuid;

use order_service::amqp::consumer::Settled;
use order_service::amqp::envelope::INBOUND_TYPES;
use order_service::amqp::{Consumer, Parker, Relay, Topology, connect};
use order_service::app::App;
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::config::{AmqpConfig, AmqpEndpoints, RelayConfig};
use order_service::domain::ReplayRoutes;
use order_service::health::{Readiness, Signal};
use order_service::store;

use order_service_testkit::proxy::Proxy;
use order_service_testkit::{
    AMQP_URL, TestDb, amqp_config, delete_amqp_names, eventually, service,
};

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
pub fn endpoints(amqp_url: &str) -> AmqpEndpoints {
    AmqpEndpoints::parse(amqp_url).expect("a valid AMQP_URL")
}

/// The default AMQP settings (README "Configuration") with names unique to one test.
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

    /// Starts an outbox relay publishing this test's database to its outbound exchange.
    pub fn spawn_relay(&mut self, amqp_url: &str, config: RelayConfig) -> Signal {
        let ready = Readiness::default().register("relay");
        let relay = Relay::new(
            self.db.pool.clone(),
            &endpoints(amqp_url),
            self.topology.outbound_exchange.clone(),
            config,
            ready.clone(),
        );
        let token = CancellationToken::new();
        let handle = tokio::spawn(relay.run(token.clone()));
        self.consumers.push((token, handle));
        ready
    }

    /// A queue of this test's, bound to every outbound event; deleted with the topology.
    pub async fn subscribe(&mut self) -> String {
        let queue = format!("{}.subscriber", self.topology.inbox);
        self.channel
            .queue_declare(
                queue.as_str().into(),
                QueueDeclareOptions::default(),
                FieldTable::default(),
            )
            .await
            .expect("declare subscriber queue");
        self.channel
            .queue_bind(
                queue.as_str().into(),
                self.topology.outbound_exchange.as_str().into(),
                "#".into(),
                Default::default(),
                FieldTable::default(),
            )
            .await
            .expect("bind subscriber queue");
        self.extra_queues.push(queue.clone());
        queue
    }

    /// Takes every message now in `queue`.
    pub async fn drain(&self, queue: &str) -> Vec<Published> {
        let mut messages = vec![];
        while let Some(message) = self
            .channel
            .basic_get(queue.into(), BasicGetOptions::default())
            .await
            .expect("basic_get")
        {
            message
                .delivery
                .ack(BasicAckOptions::default())
                .await
                .expect("ack");
            let properties = &message.delivery.properties;
            messages.push(Published {
                routing_key: message.delivery.routing_key.to_string(),
                message_id: properties.message_id().as_ref().map(|m| m.to_string()),
                content_type: properties.content_type().as_ref().map(|c| c.to_string()),
                delivery_mode: *properties.delivery_mode(),
                headers: properties.headers().clone().unwrap_or_default(),
                body: serde_json::from_slice(&message.delivery.data).expect("JSON body"),
            });
        }
        messages
    }

    /// Collects messages from `queue` until `n` arrived.
    pub async fn receive(&self, queue: &str, n: usize) -> Vec<Published> {
        let start = std::time::Instant::now();
        let mut messages = vec![];
        while messages.len() < n {
            assert!(
                start.elapsed() < WAIT,
                "received {} of {n} messages",
                messages.len()
            );
            messages.extend(self.drain(queue).await);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        messages
    }

    /// Graceful shutdown of every consumer, as on SIGTERM.
    pub async fn stop_consumers(&mut self) {
        for (token, handle) in self.consumers.drain(..) {
            token.cancel();
            handle.await.expect("consumer task");
        }
    }

    pub async fn publish_raw(&self, routing_key: &str, body: &[u8], properties: BasicProperties) {
        self.publish_to(
            &self.topology.inbound_exchange,
            routing_key,
            body,
            properties,
        )
        .await;
    }

    /// Publishes persistently to `exchange` and waits for the broker's confirm.
    async fn publish_to(
        &self,
        exchange: &str,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) {
        let confirm = self
            .channel
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                BasicPublishOptions::default(),
                body,
                properties.with_delivery_mode(2),
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
        assert!(confirm.is_ack());
    }

    /// POSTs `body` to `path` of the REST API (in-process, open, on this harness's database)
    /// with `key` as its Idempotency-Key: the other door to the same application.
    pub async fn post_over_rest(&self, path: &str, key: &str, body: Value) -> StatusCode {
        self.post_over_rest_with(path, key, body, &[]).await
    }

    /// [`Harness::post_over_rest`] with more request headers.
    pub async fn post_over_rest_with(
        &self,
        path: &str,
        key: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> StatusCode {
        self.rest(post_request(path, key, body, headers)).await.0
    }

    /// [`Harness::post_over_rest`], with the answer's body.
    pub async fn rest_post(&self, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
        self.rest(post_request(path, key, body, &[])).await
    }

    /// GETs `path` of the REST API (in-process, open, on this harness's database).
    pub async fn rest_get(&self, path: &str) -> (StatusCode, Value) {
        self.rest(Request::get(path).body(Body::empty()).expect("a request"))
            .await
    }

    async fn rest(&self, request: Request<Body>) -> (StatusCode, Value) {
        let router = order_service::http::router(order_service::http::ApiState {
            app: self.app.clone(),
            metrics: order_service::telemetry::metrics(),
            readiness: Readiness::default(),
        });
        let response = router.oneshot(request).await.expect("a response");
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .expect("a body")
            .to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    /// Publishes an envelope of `event_type` with `data` and returns its body.
    /// Starts the service's binary over this harness's database and topology, with `env` on
    /// top of its settings, writing its output to `log` (or nowhere).
    pub fn start_service(&self, env: &[(&str, &str)], log: Option<&Path>) -> ServiceProcess {
        let http_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let output = || match log {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .expect("the service's log file"),
            ),
            None => Stdio::null(),
        };
        let config = &self.config;
        let child = service::command(
            env!("CARGO_BIN_EXE_order-service"),
            &self.db.url,
            AMQP_URL,
            http_port,
            config,
        )
        .env("RUST_LOG", "error")
        .env("DB_MAX_CONNECTIONS", "4")
        .env("OUTBOX_POLL_MS", "200")
        .env("AMQP_DELIVERY_LIMIT", config.delivery_limit.to_string())
        .envs(env.iter().copied())
        .stdout(output())
        .stderr(output())
        .spawn()
        .expect("start order-service");
        ServiceProcess {
            child: Some(child),
            http_port,
        }
    }

    pub async fn publish(&self, event_id: &str, event_type: &str, data: Value) -> Vec<u8> {
        let body = envelope(event_id, event_type, data)
            .to_string()
            .into_bytes();
        self.publish_raw(
            event_type,
            &body,
            BasicProperties::default()
                .with_message_id(event_id.into())
                .with_content_type("application/json".into()),
        )
        .await;
        body
    }

    pub async fn place(&self, event_id: &str, order: Uuid, amount: i64) {
        self.publish(
            event_id,
            "order.placed",
            json!({"order_id": order, "customer_id": "c-1", "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn pay(&self, event_id: &str, order: Uuid, transfer: &str, amount: i64) {
        self.publish(
            event_id,
            "payment.succeeded",
            json!({"order_id": order, "transfer_id": transfer, "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn refund(&self, event_id: &str, order: Uuid, refund_id: &str, amount: i64) {
        self.publish(
            event_id,
            "refund.succeeded",
            json!({"order_id": order, "refund_id": refund_id, "amount_minor": amount, "currency": "EUR"}),
        )
        .await;
    }

    pub async fn ship(&self, event_id: &str, order: Uuid, tracking: &str) {
        self.publish(
            event_id,
            "shipment.dispatched",
            json!({"order_id": order, "carrier": "DHL", "tracking_number": tracking}),
        )
        .await;
    }

    pub async fn cancel(&self, event_id: &str, order: Uuid) {
        self.publish(
            event_id,
            "order.cancellation_requested",
            json!({"order_id": order, "reason": "customer asked"}),
        )
        .await;
    }

    /// The order's `(status, version, paid_minor)`, if it exists.
    pub async fn order_state(&self, order: Uuid) -> Option<(String, i64, i64)> {
        sqlx::query_as("SELECT status, version, paid_minor FROM orders WHERE id = $1")
            .bind(order)
            .fetch_optional(&self.db.pool)
            .await
            .expect("read order")
    }

    /// The order's `(paid_minor, refunded_minor, refund_required)`, if it exists.
    pub async fn order_money(&self, order: Uuid) -> Option<(i64, i64, bool)> {
        sqlx::query_as(
            "SELECT paid_minor, refunded_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_optional(&self.db.pool)
        .await
        .expect("read order")
    }

    /// Waits until the order has `refunded` refunded; returns its money as
    /// [`Harness::order_money`] does.
    pub async fn wait_for_refunded(&self, order: Uuid, refunded: i64) -> (i64, i64, bool) {
        eventually(
            &format!("order {order} to have {refunded} refunded"),
            WAIT,
            || async { self.order_money(order).await.filter(|m| m.1 == refunded) },
        )
        .await
    }

    /// The order's ledger rows: `(transfer_id, direction, amount_minor, source)`, oldest first.
    pub async fn transfers(&self, order: Uuid) -> Vec<(String, String, i64, String)> {
        sqlx::query_as(
            "SELECT transfer_id, direction, amount_minor, source FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.db.pool)
        .await
        .expect("read the ledger")
    }

    /// Waits until the order is in `status`.
    pub async fn wait_for_status(&self, order: Uuid, status: &str) -> (String, i64, i64) {
        eventually(&format!("order {order} to be {status}"), WAIT, || async {
            self.order_state(order).await.filter(|s| s.0 == status)
        })
        .await
    }

    /// Locks `order`'s row in a transaction the caller holds (until it rolls it back).
    pub async fn lock_order(&self, order: Uuid) -> sqlx::Transaction<'static, sqlx::Postgres> {
        let mut lock = self.db.pool.begin().await.expect("begin");
        sqlx::query("SELECT 1 FROM orders WHERE id = $1 FOR UPDATE")
            .bind(order)
            .execute(&mut *lock)
            .await
            .expect("lock the order");
        lock
    }

    /// Messages in a queue that are ready for delivery (not those held unacknowledged).
    pub async fn ready_count(&self, queue: &str) -> u32 {
        order_service_testkit::ready_count(&self.channel, queue).await
    }

    /// Deliveries of `queue` held by consumers and not yet acknowledged, as the broker counts
    /// them (`rabbitmqctl`: the AMQP protocol does not tell).
    pub async fn unacked_count(&self, queue: &str) -> Option<u64> {
        let output = tokio::process::Command::new("rabbitmqctl")
            .args(["list_queues", "--quiet", "name", "messages_unacknowledged"])
            .output()
            .await
            .expect("run rabbitmqctl");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| {
                line.strip_prefix(&format!("{queue}\t"))?
                    .trim()
                    .parse()
                    .ok()
            })
    }

    /// Takes every message out of the dead-letter queue, acknowledged, as it was delivered.
    pub async fn take_dead_letter_deliveries(&self) -> Vec<lapin::message::Delivery> {
        let mut deliveries = vec![];
        while let Some(message) = self
            .channel
            .basic_get(
                self.topology.dead_letter_queue.as_str().into(),
                BasicGetOptions::default(),
            )
            .await
            .expect("basic_get")
        {
            message
                .delivery
                .ack(BasicAckOptions::default())
                .await
                .expect("ack");
            deliveries.push(message.delivery);
        }
        deliveries
    }

    /// Takes every message out of the dead-letter queue: each one the service dead-lettered,
    /// with its `x-error-reason`.
    pub async fn take_dead_letters(&self) -> Vec<DeadLetter> {
        self.take_dead_letter_deliveries()
            .await
            .into_iter()
            .map(|delivery| {
                let headers = delivery.properties.headers().clone().unwrap_or_default();
                let reason = match headers.inner().get("x-error-reason") {
                    Some(AMQPValue::LongString(s)) => s.to_string(),
                    other => panic!("dead letter without a reason: {other:?}"),
                };
                let properties = &delivery.properties;
                DeadLetter {
                    body: delivery.data.clone(),
                    reason,
                    message_id: properties.message_id().as_ref().map(|m| m.to_string()),
                    expiration: properties.expiration().as_ref().map(|e| e.to_string()),
                    user_id: properties.user_id().as_ref().map(|u| u.to_string()),
                    headers,
                }
            })
            .collect()
    }

    /// Waits until `n` dead letters arrived, and returns them.
    pub async fn wait_for_dead_letters(&self, n: usize) -> Vec<DeadLetter> {
        let start = std::time::Instant::now();
        let mut letters = vec![];
        while letters.len() < n {
            assert!(
                start.elapsed() < WAIT,
                "gave up waiting for {n} dead letters"
            );
            letters.extend(self.take_dead_letters().await);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        letters
    }

    /// Publishes `body` straight to the dead-letter exchange, as a dead letter of the service's
    /// own (or the broker's) would arrive there.
    pub async fn publish_dead_letter(
        &self,
        routing_key: &str,
        body: &[u8],
        properties: BasicProperties,
    ) {
        self.publish_to(
            &self.topology.dead_letter_exchange,
            routing_key,
            body,
            properties,
        )
        .await;
    }

    /// The parked dead letters, oldest first.
    pub async fn parked(&self) -> Vec<Parked> {
        sqlx::query_as(
            "SELECT id, message_id, event_id, event_type, routing_key, reason, reason_class, \
             body, headers, times, status FROM dead_letters ORDER BY first_dead_lettered_at, id",
        )
        .fetch_all(&self.db.pool)
        .await
        .expect("read the dead letters")
    }

    /// Waits until `n` dead letters are parked and the dead-letter queue is empty; returns them.
    pub async fn wait_for_parked(&self, n: usize) -> Vec<Parked> {
        eventually(&format!("{n} parked dead letters"), WAIT, || async {
            let parked = self.parked().await;
            (parked.len() >= n && self.ready_count(&self.topology.dead_letter_queue).await == 0)
                .then_some(parked)
        })
        .await
    }

    /// Waits until the dead letters match `done`; returns them.
    pub async fn wait_for_parked_where(
        &self,
        what: &str,
        done: impl Fn(&[Parked]) -> bool,
    ) -> Vec<Parked> {
        eventually(what, WAIT, || async {
            let parked = self.parked().await;
            done(&parked).then_some(parked)
        })
        .await
    }

    pub async fn history_kinds(&self, order: Uuid) -> Vec<(i64, String)> {
        sqlx::query_as(
            "SELECT version, kind FROM order_transitions WHERE order_id = $1 ORDER BY version",
        )
        .bind(order)
        .fetch_all(&self.db.pool)
        .await
        .expect("read history")
    }

    pub async fn outbox_types(&self, order: Uuid) -> Vec<String> {
        sqlx::query_scalar("SELECT event_type FROM outbox WHERE order_id = $1 ORDER BY id")
            .bind(order)
            .fetch_all(&self.db.pool)
            .await
            .expect("read outbox")
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

/// The service's binary, started by [`Harness::start_service`]; `kill -9` on drop.
/// A file in the temporary directory (a service's log), removed with this value, pass or fail.
pub struct TempFile(pub PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub struct ServiceProcess {
    child: Option<Child>,
    pub http_port: u16,
}

impl ServiceProcess {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a running service").id()
    }

    /// SIGKILL: no shutdown, no acknowledgement.
    pub fn kill(mut self) {
        self.kill_now();
    }

    /// SIGTERM, as an orchestrator stops it; returns once the process has exited.
    pub async fn terminate(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("a running service");
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "SIGTERM sent");
        tokio::task::spawn_blocking(move || child.wait())
            .await
            .expect("the wait")
            .expect("the exit status")
    }

    /// Waits until the service answers `/health/ready` with 200.
    pub async fn wait_ready(&self) {
        eventually("the service to be ready", WAIT, || async {
            matches!(
                order_service_testkit::http::get(self.http_port, "/health/ready").await,
                Ok((200, _))
            )
            .then_some(())
        })
        .await;
    }

    fn kill_now(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        self.kill_now();
    }
}

/// A JSON POST with `key` as its Idempotency-Key and more `headers`.
fn post_request(path: &str, key: &str, body: Value, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::post(path)
        .header("content-type", "application/json")
        .header("idempotency-key", key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(Body::from(body.to_string()))
        .expect("a request")
}

/// A message the relay published.
#[derive(Debug, Clone)]
pub struct Published {
    pub routing_key: String,
    pub message_id: Option<String>,
    pub content_type: Option<String>,
    pub delivery_mode: Option<u8>,
    pub headers: FieldTable,
    pub body: Value,
}

/// Relay settings for tests: a short poll so fallbacks are quick; default retention and stall
/// bound.
pub fn relay_config() -> RelayConfig {
    RelayConfig {
        batch_size: 256,
        poll_ms: 200,
        retention_hours: 168,
        prune_interval_secs: 3600,
        stalled_after_secs: order_service::config::DEFAULT_OUTBOX_STALLED_AFTER_SECS,
    }
}

/// A parked dead letter's row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Parked {
    pub id: Uuid,
    pub message_id: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub routing_key: String,
    pub reason: String,
    pub reason_class: String,
    pub body: Vec<u8>,
    pub headers: Value,
    pub times: i32,
    pub status: String,
}

pub struct DeadLetter {
    pub body: Vec<u8>,
    pub reason: String,
    pub message_id: Option<String>,
    pub expiration: Option<String>,
    pub user_id: Option<String>,
    pub headers: FieldTable,
}

pub fn envelope(event_id: &str, event_type: &str, data: Value) -> Value {
    json!({"event_id": event_id, "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
}
