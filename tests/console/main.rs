//! The operator console (docs/operations/console.md) in a real browser: the service's binary with
//! two API clients (`console-admin` with every scope, `console-reader` with `orders:read`), the
//! messages the console must show published to RabbitMQ, and `browser/console.test.mjs` driving
//! Debian's Chromium through Playwright (playwright-core with the system browser; `npm ci` runs
//! here the first time, from the committed lock file). An order with more versions than a page
//! (placed, paid 150 times a cent and cancelled over REST) is the timeline the browser pages
//! through. What the browser checks is listed at the
//! top of that script; here, after it, that the replay it clicked really applied the payment.
//!
//! `CONSOLE_SCREENSHOTS=docs/images cargo test --test console` refreshes the screenshots the
//! docs show.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::json;
use uuid::Uuid;

use order_service::amqp::{Topology, connect};
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use order_service_testkit::load::Message;
use order_service_testkit::load::Tally;
use order_service_testkit::load::publisher::Publisher;
use order_service_testkit::service::Instance;
use order_service_testkit::{AMQP_URL, AmqpNames, TestDb, amqp_config, eventually, http};

/// A poison message's body: markup the console must show as text.
const XSS_MARKUP: &str = "<img src=x onerror=alert(1)>";
const PATIENCE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_dead_letters_and_timelines_and_acts_only_with_the_admin_scope() {
    let browser = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console/browser");
    install_playwright(&browser);
    let db = TestDb::create(DEFAULT_LOCK_TIMEOUT).await;
    let config = amqp_config(&format!("console-{}", Uuid::new_v4().simple()));
    let topology = Topology::from_config(&config);
    let _names = AmqpNames {
        topology: topology.clone(),
        queues: vec![],
    };
    let broker = connect(AMQP_URL, "console test").await.expect("the broker");
    let channel = broker.create_channel().await.expect("a channel");
    topology.declare(&channel).await.expect("the topology");

    let (admin, admin_client) = token("console-admin", "orders:read,orders:write,orders:admin");
    let (reader, reader_client) = token("console-reader", "orders:read");
    let logs = std::env::temp_dir().join(format!("{}-console", db.name));
    std::fs::create_dir_all(&logs).expect("a directory for the log");
    let clients = format!("{admin_client};{reader_client}");
    let mut service = Instance::start_with(
        env!("CARGO_BIN_EXE_order-service"),
        0,
        &db.url,
        AMQP_URL,
        &config,
        &logs,
        // A premature message is dead-lettered at its first delivery.
        &[("AUTH_CLIENTS", &clients), ("AMQP_MAX_ATTEMPTS", "1")],
    );
    eventually("the service to be ready", PATIENCE, || {
        service.is_ready_now()
    })
    .await;

    // What the console must show: a poison message carrying markup, a payment for an order that
    // does not exist yet, and an order paid over AMQP (then shipped over REST).
    let (early, shipped) = (Uuid::new_v4(), Uuid::new_v4());
    let mut publisher = Publisher::new(vec![AMQP_URL.to_owned()], &topology.inbound_exchange);
    let messages = [
        Message {
            event_id: Uuid::new_v4().to_string(),
            routing_key: "order.placed",
            body: XSS_MARKUP.as_bytes().to_vec(),
        },
        event(
            "payment.succeeded",
            json!({"order_id": early, "transfer_id": format!("tr-{early}"), "amount_minor": 2500, "currency": "EUR"}),
        ),
        event(
            "order.placed",
            json!({"order_id": shipped, "customer_id": "console-customer", "amount_minor": 4200, "currency": "EUR"}),
        ),
    ];
    publisher.send(&messages, &Tally::default()).await;
    eventually("the order to be placed", PATIENCE, || async {
        status_of(&db, shipped).await.map(|_| ())
    })
    .await;
    let payment = event(
        "payment.succeeded",
        json!({"order_id": shipped, "transfer_id": format!("tr-{shipped}"), "amount_minor": 4200, "currency": "EUR"}),
    );
    publisher.send(&[payment], &Tally::default()).await;
    publisher.close().await;
    eventually("the order to be paid", PATIENCE, || async {
        (status_of(&db, shipped).await? == "PAID").then_some(())
    })
    .await;
    eventually("two dead letters to be parked", PATIENCE, || async {
        let parked: i64 =
            sqlx::query_scalar("SELECT count(*) FROM dead_letters WHERE status = 'parked'")
                .fetch_one(&db.pool)
                .await
                .ok()?;
        (parked == 2).then_some(())
    })
    .await;
    let bearer = format!("Bearer {admin}");
    let auth = [("Authorization", bearer.as_str())];
    let ship = json!({"carrier": "DHL", "tracking_number": "JD0001"}).to_string();
    let path = format!("/v1/orders/{shipped}/ship");
    let (status, answer) = http::post_with(service.port, &path, "console-ship", &ship, &auth)
        .await
        .expect("ship");
    assert_eq!(status, 200, "{answer}");
    // The order the early payment is for, so that its replay applies.
    let place = json!({"id": early, "customer_id": "console-customer", "amount_minor": 2500, "currency": "EUR"}).to_string();
    let (status, answer) =
        http::post_with(service.port, "/v1/orders", "console-place", &place, &auth)
            .await
            .expect("place");
    assert_eq!(status, 201, "{answer}");

    let busy = busy_order(service.port, &auth).await;

    let screenshots = std::env::var("CONSOLE_SCREENSHOTS").ok().map(|dir| {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        std::fs::create_dir_all(&dir).expect("the screenshots' directory");
        dir
    });
    let output = Command::new("node")
        .arg(browser.join("console.test.mjs"))
        .current_dir(&browser)
        .env("BASE_URL", format!("http://127.0.0.1:{}", service.port))
        .env("ADMIN_TOKEN", &admin)
        .env("READ_TOKEN", &reader)
        .env("ORDER_ID", shipped.to_string())
        .env("BUSY_ORDER_ID", busy.to_string())
        .env("BUSY_PAYMENTS", BUSY_PAYMENTS.to_string())
        .env("CANCEL_REASON", CANCEL_REASON)
        .env("XSS_MARKUP", XSS_MARKUP)
        .envs(
            screenshots
                .iter()
                .map(|dir| ("SCREENSHOTS", dir.as_os_str())),
        )
        .output()
        .expect("run node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the browser test failed:\n{stdout}\n{stderr}"
    );

    // The replay the browser clicked sent the early payment back, and it applied.
    eventually("the replayed payment to apply", PATIENCE, || async {
        (status_of(&db, early).await? == "PAID").then_some(())
    })
    .await;
    assert!(service.is_running(), "the service exited");
    service.stop().await;
    let _ = broker.close(200, "done".into()).await;
    let _ = std::fs::remove_dir_all(&logs);
}

