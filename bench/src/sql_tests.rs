//! The raw designs against a real, migrated database of the test's own (dropped at the end, pass
//! or fail): the one-statement reference writes exactly the rows the service's transaction
//! writes, its outbox payload is the envelope the service itself builds, a missed guard writes
//! nothing, a batch applies each payment once in either design, and the design's minimal SQL
//! writes the reference's rows, once per key (test builds only).

use std::future::Future;

use anyhow::{Context, ensure};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use order_service::app::OutboundEnvelope;
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::domain::{EventType, OrderId};
use order_service::store;
use order_service_testkit::TestDb;

use crate::batched::{self, Dedup};
use crate::scratch::Db;
use crate::{app_layer, cte, multi, raw, workload};

/// Runs `test` on a fresh migrated database (with the dedup table), dropped on the way out, pass
/// or fail: the test kit's, on the shared server.
async fn with_db<F, Fut>(test: F)
where
    F: FnOnce(Db) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let test_db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let db = Db {
        name: test_db.name.clone(),
        url: test_db.url.clone(),
    };
    let outcome = async {
        raw::create_dedup_table(&db).await?;
        test(db).await
    }
    .await;
    if let Err(e) = outcome {
        panic!("{e:#}");
    }
}

async fn seeded(db: &Db, n: usize) -> anyhow::Result<(PgConnection, Vec<Uuid>)> {
    let orders = workload::new_orders(n);
    let mut conn = db.connect().await?;
    workload::seed_orders(&mut conn, &orders).await?;
    Ok((conn, orders))
}

/// Everything written about one order, without what differs between any two orders or runs (ids,
/// timestamps, positions in the outbox's log, which are transaction ids), the order's own id
/// replaced by `ORDER`.
async fn written(conn: &mut PgConnection, order_id: Uuid) -> anyhow::Result<String> {
    let rows: Value = sqlx::query_scalar(
        "SELECT jsonb_build_object( \
           'order', (SELECT to_jsonb(o) - 'id' - 'created_at' - 'updated_at' - 'last_event_pos' \
                     FROM orders o WHERE id = $1), \
           'ledger', (SELECT jsonb_agg(to_jsonb(t) - 'received_at') \
                      FROM transfers t WHERE order_id = $1), \
           'history', (SELECT jsonb_agg(to_jsonb(h) - 'at' ORDER BY version) \
                       FROM order_transitions h WHERE order_id = $1), \
           'outbox', (SELECT jsonb_agg(to_jsonb(x) - 'id' - 'event_id' - 'created_at' - 'pos' \
                        - 'payload' \
                        || jsonb_build_object('payload', x.payload - 'event_id' - 'occurred_at' \
                        || jsonb_build_object('data', (x.payload->'data') - 'created_at' - 'updated_at'))) \
                      FROM outbox x WHERE order_id = $1))",
    )
    .bind(order_id)
    .fetch_one(&mut *conn)
    .await?;
    Ok(serde_json::to_string_pretty(&rows)?
        .replace(&order_id.to_string(), "ORDER")
        .replace(&order_id.simple().to_string(), "ORDER"))
}

async fn counts(conn: &mut PgConnection) -> anyhow::Result<Vec<i64>> {
    let mut counts = vec![];
    for sql in [
        "SELECT count(*) FROM orders WHERE status = 'PAID'",
        "SELECT sum(version)::bigint FROM orders",
        "SELECT count(*) FROM transfers",
        "SELECT count(*) FROM order_transitions",
        "SELECT count(*) FROM outbox",
        "SELECT count(*) FROM processed_messages",
    ] {
        counts.push(sqlx::query_scalar(sql).fetch_one(&mut *conn).await?);
    }
    Ok(counts)
}

/// Timestamps as instants: Postgres writes `+00:00`, chrono `Z`.
fn instants(mut envelope: Value) -> Value {
    let at = |v: &mut Value| {
        if let Some(parsed) = v
            .as_str()
            .and_then(|s| s.parse::<chrono::DateTime<chrono::Utc>>().ok())
        {
            *v = Value::from(parsed.timestamp_micros());
        }
    };
    at(&mut envelope["occurred_at"]);
    at(&mut envelope["data"]["created_at"]);
    at(&mut envelope["data"]["updated_at"]);
    envelope["event_id"] = Value::Null;
    envelope
}

