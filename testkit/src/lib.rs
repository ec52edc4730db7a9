//! The test kit: what more than one test suite, or the bench, needs of the servers the service
//! runs against and of the service itself. Each suite keeps its own harness (the API suite's
//! in-process router, the AMQP suite's consumers, the chaos and cluster suites' setups) and
//! builds it from these pieces:
//! - [`TestDb`]: a database of a test's own on the shared Postgres, migrated, dropped at the end;
//! - [`private_postgres`]: a Postgres server of a test's own, to stop, restart or make read-only;
//! - [`formation`]: a pg_auto_failover formation of a test's own (a monitor and three nodes), to
//!   fail over by killing, freezing or switching its primary;
//! - [`proxy`]: a TCP proxy a test can cut, between the service and Postgres or RabbitMQ;
//! - [`broker`]: exchange and queue names of a test's own on the shared RabbitMQ, and their
//!   cleanup;
//! - [`service`]: the service's binary as a process, and [`http`], a minimal client for it;
//! - [`load`]: a steady load through both doors, and the check of what it left once settled;
//! - [`previous_release`]: the previous release's binary, built from the commit the repository
//!   names, for the upgrade tests;
//! - [`eventually`], [`free_port`] and [`log_tail`].
//!
//! A library rather than a module each suite includes: every suite uses a different part, and
//! only a library's public items are not dead code where a suite leaves them unused.

pub mod broker;
pub mod formation;
pub mod http;
pub mod load;
mod log_tail;
mod ports;
mod postgres_relay;
pub mod previous_release;
pub mod private_postgres;
pub mod proxy;
pub mod service;
mod test_db;
mod wait;

pub use broker::{
    AMQP_URL, AmqpNames, amqp_config, declare_subscriber, delete_amqp_names, ready_count,
};
pub use log_tail::log_tail;
pub use ports::free_port;
pub use test_db::{ADMIN_URL, TestDb};
use wait::block_on_detached;
pub use wait::eventually;
