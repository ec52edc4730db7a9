//! The raw-SQL designs, issued straight from sqlx on dedicated connections (no HTTP, no AMQP, no
//! domain layer) against a database of the bench's own with the service's schema: the
//! one-statement reference ([`crate::cte`]), the service's multi-statement transaction
//! ([`crate::multi`]) and the two batched designs ([`crate::batched`]); and beside them the
//! design's minimal SQL, the service's own statements through its application layer on a pool
//! ([`crate::app_layer`]).
//!
//! Every run starts from empty tables and seeds fresh PENDING_PAYMENT orders (not timed), so every
//! payment completes an order and rows never contend, except a duplicate with its original. The
//! unbatched designs pay each order once; the batched ones get the consumer's load: the payments
//! with the run's share of duplicate deliveries among them. Rows written are read from
//! `pg_stat_user_tables` after the writers disconnected.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::Connection;
use uuid::Uuid;

use crate::batched::{self, CREATE_DEDUP_TABLE, DEDUP_TABLE, Dedup};
use crate::cpu::{CpuMeter, CpuSplit};
use crate::pgstat::{self, DOMAIN_TABLES};
use crate::scratch::{Db, Scratch};
use crate::stats::{median, rate};
use crate::workload::{self, Rng};
use crate::{app_layer, cte, multi};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// One data-modifying statement per payment, autocommit: the headline reference.
    OneStatement,
    /// The service's own multi-statement transaction: the older ceiling.
    MultiStatement,
    /// The REST door's statements without the door: a read and a guarded write with the key,
    /// each autocommit, through the application layer; nothing published.
    AppLayer,
    /// This many deliveries per transaction, a savepoint each.
    Batched(Dedup, usize),
}

impl Design {
    fn batch_size(self) -> usize {
        match self {
            Self::OneStatement | Self::MultiStatement | Self::AppLayer => 1,
            Self::Batched(_, size) => size.max(1),
        }
    }

    pub fn label(self) -> String {
        match self {
            Self::OneStatement => "one-statement reference".into(),
            Self::MultiStatement => "multi-statement ceiling".into(),
            Self::AppLayer => "design's minimal SQL".into(),
            Self::Batched(Dedup::Natural, size) => format!("natural design, batches of {size}"),
            Self::Batched(Dedup::Table, size) => format!("dedup-table design, batches of {size}"),
        }
    }
}

/// One timed run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Payment deliveries applied per second, duplicates included (transactions per second for
    /// the unbatched designs).
    pub per_s: f64,
    pub deliveries: u64,
    pub transactions: u64,
    /// Deliveries that took effect (the others were duplicates).
    pub applied: u64,
    /// Rows written per applied payment, from `pg_stat_user_tables`.
    pub rows_per_payment: f64,
    pub cpu: CpuSplit,
}

/// The bench's own database: the service's schema plus the dedup table of the other design.
pub async fn prepare(scratch: &Scratch) -> anyhow::Result<Db> {
    let db = scratch.migrated_database("raw").await?;
    create_dedup_table(&db).await?;
    Ok(db)
}

