//! What the broker itself lists (`rabbitmqctl`, as JSON): exchanges, queues with their
//! arguments, bindings. AMQP does not say what arguments a queue was declared with.

use std::process::Command;

use serde_json::{Map, Value};

/// `rabbitmqctl <what> --formatter json <columns…>`: one object per row.
pub fn listed(what: &str, columns: &[&str]) -> Vec<Value> {
    let output = Command::new("rabbitmqctl")
        .args([what, "--quiet", "--formatter", "json"])
        .args(columns)
        .output()
        .expect("run rabbitmqctl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("rabbitmqctl's JSON")
}

/// The row of `rows` whose `name` is `name`.
pub fn named<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|row| row["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not declared"))
}

/// A queue's arguments from rabbitmqctl's `[name, type, value]` triples.
pub fn arguments(queue: &Value) -> Value {
    let triples = queue["arguments"].as_array().expect("a list of arguments");
    triples
        .iter()
        .map(|triple| {
            let triple = triple.as_array().expect("[name, type, value]");
            let name = triple[0].as_str().expect("a name").to_owned();
            (name, triple.last().cloned().unwrap_or_default())
        })
        .collect::<Map<String, Value>>()
        .into()
}
