//! Authentication: every `/v1` operation needs a configured client's bearer token holding the
//! operation's scope; health, metrics and docs stay open; and each client's Idempotency-Keys are
//! its own.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use order_service::auth::{TokenDigest, generate_token};
use order_service::http;

use crate::helpers::{TestApp, TestResponse, order_body, payment_body, shipment_body};

/// Tokens of the three clients of [`secured`].
struct Tokens {
    /// `shop`: orders:read and orders:write.
    shop: String,
    /// `billing`: orders:read and orders:write.
    billing: String,
    /// `reports`: orders:read only.
    reports: String,
    /// `importer`: orders:write only.
    importer: String,
}

/// A test app whose router enforces authentication for four configured clients.
async fn secured() -> (TestApp, Tokens) {
    let tokens = Tokens {
        shop: generate_token().unwrap(),
        billing: generate_token().unwrap(),
        reports: generate_token().unwrap(),
        importer: generate_token().unwrap(),
    };
    let app = TestApp::spawn_with_clients(&[
        ("shop", &tokens.shop, "orders:read,orders:write"),
        ("billing", &tokens.billing, "orders:read,orders:write"),
        ("reports", &tokens.reports, "orders:read"),
        ("importer", &tokens.importer, "orders:write"),
    ])
    .await;
    (app, tokens)
}

/// One operation of the API, ready to send with any `Authorization` header.
#[derive(Clone)]
struct Operation {
    method: Method,
    path: String,
    body: Option<Value>,
}

impl Operation {
    fn get(path: String) -> Self {
        Self {
            method: Method::GET,
            path,
            body: None,
        }
    }

    fn post(path: String, body: Value) -> Self {
        Self {
            method: Method::POST,
            path,
            body: Some(body),
        }
    }

    fn request(&self, authorization: Option<&[u8]>) -> Request<Body> {
        let mut builder = Request::builder()
            .method(self.method.clone())
            .uri(&self.path);
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        match &self.body {
            Some(body) => builder
                .header("content-type", "application/json")
                .header("idempotency-key", Uuid::new_v4().to_string())
                .body(Body::from(body.to_string())),
            None => builder.body(Body::empty()),
        }
        .unwrap()
    }
}

/// Every operation under `/v1`, on `order` (reads first, then writes).
fn operations(order: Uuid) -> Vec<Operation> {
    vec![
        Operation::get("/v1/orders".into()),
        Operation::get(format!("/v1/orders/{order}")),
        Operation::get(format!("/v1/orders/{order}/payments")),
        Operation::get(format!("/v1/orders/{order}/history")),
        Operation::post("/v1/orders".into(), order_body("c-1", 100, "EUR")),
        Operation::post(
            format!("/v1/orders/{order}/payments"),
            payment_body(&Uuid::new_v4().to_string(), 10, "EUR"),
        ),
        Operation::post(
            format!("/v1/orders/{order}/ship"),
            shipment_body("DHL", "T-1"),
        ),
        Operation::post(
            format!("/v1/orders/{order}/cancel"),
            json!({"reason": "changed my mind"}),
        ),
    ]
}

fn bearer(token: &str) -> Vec<u8> {
    format!("Bearer {token}").into_bytes()
}

/// Places an order as `token`'s client and returns its id.
async fn place_as(app: &TestApp, token: &str) -> Uuid {
    let response = app
        .post_with(
            "/v1/orders",
            Some(&Uuid::new_v4().to_string()),
            &[("authorization", &format!("Bearer {token}"))],
            &order_body("c-1", 100, "EUR"),
        )
        .await;
    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    response.body["id"].as_str().unwrap().parse().unwrap()
}

#[track_caller]
fn assert_challenge(response: &TestResponse, status: StatusCode, error: Option<&str>) {
    response.problem(status);
    let challenge = response
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("no WWW-Authenticate on {status}: {}", response.text));
    assert!(challenge.starts_with("Bearer realm="), "{challenge}");
    match error {
        Some(error) => assert!(
            challenge.contains(&format!("error=\"{error}\"")),
            "{challenge}"
        ),
        None => assert!(!challenge.contains("error="), "{challenge}"),
    }
}

