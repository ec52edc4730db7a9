//! How much of a message's headers the service carries on — into a retry or dead letter, a
//! parked dead letter, its replay, or what people see of it (docs/hostile-input.md): at most
//! [`MAX_BYTES`] encoded, nested at most [`MAX_DEPTH`] levels. Headers are measured by one walk
//! that never recurses, so whatever a publisher sends costs a bounded stack and time linear in
//! the frame; only a [`Bounded`] table is ever encoded, shown or republished, and the code that
//! does so (recursive, for readability) therefore never goes deeper than [`MAX_DEPTH`].
//!
//! The AMQP parser itself stops descending at 32 levels (vendor/README.md): deeper than that it
//! reads an empty table, and such headers are over [`MAX_DEPTH`] here anyway, so what the parser
//! cut the service always drops, and says so.

use lapin::types::{AMQPValue, FieldTable};

/// The most encoded bytes of headers carried on: with the service's own headers, a retry's
/// header frame stays far below RabbitMQ's frame size (128 KiB).
pub const MAX_BYTES: usize = 16 * 1024;
/// The deepest nesting carried on; the headers table itself is level 1. The service's own
/// headers and the broker's (`x-death`: an array of tables of arrays) need 4.
pub const MAX_DEPTH: usize = 8;

/// Headers measured and found within [`MAX_BYTES`] and [`MAX_DEPTH`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Bounded(FieldTable);

/// How large a table of headers is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Encoded size (AMQP 0-9-1 §4.2.5.5; an upper bound for numbers: 9 bytes each).
    pub bytes: usize,
    /// Levels of nesting, the table itself being 1.
    pub depth: usize,
}

impl Measure {
    /// Whether headers of this size may be carried on.
    pub fn fits(self) -> bool {
        self.bytes <= MAX_BYTES && self.depth <= MAX_DEPTH
    }
}

impl Bounded {
    /// `table` if it fits the bounds, else how large it is.
    pub fn new(table: FieldTable) -> Result<Self, Measure> {
        let measure = measure(&table);
        if measure.fits() {
            Ok(Self(table))
        } else {
            Err(measure)
        }
    }

    pub fn table(&self) -> &FieldTable {
        &self.0
    }

    pub fn into_table(self) -> FieldTable {
        self.0
    }
}

/// The size and depth of `table`, walked with a stack of its own rather than the thread's.
pub fn measure(table: &FieldTable) -> Measure {
    let mut bytes = 0usize;
    let mut deepest = 1;
    // Each entry: a container still to count, with its level.
    let mut pending: Vec<(Container<'_>, usize)> = vec![(Container::Table(table), 1)];
    while let Some((container, depth)) = pending.pop() {
        deepest = deepest.max(depth);
        // The container's own length prefix.
        bytes = bytes.saturating_add(4);
        let count = |value: &'_ AMQPValue| -> usize {
            // Its type tag, then its own size; a container is counted when it is popped.
            1 + match value {
                AMQPValue::ShortString(s) => 1 + s.as_str().len(),
                AMQPValue::LongString(s) => 4 + s.as_bytes().len(),
                AMQPValue::ByteArray(b) => 4 + b.as_slice().len(),
                AMQPValue::FieldTable(_) | AMQPValue::FieldArray(_) => 0,
                // Numbers, booleans, decimals, timestamps, void: at most 9 bytes.
                _ => 9,
            }
        };
        match container {
            Container::Table(t) => {
                for (key, value) in t.inner() {
                    bytes = bytes.saturating_add(1 + key.as_str().len() + count(value));
                    if let Some(inner) = Container::of(value) {
                        pending.push((inner, depth + 1));
                    }
                }
            }
            Container::Array(values) => {
                for value in values {
                    bytes = bytes.saturating_add(count(value));
                    if let Some(inner) = Container::of(value) {
                        pending.push((inner, depth + 1));
                    }
                }
            }
        }
    }
    Measure {
        bytes,
        depth: deepest,
    }
}

