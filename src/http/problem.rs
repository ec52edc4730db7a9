//! RFC 9457 problem details: the one body of every 4xx/5xx, and the one place where an outcome
//! of the application layer becomes an HTTP status.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::app::AppError;
use crate::app::dead_letters::dead_letter_views::DeadLetterStatusView;
use crate::app::views::OrderStatusView;
use crate::domain::{DeadLetterStatus, DomainError, OrderStatus, ValidationError, Version};
use crate::telemetry::{error_chain, escaped};

const PROBLEM_JSON: &str = "application/problem+json";

/// A problem details document (RFC 9457).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(example = json!({
    "type": "https://order-service.dev/problems/invalid-transition",
    "title": "Invalid transition",
    "status": 409,
    "detail": "an order cannot move from PENDING_PAYMENT to SHIPPED",
    "current_status": "PENDING_PAYMENT",
    "current_version": 1
}))]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The order's (or dead letter's) status, when a state conflict is the cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_status: Option<CurrentStatus>,
    /// The order's version, when a state conflict is the cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<i64>,
    #[serde(skip)]
    retry_after_secs: Option<u32>,
    /// `WWW-Authenticate` of a 401 or 403 (boxed: keeps `Result<_, Problem>` small).
    #[serde(skip)]
    challenge: Option<Box<str>>,
}

/// The status of what a state conflict is about: an order, or a dead letter.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(untagged)]
pub enum CurrentStatus {
    Order(OrderStatusView),
    DeadLetter(DeadLetterStatusView),
}

impl Problem {
    pub fn new(status: StatusCode, slug: &str, title: &str, detail: impl Into<String>) -> Self {
        Self {
            kind: format!("https://order-service.dev/problems/{slug}"),
            title: title.to_owned(),
            status: status.as_u16(),
            detail: detail.into(),
            current_status: None,
            current_version: None,
            retry_after_secs: None,
            challenge: None,
        }
    }

    fn with_current(mut self, status: Option<OrderStatus>, version: Option<Version>) -> Self {
        self.current_status = status.map(|s| CurrentStatus::Order(s.into()));
        self.current_version = version.map(Version::get);
        self
    }

    pub(crate) fn retry_after(mut self, secs: u32) -> Self {
        self.retry_after_secs = Some(secs);
        self
    }

    pub(crate) fn with_challenge(mut self, challenge: String) -> Self {
        self.challenge = Some(challenge.into_boxed_str());
        self
    }

    /// The `WWW-Authenticate` value this problem is answered with, if any.
    pub fn challenge(&self) -> Option<&str> {
        self.challenge.as_deref()
    }

    pub fn bad_request(slug: &str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, slug, "Bad request", detail)
    }

    pub fn validation(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "Invalid request body",
            detail,
        )
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", detail)
    }

    fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal server error",
            "an unexpected error occurred; it has been logged",
        )
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry_after = self.retry_after_secs;
        let challenge = self
            .challenge
            .as_deref()
            .and_then(|c| HeaderValue::from_str(c).ok());
        let mut response = (status, axum::Json(self)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(secs) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        if let Some(challenge) = challenge {
            headers.insert(header::WWW_AUTHENTICATE, challenge);
        }
        response
    }
}

impl From<AppError> for Problem {
    fn from(error: AppError) -> Self {
        match error {
            AppError::NotFound(id) => Problem::not_found(format!("order {id} does not exist")),
            AppError::DeadLetterNotFound(id) => {
                Problem::not_found(format!("dead letter {id} does not exist"))
            }
            error @ AppError::NotParked { status, .. } => {
                let mut problem = Problem::new(
                    StatusCode::CONFLICT,
                    "dead-letter-not-parked",
                    "Dead letter not parked",
                    format!("{error}: only a parked dead letter can be replayed or discarded"),
                );
                problem.current_status = Some(CurrentStatus::DeadLetter(status.into()));
                problem
            }
            error @ AppError::Unreplayable { .. } => {
                let mut problem = Problem::new(
                    StatusCode::CONFLICT,
                    "dead-letter-not-replayable",
                    "Dead letter cannot be replayed",
                    format!(
                        "{error}: a replay goes to the inbound exchange under the routing key the \
                         dead letter arrived with, and the inbox is bound only to the inbound \
                         event types; discard it, or have its publisher send a corrected copy"
                    ),
                );
                problem.current_status =
                    Some(CurrentStatus::DeadLetter(DeadLetterStatus::Parked.into()));
                problem
            }
            AppError::Refused {
                reason,
                current_status,
                current_version,
            } => {
                let (status, title) = match reason {
                    DomainError::InvalidTransition { .. } => {
                        (StatusCode::CONFLICT, "Invalid transition")
                    }
                    DomainError::OrderConflict(_) => {
                        (StatusCode::CONFLICT, "Order id already used")
                    }
                    DomainError::ShipmentConflict => (StatusCode::CONFLICT, "Already shipped"),
                    DomainError::TransferConflict(_) => {
                        (StatusCode::CONFLICT, "Transfer id already used")
                    }
                    DomainError::CurrencyMismatch { .. } => {
                        (StatusCode::UNPROCESSABLE_ENTITY, "Currency mismatch")
                    }
                    DomainError::LedgerOverflow => (
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "Ledger total out of range",
                    ),
                    DomainError::RefundExceedsBalance { .. } => {
                        (StatusCode::CONFLICT, "Refund exceeds balance")
                    }
                };
                Problem::new(status, reason.code(), title, reason.to_string())
                    .with_current(current_status, current_version)
            }
            AppError::KeyReused => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "Idempotency-Key reused",
                "this Idempotency-Key was already used for a different request \
                 (another body, endpoint or order)",
            ),
            AppError::PreconditionFailed { current_version } => Problem::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition-failed",
                "Precondition failed",
                format!(
                    "If-Match names no strong ETag of the order, which is at \"{current_version}\""
                ),
            )
            .with_current(None, Some(current_version)),
            AppError::Busy => Problem::new(
                StatusCode::CONFLICT,
                "in-flight",
                "Request in flight",
                "a concurrent request with this key or on this order has not finished; retry",
            )
            .retry_after(1),
            error @ AppError::Unavailable(_) => {
                tracing::warn!(error = %escaped(&error_chain(&error)), "database unavailable");
                Problem::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "Service unavailable",
                    "a dependency is unavailable; retry later",
                )
                .retry_after(2)
            }
            error @ (AppError::Unexpected(_) | AppError::Invariant(_)) => {
                tracing::error!(error = %escaped(&error_chain(&error)), "unexpected failure");
                Problem::internal()
            }
        }
    }
}

/// A value the domain refuses is a validation problem (422), whichever field it is.
impl From<ValidationError> for Problem {
    fn from(error: ValidationError) -> Self {
        Problem::validation(error.to_string())
    }
}

/// Lets handlers use `?` on application results.
impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        Problem::from(self).into_response()
    }
}
