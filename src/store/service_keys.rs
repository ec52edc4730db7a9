//! `service_keys`: secrets every instance of the service shares through its database, written
//! once by a migration. One today: the key that seals a retry's attempt count
//! (docs/hostile-input.md "Properties decide nothing").

use sqlx::PgPool;

use super::StoreError;

/// The name of the key that seals `x-attempt`.
const ATTEMPT_SEAL: &str = "amqp-attempt-seal";

/// The key that seals a retry's attempt count.
pub async fn attempt_seal(pool: &PgPool) -> Result<Vec<u8>, StoreError> {
    let mut conn = super::acquire(pool).await?;
    let key = sqlx::query_scalar("SELECT secret FROM service_keys WHERE name = $1")
        .bind(ATTEMPT_SEAL)
        .fetch_one(&mut *conn)
        .await?;
    Ok(key)
}
