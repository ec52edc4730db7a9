//! After quiescence: the database holds exactly what the load asked for (every order in its
//! expected state, one ledger row per transfer, contiguous history, one outbox event per change),
//! and every outbox event reached the subscriber at least once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use lapin::Channel;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicQosOptions};
use lapin::types::FieldTable;
use sqlx::PgPool;
use uuid::Uuid;

use super::Expected;
use crate::{eventually, ready_count};

/// Bound on reaching quiescence once the load stopped: premature messages wait out retry
/// delays (1 s, 2 s, 4 s, … by default) that grow while nodes are down.
pub const QUIESCENCE: Duration = Duration::from_secs(180);

/// What an order must have become: status, version and the kinds of its history.
fn expected_end(expected: &Expected) -> (&'static str, i64, Vec<&'static str>) {
    let paid: i64 = expected.transfers.iter().map(|(_, a)| a).sum();
    let mut kinds = vec!["created"];
    if let Some((_, partial)) = expected.transfers.split_last() {
        kinds.extend(partial.iter().map(|_| "payment_recorded"));
        kinds.push(if paid >= expected.amount {
            "paid"
        } else {
            "payment_recorded"
        });
    }
    let status = if paid >= expected.amount {
        "PAID"
    } else {
        "PENDING_PAYMENT"
    };
    (status, kinds.len() as i64, kinds)
}

type OrderRow = (Uuid, String, i64, i64, i64);

async fn orders(pool: &PgPool) -> BTreeMap<Uuid, OrderRow> {
    let rows: Vec<OrderRow> =
        sqlx::query_as("SELECT id, status, version, amount_minor, paid_minor FROM orders")
            .fetch_all(pool)
            .await
            .expect("read orders");
    rows.into_iter().map(|row| (row.0, row)).collect()
}