#[tokio::test]
async fn every_v1_operation_without_a_valid_token_is_401_with_a_bearer_challenge() {
    let (app, tokens) = secured().await;
    let order = place_as(&app, &tokens.shop).await;
    let before = app.snapshot().await;
    let basic = b"Basic c2hvcDpzZWNyZXQ=".to_vec();
    let unknown = bearer(&generate_token().unwrap());
    // The stored hash is not a token.
    let hash = bearer(&TokenDigest::of(&tokens.shop).to_hex());
    let oversize = bearer(&"a".repeat(4096));
    let cases: [(Option<&[u8]>, Option<&str>); 8] = [
        (None, None),
        (Some(&basic), None),
        (Some(&unknown), Some("invalid_token")),
        (Some(&hash), Some("invalid_token")),
        (Some(b"Bearer"), Some("invalid_request")),
        (Some(b"Bearer two words"), Some("invalid_request")),
        (Some(b"Bearer \xc3\xa9t\xc3\xa9"), Some("invalid_request")),
        (Some(&oversize), Some("invalid_request")),
    ];

    for operation in operations(order) {
        for (authorization, error) in &cases {
            let response = app.request(operation.request(*authorization)).await;
            let what = format!(
                "{} {} with {:?}",
                operation.method,
                operation.path,
                authorization.map(String::from_utf8_lossy)
            );
            assert_eq!(
                response.status,
                StatusCode::UNAUTHORIZED,
                "{what}: {}",
                response.text
            );
            assert_challenge(&response, StatusCode::UNAUTHORIZED, *error);
            assert!(
                !response.text.contains(&tokens.shop),
                "{what} leaked a token"
            );
        }
    }
    assert_eq!(
        app.snapshot().await,
        before,
        "a refused request changed nothing"
    );
}

#[tokio::test]
async fn a_read_only_client_reads_but_every_post_is_403_insufficient_scope() {
    let (app, tokens) = secured().await;
    let order = place_as(&app, &tokens.shop).await;
    let before = app.snapshot().await;

    for operation in operations(order) {
        let response = app
            .request(operation.request(Some(&bearer(&tokens.reports))))
            .await;
        if operation.method == Method::GET {
            assert_eq!(
                response.status,
                StatusCode::OK,
                "{} {}",
                operation.method,
                operation.path
            );
        } else {
            assert_challenge(&response, StatusCode::FORBIDDEN, Some("insufficient_scope"));
            assert!(
                response
                    .header("www-authenticate")
                    .unwrap()
                    .contains("scope=\"orders:write\"")
            );
            assert!(
                response.body["detail"]
                    .as_str()
                    .unwrap()
                    .contains("orders:write")
            );
        }
    }
    assert_eq!(app.snapshot().await, before);
}

#[tokio::test]
async fn a_write_only_client_changes_orders_but_every_get_is_403() {
    let (app, tokens) = secured().await;
    let order = place_as(&app, &tokens.importer).await;

    for operation in operations(order) {
        let response = app
            .request(operation.request(Some(&bearer(&tokens.importer))))
            .await;
        if operation.method == Method::GET {
            assert_challenge(&response, StatusCode::FORBIDDEN, Some("insufficient_scope"));
            assert!(
                response
                    .header("www-authenticate")
                    .unwrap()
                    .contains("orders:read")
            );
        } else {
            assert_ne!(
                response.status,
                StatusCode::UNAUTHORIZED,
                "{}",
                response.text
            );
            assert_ne!(response.status, StatusCode::FORBIDDEN, "{}", response.text);
        }
    }
}

