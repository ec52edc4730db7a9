//! A command on an order in two statements, each atomic on its own, so neither needs a transaction
//! around it (docs/architecture.md "Two statements, no transaction"; bench/README.md "Round trips
//! per command"):
//!
//! - [`read`]: the order, the committed request holding the Idempotency-Key (folded in from
//!   `keys`), and for a payment or refund the ledger row of its id — one snapshot, so the key and
//!   the state it is decided against never disagree.
//! - [`write`]: the decided change as one data-modifying statement — the guarded update of the
//!   order (or its insert, when it is placed), its ledger row, its history row and its outbox rows.
//!   Every insert takes its rows `FROM` the update's `RETURNING`, so when the guard misses nothing
//!   is written; a unique violation (the transfer id, the key, one change into each status, the
//!   version) fails the whole statement. Either way the caller re-reads and decides again.
//!
//! Each event takes its position in the outbox's log from the order's row (docs/messaging.md "The
//! outbox as a log"): `last_event_pos` becomes `greatest(last_event_pos, this transaction's id)`,
//! read back after the row lock, so an order's later event never sorts before an earlier one.
//!
//! The version guard is the optimistic check: a change decided on version `v` is written only if
//! the order is still at `v`, however long ago it was read. The write ends with
//! `order_service_in_time` (see its migration), after all its rows: past its caller's time limit
//! it fails whole.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection, Row};
use uuid::Uuid;

use super::keys::{Keyed, KeyedRow, bound, keyed_cte};
use super::orders::{OrderRow, order_columns};
use super::outbox::NewEvent;
use super::transfers::{TransferRow, ledger_columns};
use super::{Guarded, StoreError, in_time};
use crate::domain::{
    Cause, KeyScope, LedgerEntry, Order, OrderId, OrderStatus, Transfer, TransferId,
    TransitionKind, Version,
};
use crate::telemetry::TraceContext;

/// What a command on an order decides on, read in one statement with the request holding its key.
#[derive(Debug)]
pub struct Snapshot {
    /// The database's clock at the read: the time the change is stamped with.
    pub read_at: DateTime<Utc>,
    /// The order the key's change touched, or else the one asked for.
    pub order: Option<Order>,
    /// The ledger row of the key's change, or else of the transfer id asked for.
    pub entry: Option<LedgerEntry>,
}

/// Reads `order_id` (and `transfer_id`'s ledger row) with the request holding `scope`'s key. A
/// key held by a change reads what that change touched instead: a placement retried without an
/// id in its body finds the order its first attempt placed.
pub async fn read(
    conn: &mut PgConnection,
    order_id: OrderId,
    scope: Option<KeyScope<'_>>,
    transfer_id: Option<&TransferId>,
) -> Result<(Option<Keyed>, Snapshot), StoreError> {
    let (client, key) = bound(scope);
    let row = sqlx::query(concat!(
        "WITH ",
        keyed_cte!(),
        " SELECT statement_timestamp() AS read_at, keyed.*, ",
        order_columns!(),
        ", ",
        ledger_columns!(),
        " FROM (SELECT) AS one LEFT JOIN keyed ON true \
         LEFT JOIN orders ON orders.id = COALESCE(keyed.key_order_id, $3) \
         LEFT JOIN transfers ON transfers.transfer_id = COALESCE(keyed.key_transfer_id, $4)"
    ))
    .bind(client)
    .bind(key)
    .bind(order_id.as_uuid())
    .bind(transfer_id.map(TransferId::as_str))
    .fetch_one(conn)
    .await?;
    let snapshot = Snapshot {
        read_at: row.try_get("read_at")?,
        order: present::<Uuid, OrderRow>(&row, "id")?
            .map(Order::try_from)
            .transpose()?,
        entry: present::<String, TransferRow>(&row, "ledger_id")?
            .map(LedgerEntry::try_from)
            .transpose()?,
    };
    Ok((KeyedRow::from_row(&row)?.into_keyed()?, snapshot))
}

/// The `R` part of an outer-joined `row`: `None` when its `column` (never NULL in its table) is.
pub(super) fn present<'r, T, R>(row: &'r PgRow, column: &str) -> Result<Option<R>, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
    R: FromRow<'r, PgRow>,
{
    match row.try_get::<Option<T>, _>(column)? {
        Some(_) => Ok(Some(R::from_row(row)?)),
        None => Ok(None),
    }
}

/// A decided change of one order, as [`write`] records it.
pub struct OrderWrite<'a> {
    /// The order as the change leaves it (its `updated_at` the change's time).
    pub next: &'a Order,
    /// The status and version the order must still have; `None` places it, unless its id is
    /// taken.
    pub expected: Option<(OrderStatus, Version)>,
    pub kind: TransitionKind,
    /// The payment or refund the change records.
    pub transfer: Option<&'a Transfer>,
    pub cause: &'a Cause,
    pub events: &'a [NewEvent],
    /// The context of the span that caused the change, stored with each event.
    pub trace: &'a TraceContext,
}

