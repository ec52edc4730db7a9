//! Idempotency-Key values and request fingerprints.
//!
//! A key is scoped by client; the fingerprint says whether a retry is the same request or a
//! different one reusing the key. What goes into a fingerprint is the HTTP door's business.

use std::fmt;

use super::text::ValidationError;

/// A client-chosen key, 1–255 printable ASCII characters. A structured-field string (`"abc"`,
/// RFC 8941) is accepted and unquoted, so `"abc"` and `abc` are the same key. A comma outside
/// one makes the value a list (`a, b`, as HTTP joins two fields of one name): never one key,
/// since which of them to take is a guess a retry could answer differently (docs/decisions.md).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_LEN: usize = 255;

    pub fn parse(header: &str) -> Result<Self, ValidationError> {
        let bad = |reason: &str| ValidationError::new("Idempotency-Key", reason);
        let value = match header.strip_prefix('"') {
            Some(quoted) => unquote_sf_string(quoted)
                .ok_or_else(|| bad("is not a valid quoted structured-field string"))?,
            None if header.contains(',') => {
                return Err(bad(
                    "must be one key, not a list (quote a key holding a comma)",
                ));
            }
            None => header.to_owned(),
        };
        if value.is_empty() || value.len() > Self::MAX_LEN {
            return Err(bad("must be 1 to 255 characters"));
        }
        if !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(bad("must be printable ASCII"));
        }
        Ok(Self(value))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Unquotes the rest of an sf-string after its opening quote: `\"` and `\\` are the only escapes,
/// and the closing quote must end the value.
fn unquote_sf_string(rest: &str) -> Option<String> {
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                escaped @ ('"' | '\\') => out.push(escaped),
                _ => return None,
            },
            '"' => return chars.next().is_none().then_some(out),
            other => out.push(other),
        }
    }
    None
}

/// Whether a retry is the same request as the first one: an opaque digest the door that
/// received the request computes (see `app::fingerprint`) and the store keeps; the domain only
/// compares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    /// A freshly computed fingerprint.
    pub fn new(digest: String) -> Self {
        Self(digest)
    }

    /// A fingerprint read back from storage.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_printable_ascii_of_bounded_length() {
        assert!(IdempotencyKey::parse("abc-123").is_ok());
        assert!(IdempotencyKey::parse("with space").is_ok());
        assert!(IdempotencyKey::parse("").is_err());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_err());
        assert!(IdempotencyKey::parse("tab\there").is_err());
        assert!(IdempotencyKey::parse("café").is_err());
    }

    #[test]
    fn an_unquoted_comma_makes_a_list_not_a_key() {
        for list in ["a, b", "a,b", "k,", ",k", ","] {
            let error = IdempotencyKey::parse(list).unwrap_err();
            assert!(error.to_string().contains("one key"), "{list}: {error}");
        }
        assert_eq!(IdempotencyKey::parse("\"a, b\"").unwrap().as_str(), "a, b");
    }

    #[test]
    fn a_quoted_structured_field_string_is_unquoted() {
        assert_eq!(IdempotencyKey::parse("\"abc\"").unwrap().as_str(), "abc");
        assert_eq!(
            IdempotencyKey::parse(r#""a\"b\\c""#).unwrap().as_str(),
            r#"a"b\c"#
        );
        assert!(IdempotencyKey::parse("\"unterminated").is_err());
        assert!(IdempotencyKey::parse("\"\"").is_err());
        assert!(IdempotencyKey::parse(r#""bad\escape""#).is_err());
        assert!(IdempotencyKey::parse("\"a\"trailing").is_err());
    }
}
