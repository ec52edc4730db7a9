//! The REST API suite: every endpoint, idempotency, races and bad input, against a real Postgres.

mod asyncapi;
mod auth;
mod bad_input;
mod cli;
mod commit_cut;
mod conditional_requests;
mod console_page;
mod dead_letters;
mod events_page;
mod expiry;
mod helpers;
mod idempotency;
mod idempotency_header;
mod lifecycle;
mod limits;
mod openapi;
mod ops;
mod order_pages;
mod orders;
mod payments;
mod pool_checks;
mod races;
mod refunds;
mod serving;
mod strict_bodies;
mod upgrade;
