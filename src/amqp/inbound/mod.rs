//! The inbound wire: what a publisher sends to the inbox (`docs/contract.md#envelope`). An
//! envelope ([`envelope`]) with the `data` of its type ([`event_data`]), parsed strictly into a
//! typed [`InboundEvent`], or [`Poison`] saying why it never can be. The inbox parses it, the
//! topology binds its types, the parking reads a dead letter's id and type from it, and the
//! AsyncAPI document shows its schemas.

mod envelope;
mod event_data;

pub(super) use envelope::RawEnvelope;
pub use envelope::{
    Envelope, INBOUND_TYPES, InboundEvent, InboundType, Poison, parse, parse_bounded,
};

use utoipa::ToSchema;
use utoipa::openapi::{RefOr, Schema};

use self::event_data::{
    CancellationRequested, OrderPlaced, PaymentSucceeded, RefundSucceeded, ShipmentDispatched,
};

/// The `data` schema of an inbound type: its component name and schema, and the schemas it
/// refers to (none yet). Exhaustive, so a new inbound type does not compile without one.
pub(in crate::amqp) fn data_schema(kind: InboundType) -> (String, RefOr<Schema>) {
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
    use strum::IntoEnumIterator;

    use super::*;

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
