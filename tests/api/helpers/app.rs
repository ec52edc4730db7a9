//! The application under test: each test gets its own freshly migrated database (dropped when
//! the test ends, pass or fail) and drives the real router over it in-process (or through a
//! proxy it can cut, or behind authentication), or serves it over TCP as the service does.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use serde_json::Value;
use sqlx::PgPool;
use tokio::sync::{Mutex, MutexGuard};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use order_service::amqp::inbound::INBOUND_TYPES;
use order_service::app::App;
use order_service::auth::{AuthMode, ClientRegistry, TokenDigest};
use order_service::config::DEFAULT_INBOUND_EXCHANGE;
use order_service::domain::ReplayRoutes;
use order_service::http::{self, ApiState, ConnectionLimits, HttpSettings};
use order_service::{store, telemetry};
use order_service_testkit::TestDb;
use order_service_testkit::proxy::Proxy;

use super::TestResponse;
use super::bodies::get_request;

/// A test's application: the router it drives, over a database of its own.
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
        self.request(get_request(path)).await
    }
}

/// Sends `request` through `router` in-process and reads the whole response.
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

/// The application as the service builds it, over `pool`: replaying to the default inbound
/// exchange under the routing keys its inbox is bound to.
fn app_over(pool: PgPool) -> App {
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
