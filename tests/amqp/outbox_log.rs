//! The outbox as a log (docs/messaging.md "The outbox as a log"), its pitfalls each with a test:
//! an older transaction writing an order's next version, a transaction holding the horizon, the
//! relay's own transaction id, a database restored where transaction ids are lower, and the read's
//! plan on a large table; and the linger that lets batches grow with load.

use order_service::app::App;
use order_service::config::{DEFAULT_LOCK_TIMEOUT, RelayConfig};
use order_service::domain::{Decision, EventType, Shipment, Version};
use order_service::store::order_changes::{self, OrderWrite};
use order_service::store::outbox::{self, BatchRead, NewEvent, relay_mode};
use order_service::store::{self, StoreError};
use order_service::telemetry::TraceContext;
use uuid::Uuid;

use order_service_testkit::TestDb;
use order_service_testkit::private_postgres::PrivatePostgres;

use crate::helpers::{Harness, relay_config};
use crate::relay::{batch, cause, confirm_all, ids, pay, place};

/// The order's versions in the order the relay reads them.
async fn versions_as_read(h: &Harness) -> Vec<i64> {
    let read = batch(h, 100).await;
    let ids = ids(&read);
    let versions: Vec<i64> = sqlx::query_scalar(
        "SELECT order_version FROM outbox JOIN unnest($1::int8[]) WITH ORDINALITY AS r(id, n) \
         USING (id) ORDER BY r.n",
    )
    .bind(&ids)
    .fetch_all(&h.db.pool)
    .await
    .unwrap();
    read.finish(&ids, &[]).await.unwrap();
    versions
}

#[tokio::test]
async fn an_older_transaction_writing_an_orders_next_version_is_read_after_the_version_before() {
    let h = Harness::start().await;
    let order = place(&h.app, 100).await;
    // A takes its transaction id first, as a batch's lost-race round does with its first write.
    let mut a = h.db.pool.begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *a)
        .await
        .unwrap();
    // B, a newer transaction, pays: version 2.
    pay(&h.app, order, 100).await;
    // A reads the order as B left it and ships it: version 3, under its older transaction id.
    let (_, snapshot) = order_changes::read(&mut a, order, None, None)
        .await
        .unwrap();
    let paid = snapshot.order.unwrap();
    let shipment = Shipment::parse("DHL", "T-1").unwrap();
    let Decision::Apply(change) = paid.ship(&shipment).unwrap() else {
        panic!("the order ships")
    };
    let events = [NewEvent {
        event_id: Uuid::new_v4(),
        event_type: EventType::OrderShipped,
        payload: "{}".to_owned(),
    }];
    let write = OrderWrite {
        next: &change.next,
        expected: Some((change.from, change.from_version)),
        kind: change.kind,
        transfer: None,
        cause: &cause("ship"),
        events: &events,
        trace: &TraceContext::start(),
    };
    order_changes::write(&mut a, &write, None).await.unwrap();
    a.commit().await.unwrap();
    assert_eq!(change.next.version, Version::new(3).unwrap());

    let by_xid: Vec<i64> = sqlx::query_scalar(
        "SELECT order_version FROM outbox WHERE order_id = $1 ORDER BY xmin::text::int8, id",
    )
    .bind(order.as_uuid())
    .fetch_all(&h.db.pool)
    .await
    .unwrap();
    assert_eq!(
        by_xid,
        [1, 3, 2],
        "a cursor over transaction ids alone would publish version 3 before version 2"
    );
    assert_eq!(versions_as_read(&h).await, [1, 2, 3]);
}

#[tokio::test]
async fn a_transaction_open_in_another_database_holds_publishing_back_and_skips_nothing() {
    let h = Harness::start().await;
    let other = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let mut holder = other.pool.begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *holder)
        .await
        .unwrap();

    place(&h.app, 100).await;

    match outbox::read_batch(&h.db.pool, 10).await.unwrap() {
        BatchRead::Idle(horizon) => assert!(horizon.rows_behind, "the row waits behind"),
        BatchRead::Batch(_) => panic!("a row above the horizon was read"),
        BatchRead::Leased => panic!("no other relay runs"),
    }
    let backlog = outbox::backlog(&h.db.pool).await.unwrap();
    assert_eq!((backlog.events, backlog.behind_horizon), (1, 1));
    assert!(backlog.horizon_age_seconds > 0.0, "{backlog:?}");

    holder.rollback().await.unwrap();
    let read = batch(&h, 10).await;
    assert_eq!(read.rows.len(), 1, "read once the older transaction ended");
}

