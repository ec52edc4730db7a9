//! Property tests of the parsers at the service's edges: whatever bytes arrive (an AMQP body, a
//! dead letter, an Idempotency-Key header, a request body, a client configuration, a
//! `traceparent` and `tracestate`), parsing answers `Ok` or `Err` and never panics, and what it
//! accepts respects the documented bounds.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use lapin::BasicProperties;
use lapin::types::{AMQPValue, FieldTable};
use order_service::amqp::inbound::{self, INBOUND_TYPES, Poison};
use order_service::amqp::parking::dead_letter_of;
use order_service::amqp::properties;
use order_service::app::fingerprint;
use order_service::auth::ClientRegistry;
use order_service::domain::{IdempotencyKey, MAX_REASON_BYTES, OrderId, ReasonClass};
use order_service::http::dto::{CancelRequest, PaymentRequest, PlaceOrderRequest, ShipRequest};
use order_service::strict_json::JsonObject;
use order_service::telemetry::TraceContext;
use order_service::telemetry::trace_context::TRACESTATE_MAX_BYTES;

/// Any JSON value, a few levels deep, with the awkward numbers and strings included.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,80}".prop_map(Value::from),
        "[A-Z]{3}".prop_map(Value::from),
        Just(json!("7c9e6679-7425-40de-944b-e07fc1f90ae7")),
        Just(json!("2026-11-21T10:00:00Z")),
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(".{0,12}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object holding some of `fields` (with any values) and perhaps an extra one.
fn object_with(fields: &'static [&'static str]) -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(
            (prop::sample::select(fields), any_json()),
            0..=fields.len() + 1,
        ),
        prop::option::of((".{1,8}", any_json())),
    )
        .prop_map(|(pairs, extra)| {
            let mut object = Map::new();
            for (name, value) in pairs {
                object.insert(name.to_owned(), value);
            }
            if let Some((name, value)) = extra {
                object.insert(name, value);
            }
            Value::Object(object)
        })
}

