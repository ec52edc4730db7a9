//! The crash-loop guard: a message the broker delivered `AMQP_DELIVERY_LIMIT` times without it
//! being settled is dead-lettered by the broker (`x-death` reason `delivery_limit`) and parked with
//! the broker's reason, while other messages keep flowing; and an inbox declared by an earlier
//! version without the limit is still consumed (docs/operations/upgrading.md "Upgrading: the inbox
//! delivery limit").

use std::net::SocketAddr;
use std::process::Command;

use lapin::options::QueueDeclareOptions;
use lapin::types::{AMQPValue, FieldTable};
use uuid::Uuid;

use crate::helpers::{Harness, WAIT, test_config};
use order_service::amqp::topology::Inbox;
use order_service::amqp::{Topology, connect};
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{AMQP_URL, eventually};

/// Takes every message now in the dead-letter queue: its body and the `reason` of its first
/// `x-death` entry, which the broker adds when it dead-letters a message itself.
async fn take_broker_dead_letters(h: &Harness) -> Vec<(Vec<u8>, Option<String>)> {
    h.take_dead_letter_deliveries()
        .await
        .into_iter()
        .map(|delivery| {
            let reason = delivery
                .properties
                .headers()
                .as_ref()
                .and_then(|h| match h.inner().get("x-death") {
                    Some(AMQPValue::FieldArray(deaths)) => deaths.as_slice().first().cloned(),
                    _ => None,
                })
                .and_then(|death| match death {
                    AMQPValue::FieldTable(death) => match death.inner().get("reason") {
                        Some(AMQPValue::LongString(reason)) => Some(reason.to_string()),
                        _ => None,
                    },
                    _ => None,
                });
            (delivery.data, reason)
        })
        .collect()
}

/// Locks `order`'s row in a transaction the caller holds (so its payment can never finish) and
/// publishes that payment as `event_id`; returns the transaction and the published body.
async fn lock_order_and_pay(
    h: &Harness,
    order: Uuid,
    event_id: &str,
) -> (sqlx::Transaction<'static, sqlx::Postgres>, Vec<u8>) {
    let lock = h.lock_order(order).await;
    let payment = h
        .publish(
            event_id,
            "payment.succeeded",
            serde_json::json!({
                "order_id": order, "transfer_id": "t-1", "amount_minor": 1000, "currency": "EUR"
            }),
        )
        .await;
    (lock, payment)
}

#[tokio::test]
async fn a_message_that_never_finishes_is_dead_lettered_by_the_broker_at_the_delivery_limit() {
    let mut config = test_config();
    config.delivery_limit = 2;
    let mut h = Harness::start_with(config).await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
    let url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", proxy.port);
    let ready = h.spawn_consumer_on(h.app.clone(), &url);
    let stuck = Uuid::new_v4();
    h.place("placed", stuck, 1000).await;
    h.wait_for_status(stuck, "PENDING_PAYMENT").await;

    // The order row stays locked: its payment can never finish, as if it hung the process.
    let (lock, payment) = lock_order_and_pay(&h, stuck, "stuck-payment").await;

    // Each cut of the consumer's connection returns the unsettled message to the inbox: one more
    // delivery without a settlement, as a crash would.
    let mut letters = vec![];
    for cut in 0.. {
        letters = take_broker_dead_letters(&h).await;
        if !letters.is_empty() {
            break;
        }
        assert!(cut < 12, "not dead-lettered after {cut} cuts");
        eventually("the consumer to hold the payment", WAIT, || async {
            (ready.is_ready() && h.ready_count(&h.topology.inbox).await == 0).then_some(())
        })
        .await;
        let other = Uuid::new_v4();
        h.place(&format!("other-{cut}"), other, 500).await;
        h.wait_for_status(other, "PENDING_PAYMENT").await;
        // Only the payment comes back at the cut: the other message was acknowledged.
        eventually("the other message to be acknowledged", WAIT, || async {
            (h.unacked_count(&h.topology.inbox).await == Some(1)).then_some(())
        })
        .await;
        proxy.sever();
        eventually("readiness to drop", WAIT, || async {
            (!ready.is_ready()).then_some(())
        })
        .await;
        proxy.restore();
    }

    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].0, payment);
    assert_eq!(letters[0].1.as_deref(), Some("delivery_limit"));
    lock.rollback().await.expect("unlock");
    let later = Uuid::new_v4();
    h.place("later", later, 500).await;
    h.wait_for_status(later, "PENDING_PAYMENT").await;
    assert_eq!(h.db.count("transfers").await, 0);
    assert_eq!(
        h.order_state(stuck).await,
        Some(("PENDING_PAYMENT".into(), 1, 0))
    );
}

