//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): parsing and formatting the
//! `traceparent` and `tracestate` headers, and the one rule for a unit of the service's work (a
//! request, a delivery, a publish): continue the caller's trace, or start one when the caller
//! sent none or a malformed one. A malformed header never fails anything; it is ignored. See
//! docs/operations/observability.md "Tracing".
//!
//! Not `opentelemetry_sdk`'s `TraceContextPropagator` (0.33): run in place of this parser, it
//! failed 6 of these 17 tests. It reads a 31-digit trace id or a 17-digit span id as another id
//! (`u128::from_str_radix`, also taking a `+`), and takes version `0`, an uppercase version, a
//! one-digit flag and a trailing `-`; its `tracestate` keeps empty, non-ASCII and control-character
//! values and repeated keys, cuts a 33rd entry instead of refusing it, and has no 512-byte bound.
//! A validator for those rules would be this parser again; writing `traceparent` through it takes
//! a `Context` and a map for one `format!`.

mod tracestate;

use std::fmt;

pub use tracestate::{TRACESTATE_MAX_BYTES, TraceState};

/// The header names, as both doors and the relay carry them.
pub const TRACEPARENT: &str = "traceparent";
pub const TRACESTATE: &str = "tracestate";

/// The length of a version-00 `traceparent`: `00-<32 hex>-<16 hex>-<2 hex>`.
const TRACEPARENT_LEN: usize = 55;
/// The `sampled` trace flag; the only one this service passes on.
const SAMPLED: u8 = 0x01;

/// An id of `N` bytes as W3C Trace Context defines them, never all zeros: a [`TraceId`] or a
/// [`SpanId`], told apart by their length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct W3cId<const N: usize>([u8; N]);

/// A 16-byte trace id.
pub type TraceId = W3cId<16>;

/// An 8-byte span id.
pub type SpanId = W3cId<8>;

impl<const N: usize> W3cId<N> {
    /// `None` for the all-zero id, which W3C reserves as invalid.
    pub fn from_bytes(bytes: [u8; N]) -> Option<Self> {
        (bytes != [0; N]).then_some(Self(bytes))
    }

    pub fn to_bytes(self) -> [u8; N] {
        self.0
    }

    fn random() -> Self {
        Self::from_bytes(random_bytes()).unwrap_or(Self([0x42; N]))
    }
}

impl<const N: usize> fmt::Display for W3cId<N> {
    /// Lowercase hex, written whole: `hex::encode` builds a `String` one `char` at a time, which
    /// showed in the profile of every request (bench/README.md "Where the service's CPU goes").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buffer = [0; 64];
        let digits = buffer.get_mut(..2 * N).ok_or(fmt::Error)?;
        hex::encode_to_slice(self.0, digits).map_err(|_| fmt::Error)?;
        f.write_str(std::str::from_utf8(digits).map_err(|_| fmt::Error)?)
    }
}

/// Random bytes for a new id. The system's random source does not fail on the platforms the
/// service runs on; if it did, ids made from a fresh v4 UUID (itself random) are still unique
/// enough to tell traces apart.
fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    if getrandom::fill(&mut bytes).is_err() {
        let uuid = uuid::Uuid::new_v4();
        for (byte, from) in bytes.iter_mut().zip(uuid.as_bytes().iter().cycle()) {
            *byte = *from;
        }
    }
    bytes
}

/// A position in a trace: the trace, the span that owns this context (the caller's span for a
/// context read from a message or request; the service's own span for one it made), whether the
/// trace is sampled, and the vendors' `tracestate` passed along unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: TraceId,
    span_id: SpanId,
    sampled: bool,
    state: Option<TraceState>,
}

impl TraceContext {
    pub fn new(trace_id: TraceId, span_id: SpanId, sampled: bool) -> Self {
        Self {
            trace_id,
            span_id,
            sampled,
            state: None,
        }
    }

    /// The same position with `state` as its `tracestate`.
    pub fn with_state(mut self, state: Option<TraceState>) -> Self {
        self.state = state;
        self
    }

