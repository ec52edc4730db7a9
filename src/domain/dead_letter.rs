//! Parked dead letters (docs/contract.md#parked-dead-letters): their statuses, the actions
//! an operator takes on them, the one rule that says when two dead letters are the same message,
//! and the one rule that classes a reason.

use sha2::{Digest, Sha256};
use strum::{AsRefStr, Display, EnumString, IntoStaticStr, VariantArray};

use super::text::{BoundedText, ValidationError};

/// The most dead letters one bulk replay takes; a larger selection needs several calls (the rest
/// stay parked for the next one).
pub const MAX_BULK_REPLAY: usize = 1_000;

/// The longest reason stored, in bytes; a longer one is cut where it is read from a message.
pub const MAX_REASON_BYTES: usize = 1_024;

/// The header that stands, in a retry, a dead letter or what people see of one, for headers too
/// large or too deep to carry on: their size in bytes (docs/hostile-input.md).
pub const HEADERS_DROPPED_HEADER: &str = "x-original-headers-dropped";

/// Where a dead letter is: waiting for an operator, sent back to the inbox, or dropped. Dead-lettered
/// again, it is `Parked` again whatever it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum DeadLetterStatus {
    Parked,
    Replayed,
    Discarded,
}

/// What an operator did to dead letters. Only a parked dead letter can be acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Display, EnumString, AsRefStr, IntoStaticStr)]
#[strum(serialize_all = "snake_case")]
pub enum DeadLetterAction {
    Replay,
    Discard,
}

impl DeadLetterAction {
    /// The status an action leaves a dead letter in.
    pub fn status(self) -> DeadLetterStatus {
        match self {
            DeadLetterAction::Replay => DeadLetterStatus::Replayed,
            DeadLetterAction::Discard => DeadLetterStatus::Discarded,
        }
    }
}

/// Why a message died, in a word: the first part of every reason, `<class>: <detail>`. The service
/// writes its own reasons with [`ReasonClass::reason`]; a broker dead letter is named by its
/// `x-death` reason; [`ReasonClass::of`] reads the class back from the text.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Display,
    EnumString,
    AsRefStr,
    IntoStaticStr,
    VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum ReasonClass {
    /// It can never apply: not JSON, not an envelope, an unknown type, invalid data, too large.
    Poison,
    /// It came too early (its order, or the money it returns, had not arrived) every time it was
    /// tried, until the attempts ran out.
    Premature,
    /// The domain refused it for good: an id reused with other content, an invalid transition, …
    Conflict,
    /// An unexpected failure, every time it was tried, until the attempts ran out.
    Unexpected,
    /// The broker gave up: delivered `AMQP_DELIVERY_LIMIT` times without being settled.
    DeliveryLimit,
    /// The broker gave up: its time to live ran out in a queue.
    Expired,
    /// The broker gave up: a consumer rejected it without requeueing.
    Rejected,
    /// The broker gave up: the queue was full.
    Maxlen,
    /// Anything else (a reason without a known class, or none).
    Other,
}

impl ReasonClass {
    /// `<class>: <detail>`: how every reason is written.
    pub fn reason(self, detail: &str) -> String {
        format!("{self}: {detail}")
    }

    /// The class a reason starts with (`premature: order … does not exist yet` is premature);
    /// [`ReasonClass::Other`] when it starts with none.
    pub fn of(reason: &str) -> Self {
        reason
            .split_once(':')
            .and_then(|(class, _)| class.parse().ok())
            .unwrap_or(ReasonClass::Other)
    }
}

/// What makes two dead letters the same message: its AMQP `message_id` when it has one (not
/// empty), otherwise its routing key and body. Stored as a SHA-256, the unique key of the parked
/// dead letters; each case hashes a distinct prefix so the two can never collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeadLetterIdentity([u8; 32]);

