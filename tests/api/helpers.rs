#![allow(dead_code)] // each suite uses its own subset of the harness
//! The test harness: each test gets its own freshly migrated database (dropped when the test
//! ends, pass or fail) and drives the real router in-process, one helper per endpoint.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::sync::{Mutex, MutexGuard};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use uuid::Uuid;

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use order_service::amqp::envelope::INBOUND_TYPES;
use order_service::amqp::parked::dead_letter_of;
use order_service::app::App;
use order_service::auth::{AuthMode, ClientRegistry, TokenDigest};
use order_service::config::{DEFAULT_AMQP_DELIVERY_LIMIT, DEFAULT_INBOUND_EXCHANGE};
use order_service::domain::ReplayRoutes;
use order_service::http::{self, ApiState, ConnectionLimits, HttpSettings};
use order_service::{store, telemetry};

pub use order_service_testkit::ADMIN_URL;
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{TestDb, eventually};

pub struct TestApp {
    pub router: Router,
    /// A pool of the test's database, straight to Postgres (the router's may go through a
    /// proxy: [`TestApp::spawn_behind_proxy`]).
    pub pool: PgPool,
    /// The test's database; dropping it drops the database.
    pub db: TestDb,
}

/// A router driven in-process, without a database of its own.
pub struct InProcess(pub Router);

impl InProcess {
    pub async fn request(&self, request: Request<Body>) -> TestResponse {
        send(&self.0, request).await
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        self.request(
            Request::get(path)
                .body(Body::empty())
                .expect("valid request"),
        )
        .await
    }
}

async fn send(router: &Router, request: Request<Body>) -> TestResponse {
    let response = router
        .clone()
        .oneshot(request)
        .await
        .expect("the router is infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("read body")
        .to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    TestResponse {
        status,
        headers,
        body,
        text,
    }
}

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of one directive of the Content-Security-Policy header.
    #[track_caller]
    pub fn csp_directive(&self, name: &str) -> String {
        let policy = self
            .header("content-security-policy")
            .expect("a Content-Security-Policy");
        policy
            .split(';')
            .map(str::trim)
            .find_map(|d| d.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {policy}"))
            .trim()
            .to_owned()
    }

    pub fn is_replay(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }

    /// Asserts the response is a problem+json document with this status, and returns it.
    #[track_caller]
    pub fn problem(&self, status: StatusCode) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "body: {}",
            self.text
        );
        assert_eq!(self.body["status"], status.as_u16());
        assert!(self.body["type"].is_string() && self.body["title"].is_string());
        assert!(self.body["detail"].is_string());
        &self.body
    }
}

