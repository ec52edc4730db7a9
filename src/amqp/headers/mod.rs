//! The headers the service reads and writes on messages it passes on — a retry, a dead letter,
//! a parked dead letter and its replay: their names, which ones are bookkeeping (where a message
//! has been rather than what it is), how much of a publisher's headers is carried on
//! (`header_bounds`, `carried_headers`), the trace context (`trace_headers`), and the routing
//! key a message first arrived with (`original_routing_key`). Shared by the inbox and the
//! parking; it depends on neither.

mod carried_headers;
pub mod header_bounds;
mod header_names;
mod original_routing_key;
pub(super) mod trace_headers;

pub(super) use carried_headers::{carried_headers, cut_to, dropped};
pub(super) use original_routing_key::newest_death;
pub use original_routing_key::original_routing_key;

pub(super) use header_names::DEATH_HEADER;
#[cfg(test)]
pub(super) use header_names::DELIVERY_COUNT_HEADER;
pub use header_names::{
    ATTEMPT_HEADER, ATTEMPT_SEAL_HEADER, HEADERS_DROPPED_HEADER, ORIGINAL_ROUTING_KEY_HEADER,
    REASON_HEADER,
};
