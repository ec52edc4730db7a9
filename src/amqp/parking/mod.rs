//! The parking of dead letters: the [`Parker`] consumes the dead-letter queue and parks each
//! message in Postgres as [`dead_letter_of`] reads it, where operators find, group, replay and
//! discard them through the REST API and the CLI.

mod dead_letter_record;
mod parker;
#[cfg(test)]
mod random_headers_tests;

pub use dead_letter_record::{dead_letter_of, refused_unread};
pub use parker::Parker;
