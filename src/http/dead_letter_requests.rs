//! Request bodies and query parameters of `/v1/dead-letters`. Bodies reject unknown fields; each
//! becomes domain values (a filter of the store) in `try_into_domain`, with the domain's bounds.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::problem::Problem;
use crate::app::dead_letters::DeadLetterFilter;
use crate::app::dead_letters::dead_letter_views::DeadLetterStatusView;
use crate::app::field_schemas;
use crate::domain::{
    BoundedText, DeadLetterId, MAX_BULK_REPLAY, ValidationError, action_note, reason_filter,
    type_filter,
};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeadLetterListParams {
    /// Only dead letters in this status.
    pub status: Option<DeadLetterStatusView>,
    #[param(schema_with = field_schemas::reason_filter)]
    pub reason: Option<String>,
    #[serde(rename = "type")]
    #[param(rename = "type", schema_with = field_schemas::type_filter)]
    pub event_type: Option<String>,
    /// Page size, 1–100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u16>,
    /// The `next` cursor of the previous page.
    pub after: Option<String>,
}

impl DeadLetterListParams {
    /// The filter, or the 400 of a filter out of bounds.
    pub fn filter(&self) -> Result<DeadLetterFilter, Problem> {
        let invalid = |e: ValidationError| Problem::bad_request("invalid-query", e.to_string());
        Ok(DeadLetterFilter {
            status: self.status.map(Into::into),
            reason: self
                .reason
                .as_deref()
                .map(reason_filter)
                .transpose()
                .map_err(invalid)?,
            event_type: self
                .event_type
                .as_deref()
                .map(type_filter)
                .transpose()
                .map_err(invalid)?,
            ids: None,
        })
    }
}

/// The body of a replay or discard of one dead letter: `{}`, or a note on why.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"note": "a test message sent to production by mistake"}))]
pub struct ActionRequest {
    #[schema(schema_with = field_schemas::action_note)]
    pub note: Option<String>,
}

impl ActionRequest {
    /// The note, checked (1–500 characters, no control character).
    pub fn note(&self) -> Result<Option<BoundedText>, ValidationError> {
        self.note.as_deref().map(action_note).transpose()
    }
}

/// Which parked dead letters a bulk replay takes: those matching every filter given (none given:
/// every parked one), oldest first, at most 1000 per call.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"reason": "premature:", "type": "payment.succeeded"}))]
pub struct BulkReplayRequest {
    #[schema(schema_with = field_schemas::dead_letter_ids)]
    pub ids: Option<Vec<Uuid>>,
    #[schema(schema_with = field_schemas::reason_filter)]
    pub reason: Option<String>,
    #[serde(rename = "type")]
    #[schema(schema_with = field_schemas::type_filter)]
    pub event_type: Option<String>,
}

impl BulkReplayRequest {
    pub fn try_into_domain(self) -> Result<DeadLetterFilter, ValidationError> {
        if self
            .ids
            .as_ref()
            .is_some_and(|ids| ids.len() > MAX_BULK_REPLAY)
        {
            return Err(ValidationError::new(
                "ids",
                format!("at most {MAX_BULK_REPLAY} ids per call"),
            ));
        }
        Ok(DeadLetterFilter {
            status: None,
            reason: self.reason.as_deref().map(reason_filter).transpose()?,
            event_type: self.event_type.as_deref().map(type_filter).transpose()?,
            ids: self
                .ids
                .map(|ids| ids.into_iter().map(DeadLetterId::from_uuid).collect()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bulk_replay_names_at_most_its_bound_of_ids() {
        let body = |n: usize| BulkReplayRequest {
            ids: Some(vec![Uuid::nil(); n]),
            reason: None,
            event_type: None,
        };
        assert!(body(MAX_BULK_REPLAY).try_into_domain().is_ok());
        assert!(body(MAX_BULK_REPLAY + 1).try_into_domain().is_err());
    }
}
