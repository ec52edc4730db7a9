//! Duplicates on several instances, crashes between commit and ack, and dependencies that go
//! away: nothing is applied twice, nothing is lost.

use std::net::SocketAddr;

use lapin::options::{BasicGetOptions, BasicRejectOptions};
use order_service::amqp::inbound;
use order_service::amqp::inbox::{Disposition, apply};
use order_service::telemetry::TraceContext;
use uuid::Uuid;

use order_service_testkit::eventually;
use order_service_testkit::proxy::Proxy;

use crate::helpers::{Harness, WAIT};

#[tokio::test]
async fn copies_delivered_to_two_instances_concurrently_keep_every_invariant() {
    let mut h = Harness::start().await;
    let orders: Vec<Uuid> = (0..20).map(|_| Uuid::new_v4()).collect();
    // Every event three times, interleaved across orders, for two competing consumers.
    for copy in 0..3 {
        for (i, order) in orders.iter().enumerate() {
            h.place(&format!("p-{i}-{copy}"), *order, 1000).await;
            h.pay(&format!("a-{i}"), *order, &format!("t-{i}-a"), 600)
                .await;
            h.pay(&format!("b-{i}"), *order, &format!("t-{i}-b"), 400)
                .await;
            h.ship(&format!("s-{i}"), *order, &format!("TRACK-{i}"))
                .await;
        }
    }
    h.spawn_consumer();
    h.spawn_consumer();

    // Every copy settles (some after a trip through the retry path).
    h.wait_until_drained(240).await;
    for order in &orders {
        h.wait_for_status(*order, "SHIPPED").await;
    }
    h.stop_consumers().await;

    assert_eq!(h.db.count("transfers").await, 40);
    for order in &orders {
        assert_eq!(
            h.order_state(*order).await,
            Some(("SHIPPED".into(), 4, 1000))
        );
        let kinds: Vec<String> = h
            .history_kinds(*order)
            .await
            .into_iter()
            .map(|k| k.1)
            .collect();
        assert_eq!(kinds[0], "created");
        assert_eq!(kinds[3], "shipped");
        assert_eq!(
            kinds.iter().filter(|k| *k == "paid").count(),
            1,
            "{kinds:?}"
        );
        assert_eq!(
            h.outbox_types(*order).await,
            ["order.created", "order.paid", "order.shipped"]
        );
    }
    let contiguous: bool = sqlx::query_scalar(
        "SELECT bool_and(versions = max_version) FROM (
             SELECT count(*) AS versions, max(version) AS max_version
             FROM order_transitions GROUP BY order_id) h",
    )
    .fetch_one(&h.db.pool)
    .await
    .unwrap();
    assert!(contiguous);
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn a_crash_after_commit_but_before_ack_redelivers_without_a_second_effect() {
    let mut h = Harness::start().await;
    let order = Uuid::new_v4();
    h.app
        .place(
            order_service::domain::NewOrder {
                id: order_service::domain::OrderId::from_uuid(order),
                customer_id: order_service::domain::CustomerId::parse("c").unwrap(),
                amount: order_service::domain::Money::new(
                    order_service::domain::AmountMinor::parse(1000).unwrap(),
                    order_service::domain::Currency::parse("EUR").unwrap(),
                ),
            },
            &order_service::domain::Cause::Amqp {
                event_id: order_service::domain::EventId::parse("placed").unwrap(),
            },
            &TraceContext::start(),
        )
        .await
        .unwrap();
    h.pay("the-payment", order, "t-1", 1000).await;

    // An instance takes the message, commits its effect, and dies before acknowledging.
    let taken = h
        .channel
        .basic_get(h.topology.inbox.as_str().into(), BasicGetOptions::default())
        .await
        .unwrap()
        .expect("the payment is in the inbox");
    let parsed = inbound::parse(&taken.delivery.data).unwrap();
    assert!(matches!(
        apply(&h.app, &parsed, &TraceContext::start()).await,
        Disposition::Ack { .. }
    ));
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 2, 1000)));
    taken
        .delivery
        .reject(BasicRejectOptions { requeue: true })
        .await
        .unwrap();

    // Another instance gets the redelivery.
    h.spawn_consumer();
    h.wait_until_drained(1).await;
    h.stop_consumers().await;

    assert_eq!(
        h.ready_count(&h.topology.inbox).await,
        0,
        "the redelivery was acknowledged"
    );
    assert_eq!(h.db.count("transfers").await, 1);
    assert_eq!(h.order_state(order).await, Some(("PAID".into(), 2, 1000)));
    assert_eq!(h.outbox_types(order).await, ["order.created", "order.paid"]);
}