#[derive(Clone, Copy)]
enum Container<'a> {
    Table(&'a FieldTable),
    Array(&'a [AMQPValue]),
}

impl<'a> Container<'a> {
    fn of(value: &'a AMQPValue) -> Option<Self> {
        match value {
            AMQPValue::FieldTable(t) => Some(Self::Table(t)),
            AMQPValue::FieldArray(a) => Some(Self::Array(a.as_slice())),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::parsing::{MAX_NESTING, parse_field_table};

    /// `levels` field arrays, each holding the next, the innermost holding `1`, as a header
    /// table's bytes (a 4-byte length, then one entry).
    fn nested_arrays_encoded(levels: usize) -> Vec<u8> {
        // Built from the inside out: each level is 'A', a 4-byte length, then the level inside.
        let mut inner = vec![b'b', 1];
        for _ in 0..levels {
            let mut outer = Vec::with_capacity(inner.len() + 5);
            outer.push(b'A');
            outer.extend_from_slice(&u32::try_from(inner.len()).unwrap().to_be_bytes());
            outer.extend_from_slice(&inner);
            inner = outer;
        }
        let mut entry = vec![1, b'h'];
        entry.extend_from_slice(&inner);
        let mut table = u32::try_from(entry.len()).unwrap().to_be_bytes().to_vec();
        table.extend_from_slice(&entry);
        table
    }

    fn nested_tables(levels: usize) -> FieldTable {
        let mut table = FieldTable::default();
        table.insert("leaf".into(), AMQPValue::Boolean(true));
        for _ in 1..levels {
            let mut outer = FieldTable::default();
            outer.insert("t".into(), AMQPValue::FieldTable(table));
            table = outer;
        }
        table
    }

    #[test]
    fn depth_counts_the_table_itself_and_every_level_inside() {
        assert_eq!(measure(&FieldTable::default()).depth, 1);
        assert_eq!(measure(&nested_tables(MAX_DEPTH)).depth, MAX_DEPTH);
        assert!(Bounded::new(nested_tables(MAX_DEPTH)).is_ok());
        let too_deep = Bounded::new(nested_tables(MAX_DEPTH + 1)).unwrap_err();
        assert_eq!(too_deep.depth, MAX_DEPTH + 1);
    }

    #[test]
    fn size_bounds_the_encoding() {
        let mut headers = FieldTable::default();
        headers.insert(
            "x-trace".into(),
            AMQPValue::LongString("t".repeat(100).into()),
        );
        headers.insert("n".into(), AMQPValue::LongUInt(1));
        headers.insert(
            "a".into(),
            AMQPValue::FieldArray(vec![AMQPValue::Boolean(true)].into()),
        );
        // table length 4; "x-trace": 1 + 7 + type 1 + 4 + 100; "n": 1 + 1 + type 1 + at most 9;
        // "a": 1 + 1 + type 1, then the array's length 4 and its value: type 1 + at most 9.
        assert_eq!(measure(&headers).bytes, 4 + 113 + 12 + 3 + 4 + 10);
        headers.insert(
            "big".into(),
            AMQPValue::LongString("x".repeat(MAX_BYTES).into()),
        );
        assert!(!measure(&headers).fits());
    }

    /// The deepest nesting one frame of RabbitMQ's default `frame_max` (128 KiB) can carry:
    /// five bytes a level. The parser reads it without exhausting the test thread's stack, cut at
    /// its own bound, and the service finds it too deep to carry on.
    #[test]
    fn the_deepest_header_a_frame_can_carry_is_parsed_and_found_too_deep() {
        let levels = (128 * 1024 - 16) / 5;
        let encoded = nested_arrays_encoded(levels);
        assert!(encoded.len() <= 128 * 1024, "{}", encoded.len());
        let (rest, table) = parse_field_table(encoded.as_slice()).expect("parses");
        assert!(rest.is_empty());
        let measure = measure(&table);
        // The levels within the parser's bound, then the next one read empty.
        assert_eq!(measure.depth, MAX_NESTING + 1);
        assert!(!measure.fits());
    }

    #[test]
    fn nesting_within_the_parsers_bound_is_read_whole() {
        let (_, table) =
            parse_field_table(nested_arrays_encoded(MAX_DEPTH - 1).as_slice()).expect("parses");
        assert_eq!(measure(&table).depth, MAX_DEPTH);
        assert!(Bounded::new(table).is_ok());
    }

    #[test]
    fn a_short_string_that_is_not_utf8_is_read_with_a_replacement_character() {
        // A table of one entry: the key, a short string of the bytes "ba\xff"; the value 'b' 1.
        let encoded = [0, 0, 0, 6, 3, b'b', b'a', 0xff, b'b', 1];
        let (_, table) = parse_field_table(&encoded[..]).expect("parses");
        assert_eq!(
            table.inner().get("ba\u{FFFD}"),
            Some(&AMQPValue::ShortShortInt(1))
        );
    }
}
