//! The load, steady while nodes die: `order.placed` and `payment.succeeded` events published with
//! confirms through one node (moving to the next only when its node is gone, and publishing the
//! unconfirmed batch again, as a real publisher does), with duplicates: the same message again,
//! the same payment under a new event id, payments before their order. Beside it, REST clients
//! place orders and pay them in two halves with Idempotency-Keys, round-robin over the instances
//! like a load balancer, retrying on failure with the same key like a client; some of their
//! payments also arrive over AMQP. Every order's expected end is recorded as it is generated.
//! The publisher itself is `publisher.rs`; what the load counts, and the availability it saw,
//! `tally.rs`.

use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use self::publisher::Publisher;
use crate::http;

pub mod publisher;
pub mod settled;
mod tally;

pub use tally::Tally;

/// A publisher's pace: this many new orders every tick.
const ORDERS_PER_TICK: usize = 2;
const TICK: Duration = Duration::from_millis(100);
/// A REST client's pause between two orders.
const CLIENT_PAUSE: Duration = Duration::from_millis(100);
/// A client's pause before retrying a failed request.
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);
/// How an order is expected to end: its amount, and the ledger rows it must hold (their sum
/// reaching the amount ⇒ PAID, else PENDING_PAYMENT).
#[derive(Debug, Clone)]
pub struct Expected {
    pub order: Uuid,
    pub amount: i64,
    pub transfers: Vec<(String, i64)>,
}

pub struct Load {
    pub expected: Mutex<Vec<Expected>>,
    pub tally: Tally,
    /// Answers no client should ever get, with what was asked.
    pub refusals: Mutex<Vec<String>>,
    /// Payments of REST orders that also go over AMQP, picked up by the publisher.
    cross_door: Mutex<Vec<Message>>,
    /// Cancelled: no new orders (clients finish the one they are on).
    pub stop: CancellationToken,
    /// Cancelled once the clients are done: the publisher ends when it has sent everything.
    pub drain: CancellationToken,
    exchange: String,
}

/// An inbound event as published: its id (also the AMQP `message_id`), type and body.
#[derive(Debug, Clone)]
pub struct Message {
    pub event_id: String,
    pub routing_key: &'static str,
    pub body: Vec<u8>,
}

fn message(routing_key: &'static str, data: serde_json::Value) -> Message {
    let event_id = Uuid::new_v4().to_string();
    let body = json!({
        "event_id": event_id, "type": routing_key,
        "occurred_at": chrono::Utc::now().to_rfc3339(), "data": data
    });
    Message {
        event_id,
        routing_key,
        body: body.to_string().into_bytes(),
    }
}

fn placed(order: Uuid, amount: i64) -> Message {
    message(
        "order.placed",
        json!({"order_id": order, "customer_id": "cluster", "amount_minor": amount, "currency": "EUR"}),
    )
}

fn payment(order: Uuid, transfer: &str, amount: i64) -> Message {
    message(
        "payment.succeeded",
        json!({"order_id": order, "transfer_id": transfer, "amount_minor": amount, "currency": "EUR"}),
    )
}

/// True `percent` times in a hundred.
fn roll(percent: u64) -> bool {
    getrandom::u64().expect("randomness") % 100 < percent
}

fn amount() -> i64 {
    1_000 + (getrandom::u64().expect("randomness") % 9_000) as i64
}

impl Load {
    pub fn new(exchange: &str) -> Self {
        Self {
            expected: Mutex::new(vec![]),
            tally: Tally::default(),
            refusals: Mutex::new(vec![]),
            cross_door: Mutex::new(vec![]),
            stop: CancellationToken::new(),
            drain: CancellationToken::new(),
            exchange: exchange.to_owned(),
        }
    }

    fn expect(&self, expected: Expected) {
        self.expected.lock().expect("expected").push(expected);
    }

    /// A new order over AMQP: its messages for now, and its duplicates for the next tick.
    fn amqp_order(&self) -> (Vec<Message>, Vec<Message>) {
        let order = Uuid::new_v4();
        let amount = amount();
        let transfer = format!("amqp-{order}");
        let placed = placed(order, amount);
        let pay = payment(order, &transfer, amount);
        self.expect(Expected {
            order,
            amount,
            transfers: vec![(transfer.clone(), amount)],
        });
        let mut later = vec![];
        if roll(20) {
            later.push(placed.clone());
        }
        if roll(20) {
            later.push(pay.clone());
        }
        if roll(10) {
            later.push(payment(order, &transfer, amount));
        }
        self.tally
            .duplicates
            .fetch_add(later.len() as u64, Ordering::Relaxed);
        let now = if roll(10) {
            vec![pay, placed]
        } else {
            vec![placed, pay]
        };
        (now, later)
    }

    /// One order placed over AMQP through `url` at once, outside the steady load: a probe of
    /// the consuming path. Returns its id once the broker confirmed it.
    pub async fn probe(&self, url: &str) -> Uuid {
        let order = Uuid::new_v4();
        self.expect(Expected {
            order,
            amount: 500,
            transfers: vec![],
        });
        let mut publisher = Publisher::new(vec![url.to_owned()], &self.exchange);
        publisher.send(&[placed(order, 500)], &self.tally).await;
        publisher.close().await;
        order
    }
}

