//! Values the domain's unit tests build orders from.

use chrono::Utc;

use super::{
    AmountMinor, BoundedText, Currency, CustomerId, Money, NewOrder, Order, OrderId, OrderStatus,
    Shipment,
};

pub fn money(minor: i64, currency: &str) -> Money {
    Money::new(
        AmountMinor::parse(minor).unwrap(),
        Currency::parse(currency).unwrap(),
    )
}

/// An order of `amount` EUR in `status` that received `paid` and refunded nothing.
pub fn order(status: OrderStatus, amount: i64, paid: i64) -> Order {
    let mut order = NewOrder {
        id: OrderId::generate(),
        customer_id: CustomerId::parse("c-1").unwrap(),
        amount: money(amount, "EUR"),
    }
    .into_order(Utc::now());
    order.status = status;
    order.paid_minor = paid;
    order.refund_required = order.refund_due_minor() > 0;
    if status == OrderStatus::Shipped {
        order.shipment = Some(shipment("DHL", "T1"));
    }
    order
}

pub fn shipment(carrier: &str, tracking: &str) -> Shipment {
    Shipment::parse(carrier, tracking).unwrap()
}

pub fn reason() -> BoundedText {
    BoundedText::parse("reason", "changed my mind", 500).unwrap()
}
