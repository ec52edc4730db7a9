//! The inbox consumer, the inbound door: it consumes the inbox in batches ([`Consumer`]),
//! applies each batch's commands in one transaction (`worker`), decides what becomes of each
//! delivery ([`disposition_of`]: acknowledge, retry later, dead-letter, or wait) and settles it strictly
//! after the commit (`settlement`): a retry or dead letter (`replacement`, its attempt count sealed
//! by `attempt_seal`) is confirmed by the
//! broker before the original is acknowledged, in as few acks as the channel allows
//! (`ack_window`).

mod ack_window;
mod attempt_seal;
mod consumer;
mod delivery;
mod disposition;
mod replacement;
mod settlement;
mod worker;

pub use consumer::Consumer;
pub use disposition::{Disposition, disposition_of};
pub use settlement::Settled;
pub use worker::apply;
