//! A dead letter's AMQP properties as JSON, two ways: [`encode`]/[`decode`], lossless, for what a
//! replay publishes (every header keeps its AMQP type), and [`plain`], for people (the values
//! alone). Postgres' `jsonb` holds no NUL character, so a string holding one is kept as hex in the
//! lossless form and shown with U+FFFD in the plain one.
//!
//! A replay republishes the original's identity and metadata (`message_id`, `type`,
//! `content_type`, `content_encoding`, `correlation_id`, `reply_to`, `priority`, `timestamp`,
//! `app_id`, headers), persistent; never `expiration` (a replay must not expire on its way),
//! `user_id` (the broker refuses another user's id from the service) or `cluster_id`.

use lapin::BasicProperties;
use lapin::types::{AMQPValue, ByteArray, DecimalValue, FieldArray, FieldTable, ShortString};
use serde_json::{Map, Value, json};

use super::headers::header_bounds::Bounded;

/// The lossless JSON of `properties`, with `headers` in place of its own. Headers are
/// [`Bounded`], so the JSON nests at most twice their depth (far below what `serde_json` and
/// `jsonb` read back).
pub fn encode(properties: &BasicProperties, headers: &Bounded) -> Value {
    let mut out = Map::new();
    for (name, get, _) in TEXTS {
        if let Some(value) = get(properties) {
            out.insert(name.to_owned(), Value::String(without_nul(value.as_str())));
        }
    }
    if let Some(priority) = properties.priority() {
        out.insert("priority".to_owned(), json!(priority));
    }
    if let Some(timestamp) = properties.timestamp() {
        out.insert("timestamp".to_owned(), json!(timestamp));
    }
    out.insert("headers".to_owned(), encode_table(headers.table()));
    Value::Object(out)
}

type Getter = fn(&BasicProperties) -> &Option<ShortString>;
type Setter = fn(BasicProperties, ShortString) -> BasicProperties;

/// The text properties a replay repeats: their name in the stored JSON, how to read and set them.
const TEXTS: [(&str, Getter, Setter); 7] = [
    (
        "message_id",
        BasicProperties::message_id,
        BasicProperties::with_message_id,
    ),
    ("type", BasicProperties::kind, BasicProperties::with_type),
    (
        "content_type",
        BasicProperties::content_type,
        BasicProperties::with_content_type,
    ),
    (
        "content_encoding",
        BasicProperties::content_encoding,
        BasicProperties::with_content_encoding,
    ),
    (
        "correlation_id",
        BasicProperties::correlation_id,
        BasicProperties::with_correlation_id,
    ),
    (
        "reply_to",
        BasicProperties::reply_to,
        BasicProperties::with_reply_to,
    ),
    (
        "app_id",
        BasicProperties::app_id,
        BasicProperties::with_app_id,
    ),
];

/// The properties [`encode`] wrote, persistent; whatever does not decode is left out.
pub fn decode(value: &Value) -> BasicProperties {
    let mut properties = BasicProperties::default().with_delivery_mode(2);
    for (name, _, set) in TEXTS {
        let text = value.get(name).and_then(Value::as_str);
        if let Some(text) = text.and_then(|s| ShortString::try_new(s).ok()) {
            properties = set(properties, text);
        }
    }
    if let Some(v) = value.get("priority").and_then(Value::as_u64) {
        properties = properties.with_priority(u8::try_from(v).unwrap_or(u8::MAX));
    }
    if let Some(v) = value.get("timestamp").and_then(Value::as_u64) {
        properties = properties.with_timestamp(v);
    }
    if let Some(headers) = value.get("headers").and_then(decode_table) {
        properties = properties.with_headers(headers);
    }
    properties
}

/// The headers as plain JSON: strings, numbers, booleans, arrays and objects (byte arrays as hex).
pub fn plain(headers: &Bounded) -> Value {
    plain_table(headers.table())
}

fn plain_table(headers: &FieldTable) -> Value {
    Value::Object(
        headers
            .inner()
            .iter()
            .map(|(key, value)| (without_nul(key.as_str()), plain_value(value)))
            .collect(),
    )
}

fn plain_value(value: &AMQPValue) -> Value {
    match value {
        AMQPValue::Boolean(b) => json!(b),
        AMQPValue::ShortShortInt(n) => json!(n),
        AMQPValue::ShortShortUInt(n) => json!(n),
        AMQPValue::ShortInt(n) => json!(n),
        AMQPValue::ShortUInt(n) => json!(n),
        AMQPValue::LongInt(n) => json!(n),
        AMQPValue::LongUInt(n) => json!(n),
        AMQPValue::LongLongInt(n) => json!(n),
        AMQPValue::Timestamp(n) => json!(n),
        // Not finite: null (JSON has no NaN).
        AMQPValue::Float(f) => json!(f),
        AMQPValue::Double(f) => json!(f),
        AMQPValue::DecimalValue(d) => json!(format!("{}e-{}", d.value, d.scale)),
        AMQPValue::ShortString(s) => json!(without_nul(s.as_str())),
        AMQPValue::LongString(s) => json!(without_nul(&String::from_utf8_lossy(s.as_bytes()))),
        AMQPValue::ByteArray(b) => json!(hex::encode(b.as_slice())),
        AMQPValue::FieldArray(a) => Value::Array(a.as_slice().iter().map(plain_value).collect()),
        AMQPValue::FieldTable(t) => plain_table(t),
        AMQPValue::Void => Value::Null,
    }
}

