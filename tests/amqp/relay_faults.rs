//! What the outbox relay cannot publish, and a relay that cannot publish (docs/messaging.md "Rows
//! the relay sets aside"): a row it cannot decode, a routing key AMQP cannot carry or a replay the
//! broker returns as unroutable is set aside with its reason and counted, and the rows after it are
//! published; a relay that publishes nothing while events wait shows it in the lag gauges and in
//! readiness, which names it.

use serde_json::{Value, json};
use uuid::Uuid;

use order_service::store::outbox;

use order_service_testkit::{AMQP_URL, eventually, http};

use crate::helpers::{Harness, WAIT, relay_config};

/// JSON arrays nested `depth` deep: beyond serde_json's recursion limit (128) from 128 on, while
/// Postgres' `jsonb` stores it.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

/// Writes a raw outbox row (a replayed dead letter) with `properties` as JSON text, as a release
/// that did not check its routing key would have; returns its id.
async fn insert_raw(h: &Harness, exchange: &str, routing_key: &str, properties: &str) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO outbox (event_id, exchange, routing_key, body, properties) \
         VALUES ($1, $2, $3, $4, $5::jsonb) RETURNING id",
    )
    .bind(Uuid::new_v4())
    .bind(exchange)
    .bind(routing_key)
    .bind(br#"{"replayed": true}"#.as_slice())
    .bind(properties)
    .fetch_one(&h.db.pool)
    .await
    .expect("a raw outbox row")
}

/// Places an order over REST; returns its id (its `order.created` is in the outbox).
async fn place(h: &Harness) -> Uuid {
    let id = Uuid::new_v4();
    let status = h
        .post_over_rest(
            "/v1/orders",
            &format!("place-{id}"),
            json!({"id": id, "customer_id": "c-1", "amount_minor": 100, "currency": "EUR"}),
        )
        .await;
    assert_eq!(status, axum::http::StatusCode::CREATED);
    id
}

/// The rows set aside: `(id, reason)`, oldest first.
async fn set_aside(h: &Harness) -> Vec<(i64, String)> {
    sqlx::query_as("SELECT id, reason FROM outbox_set_aside ORDER BY id")
        .fetch_all(&h.db.pool)
        .await
        .expect("read the rows set aside")
}

