//! `GET /v1/orders/{id}/events`: the events an order's changes wrote, and whether each was
//! published (docs/messaging.md "Published events"), for a subscriber asking "was it sent?" and
//! for the console's timeline.

use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dto::OrderEventList;
use super::extract::IdPath;
use super::openapi_parts::{OrderIdPath, OrderReadProblems};
use super::problem::Problem;
use super::state::ApiState;
use crate::app::views::OrderEventView;
use crate::domain::OrderId;

pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(order_events))
}

/// The events the order's changes wrote that the outbox still holds, oldest first: waiting,
/// published, or set aside. Published events are pruned after `OUTBOX_RETENTION_HOURS`.
#[utoipa::path(
    get,
    path = "/v1/orders/{id}/events",
    tag = "orders",
    params(OrderIdPath),
    responses(
        (status = 200, description = "The order's events", body = OrderEventList),
        OrderReadProblems,
    )
)]
pub async fn order_events(
    State(state): State<ApiState>,
    IdPath(order_id): IdPath<OrderId>,
) -> Result<axum::Json<OrderEventList>, Problem> {
    let events = state.app.order_events(order_id).await?;
    Ok(axum::Json(OrderEventList {
        items: events.iter().map(OrderEventView::from).collect(),
        next: None,
    }))
}