/// Waits until every expected order reached its end state; if some never do, says which (the
/// first few, with what they became).
pub async fn wait_for_orders(
    pool: &PgPool,
    expected: &[Expected],
    patience: Duration,
) -> Result<(), String> {
    let deadline = std::time::Instant::now() + patience;
    loop {
        let rows = orders(pool).await;
        let stuck: Vec<String> = expected
            .iter()
            .filter_map(|e| {
                let (status, version, _) = expected_end(e);
                let row = rows.get(&e.order);
                match row {
                    Some(row) if row.1 == status && row.2 == version => None,
                    _ => Some(format!("{e:?} expected {status} v{version}, is {row:?}")),
                }
            })
            .collect();
        if stuck.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "{} orders never reached their state, e.g. {:#?}",
                stuck.len(),
                &stuck[..stuck.len().min(5)]
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the outbox has nothing left to publish.
pub async fn wait_for_outbox(pool: &PgPool) {
    eventually("the outbox to be published", QUIESCENCE, || async {
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_waiting")
            .fetch_one(pool)
            .await
            .ok()?;
        (left == 0).then_some(())
    })
    .await;
}

/// Counts of what the database holds, all checked against the load.
pub struct Stored {
    pub orders: usize,
    pub transfers: usize,
    pub events: usize,
}

/// The database holds exactly the expected orders, ledger, history and outbox: nothing lost,
/// nothing doubled.
pub async fn database(pool: &PgPool, expected: &[Expected]) -> Stored {
    let rows = orders(pool).await;
    let wanted: BTreeSet<Uuid> = expected.iter().map(|e| e.order).collect();
    let extra: Vec<&Uuid> = rows.keys().filter(|id| !wanted.contains(id)).collect();
    assert!(extra.is_empty(), "orders nobody placed: {extra:?}");

    let ledger: Vec<(String, Uuid, i64)> =
        sqlx::query_as("SELECT transfer_id, order_id, amount_minor FROM transfers")
            .fetch_all(pool)
            .await
            .expect("read the ledger");
    let ledger: BTreeSet<(String, Uuid, i64)> = ledger.into_iter().collect();
    let expected_ledger: BTreeSet<(String, Uuid, i64)> = expected
        .iter()
        .flat_map(|e| e.transfers.iter().map(|(t, a)| (t.clone(), e.order, *a)))
        .collect();
    assert_eq!(
        ledger, expected_ledger,
        "one ledger row per transfer, no other"
    );

    let history: Vec<(Uuid, i64, String)> = sqlx::query_as(
        "SELECT order_id, version, kind FROM order_transitions ORDER BY order_id, version",
    )
    .fetch_all(pool)
    .await
    .expect("read the history");
    let mut histories: BTreeMap<Uuid, Vec<(i64, String)>> = BTreeMap::new();
    for (order, version, kind) in history {
        histories.entry(order).or_default().push((version, kind));
    }
    let outbox: Vec<(Uuid, String)> = sqlx::query_as("SELECT order_id, event_type FROM outbox")
        .fetch_all(pool)
        .await
        .expect("read the outbox");
    let mut events: BTreeMap<Uuid, Vec<String>> = BTreeMap::new();
    for (order, kind) in &outbox {
        events.entry(*order).or_default().push(kind.clone());
    }

    for e in expected {
        let (status, version, kinds) = expected_end(e);
        let row = rows
            .get(&e.order)
            .unwrap_or_else(|| panic!("order {} lost", e.order));
        let paid: i64 = e.transfers.iter().map(|(_, a)| a).sum();
        assert_eq!(
            (row.1.as_str(), row.2, row.3, row.4),
            (status, version, e.amount, paid),
            "order {}: status, version, amount, paid",
            e.order
        );
        let history = histories.remove(&e.order).unwrap_or_default();
        let versions: Vec<i64> = history.iter().map(|(v, _)| *v).collect();
        assert_eq!(
            versions,
            (1..=version).collect::<Vec<_>>(),
            "order {}: history is contiguous",
            e.order
        );
        let got: Vec<&str> = history.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(got, kinds, "order {}: history kinds", e.order);
        let mut got = events.remove(&e.order).unwrap_or_default();
        got.sort();
        let mut want = vec!["order.created".to_owned()];
        if status == "PAID" {
            want.push("order.paid".to_owned());
        }
        assert_eq!(got, want, "order {}: one outbox event per change", e.order);
    }
    Stored {
        orders: rows.len(),
        transfers: ledger.len(),
        events: outbox.len(),
    }
}

/// What the subscriber's queue received.
pub struct Delivered {
    pub copies: usize,
    pub distinct: usize,
}

/// Takes every message from the subscriber's `queue` and checks that each outbox event is among
/// them (by `message_id` = `event_id`, with its type as routing key), and nothing else is.
pub async fn published(pool: &PgPool, channel: &Channel, queue: &str) -> Delivered {
    let outbox: Vec<(Uuid, String)> = sqlx::query_as("SELECT event_id, event_type FROM outbox")
        .fetch_all(pool)
        .await
        .expect("read the outbox");
    let outbox: BTreeMap<String, String> = outbox
        .into_iter()
        .map(|(id, kind)| (id.to_string(), kind))
        .collect();
    let waiting = ready_count(channel, queue).await as usize;
    channel
        .basic_qos(1_000, BasicQosOptions::default())
        .await
        .expect("qos");
    let mut consumer = channel
        .basic_consume(
            queue.into(),
            "cluster-check".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consume the subscriber's queue");
    let mut received: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..waiting {
        let delivery = tokio::time::timeout(Duration::from_secs(30), consumer.next())
            .await
            .expect("the next captured event")
            .expect("a delivery")
            .expect("a delivery");
        let id = delivery
            .properties
            .message_id()
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default();
        let kind = outbox
            .get(&id)
            .unwrap_or_else(|| panic!("published, yet not in the outbox: {id}"));
        assert_eq!(delivery.routing_key.as_str(), kind, "routing key of {id}");
        *received.entry(id).or_default() += 1;
        delivery.ack(BasicAckOptions::default()).await.expect("ack");
    }
    let missing: Vec<&String> = outbox
        .keys()
        .filter(|id| !received.contains_key(*id))
        .collect();
    assert!(
        missing.is_empty(),
        "{} outbox events never published: {:?}",
        missing.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    Delivered {
        copies: waiting,
        distinct: received.len(),
    }
}
