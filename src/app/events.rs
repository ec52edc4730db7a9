//! Writing a decided change: the guarded update, its history row and its outbox events, all in
//! the caller's transaction.

use sqlx::PgConnection;
use uuid::Uuid;

use super::views::OrderView;
use super::{AppError, lost_race};
use crate::domain::{Cause, Change, EventType, Order, OrderId, TransferId};
use crate::store::orders;
use crate::store::outbox::{self, NewEvent};
use crate::store::transitions::{self, NewTransition};

/// Namespace for event ids: `event_id = uuidv5(NS, "<order_id>/<version>/<type>")`, so an event
/// has the same id however many times the change that emits it is attempted.
const EVENT_NAMESPACE: Uuid = Uuid::from_u128(0x6f72_6465_722d_7365_7276_6963_652d_6576);

pub(super) fn event_id(order_id: OrderId, version: i64, event_type: EventType) -> Uuid {
    Uuid::new_v5(
        &EVENT_NAMESPACE,
        format!("{order_id}/{version}/{event_type}").as_bytes(),
    )
}

/// The envelope of DESIGN.md §3 carrying the order as the REST API shows it.
pub(super) fn envelope(event_type: EventType, order: &Order) -> NewEvent {
    let event_id = event_id(order.id, order.version, event_type);
    let payload = serde_json::json!({
        "event_id": event_id,
        "type": event_type.as_ref(),
        "occurred_at": order.updated_at,
        "data": OrderView::from(order),
    });
    NewEvent {
        event_id,
        event_type,
        order_id: order.id,
        order_version: order.version,
        payload,
    }
}

pub(super) async fn write_events(
    conn: &mut PgConnection,
    events: &[EventType],
    order: &Order,
) -> Result<(), AppError> {
    for &event_type in events {
        outbox::insert(conn, &envelope(event_type, order)).await?;
    }
    Ok(())
}

/// Applies `change` with its guarded update, then writes its history row and events.
/// `None`: another writer changed the order (or took the key) first.
pub(super) async fn write_change(
    conn: &mut PgConnection,
    change: &Change,
    transfer_id: Option<&TransferId>,
    cause: &Cause,
) -> Result<Option<Order>, AppError> {
    // No row: another writer moved the order first. A serialization failure or deadlock is the
    // same news.
    let Some(order) = lost_race(orders::apply(conn, change).await)?.flatten() else {
        return Ok(None);
    };
    let history = NewTransition {
        order_id: order.id,
        version: order.version,
        kind: change.kind,
        from: Some(change.from),
        to: order.status,
        transfer_id: transfer_id.map(|t| t.as_str()),
        cause,
    };
    if lost_race(transitions::insert(conn, history).await)?.is_none() {
        return Ok(None);
    }
    write_events(conn, &change.events, &order).await?;
    Ok(Some(order))
}

/// Counts a committed change (call after commit).
pub(super) fn record_metrics(kind: &str, from: &str, to: &str, cause: &Cause) {
    metrics::counter!(
        "order_changes_total",
        "kind" => kind.to_owned(),
        "from" => from.to_owned(),
        "to" => to.to_owned(),
        "source" => cause.source().as_ref().to_owned(),
    )
    .increment(1);
}