/// Writes `change` with one statement, which takes effect only `within` the time its caller has
/// left (if it has a limit; else [`StoreError::Unavailable`] and nothing is written).
/// [`Guarded::Lost`]: the order is no longer as it was read (or, when placing, its id is taken),
/// or a concurrent writer holds a unique guard (the transfer id, the request's key, the one change
/// into this status, the version); nothing was written.
pub async fn write(
    conn: &mut PgConnection,
    change: &OrderWrite<'_>,
    within: Option<Duration>,
) -> Result<Guarded<()>, StoreError> {
    let next = change.next;
    let shipment = next.shipment.as_ref();
    let transfer = change.transfer;
    let (client, key, fingerprint, event_id) = history_cause(change.cause);
    let written = sqlx::query_as::<_, (i64, bool)>(
        "WITH created AS (\
             INSERT INTO orders (id, customer_id, amount_minor, currency, status, version, \
                 paid_minor, refunded_minor, refund_required, carrier, tracking_number, \
                 cancellation_reason, created_at, updated_at, last_event_pos) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
                 pg_current_xact_id() \
             WHERE $15::text IS NULL \
             ON CONFLICT (id) DO NOTHING RETURNING id, version, last_event_pos), \
         updated AS (\
             UPDATE orders SET status = $5, version = $6, paid_minor = $7, refunded_minor = $8, \
                 refund_required = $9, carrier = $10, tracking_number = $11, \
                 cancellation_reason = $12, updated_at = $14, \
                 last_event_pos = greatest(last_event_pos, pg_current_xact_id()) \
             WHERE $15::text IS NOT NULL AND id = $1 AND status = $15 AND version = $16 \
             RETURNING id, version, last_event_pos), \
         changed AS (SELECT * FROM created UNION ALL SELECT * FROM updated), \
         ledger AS (\
             INSERT INTO transfers (transfer_id, order_id, direction, amount_minor, currency, \
                 source, received_at) \
             SELECT $17, id, $18, $19, $20, $21, $14 FROM changed WHERE $17::text IS NOT NULL \
             RETURNING 1), \
         history AS (\
             INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
                 transfer_id, cause_source, client_id, idempotency_key, request_fingerprint, \
                 event_id) \
             SELECT id, version, $22, $15, $5, $17, $21, $23, $24, $25, $26 FROM changed \
             RETURNING 1), \
         events AS (\
             INSERT INTO outbox (event_id, event_type, order_id, order_version, payload, \
                 traceparent, tracestate, pos) \
             SELECT e.event_id, e.event_type, changed.id, changed.version, e.payload::jsonb, \
                 $30, $31, changed.last_event_pos \
             FROM changed, unnest($27::uuid[], $28::text[], $29::text[]) \
                 WITH ORDINALITY AS e (event_id, event_type, payload, n) \
             ORDER BY e.n RETURNING 1) \
         SELECT changed.version, order_service_in_time($32) FROM changed, \
             (SELECT count(*) FROM ledger) AS l, (SELECT count(*) FROM history) AS h, \
             (SELECT count(*) FROM events) AS e",
    )
    .bind(next.id.as_uuid())
    .bind(next.customer_id.as_str())
    .bind(next.amount.minor.get())
    .bind(next.amount.currency.as_str())
    .bind(next.status.as_ref())
    .bind(next.version.get())
    .bind(next.paid_minor)
    .bind(next.refunded_minor)
    .bind(next.refund_required)
    .bind(shipment.map(|s| s.carrier.as_str()))
    .bind(shipment.map(|s| s.tracking_number.as_str()))
    .bind(next.cancellation_reason.as_ref().map(|r| r.as_str()))
    .bind(next.created_at)
    .bind(next.updated_at)
    .bind(
        change
            .expected
            .map(|(status, _)| <&'static str>::from(status)),
    )
    .bind(change.expected.map(|(_, version)| version.get()))
    .bind(transfer.map(|t| t.id.as_str()))
    .bind(transfer.map(|t| <&'static str>::from(t.direction)))
    .bind(transfer.map(|t| t.money.minor.get()))
    .bind(transfer.map(|t| t.money.currency.as_str()))
    .bind(change.cause.source().as_ref())
    .bind(change.kind.as_ref())
    .bind(client)
    .bind(key)
    .bind(fingerprint)
    .bind(event_id)
    .bind(change.events.iter().map(|e| e.event_id).collect::<Vec<_>>())
    .bind(
        change
            .events
            .iter()
            .map(|e| e.event_type.as_ref())
            .collect::<Vec<_>>(),
    )
    .bind(
        change
            .events
            .iter()
            .map(|e| e.payload.as_str())
            .collect::<Vec<_>>(),
    )
    .bind(change.trace.traceparent())
    .bind(change.trace.tracestate())
    .bind(in_time(within))
    .fetch_optional(conn)
    .await;
    match written.map_err(StoreError::from) {
        Ok(Some(_)) => Ok(Guarded::Applied(())),
        Ok(None) | Err(StoreError::Contended(_)) => Ok(Guarded::Lost),
        Err(error) => Err(error),
    }
}

/// The history row's cause columns: client, key and fingerprint of a request, or an event's id.
pub(super) fn history_cause(
    cause: &Cause,
) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    match cause {
        Cause::Amqp { event_id } => (None, None, None, Some(event_id.as_str())),
        // No order command runs from the command line: the table's cause check refuses it.
        Cause::Api { .. } | Cause::Cli { .. } | Cause::Timer => {
            let scope = cause.key_scope();
            (
                scope.map(|s| s.client),
                scope.map(|s| s.key.as_str()),
                scope.map(|s| s.fingerprint.as_str()),
                None,
            )
        }
    }
}
