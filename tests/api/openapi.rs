//! The OpenAPI document and the Swagger UI that renders it, offline.

use axum::http::StatusCode;

use crate::helpers::TestApp;

#[test]
fn the_committed_openapi_document_matches_the_code() {
    let committed = include_str!("../../openapi/openapi.json");
    let generated = order_service::http::openapi_json();
    assert!(
        committed.trim_end() == generated.trim_end(),
        "openapi/openapi.json is stale: regenerate it with \
         `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[tokio::test]
async fn the_document_is_served_as_openapi_3_1_with_every_endpoint() {
    let app = TestApp::spawn().await;

    let response = app.get("/openapi.json").await;

    assert_eq!(response.status, StatusCode::OK);
    assert_eq!(response.body["openapi"], "3.1.0");
    let paths = response.body["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/v1/orders", &["get", "post"][..]),
        ("/v1/orders/{id}", &["get"]),
        ("/v1/orders/{id}/payments", &["get", "post"]),
        ("/v1/orders/{id}/ship", &["post"]),
        ("/v1/orders/{id}/cancel", &["post"]),
        ("/v1/orders/{id}/history", &["get"]),
        ("/health/live", &["get"]),
        ("/health/ready", &["get"]),
        ("/metrics", &["get"]),
    ] {
        for method in methods {
            let operation = &paths[path][method];
            assert!(operation.is_object(), "{method} {path} is not documented");
            for (status, response) in operation["responses"].as_object().unwrap() {
                assert!(
                    response["description"]
                        .as_str()
                        .is_some_and(|d| !d.is_empty()),
                    "{method} {path} {status} has no description"
                );
            }
        }
    }
}

#[tokio::test]
async fn swagger_ui_and_its_assets_are_served_locally() {
    let app = TestApp::spawn().await;

    let page = app.get("/docs/").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.text.contains("swagger-ui"), "{}", page.text);

    for asset in [
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "swagger-initializer.js",
    ] {
        let response = app.get(&format!("/docs/{asset}")).await;
        assert_eq!(response.status, StatusCode::OK, "{asset}");
        assert!(response.text.len() > 100, "{asset} is empty");
    }
    let initializer = app.get("/docs/swagger-initializer.js").await;
    assert!(initializer.text.contains("/openapi.json"));
}

#[tokio::test]
async fn an_unknown_docs_page_is_a_problem_json_404() {
    let app = TestApp::spawn().await;

    let response = app.get("/docs/no-such-asset.js").await;

    response.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_docs_page_may_not_be_framed_and_runs_only_its_own_scripts() {
    let app = TestApp::spawn().await;

    let page = app.get("/docs/").await;

    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.csp_directive("script-src"), "'self'");
    assert_eq!(page.csp_directive("frame-ancestors"), "'none'");
    assert!(page.csp_directive("style-src").starts_with("'self'"));
    assert_eq!(page.csp_directive("default-src"), "'none'");
    // Everything the page loads comes from this origin (the policy allows nothing else), and
    // it has no inline script the policy would block.
    for source in page
        .text
        .split(['"', '\''])
        .filter(|s| s.ends_with(".js") || s.ends_with(".css"))
    {
        assert!(
            source.starts_with("./") || !source.contains(':'),
            "{source}"
        );
    }
    assert!(
        !page.text.contains("<script>"),
        "an inline script: {}",
        page.text
    );
}