pub async fn create_dedup_table(db: &Db) -> anyhow::Result<()> {
    let mut conn = db.connect().await?;
    sqlx::query(CREATE_DEDUP_TABLE).execute(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

/// Applies `design` from `concurrency` connections for `duration` (or until the seeded supply
/// runs out); `duplicate_share` of a batched design's deliveries are duplicates.
pub async fn run(
    db: &Db,
    design: Design,
    concurrency: usize,
    duration: Duration,
    duplicate_share: f64,
) -> anyhow::Result<Run> {
    let size = design.batch_size();
    let stream = Arc::new(seed(db, design, duration, duplicate_share).await?);
    let tables: Vec<&str> = DOMAIN_TABLES.iter().copied().chain([DEDUP_TABLE]).collect();
    let before = pgstat::snapshot(db, &tables).await?;
    let mut writers = Vec::with_capacity(concurrency);
    // One application layer, as a service process has, on a pool as large as the concurrency
    // and filled before the clock starts.
    let pool = if design == Design::AppLayer {
        let size = u32::try_from(concurrency)?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(size)
            .connect_with(db.options()?)
            .await?;
        let filled = futures::future::try_join_all((0..concurrency).map(|_| pool.acquire()));
        drop(filled.await?);
        Some(pool)
    } else {
        None
    };
    let app = pool.clone().map(order_service::app::App::new);
    for _ in 0..concurrency {
        writers.push(match &app {
            Some(app) => Writer::App(app.clone()),
            None => Writer::Connection(db.connect().await?),
        });
    }
    let next = Arc::new(AtomicUsize::new(0));
    let meter = CpuMeter::start(None);
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = tokio::task::JoinSet::new();
    for mut writer in writers {
        let (stream, next) = (stream.clone(), next.clone());
        workers.spawn(async move {
            let mut done = Done::default();
            while Instant::now() < deadline {
                let from = next.fetch_add(size, Ordering::Relaxed);
                let Some(batch) = stream.get(from..(from + size).min(stream.len())) else {
                    break;
                };
                if batch.is_empty() {
                    break;
                }
                done.applied += apply(&mut writer, design, batch).await?;
                done.deliveries += batch.len() as u64;
                done.transactions += 1;
            }
            if let Writer::Connection(conn) = writer {
                conn.close().await?;
            }
            anyhow::Ok(done)
        });
    }
    let mut done = Done::default();
    while let Some(joined) = workers.join_next().await {
        done.add(joined??);
    }
    let elapsed = started.elapsed();
    let cpu = meter.stop();
    if let Some(pool) = pool {
        pool.close().await;
    }
    if elapsed < duration.mul_f64(0.9) {
        eprintln!(
            "  note: {} ran out of seeded orders after {:.1} s",
            design.label(),
            elapsed.as_secs_f64()
        );
    }
    let after = pgstat::snapshot(db, &tables).await?;
    let written = pgstat::total(&pgstat::delta(&before, &after));
    Ok(Run {
        per_s: rate(done.deliveries, elapsed),
        deliveries: done.deliveries,
        transactions: done.transactions,
        applied: done.applied,
        rows_per_payment: written as f64 / done.applied.max(1) as f64,
        cpu,
    })
}

/// What one worker writes with: a connection of its own, or the application layer's pool.
enum Writer {
    Connection(sqlx::PgConnection),
    App(order_service::app::App),
}

#[derive(Debug, Default)]
struct Done {
    deliveries: u64,
    transactions: u64,
    applied: u64,
}

impl Done {
    fn add(&mut self, other: Done) {
        self.deliveries += other.deliveries;
        self.transactions += other.transactions;
        self.applied += other.applied;
    }
}

/// Empties the tables, seeds generously more orders than 2 cores can pay in `duration` and
/// returns the deliveries to apply, in order (not timed).
async fn seed(
    db: &Db,
    design: Design,
    duration: Duration,
    duplicate_share: f64,
) -> anyhow::Result<Vec<Uuid>> {
    let (per_second, duplicates) = match design {
        Design::OneStatement | Design::MultiStatement | Design::AppLayer => (8_000.0, 0.0),
        Design::Batched(..) => (16_000.0, duplicate_share),
    };
    let orders = workload::new_orders(((duration.as_secs_f64() * per_second) as usize).max(1_000));
    let mut conn = db.connect().await?;
    sqlx::query("TRUNCATE orders, transfers, order_transitions, outbox, processed_messages")
        .execute(&mut conn)
        .await?;
    workload::seed_orders(&mut conn, &orders).await?;
    conn.close().await?;
    let extra = workload::duplicates_for(orders.len(), duplicates);
    Ok(workload::payment_stream(
        &orders,
        extra,
        &mut Rng::new(orders.len() as u64),
    ))
}

/// Applies one batch (of one delivery, for the unbatched designs); returns the payments applied.
async fn apply(writer: &mut Writer, design: Design, batch: &[Uuid]) -> anyhow::Result<u64> {
    let conn = match writer {
        Writer::App(app) => {
            let [order_id] = batch else {
                anyhow::bail!("{} got a batch of {}", design.label(), batch.len());
            };
            if !app_layer::pay(app, *order_id).await? {
                anyhow::bail!(
                    "the application layer replayed the payment of fresh order {order_id}"
                );
            }
            return Ok(1);
        }
        Writer::Connection(conn) => conn,
    };
    match (design, batch) {
        (Design::OneStatement, [order_id]) => {
            if !cte::pay(conn, *order_id).await? {
                anyhow::bail!(
                    "the one-statement payment of fresh order {order_id} missed its guard"
                );
            }
            Ok(1)
        }
        (Design::MultiStatement, [order_id]) => {
            multi::pay(conn, *order_id).await?;
            Ok(1)
        }
        (Design::Batched(dedup, _), batch) => batched::apply(conn, batch, dedup).await,
        (design, batch) => anyhow::bail!("{} got a batch of {}", design.label(), batch.len()),
    }
}

/// The side-by-side runs of every design, repetition by repetition.
#[derive(Debug, Default)]
pub struct Runs {
    pub reference: Vec<Run>,
    pub ceiling: Vec<Run>,
    pub app_layer: Vec<Run>,
    pub natural: Vec<Run>,
    pub dedup_table: Vec<Run>,
}

impl Runs {
    pub fn push(&mut self, design: Design, run: Run) {
        match design {
            Design::OneStatement => self.reference.push(run),
            Design::MultiStatement => self.ceiling.push(run),
            Design::AppLayer => self.app_layer.push(run),
            Design::Batched(Dedup::Natural, _) => self.natural.push(run),
            Design::Batched(Dedup::Table, _) => self.dedup_table.push(run),
        }
    }
}

/// The median rows written per applied payment.
pub fn rows_per_payment(runs: &[Run]) -> f64 {
    median(&runs.iter().map(|r| r.rows_per_payment).collect::<Vec<_>>()).unwrap_or(0.0)
}
