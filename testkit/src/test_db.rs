//! A database of its own per test, created and migrated for it and dropped when the test ends
//! (pass or fail).
//!
//! Why a helper rather than `#[sqlx::test]`: that macro keeps the database of a failed test,
//! needs `DATABASE_URL` in the test's environment and hands the test a pool of its own sizing,
//! whereas our tests build the application over a pool sized for them (up to 70 connections)
//! and need the database's URL (to reach it through a proxy, or to lock rows from a connection
//! of their own). The helper is three small pieces:
//! - [`TestDb::create`] makes `order_service_test_<unix seconds>_<random>` and applies the
//!   service's migrations ([`store::migrate`]). Its admin work, like the drop's, goes through
//!   [`patient`] connections: the server may be full for a moment.
//! - Dropping the [`TestDb`] drops the database, pass or fail: one
//!   `DROP DATABASE … WITH (FORCE)` on a thread and runtime of its own, because the drop may run
//!   inside the test's runtime (even while a panic unwinds), which cannot drive I/O meanwhile.
//!   FORCE ends the test's connections server-side, and a pool reconnecting at that moment
//!   cannot slip in: a new session waits on the lock the drop holds, then finds no database.
//! - A run that is killed never reaches its drops: the first test of the next run drops what such
//!   a run left behind (see [`drop_leftovers`]).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::postgres::PgPoolOptions;
use sqlx::{Executor, PgPool};
use tokio::sync::OnceCell;

use order_service::store;

use crate::block_on_detached;

/// The shared server's `postgres` database, for administrative connections.
pub const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Every test database's name starts with this, followed by its creation time.
const PREFIX: &str = "order_service_test_";

/// A test database older than this with nobody connected was left by a killed run. No test runs
/// this long, so a database still being set up elsewhere is never mistaken for one.
const LEFTOVER_AGE: Duration = Duration::from_secs(30 * 60);

/// A freshly created and migrated database, dropped with this value.
pub struct TestDb {
    pub pool: PgPool,
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// A database with a pool of up to `max_connections`. Tests run in parallel and the server
    /// allows 100 connections: the pools of the tests running side by side must fit.
    pub async fn create_with_pool(lock_timeout: Duration, max_connections: u32) -> Self {
        let db = Self::create_unmigrated(lock_timeout, max_connections).await;
        let mut connection = db.migrator().await;
        store::migrate(&mut connection)
            .await
            .expect("migrate the test database");
        db
    }

    /// A database migrated only up to the migration file named `first_missing` (excluded): the
    /// schema an earlier release left, for tests of an upgrade. `store::migrate` applies the rest.
    pub async fn create_before_migration(first_missing: &str) -> Self {
        let db = Self::create_unmigrated(Duration::from_secs(5), 4).await;
        let earlier = std::env::temp_dir().join(format!("{}-migrations", db.name));
        std::fs::create_dir_all(&earlier).expect("a directory for the earlier migrations");
        // The service's migrations, at the root of the workspace this kit is a member of.
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../migrations");
        for entry in std::fs::read_dir(&source).expect("the migrations directory") {
            let path = entry.expect("a migration file").path();
            let name = path
                .file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            if name.as_str() < first_missing {
                std::fs::copy(&path, earlier.join(&name)).expect("copy a migration");
            }
        }
        let migrator = sqlx::migrate::Migrator::new(earlier.as_path())
            .await
            .expect("the earlier migrations");
        let mut connection = db.migrator().await;
        migrator
            .run(&mut *connection)
            .await
            .expect("apply the earlier migrations");
        std::fs::remove_dir_all(&earlier).expect("remove the copied migrations");
        db
    }

    /// A database with no schema at all: for a test in which a release of the service (an
    /// earlier one, say) creates it as it would in production.
    pub async fn create_empty() -> Self {
        Self::create_unmigrated(Duration::from_secs(5), 4).await
    }

