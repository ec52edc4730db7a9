//! The request's span and its place in a trace. [`begin`] makes the span and continues the
//! `traceparent`/`tracestate` request headers in it (a missing or malformed one starts a new
//! trace; it never fails the request); `TraceLayer` then runs the request in that span, and the
//! handlers pass its context to the application, whose events carry it
//! (docs/operations/observability.md "Tracing").

use axum::extract::Request;
use axum::http::{Extensions, HeaderMap};
use axum::middleware::Next;
use axum::response::Response;

use crate::telemetry::trace_context::{TRACEPARENT, TRACESTATE};
use crate::telemetry::{TraceContext, continue_trace, escaped};

/// The span [`begin`] made, for `TraceLayer` to run the request in.
#[derive(Clone)]
struct RequestSpan(tracing::Span);

/// Makes the request's span, continuing the caller's trace, and leaves the span and its context
/// in the request's extensions.
pub(super) async fn begin(mut request: Request, next: Next) -> Response {
    let request_id = request
        .headers()
        .get(super::REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    let span = tracing::info_span!(
        "http",
        method = %request.method(),
        path = %request.uri().path(),
        // Client-chosen (a tab is a legal header character): escaped.
        request_id = %escaped(request_id),
        trace_id = tracing::field::Empty,
        span_id = tracing::field::Empty,
    );
    let caller = caller(request.headers());
    let trace = continue_trace(&span, caller.as_ref());
    request.extensions_mut().insert(trace);
    request.extensions_mut().insert(RequestSpan(span));
    next.run(request).await
}

/// The caller's context. Several `traceparent` headers make none (which one would be meant?);
/// several `tracestate` headers are one list, in order (W3C §3.3.1.1).
fn caller(headers: &HeaderMap) -> Option<TraceContext> {
    let mut parents = headers.get_all(TRACEPARENT).iter();
    let parent = parents.next().and_then(|v| v.to_str().ok());
    if parents.next().is_some() {
        return None;
    }
    let states: Vec<&str> = headers
        .get_all(TRACESTATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    TraceContext::from_headers(parent, state.as_deref())
}

/// The span [`begin`] made for `request` (none if the router was built without it).
pub(super) fn span_of<B>(request: &axum::http::Request<B>) -> tracing::Span {
    request
        .extensions()
        .get::<RequestSpan>()
        .map_or_else(tracing::Span::none, |span| span.0.clone())
}

/// The request's trace context, as [`begin`] left it (a new trace if the router was built
/// without it).
pub(super) fn context_of(extensions: &Extensions) -> TraceContext {
    extensions
        .get::<TraceContext>()
        .cloned()
        .unwrap_or_else(TraceContext::start)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn the_callers_traceparent_and_every_tracestate_header_are_read() {
        let caller = caller(&headers(&[
            (TRACEPARENT, PARENT),
            (TRACESTATE, "a=1"),
            (TRACESTATE, "b=2"),
        ]))
        .expect("a caller");
        assert_eq!(caller.traceparent(), PARENT);
        assert_eq!(caller.tracestate(), Some("a=1,b=2"));
    }

    #[test]
    fn two_traceparents_or_none_make_no_caller() {
        assert_eq!(
            caller(&headers(&[(TRACEPARENT, PARENT), (TRACEPARENT, PARENT)])),
            None
        );
        assert_eq!(caller(&headers(&[(TRACESTATE, "a=1")])), None);
    }
}
