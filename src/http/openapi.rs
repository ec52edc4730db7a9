//! The OpenAPI 3.1 document, collected by utoipa from the handlers' annotations, and the
//! offline Swagger UI that renders it at `/docs`.

use axum::http::Method;
use utoipa::OpenApi;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{Content, Header, ObjectBuilder, Ref, RefOr, Response, ResponseBuilder};

use super::auth::{is_api_path, required_scope};
use super::problem::Problem;
use crate::domain::IdempotencyKey;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "order-service",
        description = "Owns the lifecycle of orders and the money paid for them.\n\n\
            Every POST under `/v1` needs an `Idempotency-Key` header: a retry with the same key \
            and body replays the first answer (`Idempotent-Replayed: true`), forever; the same \
            key with another body, endpoint or order is 422. Errors are \
            `application/problem+json` (RFC 9457).\n\n\
            Every operation under `/v1` needs `Authorization: Bearer <token>`: reads the scope \
            `orders:read`, changes `orders:write`, everything under `/v1/dead-letters` \
            `orders:admin` (401 without a valid token, 403 without the scope). Health, metrics \
            and these docs are open.\n\n\
            The events the service consumes and publishes over RabbitMQ are documented at \
            [/docs/events](/docs/events) (AsyncAPI 3.0: `/asyncapi.json`).",
        license(name = "MIT")
    ),
    tags(
        (name = "orders", description = "Place, read, ship and cancel orders"),
        (name = "payments", description = "The ledger: money received (payments) and returned (refunds)"),
        (name = "dead-letters", description = "Messages that could not be applied, parked: find, group, replay, discard"),
        (name = "ops", description = "Health and metrics"),
    ),
    components(schemas(Problem))
)]
pub struct ApiDoc;

/// The document exactly as `/openapi.json` serves it and `order-service openapi` prints it.
pub fn document() -> utoipa::openapi::OpenApi {
    super::routes().1
}

pub fn to_pretty_json() -> String {
    document()
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// The name of the security scheme in the document.
const BEARER: &str = "bearer";

/// Declares the bearer scheme and, on every operation under `/v1`, the scope it needs (the same
/// rule the middleware applies, from `auth::required_scope`) and the answers every such
/// operation can give: 401, 403 and 503.
pub(super) fn secure(document: &mut utoipa::openapi::OpenApi) {
    let components = document.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        BEARER,
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "A client's token, created with `order-service token --client <id>`; \
                     the service stores only its SHA-256.",
                ))
                .build(),
        ),
    );
    for (path, item) in document.paths.paths.iter_mut() {
        for (method, operation) in [
            (Method::GET, item.get.as_mut()),
            (Method::POST, item.post.as_mut()),
        ] {
            let Some(operation) = operation.filter(|_| is_api_path(path)) else {
                continue;
            };
            // Every operation under /v1 needs a token; most also a scope (`/v1/me` none).
            let scope = required_scope(&method, path);
            let scopes: Vec<&str> = scope.iter().map(|scope| scope.as_str()).collect();
            operation.security = Some(vec![SecurityRequirement::new(BEARER, scopes)]);
            let responses = &mut operation.responses.responses;
            responses.insert(
                "401".into(),
                problem_response(
                    "No valid bearer token (missing, unknown or malformed)",
                    true,
                ),
            );
            if let Some(scope) = scope {
                responses.insert(
                    "403".into(),
                    problem_response(&format!("The client lacks the scope `{scope}`"), true),
                );
            }
            responses.insert(
                "503".into(),
                problem_response(
                    "Overloaded (too many requests in progress), timed out, or the database is \
                 unavailable; retry after `Retry-After` seconds",
                    false,
                ),
            );
        }
    }
}

fn problem_response(description: &str, challenge: bool) -> RefOr<Response> {
    let mut response = ResponseBuilder::new().description(description).content(
        "application/problem+json",
        Content::new(Some(Ref::from_schema_name("Problem"))),
    );
    let string = || {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .build()
    };
    response = if challenge {
        response.header("WWW-Authenticate", Header::new(string()))
    } else {
        response.header("Retry-After", Header::new(string()))
    };
    RefOr::T(response.build())
}

/// A quoted structured-field string (`\"` and `\\` its only escapes), or printable ASCII that
/// neither starts with a quote nor holds a comma.
const IDEMPOTENCY_KEY: &str = r#"^("([\x20\x21\x23-\x5B\x5D-\x7E]|\\["\\])+"|[\x20\x21\x23-\x2B\x2D-\x7E][\x20-\x2B\x2D-\x7E]*)$"#;

/// `*`, or entity-tags (weak or strong) separated by commas.
const IF_MATCH: &str =
    r#"^[ \t]*(\*|(W/)?"[\x21\x23-\x7E]*"([ \t]*,[ \t]*(W/)?"[\x21\x23-\x7E]*")*)[ \t]*$"#;

/// The request headers as their extractors accept them, declared once for every operation that
/// takes them (so generated clients and fuzzers send values the API accepts): `Idempotency-Key`
/// as `IdempotencyKey::parse` reads it (a quoted string, or printable ASCII with no comma),
/// `If-Match` as `http::if_match` does (`*`, or a list of entity-tags).
pub(super) fn constrain_headers(document: &mut utoipa::openapi::OpenApi) {
    let string = |max_length: Option<usize>, pattern: &str| {
        ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .min_length(Some(1))
            .max_length(max_length)
            .pattern(Some(pattern))
            .build()
    };
    for item in document.paths.paths.values_mut() {
        let Some(operation) = item.post.as_mut() else {
            continue;
        };
        for parameter in operation.parameters.iter_mut().flatten() {
            let RefOr::T(parameter) = parameter else {
                continue;
            };
            if parameter.parameter_in != ParameterIn::Header {
                continue;
            }
            let schema = match parameter.name.to_ascii_lowercase().as_str() {
                "idempotency-key" => string(Some(IdempotencyKey::MAX_LEN), IDEMPOTENCY_KEY),
                "if-match" => string(None, IF_MATCH),
                _ => continue,
            };
            parameter.schema = Some(RefOr::T(schema.into()));
        }
    }
}

/// Links from a placed order to the operations on it, so clients (and stateful testers such as
/// schemathesis) can follow `id` from the 201 of `place_order`.
pub(super) fn link(document: &mut utoipa::openapi::OpenApi) {
    let Some(place) = document
        .paths
        .paths
        .get_mut("/v1/orders")
        .and_then(|item| item.post.as_mut())
    else {
        return;
    };
    let Some(RefOr::T(created)) = place.responses.responses.get_mut("201") else {
        return;
    };
    for target in [
        "get_order",
        "list_payments",
        "record_payment",
        "ship_order",
        "cancel_order",
        "order_history",
    ] {
        let link = LinkBuilder::new()
            .operation_id(target)
            .parameter("id", "$response.body#/id")
            .description(format!("`{target}` on the placed order"))
            .build();
        created.links.insert(target.to_owned(), RefOr::T(link));
    }
}
