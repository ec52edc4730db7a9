//! `/v1/orders/{id}/payments`: record a payment, read the order's ledger.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::dto::{LedgerList, PaymentRequest, PaymentResponse};
use super::extract::{Caller, Mutation, OrderPath};
use super::problem::Problem;
use super::respond;
use super::state::ApiState;
use crate::app::views::{LedgerEntryView, OrderView};

/// Record a payment.
///
/// Money is a fact: it is recorded whatever the order's status. The payment that covers the
/// amount moves a pending order to `PAID`; money on a cancelled order, or beyond the amount,
/// sets `refund_required`. The same `transfer_id` with the same order, amount and currency is a
/// replay; with anything else, 409.
#[utoipa::path(
    post,
    path = "/v1/orders/{id}/payments",
    tag = "payments",
    params(
        ("id" = uuid::Uuid, Path, description = "The order id"),
        ("Idempotency-Key" = String, Header, description = "1–255 printable ASCII characters; scopes retries of this request"),
    ),
    request_body = PaymentRequest,
    responses(
        (status = 201, description = "Payment recorded (or replayed: see `Idempotent-Replayed`)", body = PaymentResponse,
            headers(("ETag" = String, description = "\"<version>\" of the order"),
                    ("Idempotent-Replayed" = String, description = "`true` when nothing new was recorded"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, malformed JSON or order id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown order", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The transfer id was recorded with other content, or a request with this key is in flight", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid field, currency other than the order's, or the key was used for another request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn record_payment(
    State(state): State<ApiState>,
    caller: Caller,
    OrderPath(order_id): OrderPath,
    request: Mutation<PaymentRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let payment = request
        .body
        .try_into_domain(order_id)
        .map_err(|e| Problem::validation(e.to_string()))?;
    let outcome = state.app.record_payment(payment, &cause).await?;
    let receipt = outcome.value();
    let body = PaymentResponse {
        order: OrderView::from(&receipt.order),
        transfer: LedgerEntryView::from(&receipt.entry),
    };
    Ok(respond::command(
        StatusCode::CREATED,
        &outcome,
        &receipt.order,
        body,
    ))
}

/// The order's ledger entries, oldest first.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}/payments",
    tag = "payments",
    params(("id" = uuid::Uuid, Path, description = "The order id")),
    responses(
        (status = 200, description = "The ledger entries of the order", body = LedgerList),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown order", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_payments(
    State(state): State<ApiState>,
    OrderPath(order_id): OrderPath,
) -> Result<axum::Json<LedgerList>, Problem> {
    let entries = state.app.payments(order_id).await?;
    Ok(axum::Json(LedgerList {
        items: entries.iter().map(LedgerEntryView::from).collect(),
        next: None,
    }))
}
