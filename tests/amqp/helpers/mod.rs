//! The AMQP suite's harness, one idea a file: the [`Harness`] itself (database, topology,
//! in-process components), publishing, the REST door, what the database holds, what the queues
//! hold, dead letters, and the service's binary as a process.

mod dead_letter_queue;
mod harness;
mod publish;
mod queues;
pub mod rabbitmqctl;
mod rest;
mod service_process;
mod stored;

pub use dead_letter_queue::{DeadLetter, Parked};
pub use harness::{Harness, WAIT, relay_config, test_config};
pub use publish::envelope;
pub use queues::Published;
pub use service_process::TempFile;
