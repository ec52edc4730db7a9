//! An outbox row as the relay reads it: each read on its own (a row whose stored JSON does not
//! decode is named by its id, and fails no other row), bodies of raw messages within a byte
//! budget per batch; and what a row the relay cannot publish becomes (docs/messaging.md "Rows the
//! relay sets aside").

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::store::StoreError;

/// The most body bytes of raw messages one batch holds (beyond its first row, which is
/// always taken): replayed dead letters may be large, and a batch is held in memory while it is
/// published.
const RAW_BATCH_BYTES: i64 = 16 * 1024 * 1024;

/// The longest reason stored with a row set aside, in bytes (`outbox_set_aside_reason_bounded`).
pub(super) const MAX_SET_ASIDE_REASON_BYTES: usize = 1_024;

/// A row waiting to be published.
#[derive(Debug, Clone)]
pub struct PendingEvent {
    pub id: i64,
    pub event_id: Uuid,
    pub created_at: DateTime<Utc>,
    /// The cause's trace context as written; none on rows older than the column.
    pub traceparent: Option<String>,
    pub tracestate: Option<String>,
    pub message: PendingMessage,
}

/// What a row publishes.
#[derive(Debug, Clone)]
pub enum PendingMessage {
    /// An order event: its envelope, to the outbound exchange with its type as the routing key.
    Event {
        event_type: String,
        /// The envelope as Postgres renders the stored `jsonb`: valid JSON, published as it is
        /// (decoding and encoding it again would change nothing a JSON reader sees).
        payload: String,
    },
    /// A raw message (a replayed dead letter), published as it is.
    Raw {
        exchange: String,
        routing_key: String,
        body: Vec<u8>,
        /// The `amqp::properties` encoding of its properties.
        properties: serde_json::Value,
    },
}

/// A row that cannot be read into a [`PendingEvent`]: the relay sets it aside.
#[derive(Debug, thiserror::Error)]
#[error("outbox row {id} (event {event_id}) cannot be read")]
pub struct UnreadableRow {
    pub id: i64,
    pub event_id: Uuid,
    #[source]
    pub cause: Unreadable,
}

/// Why a row cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// Postgres holds it as `jsonb`, but it does not decode (nested beyond serde_json's limit of
    /// 128, say): named by the column, the decoder's error as its source.
    #[error("{what}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The table's check makes this impossible; a row that slipped past it is set aside too.
    #[error("it is neither an order event nor a raw message")]
    Shape,
}

/// A row the relay cannot publish, and why: `<class>: <detail>` (docs/messaging.md "Rows the relay
/// sets aside"), cut to 1 KiB when stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    pub id: i64,
    pub reason: String,
}

/// A row as the relay reads it (`relay_batch`): every column but a raw message's body, which
/// [`load`] reads for the rows within the batch's byte budget.
#[derive(sqlx::FromRow)]
pub(super) struct PendingRow {
    pub(super) id: i64,
    event_id: Uuid,
    created_at: DateTime<Utc>,
    event_type: Option<String>,
    /// `jsonb` read as text.
    payload: Option<String>,
    exchange: Option<String>,
    routing_key: Option<String>,
    /// `jsonb` read as text, decoded here row by row.
    properties: Option<String>,
    body_bytes: Option<i64>,
    traceparent: Option<String>,
    tracestate: Option<String>,
}

impl PendingRow {
    /// The row, its body (if raw) taken from `bodies`.
    fn into_pending(
        self,
        bodies: &mut HashMap<i64, Vec<u8>>,
    ) -> Result<PendingEvent, UnreadableRow> {
        let (id, event_id) = (self.id, self.event_id);
        let unreadable = |cause| UnreadableRow {
            id,
            event_id,
            cause,
        };
        let message = match (self.event_type, self.payload) {
            (Some(event_type), Some(payload)) => PendingMessage::Event {
                event_type,
                payload,
            },
            _ => match (
                self.exchange,
                self.routing_key,
                self.properties,
                bodies.remove(&id),
            ) {
                (Some(exchange), Some(routing_key), Some(properties), Some(body)) => {
                    PendingMessage::Raw {
                        exchange,
                        routing_key,
                        body,
                        properties: json("properties", &properties).map_err(unreadable)?,
                    }
                }
                _ => return Err(unreadable(Unreadable::Shape)),
            },
        };
        Ok(PendingEvent {
            id,
            event_id,
            created_at: self.created_at,
            traceparent: self.traceparent,
            tracestate: self.tracestate,
            message,
        })
    }
}

/// The rows of a batch, in the order read, cut after the row that takes their raw bodies past
/// [`RAW_BATCH_BYTES`] (the first row is always kept), each with its body read (a second
/// statement, for raw rows only) and decoded on its own.
pub(super) async fn load(
    conn: &mut PgConnection,
    mut rows: Vec<PendingRow>,
) -> Result<Vec<Result<PendingEvent, UnreadableRow>>, StoreError> {
    let mut budget = RAW_BATCH_BYTES;
    let within = rows
        .iter()
        .enumerate()
        .position(|(at, row)| {
            budget -= row.body_bytes.unwrap_or(0);
            at > 0 && budget < 0
        })
        .unwrap_or(rows.len());
    rows.truncate(within);
    let raw: Vec<i64> = rows
        .iter()
        .filter(|row| row.body_bytes.is_some())
        .map(|row| row.id)
        .collect();
    let mut bodies: HashMap<i64, Vec<u8>> = if raw.is_empty() {
        HashMap::new()
    } else {
        sqlx::query_as::<_, (i64, Vec<u8>)>("SELECT id, body FROM outbox WHERE id = ANY($1)")
            .bind(&raw)
            .fetch_all(conn)
            .await?
            .into_iter()
            .collect()
    };
    Ok(rows
        .into_iter()
        .map(|row| row.into_pending(&mut bodies))
        .collect())
}

fn json(what: &'static str, text: &str) -> Result<serde_json::Value, Unreadable> {
    serde_json::from_str(text).map_err(|source| Unreadable::Json { what, source })
}

/// `text` cut to at most `max` bytes, at a character boundary.
pub(super) fn cut(text: &str, max: usize) -> &str {
    &text[..text.floor_char_boundary(max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_cut_at_a_character_boundary() {
        assert_eq!(cut("abc", 10), "abc");
        assert_eq!(cut("ab€", 4), "ab");
        assert_eq!(cut(&"é".repeat(600), 1_024).len(), 1_024);
    }

    #[test]
    fn a_row_nested_beyond_the_decoder_limit_is_unreadable_and_named() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let row = PendingRow {
            id: 7,
            event_id: Uuid::nil(),
            created_at: Utc::now(),
            event_type: None,
            payload: None,
            exchange: Some("commerce.events".into()),
            routing_key: Some("payment.succeeded".into()),
            properties: Some(format!(r#"{{"headers": {{"deep": {deep}}}}}"#)),
            body_bytes: Some(2),
            traceparent: None,
            tracestate: None,
        };
        let mut bodies = HashMap::from([(7, b"{}".to_vec())]);

        let error = row.into_pending(&mut bodies).unwrap_err();

        assert_eq!(error.id, 7);
        assert!(
            matches!(
                error.cause,
                Unreadable::Json {
                    what: "properties",
                    ..
                }
            ),
            "{error:?}"
        );
    }
}
