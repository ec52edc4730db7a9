//! Where Idempotency-Keys live: on the row a request wrote, under `UNIQUE (client_id,
//! idempotency_key)` — an order request's history row (`order_transitions`), or a dead-letter
//! action's own row (`dead_letter_actions`). One statement looks in both, so a key is one
//! client's whichever endpoint used it: reusing it for another request is caught across them.

use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use super::StoreError;
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

#[derive(FromRow)]
struct KeyedRow {
    order_id: Option<Uuid>,
    kind: Option<String>,
    transfer_id: Option<String>,
    dead_letter_ids: Option<Vec<Uuid>>,
    request_fingerprint: Option<String>,
}

/// The committed request holding `(client, key)`, if any.
pub async fn find(
    conn: &mut PgConnection,
    scope: KeyScope<'_>,
) -> Result<Option<Keyed>, StoreError> {
    let Some(row) = sqlx::query_as::<_, KeyedRow>(
        "SELECT order_id, kind, transfer_id, NULL::uuid[] AS dead_letter_ids, request_fingerprint \
         FROM order_transitions WHERE client_id = $1 AND idempotency_key = $2 \
         UNION ALL \
         SELECT NULL, NULL, NULL, dead_letter_ids, request_fingerprint \
         FROM dead_letter_actions WHERE client_id = $1 AND idempotency_key = $2 \
         LIMIT 1",
    )
    .bind(scope.client)
    .bind(scope.key.as_str())
    .fetch_optional(conn)
    .await?
    else {
        return Ok(None);
    };
    let fingerprint =
        Fingerprint::from_stored(row.request_fingerprint.ok_or(StoreError::Corrupt {
            what: "request_fingerprint",
            source: "a keyed row has none".into(),
        })?);
    let holder = match (row.order_id, row.dead_letter_ids) {
        (Some(order_id), _) => KeyHolder::Change(KeyedChange {
            order_id: OrderId::from_uuid(order_id),
            kind: row
                .kind
                .unwrap_or_default()
                .parse()
                .map_err(StoreError::corrupt("kind"))?,
            transfer_id: row
                .transfer_id
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
        fingerprint,
        holder,
    }))
}
