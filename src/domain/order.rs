//! The order aggregate and its decisions: given the current order and a command, what changes
//! (a [`Change`] to write), whether it already happened ([`Decision::AlreadyApplied`]), or why it
//! cannot ([`DomainError`]).

use chrono::{DateTime, Utc};

use super::events::EventType;
use super::ids::{CustomerId, OrderId, TransferId};
use super::money::{Currency, Money};
use super::status::{Command, OrderStatus, Refusal, TransitionKind, transition};
use super::text::{BoundedText, ValidationError};
use super::version::Version;

/// A carrier and its tracking number, each 1–64 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shipment {
    pub carrier: BoundedText,
    pub tracking_number: BoundedText,
}

impl Shipment {
    pub fn parse(carrier: &str, tracking_number: &str) -> Result<Self, ValidationError> {
        Ok(Self {
            carrier: BoundedText::parse("carrier", carrier, 64)?,
            tracking_number: BoundedText::parse("tracking_number", tracking_number, 64)?,
        })
    }
}

/// What a client asks for when it places an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    pub id: OrderId,
    pub customer_id: CustomerId,
    pub amount: Money,
}

/// One transfer of money towards an order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payment {
    pub transfer_id: TransferId,
    pub order_id: OrderId,
    pub money: Money,
}

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: OrderId,
    pub customer_id: CustomerId,
    pub amount: Money,
    pub status: OrderStatus,
    pub version: Version,
    pub paid_minor: i64,
    pub refund_required: bool,
    pub shipment: Option<Shipment>,
    pub cancellation_reason: Option<BoundedText>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A change to write with one guarded update: `next` replaces an order whose status and version
/// are still `from` and `from_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: TransitionKind,
    pub from: OrderStatus,
    pub from_version: Version,
    pub next: Order,
    pub events: Vec<EventType>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Apply(Box<Change>),
    AlreadyApplied,
}

/// Why a command is refused. Both doors map these exhaustively.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainError {
    #[error("an order cannot move from {from} to {to}")]
    InvalidTransition { from: OrderStatus, to: OrderStatus },
    #[error("order {0} already exists with other content")]
    OrderConflict(OrderId),
    #[error("the order is already shipped with another carrier or tracking number")]
    ShipmentConflict,
    #[error("transfer {0} was already recorded with other content")]
    TransferConflict(TransferId),
    #[error("payment currency {payment} differs from the order's currency {order}")]
    CurrencyMismatch { order: Currency, payment: Currency },
    #[error("the order's ledger total would overflow")]
    LedgerOverflow,
}

impl DomainError {
    /// A stable, kebab-case name of the refusal: the problem type's slug over REST and the
    /// `reason` label of `order_conflicts_total`, whichever door the command came through.
    pub fn code(&self) -> &'static str {
        match self {
            DomainError::InvalidTransition { .. } => "invalid-transition",
            DomainError::OrderConflict(_) => "order-conflict",
            DomainError::ShipmentConflict => "shipment-conflict",
            DomainError::TransferConflict(_) => "transfer-conflict",
            DomainError::CurrencyMismatch { .. } => "currency-mismatch",
            DomainError::LedgerOverflow => "ledger-overflow",
        }
    }

    /// Whether the same command may succeed later without anyone correcting it: a shipment of
    /// an order still waiting for its payment (the payment may be on its way). Every other
    /// refusal is final. The AMQP consumer retries the first kind and dead-letters the rest.
    pub fn may_succeed_later(&self) -> bool {
        matches!(
            self,
            DomainError::InvalidTransition {
                from: OrderStatus::PendingPayment,
                to: OrderStatus::Shipped,
            }
        )
    }
}

impl NewOrder {
    /// The first version of the order and the event that announces it.
    pub fn into_order(self, now: DateTime<Utc>) -> Order {
        Order {
            id: self.id,
            customer_id: self.customer_id,
            amount: self.amount,
            status: OrderStatus::PendingPayment,
            version: Version::FIRST,
            paid_minor: 0,
            refund_required: false,
            shipment: None,
            cancellation_reason: None,
            created_at: now,
            updated_at: now,
        }
    }

