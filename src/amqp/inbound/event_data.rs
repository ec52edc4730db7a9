//! The `data` of each inbound event type (`docs/contract.md#inbound-events`): the structs serde
//! parses it into (unknown fields rejected) before the domain's constructors check its values,
//! and, from the same derive, the JSON Schemas the AsyncAPI document shows for it.
//!
//! The bounded fields' schemas come from `app::field_schemas`, built from the domain's bounds,
//! as the REST request bodies' do; a unit test holds the two doors to the same bounds.

use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::app::field_schemas;

/// Places an order, as `POST /v1/orders` does; a replay of the same content changes nothing.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = OrderPlacedData)]
pub(in crate::amqp) struct OrderPlaced {
    /// The new order's id.
    pub order_id: Uuid,
    #[schema(schema_with = field_schemas::customer_id)]
    pub customer_id: String,
    #[schema(schema_with = field_schemas::amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

/// Records a payment in the ledger, as `POST /v1/orders/{id}/payments` does; the order becomes
/// PAID once it holds its amount.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = PaymentSucceededData)]
pub(in crate::amqp) struct PaymentSucceeded {
    pub order_id: Uuid,
    #[schema(schema_with = field_schemas::transfer_id)]
    pub transfer_id: String,
    #[schema(schema_with = field_schemas::amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

/// Records a refund (money returned) in the ledger, as `POST /v1/orders/{id}/refunds` does; more
/// than the order holds is retried, then dead-lettered.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RefundSucceededData)]
pub(in crate::amqp) struct RefundSucceeded {
    pub order_id: Uuid,
    #[schema(schema_with = field_schemas::refund_id)]
    pub refund_id: String,
    #[schema(schema_with = field_schemas::refund_amount_minor)]
    pub amount_minor: i64,
    #[schema(schema_with = field_schemas::currency)]
    pub currency: String,
}

/// Ships a PAID order, as `POST /v1/orders/{id}/ship` does; before the payment it is retried.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ShipmentDispatchedData)]
pub(in crate::amqp) struct ShipmentDispatched {
    pub order_id: Uuid,
    #[schema(schema_with = field_schemas::carrier)]
    pub carrier: String,
    #[schema(schema_with = field_schemas::tracking_number)]
    pub tracking_number: String,
}

/// Cancels an order still PENDING_PAYMENT, as `POST /v1/orders/{id}/cancel` does.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = CancellationRequestedData)]
pub(in crate::amqp) struct CancellationRequested {
    pub order_id: Uuid,
    #[schema(schema_with = field_schemas::cancellation_reason)]
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
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
}
