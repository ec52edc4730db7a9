//! The changes of a batch of commands in two statements for the whole batch, not two per command
//! (docs/messaging.md "Batched consumer commits"):
//!
//! - [`read_many`]: every order and ledger row the batch asks for, in one statement
//!   (`unnest` of the asked ids, joined to `orders` and `transfers`), one [`Snapshot`] per ask.
//! - [`write_many`]: every decided change in one data-modifying statement built from arrays. Each
//!   order is written once, as its last change leaves it, guarded by the status and version its
//!   first change expected (or inserted, when it is placed); the ledger, history and outbox rows of
//!   every change are taken from the orders the statement actually wrote, so an order whose guard
//!   missed writes nothing at all, and the others are written. A unique violation (the transfer id
//!   taken by a concurrent writer for another order, the one change into a status, an event id)
//!   fails the whole statement: the caller falls back to deciding the commands one by one.
//!   Each event takes its position in the outbox's log from the row of its order, as in
//!   `order_changes`: an order's events of one batch share it, in the order written.
//!
//! No key scope is read: a batch carries AMQP events, whose cause holds no Idempotency-Key.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use super::order_changes::{OrderWrite, Snapshot, history_cause, present};
use super::orders::{OrderRow, order_columns};
use super::transfers::{TransferRow, ledger_columns};
use super::{StoreError, in_time};
use crate::domain::{LedgerEntry, Order, OrderId, TransferId};

/// Reads, in one statement, each asked order (and the ledger row of each asked transfer id): one
/// snapshot per ask, in the order asked, all at the same instant.
pub async fn read_many(
    conn: &mut PgConnection,
    asked: &[(OrderId, Option<&TransferId>)],
) -> Result<Vec<Snapshot>, StoreError> {
    let order_ids: Vec<Uuid> = asked.iter().map(|(id, _)| id.as_uuid()).collect();
    let transfer_ids: Vec<Option<&str>> = asked
        .iter()
        .map(|(_, transfer)| transfer.map(TransferId::as_str))
        .collect();
    let rows = sqlx::query(concat!(
        "SELECT statement_timestamp() AS read_at, ",
        order_columns!(),
        ", ",
        ledger_columns!(),
        " FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS asked (order_id, transfer_id, n) \
         LEFT JOIN orders ON orders.id = asked.order_id \
         LEFT JOIN transfers ON transfers.transfer_id = asked.transfer_id \
         ORDER BY asked.n"
    ))
    .bind(&order_ids)
    .bind(&transfer_ids)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(Snapshot {
                read_at: row.try_get("read_at")?,
                order: present::<Uuid, OrderRow>(row, "id")?
                    .map(Order::try_from)
                    .transpose()?,
                entry: present::<String, TransferRow>(row, "ledger_id")?
                    .map(LedgerEntry::try_from)
                    .transpose()?,
            })
        })
        .collect()
}

