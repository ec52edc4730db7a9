//! The workload and its expected outcome. A workload is, per order, a causal script (place, then
//! payments, then a shipment or a cancellation, or money after a cancellation). The expected final
//! state is computed with the service's own pure domain code, applying each step once, in order.

use std::collections::BTreeMap;

use chrono::Utc;
use order_service::domain::{
    AmountMinor, BoundedText, Currency, CustomerId, Decision, Money, NewOrder, Order, OrderId,
    Shipment,
};
use uuid::Uuid;

use crate::rng::Rng;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Place,
    Pay { transfer_id: String, amount: i64 },
    Ship { carrier: String, tracking: String },
    Cancel { reason: String },
}

#[derive(Debug, Clone)]
pub struct Step {
    pub action: Action,
    /// Delivered only once every earlier step of the order took effect: the causal edges whose
    /// reordering would legitimately change the outcome (money after a cancellation).
    pub after_previous: bool,
}

#[derive(Debug, Clone)]
pub struct Script {
    pub order_id: Uuid,
    pub customer: String,
    pub amount: i64,
    pub kind: &'static str,
    pub steps: Vec<Step>,
}

/// What the database and the outbound stream must hold for one order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub status: String,
    pub version: i64,
    pub paid_minor: i64,
    pub refund_required: bool,
    pub shipment: Option<(String, String)>,
    pub cancellation_reason: Option<String>,
    pub ledger: BTreeMap<String, i64>,
    /// History kinds, sorted (commuting steps may record them in another order).
    pub kinds: Vec<String>,
    /// Outbound event types, sorted.
    pub events: Vec<String>,
}

fn step(action: Action) -> Step {
    Step {
        action,
        after_previous: false,
    }
}

/// Splits `total` into `parts` positive amounts.
fn split(rng: &mut Rng, total: i64, parts: usize) -> Vec<i64> {
    let mut amounts = vec![];
    let mut left = total;
    for i in 0..parts {
        let remaining_parts = (parts - i) as i64;
        let amount = if remaining_parts == 1 {
            left
        } else {
            rng.between(1, (left - remaining_parts + 1).max(1) as u64) as i64
        };
        amounts.push(amount);
        left -= amount;
    }
    amounts
}

pub fn generate(rng: &mut Rng, seed: u64, orders: usize) -> Vec<Script> {
    (0..orders)
        .map(|i| {
            let order_id =
                Uuid::from_u128(u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()));
            let amount = rng.between(100, 10_000) as i64;
            let transfer = |n: usize| format!("tr-{seed}-{i}-{n}");
            let mut steps = vec![step(Action::Place)];
            let kind = *rng.pick(&[
                "ship",
                "ship-overpaid",
                "cancel",
                "pay-after-cancel",
                "pending",
            ]);
            match kind {
                "ship" | "ship-overpaid" => {
                    let parts = rng.between(1, 3) as usize;
                    for (n, part) in split(rng, amount, parts).into_iter().enumerate() {
                        steps.push(step(Action::Pay {
                            transfer_id: transfer(n),
                            amount: part,
                        }));
                    }
                    if kind == "ship-overpaid" {
                        let extra = rng.between(1, 500) as i64;
                        steps.push(step(Action::Pay {
                            transfer_id: transfer(9),
                            amount: extra,
                        }));
                    }
                    steps.push(step(Action::Ship {
                        carrier: "DHL".into(),
                        tracking: format!("JD-{seed}-{i}"),
                    }));
                }
                "cancel" => {
                    // Partial payments only: they commute with the cancellation.
                    let paid = rng.between(0, amount as u64 - 1) as i64;
                    if paid > 0 {
                        let parts = rng_parts(rng, paid);
                        for (n, part) in split(rng, paid, parts).into_iter().enumerate() {
                            steps.push(step(Action::Pay {
                                transfer_id: transfer(n),
                                amount: part,
                            }));
                        }
                    }
                    steps.push(step(Action::Cancel {
                        reason: format!("changed mind {i}"),
                    }));
                }
                "pay-after-cancel" => {
                    steps.push(step(Action::Cancel {
                        reason: format!("changed mind {i}"),
                    }));
                    steps.push(Step {
                        action: Action::Pay {
                            transfer_id: transfer(0),
                            amount,
                        },
                        after_previous: true,
                    });
                }
                _ => {
                    let paid = rng.between(1, amount as u64 - 1) as i64;
                    steps.push(step(Action::Pay {
                        transfer_id: transfer(0),
                        amount: paid,
                    }));
                }
            }
            Script {
                order_id,
                customer: format!("chaos-{i}"),
                amount,
                kind,
                steps,
            }
        })
        .collect()
}

fn rng_parts(rng: &mut Rng, paid: i64) -> usize {
    (rng.between(1, 3) as i64).min(paid) as usize
}

fn eur(minor: i64) -> Money {
    Money::new(
        AmountMinor::parse(minor).expect("amount"),
        Currency::parse("EUR").expect("EUR"),
    )
}

/// Applies the script once, in order, with the domain's own decisions.
pub fn expect(script: &Script) -> Expected {
    let mut order: Order = NewOrder {
        id: OrderId::from_uuid(script.order_id),
        customer_id: CustomerId::parse(&script.customer).expect("customer"),
        amount: eur(script.amount),
    }
    .into_order(Utc::now());
    let mut kinds = vec!["created".to_owned()];
    let mut events = vec!["order.created".to_owned()];
    let mut ledger = BTreeMap::new();
    for step in &script.steps[1..] {
        let change = match &step.action {
            Action::Place => unreachable!("place is the first step only"),
            Action::Pay {
                transfer_id,
                amount,
            } => {
                ledger.insert(transfer_id.clone(), *amount);
                order
                    .record_payment(&eur(*amount))
                    .expect("the model's payments apply")
            }
            Action::Ship { carrier, tracking } => {
                match order.ship(&Shipment::parse(carrier, tracking).expect("shipment")) {
                    Ok(Decision::Apply(change)) => *change,
                    other => panic!("the model's shipment must apply: {other:?}"),
                }
            }
            Action::Cancel { reason } => {
                match order.cancel(&BoundedText::parse("reason", reason, 500).expect("reason")) {
                    Ok(Decision::Apply(change)) => *change,
                    other => panic!("the model's cancellation must apply: {other:?}"),
                }
            }
        };
        kinds.push(change.kind.to_string());
        events.extend(change.events.iter().map(|e| e.to_string()));
        order = change.next;
    }
    kinds.sort();
    events.sort();
    Expected {
        status: order.status.to_string(),
        version: order.version.get(),
        paid_minor: order.paid_minor,
        refund_required: order.refund_required,
        shipment: order
            .shipment
            .map(|s| (s.carrier.to_string(), s.tracking_number.to_string())),
        cancellation_reason: order.cancellation_reason.map(|r| r.to_string()),
        ledger,
        kinds,
        events,
    }
}
