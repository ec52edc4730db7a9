//! The other door to the same application: requests to the REST API, in-process and open, on
//! the harness's database.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use order_service::health::Readiness;

use super::Harness;

impl Harness {
    /// POSTs `body` to `path` of the REST API (in-process, open, on this harness's database)
    /// with `key` as its Idempotency-Key: the other door to the same application.
    pub async fn post_over_rest(&self, path: &str, key: &str, body: Value) -> StatusCode {
        self.post_over_rest_with(path, key, body, &[]).await
    }

    /// [`Harness::post_over_rest`] with more request headers.
    pub async fn post_over_rest_with(
        &self,
        path: &str,
        key: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> StatusCode {
        self.rest(post_request(path, key, body, headers)).await.0
    }

    /// [`Harness::post_over_rest`], with the answer's body.
    pub async fn rest_post(&self, path: &str, key: &str, body: Value) -> (StatusCode, Value) {
        self.rest(post_request(path, key, body, &[])).await
    }

    /// GETs `path` of the REST API (in-process, open, on this harness's database).
    pub async fn rest_get(&self, path: &str) -> (StatusCode, Value) {
        self.rest(Request::get(path).body(Body::empty()).expect("a request"))
            .await
    }

    async fn rest(&self, request: Request<Body>) -> (StatusCode, Value) {
        let router = order_service::http::router(order_service::http::ApiState {
            app: self.app.clone(),
            metrics: order_service::telemetry::metrics(),
            readiness: Readiness::default(),
        });
        let response = router.oneshot(request).await.expect("a response");
        let status = response.status();
        let bytes = http_body_util::BodyExt::collect(response.into_body())
            .await
            .expect("a body")
            .to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }
}

/// A JSON POST with `key` as its Idempotency-Key and more `headers`.
fn post_request(path: &str, key: &str, body: Value, headers: &[(&str, &str)]) -> Request<Body> {
    let mut request = Request::post(path)
        .header("content-type", "application/json")
        .header("idempotency-key", key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(Body::from(body.to_string()))
        .expect("a request")
}
