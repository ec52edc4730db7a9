//! The AMQP suite: the consumer and the outbox relay against a real RabbitMQ and Postgres, and
//! the trace context they carry (with the service's binary exporting spans to a stand-in OTLP
//! collector).

mod asyncapi;
mod batches;
mod collector;
mod consumer;
mod consumer_faults;
mod crash_loop;
mod dead_letters;
mod endpoints;
mod event_stream;
mod forged_bookkeeping;
mod helpers;
mod hostile;
mod memory;
mod money_bounds;
mod outbox_log;
mod raw_amqp;
mod refunds;
mod relay;
mod relay_faults;
mod republish;
mod trace_export;
mod trace_propagation;
