//! `/v1/orders/{id}/ship`, `/cancel` and `/history`: status changes and the record of them, a
//! page at a time.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dto::{CancelRequest, HistoryList, ShipRequest};
use super::extract::{Caller, IdPath, ListQuery, Mutation};
use super::if_match::IfMatch;
use super::openapi_parts::{
    CommandHeaders, CommandProblems, IfMatchHeader, OrderIdPath, OrderPageProblems,
    StatusChangeResponses,
};
use super::page_query::PageParams;
use super::problem::Problem;
use super::respond;
use super::state::ApiState;
use crate::app::page_tokens;
use crate::app::views::HistoryEntryView;
use crate::domain::OrderId;

/// This module's routes, with their documentation.
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(ship_order))
        .routes(routes!(cancel_order))
        .routes(routes!(order_history))
}

/// Ship a paid order.
///
/// Legal from `PAID` only. Shipping an order already shipped with the same carrier and tracking
/// number is a replay; with another, 409. `If-Match` (`"<version>"`, a list of ETags, or `*`)
/// makes the change conditional.
#[utoipa::path(
    post,
    path = "/v1/orders/{id}/ship",
    tag = "orders",
    params(OrderIdPath, CommandHeaders, IfMatchHeader),
    request_body = ShipRequest,
    responses(
        StatusChangeResponses,
        (status = 409, description = "Invalid transition, shipped with another shipment, or a request with this key is in flight", body = Problem, content_type = "application/problem+json"),
        CommandProblems,
    )
)]
pub async fn ship_order(
    State(state): State<ApiState>,
    caller: Caller,
    IdPath(order_id): IdPath<OrderId>,
    IfMatch(if_match): IfMatch,
    request: Mutation<ShipRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let shipment = request.body.try_into_domain()?;
    let outcome = state
        .app
        .ship(order_id, &shipment, if_match, &cause, &request.trace)
        .await?;
    Ok(respond::order(StatusCode::OK, &outcome))
}

/// Cancel a pending order.
///
/// Legal from `PENDING_PAYMENT` only; cancelling a cancelled order is a replay. Partial payments
/// already received set `refund_required`. `If-Match` (`"<version>"`, a list of ETags, or `*`)
/// makes the change conditional.
#[utoipa::path(
    post,
    path = "/v1/orders/{id}/cancel",
    tag = "orders",
    params(OrderIdPath, CommandHeaders, IfMatchHeader),
    request_body = CancelRequest,
    responses(
        StatusChangeResponses,
        (status = 409, description = "Invalid transition (already paid or shipped), or a request with this key is in flight", body = Problem, content_type = "application/problem+json"),
        CommandProblems,
    )
)]
pub async fn cancel_order(
    State(state): State<ApiState>,
    caller: Caller,
    IdPath(order_id): IdPath<OrderId>,
    IfMatch(if_match): IfMatch,
    request: Mutation<CancelRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let reason = request.body.try_into_domain()?;
    let outcome = state
        .app
        .cancel(order_id, &reason, if_match, &cause, &request.trace)
        .await?;
    Ok(respond::order(StatusCode::OK, &outcome))
}

/// The order's history: one entry per version, oldest first, a page at a time.
///
/// Keyset pagination: pass the `next` of a page as `after` to get the following one, until
/// `next` is null.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}/history",
    tag = "orders",
    params(OrderIdPath, PageParams),
    responses(
        (status = 200, description = "A page of the transitions of the order", body = HistoryList),
        OrderPageProblems,
    )
)]
pub async fn order_history(
    State(state): State<ApiState>,
    Caller(caller): Caller,
    IdPath(order_id): IdPath<OrderId>,
    ListQuery(params): ListQuery<PageParams>,
) -> Result<axum::Json<HistoryList>, Problem> {
    let page = state.app.history(order_id, params.page()?).await?;
    Ok(axum::Json(HistoryList {
        items: page
            .items
            .iter()
            .map(|entry| {
                let mut view = HistoryEntryView::from(entry);
                // A key is its client's own (it replays that client's requests): another
                // reader sees who made the change, not the key.
                if view.cause.client_id.as_deref() != Some(caller.as_str()) {
                    view.cause.idempotency_key = None;
                }
                view
            })
            .collect(),
        next: page.next.as_ref().map(page_tokens::encode),
    }))
}