impl DeadLetterIdentity {
    pub fn of(message_id: Option<&str>, routing_key: &str, body: &[u8]) -> Self {
        let mut hasher = Sha256::new();
        match message_id.filter(|id| !id.is_empty()) {
            Some(id) => {
                hasher.update(b"message_id\0");
                hasher.update(id.as_bytes());
            }
            None => {
                hasher.update(b"body\0");
                hasher.update(routing_key.as_bytes());
                hasher.update(b"\0");
                hasher.update(body);
            }
        }
        Self(hasher.finalize().into())
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The most characters of an operator's note on an action (a discard's reason, say).
pub const MAX_NOTE_CHARS: usize = 500;

/// An operator's note on a replay or a discard: why (1–500 characters), kept with the action.
pub fn action_note(value: &str) -> Result<BoundedText, ValidationError> {
    BoundedText::parse("note", value, MAX_NOTE_CHARS)
}

/// A `reason` filter: a substring of the reasons sought, 1–[`MAX_REASON_BYTES`] characters.
pub fn reason_filter(value: &str) -> Result<BoundedText, ValidationError> {
    BoundedText::parse("reason", value, MAX_REASON_BYTES)
}

/// The longest event type a `type` filter names, in characters.
pub const MAX_TYPE_FILTER_CHARS: usize = 255;

/// A `type` filter: an event type, 1–[`MAX_TYPE_FILTER_CHARS`] characters.
pub fn type_filter(value: &str) -> Result<BoundedText, ValidationError> {
    BoundedText::parse("type", value, MAX_TYPE_FILTER_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_message_id_is_the_same_message_whatever_its_body_or_routing_key() {
        let a = DeadLetterIdentity::of(Some("ev-1"), "payment.succeeded", b"{}");
        assert_eq!(a, DeadLetterIdentity::of(Some("ev-1"), "other", b"other"));
        assert_ne!(
            a,
            DeadLetterIdentity::of(Some("ev-2"), "payment.succeeded", b"{}")
        );
    }

    #[test]
    fn without_a_message_id_the_routing_key_and_body_decide() {
        let a = DeadLetterIdentity::of(None, "payment.succeeded", b"{poison");
        assert_eq!(
            a,
            DeadLetterIdentity::of(Some(""), "payment.succeeded", b"{poison")
        );
        assert_ne!(a, DeadLetterIdentity::of(None, "order.placed", b"{poison"));
        assert_ne!(
            a,
            DeadLetterIdentity::of(None, "payment.succeeded", b"{poison!")
        );
        // The separator keeps the key and the body apart: "a" + "bc" is not "ab" + "c".
        assert_ne!(
            DeadLetterIdentity::of(None, "a", b"bc"),
            DeadLetterIdentity::of(None, "ab", b"c")
        );
    }

    #[test]
    fn a_message_id_never_collides_with_a_body() {
        // The same bytes hashed as a message id and as a body give different identities.
        assert_ne!(
            DeadLetterIdentity::of(Some("x"), "", b""),
            DeadLetterIdentity::of(None, "", b"x")
        );
    }

    #[test]
    fn a_reason_is_classed_by_its_first_word() {
        for class in ReasonClass::VARIANTS {
            let reason = class.reason("some detail: with colons");
            assert_eq!(ReasonClass::of(&reason), *class, "{reason}");
        }
        assert_eq!(
            ReasonClass::of("premature: order 1 does not exist yet (gave up after 10 attempts)"),
            ReasonClass::Premature
        );
        assert_eq!(
            ReasonClass::of("delivery_limit: delivered 20 times without being settled"),
            ReasonClass::DeliveryLimit
        );
    }

    #[test]
    fn a_reason_without_a_known_class_is_other() {
        for reason in [
            "",
            "not a JSON envelope: expected value",
            "Poison: capitalised",
            "poison",
            " poison: leading space",
        ] {
            assert_eq!(ReasonClass::of(reason), ReasonClass::Other, "{reason:?}");
        }
    }

    #[test]
    fn an_action_leaves_its_status() {
        assert_eq!(
            DeadLetterAction::Replay.status(),
            DeadLetterStatus::Replayed
        );
        assert_eq!(
            DeadLetterAction::Discard.status(),
            DeadLetterStatus::Discarded
        );
    }
}
