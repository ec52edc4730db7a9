//! The scheduler: every step of every script is delivered 1–4 times, each copy through a randomly
//! chosen door (REST with the step's Idempotency-Key, or an AMQP event with the step's event id),
//! after a random delay, so copies race and steps overtake each other within and across orders.
//! REST copies behave like a real client: a premature answer (404, shipment before payment, a
//! refund of money not yet held), an in-flight 409, a 503 or a dead instance means "retry, maybe
//! elsewhere". The expiry timer's step is the service's own and is never delivered; a step that
//! races it is delivered around the moment its order's payment times out.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lapin::options::BasicPublishOptions;
use lapin::{BasicProperties, Channel};
use serde_json::{Value, json};
use sqlx::PgPool;

use order_service_testkit::http;

use crate::model::{Action, Script};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    Rest,
    Amqp,
}

#[derive(Debug, Clone)]
pub struct Delivery {
    pub order: usize,
    pub step: usize,
    pub copy: usize,
    pub door: Door,
    pub delay_ms: u64,
}

impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "order {} step {} copy {} via {:?} after {} ms",
            self.order, self.step, self.copy, self.door, self.delay_ms
        )
    }
}

/// The deliveries of one schedule, per order and step (deterministic for a seed). `timeout_ms`
/// is the payment timeout the instances run with, which steps that race the timer straddle.
pub fn plan(rng: &mut Rng, scripts: &[Script], timeout_ms: u64) -> Vec<Delivery> {
    let mut deliveries = vec![];
    for (order, script) in scripts.iter().enumerate() {
        for (step, planned) in script.steps.iter().enumerate() {
            if planned.action == Action::Expire {
                continue;
            }
            for copy in 0..rng.between(1, 4) as usize {
                deliveries.push(Delivery {
                    order,
                    step,
                    copy,
                    door: if rng.chance(50) {
                        Door::Rest
                    } else {
                        Door::Amqp
                    },
                    delay_ms: if planned.races_timer {
                        rng.between(timeout_ms.saturating_sub(800), timeout_ms + 1200)
                    } else {
                        rng.between(0, 600)
                    },
                });
            }
        }
    }
    rng.shuffle(&mut deliveries);
    deliveries
}

/// What went wrong on the way (not in the final state): unexpected answers.
#[derive(Default, Debug)]
pub struct Observations {
    pub unexpected: Vec<String>,
    pub server_errors: u64,
    pub rest_retries: u64,
    /// REST refunds answered `refund-exceeds-balance`: delivered before their money.
    pub premature_refunds: u64,
    /// Every REST attempt, by order: when (UTC), which instance, what it answered. A failing
    /// schedule's report shows those of the orders it names, to be matched with the logs.
    pub answers: Vec<(usize, String)>,
}

pub struct Driver {
    pub seed: u64,
    pub ports: Vec<u16>,
    pub channel: Channel,
    pub exchange: String,
    pub pool: PgPool,
    pub observations: Arc<Mutex<Observations>>,
}

