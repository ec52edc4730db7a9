//! The `dead_letter_actions` table: one row per replay or discard — who, when, which dead letters —
//! carrying the request's Idempotency-Key and fingerprint under `UNIQUE (client_id,
//! idempotency_key)`, as an order request's history row does (see `keys`).
//!
//! An action is a command of two statements, each atomic, like an order's (`order_changes`):
//! [`read`] finds the request holding the key and the dead letter's status in one snapshot;
//! [`act`] settles the parked dead letters, records the action and, for a replay, copies them into
//! the outbox, all in one data-modifying statement — the action row and the outbox rows are taken
//! `FROM` the settled rows, so what was not settled is neither recorded nor sent.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;

use super::dead_letters::DeadLetterFilter;
use super::keys::{Keyed, KeyedRow, bound, keyed_cte};
use super::{Guarded, StoreError, in_time, stored};
use crate::domain::{DeadLetterAction, DeadLetterId, DeadLetterStatus, KeyScope, Source};
use crate::telemetry::TraceContext;

/// Who takes an action: the door it came through, the request's key, and what the operator
/// said about it (a discard's reason, say).
pub struct Actor<'a> {
    pub source: Source,
    pub scope: KeyScope<'a>,
    pub note: Option<&'a str>,
}

/// What an action on one dead letter decides on: its status, and the routing key a replay would
/// send it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetState {
    pub status: DeadLetterStatus,
    pub routing_key: String,
}

/// The request holding `scope`'s key, and the state of dead letter `id` (if one is named and
/// exists), read in one statement.
pub async fn read(
    conn: &mut PgConnection,
    scope: KeyScope<'_>,
    id: Option<DeadLetterId>,
) -> Result<(Option<Keyed>, Option<TargetState>), StoreError> {
    let (client, key) = bound(Some(scope));
    let row = sqlx::query(concat!(
        "WITH ",
        keyed_cte!(),
        " SELECT keyed.*, dead_letters.status AS dead_letter_status, \
         dead_letters.routing_key AS dead_letter_routing_key \
         FROM (SELECT) AS one LEFT JOIN keyed ON true \
         LEFT JOIN dead_letters ON dead_letters.id = $3"
    ))
    .bind(client)
    .bind(key)
    .bind(id.map(|id| id.as_uuid()))
    .fetch_one(conn)
    .await?;
    let status: Option<String> = sqlx::Row::try_get(&row, "dead_letter_status")?;
    let routing_key: Option<String> = sqlx::Row::try_get(&row, "dead_letter_routing_key")?;
    let target = match (status, routing_key) {
        (Some(status), Some(routing_key)) => Some(TargetState {
            status: stored("status", &status)?,
            routing_key,
        }),
        _ => None,
    };
    Ok((KeyedRow::from_row(&row)?.into_keyed()?, target))
}

/// The parked dead letters an action takes: the oldest `limit` that `filter` matches (its status
/// aside) — all of them, or none when fewer than `at_least` are parked.
pub struct Targets<'a> {
    pub filter: &'a DeadLetterFilter,
    pub limit: i64,
    pub at_least: i64,
}

/// Where a replay sends its messages, and the trace they continue. Only dead letters whose
/// routing key is one of `routing_keys` are taken (domain::ReplayRoutes: the inbox's bindings).
pub struct ReplayTo<'a> {
    pub exchange: &'a str,
    pub routing_keys: &'a [&'a str],
    pub trace: &'a TraceContext,
}

