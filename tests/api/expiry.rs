//! Payment expiry: an order still waiting for its payment after the timeout is cancelled by the
//! timer with reason `payment_timeout`, through the same guarded cancel as a client's; paid and
//! shipped orders are never touched, and a payment racing the timer either wins or is recorded on
//! the cancelled order as money to give back.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::Value;
use sqlx::Connection;
use uuid::Uuid;

use clap::Parser;
use order_service::app::{App, Sweep};
use order_service::config::Config;
use order_service::startup::Service;
use order_service::telemetry::TraceContext;
use tokio_util::sync::CancellationToken;

use order_service_testkit::eventually;
use order_service_testkit::proxy::Proxy;

use crate::helpers::{MoneyRow, TestApp, payment_body, unique_key};

const LIMIT: u32 = 100;

fn app_of(test: &TestApp) -> App {
    App::new(test.pool.clone())
}

/// Asserts the order was cancelled by the timer: reason `payment_timeout`, the last history row a
/// `cancelled` one with cause `timer` (no client, key or event).
async fn assert_expired_by_the_timer(app: &TestApp, order: Uuid) -> Vec<Value> {
    let view = app.order(order).await;
    assert_eq!(view.body["status"], "CANCELLED", "{}", view.text);
    assert_eq!(view.body["cancellation_reason"], "payment_timeout");
    let history = app.checked_history(order).await;
    let cancelled: Vec<_> = history
        .iter()
        .filter(|e| e["kind"] == "cancelled")
        .collect();
    assert_eq!(cancelled.len(), 1, "{history:#?}");
    let cause = &cancelled[0]["cause"];
    assert_eq!(cause["source"], "timer", "{history:#?}");
    assert!(cause["client_id"].is_null() && cause["idempotency_key"].is_null());
    assert!(cause["event_id"].is_null());
    let (source,): (String,) = sqlx::query_as(
        "SELECT cause_source FROM order_transitions WHERE order_id = $1 AND kind = 'cancelled'",
    )
    .bind(order)
    .fetch_one(&app.pool)
    .await
    .expect("read the cancellation");
    assert_eq!(source, "timer");
    history
}

#[tokio::test]
async fn an_unpaid_order_past_the_timeout_is_cancelled_by_the_timer_for_payment_timeout() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;

    let sweep = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!(
        sweep,
        Sweep {
            expired: 1,
            settled_meanwhile: 0,
            busy: 0,
            full: false
        }
    );
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("CANCELLED", 2));
    assert!(!row.refund_required, "nothing was paid");
    let history = assert_expired_by_the_timer(&app, order).await;
    assert_eq!(history[1]["from"], "PENDING_PAYMENT");
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled"]
    );

    let again = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("sweep");
    assert_eq!(again, Sweep::default(), "nothing is left to expire");
    assert_eq!(app.row(order).await.version, 2);
}

#[tokio::test]
async fn paid_shipped_and_cancelled_orders_are_never_expired() {
    let app = TestApp::spawn().await;
    let paid = app.paid_order(1000).await;
    let shipped = app.paid_order(1000).await;
    app.shipped(shipped, "DHL", "T-1").await;
    let cancelled = app.placed_order(1000).await;
    app.cancelled(cancelled, "changed my mind").await;
    let before = app.snapshot().await;

    let sweep = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!(sweep, Sweep::default());
    assert_eq!(app.snapshot().await, before);
    assert_eq!(app.row(paid).await.status, "PAID");
    assert_eq!(app.row(shipped).await.status, "SHIPPED");
    let view = app.order(cancelled).await;
    assert_eq!(view.body["cancellation_reason"], "changed my mind");
    assert_eq!(view.body["version"], 2);
}

#[tokio::test]
async fn a_partially_paid_order_expires_cancelled_with_its_payment_due_for_refund() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    app.paid_with(order, "tr-1", 300).await;

    let sweep = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!(sweep.expired, 1);
    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("CANCELLED", 3));
    assert_eq!(
        app.checked_money(order).await,
        MoneyRow {
            paid_minor: 300,
            refunded_minor: 0,
            refund_required: true
        }
    );
    assert_eq!(app.order(order).await.body["refund_due_minor"], 300);
    assert_expired_by_the_timer(&app, order).await;
    assert_eq!(
        app.outbox_types(order).await,
        vec!["order.created", "order.cancelled", "order.refund_required"]
    );
}

