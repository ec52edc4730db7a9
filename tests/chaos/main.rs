//! The chaos checker (DESIGN.md §4, invariant 5): generated workloads are delivered through both
//! doors, duplicated, reordered and raced across 2–3 real instances while instances are killed,
//! broker connections dropped and Postgres crash-restarted; once the system is quiet, the
//! database and the captured outbound events must equal each step applied once in causal order.
//!
//! Knobs: `CHAOS_SEED` (first seed; default: fixed seeds 1–8 plus four random ones, printed),
//! `CHAOS_SCHEDULES` (default 12), `CHAOS_ORDERS` per schedule (default 6), `CHAOS_INSTANCES`
//! (default 3), `CHAOS_PARALLEL` schedules at once (default 3), `CHAOS_FAULTS`
//! (`kill,amqp,postgres` by default, `none` to disable), `CHAOS_SERVICE_BIN` (default: the
//! binary cargo built with the test). A long run:
//! `CHAOS_SEED=1000 CHAOS_SCHEDULES=1000 cargo test --release --test chaos -- --nocapture`.

#[path = "../common/mod.rs"]
mod common;

mod check;
mod cluster;
mod driver;
mod http;
mod model;
mod rng;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lapin::options::{BasicAckOptions, BasicGetOptions};
use sqlx::postgres::PgPoolOptions;
use tokio::sync::Mutex as AsyncMutex;

use cluster::Cluster;
use driver::{Door, Driver, Observations};
use rng::Rng;

struct Knobs {
    seeds: Vec<u64>,
    orders: usize,
    instances: usize,
    parallel: usize,
    faults: Vec<&'static str>,
}

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

impl Knobs {
    fn from_env() -> Self {
        let schedules = knob("CHAOS_SCHEDULES", 12);
        let seeds = match std::env::var("CHAOS_SEED")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            Some(first) => (first..first + schedules).collect(),
            None => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(7);
                let mut random = Rng::new(now);
                let fixed = schedules.saturating_sub(4).min(8);
                (1..=fixed)
                    .chain((fixed..schedules).map(|_| random.between(1_000_000, u32::MAX as u64)))
                    .collect()
            }
        };
        let faults = std::env::var("CHAOS_FAULTS").unwrap_or_else(|_| "kill,amqp,postgres".into());
        Self {
            seeds,
            orders: knob("CHAOS_ORDERS", 6) as usize,
            instances: knob("CHAOS_INSTANCES", 3).clamp(1, 8) as usize,
            parallel: knob("CHAOS_PARALLEL", 3).max(1) as usize,
            faults: ["kill", "amqp", "postgres"]
                .into_iter()
                .filter(|f| faults.split(',').any(|g| g.trim() == *f))
                .collect(),
        }
    }
}

