//! Where a replay may send a dead letter (docs/contract.md#parked-dead-letters): back to the
//! inbound exchange under the routing key it first arrived with, and only when the inbox is bound
//! to that key. Under any other key the message would be lost (no binding matches it) or
//! misrouted, and a key longer than an AMQP short string cannot be published at all: such a dead
//! letter is refused and stays parked. This is the one rule; a bulk replay selects by the same
//! keys ([`ReplayRoutes::keys`]).

/// The longest AMQP short string, in bytes: the most a routing key can hold.
const MAX_ROUTING_KEY_BYTES: usize = 255;

/// The routing keys a replay may use: those the inbox is bound to (every inbound type, given by
/// the AMQP side, which binds them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayRoutes(&'static [&'static str]);

/// Why a dead letter cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreplayable {
    #[error("its routing key is {bytes} bytes long; AMQP carries at most 255")]
    TooLong { bytes: usize },
    #[error("the inbox is bound to no routing key {0:?}")]
    NotBound(String),
}

impl ReplayRoutes {
    /// No routing key at all: every replay is refused.
    pub const NONE: Self = Self(&[]);

    pub const fn new(bound: &'static [&'static str]) -> Self {
        Self(bound)
    }

    /// The routing keys a replay may use.
    pub fn keys(&self) -> &'static [&'static str] {
        self.0
    }

    /// Whether a dead letter that arrived with `routing_key` may be replayed.
    pub fn check(&self, routing_key: &str) -> Result<(), Unreplayable> {
        if routing_key.len() > MAX_ROUTING_KEY_BYTES {
            return Err(Unreplayable::TooLong {
                bytes: routing_key.len(),
            });
        }
        if self.0.contains(&routing_key) {
            Ok(())
        } else {
            Err(Unreplayable::NotBound(routing_key.to_owned()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INBOX: ReplayRoutes = ReplayRoutes::new(&["order.placed", "payment.succeeded"]);

    #[test]
    fn a_key_the_inbox_is_bound_to_may_be_replayed() {
        assert_eq!(INBOX.check("payment.succeeded"), Ok(()));
    }

    #[test]
    fn a_foreign_or_too_long_key_is_refused() {
        assert_eq!(
            INBOX.check("order.shipped"),
            Err(Unreplayable::NotBound("order.shipped".into()))
        );
        assert_eq!(INBOX.check(""), Err(Unreplayable::NotBound(String::new())));
        assert_eq!(
            INBOX.check(&"k".repeat(300)),
            Err(Unreplayable::TooLong { bytes: 300 })
        );
        assert!(ReplayRoutes::NONE.check("order.placed").is_err());
    }
}
