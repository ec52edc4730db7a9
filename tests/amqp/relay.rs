//! The outbox relay: every committed change is published exactly as committed, at least once,
//! in version order per order; nothing is published for a change that rolled back.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;

use order_service::amqp::relay::prune;
use order_service::app::App;
use order_service::domain::{
    AmountMinor, BoundedText, Cause, Currency, CustomerId, EventId, Money, NewOrder, OrderId,
    Payment, Shipment, TransferId, VersionMatch,
};
use order_service::store::outbox;
use order_service::telemetry::TraceContext;
use serde_json::json;
use uuid::Uuid;

use order_service_testkit::eventually;
use order_service_testkit::proxy::Proxy;

use crate::helpers::{Harness, WAIT, relay_config};

pub(crate) fn cause(id: &str) -> Cause {
    Cause::Amqp {
        event_id: EventId::parse(id).unwrap(),
    }
}

fn eur(minor: i64) -> Money {
    Money::new(
        AmountMinor::parse(minor).unwrap(),
        Currency::parse("EUR").unwrap(),
    )
}

pub(crate) async fn place(app: &App, amount: i64) -> OrderId {
    let id = OrderId::generate();
    app.place(
        NewOrder {
            id,
            customer_id: CustomerId::parse("c-1").unwrap(),
            amount: eur(amount),
        },
        &cause("place"),
        &TraceContext::start(),
    )
    .await
    .unwrap();
    id
}

pub(crate) async fn pay(app: &App, order: OrderId, amount: i64) {
    app.record(
        Payment {
            transfer_id: TransferId::parse(&Uuid::new_v4().to_string()).unwrap(),
            order_id: order,
            money: eur(amount),
        },
        &cause("pay"),
        &TraceContext::start(),
    )
    .await
    .unwrap();
}

async fn ship(app: &App, order: OrderId) {
    app.ship(
        order,
        &Shipment::parse("DHL", "T-1").unwrap(),
        VersionMatch::Any,
        &cause("ship"),
        &TraceContext::start(),
    )
    .await
    .unwrap();
}

async fn cancel(app: &App, order: OrderId) {
    let reason = BoundedText::parse("reason", "changed my mind", 500).unwrap();
    app.cancel(
        order,
        &reason,
        VersionMatch::Any,
        &cause("cancel"),
        &TraceContext::start(),
    )
    .await
    .unwrap();
}

async fn unpublished(h: &Harness) -> i64 {
    outbox::backlog(&h.db.pool).await.unwrap().events
}

async fn wait_until_every_row_is_marked(h: &Harness) {
    eventually("every row to be marked", WAIT, || async {
        (unpublished(h).await == 0).then_some(())
    })
    .await;
}

/// Asserts that the relay publishes nothing more of what it already sent. Once every row is
/// marked, a fresh event (a sentinel order) goes out in a later batch, after anything the relay
/// could still send twice: so nothing may arrive before it.
async fn assert_nothing_more_is_published(h: &Harness, queue: &str) {
    wait_until_every_row_is_marked(h).await;
    let sentinel = place(&h.app, 1).await;
    let next: Vec<_> = h
        .receive(queue, 1)
        .await
        .into_iter()
        .map(|m| (m.routing_key, m.body["data"]["id"].clone()))
        .collect();
    assert_eq!(
        next,
        [("order.created".to_owned(), json!(sentinel.as_uuid()))],
        "nothing published twice"
    );
    wait_until_every_row_is_marked(h).await;
}