/// A policy of the test's own, cleared on drop.
struct Policy(String);

impl Drop for Policy {
    fn drop(&mut self) {
        let _ = Command::new("rabbitmqctl")
            .args(["clear_policy", &self.0])
            .output();
    }
}

/// Declares `queue` as the previous version did: a durable quorum queue with `arguments` (text
/// values) and nothing else.
async fn declare_quorum(connection: &lapin::Connection, queue: &str, arguments: &[(&str, &str)]) {
    let mut legacy = FieldTable::default();
    legacy.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    for (name, value) in arguments {
        legacy.insert((*name).into(), AMQPValue::LongString((*value).into()));
    }
    connection
        .create_channel()
        .await
        .expect("channel")
        .queue_declare(
            queue.into(),
            QueueDeclareOptions {
                durable: true,
                ..QueueDeclareOptions::default()
            },
            legacy,
        )
        .await
        .expect("declare the previous version's queue");
}

/// Runs a `rabbitmqctl set_policy` command the service logs, naming the policy `name` (cleared
/// when the returned guard drops).
fn apply_policy(command: &str, name: &str) -> Policy {
    let policy = Policy(name.to_owned());
    let output = Command::new("sh")
        .args(["-c", command])
        .output()
        .expect("run the policy command");
    assert!(
        output.status.success(),
        "{command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    policy
}

/// The policy that applies to `queue`, as `rabbitmqctl` lists it.
fn policy_of(queue: &str) -> Option<String> {
    let queues = Command::new("rabbitmqctl")
        .args(["list_queues", "--quiet", "name", "policy"])
        .output()
        .expect("list queues");
    let listing = String::from_utf8_lossy(&queues.stdout);
    let line = listing
        .lines()
        .find(|l| l.starts_with(&format!("{queue}\t")))
        .unwrap_or_else(|| panic!("{queue} is listed: {listing}"));
    line.split('\t')
        .nth(1)
        .filter(|policy| !policy.is_empty())
        .map(str::to_owned)
}

#[tokio::test]
async fn an_inbox_declared_without_the_delivery_limit_is_consumed_as_it_is_and_a_policy_adds_it() {
    let config = test_config();
    let topology = Topology::from_config(&config);
    // As the previous version declared it: quorum, dead-lettering, no delivery limit.
    let connection = connect(AMQP_URL, "order-service tests, previous version")
        .await
        .expect("connect");
    declare_quorum(
        &connection,
        &topology.inbox,
        &[("x-dead-letter-exchange", &topology.dead_letter_exchange)],
    )
    .await;

    // Declaring it with the limit is refused; the consumer's declaration uses it as it is.
    let refused = topology
        .declare(&connection.create_channel().await.expect("channel"))
        .await
        .expect_err("the broker refuses other arguments");
    assert!(
        refused.to_string().contains("PRECONDITION_FAILED"),
        "{refused}"
    );
    assert_eq!(
        topology
            .declare_inbox_side(&connection)
            .await
            .expect("declare"),
        Inbox::Legacy
    );
    let _ = connection.close(200, "bye".into()).await;

    let mut h = Harness::start_with(config).await;
    let ready = h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    assert!(ready.is_ready());

    // The command the start-up error names gives the inbox the limit, without moving a message.
    let name = format!("{}.delivery-limit", h.topology.inbox);
    let _policy = apply_policy(&h.topology.policy_command(), &name);
    assert_eq!(policy_of(&h.topology.inbox).as_deref(), Some(name.as_str()));
}

#[tokio::test]
async fn a_dead_letter_queue_declared_without_a_limit_is_parked_from_as_it_is_and_a_policy_adds_it()
{
    let config = test_config();
    let topology = Topology::from_config(&config);
    // As the previous version declared it: quorum, nothing behind it.
    let connection = connect(AMQP_URL, "order-service tests, previous version")
        .await
        .expect("connect");
    declare_quorum(&connection, &topology.dead_letter_queue, &[]).await;
    let _ = connection.close(200, "bye".into()).await;

    // Every component still starts on it, and a poison message is parked from it.
    let mut h = Harness::start_with(config).await;
    h.spawn_consumer();
    h.spawn_parker();
    h.publish_raw("payment.succeeded", b"{not json", Default::default())
        .await;
    let parked = h.wait_for_parked(1).await;
    assert_eq!(parked[0].reason_class, "poison");

    // The command the start-up error names gives it the limit and the last resort.
    let name = format!("{}.last-resort", h.topology.dead_letter_queue);
    let _policy = apply_policy(&h.topology.dead_letter_policy_command(), &name);
    assert_eq!(
        policy_of(&h.topology.dead_letter_queue).as_deref(),
        Some(name.as_str())
    );
}

#[tokio::test]
async fn a_message_that_takes_the_process_down_every_time_is_dead_lettered_parked_and_the_service_goes_on()
 {
    let mut config = test_config();
    config.delivery_limit = 2;
    let h = Harness::start_with(config).await;
    let stuck = Uuid::new_v4();
    h.place("placed", stuck, 1000).await;
    let service = h.start_service(&[], None);
    h.wait_for_status(stuck, "PENDING_PAYMENT").await;
    service.kill();

    // The order row stays locked: its payment can never finish, and each process that takes it
    // is killed while holding it, as if the message crashed it.
    let (lock, payment) = lock_order_and_pay(&h, stuck, "deadly-payment").await;
    let dead_letters = &h.topology.dead_letter_queue;
    for kill in 0.. {
        assert!(kill < 12, "not dead-lettered after {kill} kills");
        let service = h.start_service(&[], None);
        eventually("a process to take the payment", WAIT, || async {
            (h.ready_count(&h.topology.inbox).await == 0).then_some(())
        })
        .await;
        service.kill();
        // Returned to the inbox, or (past the limit) dead-lettered by the broker; nothing runs to
        // park it yet.
        let dead = eventually("the payment to come back", WAIT, || async {
            if h.ready_count(dead_letters).await == 1 {
                return Some(true);
            }
            (h.ready_count(&h.topology.inbox).await == 1).then_some(false)
        })
        .await;
        if dead {
            break;
        }
    }

    // The next process parks it, with the broker's reason, and counts it.
    lock.rollback().await.expect("unlock");
    let service = h.start_service(&[], None);
    let parked = h.wait_for_parked(1).await;
    assert_eq!(parked[0].body, payment);
    assert_eq!(parked[0].reason_class, "delivery_limit");
    assert_eq!(
        parked[0].reason,
        format!(
            "delivery_limit: delivered more than 2 times without being settled \
             (broker dead letter from {})",
            h.topology.inbox
        )
    );
    assert_eq!(parked[0].routing_key, "payment.succeeded");
    assert_eq!(parked[0].event_id.as_deref(), Some("deadly-payment"));
    assert!(
        parked[0]
            .headers
            .as_object()
            .unwrap()
            .keys()
            .all(|k| !k.starts_with("x-")),
        "{}",
        parked[0].headers
    );
    eventually("the gauge to count it", WAIT, || async {
        let (_, metrics) = order_service_testkit::http::get(service.http_port, "/metrics")
            .await
            .ok()?;
        metrics
            .contains("dead_letters_parked{class=\"delivery_limit\"} 1")
            .then_some(())
    })
    .await;

    let later = Uuid::new_v4();
    h.place("later", later, 500).await;
    h.wait_for_status(later, "PENDING_PAYMENT").await;
    assert_eq!(h.db.count("transfers").await, 0);
}
