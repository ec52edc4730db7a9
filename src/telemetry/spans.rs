//! A unit of the service's work — a request, a delivery, a published event, an expiry sweep — runs
//! in a span of its own, and [`continue_trace`] gives that span its place in a trace: under the
//! caller's context, or at the root of a new trace. The context it returns is what the work passes
//! on (stored with its outbox rows, sent on a retry or dead letter), and its ids are recorded on
//! the span as `trace_id` and `span_id` for the logs (docs/operations/observability.md "Tracing").

use opentelemetry::trace::{self as otel, TraceContextExt};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::trace_context::{SpanId, TraceContext, TraceId};

/// Places `span` under `parent` (a caller's context; `None` starts a new trace) and returns the
/// span's own context. When spans are exported, its ids are those of the exported span, so a
/// consumer's span hangs under a span the trace holds; otherwise they are made here. The span
/// must declare the fields `trace_id` and `span_id` (as `tracing::field::Empty`) and must not
/// have been entered yet.
pub fn continue_trace(span: &tracing::Span, parent: Option<&TraceContext>) -> TraceContext {
    let context = exported(span, parent).unwrap_or_else(|| TraceContext::continue_or_start(parent));
    span.record("trace_id", tracing::field::display(context.trace_id()));
    span.record("span_id", tracing::field::display(context.span_id()));
    context
}

/// The ids the OpenTelemetry layer gave `span` under `parent`; `None` when it did not see the
/// span (export off, or the span filtered out).
fn exported(span: &tracing::Span, parent: Option<&TraceContext>) -> Option<TraceContext> {
    let remote = match parent {
        Some(parent) => {
            opentelemetry::Context::new().with_remote_span_context(otel::SpanContext::new(
                otel::TraceId::from_bytes(parent.trace_id().to_bytes()),
                otel::SpanId::from_bytes(parent.span_id().to_bytes()),
                otel::TraceFlags::default().with_sampled(parent.sampled()),
                true,
                otel::TraceState::NONE,
            ))
        }
        // An empty parent: the span starts a trace rather than joining whatever span is current.
        None => opentelemetry::Context::new(),
    };
    span.set_parent(remote).ok()?;
    let context = span.context();
    let own = context.span().span_context().clone();
    let trace_id = TraceId::from_bytes(own.trace_id().to_bytes())?;
    let span_id = SpanId::from_bytes(own.span_id().to_bytes())?;
    Some(
        TraceContext::new(trace_id, span_id, own.is_sampled())
            .with_state(parent.and_then(|p| p.state().cloned())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A span of traced work, not yet entered.
    fn work() -> tracing::Span {
        tracing::info_span!(
            "work",
            trace_id = tracing::field::Empty,
            span_id = tracing::field::Empty
        )
    }

    #[test]
    fn without_an_exporter_the_span_continues_the_callers_trace_with_its_own_id() {
        let caller = TraceContext::start();
        let ours = continue_trace(&work(), Some(&caller));
        assert_eq!(ours.trace_id(), caller.trace_id());
        assert_ne!(ours.span_id(), caller.span_id());
        assert_ne!(continue_trace(&work(), None).trace_id(), caller.trace_id());
    }

    #[test]
    fn an_exported_span_is_the_one_whose_ids_are_passed_on() {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::layer::SubscriberExt;

        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let caller = TraceContext::start();
            let span = work();
            let ours = continue_trace(&span, Some(&caller));
            let exported = span.context().span().span_context().clone();
            assert_eq!(ours.trace_id(), caller.trace_id());
            assert_eq!(ours.span_id().to_bytes(), exported.span_id().to_bytes());
            assert_eq!(ours.trace_id().to_bytes(), exported.trace_id().to_bytes());

            let started = span.in_scope(|| continue_trace(&work(), None));
            assert_ne!(
                started.trace_id(),
                caller.trace_id(),
                "a new trace, not the current one"
            );
        });
    }
}
