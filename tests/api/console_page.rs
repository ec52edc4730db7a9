//! `/console` as served (docs/operations/console.md): one static page for every view under it,
//! its script, stylesheet and icon (also the service's `/favicon.ico`), all under a policy with
//! no inline script, no eval and nothing from another origin, and no data in any of them. The
//! console in a browser is `tests/console`.

use axum::http::StatusCode;

use order_service::http::CONSOLE_CONTENT_SECURITY_POLICY;

use crate::helpers::TestApp;

#[tokio::test]
async fn every_console_view_is_the_same_static_page_under_a_strict_policy() {
    let app = TestApp::spawn().await;
    let page = app.get("/console").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.text.contains("/console/assets/console.js"),
        "{}",
        page.text
    );
    for path in [
        "/console/dead-letters",
        "/console/dead-letters/0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5a",
        "/console/orders/0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5a",
    ] {
        let view = app.get(path).await;
        assert_eq!(view.status, StatusCode::OK, "{path}");
        assert_eq!(view.text, page.text, "{path} is the same page");
    }
    for (path, content_type) in [
        ("/console", "text/html; charset=utf-8"),
        (
            "/console/assets/console.js",
            "text/javascript; charset=utf-8",
        ),
        ("/console/assets/console.css", "text/css; charset=utf-8"),
        // The icon, which the page names and every browser asks for (no failed request).
        ("/console/assets/favicon.svg", "image/svg+xml"),
        ("/favicon.ico", "image/svg+xml"),
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status, StatusCode::OK, "{path}");
        assert_eq!(
            response.header("content-type"),
            Some(content_type),
            "{path}"
        );
        assert_eq!(
            response.header("content-security-policy"),
            Some(CONSOLE_CONTENT_SECURITY_POLICY),
            "{path}"
        );
        assert_eq!(response.header("x-frame-options"), Some("DENY"), "{path}");
    }
    for directive in [
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
    ] {
        assert!(
            CONSOLE_CONTENT_SECURITY_POLICY.contains(directive),
            "{directive}"
        );
    }
    assert!(!CONSOLE_CONTENT_SECURITY_POLICY.contains("unsafe"));
    assert_eq!(
        app.get("/console/assets/other.js").await.status,
        StatusCode::NOT_FOUND
    );
    assert!(
        page.text
            .contains(r#"<link rel="icon" href="/console/assets/favicon.svg""#),
        "{}",
        page.text
    );
    let icon = app.get("/favicon.ico").await;
    assert!(icon.text.starts_with("<svg"), "{}", icon.text);
}

#[test]
fn the_script_never_parses_text_as_html() {
    let script = include_str!("../../assets/console/console.js");
    for sink in [
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "Function(",
        "srcdoc",
        "javascript:",
        "document.write",
        "eval(",
    ] {
        assert!(!script.contains(sink), "console.js uses {sink}");
    }
}
