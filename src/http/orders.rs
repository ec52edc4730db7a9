//! `/v1/orders`: place, read and list orders.

use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dto::{OrderList, PlaceOrderRequest};
use super::extract::{Caller, IdPath, ListQuery, Mutation};
use super::openapi_parts::{CommandHeaders, OrderIdPath, OrderReadProblems};
use super::problem::Problem;
use super::respond;
use super::state::ApiState;
use crate::app::views::{OrderStatusView, OrderView};
use crate::app::{PageRequest, page_tokens};
use crate::domain::{CustomerId, OrderId, TransferId, ValidationError};

/// This module's routes, with their documentation.
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(place_order, list_orders))
        .routes(routes!(get_order))
}

/// Place an order.
///
/// Creates the order in `PENDING_PAYMENT`. With the same `Idempotency-Key` and body, a retry
/// replays the first answer (201, `Idempotent-Replayed: true`) with the order's current state.
/// Placing an existing `id` with the same content is also answered as a replay.
#[utoipa::path(
    post,
    path = "/v1/orders",
    tag = "orders",
    params(CommandHeaders),
    request_body = PlaceOrderRequest,
    responses(
        (status = 201, description = "Order placed (or replayed: see `Idempotent-Replayed`)", body = OrderView,
            headers(("Location" = String, description = "/v1/orders/{id}"), ("ETag" = String, description = "\"<version>\""),
                    ("Idempotent-Replayed" = String, description = "`true` when nothing new was created"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, or malformed JSON (a key given twice included)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The id exists with other content, or a request with this key is still in flight", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A body that is not a JSON object, an invalid or unknown field, or the key was used for another request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn place_order(
    State(state): State<ApiState>,
    caller: Caller,
    request: Mutation<PlaceOrderRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let new = request.body.try_into_domain()?;
    let outcome = state.app.place(new, &cause, &request.trace).await?;
    let order = outcome.value();
    let response = respond::command(StatusCode::CREATED, &outcome, order, OrderView::from(order));
    Ok(respond::location(response, order))
}

/// Get one order.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}",
    tag = "orders",
    params(OrderIdPath),
    responses(
        (status = 200, description = "The order", body = OrderView,
            headers(("ETag" = String, description = "\"<version>\""))),
        OrderReadProblems,
    )
)]
pub async fn get_order(
    State(state): State<ApiState>,
    IdPath(id): IdPath<OrderId>,
) -> Result<Response, Problem> {
    let order = state.app.order(id).await?;
    Ok((
        [(header::ETAG, respond::etag(&order))],
        axum::Json(OrderView::from(&order)),
    )
        .into_response())
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Only orders in this status.
    status: Option<OrderStatusView>,
    /// Only this customer's orders (combines with `status`).
    #[param(min_length = 1, max_length = 64)]
    customer_id: Option<String>,
    /// Only the order whose ledger holds this payment's `transfer_id` or refund's `refund_id`
    /// (combines with the others).
    #[param(min_length = 1, max_length = 128)]
    transfer_id: Option<String>,
    /// Page size, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u16>,
    /// The `next` cursor of the previous page.
    after: Option<String>,
}

/// List orders, newest first, optionally of one status, one customer or both.
///
/// Keyset pagination: pass the `next` of a page as `after` to get the following one.
#[utoipa::path(
    get,
    path = "/v1/orders",
    tag = "orders",
    params(ListParams),
    responses(
        (status = 200, description = "A page of orders", body = OrderList),
        (status = 400, description = "Invalid status, customer id, transfer id, limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_orders(
    State(state): State<ApiState>,
    ListQuery(params): ListQuery<ListParams>,
) -> Result<axum::Json<OrderList>, Problem> {
    let (limit, after) = page_tokens::page(params.limit, params.after.as_deref())?;
    let customer_id = filter(params.customer_id.as_deref(), CustomerId::parse)?;
    let transfer_id = filter(params.transfer_id.as_deref(), TransferId::parse)?;
    let page = state
        .app
        .orders(PageRequest {
            status: params.status.map(Into::into),
            customer_id,
            transfer_id,
            limit,
            after,
        })
        .await?;
    Ok(axum::Json(OrderList {
        items: page.items.iter().map(OrderView::from).collect(),
        next: page.next.map(|c| page_tokens::encode(&c)),
    }))
}

/// A query filter read with `parse`, if given; 400 `invalid-query` naming the field if invalid.
fn filter<T>(
    value: Option<&str>,
    parse: fn(&str) -> Result<T, ValidationError>,
) -> Result<Option<T>, Problem> {
    value
        .map(parse)
        .transpose()
        .map_err(|e| Problem::bad_request("invalid-query", e.to_string()))
}
