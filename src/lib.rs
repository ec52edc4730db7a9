//! order-service: owns the lifecycle of orders and the money paid for them.
//!
//! Layers, outermost first: two doors, [`http`] (the REST API) and [`amqp`] (the consumer of
//! inbound events, and the outbox relay that publishes outbound ones), both call [`app`], which
//! decides and owns the outcomes (a command is two statements and no transaction of its own; a
//! consumer batch is one transaction, which `app` opens: docs/architecture.md "Two statements,
//! no transaction"); [`store`] holds all SQL; [`domain`] is pure. [`auth`] knows the
//! API's clients; [`health`] carries the readiness of background components; [`release`] names the build. [`startup`] wires
//! them together from [`config`] into a [`startup::Service`]; [`telemetry`] sets up logs,
//! traces and metrics; [`expiry_sweep`] cancels orders left unpaid too long; [`cli`] is the operators' command
//! line for parked dead letters; both doors read what clients send through [`strict_json`].
//! `docs/architecture.md` is the map for newcomers.

// The service never unwraps: a failure is an error it handles or reports.
#![warn(clippy::unwrap_used, clippy::expect_used)]

pub mod amqp;
pub mod app;
pub mod auth;
pub mod cli;
pub mod config;
pub mod domain;
pub mod expiry_sweep;
pub mod health;
pub mod http;
pub mod release;
pub mod startup;
pub mod store;
pub mod strict_json;
pub mod telemetry;
