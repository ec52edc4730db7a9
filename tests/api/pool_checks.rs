//! The checks of a pooled connection (docs/architecture.md "Connection checks"): a connection in
//! steady use goes back and forth between the pool and its callers without a ping of its own
//! (sqlx pinged it at every acquire and every release: two round trips per command), yet a dead
//! one is still never handed out twice:
//! - one that waited in the pool for [`store::CHECK_IDLE_AFTER`] is pinged before it is handed
//!   out, and replaced if it does not answer (`store::pool`);
//! - one given back with an answer still due (its statement failed or was dropped midway) reads
//!   that answer first, and is dropped if its socket broke; a transaction dropped unfinished is
//!   rolled back then, not at the connection's next use (the patched release in
//!   `vendor/sqlx-core`).

use std::net::SocketAddr;
use std::time::Duration;

use sqlx::PgPool;

use order_service::{config, store};
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{TestDb, eventually};

/// How long a test waits for what must happen soon (a rollback reaching Postgres): patience
/// for a loaded machine, not a measure of speed.
const PATIENCE: Duration = Duration::from_secs(15);

#[tokio::test]
async fn a_connection_in_steady_use_is_not_pinged_at_each_acquire_and_release() {
    let db = TestDb::create(config::DEFAULT_LOCK_TIMEOUT).await;
    let (pool, proxy) = pool_behind_proxy(&db).await;
    let uses = 20;

    for _ in 0..uses {
        let mut conn = store::acquire(&pool).await.expect("a connection");
        sqlx::query("SELECT 1")
            .execute(&mut *conn)
            .await
            .expect("a statement");
    }
    // The last connection given back is taken again: its release is over.
    drop(store::acquire(&pool).await.expect("a connection"));

    // sqlx's own checks sent two per use; only a connection that waited a second is pinged now
    // (this loop does not wait, but a loaded machine might stall it).
    let pings = proxy.pings();
    assert!(pings < uses, "{pings} pings for {uses} uses");
}

#[tokio::test]
async fn a_connection_that_waited_in_the_pool_is_pinged_once_before_it_is_handed_out() {
    let db = TestDb::create(config::DEFAULT_LOCK_TIMEOUT).await;
    let (pool, proxy) = pool_behind_proxy(&db).await;
    let first = backend_pid(&pool).await;

    // A fixed delay is the point: the connection must sit idle past `CHECK_IDLE_AFTER`.
    tokio::time::sleep(store::CHECK_IDLE_AFTER + Duration::from_millis(200)).await;
    let pings = proxy.pings();
    let second = backend_pid(&pool).await;
    // Given back and taken again: its release is over.
    drop(store::acquire(&pool).await.expect("a connection"));

    assert_eq!(first, second, "the connection answered, and was kept");
    assert_eq!(proxy.pings(), pings + 1);
}

#[tokio::test]
async fn a_connection_its_server_let_go_while_it_waited_is_replaced() {
    let db = TestDb::create(config::DEFAULT_LOCK_TIMEOUT).await;
    let pool = one_connection(&db);
    let first = backend_pid(&pool).await;

    terminate(&db, first).await;
    // A fixed delay is the point: the connection must sit idle past `CHECK_IDLE_AFTER`.
    tokio::time::sleep(store::CHECK_IDLE_AFTER + Duration::from_millis(200)).await;
    let second = backend_pid(&pool).await;

    assert_ne!(first, second, "a fresh connection, on a new backend");
}

#[tokio::test]
async fn a_connection_broken_during_a_statement_is_dropped_when_given_back() {
    let db = TestDb::create(config::DEFAULT_LOCK_TIMEOUT).await;
    let pool = one_connection(&db);
    let mut conn = store::acquire(&pool).await.expect("a connection");
    let first: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .expect("its backend");

    let (slept, ()) = tokio::join!(
        sqlx::query("SELECT pg_sleep(60)").execute(&mut *conn),
        async {
            wait_until_running(&db, first, "SELECT pg_sleep(60)").await;
            terminate(&db, first).await;
        },
    );
    assert!(slept.is_err(), "the statement's session was ended");
    drop(conn);
    // Taken again at once: no time to idle, so no ping before it is handed out.
    let second = backend_pid(&pool).await;

    assert_ne!(first, second);
}

#[tokio::test]
async fn a_transaction_dropped_unfinished_rolls_back_when_its_connection_is_given_back() {
    let db = TestDb::create(config::DEFAULT_LOCK_TIMEOUT).await;
    let pool = one_connection(&db);
    let key = 7_340_001_i64;
    let mut tx = store::begin(&pool).await.expect("a transaction");
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(key)
        .execute(&mut *tx)
        .await
        .expect("the lock");

    // Dropped: sqlx queues a ROLLBACK on the connection, which goes back to the pool. Nothing
    // uses the pool again: only its release can send the rollback.
    drop(tx);

    let admin = &db.pool;
    eventually(
        "the dropped transaction's lock to be free",
        PATIENCE,
        || async move {
            let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(key)
                .fetch_one(admin)
                .await
                .expect("the try");
            taken.then_some(())
        },
    )
    .await;
}

/// A pool of one connection to `db` through a proxy that counts the pings it carries.
async fn pool_behind_proxy(db: &TestDb) -> (PgPool, Proxy) {
    let proxy = Proxy::postgres(SocketAddr::from(([127, 0, 0, 1], 5432))).await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/{}?sslmode=disable",
        proxy.port, db.name
    );
    let options = store::connect_options(&url, config::DEFAULT_LOCK_TIMEOUT).expect("valid url");
    (store::pool(options, 1), proxy)
}

/// The service's pool over `db`, of one connection, so that each acquire gets the connection
/// the last one gave back.
fn one_connection(db: &TestDb) -> PgPool {
    let options = store::connect_options(&db.url, config::DEFAULT_LOCK_TIMEOUT).expect("valid url");
    store::pool(options, 1)
}

/// The backend of a connection of `pool`, asked on it.
async fn backend_pid(pool: &PgPool) -> i32 {
    let mut conn = store::acquire(pool).await.expect("a connection");
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&mut *conn)
        .await
        .expect("its backend")
}

/// Ends backend `pid` of `db` from another connection, as an administrator or a restart would.
async fn terminate(db: &TestDb, pid: i32) {
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&db.pool)
        .await
        .expect("terminate");
    assert!(ended, "backend {pid} was there to end");
}

/// Until backend `pid` runs `statement`.
async fn wait_until_running(db: &TestDb, pid: i32, statement: &str) {
    let admin = &db.pool;
    eventually("the statement to run", PATIENCE, || async move {
        let running: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query = $2 \
             AND state = 'active')",
        )
        .bind(pid)
        .bind(statement)
        .fetch_one(admin)
        .await
        .expect("pg_stat_activity");
        running.then_some(())
    })
    .await;
}
