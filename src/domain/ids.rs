//! Identifier newtypes. Each has a private field and a fallible `parse`, so a raw string from
//! outside never travels inward unchecked.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

use super::text::{BoundedText, ValidationError};

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $field:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Uuid);

        impl $name {
            /// A new id: a UUIDv7, so ids sort by creation time.
            pub fn generate() -> Self {
                Self(Uuid::now_v7())
            }

            pub fn from_uuid(id: Uuid) -> Self {
                Self(id)
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl FromStr for $name {
            type Err = ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::parse_str(s)
                    .map(Self)
                    .map_err(|_| ValidationError::new($field, "must be a UUID"))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

uuid_id!(
    /// An order's id: a UUID given by the client (body or event) or generated.
    OrderId,
    "order_id"
);
uuid_id!(
    /// A parked dead letter's id, generated when it is first parked.
    DeadLetterId,
    "id"
);

macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident, $field:literal, $max:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub struct $name(BoundedText);

        impl $name {
            pub const MAX_CHARS: usize = $max;

            pub fn parse(value: &str) -> Result<Self, ValidationError> {
                BoundedText::parse($field, value, $max).map(Self)
            }

            pub fn as_str(&self) -> &str {
                self.0.as_str()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

text_id!(
    /// The customer an order belongs to (1–64 characters).
    CustomerId,
    "customer_id",
    64
);
text_id!(
    /// A payment provider's id for one transfer of money; unique across the ledger.
    TransferId,
    "transfer_id",
    128
);

impl TransferId {
    /// A refund's id: the same rule (refunds share the ledger's id space), with errors naming
    /// the field the client sent.
    pub fn parse_refund_id(value: &str) -> Result<Self, ValidationError> {
        BoundedText::parse("refund_id", value, Self::MAX_CHARS).map(Self)
    }
}
text_id!(
    /// The `event_id` of an inbound AMQP envelope; kept on history rows for tracing.
    EventId,
    "event_id",
    255
);

/// The caller of the REST API; the scope of its Idempotency-Keys. 1–64 characters of
/// `A-Z a-z 0-9 . _ @ -`: it is written in `<id>:<sha256>:<scopes>` configuration entries
/// (so never `:`, `;`, `#` or a space) and appears in logs and history rows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    pub const MAX_CHARS: usize = 64;

    pub fn parse(value: &str) -> Result<Self, ValidationError> {
        let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-');
        if value.is_empty() || value.len() > Self::MAX_CHARS || !value.chars().all(allowed) {
            return Err(ValidationError::new(
                "client_id",
                "must be 1-64 characters of A-Z a-z 0-9 . _ @ -",
            ));
        }
        Ok(Self(value.to_owned()))
    }

    /// The one caller of an API that runs without authentication.
    pub fn anonymous() -> Self {
        Self("anonymous".to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_id_parses_uuids_only() {
        assert!(
            "7c9e6679-7425-40de-944b-e07fc1f90ae7"
                .parse::<OrderId>()
                .is_ok()
        );
        assert!("not-a-uuid".parse::<OrderId>().is_err());
    }

    #[test]
    fn customer_id_is_bounded() {
        assert!(CustomerId::parse(&"c".repeat(64)).is_ok());
        assert!(CustomerId::parse(&"c".repeat(65)).is_err());
        assert!(CustomerId::parse("").is_err());
    }

    #[test]
    fn a_client_id_is_up_to_64_characters_a_config_line_can_hold() {
        for good in [
            "shop",
            "billing.eu-1",
            "ops@example.org",
            "a_b",
            &"c".repeat(64),
        ] {
            assert_eq!(ClientId::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "sh op", "a:b", "a;b", "a#b", "café", &"c".repeat(65)] {
            assert!(ClientId::parse(bad).is_err(), "{bad:?}");
        }
        assert!(ClientId::parse(ClientId::anonymous().as_str()).is_ok());
    }
}
