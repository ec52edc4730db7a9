//! Strict JSON objects: how both doors read what a client sends, a REST request body
//! (`http::extract`) and an inbound envelope and its `data` (`amqp::envelope`). Strict in the
//! ways plain serde is not (README "Where the contract was silent"):
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

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

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
            // The visitor below accepts every JSON value, so the only data error it raises is
            // its own refusal of a repeated key; the rest are the parser's (syntax, depth).
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

    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
}

/// serde's account of a value that does not fit, in words a client can act on: when it names
/// the Rust type it expected (`expected i64`, `expected struct PaymentRequest with 3 elements`,
/// `expected enum …`, a path with `::`), that part is replaced by the JSON it stands for.
pub fn client_text(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let Some((found, expected)) = text.split_once(", expected ") else {
        return if names_a_type(&text) {
            SHAPELESS.to_owned()
        } else {
            text
        };
    };
    let shape = if let Some(json) = primitive_as_json(expected) {
        json
    } else if expected.contains("struct ") {
        "a JSON object"
    } else if names_a_type(expected) {
        "another value"
    } else {
        expected
    };
    if names_a_type(found) {
        return SHAPELESS.to_owned();
    }
    format!("{found}, expected {shape}")
}

/// What a text says when all it could say would name a Rust type.
const SHAPELESS: &str = "a value does not have the documented shape";

fn names_a_type(text: &str) -> bool {
    text.contains("struct ") || text.contains("enum ") || text.contains("::")
}

/// The JSON a Rust primitive type that serde names as expected stands for.
fn primitive_as_json(expected: &str) -> Option<&'static str> {
    match expected {
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => Some("an integer"),
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => Some("a non-negative integer"),
        "f32" | "f64" => Some("a number"),
        "char" => Some("a single character"),
        _ => None,
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

/// A JSON value whose objects, at every depth, name each key once.
struct UniqueKeys(Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(UniqueKeysVisitor)
            .map(UniqueKeys)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity; serde_json's own `Value` maps them to null as well.
        Ok(serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(UniqueKeys(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key {key:?} appears twice"
                )));
            }
            let UniqueKeys(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn serde_texts_naming_a_type_are_rewritten() {
        let error = |text: &str| <serde_json::Error as de::Error>::custom(text);
        for (serde, client) in [
            (
                "invalid length 0, expected struct PlaceOrderRequest with 4 elements",
                "invalid length 0, expected a JSON object",
            ),
            (
                "invalid type: string \"x\", expected enum DeadLetterStatusView",
                "invalid type: string \"x\", expected another value",
            ),
            (
                "a crate::domain::Money went wrong",
                "a value does not have the documented shape",
            ),
            (
                "invalid type: sequence, expected i64",
                "invalid type: sequence, expected an integer",
            ),
            (
                "invalid value: integer `-1`, expected u16",
                "invalid value: integer `-1`, expected a non-negative integer",
            ),
            ("missing field `name`", "missing field `name`"),
            (
                "invalid type: map, expected a string",
                "invalid type: map, expected a string",
            ),
        ] {
            assert_eq!(client_text(&error(serde)), client);
        }
    }
}
