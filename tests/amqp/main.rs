//! The AMQP suite: the consumer (and later the outbox relay) against a real RabbitMQ and Postgres.

mod asyncapi;
#[path = "../common/mod.rs"]
mod common;
mod consumer;
mod consumer_faults;
mod crash_loop;
mod dead_letters;
mod helpers;
mod refunds;
mod relay;
mod republish;
