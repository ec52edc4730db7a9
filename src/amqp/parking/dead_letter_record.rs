//! What a dead letter is parked as (docs/contract.md#parked-dead-letters): its identity, its reason
//! (`x-error-reason`, or the broker's own from `x-death`), the routing key it first arrived with,
//! the `event_id` and `type` of its body when it is an envelope, and its properties without the
//! bookkeeping headers. Everything is bounded: the reason is cut to 1 KiB, headers larger or
//! deeper than `header_bounds` allows are left out (as a retry leaves them out), and the body is
//! read once.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use serde::Deserialize;

use crate::amqp::headers::header_bounds::Bounded;
use crate::amqp::headers::{
    DEATH_HEADER, HEADERS_DROPPED_HEADER, REASON_HEADER, carried_headers, cut_to, dropped,
    newest_death, original_routing_key,
};
use crate::amqp::inbound::Poison;
use crate::amqp::properties::{self, without_nul};
use crate::domain::{DeadLetterIdentity, EventId, MAX_REASON_BYTES, ReasonClass, type_filter};
use crate::store::dead_letters::NewDeadLetter;

/// The dead letter a delivery from the dead-letter queue parks as. `delivery_limit` is the inbox's
/// (`AMQP_DELIVERY_LIMIT`; 0: none declared), named in the reason of a broker dead letter.
pub fn dead_letter_of(
    routing_key: &str,
    properties: &BasicProperties,
    body: &[u8],
    delivery_limit: u32,
) -> NewDeadLetter {
    let headers = properties.headers().as_ref();
    let routing_key = without_nul(&original_routing_key(headers, routing_key));
    let message_id = properties
        .message_id()
        .as_ref()
        .map(|id| without_nul(id.as_str()))
        .filter(|id| !id.is_empty());
    let (event_id, event_type) = envelope_fields(body);
    let (kept, shown) = kept_headers(headers);
    NewDeadLetter {
        identity: DeadLetterIdentity::of(message_id.as_deref(), &routing_key, body),
        message_id,
        event_id,
        event_type,
        reason: cut_to(
            &without_nul(&reason_of(headers, delivery_limit)),
            MAX_REASON_BYTES,
        ),
        routing_key,
        body: body.to_vec(),
        properties: properties::encode(properties, &kept),
        headers: shown,
    }
}

/// Why a dead letter of `bytes`, over the consumer's `limit`, died: the consumer rejected it
/// unread, and the broker dead-lettered it (with an `x-death` that says only "rejected").
pub fn refused_unread(bytes: usize, limit: usize) -> String {
    let poison = Poison::TooLarge { bytes, limit };
    ReasonClass::Poison.reason(&format!("{poison}; refused unread"))
}

/// Why it died: the service's `x-error-reason`, unless the broker gave up on it after the
/// service's last word (its newest `x-death` is a delivery limit, a rejection or a full queue; the
/// service's retry path only ever adds `expired` deaths, in its delay queues). Without either, a
/// reason of class `other`.
pub fn reason_of(headers: Option<&FieldTable>, delivery_limit: u32) -> String {
    let header = |name: &str| headers.and_then(|h| h.inner().get(name));
    let service = header(REASON_HEADER).and_then(text);
    let death = header(DEATH_HEADER).and_then(newest_broker_death);
    let broker_gave_up = death.as_ref().is_some_and(|d| {
        matches!(
            d.class(),
            ReasonClass::DeliveryLimit | ReasonClass::Rejected | ReasonClass::Maxlen
        )
    });
    match (service, death) {
        (_, Some(death)) if broker_gave_up => death.describe(delivery_limit),
        (Some(reason), _) => reason,
        (None, Some(death)) => death.describe(delivery_limit),
        (None, None) => ReasonClass::Other.reason("dead-lettered without a reason"),
    }
}

/// One `x-death` entry, as far as a reason needs it.
struct Death {
    reason: String,
    queue: String,
}

impl Death {
    /// The class of the broker's reason word (`delivery_limit`, `expired`, …).
    fn class(&self) -> ReasonClass {
        self.reason.parse().unwrap_or(ReasonClass::Other)
    }