    /// Placing an order whose id exists: a replay when the content matches, a conflict otherwise.
    pub fn decide_against(&self, existing: &Order) -> Result<Decision, DomainError> {
        debug_assert_eq!(
            transition(Some(existing.status), Command::Place),
            Err(Refusal::AlreadyThere)
        );
        if existing.customer_id == self.customer_id && existing.amount == self.amount {
            Ok(Decision::AlreadyApplied)
        } else {
            Err(DomainError::OrderConflict(self.id))
        }
    }
}

impl Payment {
    /// A recorded transfer with the same id is a replay only if everything else matches too.
    pub fn decide_against(&self, recorded: &Payment) -> Result<Decision, DomainError> {
        if recorded == self {
            Ok(Decision::AlreadyApplied)
        } else {
            Err(DomainError::TransferConflict(self.transfer_id.clone()))
        }
    }
}

impl Order {
    fn changed(&self, kind: TransitionKind, events: Vec<EventType>, next: Order) -> Change {
        Change {
            kind,
            from: self.status,
            from_version: self.version,
            next: Order {
                version: self.version.next(),
                ..next
            },
            events,
        }
    }

    /// Records a payment (a fact, accepted in every status). It completes a pending order once
    /// the amount is covered; money beyond the amount or on a cancelled order needs a refund.
    pub fn record_payment(&self, money: &Money) -> Result<Change, DomainError> {
        if money.currency != self.amount.currency {
            return Err(DomainError::CurrencyMismatch {
                order: self.amount.currency,
                payment: money.currency,
            });
        }
        let paid_minor = self
            .paid_minor
            .checked_add(money.minor.get())
            .ok_or(DomainError::LedgerOverflow)?;
        let covered = paid_minor >= self.amount.minor.get();
        let status = match transition(Some(self.status), Command::CompletePayment) {
            Ok(paid) if covered => paid,
            _ => self.status,
        };
        let needs_refund =
            self.status == OrderStatus::Cancelled || paid_minor > self.amount.minor.get();

        let mut events = vec![];
        let kind = if status != self.status {
            events.push(EventType::OrderPaid);
            TransitionKind::Paid
        } else {
            TransitionKind::PaymentRecorded
        };
        // The event reports the flag turning on, once per order: how many payments it takes to
        // get there depends on their arrival order, and the events must not (DESIGN.md §4.5).
        if needs_refund && !self.refund_required {
            events.push(EventType::OrderRefundRequired);
        }
        let next = Order {
            status,
            paid_minor,
            refund_required: self.refund_required || needs_refund,
            ..self.clone()
        };
        Ok(self.changed(kind, events, next))
    }

    pub fn ship(&self, shipment: &Shipment) -> Result<Decision, DomainError> {
        match transition(Some(self.status), Command::Ship) {
            Ok(to) => Ok(Decision::Apply(Box::new(self.changed(
                TransitionKind::Shipped,
                vec![EventType::OrderShipped],
                Order {
                    status: to,
                    shipment: Some(shipment.clone()),
                    ..self.clone()
                },
            )))),
            Err(Refusal::AlreadyThere) if self.shipment.as_ref() == Some(shipment) => {
                Ok(Decision::AlreadyApplied)
            }
            Err(Refusal::AlreadyThere) => Err(DomainError::ShipmentConflict),
            Err(Refusal::Invalid { to }) => Err(DomainError::InvalidTransition {
                from: self.status,
                to,
            }),
            Err(Refusal::NoChange) => unreachable_refusal(self.status, Command::Ship),
        }
    }

    /// Cancels a pending order. Partial payments already received then need a refund.
    pub fn cancel(&self, reason: &BoundedText) -> Result<Decision, DomainError> {
        match transition(Some(self.status), Command::Cancel) {
            Ok(to) => {
                let needs_refund = self.paid_minor > 0;
                let mut events = vec![EventType::OrderCancelled];
                if needs_refund && !self.refund_required {
                    events.push(EventType::OrderRefundRequired);
                }
                Ok(Decision::Apply(Box::new(self.changed(
                    TransitionKind::Cancelled,
                    events,
                    Order {
                        status: to,
                        cancellation_reason: Some(reason.clone()),
                        refund_required: self.refund_required || needs_refund,
                        ..self.clone()
                    },
                ))))
            }
            Err(Refusal::AlreadyThere) => Ok(Decision::AlreadyApplied),
            Err(Refusal::Invalid { to }) => Err(DomainError::InvalidTransition {
                from: self.status,
                to,
            }),
            Err(Refusal::NoChange) => unreachable_refusal(self.status, Command::Cancel),
        }
    }
}

