//! What a retry or dead letter carries. A replacement is a new message of the service's own:
//! the original body, `message_id`, `type` and `content_type`, persistent, with fresh headers
//! ([`republished_properties`]), among them the trace context of the span that handled it, so
//! the trace goes on through every retry and into the dead letter. Nothing else of the original
//! is repeated: another user's `user_id` would make the broker close the publishing channel, an
//! `expiration` would let the evidence expire in the dead-letter queue, and unbounded headers
//! could push the header frame past the broker's frame size.

use lapin::BasicProperties;
use lapin::message::Delivery;
use lapin::types::{AMQPValue, FieldTable};

use super::consumer::{
    ATTEMPT_HEADER, HEADERS_DROPPED_HEADER, ORIGINAL_ROUTING_KEY_HEADER, REASON_HEADER,
};
use super::header_bounds::{Bounded, Measure};
use super::routing::{BOOKKEEPING_HEADERS, original_routing_key};
use super::trace_headers;
use crate::telemetry::TraceContext;
use crate::telemetry::trace_context::{TRACEPARENT, TRACESTATE};

/// The longest `x-error-reason`, in bytes; a longer reason is cut (at a character boundary). The
/// same bound as a parked dead letter's reason.
pub const REASON_MAX_BYTES: usize = crate::domain::MAX_REASON_BYTES;

/// The properties of a retry or dead letter of `delivery`: its `message_id`, `type` and
/// `content_type`, persistent; the original's own headers if they fit the bounds
/// (`header_bounds`), else `x-original-headers-dropped` saying how large they were; and the
/// service's headers: `x-attempt`, `x-error-reason` (cut to [`REASON_MAX_BYTES`]),
/// `x-original-routing-key` (`routing::original_routing_key`), and `traceparent`/`tracestate`
/// naming `trace`, the span that handled it (valid and bounded whatever the original carried).
pub(super) fn republished_properties(
    delivery: &Delivery,
    attempt: u32,
    reason: &str,
    trace: &TraceContext,
) -> BasicProperties {
    let original = delivery.properties.headers().as_ref();
    let routing_key = original_routing_key(original, delivery.routing_key.as_str());
    let mut headers = match carried_headers(original, &[TRACEPARENT, TRACESTATE]) {
        Ok(kept) => kept.into_table(),
        Err(measure) => dropped(measure),
    };
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(attempt));
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString(bounded(reason, REASON_MAX_BYTES).into()),
    );
    headers.insert(
        ORIGINAL_ROUTING_KEY_HEADER.into(),
        AMQPValue::LongString(routing_key.into()),
    );
    trace_headers::insert(&mut headers, trace);

    let properties = &delivery.properties;
    let mut republished = BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers);
    if let Some(id) = properties.message_id() {
        republished = republished.with_message_id(id.clone());
    }
    if let Some(kind) = properties.kind() {
        republished = republished.with_type(kind.clone());
    }
    if let Some(content_type) = properties.content_type() {
        republished = republished.with_content_type(content_type.clone());
    }
    republished
}

/// The original's headers without the bookkeeping ones (nor those named in `also_without`), if
/// they fit the bounds; else how large they were.
pub(super) fn carried_headers(
    headers: Option<&FieldTable>,
    also_without: &[&str],
) -> Result<Bounded, Measure> {
    let mut kept = FieldTable::default();
    for (key, value) in headers.into_iter().flat_map(FieldTable::inner) {
        let name = key.as_str();
        if !BOOKKEEPING_HEADERS.contains(&name) && !also_without.contains(&name) {
            kept.insert(key.clone(), value.clone());
        }
    }
    Bounded::new(kept)
}

/// In place of headers too large or too deep to carry on: `x-original-headers-dropped`, their
/// size in bytes.
pub(super) fn dropped(measure: Measure) -> FieldTable {
    let mut table = FieldTable::default();
    table.insert(
        HEADERS_DROPPED_HEADER.into(),
        AMQPValue::LongLongInt(i64::try_from(measure.bytes).unwrap_or(i64::MAX)),
    );
    table
}