    fn describe(&self, delivery_limit: u32) -> String {
        let from = format!("broker dead letter from {}", self.queue);
        match self.class() {
            ReasonClass::DeliveryLimit => {
                let times = match delivery_limit {
                    0 => "more times than its queue's delivery limit".to_owned(),
                    limit => format!("more than {limit} times"),
                };
                ReasonClass::DeliveryLimit
                    .reason(&format!("delivered {times} without being settled ({from})"))
            }
            ReasonClass::Expired => {
                ReasonClass::Expired.reason(&format!("its time to live ran out ({from})"))
            }
            ReasonClass::Rejected => ReasonClass::Rejected.reason(&format!(
                "a consumer rejected it without requeueing ({from})"
            )),
            ReasonClass::Maxlen => {
                ReasonClass::Maxlen.reason(&format!("the queue was full ({from})"))
            }
            _ => format!("{}: {from}", self.reason),
        }
    }
}

/// The newest `x-death` entry, trusted only as the broker writes it: the service passes no
/// publisher's `x-death` on (`headers::BOOKKEEPING_HEADERS`), so one here was written by the
/// broker as it dead-lettered the message from one of the service's queues.
fn newest_broker_death(value: &AMQPValue) -> Option<Death> {
    let AMQPValue::FieldTable(death) = newest_death(value)? else {
        return None;
    };
    let field = |name: &str| death.inner().get(name);
    Some(Death {
        reason: field("reason").and_then(text)?,
        queue: field("queue").and_then(text).unwrap_or_default(),
    })
}

