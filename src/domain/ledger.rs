//! The ledger: money that arrived (payments) and money that went back (refunds), one row per
//! transfer id across both directions, and what each does to its order. Both are facts: a
//! payment is recorded whatever the order's status, a refund never changes the status. The
//! rules are in `docs/contract.md#money`.

use chrono::{DateTime, Utc};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr};

use super::events::EventType;
use super::history::Source;
use super::ids::{OrderId, TransferId};
use super::money::{MAX_SUM_MINOR, Money};
use super::order::{Change, Decision, DomainError, Order};
use super::status::{Command, OrderStatus, TransitionKind, transition};

/// Which way money moved: `in` for a payment, `out` for a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Direction {
    In,
    Out,
}

/// One transfer of money: what the ledger keeps under its id, whichever the direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    pub id: TransferId,
    pub order_id: OrderId,
    pub direction: Direction,
    pub money: Money,
}

/// Money that arrived for an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    pub transfer_id: TransferId,
    pub order_id: OrderId,
    pub money: Money,
}

/// Money that went back to the customer; its id shares the ledger's id space with payments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refund {
    pub refund_id: TransferId,
    pub order_id: OrderId,
    pub money: Money,
}

impl From<Payment> for Transfer {
    fn from(payment: Payment) -> Self {
        Self {
            id: payment.transfer_id,
            order_id: payment.order_id,
            direction: Direction::In,
            money: payment.money,
        }
    }
}

impl From<Refund> for Transfer {
    fn from(refund: Refund) -> Self {
        Self {
            id: refund.refund_id,
            order_id: refund.order_id,
            direction: Direction::Out,
            money: refund.money,
        }
    }
}

impl Transfer {
    /// A recorded transfer with the same id is a replay only if everything else matches too:
    /// order, direction (a refund reusing a payment's id is a conflict), amount and currency.
    pub fn decide_against(&self, recorded: &Transfer) -> Result<Decision, DomainError> {
        if recorded == self {
            Ok(Decision::AlreadyApplied)
        } else {
            Err(DomainError::TransferConflict(self.id.clone()))
        }
    }
}

/// One row of the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    pub transfer: Transfer,
    pub source: Source,
    pub received_at: DateTime<Utc>,
}

impl Order {
    /// Money held that must go back: all of it on a cancelled order, otherwise what was paid
    /// beyond the amount; less what was refunded already, never below 0.
    pub fn refund_due_minor(&self) -> i64 {
        let due = match self.status {
            OrderStatus::Cancelled => self.paid_minor - self.refunded_minor,
            _ => (self.paid_minor - self.amount.minor.get()).max(0) - self.refunded_minor,
        };
        due.max(0)
    }

    /// What recording `transfer` (a payment or a refund of this order) changes.
    pub fn record(&self, transfer: &Transfer) -> Result<Change, DomainError> {
        match transfer.direction {
            Direction::In => self.record_payment(&transfer.money),
            Direction::Out => self.record_refund(&transfer.money),
        }
    }

    /// Records a payment (a fact, accepted in every status). It completes a pending order once
    /// the amount is covered; money beyond the amount or on a cancelled order needs a refund.
    pub fn record_payment(&self, money: &Money) -> Result<Change, DomainError> {
        self.check_currency(money)?;
        let paid_minor = self
            .paid_minor
            .checked_add(money.minor.get())
            .filter(|sum| *sum <= MAX_SUM_MINOR)
            .ok_or(DomainError::LedgerOverflow)?;
        let covered = paid_minor >= self.amount.minor.get();
        let status = match transition(Some(self.status), Command::CompletePayment) {
            Ok(paid) if covered => paid,
            _ => self.status,
        };
        let mut events = vec![];
        let kind = if status != self.status {
            events.push(EventType::OrderPaid);
            TransitionKind::Paid
        } else {
            TransitionKind::PaymentRecorded
        };
        let next = Order {
            status,
            paid_minor,
            ..self.clone()
        };
        let next = self.with_refund_flag(next, &mut events);
        Ok(self.changed(kind, events, next))
    }

    /// Records a refund (a fact, in every status; the status never changes). It may exceed the
    /// amount due (a goodwill refund, a returned shipment) but never the money the order holds:
    /// more is refused, and may succeed once a payment still on its way arrives.
    pub fn record_refund(&self, money: &Money) -> Result<Change, DomainError> {
        self.check_currency(money)?;
        let held = self.paid_minor - self.refunded_minor;
        if money.minor.get() > held {
            return Err(DomainError::RefundExceedsBalance {
                refund: money.minor.get(),
                held,
            });
        }
        let mut events = vec![EventType::OrderRefunded];
        let next = Order {
            refunded_minor: self.refunded_minor + money.minor.get(),
            ..self.clone()
        };
        let next = self.with_refund_flag(next, &mut events);
        Ok(self.changed(TransitionKind::RefundRecorded, events, next))
    }

