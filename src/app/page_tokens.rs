//! The opaque `next`/`after` token of every listing, hex-encoded so clients treat it as a token
//! rather than something to build: for the top-level listings (orders, dead letters) the time and
//! id of the last item; for an order's own records (history, ledger, events) the key of the last
//! one, named for its listing, so that one listing's token is refused by another. The page size
//! and its bounds are here once, for every listing and the command line. A token is checked fully
//! here: one that decodes to an instant Postgres cannot store would otherwise reach the query and
//! fail there (a 500 instead of a 400).
//!
//! Both the REST listings and the `dead-letters` command line page with these tokens, so they
//! live here rather than in either door: the REST door reads them from its query
//! (`http/page_query.rs`) and answers a refusal with a 400.

use std::fmt::Display;
use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};

use super::{Cursor, EventsAfter, HistoryAfter, LedgerAfter};
use crate::domain::Version;

/// The largest page a listing serves.
pub const MAX_PAGE: u16 = 100;
/// The page size when none is asked for.
pub const DEFAULT_PAGE: u16 = 20;

/// What a listing's `next` token stands for, and how it is written and read back.
pub trait Token: Sized {
    fn to_token(&self) -> String;
    /// `None` for anything this listing did not write.
    fn from_token(token: &str) -> Option<Self>;
}

/// Why a page cannot be served as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PageRefused {
    #[error("limit must be between 1 and {MAX_PAGE}")]
    Limit,
    #[error("after is not a cursor of this listing")]
    After,
}

/// A listing's page size (default [`DEFAULT_PAGE`], 1–[`MAX_PAGE`]) and where it starts (the
/// `after` token), or why either is refused.
pub fn page<T: Token>(
    limit: Option<u16>,
    after: Option<&str>,
) -> Result<(u16, Option<T>), PageRefused> {
    let limit = limit.unwrap_or(DEFAULT_PAGE);
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(PageRefused::Limit);
    }
    let after = after
        .map(|token| T::from_token(token).ok_or(PageRefused::After))
        .transpose()?;
    Ok((limit, after))
}

/// The `next` token of a page's last item.
pub fn encode<T: Token>(key: &T) -> String {
    key.to_token()
}

impl<Id: Display + FromStr> Token for Cursor<Id> {
    fn to_token(&self) -> String {
        hex::encode(format!("{}.{}", self.at.timestamp_micros(), self.id))
    }

    fn from_token(token: &str) -> Option<Self> {
        decode(token).ok()
    }
}

fn decode<Id: FromStr>(token: &str) -> Result<Cursor<Id>, ()> {
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

/// A key of an order's records as a token: `<listing>.<number>`, hex-encoded.
fn keyed(listing: &str, key: i64) -> String {
    hex::encode(format!("{listing}.{key}"))
}

/// The number a token of `listing` holds, if it is one (a positive one: versions and outbox ids
/// start at 1).
fn key_of(listing: &str, token: &str) -> Option<i64> {
    let text = String::from_utf8(hex::decode(token).ok()?).ok()?;
    let key = text.strip_prefix(listing)?.strip_prefix('.')?;
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse().ok().filter(|&key| key >= 1)
}

impl Token for HistoryAfter {
    fn to_token(&self) -> String {
        keyed("history", self.0.get())
    }

    fn from_token(token: &str) -> Option<Self> {
        key_of("history", token).and_then(Version::new).map(Self)
    }
}

impl Token for LedgerAfter {
    fn to_token(&self) -> String {
        keyed("ledger", self.0.get())
    }

    fn from_token(token: &str) -> Option<Self> {
        key_of("ledger", token).and_then(Version::new).map(Self)
    }
}

impl Token for EventsAfter {
    fn to_token(&self) -> String {
        keyed("events", self.0)
    }

    fn from_token(token: &str) -> Option<Self> {
        key_of("events", token).map(Self)
    }
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
        assert_eq!(Cursor::from_token(&cursor.to_token()), Some(cursor));
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
    fn an_orders_record_keys_round_trip_and_belong_to_their_listing() {
        let version = Version::new(113_000).unwrap();
        let history = HistoryAfter(version);
        assert_eq!(HistoryAfter::from_token(&history.to_token()), Some(history));
        let ledger = LedgerAfter(version);
        assert_eq!(LedgerAfter::from_token(&ledger.to_token()), Some(ledger));
        let events = EventsAfter(i64::MAX);
        assert_eq!(EventsAfter::from_token(&events.to_token()), Some(events));
        assert_eq!(LedgerAfter::from_token(&history.to_token()), None);
        assert_eq!(HistoryAfter::from_token(&events.to_token()), None);
    }

    #[test]
    fn garbage_is_not_a_key_of_an_orders_records() {
        for token in [
            "",
            "zz",
            &hex::encode("history."),
            &hex::encode("history.0"),
            &hex::encode("history.-1"),
            &hex::encode("history.+1"),
            &hex::encode("history.1.2"),
            &hex::encode("history.99999999999999999999"),
            &hex::encode("historyx.1"),
        ] {
            assert_eq!(HistoryAfter::from_token(token), None, "{token}");
        }
    }

    #[test]
    fn a_limit_out_of_bounds_or_another_listings_token_is_refused() {
        assert_eq!(page::<HistoryAfter>(None, None), Ok((DEFAULT_PAGE, None)));
        assert_eq!(page::<HistoryAfter>(Some(0), None), Err(PageRefused::Limit));
        assert_eq!(
            page::<HistoryAfter>(Some(MAX_PAGE + 1), None),
            Err(PageRefused::Limit)
        );
        let events = EventsAfter(7).to_token();
        assert_eq!(
            page::<HistoryAfter>(Some(1), Some(&events)),
            Err(PageRefused::After)
        );
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