#[tokio::test]
async fn only_orders_older_than_the_timeout_expire() {
    let app = TestApp::spawn().await;
    let old = app.placed_order(1000).await;
    // Wait until the first order is observably more than a second old, then place another.
    eventually(
        "the first order to be over a second old",
        Duration::from_secs(10),
        || async {
            let (aged,): (bool,) = sqlx::query_as(
                "SELECT now() - created_at > interval '1 second' FROM orders WHERE id = $1",
            )
            .bind(old)
            .fetch_one(&app.pool)
            .await
            .expect("read the order's age");
            aged.then_some(())
        },
    )
    .await;
    let young = app.placed_order(1000).await;

    let sweep = app_of(&app)
        .expire_overdue(Duration::from_secs(1), LIMIT, &TraceContext::start())
        .await
        .expect("sweep");
    let none = app_of(&app)
        .expire_overdue(Duration::from_secs(3600), LIMIT, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!(sweep.expired, 1);
    assert_eq!(none, Sweep::default());
    assert_eq!(app.row(old).await.status, "CANCELLED");
    let row = app.row(young).await;
    assert_eq!((row.status.as_str(), row.version), ("PENDING_PAYMENT", 1));
    assert_eq!(app.outbox_types(young).await, vec!["order.created"]);
}

#[tokio::test]
async fn a_sweep_cancels_at_most_its_limit_oldest_first_and_reports_that_more_may_wait() {
    let app = TestApp::spawn().await;
    let mut placed = vec![];
    for _ in 0..3 {
        placed.push(app.placed_order(1000).await);
    }

    let first = app_of(&app)
        .expire_overdue(Duration::ZERO, 2, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!((first.expired, first.full), (2, true));
    assert_eq!(app.row(placed[0]).await.status, "CANCELLED");
    assert_eq!(app.row(placed[1]).await.status, "CANCELLED");
    assert_eq!(app.row(placed[2]).await.status, "PENDING_PAYMENT");

    let second = app_of(&app)
        .expire_overdue(Duration::ZERO, 2, &TraceContext::start())
        .await
        .expect("sweep");

    assert_eq!((second.expired, second.full), (1, false));
    assert_eq!(app.row(placed[2]).await.status, "CANCELLED");
}

#[tokio::test]
async fn expiry_racing_the_completing_payment_either_cancels_or_pays_never_both() {
    let app = TestApp::spawn().await;
    let sweeper = app_of(&app);
    let trace = TraceContext::start();
    let mut outcomes = (0, 0);

    // One order at a time, so that each sweep races exactly one payment.
    for round in 0..40 {
        let order = app.placed_order(1000).await;
        let key = unique_key();
        let body = payment_body(&format!("tr-{round}"), 1000, "EUR");
        let (sweep, pay) = futures::join!(
            sweeper.expire_overdue(Duration::ZERO, LIMIT, &trace),
            app.pay(order, &key, &body),
        );
        let sweep = sweep.expect("sweep");

        assert_eq!(pay.status, StatusCode::CREATED, "{}", pay.text);
        assert!(!pay.is_replay());
        let row = app.row(order).await;
        let money = app.checked_money(order).await;
        assert_eq!(money.paid_minor, 1000, "the payment is always recorded");
        assert_eq!(app.transfers(order).await.len(), 1);
        app.checked_history(order).await;
        let events = app.outbox_types(order).await;
        if sweep.expired == 1 {
            assert_eq!(row.status, "CANCELLED", "round {round}");
            assert!(money.refund_required, "round {round}");
            assert_eq!(pay.body["order"]["status"], "CANCELLED");
            assert_eq!(pay.body["order"]["refund_due_minor"], 1000);
            assert_eq!(row.version, 3);
            assert_eq!(
                events,
                vec!["order.created", "order.cancelled", "order.refund_required"]
            );
            assert_expired_by_the_timer(&app, order).await;
            outcomes.0 += 1;
        } else {
            assert_eq!(sweep.expired, 0, "round {round}");
            assert_eq!(row.status, "PAID", "round {round}");
            assert!(!money.refund_required, "round {round}");
            assert_eq!(row.version, 2);
            assert_eq!(events, vec!["order.created", "order.paid"]);
            outcomes.1 += 1;
        }
    }
    assert_eq!(outcomes.0 + outcomes.1, 40, "{outcomes:?}");
}

/// The service as its binary builds it, on `database_url`, without AMQP, expiring orders left
/// unpaid for a second with a sweep every second.
async fn expiring_service(database_url: &str, shutdown: &CancellationToken) -> Service {
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        config: Config,
    }

    let config = Cli::parse_from([
        "order-service",
        "--http-addr",
        "127.0.0.1:0",
        "--database-url",
        database_url,
        "--db-max-connections",
        "4",
        "--amqp-enabled",
        "false",
        "--order-payment-timeout-secs",
        "1",
        "--order-expiry-sweep-secs",
        "1",
    ])
    .config;
    Service::build(config, shutdown)
        .await
        .expect("the service starts")
}

#[tokio::test]
async fn a_service_started_with_a_payment_timeout_expires_unpaid_orders_on_its_own() {
    let app = TestApp::spawn().await;
    let shutdown = CancellationToken::new();
    let service = expiring_service(&app.db.url, &shutdown).await;
    let running = tokio::spawn(service.run_until(shutdown.clone()));
    let unpaid = app.placed_order(1000).await;
    let paid = app.paid_order(1000).await;

    eventually(
        "the service to expire the unpaid order",
        Duration::from_secs(30),
        || async { (app.row(unpaid).await.status == "CANCELLED").then_some(()) },
    )
    .await;
    shutdown.cancel();
    running
        .await
        .expect("the service task")
        .expect("the service stops cleanly");

    assert_expired_by_the_timer(&app, unpaid).await;
    assert_eq!(
        app.outbox_types(unpaid).await,
        vec!["order.created", "order.cancelled"]
    );
    let row = app.row(paid).await;
    assert_eq!((row.status.as_str(), row.version), ("PAID", 2));
}

#[tokio::test]
async fn the_expiry_sweep_resumes_by_itself_after_postgres_was_unreachable() {
    let app = TestApp::spawn().await;
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5432))).await;
    let url = app.db.url_through(proxy.port);
    let shutdown = CancellationToken::new();
    let service = expiring_service(&url, &shutdown).await;
    proxy.sever();
    let running = tokio::spawn(service.run_until(shutdown.clone()));
    // Placed through the test's own router, not the service whose database is cut: overdue
    // while its sweeps fail.
    let unpaid = app.placed_order(1000).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(app.row(unpaid).await.status, "PENDING_PAYMENT");

    proxy.restore();
    eventually(
        "the sweep to expire the unpaid order once Postgres is back",
        Duration::from_secs(30),
        || async { (app.row(unpaid).await.status == "CANCELLED").then_some(()) },
    )
    .await;
    shutdown.cancel();
    running
        .await
        .expect("the service task")
        .expect("the service stops cleanly");
    assert_expired_by_the_timer(&app, unpaid).await;
}

