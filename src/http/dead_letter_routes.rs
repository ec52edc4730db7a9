//! `/v1/dead-letters`: find, group, replay and discard parked dead letters
//! (docs/operations/dead-letters.md). Every route needs the scope `orders:admin`; the actions are
//! POSTs like any other, with an Idempotency-Key.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::dead_letter_requests::{ActionRequest, BulkReplayRequest, DeadLetterListParams};
use super::extract::{Caller, IdPath, ListQuery, Mutation};
use super::openapi_parts::{
    CommandHeaders, CommandProblems, DeadLetterActed, DeadLetterIdPath, DeadLetterReplayed,
};
use super::problem::Problem;
use super::respond;
use super::state::ApiState;
use crate::app::dead_letters::DeadLetterPageRequest;
use crate::app::dead_letters::dead_letter_views::{
    BulkReplayView, DeadLetterList, DeadLetterSummaryView, DeadLetterView,
};
use crate::app::page_tokens;
use crate::app::views::SourceView;
use crate::domain::{ClientId, DeadLetterAction, DeadLetterId};

/// This module's routes, with their documentation.
pub(super) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list_dead_letters))
        .routes(routes!(dead_letter_summary))
        .routes(routes!(get_dead_letter))
        .routes(routes!(replay_dead_letter))
        .routes(routes!(discard_dead_letter))
        .routes(routes!(replay_dead_letters))
}

/// List dead letters, newest first (by when they were last dead-lettered).
///
/// Keyset pagination: pass the `next` of a page as `after` to get the following one. A dead letter
/// dead-lettered again while you page moves to the front.
#[utoipa::path(
    get,
    path = "/v1/dead-letters",
    tag = "dead-letters",
    params(DeadLetterListParams),
    responses(
        (status = 200, description = "A page of dead letters (bodies cut after 64 KiB)", body = DeadLetterList),
        (status = 400, description = "Invalid status, reason, type, limit or cursor", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn list_dead_letters(
    State(state): State<ApiState>,
    ListQuery(params): ListQuery<DeadLetterListParams>,
) -> Result<axum::Json<DeadLetterList>, Problem> {
    let (limit, after) = page_tokens::page(params.limit, params.after.as_deref())?;
    let page = state
        .app
        .dead_letters(DeadLetterPageRequest {
            filter: params.filter()?,
            limit,
            after,
        })
        .await?;
    Ok(axum::Json(DeadLetterList {
        items: page.items.iter().map(DeadLetterView::from).collect(),
        next: page.next.map(|c| page_tokens::encode(&c)),
    }))
}

/// The parked dead letters at a glance: how many, by reason class and event type.
#[utoipa::path(
    get,
    path = "/v1/dead-letters/summary",
    tag = "dead-letters",
    responses(
        (status = 200, description = "Counts of parked dead letters", body = DeadLetterSummaryView),
    )
)]
pub async fn dead_letter_summary(
    State(state): State<ApiState>,
) -> Result<axum::Json<DeadLetterSummaryView>, Problem> {
    let summary = state.app.parked_summary().await?;
    Ok(axum::Json(DeadLetterSummaryView::from(&summary)))
}

/// Get one dead letter, with the actions taken on it.
#[utoipa::path(
    get,
    path = "/v1/dead-letters/{id}",
    tag = "dead-letters",
    params(DeadLetterIdPath),
    responses(
        (status = 200, description = "The dead letter", body = DeadLetterView),
        (status = 400, description = "The id is not a UUID", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Unknown dead letter", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn get_dead_letter(
    State(state): State<ApiState>,
    Caller(caller): Caller,
    IdPath(id): IdPath<DeadLetterId>,
) -> Result<axum::Json<DeadLetterView>, Problem> {
    let details = state.app.dead_letter(id).await?;
    Ok(axum::Json(as_seen_by(
        DeadLetterView::from(&details),
        &caller,
    )))
}

/// `view` as the API client `reader` may see it: an action's Idempotency-Key is its client's own
/// (it replays that client's request); another reader sees who acted, not the key, and no API
/// client sees the command line's.
fn as_seen_by(mut view: DeadLetterView, reader: &ClientId) -> DeadLetterView {
    for action in view.actions.iter_mut().flatten() {
        if action.source != SourceView::Api || action.by != reader.as_str() {
            action.idempotency_key = None;
        }
    }
    view
}

/// Replay a parked dead letter.
///
/// Sends its original body and properties (without the bookkeeping headers) back to the inbound
/// exchange with its original routing key, through the outbox, and marks it `replayed`. Only a
/// parked dead letter can be replayed (409 `dead-letter-not-parked` otherwise, with its
/// `current_status`): one that comes back is parked again and can be replayed again. Only one
/// whose routing key the inbox is bound to (an inbound event type) can be replayed: under another
/// key it would be lost or misrouted, so it is refused with 409 `dead-letter-not-replayable` and
/// stays parked. The body is `{}`.
#[utoipa::path(
    post,
    path = "/v1/dead-letters/{id}/replay",
    tag = "dead-letters",
    params(DeadLetterIdPath, CommandHeaders),
    request_body = ActionRequest,
    responses(DeadLetterReplayed, CommandProblems)
)]
pub async fn replay_dead_letter(
    state: State<ApiState>,
    caller: Caller,
    path: IdPath<DeadLetterId>,
    request: Mutation<ActionRequest>,
) -> Result<Response, Problem> {
    act(state, caller, path, request, DeadLetterAction::Replay).await
}

