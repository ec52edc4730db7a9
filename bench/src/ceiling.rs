//! The ceiling: the service's own payment transaction issued straight from sqlx, no HTTP, no
//! AMQP, no domain layer — the same statements the service sends, in the same order:
//!
//! ```text
//! BEGIN
//! INSERT INTO transfers … ON CONFLICT (transfer_id) DO NOTHING RETURNING …   -- the ledger
//! SELECT … FROM orders WHERE id = $1                                        -- read to decide
//! UPDATE orders SET … WHERE id = $1 AND status = $2 AND version = $3 …      -- the guarded write
//! INSERT INTO order_transitions …                                           -- history
//! INSERT INTO outbox …                                                      -- the status changed
//! COMMIT
//! SELECT pg_notify('order_service_outbox', '')                              -- wake the relays
//! ```
//!
//! The dedup-table design runs the same transaction behind the classic guard
//! `INSERT INTO processed_messages (message_id) … ON CONFLICT DO NOTHING` (a table created only
//! in the bench's own database, as the baseline of the alternative design).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use order_service::domain::{EventType, OrderStatus, Source, TransitionKind};

use crate::cpu::{CpuMeter, CpuSplit};
use crate::pgstat::{self, DOMAIN_TABLES};
use crate::scratch::{Db, Scratch};
use crate::stats::rate;
use crate::workload::{self, AMOUNT_MINOR, CURRENCY, Payment};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// Natural idempotency: the ledger's key and the guarded update absorb duplicates.
    Natural,
    /// The classic table of processed message ids in front of the same transaction.
    DedupTable,
}

/// One timed run.
#[derive(Debug, Clone)]
pub struct Run {
    pub tx_per_s: f64,
    pub transactions: u64,
    /// Rows written per committed transaction, from `pg_stat_user_tables`.
    pub rows_per_tx: f64,
    pub cpu: CpuSplit,
}

/// The bench's own database: the service's schema plus the dedup table of the other design.
pub async fn prepare(scratch: &Scratch) -> anyhow::Result<Db> {
    let db = scratch.migrated_database("ceiling").await?;
    let mut conn = db.connect().await?;
    sqlx::query(
        "CREATE TABLE processed_messages (\
             message_id   text        NOT NULL PRIMARY KEY, \
             processed_at timestamptz NOT NULL DEFAULT now())",
    )
    .execute(&mut conn)
    .await?;
    conn.close().await?;
    Ok(db)
}

/// Pays fresh orders from `concurrency` connections for `duration` (or until the seeded supply
/// runs out) and counts committed transactions.
pub async fn run(
    db: &Db,
    design: Design,
    concurrency: usize,
    duration: Duration,
) -> anyhow::Result<Run> {
    // Generously more orders than 2 cores can pay in `duration`; seeding is not timed.
    let supply = ((duration.as_secs_f64() * 6_000.0) as usize).max(1_000);
    let orders = workload::new_orders(supply);
    let mut seeder = db.connect().await?;
    workload::seed_orders(&mut seeder, &orders).await?;
    seeder.close().await?;

    let tables: Vec<&str> = DOMAIN_TABLES
        .iter()
        .copied()
        .chain(std::iter::once("processed_messages"))
        .collect();
    let before = pgstat::snapshot(db, &tables).await?;
    let mut connections = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        connections.push(db.connect().await?);
    }
    let orders = Arc::new(orders);
    let next = Arc::new(AtomicUsize::new(0));
    let meter = CpuMeter::start(None);
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = tokio::task::JoinSet::new();
    for mut conn in connections {
        let (orders, next) = (orders.clone(), next.clone());
        workers.spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let Some(&order_id) = orders.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                pay(&mut conn, design, order_id).await?;
                done += 1;
            }
            conn.close().await?;
            anyhow::Ok(done)
        });
    }
    let mut transactions = 0;
    while let Some(joined) = workers.join_next().await {
        transactions += joined??;
    }
    let elapsed = started.elapsed();
    let cpu = meter.stop();
    let after = pgstat::snapshot(db, &tables).await?;
    let written = pgstat::total(&pgstat::delta(&before, &after));
    Ok(Run {
        tx_per_s: rate(transactions, elapsed),
        transactions,
        rows_per_tx: if transactions > 0 {
            written as f64 / transactions as f64
        } else {
            0.0
        },
        cpu,
    })
}

