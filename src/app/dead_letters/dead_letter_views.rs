//! The public representation of parked dead letters: what the REST API returns and what
//! `order-service dead-letters … --json` prints. One shape for both, and for the docs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::{BulkReplay, DeadLetterDetails, ParkedSummary};
use crate::app::views::SourceView;
use crate::domain::{DeadLetterAction, DeadLetterStatus, ReasonClass};
use crate::store::dead_letter_actions::TakenAction;
use crate::store::dead_letters::{DeadLetter, ParkedGroup};

/// Where a dead letter is: waiting for an operator, sent back, or dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = DeadLetterStatus)]
pub enum DeadLetterStatusView {
    Parked,
    Replayed,
    Discarded,
}

impl From<DeadLetterStatus> for DeadLetterStatusView {
    fn from(status: DeadLetterStatus) -> Self {
        match status {
            DeadLetterStatus::Parked => DeadLetterStatusView::Parked,
            DeadLetterStatus::Replayed => DeadLetterStatusView::Replayed,
            DeadLetterStatus::Discarded => DeadLetterStatusView::Discarded,
        }
    }
}

impl From<DeadLetterStatusView> for DeadLetterStatus {
    fn from(status: DeadLetterStatusView) -> Self {
        match status {
            DeadLetterStatusView::Parked => DeadLetterStatus::Parked,
            DeadLetterStatusView::Replayed => DeadLetterStatus::Replayed,
            DeadLetterStatusView::Discarded => DeadLetterStatus::Discarded,
        }
    }
}

/// Why it died, in a word: the first word of its reason (docs/operations/dead-letters.md lists
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = ReasonClass)]
pub enum ReasonClassView {
    Poison,
    Premature,
    Conflict,
    Unexpected,
    DeliveryLimit,
    Expired,
    Rejected,
    Maxlen,
    Other,
}

impl From<ReasonClass> for ReasonClassView {
    fn from(class: ReasonClass) -> Self {
        match class {
            ReasonClass::Poison => ReasonClassView::Poison,
            ReasonClass::Premature => ReasonClassView::Premature,
            ReasonClass::Conflict => ReasonClassView::Conflict,
            ReasonClass::Unexpected => ReasonClassView::Unexpected,
            ReasonClass::DeliveryLimit => ReasonClassView::DeliveryLimit,
            ReasonClass::Expired => ReasonClassView::Expired,
            ReasonClass::Rejected => ReasonClassView::Rejected,
            ReasonClass::Maxlen => ReasonClassView::Maxlen,
            ReasonClass::Other => ReasonClassView::Other,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterActionView {
    Replay,
    Discard,
}

impl From<DeadLetterAction> for DeadLetterActionView {
    fn from(action: DeadLetterAction) -> Self {
        match action {
            DeadLetterAction::Replay => DeadLetterActionView::Replay,
            DeadLetterAction::Discard => DeadLetterActionView::Discard,
        }
    }
}

/// A replay or discard taken on a dead letter (alone or in a bulk replay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ActionView {
    pub action: DeadLetterActionView,
    /// The REST client that took it, or `cli` for the command line.
    #[schema(example = "ops")]
    pub by: String,
    pub source: SourceView,
    /// The Idempotency-Key of the request that took it: shown only to the client that sent it
    /// (it replays that client's request), null for every other reader.
    pub idempotency_key: Option<String>,
    /// What the operator said about it (a discard's reason, say), if anything.
    #[schema(example = "sent twice by the shop's importer; the first copy applied")]
    pub note: Option<String>,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub at: DateTime<Utc>,
}

impl From<&TakenAction> for ActionView {
    fn from(action: &TakenAction) -> Self {
        Self {
            action: action.action.into(),
            by: action.client_id.clone(),
            source: action.source.into(),
            idempotency_key: Some(action.idempotency_key.clone()),
            note: action.note.clone(),
            at: action.at,
        }
    }
}

/// A parked dead letter: a message that could not be applied, as it arrived, with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DeadLetterView {
    #[schema(example = "0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5b")]
    pub id: Uuid,
    /// The envelope's `event_id`; null when the body is not an envelope.
    #[schema(example = "ev-2")]
    pub event_id: Option<String>,
    /// The envelope's `type`; null when the body is not an envelope.
    #[serde(rename = "type")]
    #[schema(example = "payment.succeeded")]
    pub event_type: Option<String>,
    /// The AMQP `message_id`, if it had one.
    pub message_id: Option<String>,
    /// The routing key it first arrived with; a replay publishes it with this key.
    #[schema(example = "payment.succeeded")]
    pub routing_key: String,
    /// The latest reason, `<class>: <detail>`.
    #[schema(
        example = "premature: order 0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5a does not exist yet (gave up after 10 attempts)"
    )]
    pub reason: String,
    pub reason_class: ReasonClassView,
    /// The original bytes as UTF-8 (invalid sequences replaced), cut after 64 KiB.
    pub body: String,
    /// The size of the whole body, in bytes.
    pub body_bytes: i64,
    /// Whether `body` is cut (the stored and replayed body is whole).
    pub body_truncated: bool,
    /// The original headers, without the service's and the broker's bookkeeping (`x-error-reason`,
    /// `x-attempt`, `x-death`, …).
    #[schema(value_type = Object)]
    pub headers: serde_json::Value,
    /// How many times it was dead-lettered (and parked).
    pub times: i32,
    pub status: DeadLetterStatusView,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub first_dead_lettered_at: DateTime<Utc>,
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub last_dead_lettered_at: DateTime<Utc>,
    /// The replays and discards taken on it, newest first (the latest 20); only on a single dead
    /// letter, not in lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Vec<ActionView>>,
}

