//! Extractors that turn raw requests into domain values, answering problem+json when they cannot:
//! the Idempotency-Key, body and trace context of a mutation, the order or dead letter id in the
//! path, a listing's query, the authenticated caller. `If-Match` has a module of its own
//! (`if_match.rs`).

use std::str::FromStr;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, MatchedPath, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use super::problem::Problem;
use crate::app::fingerprint;
use crate::domain::{Cause, ClientId, DeadLetterId, Fingerprint, IdempotencyKey, OrderId};
use crate::strict_json::{JsonObject, StrictJsonError};
use crate::telemetry::TraceContext;

/// The largest request body accepted; larger ones get 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// A mutating request: its Idempotency-Key, its typed body and its fingerprint (method, path and
/// canonical JSON body), ready to become a [`Cause`], and the trace context of its span, which
/// the events it causes carry.
pub struct Mutation<T> {
    pub key: IdempotencyKey,
    pub fingerprint: Fingerprint,
    pub body: T,
    pub trace: TraceContext,
}

impl<T> Mutation<T> {
    pub fn cause(&self, client: Caller) -> Cause {
        Cause::Api {
            client: client.0,
            key: self.key.clone(),
            fingerprint: self.fingerprint.clone(),
        }
    }
}

impl<S, T> FromRequest<S> for Mutation<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let key = idempotency_key(req.headers())?;
        if !is_json(req.headers()) {
            return Err(Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported-media-type",
                "Unsupported media type",
                "the body must be application/json",
            ));
        }
        let method = req.method().as_str().to_owned();
        let (mut parts, body) = req.into_parts();
        let path = canonical_path(&mut parts, state).await;
        let trace = super::trace::context_of(&parts.extensions);
        let req = Request::from_parts(parts, body);
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                payload_too_large()
            } else {
                Problem::bad_request("unreadable-body", "the request body could not be read")
            }
        })?;
        let object = JsonObject::parse(&bytes).map_err(body_problem)?;
        let body = object.read::<T>().map_err(body_problem)?;
        Ok(Self {
            key,
            fingerprint: fingerprint::of_request(&method, &path, &object.into_value()),
            body,
            trace,
        })
    }
}

/// The path as the service reads it, for the fingerprint: the route's template with each
/// parameter in the form its handler parses it to. An id is a UUID however the client spelled it
/// (upper-case, braced, without hyphens, percent-encoded), so every spelling of one order's
/// cancel is one request (docs/contract.md "Idempotency keys"). A request no route matched keeps
/// its path as sent.
async fn canonical_path<S: Send + Sync>(parts: &mut Parts, state: &S) -> String {
    let Some(template) = parts
        .extensions
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
    else {
        return parts.uri.path().to_owned();
    };
    let Ok(Path(params)) = Path::<Vec<(String, String)>>::from_request_parts(parts, state).await
    else {
        return parts.uri.path().to_owned();
    };
    params.iter().fold(template, |path, (name, value)| {
        let read = uuid::Uuid::parse_str(value).map_or_else(|_| value.clone(), |id| id.to_string());
        path.replace(&format!("{{{name}}}"), &read)
    })
}

/// A body that is not JSON, or repeats a key, is malformed (400); well-formed JSON of another
/// shape than the endpoint's object is a validation problem (422), as a field of the wrong type
/// is.
fn body_problem(error: StrictJsonError) -> Problem {
    match error {
        StrictJsonError::Syntax(e) | StrictJsonError::DuplicateKey(e) => {
            Problem::bad_request("malformed-json", format!("the body is not valid JSON: {e}"))
        }
        StrictJsonError::NotAnObject(found) => {
            Problem::validation(format!("the body must be a JSON object, not {found}"))
        }
        StrictJsonError::Invalid(text) => Problem::validation(text),
    }
}

pub(super) fn payload_too_large() -> Problem {
    Problem::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
        "Payload too large",
        format!("the body must not exceed {MAX_BODY_BYTES} bytes"),
    )
}

/// The request's one Idempotency-Key. Two fields of it are refused like a list in one field
/// (`IdempotencyKey::parse`): the request names two keys, and taking either is a guess.
fn idempotency_key(headers: &HeaderMap) -> Result<IdempotencyKey, Problem> {
    let mut fields = headers.get_all("idempotency-key").iter();
    let raw = fields.next().ok_or_else(|| {
        Problem::bad_request(
            "missing-idempotency-key",
            "every POST under /v1 needs an Idempotency-Key header",
        )
    })?;
    if fields.next().is_some() {
        return Err(Problem::bad_request(
            "invalid-idempotency-key",
            "a request has one Idempotency-Key header, not several",
        ));
    }
    let text = raw.to_str().map_err(|_| {
        Problem::bad_request(
            "invalid-idempotency-key",
            "Idempotency-Key must be printable ASCII",
        )
    })?;
    IdempotencyKey::parse(text)
        .map_err(|e| Problem::bad_request("invalid-idempotency-key", e.to_string()))
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(content_type) = headers.get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(content_type) = content_type.to_str() else {
        return false;
    };
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The `{id}` segment of a path: an order's or a dead letter's id, or 400 with the problem type
/// [`PathId::INVALID`] (`... is missing` or `... must be a UUID`).
pub struct IdPath<Id>(pub Id);

/// An id that a path names, with the words its 400 uses.
pub trait PathId: FromStr {
    /// The problem type of a missing or malformed id.
    const INVALID: &'static str;
    /// What the detail calls the id.
    const WHAT: &'static str;
}

impl PathId for OrderId {
    const INVALID: &'static str = "invalid-order-id";
    const WHAT: &'static str = "the order id";
}

impl PathId for DeadLetterId {
    const INVALID: &'static str = "invalid-dead-letter-id";
    const WHAT: &'static str = "the dead letter id";
}

impl<S: Send + Sync, Id: PathId> FromRequestParts<S> for IdPath<Id> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let invalid =
            |problem: &str| Problem::bad_request(Id::INVALID, format!("{} {problem}", Id::WHAT));
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| invalid("is missing"))?;
        raw.parse()
            .map(IdPath)
            .map_err(|_| invalid("must be a UUID"))
    }
}

/// A listing's query parameters; parameters that do not parse are 400 `invalid-query`.
pub struct ListQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ListQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(params) = Query::<T>::from_request_parts(parts, state)
            .await
            .map_err(|e| Problem::bad_request("invalid-query", e.body_text()))?;
        Ok(ListQuery(params))
    }
}

/// Who is calling: the client authenticated by `auth::authenticate` (`anonymous` when the API
/// runs open), the scope of Idempotency-Keys. A request that reached a handler without passing
/// the authentication middleware is refused: the router is built wrong, and failing closed is
/// the safe answer.
#[derive(Debug, Clone)]
pub struct Caller(pub ClientId);

/// What a handler that needs the caller answers when the authentication middleware did not run:
/// the router is built wrong, and failing closed is the safe answer.
fn unauthenticated() -> Problem {
    tracing::error!("a handler needing the caller ran without the authentication middleware");
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "Unauthorized",
        "the caller is not authenticated",
    )
}

/// The scopes of the client making the request, set beside [`Caller`] by the authentication
/// middleware (every scope when the API runs open). Absent means the middleware did not run,
/// and is refused as [`Caller`] is.
#[derive(Debug, Clone, Copy)]
pub struct CallerScopes(pub crate::auth::Scopes);

impl<S: Send + Sync> FromRequestParts<S> for CallerScopes {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<CallerScopes>()
            .copied()
            .ok_or_else(unauthenticated)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(unauthenticated)
    }
}