/// Reads `value` as every request body the API accepts and converts each into its domain value,
/// as the `Mutation` extractor (through `strict_json`) and the handlers do.
fn every_request_body(value: &Value) {
    let order_id = OrderId::generate();
    let Ok(object) = JsonObject::from_value(value.clone()) else {
        return;
    };
    if let Ok(body) = object.read::<PlaceOrderRequest>() {
        let _ = body.try_into_domain();
    }
    if let Ok(body) = object.read::<PaymentRequest>() {
        let _ = body.try_into_domain(order_id);
    }
    if let Ok(body) = object.read::<ShipRequest>() {
        let _ = body.try_into_domain();
    }
    if let Ok(body) = object.read::<CancelRequest>() {
        let _ = body.try_into_domain();
    }
    let _ = fingerprint::of_request("POST", "/v1/orders", value);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn an_envelope_of_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        let _ = inbound::parse(&bytes);
        let bounded = inbound::parse_bounded(&bytes, 64);
        if bytes.len() > 64 {
            let is_too_large = matches!(bounded, Err(Poison::TooLarge { .. }));
            prop_assert!(is_too_large);
        }
    }

    #[test]
    fn an_envelope_of_a_known_type_with_arbitrary_data_never_panics(
        event_id in prop_oneof![".{0,300}", Just("e-1".to_owned())],
        event_type in prop_oneof![prop::sample::select(INBOUND_TYPES.to_vec()).prop_map(str::to_owned), ".{0,30}"],
        occurred_at in prop_oneof![Just(json!("2026-11-21T10:00:00Z")), any_json()],
        data in prop_oneof![
            object_with(&["order_id", "customer_id", "amount_minor", "currency", "transfer_id", "carrier", "tracking_number", "reason"]),
            any_json(),
        ],
    ) {
        let body = json!({"event_id": event_id, "type": event_type, "occurred_at": occurred_at, "data": data});
        if let Ok(parsed) = inbound::parse(body.to_string().as_bytes()) {
            prop_assert!(INBOUND_TYPES.contains(&parsed.event_type));
            prop_assert!(!parsed.event_id.as_str().is_empty());
        }
    }

    #[test]
    fn a_dead_letter_of_arbitrary_bytes_and_headers_parks_within_its_bounds(
        body in prop::collection::vec(any::<u8>(), 0..2048),
        routing_key in ".{0,80}",
        message_id in prop::option::of(".{0,80}"),
        reason in prop::option::of(".{0,2000}"),
        death_reason in prop::option::of(prop_oneof![Just("delivery_limit".to_owned()), ".{0,20}"]),
        extra in prop::collection::btree_map("[a-z\\-\u{0}]{1,12}", ".{0,40}", 0..4),
    ) {
        let mut headers = FieldTable::default();
        if let Some(reason) = &reason {
            headers.insert("x-error-reason".into(), AMQPValue::LongString(reason.as_str().into()));
        }
        if let Some(death_reason) = &death_reason {
            let mut death = FieldTable::default();
            death.insert("reason".into(), AMQPValue::LongString(death_reason.as_str().into()));
            headers.insert("x-death".into(), AMQPValue::FieldArray(vec![AMQPValue::FieldTable(death)].into()));
        }
        for (key, value) in &extra {
            headers.insert(key.as_str().into(), AMQPValue::LongString(value.as_str().into()));
        }
        let mut props = BasicProperties::default().with_headers(headers);
        if let Some(id) = &message_id {
            props = props.with_message_id(id.as_str().into());
        }
        let letter = dead_letter_of(&routing_key, &props, &body, 20);
        // What Postgres refuses in text and jsonb: more than the reason's bound, and NUL.
        prop_assert!(letter.reason.len() <= MAX_REASON_BYTES);
        for text in [&letter.reason, &letter.routing_key, &letter.properties.to_string(), &letter.headers.to_string()] {
            prop_assert!(!text.contains('\0') && !text.contains("\\u0000"), "{text:?}");
        }
        let _ = ReasonClass::of(&letter.reason);
        prop_assert_eq!(&letter.body, &body);
        let _ = properties::decode(&letter.properties);
    }

    #[test]
    fn an_idempotency_key_of_any_text_never_panics_and_accepted_keys_are_bounded(
        header in prop_oneof![".{0,300}", "\"(\\\\.|[^\"\\\\]){0,40}\"?.{0,3}", "[ -~]{0,300}"],
    ) {
        if let Ok(key) = IdempotencyKey::parse(&header) {
            let key = key.as_str();
            prop_assert!(!key.is_empty() && key.len() <= IdempotencyKey::MAX_LEN);
            prop_assert!(key.bytes().all(|b| (0x20..=0x7e).contains(&b)));
        }
    }

    #[test]
    fn a_request_body_of_arbitrary_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        if let Ok(object) = JsonObject::parse(&bytes) {
            every_request_body(&object.into_value());
        }
    }

    #[test]
    fn a_request_body_with_arbitrary_field_values_never_panics(
        value in prop_oneof![
            object_with(&["id", "customer_id", "amount_minor", "currency"]),
            object_with(&["transfer_id", "amount_minor", "currency"]),
            object_with(&["carrier", "tracking_number"]),
            object_with(&["reason"]),
            any_json(),
        ],
    ) {
        every_request_body(&value);
    }

    #[test]
    fn a_trace_context_of_any_text_never_panics_and_what_is_passed_on_is_valid_and_bounded(
        traceparent in prop_oneof![
            ".{0,80}",
            "[0-9a-f]{2}-[0-9a-fA-F]{30,33}-[0-9a-f]{15,17}-[0-9a-f]{2}(-.{0,8})?",
        ],
        tracestate in prop_oneof![
            ".{0,600}",
            // Valid entries (values without `,` and `=`), sometimes too many or too long.
            "([a-z][a-z0-9_*/-]{0,20}(@[a-z]{1,3})?=[!-+\\--<>-~]{1,150}, ?){1,36}",
        ],
    ) {
        if let Some(context) = TraceContext::from_headers(Some(&traceparent), Some(&tracestate)) {
            let ours = TraceContext::continue_or_start(Some(&context));
            let sent = ours.traceparent();
            prop_assert_eq!(sent.len(), 55);
            prop_assert_eq!(TraceContext::from_headers(Some(&sent), ours.tracestate()), Some(ours.clone()));
            if let Some(state) = ours.tracestate() {
                prop_assert!(!state.is_empty() && state.len() <= TRACESTATE_MAX_BYTES);
            }
        }
    }

    #[test]
    fn a_client_configuration_of_any_text_never_panics(
        text in prop_oneof![".{0,400}", "([a-z]{1,5}:[0-9a-f]{0,66}:[a-z:,+]{0,30}[;\n#]?){0,4}"],
        token in ".{0,80}",
    ) {
        if let Ok(clients) = ClientRegistry::parse(&text, "proptest") {
            let _ = clients.authenticate(&token);
        }
    }
}
