//! The migrator's advisory lock, which makes instances starting at once migrate one at a time:
//! the very lock sqlx's `Migrate::lock` takes (its key derived from the database's name), so a
//! release that takes it sqlx's way (0.2.0) and this one exclude each other.
//!
//! It is taken by trying, again and again, never by waiting inside a statement as sqlx does
//! (`pg_advisory_lock`): a session blocked in a statement holds a snapshot for as long as it
//! waits, and `CREATE INDEX CONCURRENTLY`, run by the lock's holder, waits for every snapshot
//! older than its build to go. Each would wait for the other until Postgres ended one of them
//! with `deadlock detected`, perhaps the index build, which leaves an invalid index behind
//! (docs/operations/upgrading.md "Migrations both releases survive").

use std::time::Duration;

use sqlx::PgConnection;

use super::StoreError;

/// How long a starting instance waits between two tries while another one migrates.
const RETRY_AFTER: Duration = Duration::from_millis(100);

/// Takes the migration lock of the connection's database, waiting (between tries, outside any
/// statement) while another session holds it.
pub(super) async fn lock(conn: &mut PgConnection) -> Result<(), StoreError> {
    let key = key(conn).await?;
    loop {
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(key)
            .fetch_one(&mut *conn)
            .await?;
        if taken {
            return Ok(());
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

/// Gives the migration lock back.
pub(super) async fn unlock(conn: &mut PgConnection) -> Result<(), StoreError> {
    let key = key(conn).await?;
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(key)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// sqlx's key for the migration lock of the connection's database.
async fn key(conn: &mut PgConnection) -> Result<i64, StoreError> {
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&mut *conn)
        .await?;
    Ok(key_of(&database))
}

/// What sqlx's Postgres migrator derives the key from a database's name with: the name's CRC-32
/// (`CRC_32_ISO_HDLC`, with the same `crc` crate sqlx uses) times a constant of its choosing.
/// Below 2^63, so it never overflows.
fn key_of(database: &str) -> i64 {
    0x3d32_ad9e * i64::from(crc32(database.as_bytes()))
}

fn crc32(bytes: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crc_is_the_standard_crc_32() {
        // The check value of CRC-32/ISO-HDLC.
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn the_key_of_a_database_is_its_crc_times_sqlx_s_constant() {
        // zlib.crc32(b"order_service") is 0x17e73399; times 0x3d32ad9e. That sqlx's lock and
        // this one exclude each other is tested against sqlx itself (tests/upgrade).
        assert_eq!(key_of("order_service"), 411_748_041_514_696_046);
    }
}