impl From<&DeadLetter> for DeadLetterView {
    fn from(letter: &DeadLetter) -> Self {
        Self {
            id: letter.id.as_uuid(),
            event_id: letter.event_id.clone(),
            event_type: letter.event_type.clone(),
            message_id: letter.message_id.clone(),
            routing_key: letter.routing_key.clone(),
            reason: letter.reason.clone(),
            reason_class: letter.reason_class.into(),
            body: String::from_utf8_lossy(&letter.body).into_owned(),
            body_bytes: letter.body_bytes,
            body_truncated: (letter.body.len() as i64) < letter.body_bytes,
            headers: letter.headers.clone(),
            times: letter.times,
            status: letter.status.into(),
            first_dead_lettered_at: letter.first_dead_lettered_at,
            last_dead_lettered_at: letter.last_dead_lettered_at,
            actions: None,
        }
    }
}

impl From<&DeadLetterDetails> for DeadLetterView {
    fn from(details: &DeadLetterDetails) -> Self {
        Self {
            actions: Some(details.actions.iter().map(ActionView::from).collect()),
            ..Self::from(&details.letter)
        }
    }
}

/// How many dead letters a bulk replay sent back, and how many it left parked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BulkReplayView {
    #[schema(example = 3)]
    pub replayed: u64,
    /// Parked dead letters the filters matched that cannot be replayed: the inbox is bound to no
    /// such routing key (a replay would lose or misroute them). They stay parked; discard them,
    /// or have their publisher send a corrected copy.
    #[schema(example = 0)]
    pub skipped: u64,
}

impl From<BulkReplay> for BulkReplayView {
    fn from(bulk: BulkReplay) -> Self {
        Self {
            replayed: bulk.replayed,
            skipped: bulk.skipped,
        }
    }
}

/// Parked dead letters of one reason class and event type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ParkedGroupView {
    pub reason_class: ReasonClassView,
    /// Null for bodies that are not envelopes.
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub count: i64,
    /// When the newest of them was dead-lettered.
    #[serde(serialize_with = "crate::app::json_time::serialize")]
    pub last_dead_lettered_at: DateTime<Utc>,
}

/// The parked dead letters at a glance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeadLetterSummaryView {
    /// How many are parked in all.
    pub parked: i64,
    /// By reason class and type, largest first (at most 100 groups).
    pub groups: Vec<ParkedGroupView>,
}

impl From<&ParkedSummary> for DeadLetterSummaryView {
    fn from(summary: &ParkedSummary) -> Self {
        Self {
            parked: summary.parked,
            groups: summary
                .groups
                .iter()
                .map(|group: &ParkedGroup| ParkedGroupView {
                    reason_class: group.reason_class.into(),
                    event_type: group.event_type.clone(),
                    count: group.count,
                    last_dead_lettered_at: group.last_dead_lettered_at,
                })
                .collect(),
        }
    }
}

/// A page of dead letters, newest first.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DeadLetterList {
    pub items: Vec<DeadLetterView>,
    /// Pass back as `after` for the next page; null on the last page.
    pub next: Option<String>,
}