fn text(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

/// The original's headers without the bookkeeping ones: as a replay publishes them, and as people
/// see them. Over the bounds (`header_bounds`) they are left out, and the plain form says how
/// large they were in `x-original-headers-dropped`, as it also shows that header when the
/// consumer already dropped them from the dead letter it published.
fn kept_headers(headers: Option<&FieldTable>) -> (Bounded, serde_json::Value) {
    let (kept, mut shown) = match carried_headers(headers, &[]) {
        Ok(kept) => {
            let shown = properties::plain(&kept);
            (kept, shown)
        }
        // One number: always within the bounds.
        Err(measure) => (
            Bounded::default(),
            Bounded::new(dropped(measure))
                .map_or_else(|_| serde_json::json!({}), |d| properties::plain(&d)),
        ),
    };
    let dropped_earlier = headers.and_then(|h| h.inner().get(HEADERS_DROPPED_HEADER));
    if let (Some(AMQPValue::LongLongInt(size)), Some(shown)) =
        (dropped_earlier, shown.as_object_mut())
    {
        shown.insert(HEADERS_DROPPED_HEADER.to_owned(), serde_json::json!(size));
    }
    (kept, shown)
}

/// The `event_id` and `type` of a body that is an envelope (each one that is valid text); the
/// rest of the body is skipped without being kept.
fn envelope_fields(body: &[u8]) -> (Option<String>, Option<String>) {
    #[derive(Deserialize)]
    struct Probe {
        event_id: Option<serde_json::Value>,
        #[serde(rename = "type")]
        event_type: Option<serde_json::Value>,
    }
    let Ok(probe) = serde_json::from_slice::<Probe>(body) else {
        return (None, None);
    };
    let event_id = probe
        .event_id
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .and_then(|id| EventId::parse(id).ok())
        .map(|id| without_nul(id.as_str()));
    let event_type = probe
        .event_type
        .as_ref()
        .and_then(serde_json::Value::as_str)
        .and_then(|kind| type_filter(kind).ok())
        .map(|kind| kind.as_str().to_owned());
    (event_id, event_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::amqp::headers::header_bounds::MAX_BYTES;
    use crate::amqp::headers::{
        ATTEMPT_HEADER, DELIVERY_COUNT_HEADER, ORIGINAL_ROUTING_KEY_HEADER,
    };

    fn long_string(value: &str) -> AMQPValue {
        AMQPValue::LongString(value.into())
    }

    fn headers(entries: &[(&str, AMQPValue)]) -> FieldTable {
        let mut table = FieldTable::default();
        for (key, value) in entries {
            table.insert((*key).into(), value.clone());
        }
        table
    }

    /// An `x-death` header: one entry per `(reason, queue, routing key)`, newest first.
    fn deaths(entries: &[(&str, &str, &str)]) -> AMQPValue {
        let entries: Vec<AMQPValue> = entries
            .iter()
            .map(|(reason, queue, routing_key)| {
                let mut entry = FieldTable::default();
                entry.insert("reason".into(), long_string(reason));
                entry.insert("queue".into(), long_string(queue));
                entry.insert("count".into(), AMQPValue::LongLongInt(1));
                entry.insert(
                    "routing-keys".into(),
                    AMQPValue::FieldArray(vec![long_string(routing_key)].into()),
                );
                AMQPValue::FieldTable(entry)
            })
            .collect();
        AMQPValue::FieldArray(entries.into())
    }

    /// The service's header `key` (text) beside the broker's `x-death` (see [`deaths`]).
    fn service_header_and_deaths(
        key: &str,
        value: &str,
        died: &[(&str, &str, &str)],
    ) -> FieldTable {
        headers(&[(key, long_string(value)), (DEATH_HEADER, deaths(died))])
    }

    #[test]
    fn the_services_reason_comes_first() {
        let h = headers(&[(REASON_HEADER, long_string("poison: not a JSON envelope"))]);
        assert_eq!(reason_of(Some(&h), 20), "poison: not a JSON envelope");
    }

    #[test]
    fn a_broker_dead_letter_is_named_by_its_newest_death() {
        let h = headers(&[
            (
                DEATH_HEADER,
                deaths(&[("delivery_limit", "order-service.inbox", "payment.succeeded")]),
            ),
            (DELIVERY_COUNT_HEADER, AMQPValue::LongLongInt(0)),
        ]);
        let reason = reason_of(Some(&h), 20);
        assert_eq!(
            reason,
            "delivery_limit: delivered more than 20 times without being settled \
             (broker dead letter from order-service.inbox)"
        );
        assert_eq!(ReasonClass::of(&reason), ReasonClass::DeliveryLimit);
        assert!(
            reason_of(Some(&h), 0).contains("more times than its queue's delivery limit"),
            "without a configured limit"
        );
        for (broker, class) in [
            ("expired", ReasonClass::Expired),
            ("rejected", ReasonClass::Rejected),
            ("maxlen", ReasonClass::Maxlen),
            ("something_new", ReasonClass::Other),
        ] {
            let h = headers(&[(DEATH_HEADER, deaths(&[(broker, "q", "k")]))]);
            let reason = reason_of(Some(&h), 20);
            assert_eq!(ReasonClass::of(&reason), class, "{reason}");
            assert!(reason.contains("broker dead letter from q"), "{reason}");
        }
    }

    #[test]
    fn a_delivery_limit_after_retries_is_the_brokers_reason_not_the_last_retrys() {
        // Retried once (its delay queue's TTL added an `expired` death and the retry's reason),
        // then it crash-looped in the inbox until the broker gave up.
        let h = service_header_and_deaths(
            REASON_HEADER,
            "premature: order 1 does not exist yet",
            &[
                ("delivery_limit", "inbox", "inbox"),
                ("expired", "inbox.retry.1000ms", "inbox.retry.1000ms"),
            ],
        );
        let reason = reason_of(Some(&h), 20);
        assert!(
            reason.starts_with("delivery_limit: delivered more than 20 times"),
            "{reason}"
        );
    }

    #[test]
    fn a_dead_letter_after_retries_keeps_the_services_reason() {
        let h = service_header_and_deaths(
            REASON_HEADER,
            "premature: order 1 does not exist yet (gave up after 2 attempts)",
            &[("expired", "inbox.retry.1000ms", "inbox")],
        );
        assert!(reason_of(Some(&h), 20).starts_with("premature: order 1"));
    }

    #[test]
    fn without_any_reason_the_class_is_other() {
        assert_eq!(ReasonClass::of(&reason_of(None, 20)), ReasonClass::Other);
    }

    #[test]
    fn the_original_routing_key_is_the_services_header_then_the_brokers_then_the_deliverys() {
        let service = service_header_and_deaths(
            ORIGINAL_ROUTING_KEY_HEADER,
            "payment.succeeded",
            &[("delivery_limit", "inbox", "inbox")],
        );
        assert_eq!(
            original_routing_key(Some(&service), "x"),
            "payment.succeeded"
        );
        let broker = headers(&[(
            DEATH_HEADER,
            deaths(&[("delivery_limit", "inbox", "order.placed")]),
        )]);
        assert_eq!(original_routing_key(Some(&broker), "x"), "order.placed");
        assert_eq!(
            original_routing_key(None, "shipment.dispatched"),
            "shipment.dispatched"
        );
    }

    #[test]
    fn bookkeeping_headers_are_not_kept_and_the_rest_are() {
        let h = headers(&[
            (REASON_HEADER, long_string("poison: x")),
            (ATTEMPT_HEADER, AMQPValue::LongUInt(3)),
            (DEATH_HEADER, deaths(&[])),
            ("traceparent", long_string("00-abc-01")),
        ]);
        let letter = dead_letter_of(
            "payment.succeeded",
            &BasicProperties::default().with_headers(h),
            b"{}",
            20,
        );
        assert_eq!(
            letter.headers,
            serde_json::json!({"traceparent": "00-abc-01"})
        );
        let replayed = properties::decode(&letter.properties);
        let kept = replayed.headers().clone().unwrap();
        assert_eq!(
            kept.inner().keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["traceparent"]
        );
    }

    #[test]
    fn oversized_headers_are_left_out_and_their_size_shown() {
        let h = headers(&[("huge", long_string(&"h".repeat(MAX_BYTES)))]);
        let letter = dead_letter_of("k", &BasicProperties::default().with_headers(h), b"{}", 20);
        assert!(letter.headers[HEADERS_DROPPED_HEADER].as_i64().unwrap() > 16_384);
        assert_eq!(
            properties::decode(&letter.properties).headers().clone(),
            Some(FieldTable::default())
        );
    }

    #[test]
    fn headers_the_consumer_already_dropped_are_shown_as_dropped() {
        let h = headers(&[
            (REASON_HEADER, long_string("poison: x")),
            (HEADERS_DROPPED_HEADER, AMQPValue::LongLongInt(140_000)),
        ]);
        let letter = dead_letter_of("k", &BasicProperties::default().with_headers(h), b"{}", 20);
        assert_eq!(letter.headers[HEADERS_DROPPED_HEADER], 140_000);
    }

    #[test]
    fn event_id_and_type_are_read_from_an_envelope_and_null_otherwise() {
        let body = br#"{"event_id":"ev-1","type":"payment.succeeded","occurred_at":"x","data":{"a":[1,2]}}"#;
        assert_eq!(
            envelope_fields(body),
            (Some("ev-1".into()), Some("payment.succeeded".into()))
        );
        assert_eq!(envelope_fields(b"{poison"), (None, None));
        assert_eq!(envelope_fields(&[0xff, 0xfe]), (None, None));
        assert_eq!(envelope_fields(b"[1]"), (None, None));
        assert_eq!(
            envelope_fields(br#"{"event_id": 7, "type": "order.placed"}"#),
            (None, Some("order.placed".into()))
        );
        let long_type = format!(r#"{{"type": "{}"}}"#, "t".repeat(256));
        assert_eq!(envelope_fields(long_type.as_bytes()), (None, None));
    }

    #[test]
    fn the_identity_is_the_message_id_or_else_the_routing_key_and_body() {
        let with_id = BasicProperties::default().with_message_id("ev-1".into());
        let a = dead_letter_of("payment.succeeded", &with_id, b"one", 20);
        let b = dead_letter_of("other", &with_id, b"two", 20);
        assert_eq!(a.identity, b.identity);
        let c = dead_letter_of("payment.succeeded", &BasicProperties::default(), b"one", 20);
        let d = dead_letter_of("payment.succeeded", &BasicProperties::default(), b"one", 20);
        assert_eq!(c.identity, d.identity);
        assert_ne!(a.identity, c.identity);
    }

    #[test]
    fn a_long_reason_is_cut_to_the_stored_bound() {
        let h = headers(&[(
            REASON_HEADER,
            long_string(&format!("poison: {}", "x".repeat(5000))),
        )]);
        let letter = dead_letter_of("k", &BasicProperties::default().with_headers(h), b"", 20);
        assert!(letter.reason.len() <= MAX_REASON_BYTES);
        assert_eq!(ReasonClass::of(&letter.reason), ReasonClass::Poison);
    }
}
