//! `/v1/orders/{id}/payments` and `/refunds`: record money in or out, read the order's ledger a
//! page at a time.

use axum::extract::State;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dto::{LedgerList, PaymentRequest, PaymentResponse, RefundRequest, RefundResponse};
use super::extract::{Caller, IdPath, ListQuery, Mutation};
use super::openapi_parts::{CommandHeaders, CommandProblems, OrderIdPath, OrderPageProblems};
use super::page_query::PageParams;
use super::problem::Problem;
use super::respond;
use super::state::ApiState;
use crate::app::page_tokens;
use crate::app::views::LedgerEntryView;
use crate::domain::OrderId;

/// This module's routes, with their documentation.
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(record_payment, list_payments))
        .routes(routes!(record_refund))
}

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
    params(OrderIdPath, CommandHeaders),
    request_body = PaymentRequest,
    responses(
        (status = 201, description = "Payment recorded (or replayed: see `Idempotent-Replayed`)", body = PaymentResponse,
            headers(("ETag" = String, description = "\"<version>\" of the order"),
                    ("Idempotent-Replayed" = String, description = "`true` when nothing new was recorded"))),
        (status = 409, description = "The transfer id was recorded with other content, or a request with this key is in flight", body = Problem, content_type = "application/problem+json"),
        CommandProblems,
    )
)]
pub async fn record_payment(
    State(state): State<ApiState>,
    caller: Caller,
    IdPath(order_id): IdPath<OrderId>,
    request: Mutation<PaymentRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let payment = request.body.try_into_domain(order_id)?;
    let outcome = state.app.record(payment, &cause, &request.trace).await?;
    Ok(respond::receipt(&outcome, |order, transfer| {
        PaymentResponse { order, transfer }
    }))
}

/// Record a refund.
///
/// Money that went back is a fact too: recorded in every status, it never changes the status. It
/// lowers `refund_due_minor` (`refund_required` turns off at 0) and may exceed what is due (a
/// goodwill refund), but never the money the order holds (`paid_minor - refunded_minor`): more
/// is 409 `refund-exceeds-balance`, and nothing is recorded. The `refund_id` shares the ledger's
/// id space with payments: the same id with the same order, amount and currency is a replay;
/// with anything else (a payment's id included), 409.
#[utoipa::path(
    post,
    path = "/v1/orders/{id}/refunds",
    tag = "payments",
    params(OrderIdPath, CommandHeaders),
    request_body = RefundRequest,
    responses(
        (status = 201, description = "Refund recorded (or replayed: see `Idempotent-Replayed`)", body = RefundResponse,
            headers(("ETag" = String, description = "\"<version>\" of the order"),
                    ("Idempotent-Replayed" = String, description = "`true` when nothing new was recorded"))),
        (status = 409, description = "More than the order holds (`refund-exceeds-balance`), the id was recorded with other content, or a request with this key is in flight", body = Problem, content_type = "application/problem+json"),
        CommandProblems,
    )
)]
pub async fn record_refund(
    State(state): State<ApiState>,
    caller: Caller,
    IdPath(order_id): IdPath<OrderId>,
    request: Mutation<RefundRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let refund = request.body.try_into_domain(order_id)?;
    let outcome = state.app.record(refund, &cause, &request.trace).await?;
    Ok(respond::receipt(&outcome, |order, refund| RefundResponse {
        order,
        refund,
    }))
}

/// The order's ledger entries, both directions, oldest first, a page at a time.
///
/// In the order they were recorded (the order's version that recorded each). Keyset pagination:
/// pass the `next` of a page as `after` to get the following one, until `next` is null; an entry
/// recorded meanwhile is on a later page, never skipped.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}/payments",
    tag = "payments",
    params(OrderIdPath, PageParams),
    responses(
        (status = 200, description = "A page of the ledger entries of the order: payments (`in`) and refunds (`out`)", body = LedgerList),
        OrderPageProblems,
    )
)]
pub async fn list_payments(
    State(state): State<ApiState>,
    IdPath(order_id): IdPath<OrderId>,
    ListQuery(params): ListQuery<PageParams>,
) -> Result<axum::Json<LedgerList>, Problem> {
    let page = state.app.payments(order_id, params.page()?).await?;
    Ok(axum::Json(LedgerList {
        items: page.items.iter().map(LedgerEntryView::from).collect(),
        next: page.next.as_ref().map(page_tokens::encode),
    }))
}