#[tokio::test]
async fn the_one_statement_payment_writes_what_the_services_transaction_writes() {
    with_db(|db| async move {
        let (mut conn, orders) = seeded(&db, 2).await?;
        ensure!(
            cte::pay(&mut conn, orders[0]).await?,
            "a fresh order missed its guard"
        );
        multi::pay(&mut conn, orders[1]).await?;
        let one = written(&mut conn, orders[0]).await?;
        let many = written(&mut conn, orders[1]).await?;
        ensure!(
            one == many,
            "one statement wrote\n{one}\nthe transaction wrote\n{many}"
        );
        ensure!(one.contains("\"kind\": \"paid\"") && one.contains("\"version\": 2"));

        let order = store::orders::find(&mut conn, OrderId::from_uuid(orders[0]))
            .await?
            .context("the order")?;
        let service = serde_json::to_value(OutboundEnvelope::new(EventType::OrderPaid, &order))?;
        let payload: Value = sqlx::query_scalar("SELECT payload FROM outbox WHERE order_id = $1")
            .bind(orders[0])
            .fetch_one(&mut conn)
            .await?;
        ensure!(
            instants(payload.clone()) == instants(service.clone()),
            "wrote {payload:#}\nthe service builds {service:#}"
        );
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn the_designs_minimal_sql_writes_the_references_rows_once_per_key() {
    with_db(|db| async move {
        let (mut conn, orders) = seeded(&db, 2).await?;
        let pool = sqlx::PgPool::connect_with(db.options()?).await?;
        let app = order_service::app::App::new(pool.clone());
        ensure!(cte::pay(&mut conn, orders[0]).await?);
        let by_reference = counts(&mut conn).await?;
        ensure!(
            app_layer::pay(&app, orders[1]).await?,
            "a fresh order's payment was replayed"
        );
        let by_app_layer = counts(&mut conn).await?;
        ensure!(
            by_app_layer == vec![2, 4, 2, 4, 2, 0],
            "paid, sum of versions, ledger, history, outbox, dedup: {by_reference:?} then \
             {by_app_layer:?}"
        );
        ensure!(
            !app_layer::pay(&app, orders[1]).await?,
            "a retry with the same key took effect"
        );
        ensure!(
            counts(&mut conn).await? == by_app_layer,
            "a retry wrote rows"
        );
        pool.close().await;
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_missed_guard_writes_nothing() {
    with_db(|db| async move {
        let (mut conn, orders) = seeded(&db, 1).await?;
        ensure!(cte::pay(&mut conn, orders[0]).await?);
        let before = counts(&mut conn).await?;
        ensure!(
            !cte::pay(&mut conn, orders[0]).await?,
            "the guard of a paid order held"
        );
        ensure!(counts(&mut conn).await? == before);
        Ok(())
    })
    .await;
}

#[tokio::test]
async fn a_batch_applies_each_payment_once_in_either_design() {
    with_db(|db| async move {
        let (mut conn, o) = seeded(&db, 6).await?;
        let natural = [o[0], o[1], o[0], o[2], o[1]];
        ensure!(batched::apply(&mut conn, &natural, Dedup::Natural).await? == 3);
        let table = [o[3], o[4], o[3], o[5]];
        ensure!(batched::apply(&mut conn, &table, Dedup::Table).await? == 3);
        let after = counts(&mut conn).await?;
        ensure!(
            after == vec![6, 12, 6, 12, 6, 3],
            "paid, sum of versions, ledger, history, outbox, dedup: {after:?}"
        );

        ensure!(batched::apply(&mut conn, &[o[0], o[3]], Dedup::Natural).await? == 0);
        ensure!(batched::apply(&mut conn, &[o[5], o[3]], Dedup::Table).await? == 0);
        ensure!(batched::apply(&mut conn, &[o[1]], Dedup::Natural).await? == 0);
        ensure!(counts(&mut conn).await? == after, "duplicates wrote rows");
        Ok(())
    })
    .await;
}
