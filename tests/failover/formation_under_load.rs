//! The service on a real pg_auto_failover formation (the test kit's `formation`), given the URL the
//! formation hands out, under steady REST and AMQP load (the test kit's `load`, shared with the
//! cluster suite), through three faults of the primary in turn:
//! (a) SIGKILL of its whole node (keeper and Postgres), as a machine that dies;
//! (b) that node restarted, rejoined as a standby, then a planned switchover;
//! (c) the primary's node frozen for 30 s (SIGSTOP: its sockets open and silent, as a paused VM
//!     or a partition), then let go.
//! After each, writes must resume within the bound docs/postgres-failover.md states; after
//! all, every acknowledged write is on the last primary, nothing is doubled, no request got a
//! 500, and the service process never restarted. Prints the windows it measured (from the
//! fault to the first acknowledged write of a request sent after it); run with `--nocapture`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;
use tokio::task::JoinSet;
use uuid::Uuid;

use order_service::amqp::{Topology, connect};

use order_service_testkit::load::{self, Load, settled};
use order_service_testkit::service::Instance;
use order_service_testkit::{
    AMQP_URL, AmqpNames, amqp_config, declare_subscriber, eventually, http,
};

use order_service_testkit::formation::Formation;

const REST_CLIENTS: usize = 2;
/// Orders paid before the first fault.
const WARM: i64 = 20;
/// How long the primary stays frozen.
const FREEZE: Duration = Duration::from_secs(30);
/// The bounds of the issue, on this machine: from the fault to the first acknowledged write.
const AFTER_KILL: Duration = Duration::from_secs(20);
const AFTER_SWITCHOVER: Duration = Duration::from_secs(10);
const AFTER_FREEZE: Duration = Duration::from_secs(30);
/// Give-up bound on anything that should happen (a test that fails says what it waited for).
const GIVE_UP: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_follows_the_primary_of_a_formation_through_a_kill_a_switchover_and_a_freeze_under_load()
 {
    let started = Instant::now();
    let mut formation = Formation::start().await;
    let formation_up = started.elapsed();
    // The URI names no user (libpq would take the OS user's name); the operator adds theirs.
    let url = formation
        .url()
        .replacen("postgres://", "postgres://postgres@", 1);
    assert!(url.contains(','), "a multi-host URL: {url}");

    let config = amqp_config(&format!("failover-{}", Uuid::new_v4().simple()));
    let topology = Topology::from_config(&config);
    let capture = format!("{}.capture", topology.inbox);
    let _names = AmqpNames {
        topology: topology.clone(),
        queues: vec![capture.clone()],
    };
    let broker = connect(AMQP_URL, "failover test")
        .await
        .expect("the broker");
    let channel = broker.create_channel().await.expect("a channel");
    topology.declare(&channel).await.expect("the topology");
    declare_subscriber(&channel, &capture, &topology.outbound_exchange).await;

    let mut service = Instance::start(
        env!("CARGO_BIN_EXE_order-service"),
        0,
        &url,
        AMQP_URL,
        &config,
        formation.dir(),
    );
    eventually("the service to be ready", GIVE_UP, || {
        service.is_ready_now()
    })
    .await;

    let load = Arc::new(Load::new(&topology.inbound_exchange));
    let mut clients = JoinSet::new();
    for client in 0..REST_CLIENTS {
        let (load, port) = (load.clone(), service.port);
        clients.spawn(async move {
            load::rest_client(&load, load::Rotation::of(vec![port]), client).await
        });
    }
    let publisher = {
        let load = load.clone();
        tokio::spawn(async move { load::publish(&load, vec![AMQP_URL.to_owned()]).await })
    };
    let readiness = Readiness::sample(service.port);
    let primary = formation.primary().await;
    let pool = on_node(&formation, primary);
    eventually("the load to be under way", GIVE_UP, || async {
        let paid: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status = 'PAID'")
            .fetch_one(&pool)
            .await
            .ok()?;
        (paid >= WARM).then_some(())
    })
    .await;
    pool.close().await;

    // (a) The primary's machine dies. Each fault's instant is taken once its signal has been
    // sent: finding the node's processes and running `kill` takes a few milliseconds, in which
    // a request sent "after the fault" could still be answered by the old primary.
    formation.kill(primary);
    let killed = Instant::now();
    let after_kill = resumed(&load, killed).await;
    let probe_after_kill = probe(&load, &formation, killed).await;
    let not_ready_after_kill = readiness.not_ready_between(killed, killed + after_kill);

    // (b) It comes back as a standby; then a planned switchover.
    formation.restart(primary);
    let primary = formation.await_healthy().await;
    let switched = Instant::now();
    formation.switchover().await;
    let primary = eventually("the switchover to be done", GIVE_UP, || async {
        let now = formation.primary().await;
        (now != primary).then_some(now)
    })
    .await;
    resumed(&load, Instant::now()).await;
    let after_switchover = load.tally.longest_silence(switched, Instant::now());

    // (c) The primary freezes for 30 s.
    formation.await_healthy().await;
    formation.freeze(primary);
    let frozen = Instant::now();
    let after_freeze = resumed(&load, frozen).await;
    let probe_after_freeze = probe(&load, &formation, frozen).await;
    tokio::time::sleep_until((frozen + FREEZE).into()).await;
    formation.thaw(primary);
    let not_ready_in_freeze = readiness.not_ready_between(frozen, frozen + after_freeze);
    let primary = formation.await_healthy().await;

    // The load ends; everything it asked for settles.
    load.stop.cancel();
    while clients.join_next().await.is_some() {}
    load.drain.cancel();
    publisher.await.expect("the publisher");
    let refusals = load.refusals.lock().expect("refusals").clone();
    assert!(refusals.is_empty(), "refused: {refusals:#?}");
    let pool = on_node(&formation, primary);
    let expected = load.expected.lock().expect("expected").clone();
    if let Err(stuck) = settled::wait_for_orders(&pool, &expected, settled::QUIESCENCE).await {
        panic!("{stuck}");
    }
    settled::wait_for_outbox(&pool).await;
    let stored = settled::database(&pool, &expected).await;
    let delivered = settled::published(&pool, &channel, &capture).await;

    println!(
        "formation up in {formation_up:.1?}; {} orders, {} transfers, {} events ({} copies \
         delivered); REST requests {}, retried {}\n\
         writes resumed after (a) kill {after_kill:.1?} (AMQP probe applied {probe_after_kill:.1?}), \
         (b) switchover {after_switchover:.1?}, (c) freeze {after_freeze:.1?} (AMQP probe \
         applied {probe_after_freeze:.1?})",
        stored.orders,
        stored.transfers,
        stored.events,
        delivered.copies,
        load.tally
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        load.tally
            .retried_requests
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    let server_errors = load
        .tally
        .server_errors
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(server_errors, 0, "requests answered 500");
    assert!(service.is_running(), "the service process exited");
    assert!(after_kill < AFTER_KILL, "after the kill: {after_kill:?}");
    assert!(
        after_switchover < AFTER_SWITCHOVER,
        "after the switchover: {after_switchover:?}"
    );
    assert!(
        after_freeze < AFTER_FREEZE,
        "after the freeze: {after_freeze:?}"
    );
    assert!(
        not_ready_after_kill && not_ready_in_freeze,
        "readiness said 503 while no write could succeed: after the kill {not_ready_after_kill}, \
         in the freeze {not_ready_in_freeze}"
    );
    eventually("the service to be ready at the end", GIVE_UP, || {
        service.is_ready_now()
    })
    .await;
    service.stop().await;
    pool.close().await;
    let _ = broker.close(200, "done".into()).await;
}

/// How long after `fault` the first request sent after it was acknowledged (waits for one).
async fn resumed(load: &Load, fault: Instant) -> Duration {
    eventually("writes to resume", GIVE_UP, || async {
        load.tally.unavailable_after(fault)
    })
    .await
}

/// How long after `fault` a new order published over AMQP now is on the primary.
async fn probe(load: &Load, formation: &Formation, fault: Instant) -> Duration {
    let order = load.probe(AMQP_URL).await;
    eventually("the AMQP probe to be applied", GIVE_UP, || async {
        let pool = on_node(formation, formation.primary().await);
        let found: Option<i64> = sqlx::query_scalar("SELECT version FROM orders WHERE id = $1")
            .bind(order)
            .fetch_optional(&pool)
            .await
            .ok()?;
        pool.close().await;
        found.map(|_| fault.elapsed())
    })
    .await
}

/// A pool on one node of the formation, for the test's own reads.
fn on_node(formation: &Formation, node: usize) -> PgPool {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/order_service?sslmode=disable",
        formation.ports[node]
    );
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect_lazy(&url)
        .expect("a pool")
}

/// `/health/ready` asked every 100 ms in the background: when it said what.
struct Readiness {
    seen: Arc<std::sync::Mutex<Vec<(Instant, u16)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Readiness {
    fn sample(port: u16) -> Self {
        let seen = Arc::new(std::sync::Mutex::new(vec![]));
        let record = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let asked = Instant::now();
                let status = http::get(port, "/health/ready")
                    .await
                    .map_or(0, |(status, _)| status);
                record.lock().expect("readiness").push((asked, status));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self { seen, task }
    }

    /// Whether readiness answered 503 to a probe sent between `from` and `to`.
    fn not_ready_between(&self, from: Instant, to: Instant) -> bool {
        self.seen
            .lock()
            .expect("readiness")
            .iter()
            .any(|(asked, status)| (from..=to).contains(asked) && *status == 503)
    }
}

impl Drop for Readiness {
    fn drop(&mut self) {
        self.task.abort();
    }
}
