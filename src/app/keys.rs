//! Finding the change a request's Idempotency-Key already made.

use sqlx::PgConnection;

use super::AppError;
use crate::domain::{Cause, Order};
use crate::store::orders;
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

/// The order a request's key already changed, as it is now: what a replay answers with.
pub(super) async fn keyed_order(
    conn: &mut PgConnection,
    prior: &KeyedChange,
) -> Result<Order, AppError> {
    orders::find(conn, prior.order_id)
        .await?
        .ok_or(AppError::Invariant("a keyed change's order has no row"))
}