/// The application as the service builds it, over `pool`: replaying to the default inbound
/// exchange under the routing keys its inbox is bound to.
pub fn app_over(pool: PgPool) -> App {
    App::new(pool).replaying_to(DEFAULT_INBOUND_EXCHANGE, ReplayRoutes::new(INBOUND_TYPES))
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with_lock_timeout(order_service::config::DEFAULT_LOCK_TIMEOUT).await
    }

    pub async fn spawn_with_lock_timeout(lock_timeout: Duration) -> Self {
        // 64 concurrent requests need as many connections; `connection_heavy()` keeps two such
        // tests from running at once.
        let db = TestDb::create_with_pool(lock_timeout, 70).await;
        let pool = db.pool.clone();
        let state = ApiState {
            app: app_over(pool.clone()),
            metrics: telemetry::metrics(),
            readiness: Default::default(),
        };
        Self {
            router: http::router(state),
            pool,
            db,
        }
    }

    /// A test app whose router reaches its database through a proxy the test can cut (at a
    /// commit, say); [`TestApp::pool`] and the helpers' reads do not go through it.
    pub async fn spawn_behind_proxy() -> (Self, Proxy) {
        let lock_timeout = order_service::config::DEFAULT_LOCK_TIMEOUT;
        let db = TestDb::create_with_pool(lock_timeout, 4).await;
        let proxy = Proxy::postgres(SocketAddr::from(([127, 0, 0, 1], 5432))).await;
        let url = format!(
            "postgres://postgres@127.0.0.1:{}/{}?sslmode=disable",
            proxy.port, db.name
        );
        let options = store::connect_options(&url, lock_timeout).expect("valid url");
        let state = ApiState {
            app: app_over(store::pool(options, 4)),
            metrics: telemetry::metrics(),
            readiness: Default::default(),
        };
        let app = Self {
            router: http::router(state),
            pool: db.pool.clone(),
            db,
        };
        (app, proxy)
    }

    /// A test app whose router enforces authentication for these clients, each
    /// `(id, token, scopes)`.
    pub async fn spawn_with_clients(clients: &[(&str, &str, &str)]) -> Self {
        let config: Vec<String> = clients
            .iter()
            .map(|(id, token, scopes)| format!("{id}:{}:{scopes}", TokenDigest::of(token).to_hex()))
            .collect();
        let clients = ClientRegistry::parse(&config.join(";"), "test").unwrap();
        let mut app = Self::spawn().await;
        app.reroute(HttpSettings {
            auth: AuthMode::Enforced(clients),
            ..HttpSettings::default()
        });
        app
    }

    /// Serves this app's database through a router built with `settings`.
    pub fn reroute(&mut self, settings: HttpSettings) {
        self.router = http::router_with(
            ApiState {
                app: app_over(self.pool.clone()),
                metrics: telemetry::metrics(),
                readiness: Default::default(),
            },
            settings,
        );
    }

    pub async fn request(&self, request: Request<Body>) -> TestResponse {
        send(&self.router, request).await
    }

    /// Parks a dead letter as the dead-letter consumer would receive it from the service: with
    /// `reason` as its `x-error-reason`, the service's other bookkeeping headers and a
    /// `traceparent` of the publisher's; returns its id.
    pub async fn park(
        &self,
        routing_key: &str,
        message_id: Option<&str>,
        body: &[u8],
        reason: &str,
    ) -> Uuid {
        let mut headers = FieldTable::default();
        for (key, value) in [
            ("x-error-reason", AMQPValue::LongString(reason.into())),
            ("x-attempt", AMQPValue::LongUInt(1)),
            (
                "x-original-routing-key",
                AMQPValue::LongString(routing_key.into()),
            ),
            ("traceparent", AMQPValue::LongString(TRACEPARENT.into())),
        ] {
            headers.insert(key.into(), value);
        }
        let mut properties = BasicProperties::default().with_headers(headers);
        if let Some(id) = message_id {
            properties = properties.with_message_id(id.into());
        }
        let letter = dead_letter_of(routing_key, &properties, body, DEFAULT_AMQP_DELIVERY_LIMIT);
        App::new(self.pool.clone())
            .park(&letter)
            .await
            .expect("park a dead letter")
            .as_uuid()
    }

    pub async fn get(&self, path: &str) -> TestResponse {
        self.request(
            Request::get(path)
                .body(Body::empty())
                .expect("valid request"),
        )
        .await
    }

    /// A POST with a JSON body and, if given, an Idempotency-Key and extra headers.
    pub async fn post_with(
        &self,
        path: &str,
        key: Option<&str>,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> TestResponse {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(path)
            .header("content-type", "application/json");
        if let Some(key) = key {
            builder = builder.header("idempotency-key", key);
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        self.request(
            builder
                .body(Body::from(body.to_string()))
                .expect("valid request"),
        )
        .await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> TestResponse {
        self.post_with(path, Some(key), &[], body).await
    }

    pub async fn place_order(&self, key: &str, body: &Value) -> TestResponse {
        self.post("/v1/orders", key, body).await
    }

    /// Places a EUR order of `amount` and returns its id.
    pub async fn placed_order(&self, amount: i64) -> Uuid {
        let response = self
            .place_order(
                &unique_key(),
                &json!({"customer_id": "c-1", "amount_minor": amount, "currency": "EUR"}),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response.body["id"].as_str().unwrap().parse().unwrap()
    }

    pub async fn pay(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/payments"), key, body)
            .await
    }

    /// Records a EUR payment with a fresh key and transfer id; asserts 201.
    pub async fn paid(&self, order: Uuid, amount: i64) -> TestResponse {
        let response = self
            .pay(
                order,
                &unique_key(),
                &json!({"transfer_id": unique_key(), "amount_minor": amount, "currency": "EUR"}),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }

    /// Records a EUR payment under this transfer id with a fresh key; asserts 201.
    pub async fn paid_with(&self, order: Uuid, transfer_id: &str, amount: i64) -> TestResponse {
        let response = self
            .pay(
                order,
                &unique_key(),
                &payment_body(transfer_id, amount, "EUR"),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }

    pub async fn ship(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/ship"), key, body)
            .await
    }

    pub async fn cancel(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/cancel"), key, body)
            .await
    }

    /// Ships with a fresh key; asserts 200.
    pub async fn shipped(&self, order: Uuid, carrier: &str, tracking: &str) -> TestResponse {
        let response = self
            .ship(order, &unique_key(), &shipment_body(carrier, tracking))
            .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        response
    }

    /// Cancels with a fresh key; asserts 200.
    pub async fn cancelled(&self, order: Uuid, reason: &str) -> TestResponse {
        let response = self
            .cancel(order, &unique_key(), &json!({ "reason": reason }))
            .await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        response
    }

    pub async fn order(&self, order: Uuid) -> TestResponse {
        self.get(&format!("/v1/orders/{order}")).await
    }

    pub async fn history(&self, order: Uuid) -> Vec<Value> {
        let response = self.get(&format!("/v1/orders/{order}/history")).await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        response.body["items"].as_array().unwrap().clone()
    }

    /// `SELECT count(*)` of a whole table.
    pub async fn count(&self, table: &str) -> i64 {
        self.db.count(table).await
    }

    /// Rows of every table, to prove a rejected request changed nothing.
    pub async fn snapshot(&self) -> [i64; 4] {
        [
            self.count("orders").await,
            self.count("transfers").await,
            self.count("order_transitions").await,
            self.count("outbox").await,
        ]
    }

    /// Places a EUR order of `amount` and pays it in full; returns its id (the order is at
    /// version 2, PAID).
    pub async fn paid_order(&self, amount: i64) -> Uuid {
        let id = self.placed_order(amount).await;
        self.paid(id, amount).await;
        id
    }

    /// The order's ledger as the API lists it.
    pub async fn ledger(&self, order: Uuid) -> Vec<Value> {
        let response = self.get(&format!("/v1/orders/{order}/payments")).await;
        assert_eq!(response.status, StatusCode::OK, "{}", response.text);
        assert!(response.body["next"].is_null(), "{}", response.text);
        response.body["items"].as_array().unwrap().clone()
    }

    /// The order's row as stored.
    pub async fn row(&self, order: Uuid) -> OrderRow {
        sqlx::query_as(
            "SELECT status, version, paid_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("read the order row")
    }

    /// The order's ledger rows as stored: `(transfer_id, amount_minor, currency, source)`.
    pub async fn transfers(&self, order: Uuid) -> Vec<(String, i64, String, String)> {
        sqlx::query_as(
            "SELECT transfer_id, amount_minor, currency, source FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.pool)
        .await
        .expect("read the ledger")
    }

    /// The history, checked against invariant 1 (`docs/contract.md#invariant-1`): one entry per version
    /// `1..=version` of the stored order, each `from` the previous `to`, every status change a
    /// legal one, and no status entered twice.
    pub async fn checked_history(&self, order: Uuid) -> Vec<Value> {
        let version = self.row(order).await.version;
        let history = self.history(order).await;
        assert_history_is_contiguous(&history, version);
        history
    }

    pub async fn refund(&self, order: Uuid, key: &str, body: &Value) -> TestResponse {
        self.post(&format!("/v1/orders/{order}/refunds"), key, body)
            .await
    }

    /// Records a EUR refund under this refund id with a fresh key; asserts 201.
    pub async fn refunded(&self, order: Uuid, refund_id: &str, amount: i64) -> TestResponse {
        let response = self
            .refund(order, &unique_key(), &refund_body(refund_id, amount, "EUR"))
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        response
    }

    /// The order's money as stored, checked against the ledger: `paid_minor` and
    /// `refunded_minor` must equal the sums of its incoming and outgoing rows.
    pub async fn checked_money(&self, order: Uuid) -> MoneyRow {
        let money: MoneyRow = sqlx::query_as(
            "SELECT paid_minor, refunded_minor, refund_required FROM orders WHERE id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("read the order's money");
        let (paid_in, refunded_out): (i64, i64) = sqlx::query_as(
            "SELECT COALESCE(sum(amount_minor) FILTER (WHERE direction = 'in'), 0)::bigint, \
                    COALESCE(sum(amount_minor) FILTER (WHERE direction = 'out'), 0)::bigint \
             FROM transfers WHERE order_id = $1",
        )
        .bind(order)
        .fetch_one(&self.pool)
        .await
        .expect("sum the ledger");
        assert_eq!(
            (money.paid_minor, money.refunded_minor),
            (paid_in, refunded_out),
            "the order row disagrees with its ledger"
        );
        money
    }

    /// The order's ledger rows as stored, with their direction:
    /// `(transfer_id, direction, amount_minor)`, oldest first.
    pub async fn directed_transfers(&self, order: Uuid) -> Vec<(String, String, i64)> {
        sqlx::query_as(
            "SELECT transfer_id, direction, amount_minor FROM transfers \
             WHERE order_id = $1 ORDER BY received_at, transfer_id",
        )
        .bind(order)
        .fetch_all(&self.pool)
        .await
        .expect("read the ledger")
    }

    /// The event types in the outbox for one order, in insertion order.
    pub async fn outbox_types(&self, order: Uuid) -> Vec<String> {
        sqlx::query_scalar("SELECT event_type FROM outbox WHERE order_id = $1 ORDER BY id")
            .bind(order)
            .fetch_all(&self.pool)
            .await
            .expect("read outbox")
    }

    /// Waits until `n` sessions of this test's database are blocked on a lock: requests queued
    /// behind a row or key that another transaction holds.
    pub async fn wait_for_lock_waits(&self, n: i64) {
        eventually(
            &format!("{n} sessions to wait on a lock"),
            Duration::from_secs(10),
            || async {
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .fetch_one(&self.pool)
                .await
                .expect("read pg_stat_activity");
                (waiting >= n).then_some(())
            },
        )
        .await;
    }
}

/// An order row: `status`, `version`, `paid_minor`, `refund_required`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderRow {
    pub status: String,
    pub version: i64,
    pub paid_minor: i64,
    pub refund_required: bool,
}

/// An order's money as stored: `paid_minor`, `refunded_minor`, `refund_required`.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MoneyRow {
    pub paid_minor: i64,
    pub refunded_minor: i64,
    pub refund_required: bool,
}

/// See [`TestApp::checked_history`].
#[track_caller]
pub fn assert_history_is_contiguous(history: &[Value], version: i64) {
    let versions: Vec<i64> = history
        .iter()
        .map(|entry| entry["version"].as_i64().expect("a version"))
        .collect();
    assert_eq!(versions, (1..=version).collect::<Vec<_>>(), "{history:#?}");
    assert!(history[0]["from"].is_null(), "{history:#?}");
    for pair in history.windows(2) {
        assert_eq!(pair[1]["from"], pair[0]["to"], "{history:#?}");
    }
    let legal = [
        (Value::Null, "PENDING_PAYMENT"),
        (json!("PENDING_PAYMENT"), "PAID"),
        (json!("PENDING_PAYMENT"), "CANCELLED"),
        (json!("PAID"), "SHIPPED"),
    ];
    let mut entered = HashSet::new();
    for entry in history.iter().filter(|e| e["from"] != e["to"]) {
        let to = entry["to"].as_str().expect("a status");
        assert!(
            legal
                .iter()
                .any(|(from, t)| *from == entry["from"] && *t == to),
            "illegal change {} -> {to}: {history:#?}",
            entry["from"]
        );
        assert!(entered.insert(to), "{to} entered twice: {history:#?}");
    }
}

/// A POST built byte by byte: header values may be anything the HTTP layer lets through, and the
/// body is sent exactly as given (no content type unless one is among `headers`).
pub fn raw_post(path: &str, headers: &[(&str, &[u8])], body: impl Into<Body>) -> Request<Body> {
    let mut builder = Request::builder().method(Method::POST).uri(path);
    for (name, value) in headers {
        builder = builder.header(
            *name,
            HeaderValue::from_bytes(value).expect("a header value the HTTP layer accepts"),
        );
    }
    builder.body(body.into()).expect("valid request")
}

/// A raw JSON POST with a fresh Idempotency-Key.
pub fn json_post(path: &str, body: impl Into<Body>) -> Request<Body> {
    raw_post(
        path,
        &[
            ("content-type", b"application/json"),
            ("idempotency-key", unique_key().as_bytes()),
        ],
        body,
    )
}

/// `router` served over TCP on a free loopback port, as the service serves it, until the token
/// is cancelled: its address, the token, and the server's task.
pub async fn serve_tcp(
    router: Router,
    limits: ConnectionLimits,
) -> (SocketAddr, CancellationToken, JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    let server = tokio::spawn(http::serve(listener, router, limits, async move {
        stop.cancelled().await
    }));
    (address, shutdown, server)
}

/// Serialises the tests that open dozens of connections at once: the local Postgres allows 100,
/// and two such tests side by side would exhaust them.
pub async fn connection_heavy() -> MutexGuard<'static, ()> {
    static HEAVY: Mutex<()> = Mutex::const_new(());
    HEAVY.lock().await
}

/// The publisher's trace header on the dead letters [`TestApp::park`] makes.
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// An inbound envelope's bytes.
pub fn envelope(event_id: &str, event_type: &str, data: Value) -> Vec<u8> {
    json!({"event_id": event_id, "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
        .to_string()
        .into_bytes()
}

pub fn unique_key() -> String {
    Uuid::new_v4().to_string()
}

pub fn order_body(customer: &str, amount: i64, currency: &str) -> Value {
    json!({"customer_id": customer, "amount_minor": amount, "currency": currency})
}

pub fn payment_body(transfer_id: &str, amount: i64, currency: &str) -> Value {
    json!({"transfer_id": transfer_id, "amount_minor": amount, "currency": currency})
}

pub fn shipment_body(carrier: &str, tracking: &str) -> Value {
    json!({"carrier": carrier, "tracking_number": tracking})
}

pub fn refund_body(refund_id: &str, amount: i64, currency: &str) -> Value {
    json!({"refund_id": refund_id, "amount_minor": amount, "currency": currency})
}