/// The value of an unlabelled series in a Prometheus text exposition.
fn series(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(name)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

async fn scrape(port: u16) -> Option<String> {
    let (status, metrics) = http::get(port, "/metrics").await.ok()?;
    (status == 200).then_some(metrics)
}

fn created_ids(published: &[crate::helpers::Published]) -> Vec<Value> {
    published
        .iter()
        .filter(|m| m.routing_key == "order.created")
        .map(|m| m.body["data"]["id"].clone())
        .collect()
}

#[tokio::test]
async fn rows_the_relay_cannot_decode_or_address_are_set_aside_and_later_events_still_go_out() {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let inbound = h.topology.inbound_exchange.clone();
    let deep = insert_raw(
        &h,
        &inbound,
        "payment.succeeded",
        &format!(
            r#"{{"message_id": "deep", "headers": {{"deep": {}}}}}"#,
            nested(200)
        ),
    )
    .await;
    let long_key = insert_raw(&h, &inbound, &"k".repeat(300), r#"{"headers": {}}"#).await;
    let order = place(&h).await;

    let service = h.start_service(&[], None);

    let published = h.receive(&queue, 1).await;
    assert_eq!(created_ids(&published), [json!(order)]);
    // The batch moves the rows aside when it commits, after the broker confirmed the event.
    let aside = eventually("the rows to be set aside", WAIT, || async {
        let aside = set_aside(&h).await;
        (aside.len() == 2).then_some(aside)
    })
    .await;
    assert_eq!(
        aside.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [deep, long_key]
    );
    assert!(
        aside[0].1.starts_with("undecodable: properties"),
        "{}",
        aside[0].1
    );
    assert!(
        aside[1].1.starts_with("unaddressable: routing key"),
        "{}",
        aside[1].1
    );
    assert_eq!(outbox::backlog(&h.db.pool).await.unwrap().events, 0);
    eventually("the gauges to count the rows set aside", WAIT, || async {
        let metrics = scrape(service.http_port).await?;
        (series(&metrics, "outbox_set_aside") == Some(2.0)
            && series(&metrics, "outbox_events_set_aside_total") == Some(2.0))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_replay_the_broker_returns_as_unroutable_is_set_aside_and_the_rows_around_it_are_published()
 {
    let mut h = Harness::start().await;
    let queue = h.subscribe().await;
    let inbound = h.topology.inbound_exchange.clone();
    let before = place(&h).await;
    let unroutable = insert_raw(&h, &inbound, "nobody.binds.this", r#"{"headers": {}}"#).await;
    // The inbox is bound to this one: it is delivered, so it is published.
    let routable = insert_raw(&h, &inbound, "payment.succeeded", r#"{"headers": {}}"#).await;
    let after = place(&h).await;

    h.spawn_relay(AMQP_URL, relay_config());

    let published = h.receive(&queue, 2).await;
    assert_eq!(created_ids(&published), [json!(before), json!(after)]);
    let aside = eventually("the unroutable replay to be set aside", WAIT, || async {
        let aside = set_aside(&h).await;
        (!aside.is_empty()).then_some(aside)
    })
    .await;
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(aside[0].0, unroutable);
    assert!(aside[0].1.starts_with("unroutable: "), "{}", aside[0].1);
    eventually("the cursor to pass every other row", WAIT, || async {
        let marked: bool = sqlx::query_scalar(
            "SELECT NOT EXISTS (SELECT 1 FROM outbox_waiting) AND count(*) = 3 FROM outbox",
        )
        .fetch_one(&h.db.pool)
        .await
        .ok()?;
        marked.then_some(())
    })
    .await;
    assert_eq!(h.ready_count(&h.topology.inbox).await, 1, "{routable}");
}

#[tokio::test]
async fn while_the_relay_cannot_move_its_cursor_the_lag_shows_and_readiness_names_it() {
    let h = Harness::start().await;
    // Every cursor move fails (as a full disk or a broken constraint would): the relay publishes,
    // then cannot record it, and tries again.
    sqlx::raw_sql(
        "CREATE FUNCTION test_refuse_cursor() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN RAISE EXCEPTION 'the test refuses every cursor move'; END $$; \
         CREATE TRIGGER test_refuse_cursor BEFORE INSERT ON outbox_publications \
         FOR EACH ROW EXECUTE FUNCTION test_refuse_cursor();",
    )
    .execute(&h.db.pool)
    .await
    .expect("a trigger refusing cursor moves");
    let service = h.start_service(&[("OUTBOX_STALLED_AFTER_SECS", "1")], None);
    service.wait_ready().await;

    place(&h).await;

    eventually("the lag gauges to show the waiting event", WAIT, || async {
        let metrics = scrape(service.http_port).await?;
        let age = series(&metrics, "outbox_oldest_unpublished_age_seconds")?;
        (age > 0.0 && series(&metrics, "outbox_backlog") == Some(1.0)).then_some(())
    })
    .await;
    let detail = eventually("readiness to name the relay", WAIT, || async {
        let (status, body) = http::get(service.http_port, "/health/ready").await.ok()?;
        (status == 503).then_some(body)
    })
    .await;
    let problem: Value = serde_json::from_str(&detail).expect("a problem");
    assert!(
        problem["detail"].as_str().unwrap().contains("relay"),
        "{problem}"
    );

    sqlx::raw_sql("DROP TRIGGER test_refuse_cursor ON outbox_publications")
        .execute(&h.db.pool)
        .await
        .expect("drop the trigger");
    service.wait_ready().await;
    assert_eq!(outbox::backlog(&h.db.pool).await.unwrap().events, 0);
}
