//! The AMQP side: the inbound consumer (events drive the same commands as the REST API), the
//! decision table that settles each delivery, the broker topology, the outbox relay that
//! publishes committed events (and replayed dead letters), the parker that moves dead letters
//! into Postgres, and the AsyncAPI document that describes all of it.

mod ack_window;
pub mod asyncapi;
mod connection;
pub mod consumer;
pub mod decision;
pub mod envelope;
pub mod header_bounds;
mod inbound;
pub mod parked;
mod parker;
pub mod properties;
pub mod relay;
mod republish;
pub mod routing;
mod settle;
pub mod topology;
mod trace_headers;
mod worker;

pub use connection::{AmqpError, Backoff, Nodes, connect};
pub use consumer::Consumer;
pub use parker::Parker;
pub use relay::Relay;
pub use topology::Topology;
pub use worker::apply;
