//! The command-line door for operators: `order-service dead-letters list|show|replay|discard`
//! runs the same application commands as `/v1/dead-letters`, straight against the database
//! (docs/operations/dead-letters.md); `order-service outbox …` reads and moves the relay's cursor
//! (docs/operations/upgrading.md "Upgrading: the outbox as a log"). Output is for people (tables) or, with
//! `--json`, the REST API's shapes for scripts.

pub mod dead_letters_command;
pub mod outbox;
mod output;
mod table;

pub use dead_letters_command::DeadLettersArgs;
pub use outbox::OutboxArgs;
