//! `GET /v1/me`: who the caller is and what its token may do, so that a client (the console,
//! docs/operations/console.md) shows only the actions the API would accept. Any authenticated
//! caller may ask; the API still checks every request itself.

use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{Caller, CallerScopes};
use super::problem::Problem;
use super::state::ApiState;

/// The caller as the API knows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeView {
    /// The client id of the token (`anonymous` when the API runs without authentication).
    #[schema(example = "console-ops")]
    pub client_id: String,
    /// What the token may do: `orders:read`, `orders:write`, `orders:admin`.
    #[schema(example = json!(["orders:read", "orders:admin"]))]
    pub scopes: Vec<&'static str>,
}

pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(me))
}

/// The caller's client id and scopes.
#[utoipa::path(get, path = "/v1/me", tag = "ops",
    responses(
        (status = 200, description = "The caller", body = MeView),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn me(Caller(client): Caller, CallerScopes(scopes): CallerScopes) -> Json<MeView> {
    Json(MeView {
        client_id: client.to_string(),
        scopes: scopes.iter().map(|scope| scope.as_str()).collect(),
    })
}
