//! The document says what the code does: the names of the configuration, every type the
//! consumer and the relay handle, the queues' real arguments, and references that resolve.

use std::time::Duration;

use serde_json::Value;
use strum::IntoEnumIterator;

use super::*;
use crate::amqp::inbound::INBOUND_TYPES;
use crate::config::EventStreamConfig;
use crate::domain::EventType;

fn json_of(config: &AmqpConfig) -> Value {
    serde_json::to_value(document_of(config)).unwrap()
}

fn default_document() -> Value {
    serde_json::from_str(&to_pretty_json()).unwrap()
}

/// A configuration whose every name differs from the defaults.
fn renamed() -> AmqpConfig {
    AmqpConfig {
        inbound_exchange: "shop.facts".into(),
        inbox_queue: "orders.in".into(),
        dead_letter_exchange: "orders.dead-x".into(),
        dead_letter_queue: "orders.dead-q".into(),
        outbound_exchange: "orders.out".into(),
        max_attempts: 3,
        retry_base_ms: 250,
        delivery_limit: 7,
        event_stream: EventStreamConfig {
            queue: "orders.replay".into(),
            max_age: "2D".into(),
            ..EventStreamConfig::default()
        },
        ..AmqpConfig::default()
    }
}

#[test]
fn every_inbound_type_is_received_from_the_inbound_exchange_in_its_envelope() {
    let doc = default_document();
    for &name in INBOUND_TYPES {
        let operation = &doc["operations"][format!("receive.{name}")];
        assert_eq!(operation["action"], "receive", "{name}");
        let channel = &doc["channels"][format!("inbound.{name}")];
        assert_eq!(channel["address"], name);
        let binding = &channel["bindings"]["amqp"];
        assert_eq!(binding["is"], "routingKey");
        assert_eq!(binding["exchange"]["name"], "commerce.events");
        assert_eq!(binding["exchange"]["type"], "topic");
        assert_eq!(binding["exchange"]["durable"], true);
        let message = &doc["components"]["messages"][name];
        let payload = &message["payload"];
        assert_eq!(payload["properties"]["type"]["const"], name);
        assert_eq!(payload["additionalProperties"], false);
        let data = payload["properties"]["data"]["$ref"].as_str().unwrap();
        let data = data.trim_start_matches("#/components/schemas/");
        assert_eq!(
            doc["components"]["schemas"][data]["additionalProperties"],
            false
        );
        assert!(
            message["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{name}"
        );
        assert_eq!(
            message["headers"]["$ref"],
            "#/components/schemas/InboundHeaders"
        );
    }
    let inbox = &doc["channels"]["inbox"];
    assert_eq!(
        inbox["messages"].as_object().unwrap().len(),
        INBOUND_TYPES.len()
    );
}

#[test]
fn every_outbound_type_is_sent_persistent_to_the_outbound_exchange_with_the_order() {
    let doc = default_document();
    for kind in EventType::iter() {
        let name: &str = kind.into();
        let operation = &doc["operations"][format!("send.{name}")];
        assert_eq!(operation["action"], "send", "{name}");
        assert_eq!(operation["bindings"]["amqp"]["deliveryMode"], 2);
        let channel = &doc["channels"][format!("outbound.{name}")];
        assert_eq!(channel["address"], name);
        assert_eq!(
            channel["bindings"]["amqp"]["exchange"]["name"],
            "order-service.events"
        );
        let message = &doc["components"]["messages"][name];
        assert_eq!(message["bindings"]["amqp"]["messageType"], name);
        assert_eq!(message["payload"]["properties"]["type"]["const"], name);
        assert_eq!(
            message["payload"]["properties"]["data"]["$ref"],
            "#/components/schemas/OrderView"
        );
        assert_eq!(
            message["headers"]["$ref"],
            "#/components/schemas/OutboundHeaders"
        );
    }
    let order = &doc["components"]["schemas"]["OrderView"]["properties"];
    assert!(order["refund_due_minor"].is_object() && order["status"].is_object());
}

#[test]
fn outbound_events_always_carry_a_traceparent_and_inbound_ones_may() {
    let doc = default_document();
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["OutboundHeaders"]["required"],
        serde_json::json!([TRACEPARENT_HEADER])
    );
    for headers in ["InboundHeaders", "OutboundHeaders", "DeadLetterHeaders"] {
        for header in [TRACEPARENT_HEADER, TRACESTATE_HEADER] {
            assert!(
                schemas[headers]["properties"][header].is_object(),
                "{headers}.{header}"
            );
        }
    }
    assert!(schemas["InboundHeaders"]["required"].is_null());
    for header in ["x-error-reason", "x-attempt", "x-original-routing-key"] {
        assert!(
            schemas["DeadLetterHeaders"]["properties"][header].is_object(),
            "{header}"
        );
        assert!(
            schemas["InboundHeaders"]["properties"][header].is_object(),
            "{header}"
        );
    }
}

