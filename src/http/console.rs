//! The operator console (docs/operations/console.md): one static page at `/console` (and every
//! path under it, which the page routes itself), with its script and stylesheet, embedded in the
//! binary. The page holds no data: it asks the JSON API for everything, with the operator's
//! bearer token, under the same scopes as any client. Served under the strictest policy of the
//! service's pages: scripts and styles only from this origin, no inline script, no eval. The
//! console's icon is the service's: `/favicon.ico`, which a browser asks for on every page
//! without an icon of its own (`/docs/events`, a JSON document), is the same image, so that no
//! page of the service logs a failed request for it.

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::docs::{served, with_page_headers};
use super::problem::Problem;
use super::state::ApiState;

/// No inline script or style, no eval, nothing from another origin; the page talks only to this
/// service (`connect-src 'self'`) and is never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

const PAGE: &str = include_str!("../../assets/console/index.html");
const SCRIPT: &str = include_str!("../../assets/console/console.js");
const STYLES: &str = include_str!("../../assets/console/console.css");
const ICON: &str = include_str!("../../assets/console/favicon.svg");
const SVG: &str = "image/svg+xml";

pub(super) fn router() -> Router<ApiState> {
    Router::new()
        .route("/console", get(page))
        .route("/console/assets/{asset}", get(asset))
        .route("/console/{*view}", get(page))
        .route("/favicon.ico", get(|| async { served(ICON, SVG) }))
        .layer(axum::middleware::map_response(|response: Response| async {
            with_page_headers(response, CONTENT_SECURITY_POLICY)
        }))
}

async fn page() -> Response {
    served(PAGE, "text/html; charset=utf-8")
}

async fn asset(Path(name): Path<String>) -> Response {
    match name.as_str() {
        "console.js" => served(SCRIPT, "text/javascript; charset=utf-8"),
        "console.css" => served(STYLES, "text/css; charset=utf-8"),
        "favicon.svg" => served(ICON, SVG),
        _ => Problem::not_found("no such asset of the console").into_response(),
    }
}
