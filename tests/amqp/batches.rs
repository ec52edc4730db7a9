//! Deliveries applied together (docs/messaging.md "Batched consumer commits"): one commit for a
//! batch, the bad messages settled on their own, duplicates written once, an order changed under
//! the batch decided again, a statement failing for one message's reason not sinking the others,
//! and no acknowledgement before the commit. Each test publishes its batch before the consumer starts
//! and lets a batch wait for as many deliveries as it published, so the batch is exactly those.
//! Rows written in one transaction share its start time (`now()`, the history's `at`), which is how
//! a test sees that they were committed together.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Harness, WAIT, test_config};
use order_service::app::App;
use order_service::config::AmqpConfig;
use order_service::store;
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{AMQP_URL, eventually};

/// Batches of `size` deliveries, each waiting (far longer than any test) until it is full.
fn batches_of(size: u16) -> AmqpConfig {
    AmqpConfig {
        batch_size: size,
        batch_wait_ms: 600_000,
        ..test_config()
    }
}

async fn place_over_rest(h: &Harness, order: Uuid, amount: i64) {
    let body =
        json!({"id": order, "customer_id": "c-1", "amount_minor": amount, "currency": "EUR"});
    let status = h
        .post_over_rest("/v1/orders", &format!("place-{order}"), body)
        .await;
    assert_eq!(status, StatusCode::CREATED);
}

/// How many transactions wrote these history rows (`(order, version)`): their distinct `at`.
async fn transactions_of(h: &Harness, rows: &[(Uuid, i64)]) -> i64 {
    let (orders, versions): (Vec<Uuid>, Vec<i64>) = rows.iter().copied().unzip();
    sqlx::query_scalar(
        "SELECT count(DISTINCT t.at) FROM order_transitions t \
         JOIN unnest($1::uuid[], $2::bigint[]) AS r(order_id, version) \
         ON t.order_id = r.order_id AND t.version = r.version",
    )
    .bind(orders)
    .bind(versions)
    .fetch_one(&h.db.pool)
    .await
    .expect("read the history")
}

/// An application over this test's database whose statements wait at most `lock_timeout` for a
/// row another transaction holds.
fn app_waiting_at_most(h: &Harness, lock_timeout: Duration) -> App {
    let options = store::connect_options(&h.db.url, lock_timeout).expect("a valid URL");
    App::new(store::pool(options, 8))
}

/// Four orders placed, sorted by id (the order a batch takes them in), the one at `locked`
/// locked in a transaction the caller holds, and a payment of each published.
async fn four_paid_one_locked(
    h: &Harness,
    locked: usize,
) -> (Vec<Uuid>, sqlx::Transaction<'static, sqlx::Postgres>) {
    let mut orders: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
    orders.sort();
    for order in &orders {
        place_over_rest(h, *order, 1000).await;
    }
    let held = h.lock_order(orders[locked]).await;
    for (i, order) in orders.iter().enumerate() {
        h.pay(&format!("pay-{i}"), *order, &format!("t-{i}"), 1000)
            .await;
    }
    (orders, held)
}

/// Statements of this test's database now waiting for a lock.
async fn lock_waits(h: &Harness) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_stat_activity \
         WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )
    .fetch_one(&h.db.pool)
    .await
    .expect("read pg_stat_activity")
}

fn pay_body(order: Uuid, transfer: &str, amount: i64) -> serde_json::Value {
    json!({"order_id": order, "transfer_id": transfer, "amount_minor": amount, "currency": "EUR"})
}

