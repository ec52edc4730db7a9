//! The opaque `next`/`after` cursor of the listings (orders, dead letters): the time and id of the
//! last item, hex-encoded so clients treat it as a token rather than something to build. A token
//! is checked fully here: one that decodes to an instant Postgres cannot store would otherwise
//! reach the query and fail there (a 500 instead of a 400).

use std::fmt::Display;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};

use super::problem::Problem;
use crate::app::Cursor;

/// The largest page a listing serves.
pub const MAX_PAGE: u16 = 100;
/// The page size when none is asked for.
pub const DEFAULT_PAGE: u16 = 20;

/// A listing's page size (default [`DEFAULT_PAGE`], 1–[`MAX_PAGE`]) and where it starts (the
/// `after` token), or the 400 for either.
pub fn page<Id: FromStr>(
    limit: Option<u16>,
    after: Option<&str>,
) -> Result<(u16, Option<Cursor<Id>>), Problem> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(Problem::bad_request(
            "invalid-query",
            format!("limit must be between 1 and {MAX_PAGE}"),
        ));
    }
    let after = after
        .map(decode)
        .transpose()
        .map_err(|_| Problem::bad_request("invalid-cursor", "after is not a cursor of this API"))?;
    Ok((limit, after))
}

pub fn encode<Id: Display>(cursor: &Cursor<Id>) -> String {
    hex::encode(format!("{}.{}", cursor.at.timestamp_micros(), cursor.id))
}

pub fn decode<Id: FromStr>(token: &str) -> Result<Cursor<Id>, ()> {
    let bytes = hex::decode(token).map_err(|_| ())?;
    let text = String::from_utf8(bytes).map_err(|_| ())?;
    let (micros, id) = text.split_once('.').ok_or(())?;
    let at = DateTime::from_timestamp_micros(micros.parse().map_err(|_| ())?).ok_or(())?;
    if at < earliest_storable() {
        return Err(());
    }
    let id: Id = id.parse().map_err(|_| ())?;
    Ok(Cursor { at, id })
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
    use crate::domain::{DeadLetterId, OrderId};
    use chrono::Utc;

    #[test]
    fn a_cursor_round_trips_to_the_microsecond() {
        let cursor = Cursor {
            at: DateTime::from_timestamp_micros(Utc::now().timestamp_micros()).unwrap(),
            id: OrderId::generate(),
        };
        assert_eq!(decode(&encode(&cursor)), Ok(cursor));
        let cursor = Cursor {
            at: cursor.at,
            id: DeadLetterId::generate(),
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
            assert!(decode::<OrderId>(token).is_err(), "{token}");
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
        assert!(decode::<OrderId>(&token(before_4713_bc.timestamp_micros())).is_err());
        assert!(decode::<OrderId>(&token(i64::MAX)).is_err());
        assert!(decode::<OrderId>(&token(earliest_storable().timestamp_micros())).is_ok());
    }
}
