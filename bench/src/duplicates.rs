//! What a duplicate costs: every event and request is first applied once; then only duplicates
//! are delivered — the same events again (same event ids), the same payments under new event
//! ids, REST retries with their Idempotency-Keys and the same payments under new keys — and the
//! rows written meanwhile are read from `pg_stat_user_tables`. Natural idempotency must write
//! none.
//!
//! Each stage runs in a service process of its own that is stopped before the counters are read:
//! a backend's counters are complete once it has exited (see [`crate::pgstat`]).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::bail;
use futures::StreamExt;
use serde::Serialize;
use sqlx::Connection;

use order_service::config::AmqpConfig;

use crate::Bench;
use crate::client::Http;
use crate::consumer::{drain, publish, wait_settled};
use crate::pgstat::{self, DOMAIN_TABLES, Writes};
use crate::rest;
use crate::scratch::Db;
use crate::service::{Overrides, Service, Spec};
use crate::workload::{self, Payment, Rng};

/// The cost of one kind of duplicate.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    pub duplicates: u64,
    pub rows_written: i64,
    pub rows_per_duplicate: f64,
    pub by_table: Writes,
}

impl Cost {
    fn of(duplicates: u64, before: &Writes, after: &Writes) -> Self {
        let by_table = pgstat::delta(before, after);
        let rows_written = pgstat::total(&by_table);
        Self {
            duplicates,
            rows_written,
            rows_per_duplicate: rows_written as f64 / duplicates.max(1) as f64,
            by_table,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Duplicates {
    pub amqp: Cost,
    pub rest: Cost,
    /// How the consumer settled the duplicate deliveries (all should be `already_applied`).
    pub amqp_outcomes: BTreeMap<String, u64>,
    /// REST duplicates answered 201 with `Idempotent-Replayed: true`.
    pub rest_replayed: u64,
}

pub async fn run(bench: &Bench) -> anyhow::Result<Duplicates> {
    let scratch = &bench.scratch;
    let n = bench.plan.duplicate_orders;
    let (amqp, topology) = scratch.topology("dup").await?;
    let db = scratch.database("dup");
    let orders = workload::new_orders(n);
    let originals = workload::consumer_events(&orders, 0, &mut Rng::new(1));
    publish(&scratch.channel, &amqp.inbound_exchange, &originals).await?;

    // Stage 0: everything applied once, through both doors; the outbox fully published.
    let service = start(bench, &db, &amqp, "dup-apply").await?;
    let mut monitor = db.connect().await?;
    drain(&service, &mut monitor, n, originals.len() as u64).await?;
    let rest_orders = workload::new_orders(n);
    workload::seed_orders(&mut monitor, &rest_orders).await?;
    let payments: Vec<Payment> = rest_orders.into_iter().map(Payment::for_order).collect();
    let fresh = send_all(&service.http, &payments, |p| {
        format!("key-{}", p.transfer_id)
    })
    .await?;
    if fresh != 0 {
        bail!("{fresh} first REST payments were answered as replays");
    }
    wait_for_outbox(&mut monitor).await?;
    monitor.close().await?;
    service.stop().await?;
    let before = pgstat::snapshot(&db, &DOMAIN_TABLES).await?;

    // Stage 1: only duplicate events.
    let mut duplicates = originals.clone();
    duplicates.extend(
        orders
            .iter()
            .map(|&id| workload::paid(id, format!("ev-paid-again-{}", id.simple()))),
    );
    publish(&scratch.channel, &amqp.inbound_exchange, &duplicates).await?;
    let service = start(bench, &db, &amqp, "dup-amqp").await?;
    let amqp_outcomes =
        wait_settled(&service, duplicates.len() as u64, Duration::from_secs(120)).await?;
    service.stop().await?;
    let after_amqp = pgstat::snapshot(&db, &DOMAIN_TABLES).await?;

    // Stage 2: only duplicate requests: retries with their keys, and the same payments under new
    // keys (a client that lost its key).
    let service = start(bench, &db, &amqp, "dup-rest").await?;
    let retried = send_all(&service.http, &payments, |p| {
        format!("key-{}", p.transfer_id)
    })
    .await?;
    let rekeyed = send_all(&service.http, &payments, |p| {
        format!("new-{}", p.transfer_id)
    })
    .await?;
    service.stop().await?;
    let after_rest = pgstat::snapshot(&db, &DOMAIN_TABLES).await?;

    scratch.drop_database(&db).await?;
    scratch.delete_topology(&topology).await?;
    Ok(Duplicates {
        amqp: Cost::of(duplicates.len() as u64, &before, &after_amqp),
        rest: Cost::of(2 * payments.len() as u64, &after_amqp, &after_rest),
        amqp_outcomes,
        rest_replayed: retried + rekeyed,
    })
}

async fn start(bench: &Bench, db: &Db, amqp: &AmqpConfig, label: &str) -> anyhow::Result<Service> {
    let (service, _) = Service::start(Spec {
        bin: &bench.service_bin,
        db,
        amqp,
        amqp_url: &bench.scratch.amqp_url,
        overrides: Overrides::default(),
        env: &bench.plan.service_env,
        log: bench.scratch.log_dir.join(format!("{label}.log")),
    })
    .await?;
    Ok(service)
}

/// Posts every payment (8 at a time) with the key `key` gives it; all must answer 201. Returns
/// how many were replays.
async fn send_all(
    http: &Http,
    payments: &[Payment],
    key: impl Fn(&Payment) -> String,
) -> anyhow::Result<u64> {
    let answers: Vec<anyhow::Result<bool>> = futures::stream::iter(payments.iter().map(|p| {
        let key = key(p);
        async move { rest::pay_with_key(http, p, &key).await }
    }))
    .buffer_unordered(8)
    .collect()
    .await;
    let mut replayed = 0;
    for answer in answers {
        replayed += u64::from(answer?);
    }
    Ok(replayed)
}

/// Waits until the relay has published every outbox row, so it has nothing left to write later.
async fn wait_for_outbox(conn: &mut sqlx::PgConnection) -> anyhow::Result<()> {
    for _ in 0..3_000 {
        let pending: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_waiting")
            .fetch_one(&mut *conn)
            .await?;
        if pending == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!("the outbox relay did not publish every event within 60 s")
}