#[tokio::test]
async fn each_change_is_published_once_with_the_documented_envelope() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let shipped = place(&h.app, 1000).await;
    pay(&h.app, shipped, 400).await; // partial: no event
    pay(&h.app, shipped, 700).await; // completes and overpays: paid + refund_required
    ship(&h.app, shipped).await;
    let cancelled = place(&h.app, 500).await;
    pay(&h.app, cancelled, 100).await;
    cancel(&h.app, cancelled).await; // cancelled + refund_required
    h.spawn_relay(order_service_testkit::AMQP_URL, relay_config());

    let messages = h.receive(&queue, 7).await;
    assert_eq!(messages.len(), 7, "no message twice");
    assert_nothing_more_is_published(&h, &queue).await;

    let of = |order: OrderId| -> Vec<&str> {
        messages
            .iter()
            .filter(|m| m.body["data"]["id"] == json!(order.as_uuid()))
            .map(|m| m.routing_key.as_str())
            .collect()
    };
    assert_eq!(
        of(shipped),
        [
            "order.created",
            "order.paid",
            "order.refund_required",
            "order.shipped"
        ]
    );
    assert_eq!(
        of(cancelled),
        ["order.created", "order.cancelled", "order.refund_required"]
    );
    for message in &messages {
        let body = &message.body;
        assert_eq!(body["type"], message.routing_key.as_str());
        assert_eq!(body["event_id"].as_str(), message.message_id.as_deref());
        assert!(body["occurred_at"].is_string());
        assert!(body["data"]["status"].is_string() && body["data"]["version"].is_i64());
        assert_eq!(message.content_type.as_deref(), Some("application/json"));
        assert_eq!(message.delivery_mode, Some(2), "persistent");
    }
    let paid = messages
        .iter()
        .find(|m| m.routing_key == "order.paid")
        .unwrap();
    assert_eq!(paid.body["data"]["status"], "PAID");
    assert_eq!(paid.body["data"]["paid_minor"], 1100);
    assert_eq!(paid.body["data"]["refund_required"], true);
    assert_eq!(unpublished(&h).await, 0);
}

#[tokio::test]
async fn a_transaction_that_rolls_back_publishes_nothing() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let committed = place(&h.app, 1000).await;
    let mut tx = h.db.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO outbox (event_id, event_type, order_id, order_version, payload) \
         VALUES ($1, 'order.paid', $2, 2, $3)",
    )
    .bind(Uuid::new_v4())
    .bind(committed.as_uuid())
    .bind(json!({"type": "order.paid", "rolled_back": true}))
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    h.spawn_relay(order_service_testkit::AMQP_URL, relay_config());

    let messages = h.receive(&queue, 1).await;
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].routing_key, "order.created");
    assert_eq!(h.db.count("outbox").await, 1);
    assert_nothing_more_is_published(&h, &queue).await;
}

#[tokio::test]
async fn while_the_broker_is_unreachable_events_wait_and_are_all_published_after() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let ready = h.spawn_relay(
        &format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port),
        relay_config(),
    );
    eventually("the relay to connect", WAIT, || async {
        ready.is_ready().then_some(())
    })
    .await;

    proxy.sever();
    eventually("readiness to drop", WAIT, || async {
        (!ready.is_ready()).then_some(())
    })
    .await;
    let mut orders = vec![];
    for _ in 0..10 {
        orders.push(place(&h.app, 1000).await);
    }
    // The relay came back for the broker after the rows were committed, and was turned away.
    let attempts = proxy.turned_away();
    eventually("the relay to try the broker again", WAIT, || async {
        (proxy.turned_away() > attempts).then_some(())
    })
    .await;
    assert_eq!(unpublished(&h).await, 10, "rows wait in the outbox");
    assert!(h.drain(&queue).await.is_empty());

    proxy.restore();
    let messages = h.receive(&queue, 10).await;
    assert_eq!(messages.len(), 10, "none twice");
    let ids: HashSet<_> = messages.iter().map(|m| m.message_id.clone()).collect();
    assert_eq!(ids.len(), 10);
    assert_nothing_more_is_published(&h, &queue).await;
}

/// The batch a relay reads once every committed row is below the horizon: a transaction of
/// another test (anywhere on the server) may hold some back meanwhile, and the batch would then
/// hold only those before it.
pub(crate) async fn batch(h: &Harness, limit: u32) -> outbox::RelayBatch {
    eventually("a batch of every committed row to read", WAIT, || async {
        match outbox::read_batch(&h.db.pool, limit).await.unwrap() {
            outbox::BatchRead::Batch(batch) if !batch.horizon.rows_behind => Some(batch),
            outbox::BatchRead::Batch(partial) => {
                partial.finish(&[], &[]).await.unwrap();
                None
            }
            outbox::BatchRead::Leased => panic!("the lease is held"),
            outbox::BatchRead::Idle(_) => None,
        }
    })
    .await
}