/// Payments of 1 cent on the busy order: more than a page (100) of history and of ledger.
const BUSY_PAYMENTS: u32 = 150;
/// Why the busy order was cancelled, which its card shows.
const CANCEL_REASON: &str = "customer changed their mind";

/// An order with a timeline longer than a page: placed over REST, paid [`BUSY_PAYMENTS`] times 1
/// cent, then cancelled with [`CANCEL_REASON`], so that it holds the payments as its refund due.
/// Versions 1 + [`BUSY_PAYMENTS`] + 1.
async fn busy_order(port: u16, auth: &[(&str, &str)]) -> Uuid {
    let id = Uuid::new_v4();
    let place = json!({"id": id, "customer_id": "console-busy", "amount_minor": 1_000_000, "currency": "EUR"});
    let (status, answer) = http::post_with(
        port,
        "/v1/orders",
        &format!("busy-{id}"),
        &place.to_string(),
        auth,
    )
    .await
    .expect("place");
    assert_eq!(status, 201, "{answer}");
    let path = format!("/v1/orders/{id}/payments");
    for n in 1..=BUSY_PAYMENTS {
        let payment =
            json!({"transfer_id": format!("busy-{id}-{n}"), "amount_minor": 1, "currency": "EUR"});
        let key = format!("busy-{id}-pay-{n}");
        let (status, answer) = http::post_with(port, &path, &key, &payment.to_string(), auth)
            .await
            .expect("pay");
        assert_eq!(status, 201, "{answer}");
    }
    let cancel = json!({ "reason": CANCEL_REASON }).to_string();
    let path = format!("/v1/orders/{id}/cancel");
    let (status, answer) =
        http::post_with(port, &path, &format!("busy-{id}-cancel"), &cancel, auth)
            .await
            .expect("cancel");
    assert_eq!(status, 200, "{answer}");
    id
}

/// An inbound envelope of `type` with `data`.
fn event(routing_key: &'static str, data: serde_json::Value) -> Message {
    let event_id = Uuid::new_v4().to_string();
    let body = json!({"event_id": event_id, "type": routing_key, "occurred_at": chrono::Utc::now().to_rfc3339(), "data": data});
    Message {
        event_id,
        routing_key,
        body: body.to_string().into_bytes(),
    }
}

async fn status_of(db: &TestDb, order: Uuid) -> Option<String> {
    sqlx::query_scalar("SELECT status FROM orders WHERE id = $1")
        .bind(order)
        .fetch_optional(&db.pool)
        .await
        .ok()
        .flatten()
}

/// `order-service token`: the token, and the `AUTH_CLIENTS` entry that admits it.
fn token(client: &str, scopes: &str) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_order-service"))
        .args(["token", "--client", client, "--scopes", scopes])
        .env_clear()
        .output()
        .expect("run order-service token");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).expect("UTF-8");
    let mut lines = stdout.lines().map(str::to_owned);
    let token = lines.next().expect("the token");
    let entry = lines.next().expect("the configuration line");
    (token, entry)
}

/// `npm ci` in `dir` if its `node_modules` is missing (the versions are the lock file's).
fn install_playwright(dir: &PathBuf) {
    if dir.join("node_modules/playwright-core").exists() {
        return;
    }
    let status = Command::new("npm")
        .args([
            "ci",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ])
        .current_dir(dir)
        .status()
        .expect("run npm (Node.js is needed for the console's browser test)");
    assert!(status.success(), "npm ci failed in {}", dir.display());
}
