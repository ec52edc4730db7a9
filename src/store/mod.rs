//! All SQL of order-service. Each submodule owns one table (`keys` finds an Idempotency-Key on
//! whichever table holds it); functions take a connection (usually inside the caller's
//! transaction) and speak domain types. Driver errors are classified once, here, into
//! [`StoreError`].

pub mod dead_letter_actions;
pub mod dead_letters;
mod error;
pub mod keys;
pub mod orders;
pub mod outbox;
pub mod transfers;
pub mod transitions;

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool};

pub use error::StoreError;

/// What a guarded write did: it found the row as the caller read it and changed it, or another
/// writer had changed it first (the caller rolls back, re-reads and decides again).
#[derive(Debug)]
pub enum Guarded<T> {
    Applied(T),
    Lost,
}

/// What an insert guarded by a unique key did: it wrote a new row, or the key was taken (by a
/// committed row, or by a concurrent transaction it waited for).
#[derive(Debug)]
pub enum Inserted<T> {
    New(T),
    Taken,
}

/// What an insert of a row carrying a request's key did: [`Inserted::Taken`] when a guard of a
/// concurrent writer's (the key, or another unique guard classed `Contended`) refused it.
fn keyed_insert<R>(written: Result<R, sqlx::Error>) -> Result<Inserted<()>, StoreError> {
    match written.map_err(StoreError::from) {
        Ok(_) => Ok(Inserted::New(())),
        Err(StoreError::Contended(_)) => Ok(Inserted::Taken),
        Err(error) => Err(error),
    }
}

/// Options for `database_url` where a statement waits at most `lock_timeout` for a row or key
/// lock held by another transaction (an in-flight duplicate request) before it fails with
/// [`StoreError::Busy`].
pub fn connect_options(
    database_url: &str,
    lock_timeout: Duration,
) -> Result<PgConnectOptions, sqlx::Error> {
    let options: PgConnectOptions = database_url.parse()?;
    Ok(options.options([("lock_timeout", format!("{}ms", lock_timeout.as_millis()))]))
}

/// A lazily connecting pool: the service starts (and reports not-ready) while Postgres is down.
pub fn pool(options: PgConnectOptions, max_connections: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(3))
        .connect_lazy_with(options)
}

/// Creates the database named in `options` if it does not exist, then applies the migrations.
pub async fn prepare_database(options: &PgConnectOptions) -> Result<(), StoreError> {
    let name = options.get_database().unwrap_or("postgres").to_owned();
    let mut admin = options.clone().database("postgres").connect().await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&mut admin)
            .await?;
    if !exists {
        // Identifiers cannot be bound; quote it ourselves (doubling quotes is Postgres' escape).
        let create = format!("CREATE DATABASE \"{}\"", name.replace('"', "\"\""));
        match sqlx::raw_sql(sqlx::AssertSqlSafe(create))
            .execute(&mut admin)
            .await
        {
            Ok(_) => {}
            // Another instance created it in the meantime (42P04 if it had committed, or a
            // unique violation on the catalog if both raced).
            Err(sqlx::Error::Database(e))
                if matches!(e.code().as_deref(), Some("42P04" | "23505")) => {}
            Err(e) => return Err(e.into()),
        }
    }
    admin.close().await?;
    let mut conn = options.connect().await?;
    migrate(&mut conn).await?;
    conn.close().await?;
    Ok(())
}

pub async fn migrate(conn: &mut sqlx::PgConnection) -> Result<(), StoreError> {
    sqlx::migrate!("./migrations")
        .run(conn)
        .await
        .map_err(StoreError::Migrate)
}

/// `SELECT 1`: is Postgres answering?
pub async fn ping(pool: &PgPool) -> Result<(), StoreError> {
    sqlx::query("SELECT 1").execute(pool).await?;
    Ok(())
}
