//! What the event stream costs the relay (docs/messaging.md "Replaying events from the stream"):
//! the same backlog of outbox events drained by the relay to an exchange with one subscriber's
//! queue bound, without and with the stream bound beside it, in interleaved rounds:
//!
//! ```sh
//! cargo run --release -p order-service-bench --example stream_cost
//! ```
//!
//! Each round writes `EVENTS` events through the application layer with no relay running, then
//! starts the relay (the same code `order-service serve` runs) and times it from its start until
//! every row is published (the cursor passed it); meanwhile it counts the CPU of RabbitMQ (`beam.smp`) and of this
//! process (the relay, and the idle writer side). Reported per variant: the median drain rate and
//! the CPU per 1 000 events, and the ratio of with to without, measured in the same run.

mod common;

use common::place;
use std::time::{Duration, Instant};

use lapin::options::{QueueBindOptions, QueueDeclareOptions, QueueDeleteOptions};
use lapin::types::{AMQPValue, FieldTable};
use order_service::amqp::{EventStream, Relay, connect, topology};
use order_service::app::App;
use order_service::config::{self, AmqpConfig, DEFAULT_LOCK_TIMEOUT, RelayConfig};
use order_service::health::Readiness;
use order_service_testkit::TestDb;
use tokio_util::sync::CancellationToken;

const AMQP_URL: &str = config::DEFAULT_AMQP_URL;
const EVENTS: usize = 5_000;
const ROUNDS: usize = 3;

/// One drain: events per second, and CPU milliseconds per 1 000 events of RabbitMQ and of this
/// process.
#[derive(Debug, Clone, Copy)]
struct Drain {
    rate: f64,
    rabbitmq_ms: f64,
    relay_ms: f64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut without = vec![];
    let mut with = vec![];
    for round in 0..ROUNDS {
        // Alternate which goes first, so a drift of the machine weighs on both alike.
        for stream in [round % 2 == 1, round % 2 == 0] {
            let drain = drain(stream).await?;
            println!(
                "round {} {:<15} {:>7.0} events/s  RabbitMQ {:>6.1} ms CPU per 1 000  relay {:>6.1} ms",
                round + 1,
                if stream {
                    "with stream"
                } else {
                    "without stream"
                },
                drain.rate,
                drain.rabbitmq_ms,
                drain.relay_ms
            );
            if stream { &mut with } else { &mut without }.push(drain);
        }
    }
    let (without, with) = (median(&without), median(&with));
    println!("\nmedians of {ROUNDS} interleaved rounds, {EVENTS} events each:");
    println!(
        "without stream {:>7.0} events/s  RabbitMQ {:>6.1} ms per 1 000  relay {:>6.1} ms",
        without.rate, without.rabbitmq_ms, without.relay_ms
    );
    println!(
        "with stream    {:>7.0} events/s  RabbitMQ {:>6.1} ms per 1 000  relay {:>6.1} ms",
        with.rate, with.rabbitmq_ms, with.relay_ms
    );
    println!(
        "with / without: rate {:.2}x, RabbitMQ CPU {:.2}x, relay CPU {:.2}x",
        with.rate / without.rate,
        with.rabbitmq_ms / without.rabbitmq_ms,
        with.relay_ms / without.relay_ms
    );
    Ok(())
}

async fn drain(stream: bool) -> anyhow::Result<Drain> {
    let db = TestDb::create_with_pool(DEFAULT_LOCK_TIMEOUT, 32).await;
    let app = App::new(db.pool.clone());
    let prefix = format!("stream-cost-{}", uuid::Uuid::new_v4().simple());
    let mut amqp = AmqpConfig::default().named_under(&prefix);
    amqp.event_stream.enabled = stream;

    let connection = connect(AMQP_URL, "stream cost").await?;
    let channel = connection.create_channel().await?;
    topology::declare_topic(&channel, &amqp.outbound_exchange).await?;
    // One ordinary subscriber, a quorum queue bound to everything, in both variants.
    let subscriber = format!("{prefix}.subscriber");
    let mut quorum = FieldTable::default();
    quorum.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    let durable = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    channel
        .queue_declare(subscriber.as_str().into(), durable, quorum)
        .await?;
    channel
        .queue_bind(
            subscriber.as_str().into(),
            amqp.outbound_exchange.as_str().into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await?;

    // The backlog, written with no relay running.
    let mut writers = vec![];
    for _ in 0..16 {
        let app = app.clone();
        writers.push(tokio::spawn(async move {
            for _ in 0..EVENTS / 16 {
                place(&app, "stream-cost").await.expect("place an order");
            }
        }));
    }
    for writer in writers {
        writer.await?;
    }
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox")
        .fetch_one(&db.pool)
        .await?;

    let relay_config = RelayConfig {
        poll_ms: 10,
        prune_interval_secs: 3_600,
        ..RelayConfig::default()
    };
    let relay = Relay::new(
        db.pool.clone(),
        &config::AmqpEndpoints::parse(AMQP_URL)?,
        amqp.outbound_exchange.clone(),
        relay_config,
        Readiness::default().register("relay"),
    )
    .keeping_events_in(EventStream::from_config(&amqp));
    let shutdown = CancellationToken::new();
    let (rabbitmq_before, me_before) = (cpu_of("beam.smp"), own_cpu());
    let started = Instant::now();
    let relay_task = tokio::spawn(relay.run(shutdown.clone()));
    loop {
        let waiting: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_waiting")
            .fetch_one(&db.pool)
            .await?;
        if waiting == 0 {
            break;
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "the relay stalled"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    let (rabbitmq, me) = (cpu_of("beam.smp") - rabbitmq_before, own_cpu() - me_before);
    shutdown.cancel();
    relay_task.await?;

    for queue in [subscriber.as_str(), amqp.event_stream.queue.as_str()] {
        channel
            .queue_delete(queue.into(), QueueDeleteOptions::default())
            .await?;
    }
    channel
        .exchange_delete(amqp.outbound_exchange.as_str().into(), Default::default())
        .await?;
    let _ = connection.close(200, "measured".into()).await;
    db.pool.close().await;
    drop(db);

    let per_thousand = |seconds: f64| seconds * 1e3 * 1_000.0 / events as f64;
    Ok(Drain {
        rate: events as f64 / elapsed.as_secs_f64(),
        rabbitmq_ms: per_thousand(rabbitmq),
        relay_ms: per_thousand(me),
    })
}

/// CPU seconds (user + system) used so far by the processes named `name`.
fn cpu_of(name: &str) -> f64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0.0;
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .filter_map(|stat| {
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            (comm == name).then(|| ticks(rest))
        })
        .sum()
}

/// CPU seconds this process used so far.
fn own_cpu() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| ticks(rest)))
        .unwrap_or(0.0)
}

/// utime + stime of a `/proc/<pid>/stat` line after its `comm`, in seconds (100 ticks a second,
/// as Linux reports them on this machine).
fn ticks(after_comm: &str) -> f64 {
    let fields: Vec<&str> = after_comm.split_whitespace().collect();
    let field = |n: usize| {
        fields
            .get(n)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After `comm`, field 0 is the state: utime and stime are fields 11 and 12.
    (field(11) + field(12)) / 100.0
}

fn median(drains: &[Drain]) -> Drain {
    let pick = |f: fn(&Drain) -> f64| {
        let mut values: Vec<f64> = drains.iter().map(f).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    Drain {
        rate: pick(|d| d.rate),
        rabbitmq_ms: pick(|d| d.rabbitmq_ms),
        relay_ms: pick(|d| d.relay_ms),
    }
}
