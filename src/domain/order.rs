//! The order aggregate and its decisions: given the current order and a command, what changes
//! (a [`Change`] to write), whether it already happened ([`Decision::AlreadyApplied`]), or why it
//! cannot ([`DomainError`]).

use chrono::{DateTime, Utc};

use super::events::EventType;
use super::ids::{CustomerId, OrderId, TransferId};
use super::money::{Currency, MAX_SUM_MINOR, Money};
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
    /// The most characters of a carrier or a tracking number.
    pub const MAX_CHARS: usize = 64;

    pub fn parse(carrier: &str, tracking_number: &str) -> Result<Self, ValidationError> {
        Ok(Self {
            carrier: BoundedText::parse("carrier", carrier, Self::MAX_CHARS)?,
            tracking_number: BoundedText::parse(
                "tracking_number",
                tracking_number,
                Self::MAX_CHARS,
            )?,
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

/// An order as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    pub id: OrderId,
    pub customer_id: CustomerId,
    pub amount: Money,
    pub status: OrderStatus,
    pub version: Version,
    /// Sum of the order's incoming ledger entries.
    pub paid_minor: i64,
    /// Sum of the order's outgoing ledger entries (refunds); never above `paid_minor`.
    pub refunded_minor: i64,
    /// `refund_due_minor() > 0`, kept with the row so readers need not recompute it.
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
    #[error("currency {transfer} differs from the order's currency {order}")]
    CurrencyMismatch { order: Currency, transfer: Currency },
    #[error(
        "the order's payments would add up to more than {MAX_SUM_MINOR} minor units (2^53 - 1), \
         the largest sum a JSON number carries exactly"
    )]
    LedgerOverflow,
    #[error("a refund of {refund} exceeds the {held} the order holds")]
    RefundExceedsBalance { refund: i64, held: i64 },
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
            DomainError::RefundExceedsBalance { .. } => "refund-exceeds-balance",
        }
    }

    /// Whether the same command may succeed later without anyone correcting it: a shipment of
    /// an order still waiting for its payment, or a refund of more than the order holds yet (the
    /// payment may be on its way). Every other refusal is final. The AMQP consumer retries the
    /// first kind and dead-letters the rest.
    pub fn may_succeed_later(&self) -> bool {
        matches!(
            self,
            DomainError::InvalidTransition {
                from: OrderStatus::PendingPayment,
                to: OrderStatus::Shipped,
            } | DomainError::RefundExceedsBalance { .. }
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
            refunded_minor: 0,
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

impl Order {
    pub(super) fn changed(
        &self,
        kind: TransitionKind,
        events: Vec<EventType>,
        next: Order,
    ) -> Change {
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

    /// Cancels a pending order. Money it already holds then needs a refund.
    pub fn cancel(&self, reason: &BoundedText) -> Result<Decision, DomainError> {
        match transition(Some(self.status), Command::Cancel) {
            Ok(to) => {
                let mut events = vec![EventType::OrderCancelled];
                let next = self.with_refund_flag(
                    Order {
                        status: to,
                        cancellation_reason: Some(reason.clone()),
                        ..self.clone()
                    },
                    &mut events,
                );
                Ok(Decision::Apply(Box::new(self.changed(
                    TransitionKind::Cancelled,
                    events,
                    next,
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

/// The cancellation reason of an order the payment-expiry sweep cancelled.
pub const PAYMENT_TIMEOUT_REASON: &str = "payment_timeout";

impl Order {
    /// Cancels an order whose payment did not complete in time, exactly as a cancellation
    /// requested by a client would (so a payment racing it either wins or is recorded on the
    /// cancelled order and flags its refund). A paid or shipped order has nothing to expire:
    /// [`DomainError::InvalidTransition`].
    pub fn expire(&self) -> Result<Decision, DomainError> {
        let reason =
            BoundedText::parse("reason", PAYMENT_TIMEOUT_REASON, usize::MAX).map_err(|_| {
                DomainError::InvalidTransition {
                    from: self.status,
                    to: OrderStatus::Cancelled,
                }
            })?;
        self.cancel(&reason)
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
    use crate::domain::fixtures::{money, order, reason, shipment};
    use OrderStatus::*;

    /// The change `decision` applies; the test fails if it is anything else.
    fn applied(decision: Result<Decision, DomainError>) -> Change {
        match decision {
            Ok(Decision::Apply(change)) => *change,
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn ship_is_legal_from_paid_only_and_replays_the_same_shipment() {
        let dhl = shipment("DHL", "T1");
        let change = applied(order(Paid, 100, 100).ship(&dhl));
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
        let change = applied(order(PendingPayment, 100, 0).cancel(&reason()));
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
        let change = applied(order(PendingPayment, 100, 30).cancel(&reason()));
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
    fn only_a_shipment_before_payment_and_a_refund_beyond_the_money_held_may_succeed_later() {
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

    #[test]
    fn expiry_cancels_a_pending_order_with_the_timeout_reason_and_nothing_else() {
        assert!(BoundedText::cancellation_reason(PAYMENT_TIMEOUT_REASON).is_ok());
        let change = applied(order(PendingPayment, 100, 30).expire());
        assert_eq!(change.next.status, Cancelled);
        assert_eq!(
            change.next.cancellation_reason.as_ref().map(|r| r.as_str()),
            Some(PAYMENT_TIMEOUT_REASON)
        );
        assert_eq!(
            change.next.refund_due_minor(),
            30,
            "partial payments go back"
        );
        assert_eq!(
            order(Cancelled, 100, 0).expire(),
            Ok(Decision::AlreadyApplied)
        );
        for status in [Paid, Shipped] {
            assert!(order(status, 100, 100).expire().is_err(), "{status}");
        }
    }
}