/// Discard a parked dead letter.
///
/// Marks it `discarded`: it is never replayed, and its row stays as the record. Only a parked dead
/// letter can be discarded (409 otherwise). The body is `{}`.
#[utoipa::path(
    post,
    path = "/v1/dead-letters/{id}/discard",
    tag = "dead-letters",
    params(DeadLetterIdPath, CommandHeaders),
    request_body = ActionRequest,
    responses(DeadLetterActed, CommandProblems)
)]
pub async fn discard_dead_letter(
    state: State<ApiState>,
    caller: Caller,
    path: IdPath<DeadLetterId>,
    request: Mutation<ActionRequest>,
) -> Result<Response, Problem> {
    act(state, caller, path, request, DeadLetterAction::Discard).await
}

/// Takes `action` on one dead letter: 200 with it as it is now, the same for an action taken now
/// or replayed under the request's key.
async fn act(
    State(state): State<ApiState>,
    caller: Caller,
    IdPath(id): IdPath<DeadLetterId>,
    request: Mutation<ActionRequest>,
    action: DeadLetterAction,
) -> Result<Response, Problem> {
    let note = request.body.note()?;
    let reader = caller.0.clone();
    let cause = request.cause(caller);
    let outcome = state
        .app
        .act_on_dead_letter(id, action, note.as_ref(), &cause, &request.trace)
        .await?;
    Ok(respond::outcome(
        StatusCode::OK,
        &outcome,
        as_seen_by(DeadLetterView::from(outcome.value()), &reader),
    ))
}

/// Replay every parked dead letter that matches.
///
/// Takes the parked dead letters matching all filters given (`ids`, `reason` substring, `type`;
/// none given: all), oldest first, **at most 1000 per call**: call again while `replayed` is 1000.
/// Those whose routing key the inbox is not bound to are skipped and stay parked: `skipped` counts
/// them (a single replay of one is refused with 409 `dead-letter-not-replayable`).
#[utoipa::path(
    post,
    path = "/v1/dead-letters/replay",
    tag = "dead-letters",
    params(CommandHeaders),
    request_body = BulkReplayRequest,
    responses(
        (status = 200, description = "How many were replayed (or replayed before under this key: see `Idempotent-Replayed`), and how many matched but cannot be replayed", body = BulkReplayView,
            headers(("Idempotent-Replayed" = String, description = "`true` when nothing new was done"))),
        (status = 400, description = "Missing or malformed Idempotency-Key, or malformed JSON (a key given twice included)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A request with this key, or one holding these dead letters, is in flight", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A body that is not a JSON object, an invalid or unknown field, more than 1000 ids, or the key was used for another request", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "Database unavailable", body = Problem, content_type = "application/problem+json"),
    )
)]
pub async fn replay_dead_letters(
    State(state): State<ApiState>,
    caller: Caller,
    request: Mutation<BulkReplayRequest>,
) -> Result<Response, Problem> {
    let cause = request.cause(caller);
    let filter = request.body.try_into_domain()?;
    let outcome = state
        .app
        .replay_dead_letters(filter, &cause, &request.trace)
        .await?;
    let view = BulkReplayView::from(*outcome.value());
    Ok(respond::outcome(StatusCode::OK, &outcome, view))
}