#[tokio::test]
async fn the_scheme_is_case_insensitive_and_a_valid_token_reaches_the_api() {
    let (app, tokens) = secured().await;
    let order = place_as(&app, &tokens.shop).await;

    for authorization in [
        format!("Bearer {}", tokens.shop),
        format!("bearer {}", tokens.shop),
        format!("BEARER  {}", tokens.shop),
    ] {
        let response = app
            .request(
                Request::get(format!("/v1/orders/{order}"))
                    .header("authorization", &authorization)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(
            response.status,
            StatusCode::OK,
            "{authorization}: {}",
            response.text
        );
    }
}

#[tokio::test]
async fn two_clients_using_one_idempotency_key_make_two_independent_orders() {
    let (app, tokens) = secured().await;
    let key = "shared-key-1";
    let shop_body = order_body("shop-customer", 1000, "EUR");
    let billing_body = order_body("billing-customer", 2500, "USD");
    let as_client = |token: &str| format!("Bearer {token}");

    let shop = app
        .post_with(
            "/v1/orders",
            Some(key),
            &[("authorization", &as_client(&tokens.shop))],
            &shop_body,
        )
        .await;
    let billing = app
        .post_with(
            "/v1/orders",
            Some(key),
            &[("authorization", &as_client(&tokens.billing))],
            &billing_body,
        )
        .await;

    // Two 201s, neither a replay, neither 422 for "another body under this key".
    for response in [&shop, &billing] {
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        assert!(!response.is_replay(), "{}", response.text);
    }
    assert_ne!(shop.body["id"], billing.body["id"]);
    assert_eq!(billing.body["customer_id"], "billing-customer");
    assert_eq!(billing.body["currency"], "USD");

    // Each client's retry replays its own order, never the other's.
    let shop_again = app
        .post_with(
            "/v1/orders",
            Some(key),
            &[("authorization", &as_client(&tokens.shop))],
            &shop_body,
        )
        .await;
    assert_eq!(shop_again.status, StatusCode::CREATED);
    assert!(shop_again.is_replay());
    assert_eq!(shop_again.body["id"], shop.body["id"]);
    // The other client sending shop's exact request under the same key is judged against its
    // own earlier use of the key (another body: 422), never answered with shop's order.
    let billing_copy = app
        .post_with(
            "/v1/orders",
            Some(key),
            &[("authorization", &as_client(&tokens.billing))],
            &shop_body,
        )
        .await;
    assert_eq!(
        billing_copy.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        billing_copy.text
    );
    assert_eq!(app.count("orders").await, 2);

    // The history records who caused each change (each client reads its own keys).
    for (response, client, token) in [
        (&shop, "shop", &tokens.shop),
        (&billing, "billing", &tokens.billing),
    ] {
        let id: Uuid = response.body["id"].as_str().unwrap().parse().unwrap();
        let history = app
            .request(
                Request::get(format!("/v1/orders/{id}/history"))
                    .header("authorization", as_client(token))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        let cause = &history.body["items"][0]["cause"];
        assert_eq!(cause["client_id"], client, "{}", history.text);
        assert_eq!(cause["idempotency_key"], key);
    }
    let mut stored: Vec<(String, String)> = sqlx::query_as(
        "SELECT client_id, idempotency_key FROM order_transitions ORDER BY client_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    stored.dedup();
    assert_eq!(
        stored,
        [
            ("billing".to_owned(), key.to_owned()),
            ("shop".to_owned(), key.to_owned())
        ]
    );
}

#[tokio::test]
async fn two_clients_using_one_key_on_one_order_record_two_payments() {
    let (app, tokens) = secured().await;
    let order = place_as(&app, &tokens.shop).await;
    let key = "pay-1";

    let mut transfers = vec![];
    for (token, transfer) in [(&tokens.shop, "t-shop"), (&tokens.billing, "t-billing")] {
        let response = app
            .post_with(
                &format!("/v1/orders/{order}/payments"),
                Some(key),
                &[("authorization", &format!("Bearer {token}"))],
                &payment_body(transfer, 40, "EUR"),
            )
            .await;
        assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
        assert!(!response.is_replay());
        transfers.push(response.body["transfer"]["transfer_id"].clone());
    }
    assert_eq!(transfers, [json!("t-shop"), json!("t-billing")]);
    assert_eq!(app.row(order).await.paid_minor, 80);
}

#[tokio::test]
async fn health_metrics_and_docs_stay_open_while_anything_else_needs_a_token() {
    let (app, _) = secured().await;

    for path in [
        "/health/live",
        "/health/ready",
        "/metrics",
        "/openapi.json",
        "/docs/",
        "/asyncapi.json",
        "/docs/events",
        "/console",
        "/console/orders/0193a5b0-7c1e-7d2a-9f4e-3b8c2d1e0f5a",
        "/console/assets/console.js",
        "/console/assets/favicon.svg",
        "/favicon.ico",
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status, StatusCode::OK, "{path}: {}", response.text);
    }
    // Unknown paths fail closed: no token, no information about what exists.
    for path in [
        "/v1",
        "/v1/nothing",
        "/admin",
        "/healthz",
        "/docs/../v1/orders",
    ] {
        let response = app.get(path).await;
        assert_challenge(&response, StatusCode::UNAUTHORIZED, None);
    }
}

#[tokio::test]
async fn without_configured_clients_every_caller_is_anonymous() {
    let app = TestApp::spawn().await;

    let response = app
        .post_with(
            "/v1/orders",
            Some("k-1"),
            // Ignored when the API runs open.
            &[("authorization", "Bearer whatever")],
            &order_body("c-1", 100, "EUR"),
        )
        .await;

    assert_eq!(response.status, StatusCode::CREATED, "{}", response.text);
    let id: Uuid = response.body["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(app.history(id).await[0]["cause"]["client_id"], "anonymous");
}

#[tokio::test]
async fn the_document_declares_the_bearer_scheme_and_the_scope_of_each_operation() {
    let document: Value = serde_json::from_str(&http::openapi_json()).unwrap();

    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["type"],
        "http"
    );
    assert_eq!(
        document["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    for (path, methods) in document["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let security = &operation["security"];
            if path == "/v1/me" {
                // A token, whatever its scopes.
                assert_eq!(*security, json!([{ "bearer": [] }]), "{method} {path}");
                assert!(operation["responses"]["401"].is_object());
                assert!(operation["responses"]["403"].is_null());
            } else if path.starts_with("/v1") {
                let scope = if path.starts_with("/v1/dead-letters") {
                    "orders:admin"
                } else if method == "get" {
                    "orders:read"
                } else {
                    "orders:write"
                };
                assert_eq!(*security, json!([{ "bearer": [scope] }]), "{method} {path}");
                for status in ["401", "403", "503"] {
                    assert!(
                        operation["responses"][status].is_object(),
                        "{method} {path} does not document {status}"
                    );
                }
            } else {
                assert!(security.is_null(), "{method} {path} should be open");
            }
        }
    }
}

#[tokio::test]
async fn an_api_without_clients_on_a_public_address_refuses_to_start() {
    use clap::Parser;
    use order_service::config::Config;
    use order_service::startup::Service;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: Config,
    }

    let shutdown = tokio_util::sync::CancellationToken::new();
    let config = Cli::parse_from([
        "order-service",
        "--http-addr",
        "0.0.0.0:0",
        "--database-url",
        "postgres://postgres@127.0.0.1:1/never-reached",
    ])
    .config;
    let error = Service::build(config, &shutdown)
        .await
        .err()
        .expect("start-up must be refused");
    let message = format!("{error:#}");
    assert!(
        message.contains("0.0.0.0:0") && message.contains("AUTH_DISABLED=true"),
        "{message}"
    );

    // Explicitly disabled, it gets as far as the (here unreachable) database.
    let config = Cli::parse_from([
        "order-service",
        "--http-addr",
        "0.0.0.0:0",
        "--auth-disabled",
        "true",
        "--database-url",
        "not a url",
    ])
    .config;
    let error = Service::build(config, &shutdown).await.err().unwrap();
    assert!(format!("{error:#}").contains("DATABASE_URL"), "{error:#}");
}

#[tokio::test]
async fn a_client_sees_its_own_idempotency_keys_in_the_history_and_not_anothers() {
    let (app, tokens) = secured().await;
    let order = app
        .post_with(
            "/v1/orders",
            Some("shop-secret-key"),
            &[("authorization", &format!("Bearer {}", tokens.shop))],
            &order_body("c-1", 100, "EUR"),
        )
        .await;
    assert_eq!(order.status, StatusCode::CREATED, "{}", order.text);
    let order = order.body["id"].as_str().unwrap();
    let history_as = |token: String| {
        Operation::get(format!("/v1/orders/{order}/history")).request(Some(&bearer(&token)))
    };

    let as_shop = app.request(history_as(tokens.shop.clone())).await;
    let as_reports = app.request(history_as(tokens.reports.clone())).await;

    assert_eq!(as_shop.status, StatusCode::OK, "{}", as_shop.text);
    assert_eq!(
        as_shop.body["items"][0]["cause"]["idempotency_key"],
        "shop-secret-key"
    );
    assert_eq!(as_reports.status, StatusCode::OK, "{}", as_reports.text);
    let cause = &as_reports.body["items"][0]["cause"];
    assert!(cause["idempotency_key"].is_null(), "{cause}");
    assert_eq!(
        cause["client_id"], "shop",
        "who made the change stays visible"
    );
    assert!(!as_reports.text.contains("shop-secret-key"));
}

#[tokio::test]
async fn v1_me_names_the_caller_and_its_scopes_and_needs_a_token() {
    let (app, tokens) = secured().await;
    let me = Operation::get("/v1/me".into());

    let anonymous = app.request(me.request(None)).await;
    assert_challenge(&anonymous, StatusCode::UNAUTHORIZED, None);
    let reports = app
        .request(me.request(Some(&bearer(&tokens.reports))))
        .await;
    assert_eq!(reports.status, StatusCode::OK, "{}", reports.text);
    assert_eq!(
        reports.body,
        json!({"client_id": "reports", "scopes": ["orders:read"]})
    );
    // Any client may ask, whatever its scopes.
    let importer = app
        .request(me.request(Some(&bearer(&tokens.importer))))
        .await;
    assert_eq!(
        importer.body,
        json!({"client_id": "importer", "scopes": ["orders:write"]})
    );

    let open = TestApp::spawn().await.get("/v1/me").await;
    assert_eq!(
        open.body,
        json!({"client_id": "anonymous", "scopes": ["orders:read", "orders:write", "orders:admin"]})
    );
}
