//! Bearer-token authentication of the REST API, one middleware in front of every route: open
//! paths pass untouched; anything else needs the token of a configured client (401 with
//! `WWW-Authenticate: Bearer` if not) holding the scope the route needs (403 if not). The client
//! travels to handlers as a request extension read by the `Caller` extractor: it scopes
//! Idempotency-Keys and is recorded in the history.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::extract::{Caller, CallerScopes};
use super::problem::Problem;
use crate::auth::{AuthMode, Client, Scope};
use crate::config::DEFAULT_OPEN_PATHS;

/// The realm named in every challenge.
const REALM: &str = "order-service";
/// Longer `Authorization` values are refused before hashing.
const MAX_TOKEN_CHARS: usize = 512;

/// The versioned API: everything under it costs database work and needs a scope.
pub(super) fn is_api_path(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// The scope a request needs: everything under `/v1/dead-letters` needs `orders:admin` (dead
/// letters hold every publisher's messages, and replaying one changes orders); other reads under
/// `/v1` need `orders:read`, everything else there `orders:write`; `/v1/me` (who the caller is)
/// none. Outside `/v1` (and outside the open paths) a valid token is enough.
pub(super) fn required_scope(method: &Method, path: &str) -> Option<Scope> {
    if !is_api_path(path) {
        return None;
    }
    if path == "/v1/me" {
        // Who the caller is: any authenticated client may ask.
        None
    } else if path == "/v1/dead-letters" || path.starts_with("/v1/dead-letters/") {
        Some(Scope::OrdersAdmin)
    } else if method == Method::GET || method == Method::HEAD {
        Some(Scope::OrdersRead)
    } else {
        Some(Scope::OrdersWrite)
    }
}

/// Path prefixes served without a token, matched per segment: `/health` opens `/health` and
/// `/health/live`, not `/healthz`.
#[derive(Debug, Clone)]
pub struct OpenPaths(Vec<String>);

impl OpenPaths {
    pub fn new<I, S>(prefixes: I) -> Result<Self, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut paths = Vec::new();
        for prefix in prefixes {
            let prefix = prefix.as_ref().trim().trim_end_matches('/');
            if !prefix.starts_with('/') || prefix.contains("..") {
                return Err(format!(
                    "open path {prefix:?} must be an absolute path like /health (and not /)"
                ));
            }
            paths.push(prefix.to_owned());
        }
        Ok(Self(paths))
    }

    pub fn contains(&self, path: &str) -> bool {
        // A path with dot segments is never open, whatever the router later makes of it.
        if path
            .split('/')
            .any(|segment| segment == "." || segment == "..")
        {
            return false;
        }
        self.0.iter().any(|prefix| {
            path.strip_prefix(prefix.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }
}

impl Default for OpenPaths {
    fn default() -> Self {
        Self(DEFAULT_OPEN_PATHS.map(str::to_owned).to_vec())
    }
}

/// What the middleware needs: the mode and the open paths.
#[derive(Debug)]
pub(super) struct Guard {
    mode: AuthMode,
    anonymous: Client,
    open_paths: OpenPaths,
}

impl Guard {
    pub(super) fn new(mode: AuthMode, open_paths: OpenPaths) -> Self {
        Self {
            mode,
            anonymous: Client::anonymous(),
            open_paths,
        }
    }

    /// The client making `request`, or the problem to answer it with.
    fn admit(&self, method: &Method, path: &str, headers: &HeaderMap) -> Result<Client, Problem> {
        let client = match &self.mode {
            AuthMode::Open => self.anonymous.clone(),
            AuthMode::Enforced(registry) => {
                let token = bearer_token(headers)?;
                registry.authenticate(token).cloned().ok_or_else(|| {
                    unauthorized(Some("invalid_token"), "the bearer token is not valid")
                })?
            }
        };
        match required_scope(method, path) {
            Some(scope) if !client.scopes.contains(scope) => Err(forbidden(&client, scope)),
            _ => Ok(client),
        }
    }
}

pub(super) async fn authenticate(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    if guard.open_paths.contains(request.uri().path()) {
        return next.run(request).await;
    }
    match guard.admit(request.method(), request.uri().path(), request.headers()) {
        Ok(client) => {
            request.extensions_mut().insert(CallerScopes(client.scopes));
            request.extensions_mut().insert(Caller(client.id));
            next.run(request).await
        }
        Err(problem) => {
            metrics::counter!("http_auth_rejections_total", "status" => problem.status.to_string())
                .increment(1);
            problem.into_response()
        }
    }
}

/// The token of `Authorization: Bearer <token>`. No header, or another scheme, is a request
/// without credentials (a bare challenge, RFC 6750 §3.1); a Bearer header that is not one token
/// is `invalid_request`.
fn bearer_token(headers: &HeaderMap) -> Result<&str, Problem> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        let detail = if headers.contains_key(header::AUTHORIZATION) {
            "send exactly one Authorization header"
        } else {
            "this resource needs an Authorization: Bearer <token> header"
        };
        return Err(unauthorized(None, detail));
    };
    let malformed = || {
        unauthorized(
            Some("invalid_request"),
            "the Authorization header must be `Bearer <token>`",
        )
    };
    let text = value.to_str().map_err(|_| malformed())?;
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized(
            None,
            "this resource needs an Authorization: Bearer <token> header",
        ));
    }
    let token = token.trim_start_matches(' ');
    if token.is_empty() || token.len() > MAX_TOKEN_CHARS || !is_token68(token) {
        return Err(malformed());
    }
    Ok(token)
}

