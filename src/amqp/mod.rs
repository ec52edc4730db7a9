//! The AMQP door: the inbound consumer (events drive the same commands as the REST API), the
//! broker topology it declares, and the decision table that settles each delivery.

mod connection;
pub mod consumer;
pub mod decision;
pub mod envelope;
pub mod topology;

pub use connection::{AmqpError, Backoff, connect};
pub use consumer::Consumer;
pub use topology::Topology;
