//! Bounded, printable text: the shape shared by every free-text field the service accepts.

use std::fmt;

/// Why a value from outside could not become a domain value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ValidationError {
    pub field: &'static str,
    pub reason: String,
}

impl ValidationError {
    pub fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

/// The longest cancellation reason accepted, in characters, over REST and AMQP alike.
pub const MAX_REASON_CHARS: usize = 500;

/// A string of `1..=max` characters with no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoundedText(String);

impl BoundedText {
    pub fn parse(field: &'static str, value: &str, max: usize) -> Result<Self, ValidationError> {
        let chars = value.chars().count();
        if chars == 0 {
            return Err(ValidationError::new(field, "must not be empty"));
        }
        if chars > max {
            return Err(ValidationError::new(
                field,
                format!("must be at most {max} characters, got {chars}"),
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(ValidationError::new(
                field,
                "must not contain control characters",
            ));
        }
        Ok(Self(value.to_owned()))
    }

    /// Why an order is cancelled: 1–[`MAX_REASON_CHARS`] characters, the rule of both doors.
    pub fn cancellation_reason(value: &str) -> Result<Self, ValidationError> {
        Self::parse("reason", value, MAX_REASON_CHARS)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BoundedText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_unicode_up_to_the_limit_in_characters() {
        assert!(BoundedText::parse("f", "ééé", 3).is_ok());
        assert!(BoundedText::parse("f", "éééé", 3).is_err());
    }

    #[test]
    fn rejects_empty_and_control_characters() {
        assert!(BoundedText::parse("f", "", 3).is_err());
        assert!(BoundedText::parse("f", "a\nb", 3).is_err());
    }

    #[test]
    fn a_cancellation_reason_is_bounded_by_the_domain_limit() {
        assert!(BoundedText::cancellation_reason(&"r".repeat(MAX_REASON_CHARS)).is_ok());
        let error = BoundedText::cancellation_reason(&"r".repeat(MAX_REASON_CHARS + 1));
        assert_eq!(error.unwrap_err().field, "reason");
    }
}