impl Driver {
    /// Delivers every planned copy, honouring `after_previous`: such a step's copies start only
    /// once every earlier step of its order took effect.
    pub async fn deliver(self: &Arc<Self>, scripts: &Arc<Vec<Script>>, deliveries: Vec<Delivery>) {
        let mut per_order: Vec<Vec<Delivery>> = vec![vec![]; scripts.len()];
        for delivery in deliveries {
            per_order[delivery.order].push(delivery);
        }
        let mut tasks = vec![];
        for (order, copies) in per_order.into_iter().enumerate() {
            let driver = self.clone();
            let scripts = scripts.clone();
            tasks.push(tokio::spawn(async move {
                driver.deliver_order(&scripts[order], order, copies).await;
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    }

    async fn deliver_order(self: &Arc<Self>, script: &Script, order: usize, copies: Vec<Delivery>) {
        let mut phase_start = 0;
        while phase_start < script.steps.len() {
            let phase_end = (phase_start + 1..script.steps.len())
                .find(|s| script.steps[*s].after_previous)
                .unwrap_or(script.steps.len());
            if phase_start > 0 {
                // Every earlier step took effect: each adds one version.
                self.wait_for_version(script, phase_start as i64).await;
            }
            let mut tasks = vec![];
            for delivery in copies
                .iter()
                .filter(|d| (phase_start..phase_end).contains(&d.step))
            {
                let driver = self.clone();
                let script = script.clone();
                let delivery = delivery.clone();
                tasks.push(tokio::spawn(async move {
                    // The schedule's own delay for this copy: the reordering under test.
                    tokio::time::sleep(Duration::from_millis(delivery.delay_ms)).await;
                    driver.deliver_copy(&script, order, &delivery).await;
                }));
            }
            for task in tasks {
                let _ = task.await;
            }
            phase_start = phase_end;
        }
    }

    async fn wait_for_version(&self, script: &Script, version: i64) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            let current: Option<i64> =
                sqlx::query_scalar("SELECT version FROM orders WHERE id = $1")
                    .bind(script.order_id)
                    .fetch_optional(&self.pool)
                    .await
                    .ok()
                    .flatten();
            if current.is_some_and(|v| v >= version) {
                return;
            }
            // Not the kit's `eventually`: giving up is no failure here; the check after the
            // schedule reports whatever never arrived.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn deliver_copy(&self, script: &Script, order: usize, delivery: &Delivery) {
        let step = &script.steps[delivery.step];
        let (path, body, event_type, data) = request(script, &step.action);
        let id = format!("{}-{order}-{}", self.seed, delivery.step);
        match delivery.door {
            Door::Amqp => {
                let envelope = json!({
                    "event_id": format!("e-{id}"), "type": event_type,
                    "occurred_at": "2026-11-21T10:00:00Z", "data": data,
                });
                self.publish(
                    event_type,
                    &format!("e-{id}"),
                    envelope.to_string().as_bytes(),
                )
                .await;
            }
            Door::Rest => {
                self.post_until_done(&path, &format!("k-{id}"), &body.to_string(), delivery)
                    .await
            }
        }
    }

    async fn publish(&self, routing_key: &str, event_id: &str, body: &[u8]) {
        for _ in 0..50 {
            let confirm = self
                .channel
                .basic_publish(
                    self.exchange.as_str().into(),
                    routing_key.into(),
                    BasicPublishOptions::default(),
                    body,
                    BasicProperties::default()
                        .with_message_id(event_id.into())
                        .with_content_type("application/json".into())
                        .with_delivery_mode(2),
                )
                .await;
            if let Ok(confirm) = confirm
                && confirm.await.is_ok_and(|c| c.is_ack())
            {
                return;
            }
            // A publisher's pause before it publishes again (the broker cut, or an instance down).
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.note(format!("could not publish {event_id}"));
    }

    async fn post_until_done(&self, path: &str, key: &str, body: &str, delivery: &Delivery) {
        let mut rng = Rng::new(
            self.seed
                ^ (delivery.order as u64) << 32
                ^ (delivery.step as u64) << 8
                ^ delivery.copy as u64,
        );
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(120) {
            let port = *rng.pick(&self.ports);
            let answer = http::post(port, path, key, body).await;
            let said = match &answer {
                Ok((status, _)) => status.to_string(),
                Err(error) => format!("no answer ({error})"),
            };
            self.lock().answers.push((
                delivery.order,
                format!(
                    "{} {delivery}: instance :{port} answered {said}",
                    chrono::Utc::now().format("%H:%M:%S%.3f")
                ),
            ));
            match answer {
                Ok((status, _)) if (200..300).contains(&status) => return,
                Ok((status, answer)) if retryable(status, &answer) => {
                    if status >= 500 && status != 503 {
                        self.lock().server_errors += 1;
                    }
                    if answer.contains("/refund-exceeds-balance") {
                        self.lock().premature_refunds += 1;
                    }
                }
                Ok((status, answer)) => {
                    self.note(format!(
                        "{delivery}: POST {path} answered {status}: {answer}"
                    ));
                    return;
                }
                // The instance is down (killed, restarting): try another.
                Err(_) => {}
            }
            self.lock().rest_retries += 1;
            // A client's random pause before it retries, as a real client backs off.
            tokio::time::sleep(Duration::from_millis(rng.between(100, 400))).await;
        }
        self.note(format!("{delivery}: POST {path} never succeeded"));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Observations> {
        self.observations.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn note(&self, what: String) {
        self.lock().unexpected.push(what);
    }
}

/// Answers a client retries: premature (unknown order, shipment before payment, a refund of money
/// not yet held), in flight, unavailable, or a server error while a dependency restarts.
fn retryable(status: u16, body: &str) -> bool {
    let problem: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let kind = problem["type"].as_str().unwrap_or("");
    match status {
        404 | 503 | 500 => true,
        409 if kind.ends_with("/in-flight") => true,
        409 if kind.ends_with("/refund-exceeds-balance") => true,
        409 if kind.ends_with("/invalid-transition") => {
            problem["current_status"] == "PENDING_PAYMENT"
        }
        _ => false,
    }
}

/// The REST path and body, and the AMQP type and data, of one step.
fn request(script: &Script, action: &Action) -> (String, Value, &'static str, Value) {
    let id = script.order_id;
    let orders = "/v1/orders".to_owned();
    match action {
        Action::Place => {
            let data = json!({"order_id": id, "customer_id": script.customer, "amount_minor": script.amount, "currency": "EUR"});
            let body = json!({"id": id, "customer_id": script.customer, "amount_minor": script.amount, "currency": "EUR"});
            (orders, body, "order.placed", data)
        }
        Action::Pay {
            transfer_id,
            amount,
        } => {
            let body =
                json!({"transfer_id": transfer_id, "amount_minor": amount, "currency": "EUR"});
            let mut data = body.clone();
            data["order_id"] = json!(id);
            (
                format!("{orders}/{id}/payments"),
                body,
                "payment.succeeded",
                data,
            )
        }
        Action::Refund { refund_id, amount } => {
            let body = json!({"refund_id": refund_id, "amount_minor": amount, "currency": "EUR"});
            let mut data = body.clone();
            data["order_id"] = json!(id);
            (
                format!("{orders}/{id}/refunds"),
                body,
                "refund.succeeded",
                data,
            )
        }
        Action::Ship { carrier, tracking } => {
            let body = json!({"carrier": carrier, "tracking_number": tracking});
            let mut data = body.clone();
            data["order_id"] = json!(id);
            (
                format!("{orders}/{id}/ship"),
                body,
                "shipment.dispatched",
                data,
            )
        }
        Action::Cancel { reason } => {
            let body = json!({"reason": reason});
            let mut data = body.clone();
            data["order_id"] = json!(id);
            (
                format!("{orders}/{id}/cancel"),
                body,
                "order.cancellation_requested",
                data,
            )
        }
        Action::Expire => unreachable!("the service's timer expires orders; no one delivers it"),
    }
}
