//! Request and response bodies of the REST API. Requests reject unknown fields (a typo in a
//! payment request must not be silently ignored) and become domain values in `try_into_domain`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::app::field_schemas;
use crate::app::views::{HistoryEntryView, LedgerEntryView, OrderEventView, OrderView};
use crate::domain::{
    BoundedText, CustomerId, Money, NewOrder, OrderId, Payment, Refund, Shipment, TransferId,
    ValidationError,
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"customer_id": "customer-42", "amount_minor": 4999, "currency": "EUR"}))]
pub struct PlaceOrderRequest {
    /// Optional client-chosen id; generated (UUIDv7) when absent.
    pub id: Option<Uuid>,
    #[schema(schema_with = field_schemas::customer_id)]
    pub customer_id: String,
    #[schema(schema_with = field_schemas::amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

impl PlaceOrderRequest {
    pub fn try_into_domain(self) -> Result<NewOrder, ValidationError> {
        Ok(NewOrder {
            id: self.id.map_or_else(OrderId::generate, OrderId::from_uuid),
            customer_id: CustomerId::parse(&self.customer_id)?,
            amount: Money::parse(self.amount_minor, &self.currency)?,
        })
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"transfer_id": "tr_1Nv0FGQ9", "amount_minor": 4999, "currency": "EUR"}))]
pub struct PaymentRequest {
    #[schema(schema_with = field_schemas::transfer_id)]
    pub transfer_id: String,
    #[schema(schema_with = field_schemas::amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

impl PaymentRequest {
    pub fn try_into_domain(self, order_id: OrderId) -> Result<Payment, ValidationError> {
        Ok(Payment {
            transfer_id: TransferId::parse(&self.transfer_id)?,
            order_id,
            money: Money::parse(self.amount_minor, &self.currency)?,
        })
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"refund_id": "re_3MtwBw", "amount_minor": 1000, "currency": "EUR"}))]
pub struct RefundRequest {
    #[schema(schema_with = field_schemas::refund_id)]
    pub refund_id: String,
    #[schema(schema_with = field_schemas::refund_amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

impl RefundRequest {
    pub fn try_into_domain(self, order_id: OrderId) -> Result<Refund, ValidationError> {
        Ok(Refund {
            refund_id: TransferId::parse_refund_id(&self.refund_id)?,
            order_id,
            money: Money::parse(self.amount_minor, &self.currency)?,
        })
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"carrier": "DHL", "tracking_number": "JD014600006281234567"}))]
pub struct ShipRequest {
    #[schema(schema_with = field_schemas::carrier)]
    pub carrier: String,
    #[schema(schema_with = field_schemas::tracking_number)]
    pub tracking_number: String,
}

impl ShipRequest {
    pub fn try_into_domain(self) -> Result<Shipment, ValidationError> {
        Shipment::parse(&self.carrier, &self.tracking_number)
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"reason": "customer changed their mind"}))]
pub struct CancelRequest {
    #[schema(schema_with = field_schemas::cancellation_reason)]
    pub reason: String,
}

impl CancelRequest {
    pub fn try_into_domain(self) -> Result<BoundedText, ValidationError> {
        BoundedText::cancellation_reason(&self.reason)
    }
}

/// A page of orders, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OrderList {
    pub items: Vec<OrderView>,
    /// Pass back as `after` for the next page; null on the last page.
    pub next: Option<String>,
}

/// A recorded payment: the order after it and the ledger entry.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PaymentResponse {
    pub order: OrderView,
    pub transfer: LedgerEntryView,
}

/// A recorded refund: the order after it and the ledger entry (`direction: out`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RefundResponse {
    pub order: OrderView,
    pub refund: LedgerEntryView,
}

/// A page of an order's ledger entries, oldest first; `next` (null on the last page) is the
/// `after` of the following one.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LedgerList {
    pub items: Vec<LedgerEntryView>,
    pub next: Option<String>,
}

/// A page of the events an order's changes wrote that the outbox still holds, oldest first;
/// `next` (null on the last page) is the `after` of the following one.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OrderEventList {
    pub items: Vec<OrderEventView>,
    pub next: Option<String>,
}

