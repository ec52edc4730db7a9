//! Retries and dead letters are new messages of the service's own: the original body and
//! identity with fresh, bounded properties. Whatever an inbound message carries (another user's
//! `user_id`, huge headers, an `expiration`) cannot break the consumer's publishing or erase the
//! evidence, and a publishing channel the broker closes ends the session, which reconnects.

use std::process::Command;

use lapin::options::{BasicPublishOptions, ExchangeDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Connection};
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{DeadLetter, Harness, WAIT, envelope};
use order_service::amqp::connect;
use order_service_testkit::eventually;

/// A broker user of the test's own with full rights on the default vhost, deleted on drop.
struct BrokerUser {
    name: String,
    password: String,
}

impl BrokerUser {
    fn create() -> Self {
        let name = format!("test-{}", Uuid::new_v4().simple());
        let password = Uuid::new_v4().simple().to_string();
        rabbitmqctl(&["add_user", &name, &password]);
        rabbitmqctl(&["set_permissions", "-p", "/", &name, ".*", ".*", ".*"]);
        Self { name, password }
    }

    async fn connect(&self) -> Connection {
        let url = format!("amqp://{}:{}@127.0.0.1:5672/%2f", self.name, self.password);
        connect(&url, "order-service tests, another user")
            .await
            .expect("connect as the test's user")
    }
}

impl Drop for BrokerUser {
    fn drop(&mut self) {
        let _ = Command::new("rabbitmqctl")
            .args(["delete_user", &self.name])
            .output();
    }
}

fn rabbitmqctl(args: &[&str]) {
    let output = Command::new("rabbitmqctl")
        .args(args)
        .output()
        .expect("run rabbitmqctl");
    assert!(
        output.status.success(),
        "rabbitmqctl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Publishes `body` to the test's inbound exchange as `user`, stamped with its `user_id` (the
/// broker accepts that from the user itself; the service may not repeat it).
async fn publish_as(h: &Harness, user: &BrokerUser, routing_key: &str, body: &[u8]) {
    let connection = user.connect().await;
    let channel = connection.create_channel().await.expect("channel");
    channel
        .confirm_select(Default::default())
        .await
        .expect("confirms");
    let confirm = channel
        .basic_publish(
            h.topology.inbound_exchange.as_str().into(),
            routing_key.into(),
            BasicPublishOptions::default(),
            body,
            BasicProperties::default()
                .with_user_id(user.name.as_str().into())
                .with_message_id(Uuid::new_v4().to_string().into())
                .with_delivery_mode(2),
        )
        .await
        .expect("publish")
        .await
        .expect("confirm");
    assert!(confirm.is_ack());
    let _ = connection.close(200, "bye".into()).await;
}

fn header<'a>(letter: &'a DeadLetter, key: &str) -> Option<&'a AMQPValue> {
    letter.headers.inner().get(key)
}

#[tokio::test]
async fn messages_stamped_with_another_users_id_are_retried_and_dead_lettered_and_later_ones_flow()
{
    let user = BrokerUser::create();
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let early = Uuid::new_v4();
    let later = Uuid::new_v4();

    let payment = envelope(
        "early-payment",
        "payment.succeeded",
        json!({"order_id": early, "transfer_id": "t-1", "amount_minor": 1000, "currency": "EUR"}),
    );
    publish_as(
        &h,
        &user,
        "payment.succeeded",
        payment.to_string().as_bytes(),
    )
    .await;
    publish_as(&h, &user, "payment.succeeded", b"{poison").await;
    // The payment went to the retry path before its order exists.
    eventually("the early payment to be parked for retry", WAIT, || async {
        let parked = h
            .ready_count(&h.topology.retry_queue(h.config.retry_delay(1)))
            .await;
        (parked == 1).then_some(())
    })
    .await;
    h.place("placed", early, 1000).await;
    h.place("placed-later", later, 500).await;

    let letters = h.wait_for_dead_letters(1).await;
    assert_eq!(letters[0].body, b"{poison");
    assert_eq!(letters[0].user_id, None, "the service publishes as itself");
    assert_eq!(
        h.wait_for_status(early, "PAID").await,
        ("PAID".into(), 2, 1000)
    );
    h.wait_for_status(later, "PENDING_PAYMENT").await;
}