#[tokio::test]
async fn the_relay_holds_no_transaction_id_while_it_publishes() {
    let h = Harness::start().await;
    place(&h.app, 100).await;
    let read = batch(&h, 10).await;

    let holding: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND backend_xid IS NOT NULL",
    )
    .fetch_one(&h.db.pool)
    .await
    .unwrap();

    assert_eq!(holding, 0, "the open batch holds no transaction id");
    let published = ids(&read);
    read.finish(&published, &[]).await.unwrap();
}

#[tokio::test]
async fn a_cursor_ahead_of_the_servers_transaction_ids_is_refused_until_rebased() {
    let h = Harness::start().await;
    let first = place(&h.app, 100).await;
    confirm_all(&h).await;
    let waiting = place(&h.app, 100).await;
    // As after a restore into a new cluster: the log's positions are far above its transaction
    // ids.
    sqlx::raw_sql(
        "UPDATE outbox SET pos = (pos::text::int8 + 1000000000)::text::xid8; \
         UPDATE outbox_publications \
         SET through_pos = (through_pos::text::int8 + 1000000000)::text::xid8 \
         WHERE through_pos > '0'; \
         UPDATE orders SET last_event_pos = (last_event_pos::text::int8 + 1000000000)::text::xid8",
    )
    .execute(&h.db.pool)
    .await
    .unwrap();

    let refused = match outbox::read_batch(&h.db.pool, 10).await {
        Err(error @ StoreError::OutboxAhead { .. }) => error.to_string(),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("the relay read on"),
    };
    assert!(refused.contains("order-service outbox rebase"), "{refused}");

    assert_eq!(relay_mode::rebase(&h.db.pool).await.unwrap(), Some(2));
    let after = place(&h.app, 100).await;
    let read = batch(&h, 10).await;
    let orders: Vec<Uuid> = sqlx::query_scalar(
        "SELECT order_id FROM outbox JOIN unnest($1::int8[]) WITH ORDINALITY AS r(id, n) \
         USING (id) ORDER BY r.n",
    )
    .bind(ids(&read))
    .fetch_all(&h.db.pool)
    .await
    .unwrap();
    assert_eq!(
        orders,
        [waiting.as_uuid(), after.as_uuid()],
        "what waited is published, then what followed; what was published is not again"
    );
    assert_ne!(first, waiting);
    let published = ids(&read);
    read.finish(&published, &[]).await.unwrap();
    assert_eq!(
        relay_mode::rebase(&h.db.pool).await.unwrap(),
        None,
        "a cursor not ahead is left alone"
    );
}

#[tokio::test]
async fn the_relays_read_is_one_range_of_its_index_on_a_large_outbox() {
    let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    sqlx::raw_sql(
        "INSERT INTO outbox (event_id, exchange, routing_key, body, properties, pos) \
         SELECT gen_random_uuid(), 'x', 'k', '\\x7b7d', '{}', \
                (pg_current_xact_id()::text::int8 - n % 1000)::text::xid8 \
         FROM generate_series(1, 300000) AS n; \
         ANALYZE outbox;",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "PREPARE relay_read(int8) AS {}",
        outbox::READ_AFTER_CURSOR
    )))
    .execute(&mut *conn)
    .await
    .unwrap();

    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) EXECUTE relay_read(256)")
            .fetch_all(&mut *conn)
            .await
            .unwrap();

    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan using outbox_pos_id_idx"),
        "{plan}"
    );
    assert!(
        !plan.contains("Seq Scan") && !plan.contains("Sort"),
        "{plan}"
    );
    // Every row is readable: the probe for a row behind the horizon must start past them, not
    // step over the 300 000 from the cursor (over 1 000 pages of the index).
    let pages = buffers_touched(&plan);
    assert!(pages < 600, "the read touched {pages} pages:\n{plan}");
}

/// The pages a plan's execution touched, from its top node's `Buffers:` line.
fn buffers_touched(plan: &str) -> u64 {
    let line = plan
        .lines()
        .find(|line| line.trim_start().starts_with("Buffers:"))
        .expect("EXPLAIN (ANALYZE, BUFFERS) reports buffers");
    line.split_whitespace()
        .filter_map(|field| field.split_once('='))
        .filter(|(kind, _)| ["hit", "read"].contains(kind))
        .map(|(_, count)| count.parse::<u64>().unwrap_or(0))
        .sum()
}

