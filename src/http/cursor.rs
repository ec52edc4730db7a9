//! The opaque `next`/`after` cursor of the order listing: `(created_at, id)` of the last item,
//! hex-encoded so clients treat it as a token rather than something to build. A token is
//! checked fully here: one that decodes to an instant Postgres cannot store would otherwise
//! reach the query and fail there (a 500 instead of a 400).

use chrono::{DateTime, NaiveDate, Utc};

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
    if created_at < earliest_storable() {
        return Err(());
    }
    let id: OrderId = id.parse().map_err(|_| ())?;
    Ok(Cursor { created_at, id })
}

/// The earliest `timestamptz` Postgres stores: 4714-11-24 BC (proleptic year -4713). Its latest
/// (294276 AD) is beyond what chrono represents, so `from_timestamp_micros` refuses those.
fn earliest_storable() -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(-4713, 11, 24)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .map_or(DateTime::<Utc>::MIN_UTC, |start| start.and_utc())
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

    #[test]
    fn a_cursor_outside_what_postgres_stores_is_not_a_cursor() {
        let id = OrderId::generate();
        let before_4713_bc = NaiveDate::from_ymd_opt(-9999, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
        let token = |micros: i64| hex::encode(format!("{micros}.{id}"));
        assert!(decode(&token(before_4713_bc.timestamp_micros())).is_err());
        assert!(decode(&token(i64::MAX)).is_err());
        assert!(decode(&token(earliest_storable().timestamp_micros())).is_ok());
    }
}
