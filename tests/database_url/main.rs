//! `DATABASE_URL` as the contract says (docs/operations/configuration.md "DATABASE_URL"): read
//! as libpq reads it, checked against libpq itself (`libpq.rs`), and no part of a password in
//! anything the binary prints, whatever the URL and the log level (`secrets.rs`). No database
//! is needed: the binary is only ever given hosts that refuse it.

mod libpq;
mod secrets;