#[tokio::test]
async fn while_postgres_is_unreachable_nothing_is_acked_and_work_resumes_after() {
    let mut h = Harness::start().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5432))).await;
    let app_through_proxy = h.app_through(&proxy);
    h.spawn_consumer_on(app_through_proxy, order_service_testkit::AMQP_URL);
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    proxy.sever();
    h.pay("during-outage", order, "t-1", 1000).await;
    // The consumer holds the message unacknowledged while it backs off.
    eventually("the message to be taken", WAIT, || async {
        (h.ready_count(&h.topology.inbox).await == 0).then_some(())
    })
    .await;
    // A second attempt at Postgres means the first failed and the consumer chose to try again.
    eventually("the consumer to try Postgres twice", WAIT, || async {
        (proxy.turned_away() >= 2).then_some(())
    })
    .await;
    assert_eq!(
        h.settled(),
        1,
        "only the placement is settled: the payment is held, not sent round the retry path"
    );
    assert_eq!(h.db.count("transfers").await, 0);
    assert!(
        h.take_dead_letters().await.is_empty(),
        "an outage is not the message's fault"
    );

    proxy.restore();
    assert_eq!(
        h.wait_for_status(order, "PAID").await,
        ("PAID".into(), 2, 1000)
    );
    assert!(h.take_dead_letters().await.is_empty());
}

#[tokio::test]
async fn after_the_broker_connection_drops_the_consumer_reconnects_and_loses_nothing() {
    let mut h = Harness::start().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
    let ready = h.spawn_consumer_on(h.app.clone(), &url);
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    assert!(ready.is_ready());

    proxy.sever();
    eventually("readiness to drop", WAIT, || async {
        (!ready.is_ready()).then_some(())
    })
    .await;
    h.pay("while-disconnected", order, "t-1", 1000).await;
    proxy.restore();

    assert_eq!(
        h.wait_for_status(order, "PAID").await,
        ("PAID".into(), 2, 1000)
    );
    eventually("readiness to return", WAIT, || async {
        ready.is_ready().then_some(())
    })
    .await;
}

#[tokio::test]
async fn on_shutdown_in_flight_messages_finish_and_the_rest_stay_queued() {
    let mut h = Harness::start().await;
    let orders: Vec<Uuid> = (0..50).map(|_| Uuid::new_v4()).collect();
    for (i, order) in orders.iter().enumerate() {
        h.place(&format!("p-{i}"), *order, 1000).await;
    }
    h.spawn_consumer();
    h.wait_for_status(orders[0], "PENDING_PAYMENT").await;

    h.stop_consumers().await;

    // Whatever was not applied is still in the queue: applied + queued = published.
    let applied = h.db.count("orders").await;
    let queued = i64::from(h.ready_count(&h.topology.inbox).await);
    assert_eq!(applied + queued, 50, "applied {applied}, queued {queued}");
}

#[tokio::test]
async fn a_retry_no_queue_takes_is_not_acknowledged_and_the_topology_is_declared_again() {
    let mut h = Harness::start().await;
    let consumer = h.spawn_consumer();
    h.wait_for_readiness(&consumer, true).await;
    // An operator deletes the first delay queue: a retry published there reaches no queue.
    let delay_queue = h.topology.retry_queue(h.config.retry_delay(1));
    h.channel
        .queue_delete(delay_queue.as_str().into(), Default::default())
        .await
        .expect("delete the delay queue");
    let order = Uuid::new_v4();
    h.pay("ev-early", order, "t-1", 500).await;

    // The returned retry leaves the payment unacknowledged; the consumer reconnects, declares
    // the delay queue again, and the retry then parks there.
    h.wait_until_retried(1).await;
    assert!(h.sessions() >= 2, "the consumer reconnected");
    h.place("ev-place", order, 500).await;
    h.wait_for_status(order, "PAID").await;
}
