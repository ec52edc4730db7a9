//! `GET /v1/orders/{id}/events`: the events an order's changes wrote, and whether each was
//! published (docs/messaging.md "Published events"), a page at a time, for a subscriber asking
//! "was it sent?" and for the console's timeline.

use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dto::OrderEventList;
use super::extract::{IdPath, ListQuery};
use super::openapi_parts::{OrderIdPath, OrderPageProblems};
use super::page_query::PageParams;
use super::problem::Problem;
use super::state::ApiState;
use crate::app::page_tokens;
use crate::app::views::OrderEventView;
use crate::domain::OrderId;

pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(order_events))
}

/// The events the order's changes wrote that the outbox still holds, a page at a time.
///
/// Oldest first (in the order the changes wrote them): waiting, published, or set aside.
/// Published events are pruned after `OUTBOX_RETENTION_HOURS`. Keyset pagination: pass the
/// `next` of a page as `after` to get the following one, until `next` is null.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}/events",
    tag = "orders",
    params(OrderIdPath, PageParams),
    responses(
        (status = 200, description = "A page of the order's events", body = OrderEventList),
        OrderPageProblems,
    )
)]
pub async fn order_events(
    State(state): State<ApiState>,
    IdPath(order_id): IdPath<OrderId>,
    ListQuery(params): ListQuery<PageParams>,
) -> Result<axum::Json<OrderEventList>, Problem> {
    let page = state.app.order_events(order_id, params.page()?).await?;
    Ok(axum::Json(OrderEventList {
        items: page.items.iter().map(OrderEventView::from).collect(),
        next: page.next.as_ref().map(page_tokens::encode),
    }))
}