/// RFC 7235 `token68`: `A-Z a-z 0-9 - . _ ~ + /`, then optional `=` padding.
fn is_token68(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

fn unauthorized(error: Option<&str>, detail: &str) -> Problem {
    let challenge = match error {
        None => format!("Bearer realm=\"{REALM}\""),
        Some(error) => format!("Bearer realm=\"{REALM}\", error=\"{error}\""),
    };
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "Unauthorized",
        detail,
    )
    .with_challenge(challenge)
}

fn forbidden(client: &Client, scope: Scope) -> Problem {
    Problem::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "Forbidden",
        format!("client {} lacks the scope {scope}", client.id),
    )
    .with_challenge(format!(
        "Bearer realm=\"{REALM}\", error=\"insufficient_scope\", scope=\"{scope}\""
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(values: &[&[u8]]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(
                header::AUTHORIZATION,
                HeaderValue::from_bytes(value).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn a_bearer_token_is_read_case_insensitively() {
        assert_eq!(
            bearer_token(&headers(&[b"Bearer ost_abc"])).unwrap(),
            "ost_abc"
        );
        assert_eq!(
            bearer_token(&headers(&[b"bearer  a.b-c~d+e/f=="])).unwrap(),
            "a.b-c~d+e/f=="
        );
    }

    #[test]
    fn missing_other_scheme_and_malformed_headers_are_401_with_a_challenge() {
        for (values, error) in [
            (&[][..], None),
            (&[&b"Basic dXNlcjpwYXNz"[..]][..], None),
            (&[&b"Bearer"[..]][..], Some("invalid_request")),
            (&[&b"Bearer "[..]][..], Some("invalid_request")),
            (&[&b"Bearer a b"[..]][..], Some("invalid_request")),
            (&[&b"Bearer \xff\xfe"[..]][..], Some("invalid_request")),
            (&[&b"Bearer ="[..]][..], Some("invalid_request")),
            (&[&b"Bearer a"[..], &b"Bearer b"[..]][..], None),
        ] {
            let problem = bearer_token(&headers(values)).unwrap_err();
            assert_eq!(problem.status, 401, "{values:?}");
            let challenge = problem.challenge().unwrap();
            assert!(challenge.starts_with("Bearer realm="), "{challenge}");
            assert_eq!(
                challenge.contains("error="),
                error.is_some(),
                "{values:?}: {challenge}"
            );
        }
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_CHARS + 1));
        assert!(bearer_token(&headers(&[long.as_bytes()])).is_err());
    }

    #[test]
    fn reads_need_orders_read_and_everything_else_under_v1_orders_write() {
        for (method, path, scope) in [
            (Method::GET, "/v1/orders", Some(Scope::OrdersRead)),
            (Method::HEAD, "/v1/orders/x", Some(Scope::OrdersRead)),
            (Method::POST, "/v1/orders", Some(Scope::OrdersWrite)),
            (Method::DELETE, "/v1/orders/x", Some(Scope::OrdersWrite)),
            (Method::GET, "/v1x", None),
            (Method::POST, "/other", None),
        ] {
            assert_eq!(required_scope(&method, path), scope, "{method} {path}");
        }
    }

    #[test]
    fn everything_under_dead_letters_needs_orders_admin() {
        for (method, path) in [
            (Method::GET, "/v1/dead-letters"),
            (Method::GET, "/v1/dead-letters/summary"),
            (Method::GET, "/v1/dead-letters/{id}"),
            (Method::POST, "/v1/dead-letters/replay"),
            (Method::POST, "/v1/dead-letters/x/discard"),
        ] {
            assert_eq!(
                required_scope(&method, path),
                Some(Scope::OrdersAdmin),
                "{method} {path}"
            );
        }
        assert_eq!(
            required_scope(&Method::GET, "/v1/dead-lettersx"),
            Some(Scope::OrdersRead)
        );
    }

    #[test]
    fn open_paths_match_whole_segments_only() {
        let open = OpenPaths::default();
        for path in [
            "/health",
            "/health/live",
            "/metrics",
            "/docs",
            "/docs/",
            "/docs/swagger-ui.css",
            "/docs/events",
            "/openapi.json",
            "/asyncapi.json",
        ] {
            assert!(open.contains(path), "{path}");
        }
        for path in [
            "/",
            "/healthz",
            "/metricsx",
            "/v1/orders",
            "/openapi.jsonx",
            "/asyncapi.json.bak",
            "/docs/../v1/orders",
            "/health/./x",
        ] {
            assert!(!open.contains(path), "{path}");
        }
        assert!(OpenPaths::new(["/"]).is_err());
        assert!(OpenPaths::new(["health"]).is_err());
        assert!(OpenPaths::new(["/status/"]).unwrap().contains("/status/x"));
    }
}
