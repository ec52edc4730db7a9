//! The REST door: axum handlers (orders, payments, dead letters, ops), extractors, problem+json
//! errors and the OpenAPI document.
//! Handlers translate requests into application commands and outcomes into responses; they hold
//! no business rules.

mod auth;
mod console;
mod dead_letter_requests;
mod dead_letter_routes;
mod docs;
pub mod dto;
mod event_docs;
mod extract;
mod if_match;
mod lifecycle;
mod limits;
mod me;
mod openapi;
mod openapi_parts;
mod ops;
mod order_events;
mod orders;
mod page_query;
mod payments;
pub mod problem;
mod respond;
mod server;
mod state;
mod trace;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request, StatusCode};
use axum::response::IntoResponse;
use axum::{Router, middleware};
use tokio::sync::Semaphore;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

pub use auth::OpenPaths;
pub use console::CONTENT_SECURITY_POLICY as CONSOLE_CONTENT_SECURITY_POLICY;
pub use extract::MAX_BODY_BYTES;
pub use limits::Limits;
pub use openapi::{document as openapi_document, to_pretty_json as openapi_json};
pub use problem::Problem;
pub use server::{ConnectionLimits, serve};
pub use state::ApiState;

use crate::auth::AuthMode;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The documented routes, each handler module's own, and the document they make.
fn routes() -> (Router<ApiState>, utoipa::openapi::OpenApi) {
    let (router, mut document) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(orders::routes())
        .merge(payments::routes())
        .merge(lifecycle::routes())
        .merge(order_events::routes())
        .merge(dead_letter_routes::routes())
        .merge(ops::routes())
        .merge(me::routes())
        .split_for_parts();
    openapi::secure(&mut document);
    openapi::link(&mut document);
    openapi::constrain_headers(&mut document);
    (router, document)
}

/// How the router treats callers and how much a request may cost.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    pub auth: AuthMode,
    pub open_paths: OpenPaths,
    pub limits: Limits,
}

impl Default for HttpSettings {
    /// Open (every caller is `anonymous`), with the default open paths and limits: what tests
    /// and tools driving the router in-process want. `startup` decides the real mode.
    fn default() -> Self {
        Self {
            auth: AuthMode::Open,
            open_paths: OpenPaths::default(),
            limits: Limits::default(),
        }
    }
}

/// The whole HTTP application without authentication (see [`HttpSettings::default`]).
pub fn router(state: ApiState) -> Router {
    router_with(state, HttpSettings::default())
}

/// The whole HTTP application, ready to serve or to be driven with `oneshot` in tests. Layers,
/// outermost first: request id, the request's span and trace context, trace, panic catcher,
/// metrics, time limit, authentication, body read (under its own time limit, before a slot is
/// taken), load shedding, body limit, then the route.
pub fn router_with(state: ApiState, settings: HttpSettings) -> Router {
    let guard = Arc::new(auth::Guard::new(settings.auth, settings.open_paths));
    let slots = Arc::new(Semaphore::new(settings.limits.max_concurrent_requests));
    let (api, document) = routes();
    api.merge(docs::router(document))
        .merge(event_docs::router())
        .merge(console::router())
        .fallback(|| async { Problem::not_found("no such resource").into_response() })
        .method_not_allowed_fallback(|| async {
            Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method-not-allowed",
                "Method not allowed",
                "this resource does not support that method",
            )
            .into_response()
        })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(slots, limits::shed_load))
        .layer(middleware::from_fn_with_state(
            settings.limits.body_read_timeout,
            limits::read_body,
        ))
        .layer(middleware::from_fn_with_state(guard, auth::authenticate))
        .layer(middleware::from_fn_with_state(
            settings.limits.request_timeout,
            limits::time_limit,
        ))
        .layer(middleware::from_fn(ops::track))
        .layer(CatchPanicLayer::custom(|_| {
            tracing::error!("handler panicked");
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "Internal server error",
                "an unexpected error occurred; it has been logged",
            )
            .into_response()
        }))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request<_>| trace::span_of(request)),
        )
        .layer(middleware::from_fn(trace::begin))
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .with_state(state)
}
