//! Measures the outbox relay's commit → delivery latency, at idle (one transition at a time)
//! and under a burst of 1 000 transitions, against the local Postgres and RabbitMQ:
//!
//! ```sh
//! cargo run --release -p order-service-bench --example relay_latency
//! ```
//!
//! The relay runs in-process (the same code `order-service serve` runs, lingering as
//! `OUTBOX_LINGER_MS` says if set, else by the default); each transition is
//! committed through the application layer and timed from the moment its command returned
//! (committed) to the moment a subscriber bound to the outbound exchange received the event.

mod common;

use common::{linger_ms, place};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use lapin::options::{BasicConsumeOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::FieldTable;
use order_service::amqp::{Relay, connect, topology};
use order_service::app::App;
use order_service::config::{self, DEFAULT_LOCK_TIMEOUT, RelayConfig};
use order_service::health::Readiness;
use order_service_testkit::TestDb;
use tokio_util::sync::CancellationToken;

const AMQP_URL: &str = order_service::config::DEFAULT_AMQP_URL;

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // A migrated database of the run's own, dropped with `db` however the run ends.
    let db = TestDb::create_with_pool(DEFAULT_LOCK_TIMEOUT, 32).await;
    let pool = db.pool.clone();
    let app = App::new(pool.clone());
    let exchange = format!("relay-latency-{}", uuid::Uuid::new_v4().simple());

    let connection = connect(AMQP_URL, "relay latency").await?;
    let channel = connection.create_channel().await?;
    topology::declare_topic(&channel, &exchange).await?;
    let queue = channel
        .queue_declare(
            "".into(),
            QueueDeclareOptions {
                exclusive: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    channel
        .queue_bind(
            queue.name().clone(),
            exchange.as_str().into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;
    let arrivals: Arrivals = Arc::default();
    let mut consumer = channel
        .basic_consume(
            queue.name().clone(),
            "latency".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..Default::default()
            },
            FieldTable::default(),
        )
        .await?;
    let seen = arrivals.clone();
    tokio::spawn(async move {
        while let Some(Ok(delivery)) = consumer.next().await {
            let body: serde_json::Value =
                serde_json::from_slice(&delivery.data).unwrap_or_default();
            let order = body["data"]["id"].as_str().unwrap_or_default().to_owned();
            seen.lock().expect("lock").insert(order, Instant::now());
        }
    });

    let config = RelayConfig {
        linger_ms: linger_ms(),
        // Nothing to prune in a short run.
        prune_interval_secs: 3_600,
        ..RelayConfig::default()
    };
    let shutdown = CancellationToken::new();
    let relay = Relay::new(
        pool.clone(),
        &config::AmqpEndpoints::parse(AMQP_URL)?,
        exchange.clone(),
        config,
        Readiness::default().register("relay"),
    )
    .woken_by(app.relay_wakeup());
    let relay_task = tokio::spawn(relay.run(shutdown.clone()));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Idle: one order at a time, 20 ms apart.
    let mut idle = vec![];
    for _ in 0..200 {
        let (order, committed) = place_timed(&app).await?;
        idle.push(wait_for(&arrivals, &order, committed).await);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Burst: 1 000 orders placed by 16 concurrent writers, as fast as they go.
    let started = Instant::now();
    let mut writers = vec![];
    for _ in 0..16 {
        let app = app.clone();
        writers.push(tokio::spawn(async move {
            let mut placed = vec![];
            for _ in 0..63 {
                placed.push(place_timed(&app).await.expect("place"));
            }
            placed
        }));
    }
    let mut committed = vec![];
    for writer in writers {
        committed.extend(writer.await?);
    }
    let written = started.elapsed();
    let mut burst = vec![];
    for (order, at) in &committed {
        burst.push(wait_for(&arrivals, order, *at).await);
    }
    let drained = started.elapsed();

    println!("relay latency, commit -> subscriber (ms)");
    report("idle  (200 one by one)", &mut idle);
    report(
        &format!("burst ({} from 16 writers)", committed.len()),
        &mut burst,
    );
    println!(
        "burst written in {:.0} ms ({:.0}/s), all delivered {:.0} ms after the first commit",
        written.as_secs_f64() * 1e3,
        committed.len() as f64 / written.as_secs_f64(),
        drained.as_secs_f64() * 1e3
    );

    shutdown.cancel();
    relay_task.await?;
    channel
        .exchange_delete(exchange.as_str().into(), Default::default())
        .await?;
    pool.close().await;
    drop(db);
    Ok(())
}

/// Places an order; returns its id and the moment its command returned (committed).
async fn place_timed(app: &App) -> anyhow::Result<(String, Instant)> {
    let id = place(app, "latency").await?;
    Ok((id.to_string(), Instant::now()))
}

async fn wait_for(arrivals: &Arrivals, order: &str, committed: Instant) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(at) = arrivals.lock().expect("lock").get(order) {
            return at.saturating_duration_since(committed).as_secs_f64() * 1e3;
        }
        assert!(Instant::now() < deadline, "event of {order} never arrived");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

fn report(label: &str, samples: &mut [f64]) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{label:<28} median {:>7.2}  p99 {:>7.2}  max {:>7.2}",
        at(0.5),
        at(0.99),
        samples[samples.len() - 1]
    );
}