#[derive(sqlx::FromRow)]
struct OrderRow {
    id: Uuid,
    customer_id: String,
    amount_minor: i64,
    currency: String,
    status: String,
    version: i64,
    paid_minor: i64,
    refund_required: bool,
    carrier: Option<String>,
    tracking_number: Option<String>,
    cancellation_reason: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    updated_at: chrono::DateTime<chrono::Utc>,
}

/// One payment that completes its order, as the service's transaction does it.
async fn pay(conn: &mut PgConnection, design: Design, order_id: Uuid) -> anyhow::Result<()> {
    let payment = Payment::for_order(order_id);
    let mut tx = conn.begin().await?;
    if design == Design::DedupTable {
        let fresh = sqlx::query(
            "INSERT INTO processed_messages (message_id) VALUES ($1) ON CONFLICT DO NOTHING",
        )
        .bind(workload::paid_event_id(order_id))
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if fresh == 0 {
            tx.commit().await?;
            return Ok(());
        }
    }
    sqlx::query_as::<
        _,
        (
            String,
            Uuid,
            i64,
            String,
            String,
            chrono::DateTime<chrono::Utc>,
        ),
    >(
        "INSERT INTO transfers (transfer_id, order_id, amount_minor, currency, source) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (transfer_id) DO NOTHING RETURNING \
         transfer_id, order_id, amount_minor, currency, source, received_at",
    )
    .bind(&payment.transfer_id)
    .bind(order_id)
    .bind(AMOUNT_MINOR)
    .bind(CURRENCY)
    .bind(Source::Amqp.as_ref())
    .fetch_optional(&mut *tx)
    .await?;
    let order = sqlx::query_as::<_, OrderRow>(
        "SELECT id, customer_id, amount_minor, currency, status, version, paid_minor, \
         refund_required, carrier, tracking_number, cancellation_reason, created_at, updated_at \
         FROM orders WHERE id = $1",
    )
    .bind(order_id)
    .fetch_one(&mut *tx)
    .await?;
    let paid = sqlx::query_as::<_, OrderRow>(
        "UPDATE orders SET status = $4, version = version + 1, paid_minor = $5, \
         refund_required = $6, carrier = $7, tracking_number = $8, cancellation_reason = $9, \
         updated_at = now() WHERE id = $1 AND status = $2 AND version = $3 RETURNING id, customer_id, amount_minor, \
         currency, status, version, paid_minor, refund_required, carrier, tracking_number, \
         cancellation_reason, created_at, updated_at",
    )
    .bind(order_id)
    .bind(&order.status)
    .bind(order.version)
    .bind(OrderStatus::Paid.as_ref())
    .bind(order.paid_minor + AMOUNT_MINOR)
    .bind(false)
    .bind(None::<&str>)
    .bind(None::<&str>)
    .bind(None::<&str>)
    .fetch_one(&mut *tx)
    .await?;
    let event_id = workload::paid_event_id(order_id);
    sqlx::query(
        "INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
         transfer_id, cause_source, client_id, idempotency_key, request_fingerprint, event_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(order_id)
    .bind(paid.version)
    .bind(TransitionKind::Paid.as_ref())
    .bind(&order.status)
    .bind(&paid.status)
    .bind(&payment.transfer_id)
    .bind(Source::Amqp.as_ref())
    .bind(None::<&str>)
    .bind(None::<&str>)
    .bind(None::<&str>)
    .bind(&event_id)
    .execute(&mut *tx)
    .await?;
    // The envelope the service writes: the order as the REST API shows it.
    let payload = json!({
        "event_id": Uuid::new_v4(), "type": EventType::OrderPaid.as_ref(), "occurred_at": paid.updated_at,
        "data": {"id": paid.id, "customer_id": paid.customer_id, "amount_minor": paid.amount_minor,
                 "currency": paid.currency, "status": paid.status, "version": paid.version,
                 "paid_minor": paid.paid_minor, "refund_required": paid.refund_required,
                 "shipment": paid.carrier.zip(paid.tracking_number),
                 "cancellation_reason": paid.cancellation_reason,
                 "created_at": paid.created_at, "updated_at": paid.updated_at},
    });
    sqlx::query(
        "INSERT INTO outbox (event_id, event_type, order_id, order_version, payload) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(Uuid::new_v4())
    .bind(EventType::OrderPaid.as_ref())
    .bind(order_id)
    .bind(paid.version)
    .bind(&payload)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    order_service::store::outbox::announce(conn).await?;
    Ok(())
}
