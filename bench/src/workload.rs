//! What the bench feeds the service: orders seeded straight into a database, and the inbound
//! events (placements, payments and their duplicates) in the order they are published.

use order_service::amqp::inbound::InboundType;

/// The routing key (and envelope type) of an inbound event, as the service's inbox is bound.
fn routing_key(kind: InboundType) -> &'static str {
    kind.into()
}
use serde_json::json;
use sqlx::PgConnection;
use uuid::Uuid;

/// Every order of the bench costs this much, and every payment pays exactly this: one payment
/// completes one order (PENDING_PAYMENT → PAID, one outbox event), in every phase alike.
pub const AMOUNT_MINOR: i64 = 4_999;
pub const CURRENCY: &str = "EUR";
/// The version every seeded order has: the guard of the payment that completes it.
pub const SEEDED_VERSION: i64 = 1;

/// A small deterministic generator (SplitMix64): the same run publishes the same sequence.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// One payment of one order, as the REST API, the consumer and the ceiling all make it.
#[derive(Debug, Clone)]
pub struct Payment {
    pub order_id: Uuid,
    pub transfer_id: String,
}

impl Payment {
    pub fn for_order(order_id: Uuid) -> Self {
        Self {
            order_id,
            transfer_id: format!("tr-{}", order_id.simple()),
        }
    }

    /// The REST request body.
    pub fn body(&self) -> Vec<u8> {
        json!({"transfer_id": self.transfer_id, "amount_minor": AMOUNT_MINOR, "currency": CURRENCY})
            .to_string()
            .into_bytes()
    }
}

pub fn new_orders(n: usize) -> Vec<Uuid> {
    (0..n).map(|_| Uuid::new_v4()).collect()
}

