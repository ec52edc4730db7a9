//! A response as a test reads it: status, headers, the body as JSON and as text, and the checks
//! every test makes of a problem document.

use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

pub struct TestResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl TestResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The value of one directive of the Content-Security-Policy header.
    #[track_caller]
    pub fn csp_directive(&self, name: &str) -> String {
        let policy = self
            .header("content-security-policy")
            .expect("a Content-Security-Policy");
        policy
            .split(';')
            .map(str::trim)
            .find_map(|d| d.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {policy}"))
            .trim()
            .to_owned()
    }

    pub fn is_replay(&self) -> bool {
        self.header("idempotent-replayed") == Some("true")
    }

    /// Asserts the response is a problem+json document with this status, and returns it.
    #[track_caller]
    pub fn problem(&self, status: StatusCode) -> &Value {
        assert_eq!(self.status, status, "body: {}", self.text);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "body: {}",
            self.text
        );
        assert_eq!(self.body["status"], status.as_u16());
        assert!(self.body["type"].is_string() && self.body["title"].is_string());
        assert!(self.body["detail"].is_string());
        &self.body
    }
}
