//! Where Idempotency-Keys live: on the row a request wrote, under `UNIQUE (client_id,
//! idempotency_key)` — an order request's history row (`order_transitions`), or a dead-letter
//! action's own row (`dead_letter_actions`). One lookup looks in both, so a key is one client's
//! whichever endpoint used it: reusing it for another request is caught across them.
//!
//! The lookup is not a statement of its own: [`keyed_cte!`] is folded into the read of every
//! command (the order's in `order_changes`, the dead letter's in `dead_letter_actions`), so the
//! key and the state it is decided against come from one snapshot.

use sqlx::FromRow;
use uuid::Uuid;

use super::{StoreError, stored};
use crate::domain::{DeadLetterId, Fingerprint, KeyScope, OrderId, TransferId, TransitionKind};

/// A committed request that holds a key: its fingerprint and what it wrote.
#[derive(Debug, Clone)]
pub struct Keyed {
    pub fingerprint: Fingerprint,
    pub holder: KeyHolder,
}

/// The row a key lives on.
#[derive(Debug, Clone)]
pub enum KeyHolder {
    /// An order's history row: the change the request made.
    Change(KeyedChange),
    /// A dead-letter action: the dead letters it replayed or discarded.
    Action(KeyedAction),
}

/// The order change a key is attached to.
#[derive(Debug, Clone)]
pub struct KeyedChange {
    pub order_id: OrderId,
    pub kind: TransitionKind,
    pub transfer_id: Option<TransferId>,
}

/// The dead-letter action a key is attached to.
#[derive(Debug, Clone)]
pub struct KeyedAction {
    pub dead_letter_ids: Vec<DeadLetterId>,
}

/// The CTE `keyed`: at most one row, the committed request holding the key `($1, $2)` = (client,
/// key), with columns named `key_*` so that it joins with any table. A statement that folds it in
/// binds the client as `$1` and the key as `$2` (both NULL when the cause carries no key).
macro_rules! keyed_cte {
    () => {
        "keyed AS (\
         SELECT order_id AS key_order_id, kind AS key_kind, transfer_id AS key_transfer_id, \
                NULL::uuid[] AS key_dead_letter_ids, request_fingerprint AS key_fingerprint \
         FROM order_transitions WHERE client_id = $1 AND idempotency_key = $2 \
         UNION ALL \
         SELECT NULL, NULL, NULL, dead_letter_ids, request_fingerprint \
         FROM dead_letter_actions WHERE client_id = $1 AND idempotency_key = $2 \
         LIMIT 1)"
    };
}
pub(super) use keyed_cte;

/// The `keyed` columns of a row (all NULL when no request holds the key).
#[derive(FromRow)]
pub(super) struct KeyedRow {
    key_order_id: Option<Uuid>,
    key_kind: Option<String>,
    key_transfer_id: Option<String>,
    key_dead_letter_ids: Option<Vec<Uuid>>,
    key_fingerprint: Option<String>,
}

/// `(client, key)` as a statement folding in [`keyed_cte!`] binds them.
pub(super) fn bound(scope: Option<KeyScope<'_>>) -> (Option<&str>, Option<&str>) {
    scope.map_or((None, None), |s| (Some(s.client), Some(s.key.as_str())))
}

impl KeyedRow {
    /// The request holding the key, if one does. Every keyed row has a fingerprint (the tables'
    /// checks require it), so a row without one is no row.
    pub(super) fn into_keyed(self) -> Result<Option<Keyed>, StoreError> {
        let Some(fingerprint) = self.key_fingerprint else {
            return Ok(None);
        };
        let holder = match (self.key_order_id, self.key_dead_letter_ids) {
            (Some(order_id), _) => KeyHolder::Change(KeyedChange {
                order_id: OrderId::from_uuid(order_id),
                kind: stored("kind", &self.key_kind.unwrap_or_default())?,
                transfer_id: self
                    .key_transfer_id
                    .map(|t| TransferId::parse(&t))
                    .transpose()
                    .map_err(StoreError::corrupt("transfer_id"))?,
            }),
            (None, Some(ids)) => KeyHolder::Action(KeyedAction {
                dead_letter_ids: ids.into_iter().map(DeadLetterId::from_uuid).collect(),
            }),
            (None, None) => {
                return Err(StoreError::Corrupt {
                    what: "idempotency key",
                    source: "its row names neither an order nor dead letters".into(),
                });
            }
        };
        Ok(Some(Keyed {
            fingerprint: Fingerprint::from_stored(fingerprint),
            holder,
        }))
    }
}