    /// A caller's context from its headers; `None` when `traceparent` is absent or malformed
    /// (the `tracestate` then means nothing, W3C §3.3). A malformed `tracestate` alone is
    /// dropped and the `traceparent` still holds.
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<Self> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent?)?;
        Some(Self {
            trace_id,
            span_id,
            sampled: flags & SAMPLED != 0,
            state: tracestate.and_then(TraceState::parse),
        })
    }

    /// A new trace, sampled, whose first span is the service's.
    pub fn start() -> Self {
        Self::new(TraceId::random(), SpanId::random(), true)
    }

    /// A span of the service's own under this one: the same trace, sampling and `tracestate`,
    /// a new span id.
    pub fn child(&self) -> Self {
        Self {
            span_id: SpanId::random(),
            ..self.clone()
        }
    }

    /// The one rule for a unit of work: continue the caller's trace if it sent a valid one,
    /// otherwise start a new one.
    pub fn continue_or_start(parent: Option<&Self>) -> Self {
        parent.map_or_else(Self::start, Self::child)
    }

    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    pub fn span_id(&self) -> SpanId {
        self.span_id
    }

    pub fn sampled(&self) -> bool {
        self.sampled
    }

    pub fn state(&self) -> Option<&TraceState> {
        self.state.as_ref()
    }

    /// The `traceparent` header (version 00) naming this context's span as the parent.
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { SAMPLED } else { 0 };
        format!("00-{}-{}-{flags:02x}", self.trace_id, self.span_id)
    }

    /// The `tracestate` header, if there is one to send.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_ref().map(TraceState::as_str)
    }
}

/// `version-traceid-parentid-flags`, lowercase hex only (W3C §3.2). Version `ff` is invalid; a
/// version above 00 may append fields after a `-`, which are ignored, as the specification asks
/// of a parser that knows only 00.
fn parse_traceparent(header: &str) -> Option<(TraceId, SpanId, u8)> {
    let header = header.trim_matches([' ', '\t']);
    let bytes = header.as_bytes();
    let version = hex_bytes::<1>(bytes.get(..2)?)?[0];
    let exact = match version {
        0xff => return None,
        0x00 => bytes.len() == TRACEPARENT_LEN,
        _ => bytes.len() == TRACEPARENT_LEN || bytes.get(TRACEPARENT_LEN) == Some(&b'-'),
    };
    if !exact || bytes[2] != b'-' || bytes[35] != b'-' || bytes[52] != b'-' {
        return None;
    }
    let trace_id = TraceId::from_bytes(hex_bytes(&bytes[3..35])?)?;
    let span_id = SpanId::from_bytes(hex_bytes(&bytes[36..52])?)?;
    let flags = hex_bytes::<1>(&bytes[53..55])?[0];
    Some((trace_id, span_id, flags))
}

