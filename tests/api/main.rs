//! The REST API suite: every endpoint, idempotency, races and bad input, against a real Postgres.

mod helpers;
mod openapi;
mod ops;
mod orders;
