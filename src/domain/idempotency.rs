//! Idempotency-Key values and request fingerprints.
//!
//! A key is scoped by client; the fingerprint says whether a retry is the same request
//! (method, path and canonical JSON body) or a different one reusing the key.

use std::fmt;

use sha2::{Digest, Sha256};

use super::text::ValidationError;

/// A client-chosen key, 1–255 printable ASCII characters. A structured-field string (`"abc"`,
/// RFC 8941) is accepted and unquoted, so `"abc"` and `abc` are the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub const MAX_LEN: usize = 255;

    pub fn parse(header: &str) -> Result<Self, ValidationError> {
        let bad = |reason: &str| ValidationError::new("Idempotency-Key", reason);
        let value = match header.strip_prefix('"') {
            Some(quoted) => unquote_sf_string(quoted)
                .ok_or_else(|| bad("is not a valid quoted structured-field string"))?,
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

/// SHA-256 over method, path and the canonical JSON body, hex-encoded.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Fingerprint(String);

impl Fingerprint {
    pub fn of_request(method: &str, path: &str, body: &serde_json::Value) -> Self {
        let mut canonical = String::new();
        write_canonical(body, &mut canonical);
        let mut hasher = Sha256::new();
        hasher.update(method.as_bytes());
        hasher.update(b"\n");
        hasher.update(path.as_bytes());
        hasher.update(b"\n");
        hasher.update(canonical.as_bytes());
        Self(hex::encode(hasher.finalize()))
    }

    /// A fingerprint read back from storage.
    pub fn from_stored(hex: String) -> Self {
        Self(hex)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// JSON with object keys sorted and no insignificant whitespace, whatever order the client used.
fn write_canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn the_fingerprint_ignores_key_order_and_whitespace() {
        let a = json!({"b": 1, "a": {"y": [1, 2], "x": "s"}});
        let b: serde_json::Value =
            serde_json::from_str(r#"{ "a" : {"x":"s","y":[1,2]}, "b":1 }"#).unwrap();
        assert_eq!(
            Fingerprint::of_request("POST", "/v1/orders", &a),
            Fingerprint::of_request("POST", "/v1/orders", &b)
        );
    }

    #[test]
    fn the_fingerprint_covers_method_path_and_body() {
        let body = json!({"a": 1});
        let base = Fingerprint::of_request("POST", "/v1/orders", &body);
        assert_ne!(base, Fingerprint::of_request("PUT", "/v1/orders", &body));
        assert_ne!(base, Fingerprint::of_request("POST", "/v1/other", &body));
        assert_ne!(
            base,
            Fingerprint::of_request("POST", "/v1/orders", &json!({"a": 2}))
        );
    }
}
