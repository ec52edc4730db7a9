//! The W3C trace context on AMQP messages: the `traceparent` and `tracestate` headers, read from
//! a delivery and written on every message the service publishes (events, retries, dead
//! letters). What they may hold is decided in `telemetry::trace_context`.

use lapin::types::{AMQPValue, FieldTable};

use crate::telemetry::TraceContext;
use crate::telemetry::trace_context::{TRACEPARENT, TRACESTATE};

/// The sender's context from a message's headers; `None` when absent or malformed (the
/// message is then handled in a new trace, never refused for it).
pub(in crate::amqp) fn parent(headers: Option<&FieldTable>) -> Option<TraceContext> {
    let text = |name: &str| match headers?.inner().get(name)? {
        AMQPValue::LongString(text) => std::str::from_utf8(text.as_bytes()).ok(),
        AMQPValue::ShortString(text) => Some(text.as_str()),
        _ => None,
    };
    TraceContext::from_headers(text(TRACEPARENT), text(TRACESTATE))
}

/// Sets `trace` as the `traceparent` (and `tracestate`, if any) of a message to publish.
pub(in crate::amqp) fn insert(headers: &mut FieldTable, trace: &TraceContext) {
    headers.insert(
        TRACEPARENT.into(),
        AMQPValue::LongString(trace.traceparent().into()),
    );
    if let Some(state) = trace.tracestate() {
        headers.insert(TRACESTATE.into(), AMQPValue::LongString(state.into()));
    }
}

/// `headers` with `trace` in place of any trace context they carried (a replayed dead letter keeps
/// its other headers; its old `tracestate` must not outlive its old `traceparent`).
pub(in crate::amqp) fn replaced(headers: Option<&FieldTable>, trace: &TraceContext) -> FieldTable {
    let mut kept = headers.map(|h| h.inner().clone()).unwrap_or_default();
    kept.remove(TRACEPARENT);
    kept.remove(TRACESTATE);
    let mut headers = FieldTable::from(kept);
    insert(&mut headers, trace);
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACEPARENT_VALUE: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_replaced_context_leaves_no_state_of_the_old_one_and_keeps_the_other_headers() {
        let old = TraceContext::from_headers(Some(TRACEPARENT_VALUE), Some("a=1")).unwrap();
        let mut headers = FieldTable::default();
        insert(&mut headers, &old);
        headers.insert("x-other".into(), AMQPValue::LongUInt(7));
        let new = TraceContext::start();
        let replaced = replaced(Some(&headers), &new);
        assert_eq!(parent(Some(&replaced)), Some(new));
        assert!(!replaced.contains_key(TRACESTATE));
        assert!(replaced.contains_key("x-other"));
    }

    #[test]
    fn a_context_written_is_read_back() {
        let trace = TraceContext::from_headers(Some(TRACEPARENT_VALUE), Some("a=1")).unwrap();
        let mut headers = FieldTable::default();
        insert(&mut headers, &trace);
        assert_eq!(parent(Some(&headers)), Some(trace));
    }

    #[test]
    fn short_strings_are_read_and_other_values_or_bad_text_are_ignored() {
        let mut headers = FieldTable::default();
        headers.insert(
            TRACEPARENT.into(),
            AMQPValue::ShortString(TRACEPARENT_VALUE.into()),
        );
        assert!(parent(Some(&headers)).is_some());
        headers.insert(TRACEPARENT.into(), AMQPValue::LongUInt(1));
        assert_eq!(parent(Some(&headers)), None);
        headers.insert(
            TRACEPARENT.into(),
            AMQPValue::LongString(b"\xff\xfe".to_vec().into()),
        );
        assert_eq!(parent(Some(&headers)), None);
        assert_eq!(parent(None), None);
    }
}