/// A page of an order's history, oldest first; `next` (null on the last page) is the `after` of
/// the following one.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct HistoryList {
    pub items: Vec<HistoryEntryView>,
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    use utoipa::PartialSchema;

    use super::*;
    use crate::domain::{AmountMinor, MAX_REASON_CHARS};

    /// Each bounded field documents the domain constructor's bounds (through
    /// `app::field_schemas`), not a schema derived from its Rust type alone.
    #[test]
    fn the_documented_bounds_are_the_domain_rules() {
        let place = PlaceOrderRequest::schema();
        let payment = PaymentRequest::schema();
        let refund = RefundRequest::schema();
        let cancel = CancelRequest::schema();
        let max_customer = CustomerId::MAX_CHARS as i64;
        let max_transfer = TransferId::MAX_CHARS as i64;
        let max_reason = MAX_REASON_CHARS as i64;
        for (schema, field, bound, rule) in [
            (&place, "customer_id", "maxLength", max_customer),
            (&place, "amount_minor", "maximum", AmountMinor::MAX),
            (&payment, "transfer_id", "maxLength", max_transfer),
            (&payment, "amount_minor", "maximum", AmountMinor::MAX),
            (&refund, "refund_id", "maxLength", max_transfer),
            (&refund, "amount_minor", "maximum", AmountMinor::MAX),
            (&cancel, "reason", "maxLength", max_reason),
        ] {
            let schema = serde_json::to_value(schema).unwrap();
            let documented = schema["properties"][field][bound].as_i64();
            assert_eq!(documented, Some(rule), "{field}.{bound} in {schema}");
        }
    }

    /// docs/contract.md "Pages": an entry of an order's records is at most this much JSON,
    /// whatever the values the service accepted or wrote, so a page of [`MAX_PAGE`] is at most
    /// [`MAX_PAGE`] times it.
    const MAX_RECORD_BYTES: usize = 8 * 1024;

    /// `n` characters that each take four bytes of UTF-8, which JSON does not escape.
    fn widest(n: usize) -> String {
        "\u{1D11E}".repeat(n)
    }

    fn latest() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp_micros(253_402_300_799_999_999).unwrap()
    }

    #[test]
    fn a_page_of_an_orders_records_is_bounded_whatever_they_hold() {
        use crate::app::MAX_PAGE;
        use crate::app::views::{
            CauseView, DirectionView, OrderEventStateView, OrderStatusView, SourceView,
        };
        use crate::domain::{ClientId, EventId, EventType, IdempotencyKey};
        use strum::IntoEnumIterator;

        let transfer_id = widest(TransferId::MAX_CHARS);
        let history = HistoryEntryView {
            version: i64::MAX,
            kind: "payment_recorded".to_owned(),
            from: Some(OrderStatusView::PendingPayment),
            to: OrderStatusView::PendingPayment,
            transfer_id: Some(transfer_id.clone()),
            cause: CauseView {
                source: SourceView::Amqp,
                client_id: Some("c".repeat(ClientId::MAX_CHARS)),
                // Printable ASCII; a quote is escaped to two bytes.
                idempotency_key: Some("\"".repeat(IdempotencyKey::MAX_LEN)),
                event_id: Some(widest(EventId::MAX_CHARS)),
            },
            at: latest(),
        };
        let ledger = LedgerEntryView {
            transfer_id,
            order_id: Uuid::max(),
            direction: DirectionView::Out,
            amount_minor: AmountMinor::MAX,
            currency: "EUR".to_owned(),
            source: SourceView::Amqp,
            received_at: latest(),
        };
        let longest_type = EventType::iter().map(<&str>::from).max_by_key(|t| t.len());
        let event = OrderEventView {
            event_id: Uuid::max(),
            event_type: longest_type.map(str::to_owned),
            order_version: Some(i64::MAX),
            created_at: latest(),
            state: OrderEventStateView::SetAside,
            published_at: Some(latest()),
            // At most 1 KiB (`outbox_set_aside_reason_bounded`); a control character is
            // escaped to six bytes.
            set_aside_reason: Some("\u{1}".repeat(1024)),
        };
        let next = Some("ab".repeat(64));
        let pages = [
            serde_json::to_vec(&HistoryList {
                items: vec![history.clone(); usize::from(MAX_PAGE)],
                next: next.clone(),
            }),
            serde_json::to_vec(&LedgerList {
                items: vec![ledger.clone(); usize::from(MAX_PAGE)],
                next: next.clone(),
            }),
            serde_json::to_vec(&OrderEventList {
                items: vec![event.clone(); usize::from(MAX_PAGE)],
                next,
            }),
        ];
        for entry in [
            serde_json::to_vec(&history),
            serde_json::to_vec(&ledger),
            serde_json::to_vec(&event),
        ] {
            let bytes = entry.unwrap().len();
            assert!(bytes <= MAX_RECORD_BYTES, "an entry of {bytes} bytes");
        }
        for page in pages {
            let bytes = page.unwrap().len();
            assert!(
                bytes <= usize::from(MAX_PAGE) * MAX_RECORD_BYTES,
                "a page of {bytes} bytes"
            );
        }
    }
}
