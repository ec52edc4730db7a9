//! Success responses: the status code per outcome, `ETag`, `Location` and `Idempotent-Replayed`.

use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::app::views::{LedgerEntryView, OrderView};
use crate::app::{Outcome, Receipt};
use crate::domain::Order;

pub static IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// `"<version>"`: the order's entity tag.
pub fn etag(order: &Order) -> HeaderValue {
    HeaderValue::from_str(&format!("\"{}\"", order.version))
        .unwrap_or_else(|_| HeaderValue::from_static("\"0\""))
}

/// A command's result on an order: [`outcome`], with the order's `ETag`.
pub fn command<T, B: Serialize>(
    status: StatusCode,
    outcome: &Outcome<T>,
    order: &Order,
    body: B,
) -> Response {
    let mut response = self::outcome(status, outcome, body);
    response.headers_mut().insert(header::ETAG, etag(order));
    response
}

/// A command's result: the same status whether it was applied now or earlier; a response whose
/// effect already existed says so with `Idempotent-Replayed: true`.
pub fn outcome<T, B: Serialize>(status: StatusCode, outcome: &Outcome<T>, body: B) -> Response {
    let mut response = (status, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    match outcome {
        Outcome::Applied(_) => {}
        Outcome::AlreadyApplied(_) | Outcome::Replayed(_) => {
            headers.insert(
                IDEMPOTENT_REPLAYED.clone(),
                HeaderValue::from_static("true"),
            );
        }
    }
    response
}

/// A command's result whose resource is the order itself (ship, cancel).
pub fn order(status: StatusCode, outcome: &Outcome<Order>) -> Response {
    let order = outcome.value();
    command(status, outcome, order, OrderView::from(order))
}

/// A recorded payment's or refund's result (201): `body` shapes the order after it and its
/// ledger entry.
pub fn receipt<B: Serialize>(
    outcome: &Outcome<Receipt>,
    body: impl FnOnce(OrderView, LedgerEntryView) -> B,
) -> Response {
    let receipt = outcome.value();
    let body = body(
        OrderView::from(&receipt.order),
        LedgerEntryView::from(&receipt.entry),
    );
    command(StatusCode::CREATED, outcome, &receipt.order, body)
}

pub fn location(mut response: Response, order: &Order) -> Response {
    if let Ok(value) = HeaderValue::from_str(&format!("/v1/orders/{}", order.id)) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}
