//! The workload and its expected outcome. A workload is, per order, a causal script (place, then
//! payments and refunds, then a shipment or a cancellation, or money after a cancellation; in the
//! expiry phase, payments that race the payment timeout). The expected final state is computed
//! with the service's own pure domain code, applying each step once, in order.
//!
//! Refunds need no causal edge: one delivered before the money it returns is refused as premature
//! (`refund-exceeds-balance`) and retried, by the consumer and by the driver, until that money is
//! held. A script's refunds never return more than its payments bring, so every one of them ends
//! applied. The expiry timer is a step no one delivers: it fires by itself at some point after
//! placement, so each position it can take is a legal causal order, and the distinct outcomes of
//! those positions are the legal final states (two when a payment races it: paid, or cancelled
//! with the payment to be refunded).

use std::collections::BTreeMap;

use chrono::Utc;
use order_service::domain::{
    AmountMinor, BoundedText, Change, Currency, CustomerId, Decision, DomainError, EventType,
    Money, NewOrder, Order, OrderId, Shipment,
};
use uuid::Uuid;

use crate::rng::Rng;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Place,
    Pay {
        transfer_id: String,
        amount: i64,
    },
    Refund {
        refund_id: String,
        amount: i64,
    },
    Ship {
        carrier: String,
        tracking: String,
    },
    Cancel {
        reason: String,
    },
    /// The payment-expiry sweep: never delivered, the service's timer fires it.
    Expire,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub action: Action,
    /// Delivered only once every earlier step of the order took effect: the causal edges whose
    /// reordering would legitimately change the outcome (money after a cancellation).
    pub after_previous: bool,
    /// Delivered around the moment the order's payment times out, so that it races the timer.
    pub races_timer: bool,
}

/// Which service configuration a schedule runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Orders never expire.
    Steady,
    /// Unpaid orders expire after a short timeout.
    Expiry,
}

#[derive(Debug, Clone)]
pub struct Script {
    pub order_id: Uuid,
    pub customer: String,
    pub amount: i64,
    pub kind: &'static str,
    pub steps: Vec<Step>,
}

/// What the database and the outbound stream must hold for one order in one legal outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub status: String,
    pub version: i64,
    pub paid_minor: i64,
    pub refunded_minor: i64,
    pub refund_due_minor: i64,
    pub refund_required: bool,
    pub shipment: Option<(String, String)>,
    pub cancellation_reason: Option<String>,
    /// Per transfer or refund id: its direction (`in`, `out`) and amount.
    pub ledger: BTreeMap<String, (String, i64)>,
    /// History kinds, sorted (commuting steps may record them in another order).
    pub kinds: Vec<String>,
    /// Outbound event types, sorted, except `order.refund_required`: how often the flag turns on
    /// depends on arrival order when refunds and payments race, so it is checked for consistency
    /// (`check::refund_required_consistent`), not counted.
    pub events: Vec<String>,
    /// Whether the payment-expiry timer cancelled the order.
    pub expired: bool,
}

fn step(action: Action) -> Step {
    Step {
        action,
        after_previous: false,
        races_timer: false,
    }
}

