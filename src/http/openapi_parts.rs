//! The parts of the OpenAPI document that several operations share, named once: the parameters
//! the extractors in `extract.rs` read (the order or dead letter id in the path,
//! `Idempotency-Key`, `If-Match`) and the response sets of commands and reads. Handlers list these types in `params(...)` and
//! `responses(...)` instead of restating them.

// These types describe; they are never built or read: only the OpenAPI derives look at them.
#![allow(dead_code)]

use utoipa::{IntoParams, IntoResponses};

use super::problem::Problem;
use crate::app::dead_letters::dead_letter_views::DeadLetterView;
use crate::app::views::OrderView;

/// The order in the path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct OrderIdPath {
    /// The order id
    id: uuid::Uuid,
}

/// The dead letter in the path.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub struct DeadLetterIdPath {
    /// The dead letter's id
    id: uuid::Uuid,
}

/// The header of every POST under `/v1` (docs/contract.md, "Idempotency keys").
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct CommandHeaders {
    /// 1–255 printable ASCII characters, in one header field; a comma only inside a quoted
    /// string ("…", which is unquoted); scopes retries of this request
    #[param(rename = "Idempotency-Key")]
    idempotency_key: String,
}

/// The header that makes a status change conditional (docs/contract.md, "Conditional requests").
#[derive(IntoParams)]
#[into_params(parameter_in = Header)]
pub struct IfMatchHeader {
    /// `*`, or the ETags the client accepts, e.g. "2" (a list, also over several fields, matches
    /// if any strong ETag in it is the order's; a weak one never does)
    #[param(rename = "If-Match")]
    if_match: Option<String>,
}

/// The problem responses that every command on an existing order or dead letter documents alike;
/// each endpoint adds its own success, 409 (and 412) responses.
#[derive(IntoResponses)]
pub enum CommandProblems {
    /// Missing or malformed Idempotency-Key (or If-Match), malformed JSON (a key given twice
    /// included), or an id in the path that is not a UUID
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(Problem),
    /// Unknown order (or dead letter)
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
    /// Body over 64 KiB
    #[response(status = 413, content_type = "application/problem+json")]
    TooLarge(Problem),
    /// Body is not JSON
    #[response(status = 415, content_type = "application/problem+json")]
    NotJson(Problem),
    /// A body that is not a JSON object, an invalid or unknown field, a currency other than the
    /// order's, or the key was used for another request
    #[response(status = 422, content_type = "application/problem+json")]
    Invalid(Problem),
    /// Database unavailable
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(Problem),
}

/// The problems of a read of one order.
#[derive(IntoResponses)]
pub enum OrderReadProblems {
    /// The id is not a UUID
    #[response(status = 400, content_type = "application/problem+json")]
    BadId(Problem),
    /// Unknown order
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
}

/// The problems of a page of an order's records (history, ledger, events).
#[derive(IntoResponses)]
pub enum OrderPageProblems {
    /// The id is not a UUID, `limit` is not 1–100, or `after` is not a `next` of this listing
    #[response(status = 400, content_type = "application/problem+json")]
    BadQuery(Problem),
    /// Unknown order
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(Problem),
}

/// The answers of a status change (ship, cancel) besides its 409 and the [`CommandProblems`].
#[derive(IntoResponses)]
pub enum StatusChangeResponses {
    /// The order after the change (or replayed: see `Idempotent-Replayed`)
    #[response(
        status = 200,
        headers(
            ("ETag" = String, description = "\"<version>\""),
            ("Idempotent-Replayed" = String, description = "`true` when nothing changed")
        )
    )]
    Changed(OrderView),
    /// If-Match names no strong ETag the order has (a stale, weak or foreign one); nothing
    /// changed
    #[response(status = 412, content_type = "application/problem+json")]
    Stale(Problem),
}

/// The answers of an action on one dead letter besides the [`CommandProblems`].
#[derive(IntoResponses)]
pub enum DeadLetterActed {
    /// The dead letter after the action (or acted on before under this key: see
    /// `Idempotent-Replayed`)
    #[response(
        status = 200,
        headers(("Idempotent-Replayed" = String, description = "`true` when nothing new was done"))
    )]
    Acted(DeadLetterView),
    /// Not parked (already replayed or discarded), or a request with this key is in flight
    #[response(status = 409, content_type = "application/problem+json")]
    NotParked(Problem),
}

/// The answers of a replay of one dead letter besides the [`CommandProblems`].
#[derive(IntoResponses)]
pub enum DeadLetterReplayed {
    /// The dead letter, now `replayed` (or replayed before under this key: see
    /// `Idempotent-Replayed`)
    #[response(
        status = 200,
        headers(("Idempotent-Replayed" = String, description = "`true` when nothing new was done"))
    )]
    Replayed(DeadLetterView),
    /// Not parked (`dead-letter-not-parked`: already replayed or discarded); not replayable
    /// (`dead-letter-not-replayable`: the inbox is bound to no such routing key, so the replay
    /// would be lost or misrouted; it stays parked); or a request with this key is in flight
    #[response(status = 409, content_type = "application/problem+json")]
    Refused(Problem),
}
