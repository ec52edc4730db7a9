//! Health and metrics.

use axum::http::StatusCode;
use metrics_exporter_prometheus::PrometheusBuilder;
use order_service::app::App;
use order_service::health::Readiness;
use order_service::http::{self, ApiState};
use order_service::{store, telemetry};

use crate::helpers::{InProcess, TestApp, json_post};

#[tokio::test]
async fn liveness_and_readiness_answer_when_postgres_is_up() {
    let app = TestApp::spawn().await;

    assert_eq!(app.get("/health/live").await.status, StatusCode::OK);
    let ready = app.get("/health/ready").await;
    assert_eq!(ready.status, StatusCode::OK, "{}", ready.text);
}

/// The router over a database that cannot be reached: nothing listens on port 1, so the lazily
/// connecting pool never gets a connection.
fn without_database() -> InProcess {
    let options = store::connect_options(
        "postgres://postgres@127.0.0.1:1/none",
        order_service::config::DEFAULT_LOCK_TIMEOUT,
    )
    .unwrap();
    InProcess(http::router(ApiState {
        app: App::new(store::pool(options, 1)),
        metrics: telemetry::metrics(),
        readiness: Default::default(),
    }))
}

#[tokio::test]
async fn readiness_is_503_when_postgres_is_unreachable() {
    let app = without_database();

    let ready = app.get("/health/ready").await;
    ready.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(app.get("/health/live").await.status, StatusCode::OK);
    // A client's request is told to come back later, without internals.
    let order = app
        .get(&format!("/v1/orders/{}", uuid::Uuid::new_v4()))
        .await;
    order.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert!(!order.text.contains("127.0.0.1"), "{}", order.text);
}

#[tokio::test]
async fn a_database_that_refuses_writes_is_503_not_500() {
    // A demoted primary still reachable read-only answers writes with SQLSTATE 25006: an outage
    // to wait out (docs/operations/scaling.md), not a fault of the request.
    let app = TestApp::spawn().await;
    let options = store::connect_options(&app.db.url, order_service::config::DEFAULT_LOCK_TIMEOUT)
        .unwrap()
        .options([("default_transaction_read_only", "on")]);
    let read_only = InProcess(http::router(ApiState {
        app: App::new(store::pool(options, 1)),
        metrics: telemetry::metrics(),
        readiness: Default::default(),
    }));

    let body = r#"{"customer_id":"c-1","amount_minor":100,"currency":"EUR"}"#;
    let refused = read_only.request(json_post("/v1/orders", body)).await;

    refused.problem(StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        refused.header("retry-after").is_some(),
        "{:?}",
        refused.headers
    );
    assert!(!refused.text.contains("read-only"), "{}", refused.text);
    assert_eq!(app.count("orders").await, 0);
}

#[tokio::test]
async fn readiness_is_503_while_the_broker_is_disconnected() {
    let app = TestApp::spawn().await;
    let readiness = Readiness::default();
    let consumer = readiness.register("consumer");
    let router = http::router(ApiState {
        app: App::new(app.pool.clone()),
        metrics: telemetry::metrics(),
        readiness,
    });
    let with_broker = InProcess(router);

    with_broker
        .get("/health/ready")
        .await
        .problem(StatusCode::SERVICE_UNAVAILABLE);
    consumer.set(true);
    assert_eq!(
        with_broker.get("/health/ready").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn each_scrape_exports_whether_the_database_answers() {
    // A recorder of this test's own (the test runs on one thread, and so do the requests it
    // drives in-process): the tests running beside it cannot change what it reads.
    let recorder = PrometheusBuilder::new().build_recorder();
    let gauges = recorder.handle();
    let _local = metrics::set_default_local_recorder(&recorder);
    let database = "ready{component=\"database\"}";

    TestApp::spawn().await.get("/metrics").await;
    assert!(gauges.render().contains(&format!("{database} 1")));

    without_database().get("/metrics").await;
    assert!(gauges.render().contains(&format!("{database} 0")));
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let app = TestApp::spawn().await;
    app.placed_order(100).await;

    let metrics = app.get("/metrics").await;

    assert_eq!(metrics.status, StatusCode::OK);
    assert!(
        metrics
            .text
            .lines()
            .any(|l| l.starts_with("http_requests_total")
                && l.contains("route=\"/v1/orders\"")
                && l.contains("status=\"201\"")),
        "{}",
        metrics.text
    );
    assert!(metrics.text.contains("order_changes_total"));
}

#[tokio::test]
async fn instances_starting_at_once_create_and_migrate_the_database_once() {
    // Found by the chaos checker: three instances racing on CREATE DATABASE made two fail.
    let name = format!("order_service_test_{}", uuid::Uuid::new_v4().simple());
    let url = format!("postgres://postgres@127.0.0.1:5432/{name}");
    let options =
        store::connect_options(&url, order_service::config::DEFAULT_LOCK_TIMEOUT).unwrap();

    let results =
        futures::future::join_all((0..4).map(|_| store::prepare_database(&options))).await;

    let admin = sqlx::PgPool::connect(order_service_testkit::ADMIN_URL)
        .await
        .unwrap();
    let drop = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
    sqlx::query(sqlx::AssertSqlSafe(drop))
        .execute(&admin)
        .await
        .unwrap();
    for result in results {
        assert!(result.is_ok(), "{result:?}");
    }
}

#[tokio::test]
async fn a_request_with_a_long_custom_method_leaves_metrics_without_it() {
    let app = TestApp::spawn().await;
    let method = format!("X{}", "Y".repeat(10_000));
    let request = axum::http::Request::builder()
        .method(method.as_str())
        .uri("/health/live")
        .body(axum::body::Body::empty())
        .unwrap();

    let response = app.request(request).await;

    assert_eq!(response.status, StatusCode::METHOD_NOT_ALLOWED);
    let metrics = app.get("/metrics").await;
    assert!(!metrics.text.contains("YYYYYYYY"), "the method is a label");
    assert!(
        metrics
            .text
            .lines()
            .any(|l| l.starts_with("http_requests_total")
                && l.contains("method=\"other\"")
                && l.contains("status=\"405\"")),
        "{}",
        metrics.text
    );
}
