//! The AsyncAPI document (`/asyncapi.json`, `openapi/asyncapi.json`, `order-service asyncapi`)
//! and its page, `/docs/events`, served offline under the documentation's headers.

use axum::http::StatusCode;
use serde_json::Value;

use order_service::amqp::asyncapi;

use crate::helpers::{TestApp, TestResponse};

const COMMITTED: &str = include_str!("../../openapi/asyncapi.json");

#[test]
fn the_committed_asyncapi_document_matches_the_code() {
    assert!(
        COMMITTED.trim_end() == asyncapi::to_pretty_json().trim_end(),
        "openapi/asyncapi.json is stale: regenerate it with \
         `cargo run -- asyncapi > openapi/asyncapi.json`"
    );
}

#[test]
fn the_asyncapi_subcommand_prints_the_committed_document() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_order-service"))
        .arg("asyncapi")
        .env_clear()
        .output()
        .expect("run order-service asyncapi");

    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim_end(),
        COMMITTED.trim_end()
    );
}

#[tokio::test]
async fn the_document_is_served_as_asyncapi_3_0() {
    let app = TestApp::spawn().await;

    let response = app.get("/asyncapi.json").await;

    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.body["asyncapi"], "3.0.0");
    let committed: Value = serde_json::from_str(COMMITTED).unwrap();
    assert!(
        response.body == committed,
        "another document than openapi/asyncapi.json"
    );
}

#[tokio::test]
async fn the_events_page_and_its_assets_are_served_locally() {
    let app = TestApp::spawn().await;

    let page = app.get("/docs/events").await;

    assert_eq!(page.status, StatusCode::OK, "{}", page.text);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    for (asset, content_type, marker) in [
        (
            "asyncapi.js",
            "text/javascript; charset=utf-8",
            "AsyncApiStandalone",
        ),
        ("asyncapi.css", "text/css; charset=utf-8", "{"),
        (
            "events.js",
            "text/javascript; charset=utf-8",
            "../asyncapi.json",
        ),
    ] {
        assert!(
            page.text.contains(&format!("\"events/{asset}\"")),
            "{asset}"
        );
        let response = app.get(&format!("/docs/events/{asset}")).await;
        assert_eq!(response.status, StatusCode::OK, "{asset}");
        assert_eq!(
            response.header("content-type"),
            Some(content_type),
            "{asset}"
        );
        assert!(response.text.contains(marker), "{asset}");
        assert_page_headers(&response);
    }
    // The Swagger UI keeps the rest of /docs.
    let swagger = app.get("/docs/").await;
    assert!(swagger.text.contains("swagger-ui"), "{}", swagger.text);
}

#[tokio::test]
async fn the_events_page_with_a_trailing_slash_is_redirected_to_the_page() {
    let app = TestApp::spawn().await;

    let response = app.get("/docs/events/").await;

    assert_eq!(response.status, StatusCode::PERMANENT_REDIRECT);
    // Relative, so the page works behind a path prefix too: /docs/events/ + ../events.
    assert_eq!(response.header("location"), Some("../events"));
}

#[tokio::test]
async fn an_unknown_events_page_asset_is_a_problem_json_404() {
    let app = TestApp::spawn().await;

    let response = app.get("/docs/events/no-such-asset.js").await;

    response.problem(StatusCode::NOT_FOUND);
    assert_page_headers(&response);
}

#[tokio::test]
async fn the_events_page_may_not_be_framed_and_runs_only_its_own_scripts() {
    let app = TestApp::spawn().await;

    let page = app.get("/docs/events").await;

    assert_page_headers(&page);
    assert!(
        !page.text.contains("<script>"),
        "an inline script: {}",
        page.text
    );
    for source in page
        .text
        .split(['"', '\''])
        .filter(|s| s.ends_with(".js") || s.ends_with(".css") || s.ends_with(".json"))
    {
        assert!(
            !source.contains(':') && !source.starts_with('/'),
            "{source}"
        );
    }
}

/// The documentation's headers, with the one addition the renderer needs ('unsafe-eval': its
/// bundled parser compiles JSON Schemas into functions).
#[track_caller]
fn assert_page_headers(response: &TestResponse) {
    assert_eq!(response.header("x-frame-options"), Some("DENY"));
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(response.csp_directive("default-src"), "'none'");
    assert_eq!(response.csp_directive("script-src"), "'self' 'unsafe-eval'");
    assert_eq!(response.csp_directive("connect-src"), "'self'");
    assert_eq!(response.csp_directive("frame-ancestors"), "'none'");
}