/// `text` cut to at most `max` bytes at a character boundary, marked with `…` when cut.
pub(super) fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let marker = "…";
    let mut end = max - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

/// Which delivery through the retry path this is: 1 for a message never retried.
pub(super) fn attempt_of(properties: &BasicProperties) -> u32 {
    let value = properties
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(ATTEMPT_HEADER).cloned());
    let attempt = match value {
        Some(AMQPValue::LongUInt(n)) => i64::from(n),
        Some(AMQPValue::LongInt(n)) => i64::from(n),
        Some(AMQPValue::LongLongInt(n)) => n,
        Some(AMQPValue::ShortUInt(n)) => i64::from(n),
        Some(AMQPValue::ShortInt(n)) => i64::from(n),
        Some(AMQPValue::ShortShortUInt(n)) => i64::from(n),
        Some(AMQPValue::ShortShortInt(n)) => i64::from(n),
        _ => 1,
    };
    u32::try_from(attempt.max(1)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_at_a_character_boundary_and_marked() {
        assert_eq!(bounded("short", 10), "short");
        let cut = bounded(&"é".repeat(1000), REASON_MAX_BYTES);
        assert!(cut.len() <= REASON_MAX_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }

    fn delivery(headers: FieldTable, routing_key: &str) -> Delivery {
        let mut delivery = Delivery::mock(1, "".into(), routing_key.into(), false, vec![]);
        delivery.properties = BasicProperties::default().with_headers(headers);
        delivery
    }

    fn headers_of(properties: &BasicProperties) -> FieldTable {
        properties.headers().clone().unwrap_or_default()
    }

    #[test]
    fn a_publishers_bookkeeping_headers_are_not_repeated() {
        let mut forged = FieldTable::default();
        forged.insert("x-death".into(), AMQPValue::FieldArray(vec![].into()));
        forged.insert(
            REASON_HEADER.into(),
            AMQPValue::LongString("delivery_limit".into()),
        );
        forged.insert("kept".into(), AMQPValue::Boolean(true));
        let republished = republished_properties(
            &delivery(forged, "payment.succeeded"),
            1,
            "poison: x",
            &TraceContext::start(),
        );
        let headers = headers_of(&republished);
        assert!(headers.inner().get("x-death").is_none());
        assert_eq!(
            headers.inner().get(REASON_HEADER),
            Some(&AMQPValue::LongString("poison: x".into()))
        );
        assert_eq!(headers.inner().get("kept"), Some(&AMQPValue::Boolean(true)));
    }

    #[test]
    fn headers_too_large_or_too_deep_are_dropped_and_their_size_said() {
        let mut deep = FieldTable::default();
        for _ in 0..super::super::header_bounds::MAX_DEPTH {
            let mut outer = FieldTable::default();
            outer.insert("t".into(), AMQPValue::FieldTable(deep));
            deep = outer;
        }
        let mut large = FieldTable::default();
        large.insert(
            ORIGINAL_ROUTING_KEY_HEADER.into(),
            AMQPValue::LongString("k".repeat(130 * 1024).into()),
        );
        large.insert(
            "big".into(),
            AMQPValue::LongString("b".repeat(20_000).into()),
        );
        for original in [deep, large] {
            let republished = republished_properties(
                &delivery(original, "payment.succeeded"),
                1,
                "poison: x",
                &TraceContext::start(),
            );
            let headers = headers_of(&republished);
            assert!(
                matches!(headers.inner().get(HEADERS_DROPPED_HEADER), Some(AMQPValue::LongLongInt(n)) if *n > 0),
                "{headers:?}"
            );
            assert_eq!(
                headers.inner().get(ORIGINAL_ROUTING_KEY_HEADER),
                Some(&AMQPValue::LongString("payment.succeeded".into()))
            );
            assert!(super::super::header_bounds::measure(&headers).fits());
        }
    }
}
