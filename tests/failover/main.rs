//! The store over several Postgres hosts (docs/postgres-failover.md): with
//! `target_session_attrs=read-write` every write goes to the node that accepts writes, and
//! after the roles swap the same pool finds the new one without a restart. Two private servers
//! stand in for a primary and a standby: `default_transaction_read_only = on` makes a node
//! answer `transaction_read_only = on`, as a standby does.

mod formation_under_load;
mod start;

use std::collections::BTreeSet;
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use order_service::app::App;
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::domain::{
    AmountMinor, Cause, Currency, CustomerId, EventId, Money, NewOrder, OrderId,
};
use order_service::store;
use order_service::telemetry::TraceContext;

use order_service_testkit::eventually;
use order_service_testkit::private_postgres::PrivatePostgres;

/// Generous: a give-up bound for a failing run, not a measure of the switch.
const GIVE_UP: Duration = Duration::from_secs(30);

#[tokio::test]
async fn writes_follow_the_writable_node_when_the_roles_swap_or_it_dies_without_a_restart() {
    let (a, b) = (PrivatePostgres::start(), PrivatePostgres::start());
    // b has the schema (as a standby would) but refuses writes; it is listed first.
    store::prepare_database(
        &store::connect_options(&b.url("order_service"), DEFAULT_LOCK_TIMEOUT).unwrap(),
    )
    .await
    .expect("b prepared");
    set_read_only(&b, true).await;
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/order_service?target_session_attrs=read-write",
        b.port, a.port
    );
    let database = store::database(&url, DEFAULT_LOCK_TIMEOUT).expect("the multi-host URL");
    store::prepare(&database)
        .await
        .expect("the database is created and migrated on the writable node");
    let app = App::new(database.pool(4));

    let first = Uuid::new_v4();
    write(&app, first).await;
    assert_eq!(orders_on(&a).await, BTreeSet::from([first]));
    assert_eq!(orders_on(&b).await, BTreeSet::new());

    // Failover: a turns read-only and its connections are cut; b takes writes.
    set_read_only(&a, true).await;
    set_read_only(&b, false).await;
    cut_connections(&a).await;
    let second = Uuid::new_v4();
    write(&app, second).await;
    assert_eq!(orders_on(&b).await, BTreeSet::from([second]));

    // And back, this time without cutting anything: the pool's connections to b stay open on
    // a node that now refuses writes, and must not be handed out again.
    set_read_only(&b, true).await;
    set_read_only(&a, false).await;
    let third = Uuid::new_v4();
    write(&app, third).await;
    assert_eq!(orders_on(&a).await, BTreeSet::from([first, third]));
    assert_eq!(orders_on(&b).await, BTreeSet::from([second]));

    // The writable node dies outright (its port refuses connections) and b takes writes.
    set_read_only(&b, false).await;
    a.kill();
    let fourth = Uuid::new_v4();
    write(&app, fourth).await;
    assert_eq!(orders_on(&b).await, BTreeSet::from([second, fourth]));
}

/// Places `order` through the application, retrying (the same order, so a retry that finds it
/// written is a replay) until a write is acknowledged.
async fn write(app: &App, order: Uuid) {
    eventually("a write to be acknowledged", GIVE_UP, || async {
        app.place(
            NewOrder {
                id: OrderId::from_uuid(order),
                customer_id: CustomerId::parse("c-1").unwrap(),
                amount: Money::new(
                    AmountMinor::parse(1000).unwrap(),
                    Currency::parse("EUR").unwrap(),
                ),
            },
            &Cause::Amqp {
                event_id: EventId::parse(&format!("place-{order}")).unwrap(),
            },
            &TraceContext::start(),
        )
        .await
        .ok()
    })
    .await;
}

pub(crate) async fn admin(pg: &PrivatePostgres, database: &str) -> PgConnection {
    PgConnection::connect(&pg.url(database))
        .await
        .expect("an admin connection")
}

/// Makes the node refuse (or take) writes in every session, existing ones included.
pub(crate) async fn set_read_only(pg: &PrivatePostgres, read_only: bool) {
    let mut conn = admin(pg, "postgres").await;
    let statement = if read_only {
        "ALTER SYSTEM SET default_transaction_read_only = on"
    } else {
        "ALTER SYSTEM RESET default_transaction_read_only"
    };
    sqlx::raw_sql(statement).execute(&mut conn).await.unwrap();
    sqlx::query("SELECT pg_reload_conf()")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    // The postmaster signals every session before it starts a new one with the new setting.
    let expected = if read_only { "on" } else { "off" };
    eventually("the setting to reach new sessions", GIVE_UP, || async {
        let mut conn = admin(pg, "postgres").await;
        let now: String = sqlx::query_scalar("SHOW default_transaction_read_only")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        conn.close().await.unwrap();
        (now == expected).then_some(())
    })
    .await;
}

/// Ends every other session on the node, as a failover cuts them.
async fn cut_connections(pg: &PrivatePostgres) {
    let mut conn = admin(pg, "postgres").await;
    sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE pid <> pg_backend_pid() AND backend_type = 'client backend'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
}

async fn orders_on(pg: &PrivatePostgres) -> BTreeSet<Uuid> {
    let mut conn = admin(pg, "order_service").await;
    let ids: Vec<Uuid> = sqlx::query_scalar("SELECT id FROM orders")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    ids.into_iter().collect()
}
