//! The decision table of the consumer: what to do with a message given how its command ended.
//! One function, matched exhaustively, so a new outcome cannot slip through unhandled. Every
//! reason it gives starts with its class (`premature: …`, `conflict: …`), the first word the
//! parked dead letters are grouped by (`domain::ReasonClass`).

use crate::app::{AppError, Outcome};
use crate::domain::ReasonClass;
use crate::telemetry::error_chain;

/// What happens to a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Applied now or before: acknowledge.
    Ack { outcome: &'static str },
    /// Premature (its order, or the order's payment, has not arrived yet): try again later. When
    /// the attempts run out it is dead-lettered with this reason.
    Retry { reason: String },
    /// Can never apply: move to the dead-letter queue with the reason.
    DeadLetter { reason: String },
    /// A dependency is down: keep the message unacknowledged, back off, try again in place.
    Wait { reason: String },
}

pub fn disposition_of<T>(result: &Result<Outcome<T>, AppError>) -> Disposition {
    let dead = |reason: String| Disposition::DeadLetter {
        reason: ReasonClass::Conflict.reason(&reason),
    };
    let premature = |reason: String| Disposition::Retry {
        reason: ReasonClass::Premature.reason(&reason),
    };
    match result {
        Ok(outcome @ (Outcome::Applied(_) | Outcome::AlreadyApplied(_) | Outcome::Replayed(_))) => {
            Disposition::Ack {
                outcome: outcome.label(),
            }
        }
        Err(AppError::NotFound(id)) => premature(format!("order {id} does not exist yet")),
        // The domain says which refusals may succeed later (a shipment whose payment is still on
        // its way); the rest can never apply.
        Err(AppError::Refused { reason, .. }) if reason.may_succeed_later() => {
            premature(reason.to_string())
        }
        Err(AppError::Refused { reason, .. }) => dead(reason.to_string()),
        // Events carry no Idempotency-Key and no If-Match, and do not act on dead letters; should
        // one of these appear, it cannot succeed.
        Err(
            e @ (AppError::KeyReused
            | AppError::PreconditionFailed { .. }
            | AppError::DeadLetterNotFound(_)
            | AppError::NotParked { .. }
            | AppError::Unreplayable { .. }),
        ) => dead(e.to_string()),
        Err(AppError::Busy) => Disposition::Wait {
            reason: "the order is locked by a concurrent transaction".into(),
        },
        Err(e @ AppError::Unavailable(_)) => Disposition::Wait {
            reason: error_chain(e),
        },
        // Unknown failures are retried a bounded number of times, then dead-lettered.
        Err(e @ (AppError::Unexpected(_) | AppError::Invariant(_))) => Disposition::Retry {
            reason: ReasonClass::Unexpected.reason(&error_chain(e)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Currency, DomainError, OrderId, OrderStatus, TransferId};
    use crate::store::StoreError;

    fn refused(reason: DomainError) -> Result<Outcome<()>, AppError> {
        Err(AppError::Refused {
            reason,
            current_status: None,
            current_version: None,
        })
    }

    #[test]
    fn applied_and_already_applied_are_acknowledged() {
        assert!(matches!(
            disposition_of(&Ok(Outcome::Applied(()))),
            Disposition::Ack { .. }
        ));
        assert!(matches!(
            disposition_of(&Ok(Outcome::AlreadyApplied(()))),
            Disposition::Ack { .. }
        ));
    }

    /// The class a disposition's reason starts with.
    fn class(disposition: &Disposition) -> ReasonClass {
        match disposition {
            Disposition::Retry { reason }
            | Disposition::DeadLetter { reason }
            | Disposition::Wait { reason } => ReasonClass::of(reason),
            Disposition::Ack { .. } => ReasonClass::Other,
        }
    }

    #[test]
    fn premature_messages_are_retried() {
        for premature in [
            disposition_of::<()>(&Err(AppError::NotFound(OrderId::generate()))),
            disposition_of(&refused(DomainError::InvalidTransition {
                from: OrderStatus::PendingPayment,
                to: OrderStatus::Shipped,
            })),
        ] {
            assert!(matches!(premature, Disposition::Retry { .. }));
            assert_eq!(class(&premature), ReasonClass::Premature, "{premature:?}");
        }
    }

    #[test]
    fn unexpected_failures_are_retried_as_such() {
        let unexpected = disposition_of::<()>(&Err(AppError::Invariant("broken")));
        assert!(matches!(unexpected, Disposition::Retry { .. }));
        assert_eq!(class(&unexpected), ReasonClass::Unexpected);
    }

    #[test]
    fn terminal_conflicts_are_dead_lettered() {
        let eur = Currency::parse("EUR").unwrap();
        let usd = Currency::parse("USD").unwrap();
        for reason in [
            DomainError::InvalidTransition {
                from: OrderStatus::Paid,
                to: OrderStatus::Cancelled,
            },
            DomainError::InvalidTransition {
                from: OrderStatus::Cancelled,
                to: OrderStatus::Shipped,
            },
            DomainError::OrderConflict(OrderId::generate()),
            DomainError::ShipmentConflict,
            DomainError::TransferConflict(TransferId::parse("t").unwrap()),
            DomainError::CurrencyMismatch {
                order: eur,
                transfer: usd,
            },
        ] {
            let disposition = disposition_of(&refused(reason.clone()));
            assert!(
                matches!(disposition, Disposition::DeadLetter { .. }),
                "{reason}"
            );
            assert_eq!(class(&disposition), ReasonClass::Conflict, "{reason}");
        }
    }

    #[test]
    fn an_unavailable_database_keeps_the_message_in_place() {
        assert!(matches!(
            disposition_of::<()>(&Err(AppError::Unavailable(StoreError::Unavailable(
                sqlx::Error::PoolTimedOut
            )))),
            Disposition::Wait { .. }
        ));
        assert!(matches!(
            disposition_of::<()>(&Err(AppError::Busy)),
            Disposition::Wait { .. }
        ));
    }
}
