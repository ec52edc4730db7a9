//! Random header tables of every AMQP type, nesting and size, through every walk the
//! service makes over them: measured, bounded, encoded for storage and read back,
//! shown, and parked.
use proptest::prelude::*;

use lapin::BasicProperties;
use lapin::types::{AMQPValue, DecimalValue, FieldTable, LongString, ShortString};

use super::dead_letter_of;
use crate::amqp::headers::header_bounds::{Bounded, measure};
use crate::amqp::properties;

fn text() -> impl Strategy<Value = String> {
    // No NUL: a stored key cannot hold one (`amqp::properties`), so it would not round-trip.
    "[a-z\\-_ é😀]{0,12}"
}

fn leaf() -> impl Strategy<Value = AMQPValue> {
    prop_oneof![
        any::<bool>().prop_map(AMQPValue::Boolean),
        any::<i8>().prop_map(AMQPValue::ShortShortInt),
        any::<u8>().prop_map(AMQPValue::ShortShortUInt),
        any::<i16>().prop_map(AMQPValue::ShortInt),
        any::<u16>().prop_map(AMQPValue::ShortUInt),
        any::<i32>().prop_map(AMQPValue::LongInt),
        any::<u32>().prop_map(AMQPValue::LongUInt),
        any::<i64>().prop_map(AMQPValue::LongLongInt),
        any::<u64>().prop_map(AMQPValue::Timestamp),
        (-1e6f32..1e6).prop_map(AMQPValue::Float),
        (-1e12f64..1e12).prop_map(AMQPValue::Double),
        (any::<u8>(), any::<u32>())
            .prop_map(|(scale, value)| AMQPValue::DecimalValue(DecimalValue { scale, value })),
        text().prop_map(|s| AMQPValue::ShortString(ShortString::from(s))),
        proptest::collection::vec(any::<u8>(), 0..64)
            .prop_map(|b| AMQPValue::LongString(LongString::from(b))),
        proptest::collection::vec(any::<u8>(), 0..6_000)
            .prop_map(|b| AMQPValue::ByteArray(b.into())),
        Just(AMQPValue::Void),
    ]
}

fn value() -> impl Strategy<Value = AMQPValue> {
    leaf().prop_recursive(14, 256, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6)
                .prop_map(|values| AMQPValue::FieldArray(values.into())),
            proptest::collection::btree_map(text(), inner, 0..6).prop_map(|entries| {
                let mut table = FieldTable::default();
                for (key, value) in entries {
                    table.insert(key.into(), value);
                }
                AMQPValue::FieldTable(table)
            }),
        ]
    })
}

fn headers() -> impl Strategy<Value = FieldTable> {
    proptest::collection::btree_map(text(), value(), 0..6).prop_map(|entries| {
        let mut table = FieldTable::default();
        for (key, value) in entries {
            table.insert(key.into(), value);
        }
        table
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_walk_over_random_headers_is_bounded_and_lossless_within_the_bounds(
        headers in headers()
    ) {
        let measure = measure(&headers);
        match Bounded::new(headers.clone()) {
            Ok(bounded) => {
                prop_assert!(measure.fits());
                let stored = properties::encode(&BasicProperties::default(), &bounded);
                // As Postgres hands it back: text, read by serde_json's bounded reader.
                let read: serde_json::Value =
                    serde_json::from_str(&stored.to_string()).expect("reads back");
                let back = properties::decode(&read);
                prop_assert_eq!(back.headers().as_ref(), Some(&headers));
                let shown = properties::plain(&bounded).to_string();
                prop_assert!(serde_json::from_str::<serde_json::Value>(&shown).is_ok());
            }
            Err(too_large) => prop_assert!(!too_large.fits()),
        }
        let letter = dead_letter_of(
            "payment.succeeded",
            &BasicProperties::default().with_headers(headers),
            b"{}",
            20,
        );
        for json in [&letter.properties, &letter.headers] {
            let text = json.to_string();
            prop_assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok(), "{}", text);
        }
    }
}