    fn check_currency(&self, money: &Money) -> Result<(), DomainError> {
        if money.currency == self.amount.currency {
            Ok(())
        } else {
            Err(DomainError::CurrencyMismatch {
                order: self.amount.currency,
                transfer: money.currency,
            })
        }
    }

    /// `next` with `refund_required` as its money says. `order.refund_required` reports the flag
    /// turning on; not every payment that adds to the due amount, since how many payments it
    /// takes to get there depends on their arrival order (`docs/contract.md#invariant-5`).
    pub(super) fn with_refund_flag(&self, next: Order, events: &mut Vec<EventType>) -> Order {
        let refund_required = next.refund_due_minor() > 0;
        if refund_required && !self.refund_required {
            events.push(EventType::OrderRefundRequired);
        }
        Order {
            refund_required,
            ..next
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::fixtures::{money, order};
    use OrderStatus::*;

    /// The change `minor` EUR paid into `order` makes.
    fn paying(order: &Order, minor: i64) -> Change {
        order.record_payment(&money(minor, "EUR")).unwrap()
    }

    #[test]
    fn a_partial_payment_is_recorded_without_a_status_change_or_event() {
        let change = paying(&order(PendingPayment, 100, 0), 40);
        assert_eq!(change.kind, TransitionKind::PaymentRecorded);
        assert_eq!(change.next.status, PendingPayment);
        assert_eq!(change.next.paid_minor, 40);
        assert_eq!(change.next.version.get(), 2);
        assert!(change.events.is_empty());
    }

    #[test]
    fn a_payment_that_would_take_the_paid_sum_past_2_pow_53_minus_1_is_refused() {
        let near = order(Paid, 100, MAX_SUM_MINOR - 10);
        assert_eq!(paying(&near, 10).next.paid_minor, MAX_SUM_MINOR);
        assert_eq!(
            near.record_payment(&money(11, "EUR")),
            Err(DomainError::LedgerOverflow)
        );
        assert!(!DomainError::LedgerOverflow.may_succeed_later());
    }

    #[test]
    fn the_payment_that_covers_the_amount_makes_the_order_paid() {
        let change = paying(&order(PendingPayment, 100, 40), 60);
        assert_eq!(change.kind, TransitionKind::Paid);
        assert_eq!((change.from, change.next.status), (PendingPayment, Paid));
        assert_eq!(change.events, vec![EventType::OrderPaid]);
        assert!(!change.next.refund_required);
    }

    #[test]
    fn an_overpayment_pays_and_requires_a_refund() {
        let change = paying(&order(PendingPayment, 100, 0), 150);
        assert_eq!(change.next.status, Paid);
        assert!(change.next.refund_required);
        assert_eq!(change.next.refund_due_minor(), 50);
        assert_eq!(
            change.events,
            vec![EventType::OrderPaid, EventType::OrderRefundRequired]
        );
    }

    #[test]
    fn money_on_a_paid_shipped_or_cancelled_order_is_recorded_and_refunded_without_a_status_change()
    {
        for status in [Paid, Shipped, Cancelled] {
            let paid = if status == Cancelled { 0 } else { 100 };
            let change = paying(&order(status, 100, paid), 10);
            assert_eq!(change.kind, TransitionKind::PaymentRecorded, "{status}");
            assert_eq!(change.next.status, status);
            assert_eq!(change.next.paid_minor, paid + 10);
            assert!(change.next.refund_required);
            assert_eq!(change.next.refund_due_minor(), 10);
            assert_eq!(change.events, vec![EventType::OrderRefundRequired]);
        }
    }

    #[test]
    fn refund_required_is_announced_once_when_the_flag_turns_on() {
        let first = paying(&order(Cancelled, 100, 0), 10);
        assert_eq!(first.events, vec![EventType::OrderRefundRequired]);
        let second = paying(&first.next, 10);
        assert!(second.next.refund_required);
        assert_eq!(second.next.paid_minor, 20);
        assert!(second.events.is_empty(), "the flag was already on");
    }

    #[test]
    fn the_events_of_concurrent_payments_do_not_depend_on_their_arrival_order() {
        let start = order(PendingPayment, 100, 0);
        let payments = [money(100, "EUR"), money(30, "EUR"), money(20, "EUR")];
        let events_in = |sequence: [usize; 3]| {
            let mut current = start.clone();
            let mut events = vec![];
            for i in sequence {
                let change = current.record_payment(&payments[i]).unwrap();
                events.extend(change.events);
                current = change.next;
            }
            events.sort_by_key(|e| e.to_string());
            (
                events,
                current.paid_minor,
                current.status,
                current.refund_required,
            )
        };
        let expected = events_in([0, 1, 2]);
        for sequence in [[0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            assert_eq!(events_in(sequence), expected, "{sequence:?}");
        }
    }

    #[test]
    fn money_in_another_currency_is_refused_in_every_status_and_direction() {
        for status in [PendingPayment, Paid, Shipped, Cancelled] {
            let order = order(status, 100, 100);
            assert!(matches!(
                order.record_payment(&money(10, "USD")),
                Err(DomainError::CurrencyMismatch { .. })
            ));
            assert!(matches!(
                order.record_refund(&money(10, "USD")),
                Err(DomainError::CurrencyMismatch { .. })
            ));
        }
    }

    #[test]
    fn a_refund_lowers_the_due_amount_and_turns_the_flag_off_when_settled() {
        let overpaid = paying(&order(PendingPayment, 100, 0), 150).next;
        let part = overpaid.record_refund(&money(20, "EUR")).unwrap();
        assert_eq!(part.kind, TransitionKind::RefundRecorded);
        assert_eq!((part.from, part.next.status), (Paid, Paid));
        assert_eq!(part.next.refunded_minor, 20);
        assert_eq!(part.next.refund_due_minor(), 30);
        assert!(part.next.refund_required);
        assert_eq!(part.events, vec![EventType::OrderRefunded]);
        let rest = part.next.record_refund(&money(30, "EUR")).unwrap();
        assert_eq!(rest.next.refund_due_minor(), 0);
        assert!(!rest.next.refund_required);
        assert_eq!(rest.events, vec![EventType::OrderRefunded]);
    }

    #[test]
    fn a_refund_never_changes_the_status_and_may_exceed_the_due_amount_but_not_the_money_held() {
        for status in [PendingPayment, Paid, Shipped, Cancelled] {
            let paid = if status == PendingPayment { 60 } else { 100 };
            let held = order(status, 100, paid);
            // A goodwill refund (nothing is due on a paid or shipped order) is allowed...
            let change = held.record_refund(&money(paid, "EUR")).unwrap();
            assert_eq!(change.next.status, status);
            assert_eq!(change.next.refund_due_minor(), 0);
            // ...one cent beyond the money held is not, and may succeed once more arrives.
            let refused = held.record_refund(&money(paid + 1, "EUR")).unwrap_err();
            assert_eq!(
                refused,
                DomainError::RefundExceedsBalance {
                    refund: paid + 1,
                    held: paid
                }
            );
            assert!(refused.may_succeed_later());
        }
    }

    #[test]
    fn the_due_amount_of_a_cancelled_order_is_all_the_money_it_holds() {
        let mut cancelled = order(Cancelled, 100, 70);
        assert_eq!(cancelled.refund_due_minor(), 70);
        cancelled.refunded_minor = 50;
        assert_eq!(cancelled.refund_due_minor(), 20);
        let mut paid = order(Paid, 100, 120);
        paid.refunded_minor = 50;
        assert_eq!(paid.refund_due_minor(), 0, "never below 0");
    }

    #[test]
    fn a_recorded_transfer_replays_only_with_the_same_order_direction_amount_and_currency() {
        let recorded = Transfer::from(Payment {
            transfer_id: TransferId::parse("t-1").unwrap(),
            order_id: OrderId::generate(),
            money: money(10, "EUR"),
        });
        assert_eq!(
            recorded.decide_against(&recorded),
            Ok(Decision::AlreadyApplied)
        );
        for other in [
            Transfer {
                money: money(11, "EUR"),
                ..recorded.clone()
            },
            Transfer {
                money: money(10, "USD"),
                ..recorded.clone()
            },
            Transfer {
                order_id: OrderId::generate(),
                ..recorded.clone()
            },
            Transfer {
                direction: Direction::Out,
                ..recorded.clone()
            },
        ] {
            assert!(matches!(
                other.decide_against(&recorded),
                Err(DomainError::TransferConflict(_))
            ));
        }
    }
}
