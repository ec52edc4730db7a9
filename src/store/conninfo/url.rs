//! The URL form, step by step as libpq's `conninfo_uri_parse_options` reads it:
//! `postgres[ql]://[user[:password]@][host][:port][,host[:port]…][/dbname][?keyword=value&…]`.
//! The user information ends at the first `@` met before any `/`; each host is a name, an IPv4
//! address or a bracketed IPv6 one, and the host and port lists are joined with commas, then
//! percent-decoded (so `%2F…` is a socket directory). Every part is percent-decoded strictly
//! (`%` and two hex digits, never `%00`), and `ssl=true` means `sslmode=require`.
//! Two refusals are the service's own, for what libpq would take and send elsewhere: an `@`
//! after the user information (a password with an unencoded `@` or `/` would otherwise become
//! part of a host, port or database name, and be shown), and trailing whitespace.

use super::error::{ConninfoError, Part};
use super::settings::Settings;

/// The URL's prefixes, as libpq compares them: exactly, at the very start.
const PREFIXES: [&str; 2] = ["postgresql://", "postgres://"];

/// The text after the prefix, if `text` is a URL.
pub(super) fn strip_prefix(text: &str) -> Option<&str> {
    PREFIXES.iter().find_map(|prefix| text.strip_prefix(prefix))
}

/// The keywords a URL (`rest`: after its prefix) sets.
pub(super) fn parse(rest: &str) -> Result<Settings, ConninfoError> {
    if rest.ends_with(is_c_space) {
        return Err(ConninfoError::TrailingWhitespace);
    }
    let bytes = rest.as_bytes();
    let mut settings = Settings::default();

    // The user information: up to the first `@`, if one comes before any `/`.
    let mut at = 0;
    if let Some(end) = rest.find(['@', '/']).filter(|&end| bytes[end] == b'@') {
        let (user, password) = match rest[..end].split_once(':') {
            Some((user, password)) => (user, Some(password)),
            None => (&rest[..end], None),
        };
        if !user.is_empty() {
            store(&mut settings, "user", decode(user, Part::User)?)?;
        }
        if let Some(password) = password.filter(|password| !password.is_empty()) {
            store(&mut settings, "password", decode(password, Part::Password)?)?;
        }
        at = end + 1;
    }
    if rest[at..].contains('@') {
        return Err(ConninfoError::StrayAt);
    }

    // The hosts, each maybe with a port, separated by commas.
    let (mut hosts, mut ports) = (String::new(), String::new());
    let mut p = at;
    let mut index = 1;
    let terminator = loop {
        if bytes.get(p) == Some(&b'[') {
            let close = rest[p..]
                .find(']')
                .map(|close| p + close)
                .ok_or(ConninfoError::UnclosedIpv6(index))?;
            if close == p + 1 {
                return Err(ConninfoError::EmptyIpv6(index));
            }
            hosts.push_str(&rest[p + 1..close]);
            p = close + 1;
            if !matches!(bytes.get(p), None | Some(b':' | b'/' | b'?' | b',')) {
                return Err(ConninfoError::AfterIpv6(index));
            }
        } else {
            let end = find_from(rest, p, b":/?,");
            hosts.push_str(&rest[p..end]);
            p = end;
        }
        if bytes.get(p) == Some(&b':') {
            let end = find_from(rest, p + 1, b"/?,");
            ports.push_str(&rest[p + 1..end]);
            p = end;
        }
        if bytes.get(p) != Some(&b',') {
            break bytes.get(p).copied();
        }
        p += 1;
        index += 1;
        hosts.push(',');
        ports.push(',');
    };
    if !hosts.is_empty() {
        store(&mut settings, "host", decode(&hosts, Part::Hosts)?)?;
    }
    if !ports.is_empty() {
        store(&mut settings, "port", decode(&ports, Part::Ports)?)?;
    }

    // The database name, after a `/`.
    let mut terminator = terminator;
    if terminator == Some(b'/') {
        let end = find_from(rest, p + 1, b"?");
        let dbname = &rest[p + 1..end];
        if !dbname.is_empty() {
            store(&mut settings, "dbname", decode(dbname, Part::Database)?)?;
        }
        p = end;
        terminator = bytes.get(p).copied();
    }
    if terminator.is_some() {
        query(&rest[p + 1..], &mut settings)?;
    }
    Ok(settings)
}

/// `keyword=value` pairs separated by `&`, each side percent-decoded (libpq's
/// `conninfo_uri_parse_params`); a parameter libpq does not know is refused.
fn query(mut params: &str, settings: &mut Settings) -> Result<(), ConninfoError> {
    let mut after_secret = None;
    while !params.is_empty() {
        let end = params.find('&').unwrap_or(params.len());
        let param = &params[..end];
        params = params.get(end + 1..).unwrap_or("");
        let shown = |raw: &str| match after_secret {
            Some(secret) => Err(ConninfoError::UnknownAfterSecret(secret)),
            None => Ok(raw.to_owned()),
        };
        let Some((raw_keyword, raw_value)) = param.split_once('=') else {
            return Err(ConninfoError::QueryWithoutEquals(shown(param)?));
        };
        if raw_value.contains('=') {
            return Err(ConninfoError::QueryExtraEquals(shown(raw_keyword)?));
        }
        let keyword = decode(raw_keyword, Part::QueryKeyword)?;
        let value = decode(raw_value, Part::QueryValue(keyword.clone()))?;
        let (keyword, value) = match (keyword.as_str(), value.as_str()) {
            ("ssl", "true") => ("sslmode".to_owned(), "require".to_owned()),
            _ => (keyword, value),
        };
        settings.store_item(&keyword, value, &mut after_secret)?;
    }
    Ok(())
}

fn store(settings: &mut Settings, keyword: &str, value: String) -> Result<(), ConninfoError> {
    settings
        .store(keyword, value)
        .map(|_| ())
        .map_err(ConninfoError::unknown_keyword)
}

/// The first of `stops` in `text` from `from`, or the end.
fn find_from(text: &str, from: usize, stops: &[u8]) -> usize {
    text.as_bytes()[from..]
        .iter()
        .position(|byte| stops.contains(byte))
        .map_or(text.len(), |at| from + at)
}

/// libpq's `conninfo_uri_decode`: `%` must be followed by two hex digits, and `%00` is
/// forbidden; the result must be UTF-8 (sqlx takes strings).
fn decode(text: &str, part: Part) -> Result<String, ConninfoError> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        if byte != b'%' {
            bytes.push(byte);
            rest = after;
            continue;
        }
        let hex = |at: usize| {
            after
                .get(at)
                .and_then(|digit| (*digit as char).to_digit(16))
        };
        let (Some(high), Some(low)) = (hex(0), hex(1)) else {
            return Err(ConninfoError::Percent(part));
        };
        let decoded =
            u8::try_from(high * 16 + low).map_err(|_| ConninfoError::Percent(part.clone()))?;
        if decoded == 0 {
            return Err(ConninfoError::PercentZero(part));
        }
        bytes.push(decoded);
        rest = &after[2..];
    }
    String::from_utf8(bytes).map_err(|_| ConninfoError::NotUtf8(part))
}

/// C's `isspace` in the C locale, which libpq uses.
pub(super) fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r')
}
