//! The `dead_letters` table: one row per distinct dead message, parked by the dead-letter consumer,
//! read by operators, replayed or discarded by them. Bodies are read as a bounded prefix, never
//! whole: a listing must not hold the bodies of a hundred huge poison messages. Replays and
//! discards are written with their action, in `dead_letter_actions`.

use chrono::{DateTime, Utc};
use sqlx::{FromRow, PgConnection, PgPool};
use uuid::Uuid;

use super::{StoreError, stored};
use crate::domain::{BoundedText, DeadLetterId, DeadLetterIdentity, DeadLetterStatus, ReasonClass};

/// A dead letter as the consumer parks it.
#[derive(Debug, Clone)]
pub struct NewDeadLetter {
    pub identity: DeadLetterIdentity,
    pub message_id: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub routing_key: String,
    pub reason: String,
    pub body: Vec<u8>,
    /// The properties a replay publishes, losslessly encoded.
    pub properties: serde_json::Value,
    /// The same headers as plain JSON, for people.
    pub headers: serde_json::Value,
}

/// A body larger than this is parked on a connection that is closed afterwards: a connection
/// keeps, for its whole life, a write buffer as large as the largest statement it sent, and a
/// burst of large dead letters would otherwise stay resident in every pooled connection
/// (docs/hostile-input.md#memory).
const LARGE_BODY_BYTES: usize = 1024 * 1024;

/// Parks `letter`: a new row, or — the same message dead-lettered again — its row with `times` + 1,
/// the latest reason and copy, `parked` again. Returns the row's id.
pub async fn park(pool: &PgPool, letter: &NewDeadLetter) -> Result<DeadLetterId, StoreError> {
    let mut connection = super::acquire(pool).await?;
    if letter.body.len() > LARGE_BODY_BYTES {
        connection.close_on_drop();
    }
    let id: Uuid = sqlx::query_scalar(
        "INSERT INTO dead_letters (id, identity, message_id, event_id, event_type, routing_key, \
         reason, reason_class, body, properties, headers) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (identity) DO UPDATE SET times = dead_letters.times + 1, \
         status = 'parked', last_dead_lettered_at = now(), reason = EXCLUDED.reason, \
         reason_class = EXCLUDED.reason_class, message_id = EXCLUDED.message_id, \
         event_id = EXCLUDED.event_id, event_type = EXCLUDED.event_type, \
         routing_key = EXCLUDED.routing_key, body = EXCLUDED.body, \
         properties = EXCLUDED.properties, headers = EXCLUDED.headers \
         RETURNING id",
    )
    .bind(DeadLetterId::generate().as_uuid())
    .bind(letter.identity.as_bytes())
    .bind(letter.message_id.as_deref())
    .bind(letter.event_id.as_deref())
    .bind(letter.event_type.as_deref())
    .bind(&letter.routing_key)
    .bind(&letter.reason)
    .bind(ReasonClass::of(&letter.reason).as_ref())
    .bind(&letter.body)
    .bind(&letter.properties)
    .bind(&letter.headers)
    .fetch_one(&mut *connection)
    .await?;
    Ok(DeadLetterId::from_uuid(id))
}

/// A parked dead letter as read back: its body cut to the prefix the reader asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    pub id: DeadLetterId,
    pub message_id: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub routing_key: String,
    pub reason: String,
    pub reason_class: ReasonClass,
    /// At most the prefix asked for.
    pub body: Vec<u8>,
    /// The whole body's size.
    pub body_bytes: i64,
    pub headers: serde_json::Value,
    pub times: i32,
    pub status: DeadLetterStatus,
    pub first_dead_lettered_at: DateTime<Utc>,
    pub last_dead_lettered_at: DateTime<Utc>,
}

/// The selected columns (`$1` is the body prefix's length), as a macro so that queries stay
/// `&'static str` (sqlx 0.9 requires it).
macro_rules! columns {
    () => {
        "id, message_id, event_id, event_type, routing_key, reason, reason_class, \
         substring(body FROM 1 FOR $1) AS body, octet_length(body)::int8 AS body_bytes, \
         headers::text AS headers, \
         times, status, first_dead_lettered_at, last_dead_lettered_at"
    };
}

#[derive(FromRow)]
struct DeadLetterRow {
    id: Uuid,
    message_id: Option<String>,
    event_id: Option<String>,
    event_type: Option<String>,
    routing_key: String,
    reason: String,
    reason_class: String,
    body: Vec<u8>,
    body_bytes: i64,
    /// As text, read by [`shown_headers`].
    headers: String,
    times: i32,
    status: String,
    first_dead_lettered_at: DateTime<Utc>,
    last_dead_lettered_at: DateTime<Utc>,
}

impl TryFrom<DeadLetterRow> for DeadLetter {
    type Error = StoreError;

    fn try_from(row: DeadLetterRow) -> Result<Self, Self::Error> {
        Ok(DeadLetter {
            id: DeadLetterId::from_uuid(row.id),
            message_id: row.message_id,
            event_id: row.event_id,
            event_type: row.event_type,
            routing_key: row.routing_key,
            reason: row.reason,
            reason_class: stored("reason_class", &row.reason_class)?,
            body: row.body,
            body_bytes: row.body_bytes,
            headers: shown_headers(&row.headers),
            times: row.times,
            status: stored("status", &row.status)?,
            first_dead_lettered_at: row.first_dead_lettered_at,
            last_dead_lettered_at: row.last_dead_lettered_at,
        })
    }
}

