//! A model checker over order-service's protocol (docs/architecture.md "The model of the
//! protocol"): the guarded writes, the unique ledger, the Idempotency-Key record, the consumers'
//! batches with their lost-race rounds and one-by-one fallback, deliveries with duplicates,
//! redeliveries, premature retries and parking, a REST caller, and the outbox relay reading a log
//! by position below the xmin horizon. Every interleaving of their steps, within small bounds
//! ([`Protocol::ci`]), is explored, and the invariants of docs/contract.md "Invariants" are
//! checked in every state reached.
//!
//! The steps are statements: what each reads and writes, with READ COMMITTED visibility, row
//! locks and unique indexes that make a writer wait for a running transaction, and a transaction
//! id taken at a transaction's first write. A broken [`Variant`] changes one rule, to show that the
//! invariant guarding it fails with a readable trace ([`trace`]).
//!
//! Why stateright: it checks a model of a protocol, a state machine whose steps we choose, with
//! breadth-first search (shortest counterexamples), deduplication of states, and safety
//! ("always") and reachability ("sometimes") properties; and it is maintained and pure Rust.
//! loom and shuttle explore the schedules of real threads of one process: our concurrency lives
//! between processes and inside Postgres (locks, snapshots, xids), which they cannot see. kani
//! proves properties of Rust functions by bounded model checking, not of the interleavings of a
//! distributed protocol.

mod consumer;
mod domain;
mod invariants;
mod protocol;
mod relay;
mod rest;
mod state;
mod statement;
mod trace;

pub use domain::{Command, Event, OrderId, Status};
pub use protocol::{
    ACKNOWLEDGED_WRITE_KEPT, Action, EFFECT_AT_MOST_ONCE, INVARIANTS, KEY_IS_ONE_REQUEST,
    PUBLISHED_AT_LEAST_ONCE, PUBLISHED_IN_VERSION_ORDER, Protocol, REACHES_FALLBACK,
    REACHES_KEY_REUSE, REACHES_LATE_POSITION, REACHES_LOST_ROUND, REACHES_PARKING_AND_REPLAY,
    REACHES_PREMATURE_RETRY, REACHES_REPUBLICATION, RestRequest, Variant,
};
pub use state::State;
pub use trace::trace;