/// Reads a batch of every committed row and finishes it as if the broker confirmed each: the
/// cursor passes them all. Their ids, in log order.
pub(crate) async fn confirm_all(h: &Harness) -> Vec<i64> {
    let read = batch(h, 100).await;
    let published = ids(&read);
    read.finish(&published, &[]).await.unwrap();
    published
}

pub(crate) fn ids(batch: &outbox::RelayBatch) -> Vec<i64> {
    batch
        .rows
        .iter()
        .map(|row| row.as_ref().unwrap().id)
        .collect()
}

#[tokio::test]
async fn while_one_relay_holds_a_batch_another_reads_nothing_and_reads_after_its_cursor() {
    let h = Harness::start().await;
    place(&h.app, 100).await;
    place(&h.app, 100).await;

    // A relay's batch holds the lease until it is finished.
    let first = batch(&h, 1).await;
    assert_eq!(first.rows.len(), 1);
    assert!(
        matches!(
            outbox::read_batch(&h.db.pool, 10).await.unwrap(),
            outbox::BatchRead::Leased
        ),
        "a second relay reads nothing, not even the row the first left"
    );

    let id = ids(&first)[0];
    first.finish(&[id], &[]).await.unwrap();
    let second = batch(&h, 10).await;
    assert_eq!(
        ids(&second).len(),
        1,
        "the lease is free again: the other row is read, the first is behind the cursor"
    );
    assert!(ids(&second)[0] > id);
}

#[tokio::test]
async fn the_cursor_stops_before_the_first_row_the_broker_did_not_confirm() {
    let h = Harness::start().await;
    for _ in 0..3 {
        place(&h.app, 100).await;
    }
    let read = batch(&h, 10).await;
    let [first, second, third] = ids(&read)[..] else {
        panic!("three rows")
    };

    // The first and third confirmed, the second not (a nack, a lost channel).
    read.finish(&[first, third], &[]).await.unwrap();

    assert_eq!(
        ids(&batch(&h, 10).await),
        [second, third],
        "the row not confirmed is read again, and every row after it"
    );
}

#[tokio::test]
async fn a_finished_batch_writes_one_row_and_no_row_of_the_outbox() {
    let h = Harness::start().await;
    for _ in 0..5 {
        place(&h.app, 100).await;
    }
    let read = batch(&h, 10).await;
    let published = ids(&read);
    read.finish(&published, &[]).await.unwrap();

    let (updated, marked): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM outbox_publications) - 1, \
                (SELECT count(*) FROM outbox WHERE published_at IS NOT NULL)",
    )
    .fetch_one(&h.db.pool)
    .await
    .unwrap();
    assert_eq!(updated, 1, "one row appended for the batch of five");
    assert_eq!(
        marked, 0,
        "no outbox row marked on a database of this release"
    );
    assert_eq!(unpublished(&h).await, 0);
}

