//! What of a publisher's headers is carried on into a retry, a dead letter or a parked dead
//! letter: everything but the bookkeeping headers, if it fits the bounds (`header_bounds`); else
//! only `x-original-headers-dropped`, the size of what was left out. And the one cut every
//! carried reason text gets.

use lapin::types::{AMQPValue, FieldTable};

use super::header_bounds::{Bounded, Measure};
use super::header_names::{BOOKKEEPING_HEADERS, HEADERS_DROPPED_HEADER};

/// The original's headers without the bookkeeping ones (nor those named in `also_without`), if
/// they fit the bounds; else how large they were.
pub(in crate::amqp) fn carried_headers(
    headers: Option<&FieldTable>,
    also_without: &[&str],
) -> Result<Bounded, Measure> {
    let mut kept = FieldTable::default();
    for (key, value) in headers.into_iter().flat_map(FieldTable::inner) {
        let name = key.as_str();
        if !BOOKKEEPING_HEADERS.contains(&name) && !also_without.contains(&name) {
            kept.insert(key.clone(), value.clone());
        }
    }
    Bounded::new(kept)
}

/// In place of headers too large or too deep to carry on: `x-original-headers-dropped`, their
/// size in bytes.
pub(in crate::amqp) fn dropped(measure: Measure) -> FieldTable {
    let mut table = FieldTable::default();
    table.insert(
        HEADERS_DROPPED_HEADER.into(),
        AMQPValue::LongLongInt(i64::try_from(measure.bytes).unwrap_or(i64::MAX)),
    );
    table
}

/// `text` cut to at most `max` bytes at a character boundary, marked with `…` when cut.
pub(in crate::amqp) fn cut_to(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let marker = "…";
    let mut end = max - marker.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{marker}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_is_cut_at_a_character_boundary_and_marked() {
        assert_eq!(cut_to("short", 10), "short");
        let cut = cut_to(&"é".repeat(1000), crate::domain::MAX_REASON_BYTES);
        assert!(
            cut.len() <= crate::domain::MAX_REASON_BYTES,
            "{}",
            cut.len()
        );
        assert!(cut.ends_with('…'));
    }
}
