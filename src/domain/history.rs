//! What the ledger and the history remember about each change: who caused it and when.

use chrono::{DateTime, Utc};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr};

use super::idempotency::{Fingerprint, IdempotencyKey};
use super::ids::{ClientId, EventId, OrderId};
use super::status::{OrderStatus, TransitionKind};
use super::version::Version;

/// The door a change came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum Source {
    Api,
    Amqp,
    /// The payment-expiry sweep.
    Timer,
    /// The command line (`order-service dead-letters …`).
    Cli,
}

/// Why a change happened. A REST request carries its client, key and fingerprint so that a retry
/// finds the change it made; an AMQP event carries its id for tracing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    Api {
        client: ClientId,
        key: IdempotencyKey,
        fingerprint: Fingerprint,
    },
    Amqp {
        event_id: EventId,
    },
    /// The payment-expiry sweep cancelled an order that stayed unpaid too long.
    Timer,
    /// An operator on the command line; it acts as the client [`CLI_CLIENT`], with a key of its
    /// own per invocation (or the one it was given) and the fingerprint of the equivalent REST
    /// request.
    Cli {
        key: IdempotencyKey,
        fingerprint: Fingerprint,
    },
}

/// The client the command line acts as: the scope of its Idempotency-Keys and who its actions
/// are recorded as.
pub const CLI_CLIENT: &str = "cli";

/// Where a request's Idempotency-Key lives: `(client, key)`, and the fingerprint of the request
/// that holds it.
#[derive(Debug, Clone, Copy)]
pub struct KeyScope<'a> {
    pub client: &'a str,
    pub key: &'a IdempotencyKey,
    pub fingerprint: &'a Fingerprint,
}

impl Cause {
    pub fn source(&self) -> Source {
        match self {
            Cause::Api { .. } => Source::Api,
            Cause::Amqp { .. } => Source::Amqp,
            Cause::Timer => Source::Timer,
            Cause::Cli { .. } => Source::Cli,
        }
    }

    /// The request's Idempotency-Key, for the causes that carry one (REST and the command line).
    pub fn key_scope(&self) -> Option<KeyScope<'_>> {
        match self {
            Cause::Api {
                client,
                key,
                fingerprint,
            } => Some(KeyScope {
                client: client.as_str(),
                key,
                fingerprint,
            }),
            Cause::Cli { key, fingerprint } => Some(KeyScope {
                client: CLI_CLIENT,
                key,
                fingerprint,
            }),
            Cause::Amqp { .. } | Cause::Timer => None,
        }
    }
}

/// A [`Cause`] as the history keeps it: where the change came from, and the client and key or
/// the event that asked for it (the fingerprint stays private).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedCause {
    pub source: Source,
    pub client_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub event_id: Option<String>,
}

/// One row of an order's history, as shown to readers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    pub order_id: OrderId,
    pub version: Version,
    pub kind: TransitionKind,
    pub from: Option<OrderStatus>,
    pub to: OrderStatus,
    pub cause: RecordedCause,
    pub transfer_id: Option<String>,
    pub at: DateTime<Utc>,
}