/// The table never answers `NoChange` for ship or cancel from an existing order; should it ever
/// (a future edit of the table), refusing as an invalid transition is the safe reading.
fn unreachable_refusal(from: OrderStatus, command: Command) -> Result<Decision, DomainError> {
    let to = match command {
        Command::Ship => OrderStatus::Shipped,
        _ => OrderStatus::Cancelled,
    };
    Err(DomainError::InvalidTransition { from, to })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::AmountMinor;

    fn money(minor: i64, currency: &str) -> Money {
        Money::new(
            AmountMinor::parse(minor).unwrap(),
            Currency::parse(currency).unwrap(),
        )
    }

    fn order(status: OrderStatus, amount: i64, paid: i64) -> Order {
        let mut order = NewOrder {
            id: OrderId::generate(),
            customer_id: CustomerId::parse("c-1").unwrap(),
            amount: money(amount, "EUR"),
        }
        .into_order(Utc::now());
        order.status = status;
        order.paid_minor = paid;
        if status == OrderStatus::Shipped {
            order.shipment = Some(shipment("DHL", "T1"));
        }
        order
    }

    fn shipment(carrier: &str, tracking: &str) -> Shipment {
        Shipment::parse(carrier, tracking).unwrap()
    }

    fn reason() -> BoundedText {
        BoundedText::parse("reason", "changed my mind", 500).unwrap()
    }

    use OrderStatus::*;

    #[test]
    fn a_partial_payment_is_recorded_without_a_status_change_or_event() {
        let change = order(PendingPayment, 100, 0)
            .record_payment(&money(40, "EUR"))
            .unwrap();
        assert_eq!(change.kind, TransitionKind::PaymentRecorded);
        assert_eq!(change.next.status, PendingPayment);
        assert_eq!(change.next.paid_minor, 40);
        assert_eq!(change.next.version.get(), 2);
        assert!(change.events.is_empty());
    }

    #[test]
    fn the_payment_that_covers_the_amount_makes_the_order_paid() {
        let change = order(PendingPayment, 100, 40)
            .record_payment(&money(60, "EUR"))
            .unwrap();
        assert_eq!(change.kind, TransitionKind::Paid);
        assert_eq!((change.from, change.next.status), (PendingPayment, Paid));
        assert_eq!(change.events, vec![EventType::OrderPaid]);
        assert!(!change.next.refund_required);
    }

    #[test]
    fn an_overpayment_pays_and_requires_a_refund() {
        let change = order(PendingPayment, 100, 0)
            .record_payment(&money(150, "EUR"))
            .unwrap();
        assert_eq!(change.next.status, Paid);
        assert!(change.next.refund_required);
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
            let change = order(status, 100, paid)
                .record_payment(&money(10, "EUR"))
                .unwrap();
            assert_eq!(change.kind, TransitionKind::PaymentRecorded, "{status}");
            assert_eq!(change.next.status, status);
            assert_eq!(change.next.paid_minor, paid + 10);
            assert!(change.next.refund_required);
            assert_eq!(change.events, vec![EventType::OrderRefundRequired]);
        }
    }

    #[test]
    fn refund_required_is_announced_once_when_the_flag_turns_on() {
        let first = order(Cancelled, 100, 0)
            .record_payment(&money(10, "EUR"))
            .unwrap();
        assert_eq!(first.events, vec![EventType::OrderRefundRequired]);
        let second = first.next.record_payment(&money(10, "EUR")).unwrap();
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
    fn a_payment_in_another_currency_is_refused_in_every_status() {
        for status in [PendingPayment, Paid, Shipped, Cancelled] {
            assert!(matches!(
                order(status, 100, 100).record_payment(&money(10, "USD")),
                Err(DomainError::CurrencyMismatch { .. })
            ));
        }
    }

    #[test]
    fn ship_is_legal_from_paid_only_and_replays_the_same_shipment() {
        let dhl = shipment("DHL", "T1");
        let Decision::Apply(change) = order(Paid, 100, 100).ship(&dhl).unwrap() else {
            panic!("expected a change");
        };
        assert_eq!(change.next.status, Shipped);
        assert_eq!(change.next.shipment, Some(dhl.clone()));
        assert_eq!(change.events, vec![EventType::OrderShipped]);

        assert_eq!(
            order(Shipped, 100, 100).ship(&dhl),
            Ok(Decision::AlreadyApplied)
        );
        assert_eq!(
            order(Shipped, 100, 100).ship(&shipment("UPS", "T1")),
            Err(DomainError::ShipmentConflict)
        );
        for status in [PendingPayment, Cancelled] {
            assert_eq!(
                order(status, 100, 0).ship(&dhl),
                Err(DomainError::InvalidTransition {
                    from: status,
                    to: Shipped
                })
            );
        }
    }

    #[test]
    fn cancel_is_legal_from_pending_only_and_replays_when_cancelled() {
        let Decision::Apply(change) = order(PendingPayment, 100, 0).cancel(&reason()).unwrap()
        else {
            panic!("expected a change");
        };
        assert_eq!(change.next.status, Cancelled);
        assert_eq!(change.events, vec![EventType::OrderCancelled]);
        assert!(!change.next.refund_required);

        assert_eq!(
            order(Cancelled, 100, 0).cancel(&reason()),
            Ok(Decision::AlreadyApplied)
        );
        for status in [Paid, Shipped] {
            assert_eq!(
                order(status, 100, 100).cancel(&reason()),
                Err(DomainError::InvalidTransition {
                    from: status,
                    to: Cancelled
                })
            );
        }
    }

    #[test]
    fn cancelling_a_partly_paid_order_requires_a_refund() {
        let Decision::Apply(change) = order(PendingPayment, 100, 30).cancel(&reason()).unwrap()
        else {
            panic!("expected a change");
        };
        assert!(change.next.refund_required);
        assert_eq!(
            change.events,
            vec![EventType::OrderCancelled, EventType::OrderRefundRequired]
        );
    }

    #[test]
    fn placing_an_existing_id_replays_only_with_the_same_content() {
        let existing = order(Paid, 100, 100);
        let same = NewOrder {
            id: existing.id,
            customer_id: existing.customer_id.clone(),
            amount: existing.amount,
        };
        assert_eq!(same.decide_against(&existing), Ok(Decision::AlreadyApplied));
        let other = NewOrder {
            amount: money(101, "EUR"),
            ..same
        };
        assert_eq!(
            other.decide_against(&existing),
            Err(DomainError::OrderConflict(existing.id))
        );
    }

    #[test]
    fn a_recorded_transfer_replays_only_with_the_same_order_amount_and_currency() {
        let recorded = Payment {
            transfer_id: TransferId::parse("t-1").unwrap(),
            order_id: OrderId::generate(),
            money: money(10, "EUR"),
        };
        assert_eq!(
            recorded.decide_against(&recorded),
            Ok(Decision::AlreadyApplied)
        );
        for other in [
            Payment {
                money: money(11, "EUR"),
                ..recorded.clone()
            },
            Payment {
                money: money(10, "USD"),
                ..recorded.clone()
            },
            Payment {
                order_id: OrderId::generate(),
                ..recorded.clone()
            },
        ] {
            assert!(matches!(
                other.decide_against(&recorded),
                Err(DomainError::TransferConflict(_))
            ));
        }
    }

    #[test]
    fn only_a_shipment_before_payment_may_succeed_later() {
        let premature = order(PendingPayment, 100, 0)
            .ship(&shipment("DHL", "T1"))
            .unwrap_err();
        assert!(premature.may_succeed_later(), "{premature}");
        let after_cancel = order(Cancelled, 100, 0)
            .ship(&shipment("DHL", "T1"))
            .unwrap_err();
        assert!(!after_cancel.may_succeed_later(), "{after_cancel}");
        let after_pay = order(Paid, 100, 100).cancel(&reason()).unwrap_err();
        assert!(!after_pay.may_succeed_later(), "{after_pay}");
        let conflict = order(Shipped, 100, 100)
            .ship(&shipment("UPS", "T2"))
            .unwrap_err();
        assert!(!conflict.may_succeed_later(), "{conflict}");
    }
}
