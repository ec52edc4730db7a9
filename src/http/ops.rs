//! Operations endpoints: liveness, readiness and Prometheus metrics, plus the per-request
//! metrics middleware.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::problem::Problem;
use super::state::ApiState;
use crate::{health, release};

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    #[schema(example = "ok")]
    pub status: &'static str,
}

/// This module's routes, with their documentation.
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(live))
        .routes(routes!(ready))
        .routes(routes!(metrics))
}

/// The process is up, and which release it runs (docs/operations/upgrading.md "Which release is
/// running").
#[derive(Debug, Serialize, ToSchema)]
pub struct Live {
    #[schema(example = "ok")]
    pub status: &'static str,
    /// The package version, as the CHANGELOG names releases.
    #[schema(example = "0.3.0")]
    pub version: &'static str,
    /// The source revision the binary was built from (12 hex digits), or `unknown`.
    #[schema(example = "1a2b3c4d5e6f")]
    pub revision: &'static str,
}

/// The process is up; which release it runs.
#[utoipa::path(get, path = "/health/live", tag = "ops",
    responses((status = 200, description = "The process is up; its release", body = Live)))]
pub async fn live() -> axum::Json<Live> {
    axum::Json(Live {
        status: "ok",
        version: release::VERSION,
        revision: release::REVISION,
    })
}

/// Postgres (and RabbitMQ, when the AMQP side is on) are reachable; no component is stalled.
#[utoipa::path(get, path = "/health/ready", tag = "ops",
    responses(
        (status = 200, description = "Ready to serve", body = Health),
        (status = 503, description = "A dependency is unreachable, or a component is stalled (`detail` names it)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn ready(State(state): State<ApiState>) -> Result<axum::Json<Health>, Problem> {
    let unavailable = |detail: &str| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not-ready",
            "Not ready",
            detail,
        )
    };
    if !database_ready(&state).await {
        return Err(unavailable("postgres is unreachable or accepts no writes"));
    }
    let problems = state.readiness.problems();
    if !problems.is_empty() {
        return Err(unavailable(&format!("not ready: {}", problems.join(", "))));
    }
    Ok(axum::Json(Health { status: "ok" }))
}

/// Prometheus text exposition.
#[utoipa::path(get, path = "/metrics", tag = "ops",
    responses((status = 200, description = "Prometheus text format", body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<ApiState>) -> Response {
    // Checked at each scrape, so `ready{component="database"}` is current whether or not
    // anything probes /health/ready.
    database_ready(&state).await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// Whether Postgres answers now and takes writes, exported as `ready{component="database"}`
/// (docs/operations/observability.md "Operations kit").
async fn database_ready(state: &ApiState) -> bool {
    let reachable = state.app.database_writable().await;
    health::record_database(reachable);
    reachable
}

/// Counts requests by route and status, and times them.
pub async fn track(request: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("http_requests_total", "method" => method, "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!("http_request_duration_seconds", "method" => method, "route" => route)
        .record(start.elapsed().as_secs_f64());
    response
}

/// The `method` label: one of the methods the API knows, or `other`. The method is chosen by the
/// client before authentication, and each distinct label value is a series held forever: a raw
/// label let anyone grow `/metrics` without bound.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_method_is_labelled_other() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::TRACE), "other");
        let custom = Method::from_bytes("X".repeat(1000).as_bytes()).unwrap();
        assert_eq!(method_label(&custom), "other");
    }
}