/// Writes `changes` with one statement, which takes effect only `within` the time its caller has
/// left (if it has a limit). The changes of one order are consecutive, in the order they were
/// decided: each expects what the one before it left. Returns the orders written; a change of an
/// order not among them lost a race (its guard missed, or its id was taken) and wrote nothing.
pub async fn write_many(
    conn: &mut PgConnection,
    changes: &[OrderWrite<'_>],
    within: Option<Duration>,
) -> Result<HashSet<OrderId>, StoreError> {
    let orders = OrderColumns::of(changes);
    let rows = ChangeColumns::of(changes);
    let written: Vec<(Uuid, bool)> = sqlx::query_as(
        "WITH target AS (\
             SELECT * FROM unnest($1::uuid[], $2::text[], $3::int8[], $4::text[], $5::text[], \
                 $6::int8[], $7::int8[], $8::int8[], $9::bool[], $10::text[], $11::text[], \
                 $12::text[], $13::timestamptz[], $14::timestamptz[], $15::text[], $16::int8[]) \
             AS t (id, customer_id, amount_minor, currency, status, version, paid_minor, \
                 refunded_minor, refund_required, carrier, tracking_number, cancellation_reason, \
                 created_at, updated_at, expected_status, expected_version)), \
         created AS (\
             INSERT INTO orders (id, customer_id, amount_minor, currency, status, version, \
                 paid_minor, refunded_minor, refund_required, carrier, tracking_number, \
                 cancellation_reason, created_at, updated_at, last_event_pos) \
             SELECT id, customer_id, amount_minor, currency, status, version, paid_minor, \
                 refunded_minor, refund_required, carrier, tracking_number, cancellation_reason, \
                 created_at, updated_at, pg_current_xact_id() \
             FROM target WHERE expected_status IS NULL \
             ON CONFLICT (id) DO NOTHING RETURNING id, last_event_pos), \
         updated AS (\
             UPDATE orders SET status = t.status, version = t.version, \
                 paid_minor = t.paid_minor, refunded_minor = t.refunded_minor, \
                 refund_required = t.refund_required, carrier = t.carrier, \
                 tracking_number = t.tracking_number, \
                 cancellation_reason = t.cancellation_reason, updated_at = t.updated_at, \
                 last_event_pos = greatest(orders.last_event_pos, pg_current_xact_id()) \
             FROM target AS t \
             WHERE t.expected_status IS NOT NULL AND orders.id = t.id \
                 AND orders.status = t.expected_status AND orders.version = t.expected_version \
             RETURNING orders.id, orders.last_event_pos), \
         changed AS (SELECT * FROM created UNION ALL SELECT * FROM updated), \
         change AS (\
             SELECT * FROM unnest($17::uuid[], $18::int8[], $19::text[], $20::text[], \
                 $21::text[], $22::text[], $23::text[], $24::int8[], $25::text[], \
                 $26::timestamptz[], $27::text[], $28::text[]) \
             AS c (order_id, version, kind, from_status, to_status, transfer_id, direction, \
                 amount_minor, currency, at, cause_source, event_id) \
             WHERE c.order_id IN (SELECT id FROM changed)), \
         ledger AS (\
             INSERT INTO transfers (transfer_id, order_id, direction, amount_minor, currency, \
                 source, received_at) \
             SELECT transfer_id, order_id, direction, amount_minor, currency, cause_source, at \
             FROM change WHERE transfer_id IS NOT NULL \
             RETURNING 1), \
         history AS (\
             INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
                 transfer_id, cause_source, event_id) \
             SELECT order_id, version, kind, from_status, to_status, transfer_id, cause_source, \
                 event_id FROM change \
             RETURNING 1), \
         events AS (\
             INSERT INTO outbox (event_id, event_type, order_id, order_version, payload, \
                 traceparent, tracestate, pos) \
             SELECT e.event_id, e.event_type, e.order_id, e.order_version, e.payload::jsonb, \
                 e.traceparent, e.tracestate, changed.last_event_pos \
             FROM unnest($29::uuid[], $30::text[], $31::uuid[], $32::int8[], $33::text[], \
                 $34::text[], $35::text[]) WITH ORDINALITY \
                 AS e (event_id, event_type, order_id, order_version, payload, traceparent, \
                     tracestate, n) \
             JOIN changed ON changed.id = e.order_id \
             ORDER BY e.n RETURNING 1) \
         SELECT changed.id, order_service_in_time($36) FROM changed, \
             (SELECT count(*) FROM ledger) AS l, (SELECT count(*) FROM history) AS h, \
             (SELECT count(*) FROM events) AS e",
    )
    .bind(orders.id)
    .bind(orders.customer_id)
    .bind(orders.amount_minor)
    .bind(orders.currency)
    .bind(orders.status)
    .bind(orders.version)
    .bind(orders.paid_minor)
    .bind(orders.refunded_minor)
    .bind(orders.refund_required)
    .bind(orders.carrier)
    .bind(orders.tracking_number)
    .bind(orders.cancellation_reason)
    .bind(orders.created_at)
    .bind(orders.updated_at)
    .bind(orders.expected_status)
    .bind(orders.expected_version)
    .bind(rows.order_id)
    .bind(rows.version)
    .bind(rows.kind)
    .bind(rows.from_status)
    .bind(rows.to_status)
    .bind(rows.transfer_id)
    .bind(rows.direction)
    .bind(rows.amount_minor)
    .bind(rows.currency)
    .bind(rows.at)
    .bind(rows.cause_source)
    .bind(rows.event_id)
    .bind(rows.events.event_id)
    .bind(rows.events.event_type)
    .bind(rows.events.order_id)
    .bind(rows.events.order_version)
    .bind(rows.events.payload)
    .bind(rows.events.traceparent)
    .bind(rows.events.tracestate)
    .bind(in_time(within))
    .fetch_all(conn)
    .await?;
    Ok(written
        .into_iter()
        .map(|(id, _)| OrderId::from_uuid(id))
        .collect())
}

