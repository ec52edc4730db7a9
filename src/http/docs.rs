//! The offline Swagger UI at `/docs` (and the document it renders at `/openapi.json`), with the
//! headers a page served to browsers needs: a Content-Security-Policy that lets only this
//! origin's scripts run and no one frame the page, and problem+json for unknown paths.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use utoipa_swagger_ui::SwaggerUi;

use super::problem::Problem;
use super::state::ApiState;

/// What the vendored Swagger UI needs and nothing more: its own scripts, styles and fonts, the
/// inline `style` attributes React sets, `data:` images from its stylesheet, and `fetch` to this
/// origin (the document and "Try it out"). No inline or foreign script, no framing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

pub(super) fn router(document: utoipa::openapi::OpenApi) -> Router<ApiState> {
    Router::from(SwaggerUi::new("/docs").url("/openapi.json", document))
        .layer(axum::middleware::map_response(harden))
}

async fn harden(response: Response) -> Response {
    // The Swagger UI answers an unknown asset with an empty 404: give it the API's error format.
    let response = if response.status() == StatusCode::NOT_FOUND {
        Problem::not_found("no such page of the API documentation").into_response()
    } else {
        response
    };
    with_page_headers(response, CONTENT_SECURITY_POLICY)
}

/// An embedded page or asset, as its content type.
pub(super) fn served(body: &'static str, content_type: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(content_type))],
        body,
    )
        .into_response()
}

/// The headers of every documentation page and asset: `policy` as its Content-Security-Policy,
/// no framing, no content sniffing, no referrer.
pub(super) fn with_page_headers(mut response: Response, policy: &'static str) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(policy),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}
