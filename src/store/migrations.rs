//! The schema's migrations, and whether this release may run on a schema that a newer release
//! has migrated (docs/operations/upgrading.md "Migrations both releases survive").
//!
//! A migration this release does not know is one a newer release applied. It runs beside it only
//! if that migration is declared compatible: the newer release's migration writes a row of
//! `schema_compatibility` naming the oldest migration a release must know to keep working with
//! it applied. Anything else (no row, or a row asking for a migration newer than this release's
//! last) refuses to start with [`StoreError::IncompatibleSchema`], naming the migration, instead
//! of sqlx's "previously applied but is missing". The check and the migration run under the
//! migrator's advisory lock (`migration_lock`), so a newer release cannot migrate in between.

use sqlx::PgConnection;
use sqlx::migrate::Migrator;

use super::{StoreError, migration_lock};

/// This release's migrations, embedded in the binary.
fn migrator() -> Migrator {
    sqlx::migrate!("./migrations")
}

/// The newest migration this release knows.
pub fn latest_known() -> i64 {
    migrator().iter().map(|m| m.version).max().unwrap_or(0)
}

/// A migration this release does not know, as the schema declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub migration: i64,
    /// The oldest migration a release must know to run with this one applied; `None` when no
    /// release declared it compatible.
    pub oldest_compatible: Option<i64>,
    /// The release that added it, where the schema says (from 0.3.0 on).
    pub release: Option<String>,
}

/// Applies this release's migrations that are not applied yet; on a schema a newer release has
/// migrated, first checks that every migration it does not know is declared compatible with it.
pub async fn migrate(conn: &mut PgConnection) -> Result<(), StoreError> {
    migration_lock::lock(conn).await?;
    let checked = check_then_migrate(conn).await;
    // The lock is the session's: it goes with the connection if unlocking fails.
    let unlocked = migration_lock::unlock(conn).await;
    checked.and(unlocked)
}

async fn check_then_migrate(conn: &mut PgConnection) -> Result<(), StoreError> {
    let unknown = unknown_migrations(conn).await?;
    let knows = latest_known();
    if let Some(refused) = unknown.iter().find(|u| !compatible(u, knows)) {
        return Err(StoreError::IncompatibleSchema {
            migration: refused.migration,
            release: refused.release.clone(),
            needs: refused.oldest_compatible,
            knows,
        });
    }
    let mut migrator = migrator();
    // Only the migrations checked above may be missing from this release.
    migrator.set_ignore_missing(!unknown.is_empty());
    // The advisory lock is taken above, once: a failed run must not leave a second hold behind.
    migrator.set_locking(false);
    for migration in migrator.iter() {
        // An index built concurrently (a `-- no-transaction` migration) waits for every
        // transaction older than the build, however long they last, and blocks no one
        // meanwhile: stopped at the session's `lock_timeout` (that of requests), it would leave
        // an invalid index behind, which `IF NOT EXISTS` then keeps. Every other migration
        // keeps the timeout, so that its DDL never queues the service's statements behind it
        // for long.
        if migration.no_tx {
            sqlx::query("SET lock_timeout = 0")
                .execute(&mut *conn)
                .await?;
        }
        // `run_to` through a direct connection: its `Acquire` bound would make this future
        // not `Send` (sqlx's own reason for `run_direct`).
        let applied = migrator
            .run_direct(Some(migration.version), &mut *conn, false)
            .await;
        let reset = if migration.no_tx {
            sqlx::query("RESET lock_timeout")
                .execute(&mut *conn)
                .await
                .map(drop)
        } else {
            Ok(())
        };
        applied.map_err(StoreError::Migrate)?;
        reset?;
    }
    Ok(())
}

/// Whether a release whose newest migration is `knows` may run with `unknown` applied.
pub fn compatible(unknown: &Unknown, knows: i64) -> bool {
    unknown
        .oldest_compatible
        .is_some_and(|oldest| oldest <= knows)
}

/// The applied migrations this release does not know, with what the schema declares of each.
async fn unknown_migrations(conn: &mut PgConnection) -> Result<Vec<Unknown>, StoreError> {
    let tables: (bool, bool) = sqlx::query_as(
        "SELECT to_regclass('_sqlx_migrations') IS NOT NULL, \
                to_regclass('schema_compatibility') IS NOT NULL",
    )
    .fetch_one(&mut *conn)
    .await?;
    let (migrated, declared) = tables;
    if !migrated {
        return Ok(vec![]);
    }
    let known: Vec<i64> = migrator().iter().map(|m| m.version).collect();
    let applied: Vec<i64> = sqlx::query_scalar(
        "SELECT version FROM _sqlx_migrations WHERE NOT (version = ANY($1)) ORDER BY version",
    )
    .bind(&known)
    .fetch_all(&mut *conn)
    .await?;
    let mut unknown = Vec::with_capacity(applied.len());
    for migration in applied {
        // The row as JSON: a release reads the columns it knows of, and one that a later
        // release added (`release`, 0.3.0) is absent, not an error, on an older schema.
        let declaration: Option<(i64, Option<String>)> = if declared {
            sqlx::query_as(
                "SELECT oldest_compatible, to_jsonb(c) ->> 'release' \
                 FROM schema_compatibility c WHERE migration = $1",
            )
            .bind(migration)
            .fetch_optional(&mut *conn)
            .await?
        } else {
            None
        };
        let (oldest_compatible, release) = declaration.unzip();
        unknown.push(Unknown {
            migration,
            oldest_compatible,
            release: release.flatten(),
        });
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_is_compatible_only_when_declared_for_a_release_as_old_or_older() {
        let declared = |oldest| Unknown {
            migration: 20991231000000,
            oldest_compatible: oldest,
            release: None,
        };
        let knows = 20261124000001;
        assert!(compatible(&declared(Some(20261124000001)), knows));
        assert!(compatible(&declared(Some(20261121000001)), knows));
        assert!(!compatible(&declared(Some(20261124000002)), knows));
        assert!(!compatible(&declared(None), knows));
    }

    #[test]
    fn the_latest_known_migration_is_the_newest_file() {
        let newest = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
            .expect("migrations/")
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                name.split('_').next()?.parse::<i64>().ok()
            })
            .max();
        assert_eq!(Some(latest_known()), newest);
    }
}
