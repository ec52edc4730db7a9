//! The AMQP 0-9-1 bindings of the AsyncAPI document (binding version 0.3.0): how a channel is
//! an exchange with a routing key or a queue, and each queue's declared arguments as JSON.

use lapin::types::{AMQPValue, FieldTable};
use serde_json::{Map, Value, json};

/// The version of the AMQP bindings used throughout.
pub(super) const VERSION: &str = "0.3.0";

/// A channel that is a routing key on the durable exchange `name` of type `kind`.
pub(super) fn exchange(name: &str, kind: &str, vhost: &str) -> Value {
    json!({
        "is": "routingKey",
        "exchange": {
            "name": name, "type": kind, "durable": true, "autoDelete": false, "vhost": vhost
        },
    })
}

/// A channel that is the durable queue `name`, with `extensions` (its arguments) beside it.
pub(super) fn queue(name: &str, vhost: &str, extensions: Value) -> Value {
    let mut binding = json!({
        "is": "queue",
        "queue": {
            "name": name, "durable": true, "exclusive": false, "autoDelete": false, "vhost": vhost
        },
    });
    if let (Some(binding), Value::Object(extensions)) = (binding.as_object_mut(), extensions) {
        binding.extend(extensions);
    }
    binding
}

/// A queue's arguments, as declared, in JSON.
pub(super) fn arguments(table: &FieldTable) -> Value {
    table
        .inner()
        .iter()
        .map(|(key, value)| (key.as_str().to_owned(), amqp_value(value)))
        .collect::<Map<String, Value>>()
        .into()
}

fn amqp_value(value: &AMQPValue) -> Value {
    match value {
        AMQPValue::LongString(s) => json!(String::from_utf8_lossy(s.as_bytes())),
        AMQPValue::ShortString(s) => json!(s.as_str()),
        AMQPValue::LongLongInt(n) => json!(n),
        AMQPValue::LongInt(n) => json!(n),
        AMQPValue::LongUInt(n) => json!(n),
        AMQPValue::Boolean(b) => json!(b),
        other => json!(format!("{other:?}")),
    }
}
