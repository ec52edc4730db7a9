//! Strict JSON objects: how both doors read what a client sends, a REST request body
//! (`http::extract`) and an inbound envelope and its `data` (`amqp::inbound`). Strict in the
//! ways plain serde is not (docs/decisions.md):
//!
//! - **An object, never an array.** serde reads a struct from a sequence of its fields in order,
//!   so `[null, "c", 5, "EUR"]` would place an order. A [`JsonObject`] is an object by
//!   construction, and [`JsonObject::read`] hands serde a map, never a sequence. (Request bodies
//!   and event data are flat; a struct nested in one would be read from serde_json's own value,
//!   which takes a sequence too.)
//! - **No key twice**, at any depth: with plain serde the last one wins, so two readers of one
//!   message (a proxy, a log, this service) could each see another request.
//! - **No Rust type names in what clients read.** serde describes a value of the wrong shape by
//!   the type it expected (`expected struct PlaceOrderRequest`); a client knows the shape from
//!   the documented contract, not from our type names.
//!
//! Parsing is serde_json's, so its nesting limit (128 levels) still holds; the size of what is
//! parsed is bounded by each door before it gets here.

mod client_text;
mod unique_keys;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

pub use client_text::client_text;
use unique_keys::UniqueKeys;

/// Why bytes or a value are not a strict JSON object, or not the one expected.
#[derive(Debug, thiserror::Error)]
pub enum StrictJsonError {
    /// Not JSON at all, or nested deeper than the parser allows.
    #[error("{0}")]
    Syntax(serde_json::Error),
    /// An object names one key twice (at any depth).
    #[error("{0}")]
    DuplicateKey(serde_json::Error),
    /// JSON, but an array, string, number, boolean or null where an object is expected.
    #[error("a JSON object is expected, not {0}")]
    NotAnObject(&'static str),
    /// An object, but not one the expected shape accepts (a field missing, unknown, or of the
    /// wrong type); the text names the field, never a Rust type.
    #[error("{0}")]
    Invalid(String),
}

/// A JSON object with no key twice at any depth.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonObject(Map<String, Value>);

impl JsonObject {
    /// Parses `bytes` as one JSON object, refusing a key given twice anywhere in it.
    pub fn parse(bytes: &[u8]) -> Result<Self, StrictJsonError> {
        let UniqueKeys(value) = serde_json::from_slice(bytes).map_err(|e| {
            // `UniqueKeys` accepts every JSON value, so the only data error it raises is its own
            // refusal of a repeated key; the rest are the parser's (syntax, depth).
            if e.classify() == serde_json::error::Category::Data {
                StrictJsonError::DuplicateKey(e)
            } else {
                StrictJsonError::Syntax(e)
            }
        })?;
        Self::from_value(value)
    }

    /// `value` if it is an object (one taken from a strictly parsed document, like an
    /// envelope's `data`).
    pub fn from_value(value: Value) -> Result<Self, StrictJsonError> {
        match value {
            Value::Object(map) => Ok(Self(map)),
            other => Err(StrictJsonError::NotAnObject(kind(&other))),
        }
    }

    /// Reads the object into `T`, a struct with named fields.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, StrictJsonError> {
        T::deserialize(&self.0).map_err(|e| StrictJsonError::Invalid(client_text(&e)))
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

/// What a JSON value is, as a problem or a reason names it.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Body {
        name: String,
        count: i64,
    }

    /// A struct inside a body, which the bodies of this service do not have (yet).
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Nested {
        inner: Body,
    }

    #[test]
    fn an_object_is_read_into_its_struct() {
        let object = JsonObject::parse(br#"{"count": 2, "name": "n"}"#).unwrap();
        assert_eq!(
            object.read::<Body>().unwrap(),
            Body {
                name: "n".into(),
                count: 2
            }
        );
        assert_eq!(object.into_value(), json!({"name": "n", "count": 2}));
    }

    #[test]
    fn only_an_object_is_an_object() {
        for (text, found) in [
            (r#"["n", 2]"#, "an array"),
            ("null", "null"),
            ("true", "a boolean"),
            ("2", "a number"),
            (r#""n""#, "a string"),
        ] {
            let error = JsonObject::parse(text.as_bytes()).unwrap_err();
            assert!(
                matches!(error, StrictJsonError::NotAnObject(kind) if kind == found),
                "{text}: {error:?}"
            );
            assert_eq!(
                error.to_string(),
                format!("a JSON object is expected, not {found}")
            );
        }
        assert!(JsonObject::from_value(json!(["n", 2])).is_err());
        assert!(JsonObject::from_value(json!({"name": "n"})).is_ok());
    }

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth() {
        for text in [
            r#"{"name": "a", "name": "b", "count": 1}"#,
            r#"{"name": "a", "count": 1, "na\u006de": "b"}"#,
            r#"{"outer": {"k": 1, "k": 1}}"#,
            r#"{"outer": [{"k": 1}, {"k": 1, "k": 2}]}"#,
        ] {
            let error = JsonObject::parse(text.as_bytes()).unwrap_err();
            assert!(
                matches!(error, StrictJsonError::DuplicateKey(_)),
                "{text}: {error:?}"
            );
            assert!(error.to_string().contains("appears twice"), "{error}");
        }
        // The same key in two objects is no repetition.
        assert!(JsonObject::parse(br#"{"a": {"k": 1}, "b": {"k": 1}}"#).is_ok());
    }

    #[test]
    fn malformed_or_too_deep_json_is_a_syntax_error() {
        let deep = format!(r#"{{"a": {}{}}}"#, "[".repeat(200), "]".repeat(200));
        for text in ["", "{", "{'a': 1}", "{}}", deep.as_str()] {
            let error = JsonObject::parse(text.as_bytes()).unwrap_err();
            assert!(matches!(error, StrictJsonError::Syntax(_)), "{error:?}");
        }
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_invalid_and_named_without_rust_types() {
        let object = JsonObject::parse(br#"{"name": 5, "count": 1}"#).unwrap();
        let error = object.read::<Body>().unwrap_err();
        assert!(matches!(error, StrictJsonError::Invalid(_)), "{error:?}");
        assert_eq!(
            error.to_string(),
            "invalid type: integer `5`, expected a string"
        );

        let object = JsonObject::parse(br#"{"inner": 5}"#).unwrap();
        let text = object.read::<Nested>().unwrap_err().to_string();
        assert_eq!(text, "invalid type: integer `5`, expected a JSON object");
    }
}
