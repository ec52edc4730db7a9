//! `If-Match` as RFC 9110 §13.1.1 evaluates it (docs/contract.md, "Conditional requests"), read
//! into the versions a ship or cancel may apply to:
//!
//! - `*` matches any existing order; it stands alone, not in a list.
//! - Otherwise the field is a list of entity-tags, and several `If-Match` fields are one list.
//!   Any strong member equal to the order's ETag, `"<version>"`, matches.
//! - A weak tag (`W/"3"`) never matches (strong comparison), nor does a tag no order carries
//!   (`"abc"`, `"03"`): they are valid members that admit no version, so a list of only those
//!   is 412, like a stale one.
//! - A member that is no entity-tag, or a field naming none at all, is 400.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;

use super::problem::Problem;
use crate::domain::{Version, VersionMatch};

/// The request's `If-Match`: [`VersionMatch::Any`] without one.
pub struct IfMatch(pub VersionMatch);

impl<S: Send + Sync> FromRequestParts<S> for IfMatch {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let fields: Vec<&[u8]> = parts
            .headers
            .get_all(header::IF_MATCH)
            .iter()
            .map(|value| value.as_bytes())
            .collect();
        if fields.is_empty() {
            return Ok(IfMatch(VersionMatch::Any));
        }
        parse(&fields).map(IfMatch).map_err(|Malformed(why)| {
            Problem::bad_request(
                "invalid-if-match",
                format!("If-Match must be * or a list of ETags like \"3\": {why}"),
            )
        })
    }
}

/// Why an `If-Match` is malformed.
#[derive(Debug, PartialEq, Eq)]
struct Malformed(&'static str);

/// The versions that the `If-Match` fields, taken together, admit.
fn parse(fields: &[&[u8]]) -> Result<VersionMatch, Malformed> {
    let mut star = false;
    let mut members = 0_usize;
    let mut versions = Vec::new();
    for field in fields {
        if field.trim_ascii() == b"*" {
            star = true;
            members += 1;
            continue;
        }
        let mut rest = *field;
        loop {
            // Empty list elements (`a, , b`) are allowed and ignored (RFC 9110 §5.6.1.2).
            rest = skip(rest, |b| matches!(b, b' ' | b'\t' | b','));
            if rest.is_empty() {
                break;
            }
            let (tag, after) = entity_tag(rest)?;
            members += 1;
            versions.extend(tag.version());
            rest = skip(after, |b| matches!(b, b' ' | b'\t'));
            if !(rest.is_empty() || rest.starts_with(b",")) {
                return Err(Malformed("members are separated by commas"));
            }
        }
    }
    match (star, members) {
        (_, 0) => Err(Malformed("it names no ETag")),
        (true, 1) => Ok(VersionMatch::Any),
        (true, _) => Err(Malformed("* stands alone")),
        (false, _) => Ok(VersionMatch::OneOf(versions)),
    }
}

/// An entity-tag (RFC 9110 §8.8.3): `W/` if weak, then a quoted opaque tag.
struct EntityTag<'a> {
    weak: bool,
    opaque: &'a [u8],
}

impl EntityTag<'_> {
    /// The version whose ETag this is, if any: strong, and the canonical number of a version
    /// (strong comparison is octet by octet, so `"03"` is not `"3"`).
    fn version(&self) -> Option<Version> {
        if self.weak {
            return None;
        }
        let text = std::str::from_utf8(self.opaque).ok()?;
        let version = Version::new(text.parse().ok()?)?;
        (version.to_string() == text).then_some(version)
    }
}

/// The entity-tag at the start of `input`, and what follows it.
fn entity_tag(input: &[u8]) -> Result<(EntityTag<'_>, &[u8]), Malformed> {
    let (weak, quoted) = match input.strip_prefix(b"W/") {
        Some(rest) => (true, rest),
        None => (false, input),
    };
    let Some(inner) = quoted.strip_prefix(b"\"") else {
        return Err(Malformed("an ETag is quoted"));
    };
    let Some(end) = inner.iter().position(|&b| b == b'"') else {
        return Err(Malformed("an ETag's closing quote is missing"));
    };
    let opaque = &inner[..end];
    // etagc = %x21 / %x23-7E / obs-text
    if !opaque
        .iter()
        .all(|&b| b == 0x21 || (0x23..=0x7e).contains(&b) || b >= 0x80)
    {
        return Err(Malformed("an ETag holds no spaces or control characters"));
    }
    Ok((EntityTag { weak, opaque }, &inner[end + 1..]))
}

fn skip(input: &[u8], unwanted: impl Fn(u8) -> bool) -> &[u8] {
    let start = input
        .iter()
        .position(|&b| !unwanted(b))
        .unwrap_or(input.len());
    &input[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(numbers: &[i64]) -> VersionMatch {
        VersionMatch::OneOf(numbers.iter().filter_map(|&n| Version::new(n)).collect())
    }

    fn of(fields: &[&str]) -> Result<VersionMatch, Malformed> {
        let fields: Vec<&[u8]> = fields.iter().map(|f| f.as_bytes()).collect();
        parse(&fields)
    }

    #[test]
    fn a_star_alone_admits_any_version() {
        assert_eq!(of(&["*"]), Ok(VersionMatch::Any));
        assert_eq!(of(&[" *\t"]), Ok(VersionMatch::Any));
        assert!(of(&["*", "\"1\""]).is_err());
        assert!(of(&["*, \"1\""]).is_err());
        assert!(of(&["*", "*"]).is_err());
    }

    #[test]
    fn strong_tags_of_every_field_make_one_list() {
        assert_eq!(of(&["\"3\""]), Ok(versions(&[3])));
        assert_eq!(of(&["\"1\", \"2\"", "\"5\""]), Ok(versions(&[1, 2, 5])));
        assert_eq!(of(&[" , \"1\" ,, \"2\",", ","]), Ok(versions(&[1, 2])));
        assert_eq!(of(&["\"1\",\"2\""]), Ok(versions(&[1, 2])));
    }

    #[test]
    fn weak_and_foreign_tags_are_valid_but_admit_nothing() {
        for field in [
            "W/\"3\"",
            "\"abc\"",
            "\"0\"",
            "\"-1\"",
            "\"03\"",
            "\"+3\"",
            "\"\"",
            "\"a,b\"",
            "\"99999999999999999999\"",
        ] {
            assert_eq!(of(&[field]), Ok(versions(&[])), "{field}");
        }
        assert_eq!(of(&["W/\"3\", \"4\""]), Ok(versions(&[4])));
        assert_eq!(
            parse(&[b"\"\x80\xff\"".as_slice()]),
            Ok(versions(&[])),
            "obs-text is allowed in a tag"
        );
    }

    #[test]
    fn what_is_no_entity_tag_is_malformed() {
        for fields in [
            &["3"][..],
            &["\"3"],
            &["w/\"3\""],
            &["W/3"],
            &["W/ \"3\""],
            &["\"3\" \"4\""],
            &["\"3\"4"],
            &["\"3\", 4"],
            &["\"a b\""],
            &["\"3\"", "4"],
            &[""],
            &[" , "],
        ] {
            assert!(of(fields).is_err(), "{fields:?}");
        }
        assert!(parse(&[b"\"\x01\"".as_slice()]).is_err());
    }
}
