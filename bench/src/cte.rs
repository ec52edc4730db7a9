//! The one-statement reference: the minimal durable writes one payment needs — the guarded order
//! update, the ledger row, the history row and the outbox row, the same four rows the service
//! writes — as ONE data-modifying statement (bench/README.md):
//!
//! ```text
//! WITH paid    AS (UPDATE orders … WHERE id = $1 AND status = 'PENDING_PAYMENT' AND version = $v RETURNING …),
//!      ledger  AS (INSERT INTO transfers         SELECT … FROM paid            RETURNING …),
//!      history AS (INSERT INTO order_transitions SELECT … FROM paid, ledger    RETURNING …)
//! INSERT INTO outbox                             SELECT … FROM paid, history
//! ```
//!
//! Every insert is chained from the guarded update's `RETURNING`, so a missed guard (the order is
//! no longer at that version and status) writes nothing, and the statement says so: it affects one
//! outbox row or none. Sent on its own it is its own transaction (autocommit); the batched designs
//! (`batched.rs`) send it inside theirs. The outbox payload is built in the statement, in the
//! envelope the service publishes (docs/messaging.md "Published events"), and the outbox row takes
//! its position in the log from the order's row as the service's does (docs/messaging.md "The
//! outbox as a log"). No relay wake-up is sent: it is not a durable write.

use sqlx::PgConnection;
use uuid::Uuid;

use order_service::domain::{Direction, EventType, OrderStatus, Source, TransitionKind};

use crate::workload::{self, AMOUNT_MINOR, Payment, SEEDED_VERSION};

const PAY: &str = "\
WITH paid AS (
    UPDATE orders SET status = $8, version = version + 1, paid_minor = paid_minor + $3,
           updated_at = now(), last_event_pos = greatest(last_event_pos, pg_current_xact_id())
     WHERE id = $1 AND status = $7 AND version = $2
 RETURNING id, customer_id, amount_minor, currency, status, version, paid_minor, refunded_minor,
           refund_required, carrier, tracking_number, cancellation_reason, created_at, updated_at,
           last_event_pos
), ledger AS (
    INSERT INTO transfers (transfer_id, order_id, direction, amount_minor, currency, source)
    SELECT $4, paid.id, $12, $3, paid.currency, $10 FROM paid
        ON CONFLICT (transfer_id) DO NOTHING
 RETURNING transfer_id, order_id
), history AS (
    INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, transfer_id,
                                   cause_source, event_id)
    SELECT paid.id, paid.version, $9, $7, paid.status, ledger.transfer_id, $10, $5
      FROM paid JOIN ledger ON ledger.order_id = paid.id
 RETURNING order_id
)
INSERT INTO outbox (event_id, event_type, order_id, order_version, pos, payload)
SELECT $6, $11, paid.id, paid.version, paid.last_event_pos, jsonb_build_object(
    'event_id', $6::uuid, 'type', $11::text, 'occurred_at', paid.updated_at,
    'data', jsonb_build_object(
        'id', paid.id, 'customer_id', paid.customer_id, 'amount_minor', paid.amount_minor,
        'currency', paid.currency, 'status', paid.status, 'version', paid.version,
        'paid_minor', paid.paid_minor, 'refunded_minor', paid.refunded_minor,
        'refund_due_minor',
            greatest(0, greatest(0, paid.paid_minor - paid.amount_minor) - paid.refunded_minor),
        'refund_required', paid.refund_required,
        'shipment', CASE WHEN paid.carrier IS NULL THEN NULL ELSE jsonb_build_object(
            'carrier', paid.carrier, 'tracking_number', paid.tracking_number) END,
        'cancellation_reason', paid.cancellation_reason,
        'created_at', paid.created_at, 'updated_at', paid.updated_at))
  FROM paid JOIN history ON history.order_id = paid.id";

/// Pays `order_id`'s seeded order in one statement: `true` when the four rows were written,
/// `false` when the guard missed and nothing was (the order was already paid).
pub async fn pay(conn: &mut PgConnection, order_id: Uuid) -> anyhow::Result<bool> {
    let payment = Payment::for_order(order_id);
    let written = sqlx::query(PAY)
        .bind(order_id)
        .bind(SEEDED_VERSION)
        .bind(AMOUNT_MINOR)
        .bind(&payment.transfer_id)
        .bind(workload::paid_event_id(order_id))
        .bind(Uuid::new_v4())
        .bind(OrderStatus::PendingPayment.as_ref())
        .bind(OrderStatus::Paid.as_ref())
        .bind(TransitionKind::Paid.as_ref())
        .bind(Source::Amqp.as_ref())
        .bind(EventType::OrderPaid.as_ref())
        .bind(Direction::In.as_ref())
        .execute(conn)
        .await?
        .rows_affected();
    Ok(written == 1)
}
