//! All SQL of order-service. Each submodule owns one table and how it is read (`keys` finds an
//! Idempotency-Key on whichever table holds it), except the two that write a command's change:
//! `order_changes` (an order's change with its ledger, history and outbox rows; `order_batches`
//! the same for a batch of them) and
//! `dead_letter_actions` (an action with the dead letters it settles and the messages it
//! replays), each as one statement. Functions take a connection (autocommit, or a transaction
//! the caller holds) and speak domain types. Driver errors are classified once, here, into
//! [`StoreError`].

pub mod conninfo;
pub mod dead_letter_actions;
pub mod dead_letters;
mod error;
pub mod failover;
pub mod keys;
mod migration_lock;
pub mod migrations;
pub mod order_batches;
pub mod order_changes;
pub mod orders;
pub mod outbox;
pub mod service_keys;
pub mod transfers;
pub mod transitions;

use std::str::FromStr;
use std::time::Duration;

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, PgPool, Postgres, Transaction};

pub use error::StoreError;
pub use failover::Database;

/// What a guarded write did: it found the rows as the caller read them and changed them, or
/// another writer got there first and nothing was written (the caller re-reads and decides
/// again).
#[derive(Debug)]
pub enum Guarded<T> {
    Applied(T),
    Lost,
}

/// A connection of `pool`. sqlx's acquire future is large (about 14 KiB in a release build):
/// boxed here, once, it is not copied into every future that awaits a statement of the service
/// (bench/README.md "Where the service's CPU goes"). `clippy.toml`'s `future-size-threshold`
/// keeps such futures from coming back.
pub async fn acquire(pool: &PgPool) -> Result<PoolConnection<Postgres>, sqlx::Error> {
    Box::pin(pool.acquire()).await
}

/// A transaction on a connection of `pool`, boxed as [`acquire`] is.
pub async fn begin(pool: &PgPool) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    Box::pin(pool.begin()).await
}

/// A text column read back as its domain type (a status, a kind, a source, …); a value that no
/// longer parses is [`StoreError::Corrupt`], naming the column as `what`.
fn stored<T>(what: &'static str, value: &str) -> Result<T, StoreError>
where
    T: FromStr,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    value.parse().map_err(StoreError::corrupt(what))
}

/// The budget a writing statement passes to `order_service_in_time` (its migration says why), in
/// whole microseconds as an interval holds it.
fn in_time(within: Option<Duration>) -> Option<chrono::Duration> {
    within.map(|budget| {
        chrono::Duration::microseconds(i64::try_from(budget.as_micros()).unwrap_or(i64::MAX))
    })
}

/// Options for the first host of `database_url` (read as [`conninfo`] reads it) where a
/// statement waits at most `lock_timeout` for a row or key lock held by another transaction (an
/// in-flight duplicate request) before it fails with [`StoreError::Busy`].
pub fn connect_options(
    database_url: &str,
    lock_timeout: Duration,
) -> Result<PgConnectOptions, conninfo::ConninfoError> {
    let first = conninfo::Conninfo::parse(database_url)?
        .into_hosts()
        .into_iter()
        .next()
        // Never taken: a URL names at least one host (the default one if none).
        .unwrap_or_default();
    Ok(waiting_for_locks(first, lock_timeout))
}

/// The hosts `database_url` lists (one, or several in libpq's form: [`failover`]), each with
/// the `lock_timeout` of [`connect_options`].
pub fn database(
    database_url: &str,
    lock_timeout: Duration,
) -> Result<Database, conninfo::ConninfoError> {
    Ok(Database::parse(database_url)?.map_hosts(|host| waiting_for_locks(host, lock_timeout)))
}

fn waiting_for_locks(options: PgConnectOptions, lock_timeout: Duration) -> PgConnectOptions {
    options.options([("lock_timeout", format!("{}ms", lock_timeout.as_millis()))])
}

/// Until the end of the transaction `tx` is in, a statement waits at most `wait` for a lock
/// another transaction holds before it fails with [`StoreError::Busy`] (`SET LOCAL lock_timeout`,
/// as a statement that can take a parameter).
pub async fn wait_for_locks_at_most(
    tx: &mut sqlx::PgConnection,
    wait: Duration,
) -> Result<(), StoreError> {
    sqlx::query("SELECT set_config('lock_timeout', $1, true)")
        .bind(format!("{}ms", wait.as_millis()))
        .execute(tx)
        .await?;
    Ok(())
}

/// A connection that waited in the pool longer than this is checked before it is handed out
/// again: pinged, or with several hosts asked its role (`failover`). A fresher one is not: it
/// answered its last statement less than this ago, and a socket broken since fails that caller's
/// first statement, and the connection is dropped when given back (docs/architecture.md
/// "Connection checks").
pub const CHECK_IDLE_AFTER: Duration = Duration::from_secs(1);

/// A lazily connecting pool: the service starts (and reports not-ready) while Postgres is down.
/// A connection is pinged only after [`CHECK_IDLE_AFTER`] idle, not at every acquire as sqlx
/// would: that ping was a round trip in every request.
pub fn pool(options: PgConnectOptions, max_connections: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(3))
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for < CHECK_IDLE_AFTER {
                    return Ok(true);
                }
                conn.ping().await.map(|()| true)
            })
        })
        .connect_lazy_with(options)
}

/// [`prepare_database`] on the first host of `database` with the role it asks for (the
/// writable one, by default), so that a standby listed first is never asked to create or migrate.
pub async fn prepare(database: &Database) -> Result<(), StoreError> {
    if let [one] = database.hosts() {
        return prepare_database(one).await;
    }
    // Asked on the maintenance database: the service's own may not exist yet.
    let (index, conn) = database
        .clone()
        .map_hosts(|host| host.database("postgres"))
        .find()
        .await
        .map_err(|no_host| StoreError::Unavailable(no_host.last))?;
    conn.close().await?;
    prepare_database(&database.hosts()[index]).await
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

pub use migrations::migrate;

/// Whether Postgres answers and a transaction there may write (`transaction_read_only` is
/// `off`): `false` on a standby, or on a primary demoted or turned read-only during a failover.
pub async fn accepts_writes(pool: &PgPool) -> Result<bool, StoreError> {
    let read_only: String = sqlx::query_scalar("SHOW transaction_read_only")
        .fetch_one(pool)
        .await?;
    Ok(read_only == "off")
}