/// Inserts pending orders as the service would have placed them (the order at version 1 and its
/// `created` history row), in bulk: seeding is not what is measured.
pub async fn seed_orders(conn: &mut PgConnection, ids: &[Uuid]) -> anyhow::Result<()> {
    for chunk in ids.chunks(5_000) {
        sqlx::query(
            "INSERT INTO orders (id, customer_id, amount_minor, currency, status, version) \
             SELECT id, 'bench', $2, $3, 'PENDING_PAYMENT', $4 FROM unnest($1::uuid[]) AS id",
        )
        .bind(chunk)
        .bind(AMOUNT_MINOR)
        .bind(CURRENCY)
        .bind(SEEDED_VERSION)
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "INSERT INTO order_transitions (order_id, version, kind, from_status, to_status, \
             cause_source, event_id) \
             SELECT id, $2, 'created', NULL, 'PENDING_PAYMENT', 'amqp', 'bench-seed' \
             FROM unnest($1::uuid[]) AS id",
        )
        .bind(chunk)
        .bind(SEEDED_VERSION)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// An inbound event ready to publish.
#[derive(Debug, Clone)]
pub struct Event {
    pub routing_key: &'static str,
    pub event_id: String,
    pub body: Vec<u8>,
}

fn envelope(event_id: &str, event_type: &str, data: serde_json::Value) -> Vec<u8> {
    json!({"event_id": event_id, "type": event_type, "occurred_at": "2026-11-21T10:00:00Z", "data": data})
        .to_string()
        .into_bytes()
}

pub fn placed(order_id: Uuid) -> Event {
    let event_id = format!("ev-placed-{}", order_id.simple());
    let data = json!({"order_id": order_id, "customer_id": "bench", "amount_minor": AMOUNT_MINOR, "currency": CURRENCY});
    Event {
        routing_key: routing_key(InboundType::OrderPlaced),
        body: envelope(&event_id, routing_key(InboundType::OrderPlaced), data),
        event_id,
    }
}

/// The payment of `order_id`; `event_id` lets a duplicate carry a fresh message id.
pub fn paid(order_id: Uuid, event_id: String) -> Event {
    let payment = Payment::for_order(order_id);
    let data = json!({"order_id": order_id, "transfer_id": payment.transfer_id, "amount_minor": AMOUNT_MINOR, "currency": CURRENCY});
    Event {
        routing_key: routing_key(InboundType::PaymentSucceeded),
        body: envelope(&event_id, routing_key(InboundType::PaymentSucceeded), data),
        event_id,
    }
}

pub fn paid_event_id(order_id: Uuid) -> String {
    format!("ev-paid-{}", order_id.simple())
}

/// Duplicate deliveries to add to `unique` ones so that they are `share` of all.
pub fn duplicates_for(unique: usize, share: f64) -> usize {
    (unique as f64 * share / (1.0 - share)).round() as usize
}

/// All placements, then all payments in the same order (so a payment reaches the consumer long
/// after its order's placement and is almost never premature), with `duplicates` redeliveries of
/// already published events scattered through each block, split between the blocks in
/// proportion.
pub fn consumer_events(orders: &[Uuid], duplicates: usize, rng: &mut Rng) -> Vec<Event> {
    let placements: Vec<Event> = orders.iter().map(|&id| placed(id)).collect();
    let mut events = with_duplicates(placements, duplicates / 2, rng);
    events.extend(payment_events(orders, duplicates - duplicates / 2, rng));
    events
}

/// The payment of every order, with `duplicates` redeliveries (same event id) scattered after
/// their originals: the consumer's load when the orders already exist.
pub fn payment_events(orders: &[Uuid], duplicates: usize, rng: &mut Rng) -> Vec<Event> {
    payment_stream(orders, duplicates, rng)
        .into_iter()
        .map(|id| paid(id, paid_event_id(id)))
        .collect()
}

/// The same stream as [`payment_events`], as the order each delivery pays (a duplicate names its
/// original's order again): what the raw-SQL designs apply.
pub fn payment_stream(orders: &[Uuid], duplicates: usize, rng: &mut Rng) -> Vec<Uuid> {
    with_duplicates(orders.to_vec(), duplicates, rng)
}

/// Inserts `extra` copies of earlier items of `block`, each after its original.
fn with_duplicates<T: Clone>(block: Vec<T>, extra: usize, rng: &mut Rng) -> Vec<T> {
    if block.is_empty() {
        return block;
    }
    let mut copies: Vec<Vec<T>> = vec![vec![]; block.len()];
    for _ in 0..extra {
        let original = rng.below(block.len());
        // Delivered again somewhere at or after the original's position.
        let at = original + rng.below(block.len() - original);
        copies[at].push(block[original].clone());
    }
    block
        .into_iter()
        .zip(copies)
        .flat_map(|(item, copies)| std::iter::once(item).chain(copies))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn events_are_placements_then_payments_with_the_requested_duplicates() {
        let orders = new_orders(50);
        let events = consumer_events(&orders, 25, &mut Rng::new(7));
        assert_eq!(events.len(), 125);
        let first_payment = events
            .iter()
            .position(|e| e.routing_key == routing_key(InboundType::PaymentSucceeded))
            .expect("payments");
        assert!(
            events[..first_payment]
                .iter()
                .all(|e| e.routing_key == routing_key(InboundType::OrderPlaced))
        );
        let unique: HashSet<&str> = events.iter().map(|e| e.event_id.as_str()).collect();
        assert_eq!(
            unique.len(),
            100,
            "every duplicate repeats a published event id"
        );
    }

    #[test]
    fn originals_keep_their_order_and_every_duplicate_follows_its_original() {
        let orders = new_orders(20);
        let events = consumer_events(&orders, 40, &mut Rng::new(1));
        let mut seen = HashSet::new();
        let first_occurrences: Vec<&str> = events
            .iter()
            .map(|e| e.event_id.as_str())
            .filter(|id| seen.insert(*id))
            .collect();
        let expected: Vec<String> = orders
            .iter()
            .map(|&id| placed(id).event_id)
            .chain(orders.iter().map(|&id| paid_event_id(id)))
            .collect();
        assert_eq!(first_occurrences, expected);
    }

    #[test]
    fn a_payment_stream_names_each_order_once_plus_its_duplicates() {
        let orders = new_orders(40);
        let stream = payment_stream(&orders, duplicates_for(40, 0.2), &mut Rng::new(3));
        assert_eq!(stream.len(), 50, "a fifth of all deliveries are duplicates");
        let unique: HashSet<Uuid> = stream.iter().copied().collect();
        assert_eq!(unique.len(), 40);
        let events = payment_events(&orders, 10, &mut Rng::new(3));
        let paid_orders: Vec<String> = stream.iter().map(|&id| paid_event_id(id)).collect();
        let event_ids: Vec<String> = events.into_iter().map(|e| e.event_id).collect();
        assert_eq!(event_ids, paid_orders, "the same stream, as events");
    }
}