    /// A new, empty database; from the moment it exists, dropping the value drops it.
    async fn create_unmigrated(lock_timeout: Duration, max_connections: u32) -> Self {
        static LEFTOVERS_DROPPED: OnceCell<()> = OnceCell::const_new();
        LEFTOVERS_DROPPED.get_or_init(drop_leftovers).await;

        let random = getrandom::u64().expect("randomness");
        let name = format!("{PREFIX}{}_{random:016x}", unix_seconds());
        let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
        let admin = patient(ADMIN_URL).await.expect("connect as admin");
        let create = format!("CREATE DATABASE \"{name}\"");
        admin
            .execute(sqlx::AssertSqlSafe(create))
            .await
            .expect("create the test database");
        admin.close().await;
        let options = store::connect_options(&url, lock_timeout).expect("valid url");
        Self {
            pool: store::pool(options, max_connections),
            name,
            url,
        }
    }

    /// A single connection to this database, for migrating it.
    async fn migrator(&self) -> sqlx::pool::PoolConnection<sqlx::Postgres> {
        let pool = patient(&self.url)
            .await
            .expect("connect to the test database");
        pool.acquire().await.expect("a connection")
    }

    /// A database with a pool of 24 connections.
    pub async fn create(lock_timeout: Duration) -> Self {
        Self::create_with_pool(lock_timeout, 24).await
    }

    /// The database's URL through a proxy listening on `port` (instead of Postgres itself).
    pub fn url_through(&self, port: u16) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/{}", self.name)
    }

    /// Seeds the ledger of `order` (a placed EUR order) straight into the database with `count`
    /// payments of 10^12, the largest amount, recorded through `source` (`api` or `amqp`), and
    /// its `paid_minor` to match, `PAID`: what hours of requests would take, for a test of what
    /// an order near the money bound does. The history is not written. Returns the sum paid.
    pub async fn seed_largest_payments(&self, order: uuid::Uuid, count: i64, source: &str) -> i64 {
        let paid = count * 1_000_000_000_000;
        sqlx::query(
            "INSERT INTO transfers (transfer_id, order_id, amount_minor, currency, source) \
             SELECT 'seed-' || n, $1, 1000000000000, 'EUR', $3 FROM generate_series(1, $2) AS n",
        )
        .bind(order)
        .bind(count)
        .bind(source)
        .execute(&self.pool)
        .await
        .expect("seed the ledger");
        sqlx::query("UPDATE orders SET paid_minor = $2, status = 'PAID' WHERE id = $1")
            .bind(order)
            .bind(paid)
            .execute(&self.pool)
            .await
            .expect("seed the paid sum");
        paid
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
    /// Runs on a test's way out, pass or panic: see the module doc.
    fn drop(&mut self) {
        let name = self.name.clone();
        block_on_detached(async move {
            if let Err(error) = drop_database(&name).await {
                eprintln!("test database {name} not dropped ({error}); the next run drops it");
            }
        });
    }
}

/// A pool of one connection rather than a bare one: its connect waits out a server that is
/// momentarily at max_connections (sqlx retries "too many clients" until the acquire timeout),
/// as it may be while tests beside this one, or other suites on the machine, hold many.
async fn patient(url: &str) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(30))
        .connect(url)
        .await
}

async fn drop_database(name: &str) -> Result<(), sqlx::Error> {
    let admin = patient(ADMIN_URL).await?;
    let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
    let dropped = admin.execute(sqlx::AssertSqlSafe(sql)).await;
    admin.close().await;
    dropped?;
    Ok(())
}

/// Drops the test databases created more than [`LEFTOVER_AGE`] ago. Without FORCE, a database
/// someone is still connected to is refused and stays.
async fn drop_leftovers() {
    let Ok(admin) = patient(ADMIN_URL).await else {
        return;
    };
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT datname FROM pg_database WHERE starts_with(datname, 'order_service_test_')",
    )
    .fetch_all(&admin)
    .await
    .unwrap_or_default();
    for name in names {
        let created = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|seconds| seconds.parse::<u64>().ok());
        // Names without a creation time are not ours to judge.
        if created.is_some_and(|at| unix_seconds().saturating_sub(at) > LEFTOVER_AGE.as_secs()) {
            let sql = format!("DROP DATABASE IF EXISTS \"{name}\"");
            let _ = admin.execute(sqlx::AssertSqlSafe(sql)).await;
        }
    }
    admin.close().await;
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is past 1970")
        .as_secs()
}