/// The `orders` rows of a batch as columns: one per order, as its last change leaves it, with the
/// status and version its first change expected (`NULL`: placed).
#[derive(Default)]
struct OrderColumns<'a> {
    id: Vec<Uuid>,
    customer_id: Vec<&'a str>,
    amount_minor: Vec<i64>,
    currency: Vec<&'a str>,
    status: Vec<&'static str>,
    version: Vec<i64>,
    paid_minor: Vec<i64>,
    refunded_minor: Vec<i64>,
    refund_required: Vec<bool>,
    carrier: Vec<Option<&'a str>>,
    tracking_number: Vec<Option<&'a str>>,
    cancellation_reason: Vec<Option<&'a str>>,
    created_at: Vec<DateTime<Utc>>,
    updated_at: Vec<DateTime<Utc>>,
    expected_status: Vec<Option<&'static str>>,
    expected_version: Vec<Option<i64>>,
}

impl<'a> OrderColumns<'a> {
    fn of(changes: &'a [OrderWrite<'a>]) -> Self {
        let mut columns = Self::default();
        for (i, change) in changes.iter().enumerate() {
            let id = change.next.id;
            let first_of_order = i == 0 || changes[i - 1].next.id != id;
            let last_of_order = changes.get(i + 1).is_none_or(|after| after.next.id != id);
            if first_of_order {
                columns
                    .expected_status
                    .push(change.expected.map(|(s, _)| s.into()));
                columns
                    .expected_version
                    .push(change.expected.map(|(_, v)| v.get()));
            }
            if last_of_order {
                columns.push_order(change.next);
            }
        }
        columns
    }

    fn push_order(&mut self, order: &'a Order) {
        let shipment = order.shipment.as_ref();
        self.id.push(order.id.as_uuid());
        self.customer_id.push(order.customer_id.as_str());
        self.amount_minor.push(order.amount.minor.get());
        self.currency.push(order.amount.currency.as_str());
        self.status.push(order.status.into());
        self.version.push(order.version.get());
        self.paid_minor.push(order.paid_minor);
        self.refunded_minor.push(order.refunded_minor);
        self.refund_required.push(order.refund_required);
        self.carrier.push(shipment.map(|s| s.carrier.as_str()));
        self.tracking_number
            .push(shipment.map(|s| s.tracking_number.as_str()));
        self.cancellation_reason
            .push(order.cancellation_reason.as_ref().map(|r| r.as_str()));
        self.created_at.push(order.created_at);
        self.updated_at.push(order.updated_at);
    }
}

/// One history row per change, with the ledger row it records (if any), as columns.
#[derive(Default)]
struct ChangeColumns<'a> {
    order_id: Vec<Uuid>,
    version: Vec<i64>,
    kind: Vec<&'static str>,
    from_status: Vec<Option<&'static str>>,
    to_status: Vec<&'static str>,
    transfer_id: Vec<Option<&'a str>>,
    direction: Vec<Option<&'static str>>,
    amount_minor: Vec<Option<i64>>,
    currency: Vec<Option<&'a str>>,
    at: Vec<DateTime<Utc>>,
    cause_source: Vec<&'static str>,
    event_id: Vec<Option<&'a str>>,
    events: EventColumns<'a>,
}

/// The outbox rows of every change, as columns, in the order they are published.
#[derive(Default)]
struct EventColumns<'a> {
    event_id: Vec<Uuid>,
    event_type: Vec<&'static str>,
    order_id: Vec<Uuid>,
    order_version: Vec<i64>,
    payload: Vec<&'a str>,
    traceparent: Vec<String>,
    tracestate: Vec<Option<&'a str>>,
}

impl<'a> ChangeColumns<'a> {
    fn of(changes: &'a [OrderWrite<'a>]) -> Self {
        let mut columns = Self::default();
        for change in changes {
            let next = change.next;
            let transfer = change.transfer;
            columns.order_id.push(next.id.as_uuid());
            columns.version.push(next.version.get());
            columns.kind.push(change.kind.into());
            columns
                .from_status
                .push(change.expected.map(|(s, _)| s.into()));
            columns.to_status.push(next.status.into());
            columns.transfer_id.push(transfer.map(|t| t.id.as_str()));
            columns.direction.push(transfer.map(|t| t.direction.into()));
            columns
                .amount_minor
                .push(transfer.map(|t| t.money.minor.get()));
            columns
                .currency
                .push(transfer.map(|t| t.money.currency.as_str()));
            columns.at.push(next.updated_at);
            columns.cause_source.push(change.cause.source().into());
            let (_, _, _, event_id) = history_cause(change.cause);
            columns.event_id.push(event_id);
            let traceparent = change.trace.traceparent();
            for event in change.events {
                let events = &mut columns.events;
                events.event_id.push(event.event_id);
                events.event_type.push(event.event_type.into());
                events.order_id.push(next.id.as_uuid());
                events.order_version.push(next.version.get());
                events.payload.push(&event.payload);
                events.traceparent.push(traceparent.clone());
                events.tracestate.push(change.trace.tracestate());
            }
        }
        columns
    }
}
