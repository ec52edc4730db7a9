//! The `outbox` table, a log: events appended in the statement of the change they report (an
//! order's change in `order_changes`, a dead-letter replay in `dead_letter_actions`), each with
//! the W3C trace context of its cause and its position in the log, then read in order behind the
//! relay's cursor (`relay_batch`; a row it cannot publish is set aside) and pruned once published
//! and old (docs/messaging.md "The outbox as a log"). A row is an order event or a raw message: a
//! replayed dead letter, copied here by the statement that marks it replayed.

pub mod order_events;
mod pending;
mod relay_batch;
pub mod relay_mode;

use std::time::Duration;

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::StoreError;
use crate::domain::EventType;

pub use pending::{PendingEvent, PendingMessage, SetAside, Unreadable, UnreadableRow};
pub use relay_batch::{BatchRead, Horizon, LogPosition, READ_AFTER_CURSOR, RelayBatch, read_batch};

/// An order event to write with its change (`order_changes`): the row takes the order's id and
/// version, and the trace context of the change's cause, from the change.
pub struct NewEvent {
    pub event_id: Uuid,
    pub event_type: EventType,
    /// The whole envelope, exactly as it will be published: JSON text, serialized once (the
    /// column parses it).
    pub payload: String,
}

/// Connections the relay's pool holds: one for its batches, one for its watch of the backlog.
pub const RELAY_CONNECTIONS: u32 = 2;

/// The relay's own connections: every statement of the relay is one range of an index (the
/// `(pos, id)` index of the log, the publications' key), and sequential scans are off on them
/// (`enable_seqscan`, a cost, not a ban). Postgres plans a prepared statement once per
/// connection and keeps the plan until the table is next analyzed: planned while the outbox was
/// nearly empty (a new deployment, the bench), a sequential scan looked cheapest and stayed as the
/// outbox grew, costing the relay milliseconds per batch. JIT is off too: the penalty that turns
/// sequential scans off (a cost of 10^10 on the scan of a one-row table) would otherwise make
/// every statement look worth compiling, at 50–130 ms each (bench/README.md "The outbox as a
/// log, measured").
pub fn relay_connection(
    options: sqlx::postgres::PgConnectOptions,
) -> sqlx::postgres::PgConnectOptions {
    options.options([("enable_seqscan", "off"), ("jit", "off")])
}

/// The channel the relays listen on: a notification says events were committed.
pub const NOTIFY_CHANNEL: &str = "order_service_outbox";

/// Wakes the relays listening on [`NOTIFY_CHANNEL`] (those of every instance). A statement of its
/// own, never part of a writing transaction: a NOTIFY inside one would hold Postgres' cluster-wide
/// notification lock through the commit's WAL flush, so such commits would run one at a time (no
/// group commit). The application sends it from a background task, coalesced (docs/messaging.md
/// "Outbox and relay wake-up").
pub async fn announce(conn: &mut PgConnection) -> Result<(), StoreError> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(NOTIFY_CHANNEL)
        .execute(conn)
        .await?;
    Ok(())
}

/// The events not yet published (after the cursor, and not marked by a relay of 0.2.0): how many,
/// how long the oldest has waited, and how many of them wait behind the horizon; what holds the
/// horizon; and how many rows the relays set aside.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backlog {
    pub events: i64,
    /// Seconds since the oldest unpublished event was committed (by the database's clock); 0
    /// when nothing waits.
    pub oldest_age_seconds: f64,
    /// Committed events the relay cannot read yet: an older transaction still runs.
    pub behind_horizon: i64,
    /// Seconds the oldest transaction holding a transaction id on the server (a prepared one
    /// included) has run: what holds the horizon back. 0 when none runs, or when this role may
    /// not see other roles' sessions (`pg_read_all_stats`).
    pub horizon_age_seconds: f64,
    /// Rows in `outbox_set_aside`: never published, waiting for an operator.
    pub set_aside: i64,
}

/// One statement, cheap enough to run every poll interval: the rows after the cursor are one
/// range of the `(pos, id)` index (rows a relay of 0.2.0 marked there are not counted).
pub async fn backlog(pool: &PgPool) -> Result<Backlog, StoreError> {
    let (events, oldest_age_seconds, behind_horizon, horizon_age_seconds, set_aside): (
        i64,
        Option<f64>,
        i64,
        Option<f64>,
        i64,
    ) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE published_at IS NULL), \
                extract(epoch FROM now() - min(created_at) FILTER (WHERE published_at IS NULL)) \
                    ::float8, \
                count(*) FILTER (WHERE published_at IS NULL \
                                   AND pos >= pg_snapshot_xmin(pg_current_snapshot())), \
                (SELECT extract(epoch FROM now() - min(started))::float8 FROM (\
                     SELECT xact_start AS started FROM pg_stat_activity \
                     WHERE backend_xid IS NOT NULL \
                     UNION ALL SELECT prepared FROM pg_prepared_xacts) AS holders), \
                (SELECT count(*) FROM outbox_set_aside) \
         FROM outbox \
         WHERE (pos, id) > (SELECT through_pos, through_id FROM outbox_publications \
                            ORDER BY through_pos DESC, through_id DESC LIMIT 1)",
    )
    .fetch_one(pool)
    .await?;
    Ok(Backlog {
        events,
        oldest_age_seconds: oldest_age_seconds.unwrap_or(0.0).max(0.0),
        behind_horizon,
        horizon_age_seconds: horizon_age_seconds.unwrap_or(0.0).max(0.0),
        set_aside,
    })
}

/// Deletes up to `batch` published rows that were published more than `age` ago; returns how
/// many went. Published means behind the newest batch the relay published before `now() - age`
/// (its row in `outbox_publications`, found through its `published_at` index), so the delete is
/// one range of the `(pos, id)` index from its start; and, for rows published before the outbox
/// became a log (no position), marked before then. The batches' rows before that batch go too
/// (the events they cover are all in the range deleted; the cursor, the newest, always stays).
pub async fn prune(pool: &PgPool, age: Duration, batch: i64) -> Result<u64, StoreError> {
    let age = chrono::Duration::from_std(age).unwrap_or(chrono::Duration::MAX);
    let (events, _batches): (i64, i64) = sqlx::query_as(
        "WITH bound AS (\
             SELECT through_pos, through_id FROM outbox_publications \
             WHERE published_at < now() - $1::interval \
             ORDER BY published_at DESC LIMIT 1), \
         events AS (\
             DELETE FROM outbox WHERE id IN (\
                 (SELECT outbox.id FROM outbox, bound \
                  WHERE (outbox.pos, outbox.id) <= (bound.through_pos, bound.through_id) \
                  ORDER BY outbox.pos, outbox.id LIMIT $2) \
                 UNION ALL \
                 (SELECT id FROM outbox \
                  WHERE pos IS NULL AND published_at < now() - $1::interval \
                  ORDER BY published_at LIMIT $2)) \
             RETURNING 1), \
         batches AS (\
             DELETE FROM outbox_publications AS p USING bound \
             WHERE (p.through_pos, p.through_id) < (bound.through_pos, bound.through_id) \
             RETURNING 1) \
         SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM batches)",
    )
    .bind(age)
    .bind(batch)
    .fetch_one(pool)
    .await?;
    Ok(u64::try_from(events).unwrap_or(0))
}