#[tokio::test]
async fn a_batch_applies_its_good_messages_and_settles_a_poison_a_premature_and_a_conflicting_one()
{
    let mut h = Harness::start_with(batches_of(6)).await;
    let (good, placed, paid, unknown) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    place_over_rest(&h, good, 1000).await;
    place_over_rest(&h, paid, 1000).await;
    let status = h
        .post_over_rest(
            &format!("/v1/orders/{paid}/payments"),
            "pay-c",
            json!({"transfer_id": "t-c", "amount_minor": 1000, "currency": "EUR"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);

    h.pay("pay-good", good, "t-good", 1000).await;
    h.publish_raw("payment.succeeded", b"{not json", Default::default())
        .await;
    h.pay("pay-unknown", unknown, "t-unknown", 500).await;
    // `t-c` is the other order's payment: reused with other content.
    h.publish(
        "pay-reused",
        "payment.succeeded",
        pay_body(good, "t-c", 1000),
    )
    .await;
    h.place("place-new", placed, 700).await;
    // Cancelling a PAID order is a terminal conflict.
    h.cancel("cancel-paid", paid).await;
    h.spawn_consumer();

    eventually("the batch to be settled", WAIT, || async {
        (h.settled() == 6).then_some(())
    })
    .await;
    assert_eq!(h.order_state(good).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(
        h.order_state(placed).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
    assert_eq!(h.order_state(paid).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(h.order_state(unknown).await, None);
    assert_eq!(
        h.retried(),
        1,
        "the premature payment goes round the retry path"
    );
    let reasons: Vec<String> = h
        .wait_for_dead_letters(3)
        .await
        .into_iter()
        .map(|letter| letter.reason)
        .collect();
    for expected in [
        "conflict: transfer t-c was already recorded with other content",
        "conflict: an order cannot move from PAID to CANCELLED",
        "poison: not a JSON envelope",
    ] {
        assert!(
            reasons.iter().any(|reason| reason.starts_with(expected)),
            "{expected}: {reasons:?}"
        );
    }
    // The two good messages were committed together, beside the refused ones.
    assert_eq!(transactions_of(&h, &[(good, 2), (placed, 1)]).await, 1);
    assert_eq!(h.db.count("transfers").await, 2);
    assert_eq!(h.outbox_types(good).await, ["order.created", "order.paid"]);
}

#[tokio::test]
async fn a_batch_larger_than_the_prefetch_goes_when_the_prefetch_is_full_not_after_its_wait() {
    // The broker sends 2 at a time and the batch would wait ten minutes for 16: only a batch
    // that stops at the prefetch settles within the test's patience.
    let mut h = Harness::start_with(AmqpConfig {
        prefetch: 2,
        ..batches_of(16)
    })
    .await;
    let orders = [Uuid::new_v4(), Uuid::new_v4()];
    for (i, order) in orders.iter().enumerate() {
        h.place(&format!("place-{i}"), *order, 1000).await;
        h.pay(&format!("pay-{i}"), *order, &format!("t-{i}"), 1000)
            .await;
    }
    h.spawn_consumer();

    eventually("the four messages to be settled", WAIT, || async {
        (h.settled() == 4).then_some(())
    })
    .await;
    for order in orders {
        assert_eq!(h.order_state(order).await, Some(("PAID".into(), 2, 1000)));
    }
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn duplicates_in_one_batch_are_written_once() {
    let mut h = Harness::start_with(batches_of(7)).await;
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.place("placed", order, 1000).await;
    h.pay("paid", order, "t-1", 1000).await;
    h.pay("paid", order, "t-1", 1000).await;
    // The same payment under another event id.
    h.pay("paid-again", order, "t-1", 1000).await;
    h.ship("shipped", order, "TRACK-1").await;
    h.ship("shipped", order, "TRACK-1").await;
    h.spawn_consumer();

    eventually("the batch to be settled", WAIT, || async {
        (h.settled() == 7).then_some(())
    })
    .await;
    assert_eq!(
        h.order_state(order).await,
        Some(("SHIPPED".into(), 3, 1000))
    );
    assert_eq!(h.db.count("orders").await, 1);
    assert_eq!(h.db.count("transfers").await, 1);
    assert_eq!(h.db.count("order_transitions").await, 3);
    assert_eq!(
        h.outbox_types(order).await,
        ["order.created", "order.paid", "order.shipped"]
    );
    assert_eq!(
        transactions_of(&h, &[(order, 1), (order, 2), (order, 3)]).await,
        1,
        "one batch, one transaction"
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn no_delivery_of_a_batch_is_acknowledged_before_its_commit() {
    let mut h = Harness::start_with(patient_batches_of(4)).await;
    // The batch's write takes its orders in id order: the first three are written (uncommitted)
    // before it waits for the last one's lock.
    let (orders, held) = four_paid_one_locked(&h, 3).await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
    let patient = app_waiting_at_most(&h, Duration::from_secs(3_600));
    h.spawn_consumer_on(patient, &url);

    eventually("the batch to wait for the locked order", WAIT, || async {
        (lock_waits(&h).await == 1 && h.ready_count(&h.topology.inbox).await == 0).then_some(())
    })
    .await;
    assert_eq!(h.db.count("transfers").await, 0, "nothing committed");
    assert_eq!(h.settled(), 0);
    // The consumer dies: everything it had not acknowledged returns to the inbox.
    proxy.sever();
    eventually("the batch to return to the inbox", WAIT, || async {
        (h.ready_count(&h.topology.inbox).await == 4).then_some(())
    })
    .await;

    // Once the lock is gone the dead consumer's batch commits, and another consumer finds each
    // payment applied.
    held.rollback().await.expect("unlock");
    h.spawn_consumer();
    eventually("the redeliveries to be settled", WAIT, || async {
        (h.settled() == 4).then_some(())
    })
    .await;
    for order in &orders {
        assert_eq!(h.order_state(*order).await, Some(("PAID".into(), 2, 1000)));
    }
    assert_eq!(h.db.count("transfers").await, 4);
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_message_waiting_for_a_lock_leaves_its_batch_and_the_rest_is_committed_and_acknowledged()
{
    let mut h = Harness::start_with(batches_of(4)).await;
    // The first order the batch takes is locked: its payment's wait ends after
    // `AMQP_BATCH_LOCK_WAIT_MS`, however long a statement alone may wait, it is set aside, and
    // the three after it go on.
    let (orders, held) = four_paid_one_locked(&h, 0).await;
    let first = orders[0];
    let patient = app_waiting_at_most(&h, Duration::from_secs(3_600));
    h.spawn_consumer_on(patient, AMQP_URL);

    eventually("the other three to be settled", WAIT, || async {
        (h.settled() == 3).then_some(())
    })
    .await;
    for order in &orders[1..] {
        assert_eq!(h.order_state(*order).await, Some(("PAID".into(), 2, 1000)));
    }
    let paid: Vec<(Uuid, i64)> = orders[1..].iter().map(|order| (*order, 2)).collect();
    assert_eq!(transactions_of(&h, &paid).await, 1, "committed together");
    assert_eq!(
        h.order_state(first).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
    // The locked one is held, unacknowledged, while the three are acknowledged.
    let inbox = h.topology.inbox.clone();
    eventually(
        "the broker to hold one unacknowledged delivery",
        WAIT,
        || async { (h.unacked_count(&inbox).await == Some(1)).then_some(()) },
    )
    .await;
    assert_eq!(h.ready_count(&inbox).await, 0);

    held.rollback().await.expect("unlock");
    assert_eq!(
        h.wait_for_status(first, "PAID").await,
        ("PAID".into(), 2, 1000)
    );
    eventually("every delivery to be settled", WAIT, || async {
        (h.settled() == 4 && h.unacked_count(&inbox).await == Some(0)).then_some(())
    })
    .await;
    assert!(h.take_dead_letters().await.is_empty());
}

/// A transaction holding `order`'s row with its version moved on, as a concurrent writer's
/// change would, not yet committed.
async fn order_changing(h: &Harness, order: Uuid) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut change = h.db.pool.begin().await.expect("begin");
    sqlx::query("UPDATE orders SET version = version + 1 WHERE id = $1")
        .bind(order)
        .execute(&mut *change)
        .await
        .expect("change the order");
    change
}

/// Batches of `size` that wait as long as a test needs for a lock another transaction holds.
fn patient_batches_of(size: u16) -> AmqpConfig {
    AmqpConfig {
        batch_lock_wait_ms: 3_600_000,
        ..batches_of(size)
    }
}

#[tokio::test]
async fn an_order_changed_after_the_batch_read_it_is_decided_again_in_the_same_transaction() {
    let mut h = Harness::start_with(patient_batches_of(2)).await;
    let mut orders = [Uuid::new_v4(), Uuid::new_v4()];
    orders.sort();
    let [first, changed] = orders;
    place_over_rest(&h, first, 1000).await;
    place_over_rest(&h, changed, 1000).await;
    // The batch reads `changed` at version 1; its write then waits for this writer, which moves
    // the order to version 2 and commits: the write's guard misses for that order only.
    let concurrent = order_changing(&h, changed).await;
    h.pay("pay-first", first, "t-first", 1000).await;
    h.pay("pay-changed", changed, "t-changed", 1000).await;
    let patient = app_waiting_at_most(&h, Duration::from_secs(3_600));
    h.spawn_consumer_on(patient, AMQP_URL);

    eventually("the batch's write to wait for the writer", WAIT, || async {
        (lock_waits(&h).await == 1).then_some(())
    })
    .await;
    concurrent.commit().await.expect("commit the change");
    eventually("the batch to be settled", WAIT, || async {
        (h.settled() == 2).then_some(())
    })
    .await;
    assert_eq!(h.order_state(first).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(
        h.order_state(changed).await,
        Some(("PAID".into(), 3, 1000)),
        "paid on the version the writer left"
    );
    assert_eq!(h.retried(), 0, "nothing was set aside");
    assert_eq!(
        transactions_of(&h, &[(first, 2), (changed, 3)]).await,
        1,
        "both in the batch's one transaction"
    );
    assert_eq!(h.db.count("transfers").await, 2);
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_transfer_id_taken_by_a_concurrent_writer_is_refused_alone_and_the_batch_commits() {
    let mut h = Harness::start_with(patient_batches_of(2)).await;
    let mut orders = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    orders.sort();
    let [good, reused, owner] = orders;
    for order in orders {
        place_over_rest(&h, order, 1000).await;
    }
    // Another writer records `t-taken` for `owner` and has not committed when the batch reads:
    // the batch decides to record it for `reused`, and its one write statement fails on the
    // ledger's key once the writer commits.
    let mut concurrent = h.db.pool.begin().await.expect("begin");
    sqlx::query(
        "INSERT INTO transfers (transfer_id, order_id, direction, amount_minor, currency, source, \
         received_at) VALUES ('t-taken', $1, 'in', 1000, 'EUR', 'api', now())",
    )
    .bind(owner)
    .execute(&mut *concurrent)
    .await
    .expect("record the transfer");
    h.pay("pay-good", good, "t-good", 1000).await;
    h.pay("pay-reused", reused, "t-taken", 1000).await;
    let patient = app_waiting_at_most(&h, Duration::from_secs(3_600));
    h.spawn_consumer_on(patient, AMQP_URL);

    eventually("the batch's write to wait for the writer", WAIT, || async {
        (lock_waits(&h).await == 1).then_some(())
    })
    .await;
    concurrent.commit().await.expect("commit the transfer");
    eventually("the batch to be settled", WAIT, || async {
        (h.settled() == 2).then_some(())
    })
    .await;
    assert_eq!(h.order_state(good).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(
        h.order_state(reused).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
    let reasons: Vec<String> = h
        .wait_for_dead_letters(1)
        .await
        .into_iter()
        .map(|letter| letter.reason)
        .collect();
    assert!(
        reasons[0]
            .starts_with("conflict: transfer t-taken was already recorded with other content"),
        "{reasons:?}"
    );
    assert_eq!(h.retried(), 0);
}