/// Takes `action` on `targets` under `scope`'s key, with one statement: settles them, records the
/// action and, for a replay, writes their outbox rows to `replay_to` (taking only those with one
/// of its routing keys), oldest first; it takes effect
/// only `within` the time its caller has left, as an order's change does. Returns the
/// dead letters taken; [`Guarded::Lost`] when fewer than `at_least` were still parked, or when
/// another request holds the key: nothing was written.
pub async fn act(
    conn: &mut PgConnection,
    action: DeadLetterAction,
    targets: &Targets<'_>,
    by: &Actor<'_>,
    replay_to: Option<&ReplayTo<'_>>,
    within: Option<Duration>,
) -> Result<Guarded<Vec<DeadLetterId>>, StoreError> {
    let (scope, source) = (by.scope, by.source);
    let (client, key) = bound(Some(scope));
    let status: &'static str = action.status().into();
    let action: &'static str = action.into();
    let source: &'static str = source.into();
    let taken = sqlx::query_as::<_, (Vec<Uuid>, bool)>(
        "WITH targets AS (\
             SELECT id FROM dead_letters WHERE status = 'parked' \
               AND ($4::uuid[] IS NULL OR id = ANY($4)) \
               AND ($5::text IS NULL OR reason ILIKE $5) \
               AND ($6::text IS NULL OR event_type = $6) \
               AND ($16::text[] IS NULL OR routing_key = ANY($16)) \
             ORDER BY last_dead_lettered_at, id LIMIT $7 FOR UPDATE), \
         settled AS (\
             UPDATE dead_letters SET status = $3 \
             WHERE id IN (SELECT id FROM targets) AND (SELECT count(*) FROM targets) >= $11 \
             RETURNING id, routing_key, body, properties, last_dead_lettered_at), \
         action AS (\
             INSERT INTO dead_letter_actions (action, dead_letter_ids, cause_source, client_id, \
                 idempotency_key, request_fingerprint, note) \
             SELECT $8, COALESCE(array_agg(id ORDER BY last_dead_lettered_at, id), '{}'), $9, \
                 $1, $2, $10, $17 \
             FROM settled HAVING count(*) >= $11 RETURNING dead_letter_ids), \
         replayed AS (\
             INSERT INTO outbox (event_id, exchange, routing_key, body, properties, traceparent, \
                 tracestate, pos) \
             SELECT gen_random_uuid(), $12, routing_key, body, properties, $13, $14, \
                 pg_current_xact_id() \
             FROM settled WHERE $12::text IS NOT NULL ORDER BY last_dead_lettered_at, id \
             RETURNING 1) \
         SELECT action.dead_letter_ids, order_service_in_time($15) \
         FROM action, (SELECT count(*) FROM replayed) AS r",
    )
    .bind(client)
    .bind(key)
    .bind(status)
    .bind(targets.filter.ids())
    .bind(targets.filter.reason_pattern())
    .bind(targets.filter.event_type())
    .bind(targets.limit)
    .bind(action)
    .bind(source)
    .bind(scope.fingerprint.as_str())
    .bind(targets.at_least)
    .bind(replay_to.map(|r| r.exchange))
    .bind(replay_to.map(|r| r.trace.traceparent()))
    .bind(replay_to.and_then(|r| r.trace.tracestate()))
    .bind(in_time(within))
    .bind(replay_to.map(|r| r.routing_keys))
    .bind(by.note)
    .fetch_optional(conn)
    .await;
    match taken.map_err(StoreError::from) {
        Ok(Some((ids, _))) => Ok(Guarded::Applied(
            ids.into_iter().map(DeadLetterId::from_uuid).collect(),
        )),
        Ok(None) | Err(StoreError::Contended(_)) => Ok(Guarded::Lost),
        Err(error) => Err(error),
    }
}

/// How many parked dead letters `filter` matches (its status aside) whose routing key is none of
/// `routing_keys`: those a bulk replay leaves parked.
pub async fn unreplayable(
    conn: &mut PgConnection,
    filter: &DeadLetterFilter,
    routing_keys: &[&str],
) -> Result<u64, StoreError> {
    let count: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM dead_letters WHERE status = 'parked' \
           AND ($1::uuid[] IS NULL OR id = ANY($1)) \
           AND ($2::text IS NULL OR reason ILIKE $2) \
           AND ($3::text IS NULL OR event_type = $3) \
           AND routing_key <> ALL($4)",
    )
    .bind(filter.ids())
    .bind(filter.reason_pattern())
    .bind(filter.event_type())
    .bind(routing_keys)
    .fetch_one(conn)
    .await?;
    Ok(u64::try_from(count).unwrap_or(0))
}

/// An action as shown with a dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakenAction {
    pub action: DeadLetterAction,
    pub source: Source,
    pub client_id: String,
    /// The Idempotency-Key of the request that took it (its client's own).
    pub idempotency_key: String,
    pub note: Option<String>,
    pub at: DateTime<Utc>,
}

#[derive(FromRow)]
struct ActionRow {
    action: String,
    cause_source: String,
    client_id: String,
    idempotency_key: String,
    note: Option<String>,
    at: DateTime<Utc>,
}

/// The newest `limit` actions taken on `id` (alone or in a bulk replay), newest first.
pub async fn for_dead_letter(
    conn: &mut PgConnection,
    id: DeadLetterId,
    limit: i64,
) -> Result<Vec<TakenAction>, StoreError> {
    sqlx::query_as::<_, ActionRow>(
        "SELECT action, cause_source, client_id, idempotency_key, note, at \
         FROM dead_letter_actions \
         WHERE dead_letter_ids @> ARRAY[$1]::uuid[] ORDER BY id DESC LIMIT $2",
    )
    .bind(id.as_uuid())
    .bind(limit)
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|row| {
        Ok(TakenAction {
            action: stored("action", &row.action)?,
            source: stored("cause_source", &row.cause_source)?,
            client_id: row.client_id,
            idempotency_key: row.idempotency_key,
            note: row.note,
            at: row.at,
        })
    })
    .collect()
}
