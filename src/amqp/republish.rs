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
use super::trace_headers;
use crate::telemetry::TraceContext;
use crate::telemetry::trace_context::{TRACEPARENT, TRACESTATE};

/// The longest `x-error-reason`, in bytes; a longer reason is cut (at a character boundary). The
/// same bound as a parked dead letter's reason.
pub const REASON_MAX_BYTES: usize = crate::domain::MAX_REASON_BYTES;
/// The most (encoded) bytes of the original's headers a replacement repeats; larger headers are
/// dropped whole and `x-original-headers-dropped` says how large they were. With the reason and
/// the rest, a replacement's header frame stays far below RabbitMQ's frame size (128 KiB).
pub const ORIGINAL_HEADERS_MAX_BYTES: usize = 16 * 1024;

/// The properties of a retry or dead letter of `delivery`: its `message_id`, `type` and
/// `content_type`, persistent; the original's own headers if they fit
/// [`ORIGINAL_HEADERS_MAX_BYTES`]; and the service's headers: `x-attempt`, `x-error-reason` (cut
/// to [`REASON_MAX_BYTES`]), `x-original-routing-key` (kept from the first trip: a retry
/// comes back with the inbox's name as its routing key), and `traceparent`/`tracestate` naming
/// `trace`, the span that handled it (valid and bounded whatever the original carried).
pub(super) fn republished_properties(
    delivery: &Delivery,
    attempt: u32,
    reason: &str,
    trace: &TraceContext,
) -> BasicProperties {
    let original = &delivery.properties;
    let own = [
        ATTEMPT_HEADER,
        REASON_HEADER,
        ORIGINAL_ROUTING_KEY_HEADER,
        HEADERS_DROPPED_HEADER,
        TRACEPARENT,
        TRACESTATE,
    ];
    let mut headers = FieldTable::default();
    let mut routing_key = AMQPValue::LongString(delivery.routing_key.as_str().into());
    if let Some(table) = original.headers() {
        if let Some(first) = table.inner().get(ORIGINAL_ROUTING_KEY_HEADER) {
            routing_key = first.clone();
        }
        let size = table_size(table);
        if size <= ORIGINAL_HEADERS_MAX_BYTES {
            for (key, value) in table.inner() {
                if !own.contains(&key.as_str()) {
                    headers.insert(key.clone(), value.clone());
                }
            }
        } else {
            headers.insert(
                HEADERS_DROPPED_HEADER.into(),
                AMQPValue::LongLongInt(i64::try_from(size).unwrap_or(i64::MAX)),
            );
        }
    }
    headers.insert(ATTEMPT_HEADER.into(), AMQPValue::LongUInt(attempt));
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString(bounded(reason, REASON_MAX_BYTES).into()),
    );
    headers.insert(ORIGINAL_ROUTING_KEY_HEADER.into(), routing_key);
    trace_headers::insert(&mut headers, trace);

    let mut properties = BasicProperties::default()
        .with_delivery_mode(2)
        .with_headers(headers);
    if let Some(id) = original.message_id() {
        properties = properties.with_message_id(id.clone());
    }
    if let Some(kind) = original.kind() {
        properties = properties.with_type(kind.clone());
    }
    if let Some(content_type) = original.content_type() {
        properties = properties.with_content_type(content_type.clone());
    }
    properties
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

/// An upper bound of the encoded size of a field table (AMQP 0-9-1 §4.2.5.5).
pub(super) fn table_size(table: &FieldTable) -> usize {
    4 + table
        .inner()
        .iter()
        .map(|(key, value)| 1 + key.as_str().len() + value_size(value))
        .sum::<usize>()
}

fn value_size(value: &AMQPValue) -> usize {
    1 + match value {
        AMQPValue::ShortString(s) => 1 + s.as_str().len(),
        AMQPValue::LongString(s) => 4 + s.as_bytes().len(),
        AMQPValue::ByteArray(b) => 4 + b.as_slice().len(),
        AMQPValue::FieldTable(t) => table_size(t),
        AMQPValue::FieldArray(a) => 4 + a.as_slice().iter().map(value_size).sum::<usize>(),
        // Numbers, booleans, decimals, timestamps, void: at most 9 bytes.
        _ => 9,
    }
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

    #[test]
    fn the_size_of_headers_bounds_their_encoding() {
        let mut headers = FieldTable::default();
        headers.insert(
            "x-trace".into(),
            AMQPValue::LongString("t".repeat(100).into()),
        );
        headers.insert("n".into(), AMQPValue::LongUInt(1));
        // table length 4; "x-trace": 1 + 7 + type 1 + 4 + 100; "n": 1 + 1 + type 1 + at most 9.
        assert_eq!(table_size(&headers), 4 + 113 + 12);
    }
}
