//! What one request may cost: a time limit on every request, a time limit on receiving its
//! body, and a cap on the API requests served at once. Beyond the cap a request is shed at once
//! (503 + `Retry-After`) rather than queued: a queue in front of a saturated database only turns
//! overload into timeouts for everyone. Health, metrics and docs are outside the cap, so probes
//! answer under load (a shed liveness probe would get a busy but healthy instance restarted).
//! The body is read before a slot is taken, under its own limit (408): a client sending slowly
//! holds its connection, not a slot others need.
//!
//! Header sizes are bounded by hyper before a request reaches the router (HTTP/1: at most 100
//! headers and a head of about 400 KiB, else 431; HTTP/2: 16 KiB of headers); bodies by
//! `DefaultBodyLimit` (64 KiB, 413).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use tokio::sync::Semaphore;

use super::auth::is_api_path;
use super::extract::{MAX_BODY_BYTES, payload_too_large};
use super::problem::Problem;
use crate::config::{
    DEFAULT_HTTP_BODY_READ_TIMEOUT_MS, DEFAULT_MAX_CONCURRENT_REQUESTS, DEFAULT_REQUEST_TIMEOUT_MS,
    LimitsConfig,
};

/// The limits of the HTTP side.
#[derive(Debug, Clone)]
pub struct Limits {
    pub request_timeout: Duration,
    pub body_read_timeout: Duration,
    pub max_concurrent_requests: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_millis(DEFAULT_REQUEST_TIMEOUT_MS),
            body_read_timeout: Duration::from_millis(DEFAULT_HTTP_BODY_READ_TIMEOUT_MS),
            max_concurrent_requests: DEFAULT_MAX_CONCURRENT_REQUESTS,
        }
    }
}

impl From<&LimitsConfig> for Limits {
    fn from(config: &LimitsConfig) -> Self {
        Self {
            request_timeout: config.request_timeout(),
            body_read_timeout: config.body_read_timeout(),
            max_concurrent_requests: config.max_concurrent_requests,
        }
    }
}

/// Receives the whole body (at most [`MAX_BODY_BYTES`]) within the limit, before the request
/// goes on to take a slot; 408 if it does not arrive in time, 413 if it is too large.
pub(super) async fn read_body(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_BODY_BYTES);
    let bytes = match tokio::time::timeout(limit, limited.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            return payload_too_large().into_response();
        }
        Ok(Err(_)) => {
            return Problem::bad_request("unreadable-body", "the request body could not be read")
                .into_response();
        }
        Err(_) => {
            metrics::counter!("http_body_read_timed_out_total").increment(1);
            return Problem::new(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                "Request body timed out",
                format!(
                    "the request body was not received within {} ms",
                    limit.as_millis()
                ),
            )
            .into_response();
        }
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// Answers 503 when the request is not done within the limit. The handler's future is dropped, and
/// a write still under way at the server refuses to take effect past the limit (`app::within`), so
/// nothing is left behind; a change that did commit in time is found again by a retry with the
/// same Idempotency-Key, which replays it.
pub(super) async fn time_limit(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    // The application's writes refuse to take effect past the limit (`app::within`).
    match crate::app::within(limit, next.run(request)).await {
        Some(response) => response,
        None => {
            tracing::warn!(?limit, "request timed out");
            metrics::counter!("http_requests_timed_out_total").increment(1);
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "timeout",
                "Request timed out",
                format!(
                    "the request did not finish within {} ms; retry (with the same \
                     Idempotency-Key for a POST)",
                    limit.as_millis()
                ),
            )
            .retry_after(1)
            .into_response()
        }
    }
}

/// Serves an API request only if a slot is free; otherwise sheds it.
pub(super) async fn shed_load(
    State(slots): State<Arc<Semaphore>>,
    request: Request,
    next: Next,
) -> Response {
    if !is_api_path(request.uri().path()) {
        return next.run(request).await;
    }
    let Ok(_slot) = slots.try_acquire() else {
        metrics::counter!("http_requests_shed_total").increment(1);
        return Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "Overloaded",
            "too many requests are in progress; retry shortly",
        )
        .retry_after(1)
        .into_response();
    };
    next.run(request).await
}
