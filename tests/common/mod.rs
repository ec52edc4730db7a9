//! Shared by every integration suite: a database of its own per test, dropped when the test
//! ends (pass or fail), and a wait helper.
#![allow(dead_code)] // each suite uses its own subset

use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, Executor, PgConnection, PgPool};
use uuid::Uuid;

use order_service::config::AmqpConfig;
use order_service::store;

pub mod proxy;

pub const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";

/// A freshly created and migrated database.
pub struct TestDb {
    pub pool: PgPool,
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// A database with a pool of up to `max_connections`. Tests run two at a time and the
    /// server allows 100 connections: the pools of two tests must fit, with room to spare for
    /// the cleanup's admin connection (a blocked test keeps its pool open while it is dropped).
    pub async fn create_with_pool(lock_timeout: Duration, max_connections: u32) -> Self {
        let name = format!("order_service_test_{}", Uuid::new_v4().simple());
        let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        let options = store::connect_options(&url, lock_timeout).expect("valid url");
        store::prepare_database(&options)
            .await
            .expect("create and migrate the test database");
        let pool = store::pool(options, max_connections);
        Self { pool, name, url }
    }

    /// A database with a pool of 24 connections.
    pub async fn create(lock_timeout: Duration) -> Self {
        Self::create_with_pool(lock_timeout, 24).await
    }

    /// `SELECT count(*)` of a whole table.
    pub async fn count(&self, table: &str) -> i64 {
        let sql = format!("SELECT count(*) FROM {table}");
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .fetch_one(&self.pool)
            .await
            .expect("count rows")
    }
}

impl Drop for TestDb {
    /// Drops the database even when the test panicked. The pool belongs to the test's runtime,
    /// which this blocks, so it is not awaited: `WITH (FORCE)` ends its connections server-side.
    fn drop(&mut self) {
        let name = self.name.clone();
        block_on_detached(async move {
            let options: PgConnectOptions = ADMIN_URL.parse().expect("admin url");
            // Retried for up to 30 s: the server may be at max_connections until a test running
            // beside this one ends, and a pool
            // still reconnecting (say, behind a test's proxy) can slip a connection in between
            // FORCE's terminations and the drop.
            for _ in 0..120 {
                if let Ok(mut admin) = PgConnection::connect_with(&options).await {
                    let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                    if admin.execute(sqlx::AssertSqlSafe(sql)).await.is_ok() {
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        });
    }
}

/// Runs `work` to completion on a runtime of its own, in a thread of its own: for cleanup in
/// `Drop`, which may run inside (and block) the test's runtime.
pub fn block_on_detached(work: impl Future<Output = ()> + Send + 'static) {
    let _ = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(work);
    })
    .join();
}

/// The AMQP settings of DESIGN.md §3 with every name under `prefix`, so that a test (or a chaos
/// run) owns its exchanges and queues.
pub fn amqp_config(prefix: &str) -> AmqpConfig {
    AmqpConfig {
        enabled: true,
        inbound_exchange: format!("{prefix}.commerce.events"),
        inbox_queue: format!("{prefix}.inbox"),
        dead_letter_exchange: format!("{prefix}.dlx"),
        dead_letter_queue: format!("{prefix}.dead-letter"),
        outbound_exchange: format!("{prefix}.order-events"),
        prefetch: 64,
        max_attempts: 10,
        delivery_limit: order_service::config::DEFAULT_AMQP_DELIVERY_LIMIT,
        retry_base_ms: 1_000,
        retry_max_ms: 60_000,
    }
}

/// Polls `check` until it returns `Some`, or panics with `what` after `limit`. A bound on waiting
/// for asynchronous work, not a performance assertion.
pub async fn eventually<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < limit,
            "gave up waiting for {what} after {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
