//! The AMQP side: the inbound consumer (events drive the same commands as the REST API), the
//! decision table that settles each delivery, the broker topology, and the outbox relay that
//! publishes committed events.

mod connection;
pub mod consumer;
pub mod decision;
pub mod envelope;
pub mod relay;
mod republish;
pub mod topology;
mod trace_headers;
mod worker;

pub use connection::{AmqpError, Backoff, connect};
pub use consumer::Consumer;
pub use relay::Relay;
pub use topology::Topology;
pub use worker::apply;
