//! The AsyncAPI 3.0 document of the messaging contract (docs/messaging.md "The messaging contract:
//! AsyncAPI"): the exchanges and queues of [`Topology`] and the operations the service performs
//! on them ([`routes`]), and the messages with their schemas ([`messages`]). Generated from what
//! the code uses, so it cannot drift: names and queue arguments from the topology of a
//! configuration (the defaults for the committed `openapi/asyncapi.json`), the settings' names
//! from their clap definitions, the event types from the enums the consumer and the relay
//! dispatch on, and the schemas from the envelope and `data` types themselves.

mod bindings;
mod messages;
mod routes;

use clap::Args;
use lapin::uri::AMQPUri;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use self::routes::Routes;
use super::Topology;
use crate::config::{AmqpConfig, DEFAULT_AMQP_URL};

pub use self::messages::{TRACEPARENT_HEADER, TRACESTATE_HEADER};

/// The server's id in the document.
const SERVER: &str = "rabbitmq";

/// The document, serialized with its sections in a reader's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    asyncapi: &'static str,
    info: Value,
    default_content_type: &'static str,
    servers: Value,
    channels: Ordered,
    operations: Ordered,
    components: Components,
}

#[derive(Serialize)]
struct Components {
    messages: Ordered,
    schemas: Ordered,
}

/// A JSON object that keeps its keys in insertion order (serde_json's `Map` sorts them), so the
/// rendered page lists operations and messages as a reader follows them: in, retried, dead,
/// out.
#[derive(Default)]
struct Ordered(Vec<(String, Value)>);

impl Ordered {
    /// Appends `key` and returns its value, for the caller to complete.
    fn insert(&mut self, key: impl Into<String>, value: Value) -> &mut Value {
        let index = self.0.len();
        self.0.push((key.into(), value));
        &mut self.0[index].1
    }
}

impl Ordered {
    fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value)
    }
}

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, value)| (key, value)))
    }
}

/// The document of the default configuration, as `GET /asyncapi.json` serves it, `order-service
/// asyncapi` prints it and `openapi/asyncapi.json` must hold it.
pub fn to_pretty_json() -> String {
    serde_json::to_string_pretty(&document_of(&AmqpConfig::default()))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The document of `config`'s topology.
pub fn document_of(config: &AmqpConfig) -> Document {
    let uri: AMQPUri = DEFAULT_AMQP_URL.parse().unwrap_or_default();
    let topology = Topology::from_config(config);
    let routes = Routes::new(&topology, config, &uri.vhost).build();
    Document {
        asyncapi: "3.0.0",
        info: json!({
            "title": "order-service events",
            "version": env!("CARGO_PKG_VERSION"),
            "description": description(),
            "license": { "name": "MIT" },
        }),
        default_content_type: "application/json",
        servers: json!({
            SERVER: {
                "host": format!("{}:{}", uri.authority.host, uri.authority.port),
                "protocol": "amqp",
                "protocolVersion": "0.9.1",
                "pathname": uri.vhost,
                "description": format!(
                    "The broker of {}: one node, or the nodes of one cluster (by default the local \
                     node shown here).",
                    setting("amqp_url")
                ),
            }
        }),
        channels: routes.channels,
        operations: routes.operations,
        components: Components {
            messages: messages::messages(),
            schemas: messages::schemas(),
        },
    }
}

fn description() -> String {
    let names = [
        "inbound_exchange",
        "inbox_queue",
        "dead_letter_exchange",
        "dead_letter_queue",
        "outbound_exchange",
    ]
    .map(setting)
    .join(", ");
    format!(
        "The messages order-service consumes and publishes over RabbitMQ (AMQP 0-9-1). Each \
         exchange and queue name below is the default of a setting ({names}).\n\n\
         Inbound and outbound messages share one JSON envelope, `{{event_id, type, occurred_at, \
         data}}`, whose `type` is the routing key. Inbound, each type runs the same command as \
         its REST endpoint, and a duplicate changes nothing; what cannot be applied yet is \
         retried after a growing delay, what never can is dead-lettered with the reason in \
         `x-error-reason`. Outbound, every change of an order is published at least once, \
         persistent, with publisher confirms, `message_id` = `event_id` and `data` = the order \
         as the REST API shows it.\n\n\
         What a release may change: an outbound message may gain fields, never lose or change \
         one, so a subscriber ignores fields it does not know; an inbound message is read \
         strictly (an unknown field is refused and dead-lettered), so a publisher sends a new \
         field only once every instance runs a release that accepts it.\n\n\
         The REST API is documented at [/docs](/docs)."
    )
}

/// The environment variable of a setting (the id of its field in [`crate::config`]), as code.
fn setting(id: &str) -> String {
    let command = crate::config::Config::augment_args(clap::Command::new("order-service"));
    let env = command
        .get_arguments()
        .find(|argument| argument.get_id() == id)
        .and_then(|argument| argument.get_env())
        .map(|env| env.to_string_lossy().into_owned());
    format!("`{}`", env.unwrap_or_else(|| id.to_owned()))
}

#[cfg(test)]
mod tests;
