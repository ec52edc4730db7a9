//! What retention costs Postgres: the relay's prune (docs/messaging.md "The outbox as a log",
//! Retention) deleting published rows in batches behind the cursor, then the VACUUM that makes
//! their space reusable, per row; and whether the table stops growing once rows leave as fast as
//! they come.
//!
//! ```sh
//! cargo run --release -p order-service-bench --example retention_cost
//! ```
//!
//! Each round, on a fresh database: sixteen writers place `EVENTS` orders through the
//! application layer (one `order.created` row each); the cursor is put past them all as the relay
//! leaves it, with the batch's publication dated two days back (the service's retention is a day
//! by default); a checkpoint, so that the prune pays the full-page images a prune long after the
//! writes pays; then `order_service::amqp::relay::prune` (the code the relay runs) with a retention
//! of a day, and a `VACUUM (outbox)`, each measured apart: WAL bytes and wall time per row. Then
//! `EVENTS` more orders are written: the table's size after them (indexes included), against its
//! size after the first `EVENTS`, says whether the space the prune and VACUUM freed is reused. Reported: medians over
//! `ROUNDS` rounds.

mod common;

use common::{median, place, wal_lsn};
use std::time::{Duration, Instant};

use order_service::amqp::relay::prune;
use order_service::app::App;
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service_testkit::TestDb;
use sqlx::PgPool;

const EVENTS: u64 = 40_000;
const WRITERS: u64 = 16;
const ROUNDS: usize = 3;
/// The service's default retention (`OUTBOX_RETENTION_HOURS`).
const RETENTION: Duration = Duration::from_secs(24 * 3600);

/// One round's figures.
#[derive(Debug, Clone, Copy, Default)]
struct Round {
    pruned: f64,
    prune_wal: f64,
    prune_secs: f64,
    vacuum_wal: f64,
    vacuum_secs: f64,
    size_first: f64,
    size_second: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut rounds = vec![];
    for number in 1..=ROUNDS {
        let round = run().await?;
        println!(
            "round {number}: pruned {:.0} rows: prune {:>5.0} B/row {:>5.1} µs/row, vacuum {:>5.0} B/row {:>5.1} µs/row; outbox {:.1} MiB after {EVENTS} events, {:.1} MiB after {EVENTS} more",
            round.pruned,
            round.prune_wal / round.pruned,
            round.prune_secs * 1e6 / round.pruned,
            round.vacuum_wal / round.pruned,
            round.vacuum_secs * 1e6 / round.pruned,
            round.size_first / 1_048_576.0,
            round.size_second / 1_048_576.0,
        );
        rounds.push(round);
    }
    println!(
        "median of {ROUNDS}: prune {:.0} B/row, {:.1} µs/row; vacuum {:.0} B/row, {:.1} µs/row; outbox size after the second {EVENTS} events {:.2}× its size after the first",
        median(&rounds, |r| r.prune_wal / r.pruned),
        median(&rounds, |r| r.prune_secs * 1e6 / r.pruned),
        median(&rounds, |r| r.vacuum_wal / r.pruned),
        median(&rounds, |r| r.vacuum_secs * 1e6 / r.pruned),
        median(&rounds, |r| r.size_second / r.size_first),
    );
    Ok(())
}

async fn run() -> anyhow::Result<Round> {
    let db = TestDb::create_with_pool(DEFAULT_LOCK_TIMEOUT, 32).await;
    let pool = &db.pool;
    write(&App::new(pool.clone())).await?;
    publish_all(pool).await?;
    let size_first = outbox_size(pool).await?;
    sqlx::query("CHECKPOINT").execute(pool).await?;

    let wal = wal_lsn(pool).await?;
    let started = Instant::now();
    let pruned = prune(pool, RETENTION).await?;
    let prune_secs = started.elapsed().as_secs_f64();
    let prune_wal = wal_lsn(pool).await? - wal;
    anyhow::ensure!(pruned == EVENTS, "pruned {pruned} of {EVENTS} rows");

    let wal = wal_lsn(pool).await?;
    let started = Instant::now();
    sqlx::query("VACUUM (ANALYZE) outbox").execute(pool).await?;
    let vacuum_secs = started.elapsed().as_secs_f64();
    let vacuum_wal = wal_lsn(pool).await? - wal;

    write(&App::new(pool.clone())).await?;
    publish_all(pool).await?;
    let size_second = outbox_size(pool).await?;
    let round = Round {
        pruned: pruned as f64,
        prune_wal,
        prune_secs,
        vacuum_wal,
        vacuum_secs,
        size_first,
        size_second,
    };
    // The database is dropped with `db`.
    drop(db);
    Ok(round)
}

/// `EVENTS` orders placed by `WRITERS` concurrent writers.
async fn write(app: &App) -> anyhow::Result<()> {
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..WRITERS {
        let app = app.clone();
        writers.spawn(async move {
            for _ in 0..EVENTS / WRITERS {
                place(&app, "retention-cost").await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(writer) = writers.join_next().await {
        writer??;
    }
    Ok(())
}

/// The cursor past every row, as the relay's batch that published the last of them leaves it,
/// that batch dated two days back.
async fn publish_all(pool: &PgPool) -> anyhow::Result<()> {
    sqlx::query(
        "INSERT INTO outbox_publications (through_pos, through_id, events, published_at) \
         SELECT pos, id, 1, now() - interval '2 days' FROM outbox ORDER BY pos DESC, id DESC LIMIT 1",
    )
    .execute(pool)
    .await?;
    Ok(())
}

async fn outbox_size(pool: &PgPool) -> anyhow::Result<f64> {
    let bytes: i64 = sqlx::query_scalar("SELECT pg_total_relation_size('outbox')")
        .fetch_one(pool)
        .await?;
    Ok(bytes as f64)
}