/// A table as an object of `[tag, value]` pairs; a key holding NUL (which `jsonb` cannot store)
/// is left out.
fn encode_table(table: &FieldTable) -> Value {
    Value::Object(
        table
            .inner()
            .iter()
            .filter(|(key, _)| !key.as_str().contains('\0'))
            .map(|(key, value)| (key.as_str().to_owned(), encode_value(value)))
            .collect(),
    )
}

/// `[tag, value]`, the tag being the AMQP field type (RabbitMQ's letters; `_` for a short string,
/// `Sx` for a long string kept as hex).
fn encode_value(value: &AMQPValue) -> Value {
    let (tag, value) = match value {
        AMQPValue::Boolean(b) => ("t", json!(b)),
        AMQPValue::ShortShortInt(n) => ("b", json!(n)),
        AMQPValue::ShortShortUInt(n) => ("B", json!(n)),
        AMQPValue::ShortInt(n) => ("s", json!(n)),
        AMQPValue::ShortUInt(n) => ("u", json!(n)),
        AMQPValue::LongInt(n) => ("I", json!(n)),
        AMQPValue::LongUInt(n) => ("i", json!(n)),
        AMQPValue::LongLongInt(n) => ("l", json!(n)),
        AMQPValue::Timestamp(n) => ("T", json!(n)),
        // `to_string` round-trips every f32 and f64, NaN and the infinities included.
        AMQPValue::Float(f) => ("f", json!(f.to_string())),
        AMQPValue::Double(f) => ("d", json!(f.to_string())),
        AMQPValue::DecimalValue(d) => ("D", json!([d.scale, d.value])),
        AMQPValue::ShortString(s) => ("_", json!(without_nul(s.as_str()))),
        AMQPValue::LongString(s) => match std::str::from_utf8(s.as_bytes()) {
            Ok(text) if !text.contains('\0') => ("S", json!(text)),
            _ => ("Sx", json!(hex::encode(s.as_bytes()))),
        },
        AMQPValue::ByteArray(b) => ("x", json!(hex::encode(b.as_slice()))),
        AMQPValue::FieldArray(a) => (
            "A",
            Value::Array(a.as_slice().iter().map(encode_value).collect()),
        ),
        AMQPValue::FieldTable(t) => ("F", encode_table(t)),
        AMQPValue::Void => ("V", Value::Null),
    };
    json!([tag, value])
}

fn decode_table(value: &Value) -> Option<FieldTable> {
    let mut table = FieldTable::default();
    for (key, value) in value.as_object()? {
        let (Ok(key), Some(value)) = (ShortString::try_new(key.as_str()), decode_value(value))
        else {
            continue;
        };
        table.insert(key, value);
    }
    Some(table)
}

fn decode_value(value: &Value) -> Option<AMQPValue> {
    let [tag, value] = value.as_array()?.as_slice() else {
        return None;
    };
    let int = || value.as_i64();
    Some(match tag.as_str()? {
        "t" => AMQPValue::Boolean(value.as_bool()?),
        "b" => AMQPValue::ShortShortInt(int()?.try_into().ok()?),
        "B" => AMQPValue::ShortShortUInt(int()?.try_into().ok()?),
        "s" => AMQPValue::ShortInt(int()?.try_into().ok()?),
        "u" => AMQPValue::ShortUInt(int()?.try_into().ok()?),
        "I" => AMQPValue::LongInt(int()?.try_into().ok()?),
        "i" => AMQPValue::LongUInt(int()?.try_into().ok()?),
        "l" => AMQPValue::LongLongInt(int()?),
        "T" => AMQPValue::Timestamp(value.as_u64()?),
        "f" => AMQPValue::Float(value.as_str()?.parse().ok()?),
        "d" => AMQPValue::Double(value.as_str()?.parse().ok()?),
        "D" => {
            let [scale, digits] = value.as_array()?.as_slice() else {
                return None;
            };
            AMQPValue::DecimalValue(DecimalValue {
                scale: u8::try_from(scale.as_u64()?).ok()?,
                value: u32::try_from(digits.as_u64()?).ok()?,
            })
        }
        "_" => AMQPValue::ShortString(ShortString::try_new(value.as_str()?).ok()?),
        "S" => AMQPValue::LongString(value.as_str()?.into()),
        "Sx" => AMQPValue::LongString(hex::decode(value.as_str()?).ok()?.into()),
        "x" => AMQPValue::ByteArray(ByteArray::from(hex::decode(value.as_str()?).ok()?)),
        "A" => AMQPValue::FieldArray(FieldArray::from(
            value
                .as_array()?
                .iter()
                .filter_map(decode_value)
                .collect::<Vec<_>>(),
        )),
        "F" => AMQPValue::FieldTable(decode_table(value)?),
        "V" => AMQPValue::Void,
        _ => return None,
    })
}