#[tokio::test]
async fn a_poison_message_with_huge_headers_is_dead_lettered_once_without_a_reconnect() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    // 100 KB of headers, and an unknown field whose 60 KB name the reason echoes: together over
    // the broker's frame size (128 KiB) if the republished copy carried both.
    let mut headers = FieldTable::default();
    headers.insert(
        "x-trace".into(),
        AMQPValue::LongString("t".repeat(100 * 1024).into()),
    );
    let unknown_field = "f".repeat(60 * 1024);
    let body = envelope(
        "huge",
        "payment.succeeded",
        json!({"order_id": order, "transfer_id": "t-1", "amount_minor": 1, "currency": "EUR", unknown_field: 1}),
    )
    .to_string()
    .into_bytes();
    h.publish_raw(
        "payment.succeeded",
        &body,
        BasicProperties::default()
            .with_message_id("huge".into())
            .with_headers(headers),
    )
    .await;

    // Waits for the dead letter, reporting how often the consumer connected meanwhile: not the
    // kit's `eventually`, whose failure cannot say that count, which is what this test is about.
    let mut letters = vec![];
    let start = std::time::Instant::now();
    while letters.is_empty() {
        assert!(
            start.elapsed() < WAIT,
            "no dead letter after {WAIT:?}; the consumer connected {} times",
            h.sessions()
        );
        letters.extend(h.take_dead_letters().await);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;
    h.stop_consumers().await;

    letters.extend(h.take_dead_letters().await);
    assert_eq!(letters.len(), 1, "dead-lettered once");
    assert_eq!(letters[0].body, body, "the original body travels untouched");
    assert_eq!(letters[0].message_id.as_deref(), Some("huge"));
    assert!(
        letters[0].reason.contains("unknown field"),
        "{}",
        &letters[0].reason[..200]
    );
    assert!(
        letters[0].reason.len() <= 1024,
        "the reason is bounded: {} bytes",
        letters[0].reason.len()
    );
    assert_eq!(
        header(&letters[0], "x-trace"),
        None,
        "headers over the bound are not copied"
    );
    assert!(header(&letters[0], "x-original-headers-dropped").is_some());
    assert_eq!(h.sessions(), 1, "the consumer never reconnected");
}

#[tokio::test]
async fn a_dead_letter_of_an_expiring_message_does_not_expire() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let mut headers = FieldTable::default();
    headers.insert("x-tenant".into(), AMQPValue::LongString("shop-1".into()));

    h.publish_raw(
        "payment.succeeded",
        b"{poison",
        BasicProperties::default()
            .with_message_id("expiring".into())
            .with_content_type("application/json".into())
            .with_type("payment.succeeded".into())
            .with_expiration("600000".into())
            .with_headers(headers),
    )
    .await;

    let letters = h.wait_for_dead_letters(1).await;
    assert_eq!(letters[0].expiration, None);
    assert_eq!(letters[0].message_id.as_deref(), Some("expiring"));
    assert_eq!(
        header(&letters[0], "x-tenant"),
        Some(&AMQPValue::LongString("shop-1".into())),
        "small original headers travel along"
    );
    assert_eq!(
        header(&letters[0], "x-original-routing-key"),
        Some(&AMQPValue::LongString("payment.succeeded".into()))
    );
}

#[tokio::test]
async fn a_publishing_channel_the_broker_closes_ends_the_session_and_the_reconnect_resumes() {
    let mut h = Harness::start().await;
    h.spawn_consumer();
    let order = Uuid::new_v4();
    h.place("placed", order, 1000).await;
    h.wait_for_status(order, "PENDING_PAYMENT").await;

    // A dead letter to an exchange that is gone: the broker closes the publishing channel (404).
    h.channel
        .exchange_delete(
            h.topology.dead_letter_exchange.as_str().into(),
            ExchangeDeleteOptions::default(),
        )
        .await
        .expect("delete the dead-letter exchange");
    h.publish_raw("payment.succeeded", b"{poison", Default::default())
        .await;

    // The next session declares the topology again and dead-letters the redelivered message.
    let letters = h.wait_for_dead_letters(1).await;
    assert_eq!(letters[0].body, b"{poison");
    assert!(h.sessions() >= 2, "the consumer reconnected");
    h.pay("payment", order, "t-1", 1000).await;
    h.wait_for_status(order, "PAID").await;
}
