//! Deciding what a request's Idempotency-Key means, given the committed request that holds it
//! (which every command's read finds, in the statement that reads its state).

use super::AppError;
use crate::domain::Cause;
use crate::store::keys::{KeyHolder, Keyed, KeyedAction};

/// The change this request already made, if its key is held. A key held by a request with
/// another fingerprint (another body, endpoint, order or dead letter) is [`AppError::KeyReused`].
pub(super) fn prior_change(
    key: Option<Keyed>,
    cause: &Cause,
) -> Result<Option<KeyHolder>, AppError> {
    match (key, cause.key_scope()) {
        (Some(prior), Some(scope)) if &prior.fingerprint == scope.fingerprint => {
            Ok(Some(prior.holder))
        }
        (Some(_), Some(_)) => Err(AppError::KeyReused),
        (None, _) | (_, None) => Ok(None),
    }
}

/// The dead-letter action a key holds. Equal fingerprints mean the same endpoint, so an action
/// finds only actions under its keys.
pub(super) fn action(prior: &KeyHolder) -> Result<&KeyedAction, AppError> {
    match prior {
        KeyHolder::Action(action) => Ok(action),
        KeyHolder::Change(_) => Err(AppError::Invariant(
            "a dead-letter action's key is held by an order change",
        )),
    }
}