#[tokio::test]
async fn two_relays_publish_a_thousand_events_in_order_per_order() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    h.spawn_relay(order_service_testkit::AMQP_URL, relay_config());
    h.spawn_relay(order_service_testkit::AMQP_URL, relay_config());

    // 250 orders: created, paid, shipped (750 events); 125 orders: created, cancelled (250).
    let app = h.app.clone();
    let mut writers = vec![];
    for _ in 0..25 {
        let app = app.clone();
        writers.push(tokio::spawn(async move {
            for _ in 0..10 {
                let order = place(&app, 100).await;
                pay(&app, order, 100).await;
                ship(&app, order).await;
            }
            for _ in 0..5 {
                let order = place(&app, 100).await;
                cancel(&app, order).await;
            }
        }));
    }
    for writer in writers {
        writer.await.unwrap();
    }

    let messages = h.receive(&queue, 1000).await;
    eventually("every row to be marked", WAIT, || async {
        (unpublished(&h).await == 0).then_some(())
    })
    .await;
    let extra = h.drain(&queue).await;
    let all: Vec<_> = messages.into_iter().chain(extra).collect();

    let mut bodies_by_id: HashMap<String, String> = HashMap::new();
    let mut last_version: HashMap<String, i64> = HashMap::new();
    for message in &all {
        let id = message.message_id.clone().expect("message_id");
        let body = message.body.to_string();
        // A duplicate, if any, is the same event under the same id.
        assert_eq!(
            bodies_by_id.entry(id).or_insert_with(|| body.clone()),
            &body
        );
        let order = message.body["data"]["id"].as_str().unwrap().to_owned();
        let version = message.body["data"]["version"].as_i64().unwrap();
        let last = last_version.entry(order).or_insert(0);
        assert!(
            version >= *last,
            "an order's events arrived out of version order"
        );
        *last = version;
    }
    assert_eq!(bodies_by_id.len(), 1000, "every event published");
}

#[tokio::test]
async fn pruning_removes_only_rows_published_longer_ago_than_the_retention() {
    let h = Harness::start().await;
    for _ in 0..5 {
        place(&h.app, 100).await;
    }
    let rows: Vec<i64> = sqlx::query_scalar("SELECT id FROM outbox ORDER BY pos, id")
        .fetch_all(&h.db.pool)
        .await
        .unwrap();
    // The relay passed row 1 eight days ago and row 2 six days ago; rows 3 (eight days old) and
    // 4 wait; row 5 was published before the outbox became a log (no position, marked).
    for (row, days) in [(rows[0], 8), (rows[1], 6)] {
        sqlx::query(
            "INSERT INTO outbox_publications (through_pos, through_id, events, published_at) \
             SELECT pos, id, 1, now() - make_interval(days => $2) FROM outbox WHERE id = $1",
        )
        .bind(row)
        .bind(days)
        .execute(&h.db.pool)
        .await
        .unwrap();
    }
    sqlx::query("UPDATE outbox SET created_at = now() - interval '8 days' WHERE id = ANY($1)")
        .bind([rows[0], rows[2]])
        .execute(&h.db.pool)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE outbox SET pos = NULL, published_at = now() - interval '8 days' WHERE id = $1",
    )
    .bind(rows[4])
    .execute(&h.db.pool)
    .await
    .unwrap();

    let pruned = prune(&h.db.pool, relay_config().retention()).await.unwrap();

    assert_eq!(pruned, 2);
    let left: Vec<i64> = sqlx::query_scalar("SELECT id FROM outbox ORDER BY id")
        .fetch_all(&h.db.pool)
        .await
        .unwrap();
    assert_eq!(
        left,
        [rows[1], rows[2], rows[3]],
        "the recently published row and both waiting stay"
    );
    let batches: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_publications")
        .fetch_one(&h.db.pool)
        .await
        .unwrap();
    assert_eq!(
        batches, 2,
        "the batch that passed row 1 stays (the bound), the start before it goes, the cursor stays"
    );
}

#[tokio::test]
async fn the_backlog_reports_how_long_the_oldest_unpublished_event_has_waited() {
    let h = Harness::start().await;
    let idle = outbox::backlog(&h.db.pool).await.unwrap();
    assert_eq!(
        (
            idle.events,
            idle.oldest_age_seconds,
            idle.behind_horizon,
            idle.set_aside
        ),
        (0, 0.0, 0, 0)
    );
    place(&h.app, 1000).await;
    place(&h.app, 1000).await;
    // As if the relay had been down for an hour.
    sqlx::query("UPDATE outbox SET created_at = now() - interval '1 hour'")
        .execute(&h.db.pool)
        .await
        .unwrap();

    let backlog = outbox::backlog(&h.db.pool).await.unwrap();

    assert_eq!(backlog.events, 2);
    assert!(
        (3600.0..3700.0).contains(&backlog.oldest_age_seconds),
        "{backlog:?}"
    );
}
