//! Migrating beside others (docs/operations/upgrading.md "Migrations both releases survive"): an
//! instance waits for the migration lock as the previous release takes it (sqlx's own), without
//! waiting inside a statement; and an index built concurrently outlasts an older transaction
//! longer than the session's `lock_timeout` and ends valid, instead of stopping half way.

use std::time::Duration;

use sqlx::Connection;
use sqlx::migrate::Migrate;

use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::store;
use order_service_testkit::{TestDb, eventually};

/// The first migration that builds an index concurrently.
const CONCURRENT_INDEX: &str = "20261127000001";
/// Long enough for a statement that would fail on its `lock_timeout` to have failed.
const OUTLASTED: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn a_migration_waits_for_the_migration_lock_as_the_previous_release_takes_it() {
    let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let mut previous = sqlx::PgConnection::connect(&db.url).await.unwrap();
    // What 0.2.0 does at its start: sqlx's lock, waited for inside a statement.
    previous.lock().await.unwrap();

    let url = db.url.clone();
    let mut migrating = tokio::spawn(async move {
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        store::migrate(&mut conn).await
    });
    assert!(
        tokio::time::timeout(OUTLASTED, &mut migrating)
            .await
            .is_err(),
        "migrated while another release held the migration lock"
    );

    previous.unlock().await.unwrap();
    let migrated = migrating.await.unwrap();
    assert!(migrated.is_ok(), "{migrated:?}");
}

#[tokio::test]
async fn a_migration_building_an_index_concurrently_outlasts_its_lock_timeout_and_ends_valid() {
    let db = TestDb::create_before_migration(CONCURRENT_INDEX).await;
    // A transaction older than the build, still open: the build must wait for it to end.
    let mut older = sqlx::PgConnection::connect(&db.url).await.unwrap();
    sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut older)
        .await
        .unwrap();
    sqlx::query("SELECT count(*) FROM outbox")
        .execute(&mut older)
        .await
        .unwrap();
    // A transaction id given after its snapshot makes that snapshot older than the build's.
    sqlx::query("SELECT txid_current()")
        .execute(&db.pool)
        .await
        .unwrap();

    let options = store::connect_options(&db.url, Duration::from_millis(200)).unwrap();
    let mut migrating = tokio::spawn(async move {
        let mut conn = sqlx::PgConnection::connect_with(&options).await.unwrap();
        let migrated = store::migrate(&mut conn).await;
        let timeout: String = sqlx::query_scalar("SHOW lock_timeout")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        (migrated, timeout)
    });
    eventually(
        "the index build to wait for the older transaction",
        Duration::from_secs(30),
        || async {
            let waiting: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                 AND query LIKE '%CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock'",
            )
            .fetch_one(&db.pool)
            .await
            .unwrap();
            (waiting == 1).then_some(())
        },
    )
    .await;
    assert!(
        tokio::time::timeout(OUTLASTED, &mut migrating)
            .await
            .is_err(),
        "the build stopped at the session's lock_timeout"
    );

    sqlx::query("COMMIT").execute(&mut older).await.unwrap();
    let (migrated, timeout) = migrating.await.unwrap();
    assert!(migrated.is_ok(), "{migrated:?}");
    assert_eq!(
        timeout, "200ms",
        "the session's lock_timeout is its own again"
    );
    for index in ["outbox_order_id_id_idx", "outbox_set_aside_order_id_id_idx"] {
        let valid: bool = sqlx::query_scalar(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
        )
        .bind(index)
        .fetch_one(&db.pool)
        .await
        .unwrap();
        assert!(valid, "{index} is invalid");
    }
}
