//! The binary on a schema that a newer release has migrated: it starts when every migration it
//! does not know is declared compatible with it, and otherwise refuses, naming the migration,
//! before it serves anything.

use std::process::{Command, Output};

use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service::store::migrations::latest_known;
use order_service_testkit::TestDb;

/// A migration of a release that does not exist yet.
const NEWER: i64 = 20991231000000;

#[tokio::test]
async fn a_release_runs_on_a_newer_schema_only_when_the_newer_release_declared_it_compatible() {
    let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES ($1, 'a newer release', true, '\\x00', 1)",
    )
    .bind(NEWER)
    .execute(&db.pool)
    .await
    .expect("a newer release's migration");

    let undeclared = migrate(&db.url);
    refused(
        &undeclared,
        "it is not declared compatible with older releases",
    );

    let knows = latest_known();
    sqlx::query(
        "INSERT INTO schema_compatibility (migration, oldest_compatible, release) \
         VALUES ($1, $2, '9.9.9')",
    )
    .bind(NEWER)
    .bind(knows + 1)
    .execute(&db.pool)
    .await
    .expect("declare it for newer releases only");
    let too_new = migrate(&db.url);
    refused(
        &too_new,
        &format!(
            "it needs a release that knows migration {}; run release 9.9.9 or later",
            knows + 1
        ),
    );

    sqlx::query("UPDATE schema_compatibility SET oldest_compatible = $2 WHERE migration = $1")
        .bind(NEWER)
        .bind(knows)
        .execute(&db.pool)
        .await
        .expect("declare it compatible with this release");
    let compatible = migrate(&db.url);
    assert!(
        compatible.status.success(),
        "{}",
        String::from_utf8_lossy(&compatible.stderr)
    );
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&db.pool)
        .await
        .expect("count the migrations");
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .expect("migrations/")
        .count();
    assert_eq!(
        applied,
        files as i64 + 1,
        "nothing applied, nothing removed"
    );
}

/// `order-service migrate` against `url`: what `serve` does before it serves.
fn migrate(url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("migrate")
        .env_clear()
        .env("DATABASE_URL", url)
        .output()
        .expect("run order-service migrate")
}

fn refused(output: &Output, why: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "it started: {stderr}");
    assert!(
        stderr.contains(&format!(
            "the database was migrated by a newer release: migration {NEWER}"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "is not one this release knows (its newest is {})",
            latest_known()
        )),
        "{stderr}"
    );
    assert!(stderr.contains(why), "{stderr}");
}