/// `N` bytes from exactly `2 * N` lowercase hex digits.
fn hex_bytes<const N: usize>(digits: &[u8]) -> Option<[u8; N]> {
    if digits.len() != 2 * N
        || !digits
            .iter()
            .all(|d| matches!(d, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    let mut bytes = [0; N];
    hex::decode_to_slice(digits, &mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const SPAN: &str = "00f067aa0ba902b7";

    fn parent(header: &str) -> Option<TraceContext> {
        TraceContext::from_headers(Some(header), None)
    }

    #[test]
    fn a_valid_traceparent_is_read_and_written_back_unchanged() {
        let header = format!("00-{TRACE}-{SPAN}-01");
        let context = parent(&header).expect("valid");
        assert_eq!(context.trace_id().to_string(), TRACE);
        assert_eq!(context.span_id().to_string(), SPAN);
        assert!(context.sampled());
        assert_eq!(context.traceparent(), header);
        assert!(!parent(&format!("00-{TRACE}-{SPAN}-00")).unwrap().sampled());
    }

    #[test]
    fn surrounding_spaces_and_tabs_are_ignored() {
        assert!(parent(&format!(" \t00-{TRACE}-{SPAN}-01 ")).is_some());
        assert_eq!(
            parent(&format!("\n00-{TRACE}-{SPAN}-01")),
            None,
            "not other whitespace"
        );
    }

    #[test]
    fn a_later_version_is_read_by_its_version_00_fields_and_its_extra_fields_are_ignored() {
        let context = parent(&format!("01-{TRACE}-{SPAN}-01")).expect("same length");
        assert_eq!(context.traceparent(), format!("00-{TRACE}-{SPAN}-01"));
        assert!(parent(&format!("cc-{TRACE}-{SPAN}-01-what-the-future-holds")).is_some());
        // Without the separator the extra characters are not a field.
        assert_eq!(parent(&format!("cc-{TRACE}-{SPAN}-01x")), None);
    }

    #[test]
    fn version_ff_and_malformed_versions_are_invalid() {
        for version in ["ff", "FF", "0", "0g", "-0", "0A"] {
            assert_eq!(
                parent(&format!("{version}-{TRACE}-{SPAN}-01")),
                None,
                "{version}"
            );
        }
    }

    #[test]
    fn version_00_must_have_exactly_its_length() {
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}-01-")), None);
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}-01-extra")), None);
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}-1")), None);
        assert_eq!(parent(&format!("00-{TRACE}0-{SPAN}-01")), None);
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}0-01")), None);
        assert_eq!(parent(&format!("00-{}-{SPAN}-01", &TRACE[1..])), None);
        assert_eq!(parent(&format!("00-{TRACE}-{}-01", &SPAN[1..])), None);
        assert_eq!(parent(""), None);
        assert_eq!(parent("00"), None);
    }

    #[test]
    fn all_zero_ids_are_invalid() {
        assert_eq!(parent(&format!("00-{}-{SPAN}-01", "0".repeat(32))), None);
        assert_eq!(parent(&format!("00-{TRACE}-{}-01", "0".repeat(16))), None);
    }

    #[test]
    fn uppercase_or_non_hex_digits_are_invalid() {
        assert_eq!(
            parent(&format!("00-{}-{SPAN}-01", TRACE.to_uppercase())),
            None
        );
        assert_eq!(
            parent(&format!("00-{TRACE}-{}-01", SPAN.to_uppercase())),
            None
        );
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}-0A")), None);
        assert_eq!(parent(&format!("00-{}g-{SPAN}-01", &TRACE[1..])), None);
        assert_eq!(parent(&format!("00-+{}-{SPAN}-01", &TRACE[1..])), None);
        assert_eq!(parent(&format!("00_{TRACE}-{SPAN}-01")), None);
        assert_eq!(parent(&format!("00-{TRACE}-{SPAN}-é")), None);
    }

    #[test]
    fn only_the_sampled_flag_is_passed_on() {
        let context = parent(&format!("00-{TRACE}-{SPAN}-ff")).expect("valid");
        assert!(context.sampled());
        assert!(context.traceparent().ends_with("-01"));
        assert!(!parent(&format!("00-{TRACE}-{SPAN}-02")).unwrap().sampled());
    }

    #[test]
    fn a_tracestate_needs_a_valid_traceparent_and_a_bad_one_is_dropped_alone() {
        let header = format!("00-{TRACE}-{SPAN}-01");
        assert_eq!(TraceContext::from_headers(None, Some("a=1")), None);
        assert_eq!(TraceContext::from_headers(Some("bad"), Some("a=1")), None);
        let with_state = TraceContext::from_headers(Some(&header), Some("a=1,b=2")).unwrap();
        assert_eq!(with_state.tracestate(), Some("a=1,b=2"));
        let bad_state = TraceContext::from_headers(Some(&header), Some("A=1")).unwrap();
        assert_eq!(bad_state.tracestate(), None);
        assert_eq!(bad_state.trace_id().to_string(), TRACE);
    }

    #[test]
    fn continuing_keeps_the_trace_sampling_and_state_with_a_new_span() {
        let caller =
            TraceContext::from_headers(Some(&format!("00-{TRACE}-{SPAN}-00")), Some("v=x"))
                .unwrap();
        let ours = TraceContext::continue_or_start(Some(&caller));
        assert_eq!(ours.trace_id(), caller.trace_id());
        assert_ne!(ours.span_id(), caller.span_id());
        assert!(!ours.sampled());
        assert_eq!(ours.tracestate(), Some("v=x"));
        assert_eq!(parent(&ours.traceparent()), Some(ours.with_state(None)));
    }

    #[test]
    fn without_a_caller_a_new_sampled_trace_starts() {
        let first = TraceContext::continue_or_start(None);
        let second = TraceContext::continue_or_start(None);
        assert_ne!(first.trace_id(), second.trace_id());
        assert!(first.sampled());
        assert_eq!(first.tracestate(), None);
        assert_eq!(parent(&first.traceparent()), Some(first));
    }
}
