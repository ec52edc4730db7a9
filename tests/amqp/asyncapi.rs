//! The AsyncAPI document against the broker: every exchange, queue and binding it describes is
//! what the service declares, as RabbitMQ itself lists it.

use serde_json::Value;

use order_service::amqp::asyncapi;

use order_service_testkit::AMQP_URL;

use crate::helpers::rabbitmqctl::{arguments, listed, named};
use crate::helpers::{Harness, relay_config};

#[tokio::test]
async fn the_asyncapi_document_describes_the_topology_the_service_declares() {
    let mut h = Harness::start().await;
    // The relay declares the event stream before it is ready.
    let relay = h.spawn_relay(AMQP_URL, relay_config());
    h.wait_for_readiness(&relay, true).await;
    let doc = serde_json::to_value(asyncapi::document_of(&h.config)).unwrap();
    let exchanges = listed(
        "list_exchanges",
        &["name", "type", "durable", "auto_delete"],
    );
    let queues = listed(
        "list_queues",
        &["name", "durable", "auto_delete", "exclusive", "arguments"],
    );
    let bindings = listed(
        "list_bindings",
        &["source_name", "destination_name", "routing_key"],
    );
    let bound = |source: &Value, destination: &str, key: Option<&str>| {
        bindings.iter().any(|b| {
            b["source_name"] == *source
                && b["destination_name"] == destination
                && key.is_none_or(|key| b["routing_key"] == key)
        })
    };

    let mut checked = 0;
    for (id, channel) in doc["channels"].as_object().unwrap() {
        let binding = &channel["bindings"]["amqp"];
        if binding["is"] == "routingKey" {
            let described = &binding["exchange"];
            let declared = named(&exchanges, described["name"].as_str().unwrap());
            assert_eq!(declared["type"], described["type"], "{id}");
            assert_eq!(declared["durable"], described["durable"], "{id}");
            assert_eq!(declared["auto_delete"], described["autoDelete"], "{id}");
        } else if let Some(retry) = binding["x-queues"].as_array() {
            for queue in retry {
                let declared = named(&queues, queue["name"].as_str().unwrap());
                assert_eq!(arguments(declared), queue["arguments"], "{id}");
            }
        } else {
            let described = &binding["queue"];
            let declared = named(&queues, described["name"].as_str().unwrap());
            for (listed, documented) in [
                ("durable", "durable"),
                ("auto_delete", "autoDelete"),
                ("exclusive", "exclusive"),
            ] {
                // rabbitmqctl lists a queue that is not exclusive as `"exclusive": ""`.
                let listed = declared[listed] == true;
                assert_eq!(
                    Value::from(listed),
                    described[documented],
                    "{id}.{documented}"
                );
            }
            assert_eq!(arguments(declared), binding["x-arguments"], "{id}");
        }
        checked += 1;
    }
    assert_eq!(checked, doc["channels"].as_object().unwrap().len());

    // What routes where: each inbound type to the inbox, dead letters to their queue.
    let inbound = &doc["channels"]["inbound.order.placed"]["bindings"]["amqp"]["exchange"]["name"];
    for (id, channel) in doc["channels"].as_object().unwrap() {
        if id.starts_with("inbound.") {
            let key = channel["address"].as_str();
            assert!(
                bound(inbound, &h.topology.inbox, key),
                "{id} is not bound to the inbox"
            );
        }
    }
    let dead = &doc["channels"]["dead-letter-exchange"]["address"];
    assert!(bound(dead, &h.topology.dead_letter_queue, None));
}