/// Injects faults while `active`, at random moments, and always heals them.
async fn inject_faults(
    cluster: Arc<AsyncMutex<Cluster>>,
    active: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    kinds: Vec<&'static str>,
    seed: u64,
    counts: Arc<Mutex<BTreeMap<&'static str, u64>>>,
) {
    let mut rng = Rng::new(seed ^ 0xFA17);
    while !stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(rng.between(200, 900))).await;
        if kinds.is_empty() || !active.load(Ordering::SeqCst) {
            continue;
        }
        let kind = *rng.pick(&kinds);
        let mut cluster = cluster.lock().await;
        let slot = rng.between(0, cluster.instances.len() as u64 - 1) as usize;
        match kind {
            "kill" => {
                cluster.kill(slot).await;
                tokio::time::sleep(Duration::from_millis(rng.between(100, 800))).await;
                cluster.launch(slot).await;
            }
            "amqp" => {
                cluster.instances[slot].amqp.sever();
                tokio::time::sleep(Duration::from_millis(rng.between(200, 1500))).await;
                cluster.instances[slot].amqp.restore();
            }
            _ => {
                let pg = cluster.pg.port;
                let dir = cluster.pg.dir.clone();
                drop(cluster);
                let _ = tokio::task::spawn_blocking(move || {
                    cluster::PrivatePostgres { port: pg, dir }.restart()
                })
                .await;
            }
        }
        *counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(kind)
            .or_default() += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_delivery_pattern_ends_in_the_causal_state() {
    let knobs = Knobs::from_env();
    let started = Instant::now();
    let seeds = match knobs.seeds.as_slice() {
        [first, .., last] if knobs.seeds.len() > 16 => format!("{first}..={last}"),
        seeds => format!("{seeds:?}"),
    };
    println!(
        "chaos: seeds {seeds}, {} orders each, {} instances, faults {:?}",
        knobs.orders, knobs.instances, knobs.faults
    );
    let cluster = Cluster::start(knobs.instances).await;
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(5))
        .connect_lazy(&format!(
            "postgres://postgres@127.0.0.1:{}/order_service",
            cluster.pg.port
        ))
        .expect("pool");
    let ports: Vec<u16> = cluster.instances.iter().map(|i| i.http_port).collect();
    let channel = cluster.channel.clone();
    let exchange = cluster.topology.inbound_exchange.clone();
    let captured = cluster.captured.clone();
    let cluster = Arc::new(AsyncMutex::new(cluster));

    let active = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let fault_counts = Arc::new(Mutex::new(BTreeMap::new()));
    let faults = tokio::spawn(inject_faults(
        cluster.clone(),
        active.clone(),
        stop.clone(),
        knobs.faults.clone(),
        knobs.seeds.first().copied().unwrap_or(0),
        fault_counts.clone(),
    ));

    let mut failures = vec![];
    let (mut rest, mut amqp) = (0, 0);
    for round in knobs.seeds.chunks(knobs.parallel) {
        active.store(true, Ordering::SeqCst);
        let mut schedules = vec![];
        for &seed in round {
            let mut rng = Rng::new(seed);
            let scripts = Arc::new(model::generate(&mut rng, seed, knobs.orders));
            let expected: Vec<_> = scripts.iter().map(model::expect).collect();
            let deliveries = driver::plan(&mut rng, &scripts);
            rest += deliveries.iter().filter(|d| d.door == Door::Rest).count();
            amqp += deliveries.iter().filter(|d| d.door == Door::Amqp).count();
            let driver = Arc::new(Driver {
                seed,
                ports: ports.clone(),
                channel: channel.clone(),
                exchange: exchange.clone(),
                pool: pool.clone(),
                observations: Arc::new(Mutex::new(Observations::default())),
            });
            let run = {
                let (driver, scripts, deliveries) =
                    (driver.clone(), scripts.clone(), deliveries.clone());
                tokio::spawn(async move { driver.deliver(&scripts, deliveries).await })
            };
            schedules.push((seed, scripts, expected, deliveries, driver, run));
        }
        for schedule in &mut schedules {
            let _ = (&mut schedule.5).await;
        }
        // Faults go on while the system settles; they stop (and heal) before the comparison.
        for (_, scripts, expected, ..) in &schedules {
            let captured_now = || captured.lock().map(|c| c.clone()).unwrap_or_default();
            check::quiesce(
                &pool,
                scripts,
                expected,
                captured_now,
                Duration::from_secs(120),
            )
            .await;
        }
        active.store(false, Ordering::SeqCst);
        drop(cluster.lock().await);
        for (seed, scripts, expected, deliveries, driver, _) in schedules {
            let captured_now = || captured.lock().map(|c| c.clone()).unwrap_or_default();
            check::quiesce(
                &pool,
                &scripts,
                &expected,
                captured_now,
                Duration::from_secs(120),
            )
            .await;
            let mut diffs = match check::compare(&pool, &scripts, &expected, &captured_now()).await
            {
                Ok(diffs) => diffs,
                Err(e) => vec![format!("could not read the database: {e}")],
            };
            let observations = driver
                .observations
                .lock()
                .map(|o| o.unexpected.clone())
                .unwrap_or_default();
            diffs.extend(observations);
            if !diffs.is_empty() {
                let schedule: Vec<String> = deliveries.iter().map(|d| format!("  {d}")).collect();
                let scripts: Vec<String> = scripts
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        format!(
                            "  order {i} {} {}: {:?}",
                            s.kind,
                            s.amount,
                            s.steps.iter().map(|s| &s.action).collect::<Vec<_>>()
                        )
                    })
                    .collect();
                failures.push(format!(
                    "seed {seed} (rerun: CHAOS_SEED={seed} CHAOS_SCHEDULES=1 CHAOS_ORDERS={})\nscripts:\n{}\nschedule:\n{}\ndiff:\n  {}",
                    knobs.orders,
                    scripts.join("\n"),
                    schedule.join("\n"),
                    diffs.join("\n  ")
                ));
            }
        }
        println!(
            "chaos: round of {} schedules checked, {} failed so far, {:?}",
            round.len(),
            failures.len(),
            started.elapsed()
        );
    }
    stop.store(true, Ordering::SeqCst);
    let _ = faults.await;

    let mut cluster = Arc::try_unwrap(cluster)
        .ok()
        .expect("faults stopped")
        .into_inner();
    let mut dead_letters = vec![];
    while let Ok(Some(message)) = cluster
        .channel
        .basic_get(
            cluster.topology.dead_letter_queue.as_str().into(),
            BasicGetOptions::default(),
        )
        .await
    {
        let _ = message.delivery.ack(BasicAckOptions::default()).await;
        dead_letters.push(format!(
            "{:?}: {}",
            message.delivery.properties.headers(),
            String::from_utf8_lossy(&message.delivery.data)
        ));
    }
    if !dead_letters.is_empty() {
        failures.push(format!(
            "dead letters (none expected):\n  {}",
            dead_letters.join("\n  ")
        ));
    }
    if !failures.is_empty() {
        println!("{}", cluster.logs());
    }
    println!(
        "chaos summary: {} schedules × {} orders, {} deliveries ({rest} REST, {amqp} AMQP), faults {:?}, {} violations, {:?}",
        knobs.seeds.len(),
        knobs.orders,
        rest + amqp,
        fault_counts.lock().map(|c| c.clone()).unwrap_or_default(),
        failures.len(),
        started.elapsed()
    );
    cluster.stop().await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