#[tokio::test]
async fn with_no_payment_timeout_the_sweeper_returns_at_once_and_expires_nothing() {
    let app = TestApp::spawn().await;
    let order = app.placed_order(1000).await;
    let config = order_service::config::ExpiryConfig {
        payment_timeout_secs: 0,
        sweep_secs: 1,
        batch: 10,
    };

    // A bound on waiting, not a performance check: a sweeper that is on would loop until
    // cancelled, and this token is never cancelled.
    tokio::time::timeout(
        Duration::from_secs(30),
        order_service::expiry_sweep::run(app_of(&app), config, CancellationToken::new()),
    )
    .await
    .expect("the sweeper returns at once when expiry is off");

    let row = app.row(order).await;
    assert_eq!((row.status.as_str(), row.version), ("PENDING_PAYMENT", 1));
    assert_eq!(app.count("order_transitions").await, 1);
}

#[tokio::test]
async fn an_order_held_by_a_concurrent_transaction_waits_for_the_next_sweep_and_the_rest_expire() {
    let app = TestApp::spawn_with_lock_timeout(Duration::from_millis(200)).await;
    let held = app.placed_order(100).await;
    let free = app.placed_order(100).await;
    let mut lock = sqlx::PgConnection::connect(&app.db.url)
        .await
        .expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut lock)
        .await
        .expect("begin");
    sqlx::query("SELECT 1 FROM orders WHERE id = $1 FOR UPDATE")
        .bind(held)
        .execute(&mut lock)
        .await
        .expect("hold the row");

    let sweep = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("a busy order does not fail the sweep");

    assert_eq!((sweep.expired, sweep.busy), (1, 1), "{sweep:?}");
    assert_eq!(app.row(held).await.status, "PENDING_PAYMENT");
    assert_expired_by_the_timer(&app, free).await;

    sqlx::query("ROLLBACK")
        .execute(&mut lock)
        .await
        .expect("release");
    let next = app_of(&app)
        .expire_overdue(Duration::ZERO, LIMIT, &TraceContext::start())
        .await
        .expect("sweep");
    assert_eq!((next.expired, next.busy), (1, 0), "{next:?}");
    assert_expired_by_the_timer(&app, held).await;
}