#[test]
fn the_names_and_queue_arguments_are_those_of_the_configuration() {
    let config = renamed();
    let doc = json_of(&config);
    let text = doc.to_string();
    for default in [
        "commerce.events",
        "order-service.inbox",
        "order-service.dlx",
        "order-service.dead-letter",
        "order-service.events",
    ] {
        assert!(!text.contains(default), "{default} is not configured");
    }
    let topology = Topology::from_config(&config);
    let inbox = &doc["channels"]["inbox"]["bindings"]["amqp"];
    assert_eq!(inbox["queue"]["name"], "orders.in");
    assert_eq!(
        inbox["x-arguments"],
        bindings::arguments(&topology.inbox_arguments())
    );
    assert_eq!(inbox["x-arguments"]["x-queue-type"], "quorum");
    assert_eq!(inbox["x-arguments"]["x-delivery-limit"], 7);
    assert_eq!(
        inbox["x-arguments"]["x-dead-letter-exchange"],
        "orders.dead-x"
    );
    let dead = &doc["channels"]["dead-letter-exchange"]["bindings"]["amqp"]["exchange"];
    assert_eq!(
        (&dead["name"], &dead["type"]),
        (&"orders.dead-x".into(), &"fanout".into())
    );
    assert_eq!(
        doc["channels"]["dead-letter-queue"]["address"],
        "orders.dead-q"
    );
    let stream = &doc["channels"]["event-stream"];
    assert_eq!(stream["address"], "orders.replay");
    let arguments = &stream["bindings"]["amqp"]["x-arguments"];
    assert_eq!(arguments["x-queue-type"], "stream");
    assert_eq!(arguments["x-max-age"], "2D");
}

#[test]
fn the_event_stream_carries_every_outbound_type_and_is_absent_when_off() {
    let doc = default_document();
    let replay = &doc["operations"]["replay"];
    assert_eq!(replay["action"], "receive");
    for name in EventType::iter().map(<&'static str>::from) {
        assert!(
            doc["channels"]["event-stream"]["messages"][name].is_object(),
            "{name}"
        );
    }
    let mut off = AmqpConfig::default();
    off.event_stream.enabled = false;
    let doc = json_of(&off);
    assert!(doc["channels"].get("event-stream").is_none());
    assert!(doc["operations"].get("replay").is_none());
}

#[test]
fn the_retry_channel_names_each_delay_queue_the_consumer_publishes_to() {
    let config = renamed();
    let topology = Topology::from_config(&config);
    let doc = json_of(&config);
    let retry = &doc["channels"]["retry"];
    let address = retry["address"].as_str().unwrap();
    assert_eq!(address, "orders.in.delay.{delay}ms");
    let delays: Vec<&str> = retry["parameters"]["delay"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert_eq!(delays, ["250", "500"]);
    let queues = retry["bindings"]["amqp"]["x-queues"].as_array().unwrap();
    for (delay, queue) in delays.iter().zip(queues) {
        let delay = Duration::from_millis(delay.parse().unwrap());
        let name = topology.retry_queue(delay);
        assert_eq!(
            address.replace("{delay}", &delay.as_millis().to_string()),
            name
        );
        assert_eq!(queue["name"], name.as_str());
        assert_eq!(
            queue["arguments"],
            bindings::arguments(&topology.retry_queue_arguments(delay))
        );
    }
    let messages = doc["operations"]["retry"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), INBOUND_TYPES.len());
}

#[test]
fn without_retries_there_is_no_retry_channel() {
    let config = AmqpConfig {
        max_attempts: 1,
        ..AmqpConfig::default()
    };
    let doc = json_of(&config);
    assert!(doc["channels"]["retry"].is_null() && doc["operations"]["retry"].is_null());
}

#[test]
fn every_setting_is_named_by_its_environment_variable() {
    assert_eq!(setting("inbox_queue"), "`AMQP_INBOX_QUEUE`");
    // Every setting the descriptions name (a field without `env` would show its id).
    for id in [
        "amqp_url",
        "inbound_exchange",
        "inbox_queue",
        "dead_letter_exchange",
        "dead_letter_queue",
        "outbound_exchange",
        "prefetch",
        "amqp_batch_size",
        "max_attempts",
        "delivery_limit",
        "retry_base_ms",
        "retry_max_ms",
    ] {
        assert!(setting(id).starts_with("`AMQP_"), "{id}: {}", setting(id));
    }
    assert_eq!(setting("no_such_setting"), "`no_such_setting`");
}

#[test]
fn every_reference_resolves_within_the_document() {
    let doc = default_document();
    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(refs.len() > 30, "{refs:?}");
    for reference in refs {
        let pointer = reference.strip_prefix('#').expect("a local reference");
        // `~1` would escape a `/` in a key; the document's keys hold none.
        assert!(
            doc.pointer(pointer).is_some(),
            "{reference} does not resolve"
        );
    }
}

fn collect_refs(value: &Value, refs: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get("$ref") {
                refs.push(reference.clone());
            }
            map.values().for_each(|v| collect_refs(v, refs));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, refs)),
        _ => {}
    }
}

#[test]
fn operations_are_listed_in_the_order_a_message_travels() {
    let text = to_pretty_json();
    let operations = &text[text.find("\"operations\"").unwrap()..];
    let at = |id: &str| {
        let key = format!("\n    \"{id}\": {{");
        operations.find(&key).unwrap_or_else(|| panic!("{id}"))
    };
    assert!(at("receive.order.placed") < at("receive.order.cancellation_requested"));
    assert!(at("receive.order.cancellation_requested") < at("retry"));
    assert!(at("retry") < at("deadLetter"));
    assert!(at("deadLetter") < at("parkDeadLetter"));
    assert!(at("parkDeadLetter") < at("send.order.created"));
    assert!(at("send.order.created") < at("send.order.refunded"));
}
