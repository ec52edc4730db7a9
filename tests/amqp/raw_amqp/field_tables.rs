//! AMQP 0-9-1 field tables encoded byte by byte, for the headers of a [`super::RawMessage`]: one
//! entry, values nested to a depth (up to the deepest one content header frame can carry), and
//! random tables of every field type RabbitMQ accepts, from a seeded generator.

use super::{FRAME_MAX, len32};

/// An encoded field table of one entry, `name` holding `value` (its type tag included).
pub fn table(name: &str, value: &[u8]) -> Vec<u8> {
    let mut entry = vec![u8::try_from(name.len()).expect("a short name")];
    entry.extend_from_slice(name.as_bytes());
    entry.extend_from_slice(value);
    let mut table = len32(entry.len()).to_vec();
    table.extend_from_slice(&entry);
    table
}

/// An encoded long string value (`S`).
pub fn long_string(text: &[u8]) -> Vec<u8> {
    let mut value = vec![b'S'];
    value.extend_from_slice(&len32(text.len()));
    value.extend_from_slice(text);
    value
}

/// An encoded value of `levels` field arrays (`A`), each holding the next, the innermost a byte.
pub fn nested_arrays(levels: usize) -> Vec<u8> {
    nested(levels, |inner| {
        let mut outer = vec![b'A'];
        outer.extend_from_slice(&len32(inner.len()));
        outer.extend_from_slice(inner);
        outer
    })
}

/// An encoded value of `levels` field tables (`F`), each holding the next under the key `t`.
pub fn nested_tables(levels: usize) -> Vec<u8> {
    nested(levels, |inner| {
        let mut outer = vec![b'F'];
        outer.extend_from_slice(&len32(inner.len() + 2));
        outer.extend_from_slice(&[1, b't']);
        outer.extend_from_slice(inner);
        outer
    })
}

fn nested(levels: usize, wrap: impl Fn(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut value = vec![b'b', 1];
    for _ in 0..levels {
        value = wrap(&value);
    }
    value
}

/// The most levels of `nested_arrays` a header `name` can hold in one content header frame of
/// [`FRAME_MAX`] beside a delivery mode: the deepest nesting a publisher can send.
pub fn deepest_arrays(name: &str) -> usize {
    // Frame: 7 header bytes and the end byte; content header: class, weight, body size, flags.
    let room = FRAME_MAX - 8 - (2 + 2 + 8 + 2) - 1;
    // Table length, the entry's name, the innermost value; five bytes a level.
    (room - 4 - 1 - name.len() - 2) / 5
}

/// A small deterministic generator (xorshift), so a failing random case can be run again.
pub struct Random(u64);

impl Random {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.below(256) as u8).collect()
    }
}

/// An encoded field table of random entries: every field type RabbitMQ accepts, nested up to
/// `depth` levels, names of random bytes (not always UTF-8), at most about `budget` bytes.
pub fn random_table(random: &mut Random, depth: usize, budget: usize) -> Vec<u8> {
    let mut entries = Vec::new();
    while entries.len() < budget && random.below(8) != 0 {
        let name_len = random.below(12);
        entries.push(u8::try_from(name_len).expect("short"));
        entries.extend(random.bytes(name_len));
        entries.extend(random_value(
            random,
            depth,
            budget.saturating_sub(entries.len()),
        ));
    }
    let mut table = len32(entries.len()).to_vec();
    table.extend(entries);
    table
}

fn random_value(random: &mut Random, depth: usize, budget: usize) -> Vec<u8> {
    let nested = depth > 0 && budget > 64;
    match random.below(if nested { 16 } else { 14 }) {
        0 => vec![b't', random.below(2) as u8],
        1 => [vec![b'b'], random.bytes(1)].concat(),
        2 => [vec![b's'], random.bytes(2)].concat(),
        3 => [vec![b'I'], random.bytes(4)].concat(),
        4 => [vec![b'l'], random.bytes(8)].concat(),
        5 => [vec![b'T'], random.bytes(8)].concat(),
        6 => [vec![b'f'], 1.5f32.to_be_bytes().to_vec()].concat(),
        7 => [vec![b'd'], (-2.25f64).to_be_bytes().to_vec()].concat(),
        8 => [vec![b'D'], random.bytes(5)].concat(),
        9 => vec![b'V'],
        10 | 11 => {
            let n = random.below(budget.clamp(1, 20_000));
            [long_string(&random.bytes(n))[..].to_vec()].concat()
        }
        12 | 13 => {
            let n = random.below(budget.clamp(1, 2_000));
            let mut value = vec![b'x'];
            value.extend_from_slice(&len32(n));
            value.extend(random.bytes(n));
            value
        }
        14 => {
            let mut items = Vec::new();
            while items.len() < budget / 2 && random.below(4) != 0 {
                items.extend(random_value(random, depth - 1, budget / 2 - items.len()));
            }
            let mut value = vec![b'A'];
            value.extend_from_slice(&len32(items.len()));
            value.extend(items);
            value
        }
        _ => [vec![b'F'], random_table(random, depth - 1, budget / 2)].concat(),
    }
}
