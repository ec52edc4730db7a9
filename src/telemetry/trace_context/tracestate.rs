//! The `tracestate` header (W3C Trace Context §3.3): vendors' entries, passed along unchanged
//! but validated and bounded, so a caller cannot make the service store or send an unbounded or
//! malformed value.

use std::collections::HashSet;

/// The most a `tracestate` this service stores or sends may take: W3C §3.3.1.5 asks every
/// vendor to pass on at least 512 characters, and lets it cut a longer one.
pub const TRACESTATE_MAX_BYTES: usize = 512;
/// The most entries a `tracestate` may hold (W3C §3.3.1.1).
const MAX_MEMBERS: usize = 32;
/// Entries longer than this go first when a `tracestate` must be cut (W3C §3.3.1.5).
const LARGE_MEMBER: usize = 128;
/// A header longer than this is not even read: 32 entries of the longest legal key and value.
const MAX_INPUT_BYTES: usize = MAX_MEMBERS * (256 + 1 + 256) + 2 * MAX_MEMBERS;

/// A valid `tracestate` of at most [`TRACESTATE_MAX_BYTES`], entries joined by `,`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceState(String);

impl TraceState {
    /// The header's entries, validated; `None` when it is malformed, repeats a key, holds more
    /// than 32 entries, or holds none. Blank entries are skipped. When the entries exceed
    /// [`TRACESTATE_MAX_BYTES`], entries over 128 characters are dropped first, then entries from
    /// the end, as W3C prescribes.
    pub fn parse(header: &str) -> Option<Self> {
        if header.len() > MAX_INPUT_BYTES {
            return None;
        }
        let members: Vec<&str> = header
            .split(',')
            .map(|member| member.trim_matches([' ', '\t']))
            .filter(|member| !member.is_empty())
            .collect();
        if members.is_empty() || members.len() > MAX_MEMBERS {
            return None;
        }
        let mut keys = HashSet::with_capacity(members.len());
        for member in &members {
            let (key, value) = member.split_once('=')?;
            if !valid_key(key) || !valid_value(value) || !keys.insert(key) {
                return None;
            }
        }
        Some(Self(bounded(members)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The entries joined, cut to [`TRACESTATE_MAX_BYTES`].
fn bounded(mut members: Vec<&str>) -> String {
    let length = |members: &[&str]| {
        members.iter().map(|m| m.len()).sum::<usize>() + members.len().saturating_sub(1)
    };
    if length(&members) > TRACESTATE_MAX_BYTES {
        members.retain(|member| member.len() <= LARGE_MEMBER);
    }
    while length(&members) > TRACESTATE_MAX_BYTES {
        members.pop();
    }
    members.join(",")
}

/// `simple-key` or `tenant-id@system-id` (W3C §3.3.1.3.1).
fn valid_key(key: &str) -> bool {
    match key.split_once('@') {
        None => key_part(key, 256, |c| c.is_ascii_lowercase()),
        Some((tenant, system)) => {
            key_part(tenant, 241, |c| {
                c.is_ascii_lowercase() || c.is_ascii_digit()
            }) && key_part(system, 14, |c| c.is_ascii_lowercase())
        }
    }
}

/// 1 to `max` characters: the first as `first` allows, the rest lowercase letters, digits and
/// `_ - * /`.
fn key_part(part: &str, max: usize, first: impl Fn(char) -> bool) -> bool {
    let mut chars = part.chars();
    chars.next().is_some_and(first)
        && part.len() <= max
        && chars.all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '*' | '/')
        })
}

/// 1 to 256 printable ASCII characters except `,` and `=` (W3C §3.3.1.3.2); it cannot end in
/// a space, which [`TraceState::parse`] trims as padding around the entry.
fn valid_value(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && value
            .chars()
            .all(|c| matches!(c, ' '..='~') && c != ',' && c != '=')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(header: &str) -> Option<String> {
        TraceState::parse(header).map(|state| state.as_str().to_owned())
    }

    #[test]
    fn valid_entries_are_kept_in_order_without_blank_ones_or_padding() {
        assert_eq!(
            parsed("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE ,,\tacme@vendor=x y"),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE,acme@vendor=x y".into())
        );
        assert_eq!(parsed("a_-*/9=v"), Some("a_-*/9=v".into()));
        assert_eq!(parsed("k=inner space \t"), Some("k=inner space".into()));
        assert_eq!(parsed("1tenant@sys=v"), Some("1tenant@sys=v".into()));
    }

    #[test]
    fn malformed_keys_or_values_drop_the_whole_header() {
        for header in [
            "",
            " , ",
            "novalue",
            "Upper=1",
            "1digit=1",
            "k=",
            "k=a,b",
            "k=a=b",
            "k=caf\u{e9}",
            "k=tab\there",
            "k=nul\u{0}",
            "@sys=1",
            "tenant@=1",
            "tenant@Sys=1",
            "tenant@1sys=1",
            "tenant@systemnametoolong=1",
            "a=1,a=2",
        ] {
            assert_eq!(parsed(header), None, "{header:?}");
        }
    }

    #[test]
    fn at_most_32_entries_are_accepted() {
        let entries = |n: usize| {
            (0..n)
                .map(|i| format!("k{i}=v"))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert!(parsed(&entries(32)).is_some());
        assert_eq!(parsed(&entries(33)), None);
    }

    #[test]
    fn keys_and_values_have_their_bounds() {
        assert!(parsed(&format!("{}=v", "k".repeat(256))).is_some());
        assert_eq!(parsed(&format!("{}=v", "k".repeat(257))), None);
        assert!(parsed(&format!("k={}", "v".repeat(256))).is_some());
        assert_eq!(parsed(&format!("k={}", "v".repeat(257))), None);
    }

    #[test]
    fn a_long_tracestate_loses_its_large_entries_first_then_entries_from_the_end() {
        let large = format!("big={}", "x".repeat(200));
        let small: Vec<String> = (0..31)
            .map(|i| format!("k{i:02}={}", "v".repeat(20)))
            .collect();
        let header = format!("{},{large}", small.join(","));
        let state = parsed(&header).expect("valid, cut");
        assert!(state.len() <= TRACESTATE_MAX_BYTES, "{}", state.len());
        assert!(!state.contains("big="), "the large entry goes first");
        assert!(state.starts_with("k00="), "the first entries stay: {state}");
        assert!(!state.contains("k30="), "the last entries go: {state}");
        // Every kept entry is whole.
        assert!(state.split(',').all(|m| m.len() == 24), "{state}");
    }

    #[test]
    fn a_huge_header_is_refused_unread() {
        assert_eq!(parsed(&"k=v,".repeat(10_000)), None);
    }
}