/// Stored headers as people see them. An earlier version stored headers as deep as a publisher
/// sent them (docs/hostile-input.md); what is nested deeper than the JSON reader's limit is shown
/// as dropped, with its stored size, rather than failing the read.
fn shown_headers(stored: &str) -> serde_json::Value {
    serde_json::from_str(stored).unwrap_or_else(
        |_| serde_json::json!({ crate::domain::HEADERS_DROPPED_HEADER: stored.len() }),
    )
}

/// One dead letter, its body cut to `body_prefix` bytes.
pub async fn find(
    conn: &mut PgConnection,
    id: DeadLetterId,
    body_prefix: i32,
) -> Result<Option<DeadLetter>, StoreError> {
    sqlx::query_as::<_, DeadLetterRow>(concat!(
        "SELECT ",
        columns!(),
        " FROM dead_letters WHERE id = $2"
    ))
    .bind(body_prefix)
    .bind(id.as_uuid())
    .fetch_optional(conn)
    .await?
    .map(DeadLetter::try_from)
    .transpose()
}

/// Which dead letters a listing shows or a bulk replay takes: every filter given must hold.
#[derive(Debug, Clone, Default)]
pub struct DeadLetterFilter {
    pub status: Option<DeadLetterStatus>,
    /// A substring of the reason, matched case-insensitively (`%` and `_` are plain characters).
    pub reason: Option<BoundedText>,
    /// The event type, exactly.
    pub event_type: Option<BoundedText>,
    /// Only these ids.
    pub ids: Option<Vec<DeadLetterId>>,
}

impl DeadLetterFilter {
    pub(super) fn reason_pattern(&self) -> Option<String> {
        self.reason.as_ref().map(|r| contains_pattern(r.as_str()))
    }

    pub(super) fn event_type(&self) -> Option<&str> {
        self.event_type.as_ref().map(BoundedText::as_str)
    }

    pub(super) fn ids(&self) -> Option<Vec<Uuid>> {
        self.ids
            .as_ref()
            .map(|ids| ids.iter().map(DeadLetterId::as_uuid).collect())
    }
}

/// An `ILIKE` pattern matching `text` anywhere, its own `%`, `_` and `\` escaped (Postgres' default
/// escape character is `\`).
fn contains_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// Newest first (by when they were last dead-lettered), keyset-paginated on
/// `(last_dead_lettered_at, id)`: the page starts strictly after `after`.
pub async fn list(
    pool: &PgPool,
    filter: &DeadLetterFilter,
    after: Option<(DateTime<Utc>, DeadLetterId)>,
    limit: i64,
    body_prefix: i32,
) -> Result<Vec<DeadLetter>, StoreError> {
    sqlx::query_as::<_, DeadLetterRow>(concat!(
        "SELECT ",
        columns!(),
        " FROM dead_letters \
         WHERE ($2::text IS NULL OR status = $2) \
           AND ($3::text IS NULL OR reason ILIKE $3) \
           AND ($4::text IS NULL OR event_type = $4) \
           AND ($5::timestamptz IS NULL OR (last_dead_lettered_at, id) < ($5, $6)) \
         ORDER BY last_dead_lettered_at DESC, id DESC LIMIT $7"
    ))
    .bind(body_prefix)
    .bind(filter.status.map(|s| s.as_ref().to_owned()))
    .bind(filter.reason_pattern())
    .bind(filter.event_type())
    .bind(after.map(|(at, _)| at))
    .bind(after.map(|(_, id)| id.as_uuid()))
    .bind(limit)
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(DeadLetter::try_from)
    .collect()
}

/// Parked dead letters of one reason class and event type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedGroup {
    pub reason_class: ReasonClass,
    pub event_type: Option<String>,
    pub count: i64,
    pub last_dead_lettered_at: DateTime<Utc>,
}

/// The parked dead letters grouped by class and type, largest groups first, at most `limit`
/// groups; and how many are parked in all.
pub async fn parked_groups(
    pool: &PgPool,
    limit: i64,
) -> Result<(i64, Vec<ParkedGroup>), StoreError> {
    #[derive(FromRow)]
    struct GroupRow {
        reason_class: String,
        event_type: Option<String>,
        count: i64,
        last: DateTime<Utc>,
        total: i64,
    }
    let rows = sqlx::query_as::<_, GroupRow>(
        "SELECT reason_class, event_type, count(*) AS count, \
         max(last_dead_lettered_at) AS last, (sum(count(*)) OVER ())::int8 AS total \
         FROM dead_letters WHERE status = 'parked' GROUP BY reason_class, event_type \
         ORDER BY count(*) DESC, reason_class, event_type LIMIT $1",
    )
    .bind(limit)
    .fetch_all(pool)
    .await?;
    let total = rows.first().map_or(0, |row| row.total);
    let groups = rows
        .into_iter()
        .map(|row| {
            Ok(ParkedGroup {
                reason_class: stored("reason_class", &row.reason_class)?,
                event_type: row.event_type,
                count: row.count,
                last_dead_lettered_at: row.last,
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok((total, groups))
}

/// How many dead letters are parked, by reason class (classes with none are absent).
pub async fn parked_by_class(pool: &PgPool) -> Result<Vec<(ReasonClass, i64)>, StoreError> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT reason_class, count(*) FROM dead_letters WHERE status = 'parked' \
         GROUP BY reason_class",
    )
    .fetch_all(pool)
    .await?;
    rows.into_iter()
        .map(|(class, count)| Ok((stored("reason_class", &class)?, count)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_filter_matches_its_text_literally_anywhere() {
        assert_eq!(contains_pattern("premature"), "%premature%");
        assert_eq!(contains_pattern("100%_done"), "%100\\%\\_done%");
        assert_eq!(contains_pattern("a\\b"), "%a\\\\b%");
    }
}