/// Splits `total` into `parts` positive amounts (fewer if `total` is too small).
fn split(rng: &mut Rng, total: i64, parts: usize) -> Vec<i64> {
    let parts = (parts as i64).clamp(1, total.max(1)) as usize;
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

/// Numbers the transfer and refund ids of one order.
struct Ids {
    prefix: String,
    next: usize,
}

impl Ids {
    fn take(&mut self, what: &str) -> String {
        self.next += 1;
        format!("{what}-{}-{}", self.prefix, self.next)
    }

    /// Payments of `total` in 1–`max_parts` parts.
    fn pay(&mut self, rng: &mut Rng, total: i64, max_parts: u64) -> Vec<Step> {
        let parts = rng.between(1, max_parts) as usize;
        split(rng, total, parts)
            .into_iter()
            .map(|amount| {
                step(Action::Pay {
                    transfer_id: self.take("tr"),
                    amount,
                })
            })
            .collect()
    }

    /// With probability `percent`, refunds of 1..=`held` in 1–2 parts.
    fn refund(&mut self, rng: &mut Rng, held: i64, percent: u64) -> Vec<Step> {
        if held < 1 || !rng.chance(percent) {
            return vec![];
        }
        let total = rng.between(1, held as u64) as i64;
        let parts = rng.between(1, 2) as usize;
        split(rng, total, parts)
            .into_iter()
            .map(|amount| {
                step(Action::Refund {
                    refund_id: self.take("rf"),
                    amount,
                })
            })
            .collect()
    }
}

pub fn generate(rng: &mut Rng, seed: u64, orders: usize, phase: Phase) -> Vec<Script> {
    (0..orders)
        .map(|i| {
            let order_id =
                Uuid::from_u128(u128::from(rng.next_u64()) << 64 | u128::from(rng.next_u64()));
            let amount = rng.between(100, 10_000) as i64;
            let mut ids = Ids {
                prefix: format!("{seed}-{i}"),
                next: 0,
            };
            let mut steps = vec![step(Action::Place)];
            let kinds: &[&'static str] = match phase {
                Phase::Steady => &[
                    "ship",
                    "ship-overpaid",
                    "cancel",
                    "pay-after-cancel",
                    "pending",
                ],
                Phase::Expiry => &["expire-unpaid", "expire-race"],
            };
            let kind = *rng.pick(kinds);
            let ship = || {
                step(Action::Ship {
                    carrier: "DHL".into(),
                    tracking: format!("JD-{seed}-{i}"),
                })
            };
            let cancel = || {
                step(Action::Cancel {
                    reason: format!("changed mind {i}"),
                })
            };
            match kind {
                "ship" => {
                    steps.extend(ids.pay(rng, amount, 3));
                    steps.push(ship());
                    // A goodwill refund (a returned item): more than is due, within what is held.
                    steps.extend(ids.refund(rng, amount, 50));
                }
                "ship-overpaid" => {
                    let extra = rng.between(1, 500) as i64;
                    steps.extend(ids.pay(rng, amount, 3));
                    steps.extend(ids.pay(rng, extra, 1));
                    // Returning the overpayment, or part of it: applied before the overpayment
                    // arrives, it keeps the flag from ever turning on.
                    steps.extend(ids.refund(rng, extra, 70));
                    steps.push(ship());
                }
                "cancel" => {
                    // Partial payments only: they commute with the cancellation.
                    let paid = rng.between(0, amount as u64 - 1) as i64;
                    if paid > 0 {
                        steps.extend(ids.pay(rng, paid, 3));
                    }
                    steps.push(cancel());
                    steps.extend(ids.refund(rng, paid, 70));
                }
                "pay-after-cancel" => {
                    steps.push(cancel());
                    let mut money = ids.pay(rng, amount, 1);
                    money[0].after_previous = true;
                    steps.extend(money);
                    steps.extend(ids.refund(rng, amount, 70));
                }
                "pending" => {
                    let paid = rng.between(1, amount as u64 - 1) as i64;
                    steps.extend(ids.pay(rng, paid, 1));
                    steps.extend(ids.refund(rng, paid, 50));
                }
                "expire-unpaid" => {
                    let paid = rng.between(0, amount as u64 - 1) as i64;
                    if paid > 0 {
                        steps.extend(ids.pay(rng, paid, 2));
                    }
                    steps.extend(ids.refund(rng, paid, 50));
                    steps.push(step(Action::Expire));
                }
                _ => {
                    // expire-race: the money arrives around the timeout, once the order exists.
                    let total = amount + rng.between(0, 1) as i64 * rng.between(1, 300) as i64;
                    let mut money = ids.pay(rng, total, 2);
                    money[0].after_previous = true;
                    for pay in &mut money {
                        pay.races_timer = true;
                    }
                    steps.extend(money);
                    steps.extend(ids.refund(rng, total, 40));
                    steps.push(step(Action::Expire));
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

fn eur(minor: i64) -> Money {
    Money::new(
        AmountMinor::parse(minor).expect("amount"),
        Currency::parse("EUR").expect("EUR"),
    )
}

/// The legal outcomes of a script: its steps applied once, in causal order, with the domain's
/// own decisions; one per distinct outcome of the positions the expiry timer can fire at.
pub fn expect(script: &Script) -> Vec<Expected> {
    let actions: Vec<&Action> = script.steps.iter().map(|s| &s.action).collect();
    if !actions.contains(&&Action::Expire) {
        return vec![apply(script, &actions)];
    }
    let others: Vec<&Action> = actions
        .iter()
        .copied()
        .filter(|a| **a != Action::Expire)
        .collect();
    let mut outcomes: Vec<Expected> = vec![];
    for position in 1..=others.len() {
        let mut order = others.clone();
        order.insert(position, &Action::Expire);
        let outcome = apply(script, &order);
        if !outcomes.contains(&outcome) {
            outcomes.push(outcome);
        }
    }
    outcomes
}

/// Applies `actions` once, in this order.
fn apply(script: &Script, actions: &[&Action]) -> Expected {
    let mut order: Order = NewOrder {
        id: OrderId::from_uuid(script.order_id),
        customer_id: CustomerId::parse(&script.customer).expect("customer"),
        amount: eur(script.amount),
    }
    .into_order(Utc::now());
    let mut kinds = vec!["created".to_owned()];
    let mut events = vec![EventType::OrderCreated];
    let mut ledger = BTreeMap::new();
    let mut expired = false;
    for action in &actions[1..] {
        let change: Change = match action {
            Action::Place => unreachable!("place is the first step only"),
            Action::Pay {
                transfer_id,
                amount,
            } => {
                ledger.insert(transfer_id.clone(), ("in".to_owned(), *amount));
                order
                    .record_payment(&eur(*amount))
                    .expect("the model's payments apply")
            }
            Action::Refund { refund_id, amount } => {
                ledger.insert(refund_id.clone(), ("out".to_owned(), *amount));
                order
                    .record_refund(&eur(*amount))
                    .expect("the model's refunds return money held")
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
            Action::Expire => match order.expire() {
                Ok(Decision::Apply(change)) => {
                    expired = true;
                    *change
                }
                // Paid before the timer fired: the sweep finds nothing to expire.
                Err(DomainError::InvalidTransition { .. }) => continue,
                other => panic!("the model's expiry either applies or is moot: {other:?}"),
            },
        };
        kinds.push(change.kind.to_string());
        events.extend(change.events.iter().copied());
        order = change.next;
    }
    kinds.sort();
    let mut events: Vec<String> = events
        .into_iter()
        .filter(|e| *e != EventType::OrderRefundRequired)
        .map(|e| e.to_string())
        .collect();
    events.sort();
    Expected {
        status: order.status.to_string(),
        version: order.version.get(),
        paid_minor: order.paid_minor,
        refunded_minor: order.refunded_minor,
        refund_due_minor: order.refund_due_minor(),
        refund_required: order.refund_required,
        shipment: order
            .shipment
            .map(|s| (s.carrier.to_string(), s.tracking_number.to_string())),
        cancellation_reason: order.cancellation_reason.map(|r| r.to_string()),
        ledger,
        kinds,
        events,
        expired,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_generated_script_applies_in_causal_order_with_one_outcome_unless_it_races_the_timer() {
        for seed in 0..200 {
            for phase in [Phase::Steady, Phase::Expiry] {
                for script in generate(&mut Rng::new(seed), seed, 8, phase) {
                    let statuses: Vec<String> =
                        expect(&script).into_iter().map(|o| o.status).collect();
                    let legal: &[&str] = match script.kind {
                        "expire-race" => &["CANCELLED", "PAID"],
                        "expire-unpaid" => &["CANCELLED"],
                        _ => &[statuses[0].as_str()],
                    };
                    assert_eq!(statuses, legal, "seed {seed}: {script:?}");
                }
            }
        }
    }
}