/// `text` with every NUL replaced by U+FFFD: what Postgres can store in `text` and `jsonb`.
pub(super) fn without_nul(text: &str) -> String {
    text.replace('\0', "\u{FFFD}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> FieldTable {
        let mut nested = FieldTable::default();
        nested.insert("count".into(), AMQPValue::LongLongInt(20));
        let mut headers = FieldTable::default();
        for (key, value) in [
            ("bool", AMQPValue::Boolean(true)),
            ("i8", AMQPValue::ShortShortInt(-8)),
            ("u8", AMQPValue::ShortShortUInt(8)),
            ("i16", AMQPValue::ShortInt(-16)),
            ("u16", AMQPValue::ShortUInt(16)),
            ("i32", AMQPValue::LongInt(-32)),
            ("u32", AMQPValue::LongUInt(32)),
            ("i64", AMQPValue::LongLongInt(-64)),
            ("ts", AMQPValue::Timestamp(1_700_000_000)),
            ("f32", AMQPValue::Float(1.5)),
            ("f64", AMQPValue::Double(-2.25)),
            (
                "decimal",
                AMQPValue::DecimalValue(DecimalValue {
                    scale: 2,
                    value: 1234,
                }),
            ),
            ("short", AMQPValue::ShortString("short".into())),
            ("traceparent", AMQPValue::LongString("00-abc-01".into())),
            ("nul", AMQPValue::LongString(b"a\0b".to_vec().into())),
            ("binary", AMQPValue::LongString(vec![0xff, 0xfe].into())),
            ("bytes", AMQPValue::ByteArray(vec![1, 2, 3].into())),
            (
                "array",
                AMQPValue::FieldArray(vec![AMQPValue::LongString("x".into())].into()),
            ),
            ("table", AMQPValue::FieldTable(nested.clone())),
            ("void", AMQPValue::Void),
        ] {
            headers.insert(key.into(), value);
        }
        headers
    }

    #[test]
    fn every_header_type_survives_the_round_trip() {
        let headers = every_type();
        let properties = BasicProperties::default()
            .with_message_id("ev-1".into())
            .with_type("payment.succeeded".into())
            .with_content_type("application/json".into())
            .with_correlation_id("c-1".into())
            .with_priority(3)
            .with_timestamp(42)
            .with_app_id("shop".into());
        let stored = encode(&properties, &Bounded::new(headers.clone()).unwrap());
        // What Postgres stores and gives back: text, without a NUL.
        let stored: Value = serde_json::from_str(&stored.to_string()).unwrap();
        assert!(!stored.to_string().contains("\\u0000"), "{stored}");
        let back = decode(&stored);
        assert_eq!(back.headers().as_ref(), Some(&headers));
        assert_eq!(back.message_id().as_ref().unwrap().as_str(), "ev-1");
        assert_eq!(back.kind().as_ref().unwrap().as_str(), "payment.succeeded");
        assert_eq!(back.correlation_id().as_ref().unwrap().as_str(), "c-1");
        assert_eq!(*back.priority(), Some(3));
        assert_eq!(*back.timestamp(), Some(42));
        assert_eq!(*back.delivery_mode(), Some(2), "a replay is persistent");
    }

    #[test]
    fn a_replay_carries_neither_expiration_nor_user_id() {
        let properties = BasicProperties::default()
            .with_expiration("1000".into())
            .with_user_id("someone-else".into());
        let back = decode(&encode(&properties, &Bounded::default()));
        assert_eq!(*back.expiration(), None);
        assert_eq!(*back.user_id(), None);
    }

    #[test]
    fn the_plain_form_shows_values_alone() {
        let plain = plain(&Bounded::new(every_type()).unwrap());
        assert_eq!(plain["traceparent"], "00-abc-01");
        assert_eq!(plain["i64"], -64);
        assert_eq!(plain["bytes"], "010203");
        assert_eq!(plain["nul"], "a\u{FFFD}b");
        assert_eq!(plain["table"]["count"], 20);
        assert_eq!(plain["array"][0], "x");
        assert_eq!(plain["void"], Value::Null);
    }

    #[test]
    fn what_does_not_decode_is_left_out() {
        let stored = json!({
            "message_id": "m".repeat(300),
            "headers": {"ok": ["S", "v"], "bad-tag": ["?", 1], "bad-shape": 1, "overflow": ["b", 1000]}
        });
        let back = decode(&stored);
        assert_eq!(*back.message_id(), None, "too long for a short string");
        let headers = back.headers().clone().unwrap();
        assert_eq!(headers.inner().len(), 1, "{headers:?}");
    }
}
