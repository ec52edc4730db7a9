//! Finding the change a request's Idempotency-Key already made.

use sqlx::PgConnection;

use super::AppError;
use crate::domain::Cause;
use crate::store::transitions::{self, KeyedChange};

/// The committed change that holds this request's key, if any. A key held by a request with
/// another fingerprint (another body, endpoint or order) is [`AppError::KeyReused`].
pub(super) async fn prior_change(
    conn: &mut PgConnection,
    cause: &Cause,
) -> Result<Option<KeyedChange>, AppError> {
    let Cause::Api {
        client,
        key,
        fingerprint,
    } = cause
    else {
        return Ok(None);
    };
    match transitions::find_by_key(conn, client, key).await? {
        Some(prior) if &prior.fingerprint == fingerprint => Ok(Some(prior)),
        Some(_) => Err(AppError::KeyReused),
        None => Ok(None),
    }
}
