//! The opaque `next`/`after` cursor of the order listing: `(created_at, id)` of the last item,
//! hex-encoded so clients treat it as a token rather than something to build.

use chrono::DateTime;

use crate::app::Cursor;
use crate::domain::OrderId;

pub fn encode(cursor: &Cursor) -> String {
    hex::encode(format!(
        "{}.{}",
        cursor.created_at.timestamp_micros(),
        cursor.id
    ))
}

pub fn decode(token: &str) -> Result<Cursor, ()> {
    let bytes = hex::decode(token).map_err(|_| ())?;
    let text = String::from_utf8(bytes).map_err(|_| ())?;
    let (micros, id) = text.split_once('.').ok_or(())?;
    let created_at = DateTime::from_timestamp_micros(micros.parse().map_err(|_| ())?).ok_or(())?;
    let id: OrderId = id.parse().map_err(|_| ())?;
    Ok(Cursor { created_at, id })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    #[test]
    fn a_cursor_round_trips_to_the_microsecond() {
        let cursor = Cursor {
            created_at: DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap(),
            id: OrderId::generate(),
        };
        assert_eq!(decode(&encode(&cursor)), Ok(cursor));
    }

    #[test]
    fn garbage_is_not_a_cursor() {
        for token in [
            "",
            "zz",
            "00",
            &hex::encode("12.not-a-uuid"),
            &hex::encode("x.y"),
        ] {
            assert!(decode(token).is_err(), "{token}");
        }
    }
}
