//! Deploys without downtime (docs/operations/upgrading.md): a release runs on a schema a newer
//! release migrated only when that release declared it compatible (`schema.rs`); every migration
//! keeps the previous release working (`migration_rules.rs`), and migrates beside the previous
//! release and older transactions without a deadlock or an index left half built
//! (`migration_locks.rs`); and a rolling upgrade from the
//! previous release (built from the commit `deploy/previous-release` names) and a rollback to
//! it, under REST and AMQP load, lose, double and refuse nothing (`rolling.rs`).

mod migration_locks;
mod migration_rules;
mod rolling;
mod schema;
