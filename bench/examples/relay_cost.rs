//! What publishing an event costs Postgres, with the outbox read as a log (docs/messaging.md "The
//! outbox as a log") against the claim-and-mark relay it replaced, while events are written at a
//! steady rate, as under REST load:
//!
//! ```sh
//! cargo run --release -p order-service-bench --example relay_cost
//! ```
//!
//! Each round runs three phases on fresh databases, in alternating order: sixteen writers place
//! orders through the application layer at `RATE` events a second (`RELAY_COST_RATE` if set) for
//! `SECONDS` seconds, with
//! - `none`: no relay (the writers' own WAL, subtracted from the others);
//! - `log`: the service's relay (`order_service::amqp::Relay`, the code `serve` runs), lingering
//!   as `OUTBOX_LINGER_MS` says if set, else by the default;
//! - `claim-mark`: the relay of 0.2.0, its statements replayed here: claim the oldest unpublished
//!   rows `FOR UPDATE SKIP LOCKED` under the same advisory lease, publish them with confirms, mark
//!   them `published_at`, commit.
//!
//! Both relays are woken in memory by the writers' commits, publish to the same kind of exchange
//! and queue, and use a pool of their own set up as the service sets up the relay's
//! (`store::outbox::relay_connection`), whose connections are named, so their backends' CPU is
//! read from `/proc`. Reported per relay: Postgres CPU of its backends per event, WAL per event
//! (the phase's WAL less the `none` phase's), and events per relay transaction.

mod common;

use common::{env_or, linger_ms, median, place, wal_lsn};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use lapin::BasicProperties;
use lapin::options::{
    BasicPublishOptions, ConfirmSelectOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use order_service::amqp::{Relay, connect, topology};
use order_service::app::{App, RelayWakeup};
use order_service::config::{self, AmqpConfig, DEFAULT_LOCK_TIMEOUT, RelayConfig};
use order_service::health::Readiness;
use order_service::store;
use order_service_testkit::TestDb;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

const AMQP_URL: &str = config::DEFAULT_AMQP_URL;
/// Events a second, unless `RELAY_COST_RATE` says otherwise.
const RATE: u64 = 1_500;
const SECONDS: u64 = 8;
const WRITERS: u64 = 16;
const ROUNDS: usize = 3;
const RELAY_APP: &str = "relay-cost";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    None,
    Log,
    ClaimMark,
}

/// One phase: events written, WAL bytes, CPU seconds of the relay's backends, relay transactions
/// that published something.
#[derive(Debug, Clone, Copy, Default)]
struct Phase {
    events: f64,
    wal: f64,
    relay_cpu: f64,
    batches: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut phases: HashMap<&str, Vec<Phase>> = HashMap::new();
    let orders = [
        [Variant::None, Variant::Log, Variant::ClaimMark],
        [Variant::ClaimMark, Variant::Log, Variant::None],
    ];
    for round in 0..ROUNDS {
        for variant in orders[round % 2] {
            let phase = run(variant).await?;
            let name = name(variant);
            println!(
                "round {} {name:<10} {:>6.0} events  WAL {:>8.0} B/event  relay backends {:>6.1} µs/event  {:>6.1} events/transaction",
                round + 1,
                phase.events,
                phase.wal / phase.events,
                phase.relay_cpu * 1e6 / phase.events,
                phase.events / phase.batches.max(1.0),
            );
            phases.entry(name).or_default().push(phase);
        }
    }
    let writers = median(&phases["none"], |p| p.wal / p.events);
    println!(
        "\nmedians of {ROUNDS} interleaved rounds, {} events/s for {SECONDS} s:",
        rate()
    );
    println!("writers alone: WAL {writers:.0} B/event");
    let mut figures = HashMap::new();
    for variant in [Variant::Log, Variant::ClaimMark] {
        let runs = &phases[name(variant)];
        let wal = median(runs, |p| p.wal / p.events) - writers;
        let cpu = median(runs, |p| p.relay_cpu * 1e6 / p.events);
        let per_batch = median(runs, |p| p.events / p.batches.max(1.0));
        println!(
            "{:<10} relay WAL {wal:>7.0} B/event  relay Postgres CPU {cpu:>6.1} µs/event  {per_batch:>6.1} events/transaction",
            name(variant)
        );
        figures.insert(name(variant), (wal, cpu));
    }
    let (log, old) = (figures["log"], figures["claim-mark"]);
    println!(
        "log / claim-mark: WAL {:.2}x, Postgres CPU {:.2}x",
        log.0 / old.0,
        log.1 / old.1
    );
    Ok(())
}

