//! The messaging contract for machines and for people (docs/messaging.md "The messaging contract:
//! AsyncAPI"): the AsyncAPI 3.0 document at `/asyncapi.json`, and `/docs/events`, the page that
//! renders it offline with the vendored AsyncAPI React component (`assets/asyncapi/`), under the
//! same headers as the Swagger UI at `/docs`.
//!
//! These routes are more specific than the Swagger UI's `/docs/{*rest}`, so the router picks
//! them for `/docs/events` and `/docs/events/…`.

use axum::Router;
use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

use super::docs::{served, with_page_headers};
use super::problem::Problem;
use super::state::ApiState;
use crate::amqp::asyncapi;

/// The Swagger UI's policy (`docs::CONTENT_SECURITY_POLICY`) plus `'unsafe-eval'`, which this
/// renderer truly needs: its bundled AsyncAPI parser validates documents with Ajv, which compiles
/// JSON Schemas into functions (`new Function`) as the bundle loads; without it the bundle stops
/// at once and the page stays empty. Still no inline script and nothing from another origin: the
/// bootstrap is a file of this origin, and the only document it evaluates is this service's own.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self' 'unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; \
     connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const PAGE: &str = include_str!("../../assets/events/index.html");
const BOOTSTRAP: &str = include_str!("../../assets/events/events.js");
/// `@asyncapi/react-component`'s standalone bundle and stylesheet (`assets/asyncapi/README.md`).
const RENDERER: &str = include_str!("../../assets/asyncapi/index.js");
const STYLES: &str = include_str!("../../assets/asyncapi/default.min.css");

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

pub(super) fn router() -> Router<ApiState> {
    let document = asyncapi::to_pretty_json();
    Router::new()
        .route(
            "/asyncapi.json",
            get(move || async move { ([(header::CONTENT_TYPE, "application/json")], document) }),
        )
        .route("/docs/events", get(page))
        .route(
            "/docs/events/",
            get(|| async { Redirect::permanent("../events") }),
        )
        .route("/docs/events/{asset}", get(asset))
        .layer(axum::middleware::map_response(|response: Response| async {
            with_page_headers(response, CONTENT_SECURITY_POLICY)
        }))
}

async fn page() -> Response {
    served(PAGE, "text/html; charset=utf-8")
}

async fn asset(Path(name): Path<String>) -> Response {
    match name.as_str() {
        "asyncapi.js" => served(RENDERER, JAVASCRIPT),
        "asyncapi.css" => served(STYLES, "text/css; charset=utf-8"),
        "events.js" => served(BOOTSTRAP, JAVASCRIPT),
        _ => Problem::not_found("no such page of the events documentation").into_response(),
    }
}
