//! The OpenAPI 3.1 document, collected by utoipa from the handlers' annotations, and the
//! offline Swagger UI that renders it at `/docs`.

use utoipa::OpenApi;

use super::problem::Problem;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "order-service",
        description = "Owns the lifecycle of orders and the money paid for them.\n\n\
            Every POST under `/v1` needs an `Idempotency-Key` header: a retry with the same key \
            and body replays the first answer (`Idempotent-Replayed: true`), forever; the same \
            key with another body, endpoint or order is 422. Errors are \
            `application/problem+json` (RFC 9457).",
        license(name = "MIT")
    ),
    tags(
        (name = "orders", description = "Place, read, ship and cancel orders"),
        (name = "payments", description = "The ledger of money received"),
        (name = "ops", description = "Health and metrics"),
    ),
    components(schemas(Problem))
)]
pub struct ApiDoc;

/// The document exactly as `/openapi.json` serves it and `order-service openapi` prints it.
pub fn document() -> utoipa::openapi::OpenApi {
    super::routes().1
}

pub fn to_pretty_json() -> String {
    document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}
