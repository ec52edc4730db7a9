//! The public representation of orders, ledger entries, history and an order's published events:
//! what the REST API returns
//! and what outbound events carry as `data`. One shape, shared by both doors and the docs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::domain::{
    Direction, HistoryEntry, LedgerEntry, Order, OrderStatus, RecordedCause, Source,
};
use crate::store::outbox::order_events::HeldEvent;

/// Where an order is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[schema(as = OrderStatus)]
pub enum OrderStatusView {
    PendingPayment,
    Paid,
    Shipped,
    Cancelled,
}

impl From<OrderStatus> for OrderStatusView {
    fn from(status: OrderStatus) -> Self {
        match status {
            OrderStatus::PendingPayment => OrderStatusView::PendingPayment,
            OrderStatus::Paid => OrderStatusView::Paid,
            OrderStatus::Shipped => OrderStatusView::Shipped,
            OrderStatus::Cancelled => OrderStatusView::Cancelled,
        }
    }
}

impl From<OrderStatusView> for OrderStatus {
    fn from(status: OrderStatusView) -> Self {
        match status {
            OrderStatusView::PendingPayment => OrderStatus::PendingPayment,
            OrderStatusView::Paid => OrderStatus::Paid,
            OrderStatusView::Shipped => OrderStatus::Shipped,
            OrderStatusView::Cancelled => OrderStatus::Cancelled,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ShipmentView {
    #[schema(example = "DHL")]
    pub carrier: String,
    #[schema(example = "JD014600006281234567")]
    pub tracking_number: String,
}

/// An order as clients and subscribers see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OrderView {
    #[schema(example = "0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5a")]
    pub id: Uuid,
    #[schema(example = "customer-42")]
    pub customer_id: String,
    /// The price in integer minor units (cents for EUR).
    #[schema(example = 4999)]
    pub amount_minor: i64,
    #[schema(example = "EUR")]
    pub currency: String,
    pub status: OrderStatusView,
    /// 1 at creation, +1 on every change; the `ETag` is `"<version>"`.
    #[schema(example = 1)]
    pub version: i64,
    /// Sum of the order's incoming ledger entries (payments).
    #[schema(example = 0)]
    pub paid_minor: i64,
    /// Sum of the order's outgoing ledger entries (refunds); never above `paid_minor`.
    #[schema(example = 0)]
    pub refunded_minor: i64,
    /// Money held that must go back: on a cancelled order `paid - refunded`, otherwise
    /// `max(0, paid - amount) - refunded`; never below 0.
    #[schema(example = 0)]
    pub refund_due_minor: i64,
    /// `refund_due_minor > 0`.
    pub refund_required: bool,
    pub shipment: Option<ShipmentView>,
    pub cancellation_reason: Option<String>,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub created_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub updated_at: DateTime<Utc>,
}

impl From<&Order> for OrderView {
    fn from(order: &Order) -> Self {
        Self {
            id: order.id.as_uuid(),
            customer_id: order.customer_id.to_string(),
            amount_minor: order.amount.minor.get(),
            currency: order.amount.currency.to_string(),
            status: order.status.into(),
            version: order.version.get(),
            paid_minor: order.paid_minor,
            refunded_minor: order.refunded_minor,
            refund_due_minor: order.refund_due_minor(),
            refund_required: order.refund_required,
            shipment: order.shipment.as_ref().map(|s| ShipmentView {
                carrier: s.carrier.to_string(),
                tracking_number: s.tracking_number.to_string(),
            }),
            cancellation_reason: order.cancellation_reason.as_ref().map(|r| r.to_string()),
            created_at: order.created_at,
            updated_at: order.updated_at,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceView {
    Api,
    Amqp,
    /// The payment-expiry sweep (history only: it records no money).
    Timer,
    /// The command line (dead-letter actions only).
    Cli,
}

impl From<Source> for SourceView {
    fn from(source: Source) -> Self {
        match source {
            Source::Api => SourceView::Api,
            Source::Amqp => SourceView::Amqp,
            Source::Timer => SourceView::Timer,
            Source::Cli => SourceView::Cli,
        }
    }
}

/// Which way money moved: `in` for a payment, `out` for a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DirectionView {
    In,
    Out,
}

impl From<Direction> for DirectionView {
    fn from(direction: Direction) -> Self {
        match direction {
            Direction::In => DirectionView::In,
            Direction::Out => DirectionView::Out,
        }
    }
}

/// One transfer of money in the ledger: a payment, or a refund (whose `transfer_id` is its
/// `refund_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LedgerEntryView {
    #[schema(example = "tr_1Nv0FGQ9")]
    pub transfer_id: String,
    pub order_id: Uuid,
    pub direction: DirectionView,
    #[schema(example = 4999)]
    pub amount_minor: i64,
    #[schema(example = "EUR")]
    pub currency: String,
    pub source: SourceView,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub received_at: DateTime<Utc>,
}

impl From<&LedgerEntry> for LedgerEntryView {
    fn from(entry: &LedgerEntry) -> Self {
        Self {
            transfer_id: entry.transfer.id.to_string(),
            order_id: entry.transfer.order_id.as_uuid(),
            direction: entry.transfer.direction.into(),
            amount_minor: entry.transfer.money.minor.get(),
            currency: entry.transfer.money.currency.to_string(),
            source: entry.source.into(),
            received_at: entry.received_at,
        }
    }
}

/// What caused a change: a REST request (client and Idempotency-Key), an AMQP event, or the
/// payment-expiry timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CauseView {
    pub source: SourceView,
    pub client_id: Option<String>,
    /// Shown only to the client that sent it; null for every other reader.
    pub idempotency_key: Option<String>,
    pub event_id: Option<String>,
}

impl From<&RecordedCause> for CauseView {
    fn from(cause: &RecordedCause) -> Self {
        Self {
            source: cause.source.into(),
            client_id: cause.client_id.clone(),
            idempotency_key: cause.idempotency_key.clone(),
            event_id: cause.event_id.clone(),
        }
    }
}

/// One version of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HistoryEntryView {
    #[schema(example = 2)]
    pub version: i64,
    /// `created`, `payment_recorded`, `paid`, `shipped`, `cancelled` or `refund_recorded`.
    #[schema(example = "paid")]
    pub kind: String,
    /// Null at creation.
    pub from: Option<OrderStatusView>,
    pub to: OrderStatusView,
    /// The ledger entry recorded by this change, if any.
    pub transfer_id: Option<String>,
    pub cause: CauseView,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub at: DateTime<Utc>,
}

impl From<&HistoryEntry> for HistoryEntryView {
    fn from(entry: &HistoryEntry) -> Self {
        Self {
            version: entry.version.get(),
            kind: entry.kind.to_string(),
            from: entry.from.map(Into::into),
            to: entry.to.into(),
            transfer_id: entry.transfer_id.clone(),
            cause: CauseView::from(&entry.cause),
            at: entry.at,
        }
    }
}

/// Where an order's event stands in the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderEventStateView {
    /// Written with its change, waiting for the relay.
    Pending,
    /// The broker confirmed it.
    Published,
    /// The relay could not publish it and set it aside for an operator (`set_aside_reason`).
    SetAside,
}

