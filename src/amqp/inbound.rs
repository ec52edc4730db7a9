//! The `data` of each inbound event type (`docs/contract.md#inbound-events`): the structs serde
//! parses it into (unknown fields rejected) before the domain's constructors check its values,
//! and, from the same derive, the JSON Schemas the AsyncAPI document shows for it.
//!
//! The schemas' bounds are literals (utoipa takes no constants), the same as the REST request
//! bodies'; a unit test holds them to the REST bodies, whose own test holds them to the domain.

use serde::Deserialize;
use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};
use uuid::Uuid;

use super::envelope::InboundType;

/// Places an order, as `POST /v1/orders` does; a replay of the same content changes nothing.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OrderPlacedData)]
pub(super) struct OrderPlaced {
    /// The new order's id.
    pub order_id: Uuid,
    /// 1–64 characters.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "customer-42"
    )]
    pub customer_id: String,
    /// The price in integer minor units: 1 … 10^12.
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64, example = 4999)]
    pub amount_minor: i64,
    /// ISO 4217, three upper-case letters.
    #[schema(pattern = "^[A-Z]{3}$", example = "EUR")]
    pub currency: String,
}

/// Records a payment in the ledger, as `POST /v1/orders/{id}/payments` does; the order becomes
/// PAID once it holds its amount.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PaymentSucceededData)]
pub(super) struct PaymentSucceeded {
    pub order_id: Uuid,
    /// The payment provider's transfer id (1–128 characters), unique across the ledger.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "tr_1Nv0FGQ9"
    )]
    pub transfer_id: String,
    /// 1 … 10^12 minor units.
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64, example = 4999)]
    pub amount_minor: i64,
    /// ISO 4217, three upper-case letters; the order's currency.
    #[schema(pattern = "^[A-Z]{3}$", example = "EUR")]
    pub currency: String,
}

/// Records a refund (money returned) in the ledger, as `POST /v1/orders/{id}/refunds` does; more
/// than the order holds is retried, then dead-lettered.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RefundSucceededData)]
pub(super) struct RefundSucceeded {
    pub order_id: Uuid,
    /// The payment provider's id of the refund (1–128 characters); it shares the ledger's id
    /// space with payments' transfer ids.
    #[schema(
        min_length = 1,
        max_length = 128,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "re_3MtwBw"
    )]
    pub refund_id: String,
    /// 1 … 10^12 minor units; at most what the order holds (`paid_minor - refunded_minor`).
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64, example = 1000)]
    pub amount_minor: i64,
    /// ISO 4217, three upper-case letters; the order's currency.
    #[schema(pattern = "^[A-Z]{3}$", example = "EUR")]
    pub currency: String,
}

/// Ships a PAID order, as `POST /v1/orders/{id}/ship` does; before the payment it is retried.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ShipmentDispatchedData)]
pub(super) struct ShipmentDispatched {
    pub order_id: Uuid,
    /// 1–64 characters.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "DHL"
    )]
    pub carrier: String,
    /// 1–64 characters.
    #[schema(
        min_length = 1,
        max_length = 64,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "JD014600006281234567"
    )]
    pub tracking_number: String,
}

/// Cancels an order still PENDING_PAYMENT, as `POST /v1/orders/{id}/cancel` does.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CancellationRequestedData)]
pub(super) struct CancellationRequested {
    pub order_id: Uuid,
    /// 1–500 characters.
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$",
        example = "customer changed their mind"
    )]
    pub reason: String,
}

/// The `data` schema of an inbound type: its component name and schema, and the schemas it
/// refers to (none yet). Exhaustive, so a new inbound type does not compile without one.
pub(super) fn data_schema(kind: InboundType) -> (String, RefOr<Schema>) {
    fn of<T: ToSchema>() -> (String, RefOr<Schema>) {
        (T::name().into_owned(), T::schema())
    }
    match kind {
        InboundType::OrderPlaced => of::<OrderPlaced>(),
        InboundType::PaymentSucceeded => of::<PaymentSucceeded>(),
        InboundType::RefundSucceeded => of::<RefundSucceeded>(),
        InboundType::ShipmentDispatched => of::<ShipmentDispatched>(),
        InboundType::CancellationRequested => of::<CancellationRequested>(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use strum::IntoEnumIterator;
    use utoipa::PartialSchema;

    use super::*;
    use crate::http::dto::{
        CancelRequest, PaymentRequest, PlaceOrderRequest, RefundRequest, ShipRequest,
    };

    fn json<T: PartialSchema>() -> Value {
        serde_json::to_value(T::schema()).unwrap()
    }

    /// Each field an event shares with a REST request body has the same bounds there, so both
    /// doors document the one rule of the domain's constructor (which `dto`'s test pins).
    #[test]
    fn the_event_data_bounds_are_the_rest_bodies_bounds() {
        let bounds = ["minLength", "maxLength", "pattern", "minimum", "maximum"];
        for (event, body) in [
            (json::<OrderPlaced>(), json::<PlaceOrderRequest>()),
            (json::<PaymentSucceeded>(), json::<PaymentRequest>()),
            (json::<RefundSucceeded>(), json::<RefundRequest>()),
            (json::<ShipmentDispatched>(), json::<ShipRequest>()),
            (json::<CancellationRequested>(), json::<CancelRequest>()),
        ] {
            let mut shared = 0;
            for (field, rest) in body["properties"].as_object().unwrap() {
                let Some(ours) = event["properties"].get(field) else {
                    continue;
                };
                shared += 1;
                for bound in bounds {
                    assert_eq!(ours.get(bound), rest.get(bound), "{field}.{bound}");
                }
            }
            assert!(shared > 0, "{event}");
            assert_eq!(event["additionalProperties"], false, "{event}");
        }
    }

    #[test]
    fn every_inbound_type_has_a_data_schema_of_its_own() {
        let names: Vec<String> = InboundType::iter().map(|t| data_schema(t).0).collect();
        assert_eq!(
            names,
            [
                "OrderPlacedData",
                "PaymentSucceededData",
                "RefundSucceededData",
                "ShipmentDispatchedData",
                "CancellationRequestedData"
            ]
        );
    }
}
