//! The pure core of order-service: identifiers, money, the order state machine and the decisions
//! it makes. Nothing here performs I/O or knows about HTTP, AMQP or SQL; both doors and the store
//! speak in these types.

mod dead_letter;
mod events;
#[cfg(test)]
mod fixtures;
mod history;
mod idempotency;
mod ids;
mod ledger;
mod money;
mod order;
mod replay_routes;
mod status;
mod text;
mod version;

pub use dead_letter::{
    DeadLetterAction, DeadLetterIdentity, DeadLetterStatus, HEADERS_DROPPED_HEADER,
    MAX_BULK_REPLAY, MAX_NOTE_CHARS, MAX_REASON_BYTES, MAX_TYPE_FILTER_CHARS, ReasonClass,
    action_note, reason_filter, type_filter,
};
pub use events::EventType;
pub use history::{CLI_CLIENT, Cause, HistoryEntry, KeyScope, RecordedCause, Source};
pub use idempotency::{Fingerprint, IdempotencyKey};
pub use ids::{ClientId, CustomerId, DeadLetterId, EventId, OrderId, TransferId};
pub use ledger::{Direction, LedgerEntry, Payment, Refund, Transfer};
pub use money::{AmountMinor, Currency, MAX_SUM_MINOR, Money};
pub use order::{Change, Decision, DomainError, NewOrder, Order, PAYMENT_TIMEOUT_REASON, Shipment};
pub use replay_routes::{ReplayRoutes, Unreplayable};
pub use status::{Command, OrderStatus, Refusal, TransitionKind, transition};
pub use text::{BoundedText, MAX_REASON_CHARS, ValidationError};
pub use version::{Version, VersionMatch};
