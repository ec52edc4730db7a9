//! Counts the SQL statements — database round trips — each command costs, through both doors:
//!
//! ```sh
//! cargo run --release -p order-service-bench --example round_trips [-- N CLIENTS]
//! ```
//!
//! It starts a private Postgres (initdb in a temporary directory, its own port on 127.0.0.1,
//! `pg_stat_statements` with `track=all`; run as `postgres` through `runuser` when started as
//! root), runs the service in this process against it (and the local RabbitMQ, under names of
//! its own), sends N requests of each kind from CLIENTS concurrent clients (default 500 and 8),
//! and divides the `calls` Postgres counted by N. Each phase starts and ends with an empty
//! outbox, so the relay's statements for the phase's events are counted in it. Everything it
//! creates is removed at the end.
//!
//! Columns: *request* — statements on the request's own path (the command, its transaction, a
//! replay's reads); *wake-up* — `pg_notify` for the relays of other instances; *relay* — claiming,
//! marking and counting published events (its own transactions included); *total*.
//!
//! Before the one-statement commands (revision `36d304d`, N = 500, 8 clients), per request (the
//! relay's share varies from run to run: it depends on how many events each claim finds):
//!
//! | command | request | wake-up | relay | total |
//! |---|---:|---:|---:|---:|
//! | REST place | 7.00 | 1.00 | 0.19 | 8.19 |
//! | REST payment | 8.00 | 1.00 | 0.08 | 9.08 |
//! | REST payment, replayed (same key) | 5.00 | 0.00 | 0.75 | 5.75 |
//! | REST ship | 7.00 | 1.00 | 1.17 | 9.17 |
//! | REST refund | 8.00 | 1.00 | 0.73 | 9.73 |
//! | REST cancel | 7.00 | 1.00 | 1.41 | 9.42 |
//! | AMQP payment | 7.00 | 1.00 | 0.14 | 8.14 |
//!
//! `--detail` lists every statement with its count per request.
//!
//! Now every command is 2 statements on its path and a replay 1 (bench/README.md "Round trips per
//! command" gives both, side by side).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Parser;
use lapin::BasicProperties;
use lapin::options::BasicPublishOptions;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use order_service::amqp::{Topology, connect};
use order_service::config::{Config, DEFAULT_AMQP_URL};
use order_service::startup::Service;
use order_service_testkit::private_postgres::PrivatePostgres;
use order_service_testkit::{eventually, http};

/// The private server's settings: `pg_stat_statements` loaded, counting every statement
/// (those run inside functions too).
const COUNTING: [(&str, &str); 3] = [
    ("shared_preload_libraries", "pg_stat_statements"),
    ("pg_stat_statements.track", "all"),
    ("pg_stat_statements.max", "1000"),
];
/// How long a phase may take to settle (every message applied, every event published).
const SETTLE: Duration = Duration::from_secs(120);

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    config: Config,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (flags, numbers): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a.starts_with("--"));
    let detail = flags.iter().any(|f| f == "--detail");
    let mut numbers = numbers.iter();
    let n: usize = numbers.next().map_or(Ok(500), |a| a.parse())?;
    let clients: usize = numbers.next().map_or(Ok(8), |a| a.parse())?;
    let postgres = PrivatePostgres::start_with(&COUNTING);
    let outcome = measure(&postgres, Scale { n, detail }, clients).await;
    drop(postgres);
    outcome
}

/// How many requests of each kind, and whether to print each statement's count.
#[derive(Clone, Copy)]
struct Scale {
    n: usize,
    detail: bool,
}

