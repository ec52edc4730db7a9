//! `AMQP_URL` listing several nodes (docs/operations/scaling.md): the service connects to a live
//! node however many of those it tries first are down, trying each at most once before it, and
//! its log names the node each component connected to, never with a password.

use serde_json::Value;
use uuid::Uuid;

use order_service_testkit::AMQP_URL;

use crate::helpers::{Harness, TempFile};

/// Ports nothing listens on: bound, then released (all at once, so they differ).
fn dead_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<_> = (0..count)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("address").port())
        .collect()
}

/// In log order, the nodes one component failed to connect to before it first connected, and
/// the node it connected to. `warn_name` prefixes its reconnect warnings, `connection` names its
/// connections.
fn attempts(log: &[Value], warn_name: &str, connection: &str) -> (Vec<String>, Option<String>) {
    let mut failed = vec![];
    for line in log {
        let message = line["message"].as_str().unwrap_or_default();
        if message == "connected to the broker" && line["connection"] == connection {
            return (failed, line["node"].as_str().map(str::to_owned));
        }
        if message == format!("{warn_name} disconnected from the broker")
            && let Some(node) = line["error"]
                .as_str()
                .and_then(|e| e.strip_prefix("cannot connect to "))
                .and_then(|e| e.split(": ").next())
        {
            failed.push(node.to_owned());
        }
    }
    (failed, None)
}

#[tokio::test]
async fn with_dead_nodes_listed_first_the_service_connects_to_a_live_one_and_becomes_ready() {
    let h = Harness::start().await;
    let dead: Vec<String> = dead_ports(4)
        .into_iter()
        .map(|port| format!("amqp://guest:guest@127.0.0.1:{port}/%2f"))
        .collect();
    let list = format!("{},{AMQP_URL}", dead.join(","));
    let log = TempFile(std::env::temp_dir().join(format!("{}.log", h.topology.inbox)));
    let service = h.start_service(
        &[
            ("AMQP_URL", &list),
            ("RUST_LOG", "info"),
            ("LOG_FORMAT", "json"),
        ],
        Some(&log.0),
    );
    service.wait_ready().await;
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    drop(service);

    let text = std::fs::read_to_string(&log.0).expect("the service's log");
    assert!(
        !text.contains("guest:guest"),
        "a password in the log:\n{text}"
    );
    let log: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let shown = |url: &str| url.replace("guest:guest@", "guest:***@");
    let dead: Vec<String> = dead.iter().map(|url| shown(url)).collect();
    for (warn_name, connection) in [
        ("amqp consumer", "order-service consumer"),
        ("outbox relay", "order-service outbox relay"),
    ] {
        let (failed, connected) = attempts(&log, warn_name, connection);
        assert_eq!(
            connected.as_deref(),
            Some(shown(AMQP_URL).as_str()),
            "{connection}:\n{text}"
        );
        let mut distinct = failed.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            failed.len(),
            "{connection} tried a dead node twice before the live one: {failed:?}"
        );
        assert!(
            failed.iter().all(|node| dead.contains(node)),
            "{failed:?} {dead:?}"
        );
    }
}
