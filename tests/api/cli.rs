//! The command line, as an operator runs it: `--help`, a malformed `AMQP_URL`, and
//! `dead-letters …` against a database.

use std::process::Command;

use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, envelope};

#[test]
fn help_shows_no_password_of_the_configured_or_default_urls() {
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("--help")
        .env(
            "DATABASE_URL",
            "postgres://app:db-secret-1@db.internal:5432/orders",
        )
        .env(
            "AMQP_URL",
            "amqp://app:broker-secret-2@mq.internal:5672/%2f",
        )
        .output()
        .expect("run order-service --help");

    let help = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{help}");
    assert!(
        help.contains("--database-url") && help.contains("--amqp-url"),
        "{help}"
    );
    for secret in ["db-secret-1", "broker-secret-2", "guest:guest"] {
        assert!(!help.contains(secret), "{secret} in:\n{help}");
    }
    // The defaults stay documented, without their password.
    assert!(
        help.contains("amqp://guest:***@127.0.0.1:5672/%2f"),
        "{help}"
    );
}

/// Runs `order-service dead-letters …` against the test's database: its output, stdout and stderr.
fn dead_letters(app: &TestApp, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("dead-letters")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.db.url)
        .env("AMQP_INBOUND_EXCHANGE", "test.inbound")
        .output()
        .expect("run order-service dead-letters");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_dead_letters_command_lists_shows_replays_and_discards_for_people_and_scripts() {
    let app = TestApp::spawn().await;
    let body = envelope("ev-1", "payment.succeeded", json!({"order_id": "o-1"}));
    let early = app
        .park(
            "payment.succeeded",
            Some("ev-1"),
            &body,
            "premature: order o-1 does not exist yet",
        )
        .await
        .to_string();
    let poison = app
        .park(
            "order.placed",
            None,
            b"{\x1b[31m",
            "poison: \x1b[31mred\nline",
        )
        .await
        .to_string();

    // For people: a table, whatever the messages hold.
    let (ok, table, _) = dead_letters(&app, &["list"]);
    assert!(ok, "{table}");
    assert!(table.starts_with("ID "), "{table}");
    assert!(table.contains(&early) && table.contains(&poison), "{table}");
    assert!(
        table.contains("premature: order o-1 does not exist yet"),
        "{table}"
    );
    assert!(
        !table.contains('\u{1b}'),
        "no escape sequence reaches the terminal"
    );
    assert_eq!(table.lines().count(), 3, "{table}");

    // For scripts: the REST API's JSON, with the same filters.
    let (ok, json, _) = dead_letters(&app, &["list", "--type", "payment.succeeded", "--json"]);
    assert!(ok, "{json}");
    let list: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["id"], early.as_str());

    let (ok, shown, _) = dead_letters(&app, &["show", &early]);
    assert!(ok, "{shown}");
    for needle in [
        "premature: order o-1",
        "routing key",
        "payment.succeeded",
        "traceparent",
        "\"event_id\":\"ev-1\"",
    ] {
        assert!(shown.contains(needle), "{needle} in {shown}");
    }
    let (ok, shown, _) = dead_letters(&app, &["show", &early, "--json"]);
    assert!(ok, "{shown}");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        (&shown["status"], &shown["actions"]),
        (&json!("parked"), &json!([]))
    );

    // A replay: recorded as the command line's, queued for the configured inbound exchange.
    let (ok, out, err) = dead_letters(&app, &["replay", &early]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, format!("replayed {early}\n"));
    let key = err
        .split_whitespace()
        .find(|word| word.starts_with("cli-"))
        .unwrap_or_else(|| panic!("the generated key is said: {err}"));
    let (client, source): (String, String) =
        sqlx::query_as("SELECT client_id, cause_source FROM dead_letter_actions")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((client.as_str(), source.as_str()), ("cli", "cli"));
    let (exchange, sent): (String, Vec<u8>) =
        sqlx::query_as("SELECT exchange, body FROM outbox WHERE body IS NOT NULL")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((exchange.as_str(), sent), ("test.inbound", body));

    // Its retry under the same key answers the same; under a new key it is refused.
    let (ok, out, err) = dead_letters(&app, &["replay", &early, "--idempotency-key", key]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("nothing new was done"), "{out}");
    let (ok, _, err) = dead_letters(&app, &["replay", &early]);
    assert!(!ok);
    assert!(err.contains("replayed, not parked"), "{err}");
    assert_eq!(app.count("outbox").await, 1);

    // Bulk, by reason; and an action needs something to act on.
    let (ok, _, err) = dead_letters(&app, &["replay"]);
    assert!(!ok && err.contains("--reason"), "{err}");
    let (ok, out, _) = dead_letters(&app, &["replay", "--reason", "POISON", "--json"]);
    assert!(ok, "{out}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"replayed": 1, "skipped": 0})
    );

    let third = app
        .park("order.placed", None, b"third", "poison: third")
        .await
        .to_string();
    let (ok, out, err) = dead_letters(&app, &["discard", &third, "--note", "not ours"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, format!("discarded {third}\n"));
    let shown = app.get(&format!("/v1/dead-letters/{third}")).await;
    assert_eq!(shown.body["actions"][0]["by"], "cli");
    assert_eq!(shown.body["actions"][0]["note"], "not ours");
    // The command line's key is no API client's to see.
    assert!(shown.body["actions"][0]["idempotency_key"].is_null());
    let (ok, _, err) = dead_letters(&app, &["show", &Uuid::new_v4().to_string()]);
    assert!(!ok && err.contains("not found"), "{err}");
}

#[tokio::test]
async fn the_dead_letters_command_refuses_to_replay_one_the_inbox_does_not_bind() {
    let app = TestApp::spawn().await;
    let body = envelope("ev-1", "payment.succeeded", json!({"order_id": "o-1"}));
    let foreign = app
        .park("inventory.reserved", Some("ev-1"), &body, "premature: o-1")
        .await
        .to_string();

    let (ok, out, err) = dead_letters(&app, &["replay", &foreign]);

    assert!(!ok, "{out}");
    assert!(err.contains("cannot be replayed"), "{err}");
    assert_eq!(app.count("outbox").await, 0);
    let (ok, out, _) = dead_letters(&app, &["replay", "--all", "--json"]);
    assert!(ok, "{out}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"replayed": 0, "skipped": 1})
    );
    assert_eq!(app.count("outbox").await, 0);
}

#[test]
fn a_malformed_amqp_url_list_stops_the_service_at_start_naming_the_item_without_a_password() {
    let node = "amqp://app:broker-secret-3@mq-1.internal:5672/%2f";
    for (list, reason) in [
        (format!("{node},"), "item 2 of AMQP_URL is empty"),
        (
            format!("{node},https://app:broker-secret-3@mq-2.internal/%2f"),
            "item 2 of AMQP_URL (https://app:***@mq-2.internal/%2f) does not start with amqp:// or amqps://",
        ),
        (
            format!("{node},amqp://app:broker-secret-3@mq-2.internal:port/%2f"),
            "item 2 of AMQP_URL (amqp://app:***@mq-2.internal:port/%2f) is not a valid AMQP URL",
        ),
        (
            format!("{node},amqp://app:broker-secret-3@mq-2.internal:5672/orders"),
            "names vhost \"orders\" but item 1 names \"/\"",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
            .arg("serve")
            .env("AMQP_URL", &list)
            .env("HTTP_ADDR", "127.0.0.1:0")
            .output()
            .expect("run order-service serve");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{list}: started");
        assert!(stderr.contains(reason), "{list}: {stderr}");
        assert!(!stderr.contains("broker-secret-3"), "{stderr}");
    }
}