#[tokio::test]
async fn a_batch_is_read_after_the_cursor_committed_while_its_lease_was_taken() {
    let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO outbox (event_id, exchange, routing_key, body, properties, pos) \
         SELECT gen_random_uuid(), 'x', 'k', '\\x7b7d', '{}', '1' FROM generate_series(1, 4) \
         RETURNING id",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap();
    // A relay's transaction: its first statement (a snapshot) takes the lease, as the relay's
    // state statement does.
    let mut relay = db.pool.begin().await.unwrap();
    let leased: bool = sqlx::query_scalar(
        "SELECT pg_try_advisory_xact_lock(hashtext('order-service.outbox-relay'))",
    )
    .fetch_one(&mut *relay)
    .await
    .unwrap();
    assert!(leased);
    // The relay that held the lease before committed its cursor past the first two rows in the
    // meantime (here, after that snapshot).
    sqlx::query(
        "INSERT INTO outbox_publications (through_pos, through_id, events) VALUES ('1', $1, 2)",
    )
    .bind(ids[1])
    .execute(&db.pool)
    .await
    .unwrap();

    let read: Vec<(i64, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "SELECT id, readable FROM ({}) AS batch",
        outbox::READ_AFTER_CURSOR
    )))
    .bind(256_i64)
    .fetch_all(&mut *relay)
    .await
    .unwrap();
    let readable: Vec<i64> = read.iter().filter(|r| r.1).map(|r| r.0).collect();
    assert_eq!(
        readable,
        ids[2..],
        "the batch starts after the newest cursor"
    );
    relay.rollback().await.unwrap();
}

/// Runs `order-service outbox …` against `db`: whether it succeeded, and its stdout.
fn outbox_command(db: &TestDb, command: &str) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_order-service"))
        .args(["outbox", command])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &db.url)
        .output()
        .expect("run order-service outbox");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[tokio::test]
async fn marking_for_the_previous_release_stops_and_starts_with_what_the_cursor_passed_marked() {
    let h = Harness::start().await;
    let marked = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM outbox WHERE published_at IS NOT NULL")
            .fetch_one(&h.db.pool)
            .await
            .unwrap()
    };
    let (ok, status) = outbox_command(&h.db, "status");
    assert!(ok, "{status}");
    assert!(
        status.contains("marks published rows for 0.2.0: no"),
        "a new database: {status}"
    );

    // Marking, as on a database an earlier release served: the batch marks what it publishes.
    assert!(outbox_command(&h.db, "start-marking").0);
    place(&h.app, 100).await;
    confirm_all(&h).await;
    assert_eq!(marked().await, 1);

    // Not marking: the cursor moves, no row is written.
    let (ok, stopped) = outbox_command(&h.db, "stop-marking");
    assert!(ok && stopped.contains("no longer mark"), "{stopped}");
    place(&h.app, 100).await;
    confirm_all(&h).await;
    assert_eq!(marked().await, 1);

    // Before a rollback: what the cursor passed is marked, so 0.2.0 publishes none of it again.
    let (ok, started) = outbox_command(&h.db, "start-marking");
    assert!(
        ok && started.contains("1 rows the cursor passed marked now"),
        "{started}"
    );
    assert_eq!(marked().await, 2);
}

#[tokio::test]
async fn an_event_held_behind_the_horizon_is_published_soon_after_without_another_wake_up() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let other = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let mut holder = other.pool.begin().await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *holder)
        .await
        .unwrap();
    let order = place(&h.app, 100).await;
    assert_eq!(outbox::backlog(&h.db.pool).await.unwrap().behind_horizon, 1);

    // Polling once an hour: only the relay's own looks again can publish within the wait. Its
    // first look finds the event behind the horizon.
    let hourly = RelayConfig {
        poll_ms: 3_600_000,
        ..relay_config()
    };
    h.spawn_relay(order_service_testkit::AMQP_URL, hourly);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await; // the holder stays a while
    holder.rollback().await.unwrap();

    let published = h.receive(&queue, 1).await;
    assert_eq!(published[0].body["data"]["id"], order.as_uuid().to_string());
}

