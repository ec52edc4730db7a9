//! The AMQP side, one folder per component and, beside them, what they share:
//!
//! - `inbox/`: the consumer of the inbox — events drive the same commands as the REST API — with
//!   the decision table that settles each delivery (acknowledge, retry later, dead-letter);
//! - `parking/`: the parker, which moves every dead letter into Postgres;
//! - `relay/`: the outbox relay, which publishes committed events (and replayed dead letters);
//! - `asyncapi/`: the AsyncAPI document that describes all of it;
//! - shared: `inbound/` (the inbound wire: envelopes and their `data`), `headers/` (the headers
//!   carried on a retry, a dead letter and a replay), `topology` (exchanges and queues),
//!   `event_stream` (the stream queue that keeps every published event),
//!   `connection` (nodes, reconnects) and `properties` (a dead letter's properties as JSON).
//!
//! The components depend on the shared modules, never on each other, and a shared module
//! depends on no component.

pub mod asyncapi;
mod connection;
pub mod event_stream;
pub mod headers;
pub mod inbound;
pub mod inbox;
pub mod parking;
pub mod properties;
pub mod relay;
pub mod topology;

pub use connection::{AmqpError, connect};
pub use event_stream::EventStream;
pub use inbox::Consumer;
pub use parking::Parker;
pub use relay::Relay;
pub use topology::Topology;
