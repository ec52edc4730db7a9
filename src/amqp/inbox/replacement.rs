//! What a retry or dead letter carries. A replacement is a new message of the service's own:
//! the original body, `message_id`, `type` and `content_type`, persistent, with fresh headers
//! ([`republished_properties`]), among them the trace context of the span that handled it, so
//! the trace goes on through every retry and into the dead letter. Nothing else of the original
//! is repeated: another user's `user_id` would make the broker close the publishing channel, an
//! `expiration` would let the evidence expire in the dead-letter queue, and unbounded headers
//! could push the header frame past the broker's frame size.

use lapin::BasicProperties;
use lapin::message::Delivery;
use lapin::types::AMQPValue;

use super::attempt_seal::AttemptSeal;
use crate::amqp::headers::{
    ORIGINAL_ROUTING_KEY_HEADER, REASON_HEADER, carried_headers, cut_to, dropped,
    original_routing_key, trace_headers,
};
use crate::domain::MAX_REASON_BYTES;
use crate::telemetry::TraceContext;
use crate::telemetry::trace_context::{TRACEPARENT, TRACESTATE};

/// The properties of a retry or dead letter of `delivery`: its `message_id`, `type` and
/// `content_type`, persistent; the original's own headers if they fit the bounds
/// (`header_bounds`), else `x-original-headers-dropped` saying how large they were; and the
/// service's headers: `x-attempt` with its seal (`attempt_seal`), `x-error-reason` (cut to
/// [`MAX_REASON_BYTES`]),
/// `x-original-routing-key` (`headers::original_routing_key`), and `traceparent`/`tracestate`
/// naming `trace`, the span that handled it (valid and bounded whatever the original carried).
pub(super) fn republished_properties(
    delivery: &Delivery,
    attempt: u32,
    seal: &AttemptSeal,
    reason: &str,
    trace: &TraceContext,
) -> BasicProperties {
    let original = delivery.properties.headers().as_ref();
    let routing_key = original_routing_key(original, delivery.routing_key.as_str());
    let mut headers = match carried_headers(original, &[TRACEPARENT, TRACESTATE]) {
        Ok(kept) => kept.into_table(),
        Err(measure) => dropped(measure),
    };
    seal.write(&mut headers, attempt, &delivery.properties, &delivery.data);
    headers.insert(
        REASON_HEADER.into(),
        AMQPValue::LongString(cut_to(reason, MAX_REASON_BYTES).into()),
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

#[cfg(test)]
mod tests {
    use lapin::types::FieldTable;

    use super::*;
    use crate::amqp::headers::HEADERS_DROPPED_HEADER;

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
            &AttemptSeal::new(b"key").unwrap(),
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
        for _ in 0..crate::amqp::headers::header_bounds::MAX_DEPTH {
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
                &AttemptSeal::new(b"key").unwrap(),
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
            assert!(crate::amqp::headers::header_bounds::measure(&headers).fits());
        }
    }
}