#[tokio::test]
async fn a_prepared_transaction_holds_publishing_back_until_it_ends_and_skips_nothing() {
    // Prepared transactions need a server that allows them: one of the test's own.
    let pg = PrivatePostgres::start_with(&[("max_prepared_transactions", "2")]);
    let database = store::database(&pg.url("orders"), DEFAULT_LOCK_TIMEOUT).unwrap();
    store::prepare(&database).await.unwrap();
    let pool = database.pool(4);
    let app = App::new(pool.clone());
    let mut holder = pool.acquire().await.unwrap();
    sqlx::raw_sql(
        "BEGIN; SELECT pg_current_xact_id(); PREPARE TRANSACTION 'order-service-test-holder'",
    )
    .execute(&mut *holder)
    .await
    .unwrap();
    drop(holder); // a prepared transaction outlives its session

    place(&app, 100).await;

    match outbox::read_batch(&pool, 10).await.unwrap() {
        BatchRead::Idle(horizon) => assert!(horizon.rows_behind, "the row waits behind"),
        BatchRead::Batch(_) => panic!("a row above the horizon was read"),
        BatchRead::Leased => panic!("no other relay runs"),
    }
    let backlog = outbox::backlog(&pool).await.unwrap();
    assert_eq!((backlog.events, backlog.behind_horizon), (1, 1));
    assert!(
        backlog.horizon_age_seconds > 0.0,
        "the prepared transaction is what holds the horizon: {backlog:?}"
    );

    sqlx::query("ROLLBACK PREPARED 'order-service-test-holder'")
        .execute(&pool)
        .await
        .unwrap();
    let read = match outbox::read_batch(&pool, 10).await.unwrap() {
        BatchRead::Batch(read) => read,
        BatchRead::Idle(horizon) => panic!("nothing read once it ended ({horizon:?})"),
        BatchRead::Leased => panic!("no other relay runs"),
    };
    assert_eq!(
        read.rows.len(),
        1,
        "read once the prepared transaction ended"
    );
    let published = ids(&read);
    read.finish(&published, &[]).await.unwrap();
    pool.close().await;
}

/// Batches the relay moved its cursor for so far.
async fn batches_published(h: &Harness) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM outbox_publications")
        .fetch_one(&h.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn events_committed_one_by_one_while_the_relay_lingers_share_its_batches() {
    const LINGER_MS: u64 = 400;
    // Installed before the relay records its batches.
    let metrics = order_service::telemetry::metrics();
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let lingering = RelayConfig {
        linger_ms: LINGER_MS,
        ..relay_config()
    };
    h.spawn_relay(order_service_testkit::AMQP_URL, lingering);
    place(&h.app, 100).await;
    h.receive(&queue, 1).await;
    let before = batches_published(&h).await;

    // 30 commits 10 ms apart, each waking the relay (a NOTIFY at most every 20 ms): without the
    // linger, a batch every 20 ms or so.
    let started = std::time::Instant::now();
    for _ in 0..30 {
        place(&h.app, 100).await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // One read per linger while they came (however slowly this machine placed them), the one
    // before, and the one after.
    let lingers = started.elapsed().as_millis() as u64 / LINGER_MS;
    h.receive(&queue, 30).await;
    let batches = batches_published(&h).await - before;
    assert!(
        batches >= 1 && batches as u64 <= lingers + 2,
        "30 events in {lingers} lingers went in {batches} batches"
    );
    // Operators see the batches' sizes, in buckets that count events.
    let rendered = metrics.render();
    assert!(
        rendered.contains("outbox_relay_batch_events_bucket{le=\"256\"}"),
        "{rendered}"
    );
}

#[tokio::test]
async fn an_idle_relay_reads_an_event_at_once_whatever_its_linger() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    // Lingering for ever: the event is received within the test's wait only if the relay reads at
    // once when nothing was published before. Pruning never: no interval is too long for a clock.
    let for_ever = RelayConfig {
        linger_ms: u64::MAX,
        prune_interval_secs: u64::MAX,
        ..relay_config()
    };
    h.spawn_relay(order_service_testkit::AMQP_URL, for_ever);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await; // the relay looked: idle
    let order = place(&h.app, 100).await;
    let published = h.receive(&queue, 1).await;
    assert_eq!(published[0].body["data"]["id"], order.as_uuid().to_string());
    // Lingering after that batch, the relay still stops at once, and did not panic meanwhile.
    h.stop_consumers().await;
}
