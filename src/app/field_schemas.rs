//! The JSON Schemas of the fields both doors accept (the REST request bodies and the inbound
//! events' `data`, and the dead-letter filters of the REST API and the command line), built from
//! the domain's own bounds, so the OpenAPI and AsyncAPI documents say exactly what the
//! constructors enforce: one source per rule. Request types name these functions in
//! `#[schema(schema_with = …)]` (and `#[param(schema_with = …)]`).

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{Array, Object};

use crate::domain::{
    AmountMinor, CustomerId, MAX_BULK_REPLAY, MAX_NOTE_CHARS, MAX_REASON_BYTES, MAX_REASON_CHARS,
    MAX_TYPE_FILTER_CHARS, Shipment, TransferId,
};

/// No control characters (C0, DEL, C1): what `BoundedText` refuses.
const PRINTABLE: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";

fn text(max_chars: usize, description: &str, example: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(format!("{description} (1–{max_chars} characters).")))
        .min_length(Some(1))
        .max_length(Some(max_chars))
        .pattern(Some(PRINTABLE))
        .examples([example])
        .build()
}

pub fn customer_id() -> Object {
    text(CustomerId::MAX_CHARS, "The customer", "customer-42")
}

pub fn transfer_id() -> Object {
    text(
        TransferId::MAX_CHARS,
        "The payment provider's transfer id, unique across the ledger",
        "tr_1Nv0FGQ9",
    )
}

pub fn refund_id() -> Object {
    text(
        TransferId::MAX_CHARS,
        "The payment provider's id of the refund; it shares the ledger's id space with \
         payments' transfer ids",
        "re_3MtwBw",
    )
}

pub fn carrier() -> Object {
    text(Shipment::MAX_CHARS, "The carrier", "DHL")
}

pub fn tracking_number() -> Object {
    text(
        Shipment::MAX_CHARS,
        "The carrier's tracking number",
        "JD014600006281234567",
    )
}

pub fn cancellation_reason() -> Object {
    text(
        MAX_REASON_CHARS,
        "Why the order is cancelled",
        "customer changed their mind",
    )
}

/// An amount of money in integer minor units.
pub fn amount_minor() -> Object {
    amount(format!("Integer minor units, 1 … {}.", AmountMinor::MAX))
}

/// A refund's amount: also at most what the order holds.
pub fn refund_amount_minor() -> Object {
    amount(format!(
        "Integer minor units, 1 … {}; at most what the order holds \
         (`paid_minor - refunded_minor`).",
        AmountMinor::MAX
    ))
}

fn amount(description: String) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .description(Some(description))
        .minimum(Some(1))
        .maximum(Some(AmountMinor::MAX))
        .examples([4999])
        .build()
}

/// An ISO 4217 code; for money on an order, the order's currency.
pub fn currency() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(
            "ISO 4217, three upper-case letters; for money on an order, the order's currency.",
        ))
        .pattern(Some("^[A-Z]{3}$"))
        .examples(["EUR"])
        .build()
}

/// A dead-letter filter on the reason: a substring of it, matched case-insensitively.
pub fn reason_filter() -> Object {
    text(
        MAX_REASON_BYTES,
        "Only those whose reason contains this text, case-insensitively; `premature:` names a \
         class",
        "premature:",
    )
}

/// An operator's note on a replay or a discard.
pub fn action_note() -> Object {
    text(
        MAX_NOTE_CHARS,
        "Why (a discard's reason, say): kept with the action and shown with the dead letter.",
        "a test message sent to production by mistake",
    )
}

/// A dead-letter filter on the event type.
pub fn type_filter() -> Object {
    text(
        MAX_TYPE_FILTER_CHARS,
        "Only those of this event type",
        "payment.succeeded",
    )
}

/// The dead letters a bulk replay may name.
pub fn dead_letter_ids() -> Array {
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
        )
        .max_items(Some(MAX_BULK_REPLAY))
        .description(Some(format!(
            "Only these dead letters (at most {MAX_BULK_REPLAY})."
        )))
        .build()
}
