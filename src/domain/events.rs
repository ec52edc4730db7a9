//! The events order-service emits: one per status change, one when a refund becomes due, and one
//! per recorded refund.

use strum::{AsRefStr, Display, EnumIter, EnumString, IntoStaticStr};

/// Every type, in the order of `EnumIter`, is in the AsyncAPI document (docs/messaging.md "The
/// messaging contract: AsyncAPI").
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr, EnumIter,
)]
pub enum EventType {
    #[strum(serialize = "order.created")]
    OrderCreated,
    #[strum(serialize = "order.paid")]
    OrderPaid,
    #[strum(serialize = "order.shipped")]
    OrderShipped,
    #[strum(serialize = "order.cancelled")]
    OrderCancelled,
    #[strum(serialize = "order.refund_required")]
    OrderRefundRequired,
    #[strum(serialize = "order.refunded")]
    OrderRefunded,
}
