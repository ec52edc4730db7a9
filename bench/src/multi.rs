//! The multi-statement ceiling (the older headline): the service's own payment transaction
//! issued straight from sqlx, no HTTP, no AMQP, no domain layer — the same statements the
//! service sends, in the same order:
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

use serde_json::json;
use sqlx::{Connection, PgConnection};
use uuid::Uuid;

use order_service::domain::{EventType, OrderStatus, Source, TransitionKind};

use crate::workload::{self, AMOUNT_MINOR, CURRENCY, Payment};

#[derive(sqlx::FromRow)]
struct OrderRow {
    id: Uuid,
    customer_id: String,
    amount_minor: i64,
    currency: String,
    status: String,
    version: i64,
    paid_minor: i64,
    refunded_minor: i64,
    refund_required: bool,
    carrier: Option<String>,
    tracking_number: Option<String>,
    cancellation_reason: Option<String>,
    created_at: chrono::DateTime<chrono::Utc>,
    updated_at: chrono::DateTime<chrono::Utc>,
}

/// One payment that completes its order, as the service's transaction does it.
pub async fn pay(conn: &mut PgConnection, order_id: Uuid) -> anyhow::Result<()> {
    let payment = Payment::for_order(order_id);
    let mut tx = conn.begin().await?;
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
         refunded_minor, refund_required, carrier, tracking_number, cancellation_reason, created_at, updated_at \
         FROM orders WHERE id = $1",
    )
    .bind(order_id)
    .fetch_one(&mut *tx)
    .await?;
    let paid = sqlx::query_as::<_, OrderRow>(
        "UPDATE orders SET status = $4, version = version + 1, paid_minor = $5, \
         refunded_minor = $10, refund_required = $6, carrier = $7, tracking_number = $8, \
         cancellation_reason = $9, updated_at = now(), \
         last_event_pos = greatest(last_event_pos, pg_current_xact_id()) \
         WHERE id = $1 AND status = $2 AND version = $3 RETURNING id, customer_id, amount_minor, \
         currency, status, version, paid_minor, refunded_minor, refund_required, carrier, \
         tracking_number, cancellation_reason, created_at, updated_at",
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
    .bind(order.refunded_minor)
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
    let outbound_id = Uuid::new_v4();
    let refund_due = (paid.paid_minor - paid.amount_minor).max(0) - paid.refunded_minor;
    let shipment = paid
        .carrier
        .zip(paid.tracking_number)
        .map(|(carrier, tracking_number)| json!({"carrier": carrier, "tracking_number": tracking_number}));
    let payload = json!({
        "event_id": outbound_id, "type": EventType::OrderPaid.as_ref(), "occurred_at": paid.updated_at,
        "data": {"id": paid.id, "customer_id": paid.customer_id, "amount_minor": paid.amount_minor,
                 "currency": paid.currency, "status": paid.status, "version": paid.version,
                 "paid_minor": paid.paid_minor, "refunded_minor": paid.refunded_minor,
                 "refund_due_minor": refund_due.max(0), "refund_required": paid.refund_required,
                 "shipment": shipment, "cancellation_reason": paid.cancellation_reason,
                 "created_at": paid.created_at, "updated_at": paid.updated_at},
    });
    sqlx::query(
        "INSERT INTO outbox (event_id, event_type, order_id, order_version, payload, pos) \
         VALUES ($1, $2, $3, $4, $5, (SELECT last_event_pos FROM orders WHERE id = $3))",
    )
    .bind(outbound_id)
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
