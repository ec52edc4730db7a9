//! Finding the change or action a request's Idempotency-Key already made.

use sqlx::PgConnection;

use super::AppError;
use crate::domain::{Cause, Order};
use crate::store::keys::{self, KeyHolder, KeyedAction, KeyedChange};
use crate::store::orders;

/// The committed row that holds this request's key, if any. A key held by a request with another
/// fingerprint (another body, endpoint, order or dead letter) is [`AppError::KeyReused`].
pub(super) async fn prior_change(
    conn: &mut PgConnection,
    cause: &Cause,
) -> Result<Option<KeyHolder>, AppError> {
    let Some(scope) = cause.key_scope() else {
        return Ok(None);
    };
    match keys::find(conn, scope).await? {
        Some(prior) if &prior.fingerprint == scope.fingerprint => Ok(Some(prior.holder)),
        Some(_) => Err(AppError::KeyReused),
        None => Ok(None),
    }
}

/// The order change a key holds. Equal fingerprints mean the same endpoint, so an order command
/// finds only order changes under its keys.
pub(super) fn change(prior: &KeyHolder) -> Result<&KeyedChange, AppError> {
    match prior {
        KeyHolder::Change(change) => Ok(change),
        KeyHolder::Action(_) => Err(AppError::Invariant(
            "an order request's key is held by a dead-letter action",
        )),
    }
}

/// The dead-letter action a key holds (see [`change`]).
pub(super) fn action(prior: &KeyHolder) -> Result<&KeyedAction, AppError> {
    match prior {
        KeyHolder::Action(action) => Ok(action),
        KeyHolder::Change(_) => Err(AppError::Invariant(
            "a dead-letter action's key is held by an order change",
        )),
    }
}

/// The order a request's key already changed, as it is now: what a replay answers with.
pub(super) async fn keyed_order(
    conn: &mut PgConnection,
    prior: &KeyHolder,
) -> Result<Order, AppError> {
    orders::find(conn, change(prior)?.order_id)
        .await?
        .ok_or(AppError::Invariant("a keyed change's order has no row"))
}