/// Publishes the AMQP side of the load until `drain` and nothing is left to send.
pub async fn publish(load: &Load, nodes: Vec<String>) {
    let mut publisher = Publisher::new(nodes, &load.exchange);
    let mut later: Vec<Message> = vec![];
    let mut tick = tokio::time::interval(TICK);
    loop {
        tick.tick().await;
        let mut batch = std::mem::take(&mut later);
        batch.append(&mut load.cross_door.lock().expect("cross-door"));
        if !load.stop.is_cancelled() {
            for _ in 0..ORDERS_PER_TICK {
                let (now, duplicates) = load.amqp_order();
                batch.extend(now);
                later.extend(duplicates);
            }
        }
        if batch.is_empty() && later.is_empty() && load.drain.is_cancelled() {
            break;
        }
        publisher.send(&batch, &load.tally).await;
    }
    publisher.close().await;
}

/// The instances a load balancer sends requests to: the ports in rotation now. A test takes an
/// instance out before stopping it, as a load balancer does when it deregisters one.
#[derive(Debug)]
pub struct Rotation(Mutex<Vec<u16>>);

impl Rotation {
    pub fn of(ports: Vec<u16>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self(Mutex::new(ports)))
    }

    pub fn add(&self, port: u16) {
        self.0.lock().expect("rotation").push(port);
    }

    pub fn remove(&self, port: u16) {
        self.0.lock().expect("rotation").retain(|p| *p != port);
    }

    pub fn ports(&self) -> Vec<u16> {
        self.0.lock().expect("rotation").clone()
    }

    /// The `n`-th instance in rotation, round-robin.
    fn pick(&self, n: usize) -> u16 {
        let ports = self.0.lock().expect("rotation");
        assert!(!ports.is_empty(), "no instance in rotation");
        ports[n % ports.len()]
    }
}

/// One REST client: orders placed and paid in two halves, until `stop`.
pub async fn rest_client(load: &Load, ports: std::sync::Arc<Rotation>, first: usize) {
    let mut next = first;
    while !load.stop.is_cancelled() {
        let order = Uuid::new_v4();
        let amount = amount();
        let half = amount / 2;
        let transfers = vec![
            (format!("rest-{order}-1"), half),
            (format!("rest-{order}-2"), amount - half),
        ];
        load.expect(Expected {
            order,
            amount,
            transfers: transfers.clone(),
        });
        let body = json!({"id": order, "customer_id": "cluster", "amount_minor": amount, "currency": "EUR"});
        post(
            load,
            &ports,
            &mut next,
            "/v1/orders",
            &format!("place-{order}"),
            &body,
        )
        .await;
        let path = format!("/v1/orders/{order}/payments");
        for (n, (transfer, part)) in transfers.iter().enumerate() {
            if n == 1 && roll(20) {
                // The same payment, also reported by the payment provider's events.
                let copy = payment(order, transfer, *part);
                load.cross_door.lock().expect("cross-door").push(copy);
                load.tally.duplicates.fetch_add(1, Ordering::Relaxed);
            }
            let body = json!({"transfer_id": transfer, "amount_minor": part, "currency": "EUR"});
            post(
                load,
                &ports,
                &mut next,
                &path,
                &format!("pay-{transfer}"),
                &body,
            )
            .await;
        }
        tokio::time::sleep(CLIENT_PAUSE).await;
    }
}

/// POSTs until the answer is a success, each attempt to the next instance; a conflict with an
/// in-flight twin (409), an overload (503), a dropped connection or a 500 is retried with the
/// same key; any other answer is a refusal, recorded, and the client moves on.
async fn post(
    load: &Load,
    ports: &Rotation,
    next: &mut usize,
    path: &str,
    key: &str,
    body: &serde_json::Value,
) {
    let body = body.to_string();
    loop {
        let port = ports.pick(*next);
        *next += 1;
        let tally = &load.tally;
        tally.requests.fetch_add(1, Ordering::Relaxed);
        tally.requests_in_flight.fetch_add(1, Ordering::Relaxed);
        let sent = Instant::now();
        let answer = http::post(port, path, key, &body).await;
        tally.requests_in_flight.fetch_sub(1, Ordering::Relaxed);
        match answer {
            Ok((200 | 201, _)) => {
                let answered = Instant::now();
                let mut acknowledged = tally.acknowledged.lock().expect("acknowledged");
                acknowledged.push((sent, answered));
                return;
            }
            Ok((409, _)) => {}
            Ok((503, _)) => {
                tally.unavailable.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => {
                tally.connection_failures.fetch_add(1, Ordering::Relaxed);
            }
            Ok((500, _)) => {
                tally.server_errors.fetch_add(1, Ordering::Relaxed);
            }
            Ok((status, answer)) => {
                let refusal = format!("POST {path} ({key}): {status} {answer}");
                load.refusals.lock().expect("refusals").push(refusal);
                return;
            }
        }
        tally.retried_requests.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}