async fn measure(postgres: &PrivatePostgres, scale: Scale, clients: usize) -> anyhow::Result<()> {
    let n = scale.n;
    let url = postgres.url("order_service");
    let mut admin = PgConnection::connect(&postgres.url("postgres")).await?;
    sqlx::query("CREATE DATABASE order_service")
        .execute(&mut admin)
        .await?;
    admin.close().await?;
    let mut db = PgConnection::connect(&url).await?;
    sqlx::query("CREATE EXTENSION pg_stat_statements")
        .execute(&mut db)
        .await?;

    let mut config = Cli::try_parse_from(["round_trips"])?.config;
    let prefix = format!("round-trips-{}", &Uuid::new_v4().simple().to_string()[..8]);
    config.database_url = url;
    config.http_addr = "127.0.0.1:0".parse()?;
    config.amqp = config.amqp.named_under(&prefix);
    let topology = Topology::from_config(&config.amqp);
    let shutdown = CancellationToken::new();
    let service = Service::build(config, &shutdown).await?;
    let port = service.port();
    let running = tokio::spawn(service.run_until(shutdown.clone()));
    let broker = connect(DEFAULT_AMQP_URL, "round trips").await?;
    let channel = broker.create_channel().await?;

    let result = async {
        eventually("the service to be ready", SETTLE, || async {
            matches!(http::get(port, "/health/ready").await, Ok((200, _))).then_some(())
        })
        .await;
        let load = Load { port, n, clients };
        println!("statements per request (N = {n}, {clients} clients)\n");
        println!("| command | request | wake-up | relay | total |");
        println!("|---|---:|---:|---:|---:|");
        let orders = load.orders();
        reset(&mut db).await?;
        load.send(Kind::Place, &orders, "place").await?;
        report(&mut db, "REST place", scale).await?;
        load.send(Kind::Pay, &orders, "pay").await?;
        report(&mut db, "REST payment", scale).await?;
        load.send(Kind::Pay, &orders, "pay").await?;
        report(&mut db, "REST payment, replayed (same key)", scale).await?;
        load.send(Kind::Ship, &orders, "ship").await?;
        report(&mut db, "REST ship", scale).await?;
        load.send(Kind::Refund, &orders, "refund").await?;
        report(&mut db, "REST refund", scale).await?;
        let pending = load.orders();
        load.send(Kind::Place, &pending, "setup").await?;
        reset(&mut db).await?;
        load.send(Kind::Cancel, &pending, "cancel").await?;
        report(&mut db, "REST cancel", scale).await?;
        let unpaid = load.orders();
        load.send(Kind::Place, &unpaid, "setup-amqp").await?;
        reset(&mut db).await?;
        publish_payments(&channel, &topology, &unpaid).await?;
        wait_paid(&mut db, &unpaid).await?;
        report(&mut db, "AMQP payment", scale).await?;
        anyhow::Ok(())
    }
    .await;
    shutdown.cancel();
    running.await??;
    topology.delete(&channel).await?;
    broker.close(200, "bye".into()).await?;
    db.close().await?;
    result
}

/// Starts a phase once the outbox is empty: the counts start from zero.
async fn reset(db: &mut PgConnection) -> anyhow::Result<()> {
    wait_published(db).await?;
    sqlx::query("SELECT pg_stat_statements_reset() /* round_trips */")
        .execute(&mut *db)
        .await?;
    Ok(())
}

/// Prints the row of the phase that just sent its `n` requests, once its events are published,
/// then starts the next phase.
async fn report(db: &mut PgConnection, label: &str, scale: Scale) -> anyhow::Result<()> {
    wait_published(db).await?;
    // Statements that foreign-key checks run inside the server are counted too (`track=all`),
    // but they are no round trips: left out.
    let mut counted: Vec<(String, i64)> = sqlx::query_as(
        "SELECT query, calls FROM pg_stat_statements /* round_trips */ \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND query NOT LIKE '%round_trips%' AND query NOT LIKE '%FOR KEY SHARE OF x'",
    )
    .fetch_all(&mut *db)
    .await?;
    counted.sort_by_key(|(_, calls)| std::cmp::Reverse(*calls));
    let (mut relay, mut wake, mut total, mut relay_tx) = (0, 0, 0, 0);
    for (query, calls) in &counted {
        total += calls;
        if query.contains("pg_notify") {
            wake += calls;
        } else if RELAY.iter().any(|part| query.contains(part)) {
            relay += calls;
            if query.contains("pg_try_advisory_xact_lock") {
                relay_tx += calls;
            }
        }
    }
    // Each claim is a transaction of the relay's own: its BEGIN, and its COMMIT or ROLLBACK.
    relay += 2 * relay_tx;
    let per = |count: i64| count as f64 / scale.n as f64;
    println!(
        "| {label} | {:.2} | {:.2} | {:.2} | {:.2} |",
        per(total - wake - relay),
        per(wake),
        per(relay),
        per(total)
    );
    if scale.detail {
        for (query, calls) in &counted {
            let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
            let shown: String = query.chars().take(100).collect();
            println!("|   {shown} | {:.2} | | | |", per(*calls));
        }
    }
    reset(db).await
}

