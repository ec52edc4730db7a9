//! The model and Postgres agree: the counterexample the model finds for positions by
//! transaction id alone (tests/broken_variants.rs) replayed on a real server with two
//! connections. A batch's transaction takes its xid with a write to order 2, reads order 1; a
//! REST request (autocommit, a later xid) cancels order 1; the batch's guarded write of order 1
//! misses, it reads again and writes version 3. The relay's read then lists order 1's events as
//! the model predicts: v2 before v3 with `pos = greatest(own xid, orders.last_event_pos)`, v3
//! before v2 with `pos = own xid`.
//!
//! The tables are a scratch pair shaped like the service's `orders` and `outbox` (with the
//! relay's new `last_event_pos` and `pos`), in a database of the test's own, dropped at the end.

use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::{Connection, Executor, PgConnection};

const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

const SCHEMA: &str = "\
    DROP TABLE IF EXISTS outbox, orders; \
    CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, version bigint NOT NULL, \
        last_event_pos xid8 NOT NULL); \
    CREATE TABLE outbox (id bigint GENERATED ALWAYS AS IDENTITY (CACHE 1) PRIMARY KEY, \
        order_id bigint NOT NULL, order_version bigint NOT NULL, pos xid8 NOT NULL); \
    CREATE INDEX outbox_pos_idx ON outbox (pos, id); \
    INSERT INTO orders VALUES (1, 'PENDING_PAYMENT', 1, '0'), (2, 'PENDING_PAYMENT', 1, '0');";

/// Mirrors the `updated` and `events` parts of `store::order_changes::write`: the guarded UPDATE
/// (`status` and `version` as read), storing `greatest(last_event_pos, pg_current_xact_id())`,
/// and the outbox row taken from its RETURNING, so its identity comes after the row lock and its
/// `pos` is that greatest.
const WRITE_BY_GREATEST: &str = "\
    WITH updated AS (\
        UPDATE orders SET status = $2, version = version + 1, \
            last_event_pos = greatest(last_event_pos, pg_current_xact_id()) \
        WHERE id = $1 AND status = $3 AND version = $4 \
        RETURNING id, version, last_event_pos), \
    events AS (\
        INSERT INTO outbox (order_id, order_version, pos) \
        SELECT id, version, last_event_pos FROM updated RETURNING 1) \
    SELECT version FROM updated, (SELECT count(*) FROM events) AS e";

/// The same statement with the broken rule: `pos = pg_current_xact_id()`.
const WRITE_BY_OWN_XID: &str = "\
    WITH updated AS (\
        UPDATE orders SET status = $2, version = version + 1, \
            last_event_pos = greatest(last_event_pos, pg_current_xact_id()) \
        WHERE id = $1 AND status = $3 AND version = $4 \
        RETURNING id, version), \
    events AS (\
        INSERT INTO outbox (order_id, order_version, pos) \
        SELECT id, version, pg_current_xact_id() FROM updated RETURNING 1) \
    SELECT version FROM updated, (SELECT count(*) FROM events) AS e";

/// The relay's read: the committed rows below the horizon, in `(pos, id)` order.
const RELAY_READ: &str = "\
    SELECT order_version FROM outbox \
    WHERE order_id = $1 AND pos < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY pos, id";

/// A guarded write of `order` from `(status, version)` to `to`; the version written, if any.
async fn write(
    conn: &mut PgConnection,
    sql: &'static str,
    order: i64,
    to: &str,
    (status, version): (&str, i64),
) -> Option<i64> {
    sqlx::query_scalar(sql)
        .bind(order)
        .bind(to)
        .bind(status)
        .bind(version)
        .fetch_optional(conn)
        .await
        .expect("the guarded write")
}

async fn read(conn: &mut PgConnection, order: i64) -> (String, i64) {
    sqlx::query_as("SELECT status, version FROM orders WHERE id = $1")
        .bind(order)
        .fetch_one(conn)
        .await
        .expect("read the order")
}

async fn xid(conn: &mut PgConnection) -> i64 {
    sqlx::query_scalar("SELECT pg_current_xact_id()::text::bigint")
        .fetch_one(conn)
        .await
        .expect("the transaction id")
}

/// The model's trace on two connections, with `sql` as the guarded write; the versions of
/// order 1 in the order the relay reads them.
async fn replay(url: &str, sql: &'static str) -> Vec<i64> {
    let mut batch = PgConnection::connect(url).await.expect("connect");
    let mut rest = PgConnection::connect(url).await.expect("connect");
    batch.execute(SCHEMA).await.expect("the scratch tables");

    batch.execute("BEGIN").await.expect("begin");
    // Its first write, elsewhere, gives the batch's transaction its xid.
    assert_eq!(
        write(&mut batch, sql, 2, "PAID", ("PENDING_PAYMENT", 1)).await,
        Some(2)
    );
    let read_first = read(&mut batch, 1).await;
    assert_eq!(read_first, ("PENDING_PAYMENT".to_owned(), 1));
    // Meanwhile the REST request, in autocommit, cancels order 1 under a later xid.
    assert_eq!(
        write(&mut rest, sql, 1, "CANCELLED", ("PENDING_PAYMENT", 1)).await,
        Some(2)
    );
    let rest_xid: i64 =
        sqlx::query_scalar("SELECT pos::text::bigint FROM outbox WHERE order_id = 1")
            .fetch_one(&mut rest)
            .await
            .expect("the REST write's position");
    let batch_xid = xid(&mut batch).await;
    assert!(batch_xid < rest_xid, "the batch took its xid first");
    // The batch's write of order 1 misses its guard; it reads again and writes version 3.
    assert_eq!(
        write(&mut batch, sql, 1, "PAID", ("PENDING_PAYMENT", 1)).await,
        None
    );
    let (status, version) = read(&mut batch, 1).await;
    assert_eq!((status.as_str(), version), ("CANCELLED", 2));
    assert_eq!(
        write(&mut batch, sql, 1, "CANCELLED", ("CANCELLED", 2)).await,
        Some(3)
    );
    batch.execute("COMMIT").await.expect("commit");

    let published = sqlx::query_scalar(RELAY_READ)
        .bind(1_i64)
        .fetch_all(&mut rest)
        .await
        .expect("the relay's read");
    batch.close().await.expect("close");
    rest.close().await.expect("close");
    published
}

#[tokio::test]
async fn postgres_publishes_in_the_order_the_model_predicts_for_each_position_rule() {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is past 1970");
    // The test kit's prefix and creation time, so a killed run's database is dropped by the next.
    let name = format!(
        "order_service_test_{}_{:08x}model",
        nanos.as_secs(),
        nanos.subsec_nanos() ^ std::process::id()
    );
    let mut admin = PgConnection::connect(ADMIN_URL)
        .await
        .expect("connect as admin");
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
        .await
        .expect("create the test database");
    let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
    let outcome = tokio::spawn(async move {
        (
            replay(&url, WRITE_BY_GREATEST).await,
            replay(&url, WRITE_BY_OWN_XID).await,
        )
    })
    .await;
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE \"{name}\" WITH (FORCE)"
        )))
        .await
        .expect("drop the test database");
    let (by_greatest, by_own_xid) = match outcome {
        Ok(orders) => orders,
        Err(failed) => std::panic::resume_unwind(failed.into_panic()),
    };
    println!("pos = greatest(…): {by_greatest:?}; pos = own xid: {by_own_xid:?}");
    assert_eq!(by_greatest, [2, 3], "greatest(…) publishes version order");
    assert_eq!(
        by_own_xid,
        [3, 2],
        "own xid publishes v3 before v2, as the model predicts"
    );
}
