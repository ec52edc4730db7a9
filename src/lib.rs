//! order-service: owns the lifecycle of orders and the money paid for them.
//!
//! Layers, outermost first: [`http`] is the REST door and calls [`app`], which owns transactions
//! and outcomes; [`store`] holds all SQL; [`domain`] is pure. [`auth`] knows the API's clients.
//! [`startup`] wires them together from [`config`]; [`telemetry`] sets up logs and metrics.

pub mod amqp;
pub mod app;
pub mod auth;
pub mod config;
pub mod domain;
pub mod health;
pub mod http;
pub mod startup;
pub mod store;
pub mod telemetry;
