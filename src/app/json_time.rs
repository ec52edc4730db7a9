//! How a time is written in the service's JSON (REST views and event envelopes): RFC 3339 in UTC,
//! with `Z` and 0, 3, 6 or 9 fractional digits, as many as the value needs. That is chrono's own
//! serde format; these functions format the whole string first and hand it to the serializer
//! once, where chrono's implementation feeds serde_json one character at a time through its
//! escaper, about 3 % of a REST request's instructions (bench/README.md "Where the service's CPU
//! goes"). Use with `#[serde(serialize_with = "…")]`.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

/// `at` as chrono's serde implementation writes it.
pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&at.to_rfc3339_opts(SecondsFormat::AutoSi, true))
}

/// [`serialize`] for a time that may be absent (`null`).
pub fn serialize_option<S: Serializer>(
    at: &Option<DateTime<Utc>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => serialize(at, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use serde::Serialize;

    use super::*;

    #[derive(Serialize)]
    struct Ours {
        #[serde(serialize_with = "serialize")]
        at: DateTime<Utc>,
        #[serde(serialize_with = "serialize_option")]
        maybe: Option<DateTime<Utc>>,
    }

    #[derive(Serialize)]
    struct Chronos {
        at: DateTime<Utc>,
        maybe: Option<DateTime<Utc>>,
    }

    #[test]
    fn a_time_is_written_exactly_as_chronos_serde_writes_it() {
        let whole = Utc.with_ymd_and_hms(2026, 11, 27, 4, 5, 6).unwrap();
        let nanos = [0, 120_000_000, 123_456_000, 123_456_789, 1_000];
        for at in nanos.map(|n| whole + chrono::Duration::nanoseconds(n)) {
            for maybe in [Some(at), None] {
                assert_eq!(
                    serde_json::to_string(&Ours { at, maybe }).unwrap(),
                    serde_json::to_string(&Chronos { at, maybe }).unwrap()
                );
            }
        }
    }
}
