//! order-service: owns the lifecycle of orders and the money paid for them.
//!
//! Layers, outermost first: [`http`] and [`amqp`] are the two doors; both call [`app`], which owns
//! transactions and outcomes; [`store`] holds all SQL; [`domain`] is pure.

pub mod domain;
