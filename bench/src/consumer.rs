//! The consumer door: N pending orders seeded into a fresh database and their N
//! `payment.succeeded` events, plus duplicates, published to an inbox of the bench's own before
//! the service starts; then the real service binary drains it. Timed from `/health/ready`
//! answering 200 until every order is PAID and every delivery is settled. Every delivery is a
//! payment, so the rate compares with the raw designs' payments per second.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::bail;
use lapin::options::BasicPublishOptions;
use lapin::{BasicProperties, Channel};
use serde::Serialize;
use sqlx::{Connection, PgConnection};

use crate::Bench;
use crate::cpu::{CpuMeter, CpuSplit};
use crate::service::{self, Overrides, Service, Spec};
use crate::stats::rate;
use crate::workload::{self, Event, Rng};

#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Payment deliveries settled per second, duplicates included.
    pub msgs_per_s: f64,
    /// Payments that took effect per second (each order paid once; duplicates not counted).
    pub applied_per_s: f64,
    pub deliveries: u64,
    pub duplicates: u64,
    pub elapsed_s: f64,
    /// Service CPU seconds per 1 000 deliveries.
    pub cpu_s_per_1000: f64,
    pub peak_rss_kib: u64,
    /// Settled deliveries by outcome (`retried` counts premature payments).
    pub settled: BTreeMap<String, u64>,
    pub cpu: CpuSplit,
}

/// One consumer measurement on fresh names and a fresh database, dropped afterwards.
pub async fn run(
    bench: &Bench,
    label: &str,
    orders: usize,
    overrides: Overrides,
) -> anyhow::Result<Run> {
    let scratch = &bench.scratch;
    let (amqp, topology) = scratch.topology(label).await?;
    let db = scratch.migrated_database(label).await?;
    let ids = workload::new_orders(orders);
    let mut seeder = db.connect().await?;
    workload::seed_orders(&mut seeder, &ids).await?;
    seeder.close().await?;
    let duplicates = bench.plan.duplicates_for(orders);
    let events = workload::payment_events(&ids, duplicates, &mut Rng::new(orders as u64));
    publish(&scratch.channel, &amqp.inbound_exchange, &events).await?;

    let (service, ready) = Service::start(Spec {
        bin: &bench.service_bin,
        db: &db,
        amqp: &amqp,
        amqp_url: &scratch.amqp_url,
        overrides,
        env: &bench.plan.service_env,
        log: scratch.log_dir.join(format!("{label}.log")),
    })
    .await?;
    let meter = CpuMeter::start(Some(service.pid));
    let cpu_before = service.cpu();
    let mut monitor = db.connect().await?;
    let deliveries = events.len() as u64;
    let settled = drain(&service, &mut monitor, orders, deliveries).await?;
    let elapsed = ready.elapsed();
    let cpu = meter.stop();
    let service_cpu = service.cpu().saturating_sub(cpu_before);
    let peak_rss_kib = service.peak_rss_kib();
    monitor.close().await?;
    service.stop().await?;
    scratch.drop_database(&db).await?;
    scratch.delete_topology(&topology).await?;
    Ok(Run {
        msgs_per_s: rate(deliveries, elapsed),
        applied_per_s: rate(orders as u64, elapsed),
        deliveries,
        duplicates: duplicates as u64,
        elapsed_s: elapsed.as_secs_f64(),
        cpu_s_per_1000: service_cpu.as_secs_f64() * 1_000.0 / deliveries.max(1) as f64,
        peak_rss_kib,
        settled,
        cpu,
    })
}

/// Publishes persistent events with publisher confirms, many in flight at once.
pub async fn publish(channel: &Channel, exchange: &str, events: &[Event]) -> anyhow::Result<()> {
    for chunk in events.chunks(1_000) {
        let mut confirms = Vec::with_capacity(chunk.len());
        for event in chunk {
            let properties = BasicProperties::default()
                .with_message_id(event.event_id.as_str().into())
                .with_content_type("application/json".into())
                .with_delivery_mode(2);
            confirms.push(
                channel
                    .basic_publish(
                        exchange.into(),
                        event.routing_key.into(),
                        BasicPublishOptions::default(),
                        &event.body,
                        properties,
                    )
                    .await?,
            );
        }
        for confirm in confirms {
            if !confirm.await?.is_ack() {
                bail!("the broker refused a published event");
            }
        }
    }
    Ok(())
}

/// Waits until `orders` orders are PAID and the consumer settled `deliveries` messages.
pub async fn drain(
    service: &Service,
    monitor: &mut PgConnection,
    orders: usize,
    deliveries: u64,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let started = Instant::now();
    let limit = Duration::from_secs(300);
    loop {
        let paid: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status = 'PAID'")
            .fetch_one(&mut *monitor)
            .await?;
        if paid as usize >= orders {
            break;
        }
        if started.elapsed() > limit {
            bail!("only {paid} of {orders} orders were PAID after {limit:?}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    wait_settled(service, deliveries, limit.saturating_sub(started.elapsed())).await
}

/// Waits until the service settled at least `deliveries` messages since it started.
pub async fn wait_settled(
    service: &Service,
    deliveries: u64,
    limit: Duration,
) -> anyhow::Result<BTreeMap<String, u64>> {
    let started = Instant::now();
    loop {
        let settled = service.settled().await?;
        // A retried (premature) delivery comes back and is settled again.
        let retried = settled.get("retried").copied().unwrap_or(0);
        if service::total(&settled) >= deliveries + retried {
            return Ok(settled);
        }
        if started.elapsed() > limit {
            bail!("settled {settled:?}, expected {deliveries} deliveries");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