/// The rate the writers keep: `RELAY_COST_RATE` if set, else [`RATE`].
fn rate() -> u64 {
    env_or("RELAY_COST_RATE", RATE)
}

fn name(variant: Variant) -> &'static str {
    match variant {
        Variant::None => "none",
        Variant::Log => "log",
        Variant::ClaimMark => "claim-mark",
    }
}

async fn run(variant: Variant) -> anyhow::Result<Phase> {
    let db = TestDb::create_with_pool(DEFAULT_LOCK_TIMEOUT, 32).await;
    let app = App::new(db.pool.clone());
    let prefix = format!("relay-cost-{}", uuid::Uuid::new_v4().simple());
    let amqp = AmqpConfig::default().named_under(&prefix);
    let connection = connect(AMQP_URL, "relay cost").await?;
    let channel = connection.create_channel().await?;
    topology::declare_topic(&channel, &amqp.outbound_exchange).await?;
    let subscriber = format!("{prefix}.subscriber");
    let transient = QueueDeclareOptions {
        auto_delete: true,
        ..QueueDeclareOptions::default()
    };
    channel
        .queue_declare(subscriber.as_str().into(), transient, FieldTable::default())
        .await?;
    channel
        .queue_bind(
            subscriber.as_str().into(),
            amqp.outbound_exchange.as_str().into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;

    let relay_pool = store::pool(
        store::outbox::relay_connection(
            store::connect_options(&db.url, DEFAULT_LOCK_TIMEOUT)?.application_name(RELAY_APP),
        ),
        store::outbox::RELAY_CONNECTIONS,
    );
    let shutdown = CancellationToken::new();
    let batches_before = publications(&db.pool).await?;
    let relay = match variant {
        Variant::None => None,
        Variant::Log => {
            let relay_config = RelayConfig {
                linger_ms: linger_ms(),
                prune_interval_secs: 3_600,
                ..RelayConfig::default()
            };
            let relay = Relay::new(
                relay_pool.clone(),
                &config::AmqpEndpoints::parse(AMQP_URL)?,
                amqp.outbound_exchange.clone(),
                relay_config,
                Readiness::default().register("relay"),
            )
            .woken_by(app.relay_wakeup());
            Some(tokio::spawn({
                let shutdown = shutdown.clone();
                async move {
                    relay.run(shutdown).await;
                    0
                }
            }))
        }
        Variant::ClaimMark => {
            let channel = connection.create_channel().await?;
            channel
                .confirm_select(ConfirmSelectOptions::default())
                .await?;
            let (pool, exchange, wakeup, shutdown) = (
                relay_pool.clone(),
                amqp.outbound_exchange.clone(),
                app.relay_wakeup(),
                shutdown.clone(),
            );
            Some(tokio::spawn(async move {
                claim_mark(&pool, &channel, &exchange, &wakeup, &shutdown)
                    .await
                    .expect("the claim-and-mark relay")
            }))
        }
    };
    // The relay's backends exist once it has looked once.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cpu_before = backend_cpu(&db.pool).await?;
    let wal_before = wal_lsn(&db.pool).await?;

    let started = Instant::now();
    let mut writers = vec![];
    for _ in 0..WRITERS {
        let app = app.clone();
        writers.push(tokio::spawn(async move {
            let every = Duration::from_micros(1_000_000 * WRITERS / rate());
            let mut tick = tokio::time::interval(every);
            let mut written = 0;
            while started.elapsed() < Duration::from_secs(SECONDS) {
                tick.tick().await;
                place(&app, "relay-cost").await.expect("place an order");
                written += 1;
            }
            written
        }));
    }
    let mut events = 0_u64;
    for writer in writers {
        events += writer.await?;
    }
    if variant != Variant::None {
        let give_up = Instant::now() + Duration::from_secs(120);
        while waiting(&db.pool, variant).await? > 0 {
            anyhow::ensure!(Instant::now() < give_up, "the relay stalled");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    let wal = wal_lsn(&db.pool).await? - wal_before;
    let cpu_after = backend_cpu(&db.pool).await?;
    let relay_cpu = cpu_after
        .iter()
        .map(|(pid, after)| after - cpu_before.get(pid).copied().unwrap_or(0.0))
        .sum();
    shutdown.cancel();
    let mut batches = publications(&db.pool).await? - batches_before;
    if let Some(relay) = relay {
        let claimed = relay.await?;
        if variant == Variant::ClaimMark {
            batches = claimed;
        }
    }
    let _ = connection.close(200, "measured".into()).await;
    relay_pool.close().await;
    db.pool.close().await;
    Ok(Phase {
        events: events as f64,
        wal,
        relay_cpu,
        batches: batches as f64,
    })
}

/// 0.2.0's relay: returns how many batches published something.
async fn claim_mark(
    pool: &PgPool,
    channel: &lapin::Channel,
    exchange: &str,
    wakeup: &RelayWakeup,
    shutdown: &CancellationToken,
) -> anyhow::Result<u64> {
    let mut batches = 0;
    while !shutdown.is_cancelled() {
        let mut tx = pool.begin().await?;
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT id, event_type, payload::text FROM outbox \
             WHERE (SELECT pg_try_advisory_xact_lock(hashtext('order-service.outbox-relay'))) \
               AND published_at IS NULL \
             ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED",
        )
        .bind(i64::from(config::DEFAULT_OUTBOX_BATCH_SIZE))
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            tx.commit().await?;
            tokio::select! {
                () = wakeup.committed() => {}
                () = shutdown.cancelled() => {}
                () = tokio::time::sleep(Duration::from_millis(config::DEFAULT_OUTBOX_POLL_MS)) => {}
            }
            continue;
        }
        let mut confirms = vec![];
        for (_, event_type, payload) in &rows {
            confirms.push(
                channel
                    .basic_publish(
                        exchange.into(),
                        event_type.as_str().into(),
                        BasicPublishOptions::default(),
                        payload.as_bytes(),
                        BasicProperties::default(),
                    )
                    .await?,
            );
        }
        for confirm in confirms {
            confirm.await?;
        }
        let ids: Vec<i64> = rows.iter().map(|(id, _, _)| *id).collect();
        sqlx::query("UPDATE outbox SET published_at = now() WHERE id = ANY($1)")
            .bind(&ids)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        batches += 1;
    }
    Ok(batches)
}

async fn waiting(pool: &PgPool, variant: Variant) -> anyhow::Result<i64> {
    let query = match variant {
        Variant::ClaimMark => "SELECT count(*) FROM outbox WHERE published_at IS NULL",
        _ => "SELECT count(*) FROM outbox_waiting",
    };
    Ok(sqlx::query_scalar(query).fetch_one(pool).await?)
}

/// The relay's batches that moved the cursor so far.
async fn publications(pool: &PgPool) -> anyhow::Result<u64> {
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_publications")
        .fetch_one(pool)
        .await?;
    Ok(u64::try_from(rows)?)
}

/// CPU seconds used so far by each backend of the relay's pool.
async fn backend_cpu(pool: &PgPool) -> anyhow::Result<HashMap<i32, f64>> {
    let pids: Vec<i32> = sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
    )
    .bind(RELAY_APP)
    .fetch_all(pool)
    .await?;
    Ok(pids
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (_, rest) = stat.rsplit_once(") ")?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let field = |n: usize| fields.get(n).and_then(|f| f.parse::<f64>().ok());
            Some((pid, (field(11)? + field(12)?) / 100.0))
        })
        .collect())
}