/// An event an order's change wrote, as the outbox still holds it (published events are pruned
/// after `OUTBOX_RETENTION_HOURS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OrderEventView {
    /// The event's id, also its AMQP `message_id`.
    pub event_id: Uuid,
    /// The event type (the routing key), e.g. `order.paid`.
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    /// The order's version the change produced.
    pub order_version: Option<i64>,
    /// When the change wrote it.
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub created_at: DateTime<Utc>,
    pub state: OrderEventStateView,
    #[serde(serialize_with = "crate::app::json_time::serialize_option")]
    pub published_at: Option<DateTime<Utc>>,
    /// Why the relay set it aside, if it did.
    pub set_aside_reason: Option<String>,
}

impl From<&HeldEvent> for OrderEventView {
    fn from(event: &HeldEvent) -> Self {
        let state = match (&event.set_aside_reason, event.published_at) {
            (Some(_), _) => OrderEventStateView::SetAside,
            (None, Some(_)) => OrderEventStateView::Published,
            (None, None) => OrderEventStateView::Pending,
        };
        Self {
            event_id: event.event_id,
            event_type: event.event_type.clone(),
            order_version: event.order_version,
            created_at: event.created_at,
            state,
            published_at: event.published_at,
            set_aside_reason: event.set_aside_reason.clone(),
        }
    }
}