/// What only the relay's statements contain.
const RELAY: [&str; 7] = [
    "pg_try_advisory_xact_lock",
    "FOR UPDATE SKIP LOCKED",
    "SET published_at",
    "min(created_at)",
    "DELETE FROM outbox",
    "SELECT id, body FROM outbox",
    "LISTEN",
];

async fn wait_published(db: &mut PgConnection) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM outbox WHERE published_at IS NULL /* round_trips */",
        )
        .fetch_one(&mut *db)
        .await?;
        if waiting == 0 {
            return Ok(());
        }
        if started.elapsed() > SETTLE {
            bail!("{waiting} events still unpublished");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_paid(db: &mut PgConnection, orders: &[Uuid]) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        let paid: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM orders WHERE id = ANY($1) AND status = 'PAID' /* round_trips */",
        )
        .bind(orders)
        .fetch_one(&mut *db)
        .await?;
        if paid as usize == orders.len() {
            return Ok(());
        }
        if started.elapsed() > SETTLE {
            bail!("only {paid} of {} orders paid over AMQP", orders.len());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn publish_payments(
    channel: &lapin::Channel,
    topology: &Topology,
    orders: &[Uuid],
) -> anyhow::Result<()> {
    for order in orders {
        let event = json!({
            "event_id": Uuid::new_v4().to_string(),
            "type": "payment.succeeded",
            "occurred_at": "2026-11-21T10:00:00Z",
            "data": {"order_id": order, "transfer_id": format!("amqp-{order}"),
                     "amount_minor": 1000, "currency": "EUR"},
        });
        channel
            .basic_publish(
                topology.inbound_exchange.as_str().into(),
                "payment.succeeded".into(),
                BasicPublishOptions::default(),
                &serde_json::to_vec(&event)?,
                BasicProperties::default().with_content_type("application/json".into()),
            )
            .await?;
    }
    Ok(())
}

/// What a phase sends: one request of a kind per order.
#[derive(Clone, Copy)]
enum Kind {
    Place,
    Pay,
    Ship,
    Refund,
    Cancel,
}

impl Kind {
    /// The request of this kind for `order`: its path, its body and the status it answers.
    fn request(self, order: Uuid) -> (String, Value, u16) {
        let path = |action: &str| format!("/v1/orders/{order}/{action}");
        match self {
            Kind::Place => (
                "/v1/orders".to_owned(),
                json!({"id": order, "customer_id": "c-1", "amount_minor": 1000, "currency": "EUR"}),
                201,
            ),
            Kind::Pay => (
                path("payments"),
                json!({"transfer_id": format!("t-{order}"), "amount_minor": 1000, "currency": "EUR"}),
                201,
            ),
            Kind::Ship => (
                path("ship"),
                json!({"carrier": "DHL", "tracking_number": format!("T-{order}")}),
                200,
            ),
            Kind::Refund => (
                path("refunds"),
                json!({"refund_id": format!("r-{order}"), "amount_minor": 100, "currency": "EUR"}),
                201,
            ),
            Kind::Cancel => (path("cancel"), json!({"reason": "changed my mind"}), 200),
        }
    }
}

/// N requests of one kind from a few concurrent clients.
struct Load {
    port: u16,
    n: usize,
    clients: usize,
}

impl Load {
    fn orders(&self) -> Vec<Uuid> {
        (0..self.n).map(|_| Uuid::new_v4()).collect()
    }

    /// Sends the request of `kind` for each order, under the key `<key>-<order>`, `self.clients`
    /// at a time; each must answer as it should.
    async fn send(&self, kind: Kind, orders: &[Uuid], key: &str) -> anyhow::Result<()> {
        let next = Arc::new(AtomicUsize::new(0));
        let client = |_| {
            let next = next.clone();
            async move {
                while let Some(&order) = orders.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let (path, body, expected) = kind.request(order);
                    let key = format!("{key}-{order}");
                    let (answer, _) = http::post(self.port, &path, &key, &body.to_string()).await?;
                    if answer != expected {
                        bail!("POST {path}: {answer}, expected {expected}");
                    }
                }
                anyhow::Ok(())
            }
        };
        futures::future::try_join_all((0..self.clients).map(client)).await?;
        Ok(())
    }
}
