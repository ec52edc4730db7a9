//! A rolling upgrade from the previous release and a rollback to it, under steady REST and AMQP
//! load (the test kit's `load`), as an orchestrator does it with a load balancer in front:
//! 1. the previous release (N−1, built from the commit `deploy/previous-release` names) serves
//!    alone, on the schema it migrated;
//! 2. release N starts beside it (migrating the schema), joins the rotation; N−1 leaves the
//!    rotation and stops (SIGTERM, graceful);
//! 3. rollback: N−1 starts again, beside N, on the schema N migrated; N leaves and stops.
//!
//! Between 2 and 3, with N alone, the outbox's relays stop marking what they publish and start
//! again before the rollback (docs/operations/upgrading.md "Upgrading: the outbox as a log").
//!
//! Both releases consume one inbox and publish one outbox meanwhile, so each settles retries
//! and publishes events the other wrote; a message parked by N−1 is shown and discarded by N,
//! and one parked by N by N−1 after the rollback.
//!
//! Between steps the load must make progress. At the end: no request failed except with a
//! retryable 503 (no 500, no refusal, no dropped connection), every acknowledged write is kept
//! and nothing doubled (the kit's `load/settled.rs`), every change's event was published exactly
//! once, and every instance in the rotation answered ready each time it was asked.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use order_service::amqp::{Topology, connect};
use tokio::task::JoinSet;
use uuid::Uuid;

use order_service_testkit::load::{self, Load, Rotation, settled};
use order_service_testkit::previous_release;
use order_service_testkit::service::Instance;
use order_service_testkit::{
    AMQP_URL, AmqpNames, TestDb, amqp_config, declare_subscriber, eventually, http,
};

const REST_CLIENTS: usize = 2;
/// Requests acknowledged between two steps of the deploy: proof that the load went on.
const PROGRESS: usize = 100;
/// How long an instance taken out of the rotation still finishes what was sent to it before it is
/// stopped: a load balancer's deregistration delay.
const DRAIN: Duration = Duration::from_millis(500);
/// Give-up bound on anything that should happen (a build of the previous release excluded).
const GIVE_UP: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_upgrade_and_a_rollback_under_load_lose_double_and_refuse_nothing() {
    let current = Path::new(env!("CARGO_BIN_EXE_order-service"));
    // The suite's binaries are in <target>/<profile>/.
    let target = current
        .parent()
        .and_then(Path::parent)
        .expect("the build directory");
    let previous = previous_release::binary(target);
    let recorded = previous_release::recorded();
    // An empty database: the previous release creates its schema as it would in production.
    let db = TestDb::create_empty().await;
    let logs = tempdir(&db.name);

    let config = amqp_config(&format!("upgrade-{}", Uuid::new_v4().simple()));
    let topology = Topology::from_config(&config);
    let capture = format!("{}.capture", topology.inbox);
    let _names = AmqpNames {
        topology: topology.clone(),
        queues: vec![capture.clone()],
    };
    let broker = connect(AMQP_URL, "upgrade test").await.expect("the broker");
    let channel = broker.create_channel().await.expect("a channel");
    topology.declare(&channel).await.expect("the topology");
    declare_subscriber(&channel, &capture, &topology.outbound_exchange).await;

    let start =
        |bin: &Path, slot: usize| Instance::start(bin, slot, &db.url, AMQP_URL, &config, &logs);

    // 1. The previous release alone.
    let mut old = start(&previous, 0);
    ready(&mut old).await;
    assert_eq!(
        release_of(&old).await,
        recorded.version,
        "the previous release runs"
    );
    let rotation = Rotation::of(vec![old.port]);
    let readiness = Readiness::sample(rotation.clone());
    let load = Arc::new(Load::new(&topology.inbound_exchange));
    let mut clients = JoinSet::new();
    for client in 0..REST_CLIENTS {
        let (load, rotation) = (load.clone(), rotation.clone());
        clients.spawn(async move { load::rest_client(&load, rotation, client).await });
    }
    let publisher = {
        let load = load.clone();
        tokio::spawn(async move { load::publish(&load, vec![AMQP_URL.to_owned()]).await })
    };
    progress(&load, "the load under the previous release").await;
    let parked_by_old = park_a_poison_message(&db, &topology.inbound_exchange).await;

    // 2. The upgrade: N beside N−1 (it migrates), then N−1 out.
    let mut new = start(current, 1);
    ready(&mut new).await;
    assert_eq!(release_of(&new).await, order_service::release::VERSION);
    rotation.add(new.port);
    progress(&load, "the load on both releases").await;
    retire(&rotation, &mut old).await;
    progress(&load, "the load on the new release alone").await;
    // The contract step of the outbox as a log, once N−1 no longer runs: relays stop marking
    // what they publish; and before the rollback they start again, marking what the cursor
    // passed meanwhile (docs/operations/upgrading.md "Upgrading: the outbox as a log").
    outbox_command(current, &db, "stop-marking");
    progress(&load, "the load with the relays not marking").await;
    outbox_command(current, &db, "start-marking");
    discard_on(&new, &db, parked_by_old).await;
    let parked_by_new = park_a_poison_message(&db, &topology.inbound_exchange).await;

    // 3. The rollback: N−1 again, on the schema N migrated, then N out.
    let mut back = start(&previous, 2);
    ready(&mut back).await;
    rotation.add(back.port);
    progress(&load, "the load on both releases again").await;
    retire(&rotation, &mut new).await;
    progress(&load, "the load on the previous release after the rollback").await;
    discard_on(&back, &db, parked_by_new).await;

    // The load ends; everything it asked for settles, on the previous release.
    load.stop.cancel();
    while clients.join_next().await.is_some() {}
    load.drain.cancel();
    publisher.await.expect("the publisher");
    let expected = load.expected.lock().expect("expected").clone();
    if let Err(stuck) = settled::wait_for_orders(&db.pool, &expected, settled::QUIESCENCE).await {
        panic!("{stuck}");
    }
    settled::wait_for_outbox(&db.pool).await;
    let stored = settled::database(&db.pool, &expected).await;
    let delivered = settled::published(&db.pool, &channel, &capture).await;
    let not_ready = readiness.stop();

    let tally = &load.tally;
    let count = |counter: &std::sync::atomic::AtomicU64| counter.load(Ordering::Relaxed);
    println!(
        "{} → {} → {}: {} orders, {} transfers, {} events ({} copies delivered); REST requests \
         {}, retried {} (503: {}, no answer: {}, 500: {})",
        recorded.version,
        order_service::release::VERSION,
        recorded.version,
        stored.orders,
        stored.transfers,
        stored.events,
        delivered.copies,
        count(&tally.requests),
        count(&tally.retried_requests),
        count(&tally.unavailable),
        count(&tally.connection_failures),
        count(&tally.server_errors),
    );
    let refusals = load.refusals.lock().expect("refusals").clone();
    assert!(refusals.is_empty(), "refused: {refusals:#?}");
    assert_eq!(count(&tally.server_errors), 0, "requests answered 500");
    assert_eq!(
        count(&tally.connection_failures),
        0,
        "requests to an instance in rotation got no answer"
    );
    assert_eq!(
        delivered.copies, delivered.distinct,
        "an event was published more than once"
    );
    assert!(
        not_ready.is_empty(),
        "not ready while in rotation: {not_ready:?}"
    );
    assert!(
        back.is_running(),
        "the previous release exited after the rollback"
    );
    back.stop().await;
    let _ = broker.close(200, "done".into()).await;
    let _ = std::fs::remove_dir_all(&logs);
}

/// Publishes a message that cannot parse, and waits for an instance running now to park it: a dead
/// letter one release writes, for the other to handle.
/// Runs `order-service outbox <command>` of the release `bin` against the database.
fn outbox_command(bin: &Path, db: &TestDb, command: &str) {
    let output = std::process::Command::new(bin)
        .args(["outbox", command])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &db.url)
        .output()
        .expect("run order-service outbox");
    assert!(
        output.status.success(),
        "order-service outbox {command}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

async fn park_a_poison_message(db: &TestDb, exchange: &str) -> Uuid {
    let event_id = Uuid::new_v4().to_string();
    let poison = load::Message {
        event_id: event_id.clone(),
        routing_key: "payment.succeeded",
        body: b"{\"not\": \"an event\"}".to_vec(),
    };
    let tally = load::Tally::default();
    let mut publisher = load::publisher::Publisher::new(vec![AMQP_URL.to_owned()], exchange);
    publisher.send(&[poison], &tally).await;
    publisher.close().await;
    eventually("the poison message to be parked", GIVE_UP, || async {
        sqlx::query_scalar("SELECT id FROM dead_letters WHERE message_id = $1")
            .bind(&event_id)
            .fetch_optional(&db.pool)
            .await
            .ok()
            .flatten()
    })
    .await
}

/// The dead letter `id`, shown and discarded through `instance`'s API.
async fn discard_on(instance: &Instance, db: &TestDb, id: Uuid) {
    let (status, shown) = http::get(instance.port, &format!("/v1/dead-letters/{id}"))
        .await
        .expect("GET the dead letter");
    assert_eq!(status, 200, "{shown}");
    assert!(shown.contains("\"status\":\"parked\""), "{shown}");
    let path = format!("/v1/dead-letters/{id}/discard");
    let (status, answer) = http::post(instance.port, &path, &format!("discard-{id}"), "{}")
        .await
        .expect("discard the dead letter");
    assert_eq!(status, 200, "{answer}");
    let now: String = sqlx::query_scalar("SELECT status FROM dead_letters WHERE id = $1")
        .bind(id)
        .fetch_one(&db.pool)
        .await
        .expect("the dead letter");
    assert_eq!(now, "discarded");
}

/// Takes `instance` out of the rotation and, after the drain a load balancer allows, stops it.
async fn retire(rotation: &Rotation, instance: &mut Instance) {
    rotation.remove(instance.port);
    tokio::time::sleep(DRAIN).await;
    instance.stop().await;
}

/// Waits for `instance` to be ready; fails at once, with its log, if it exits first (a release
/// refusing the schema does).
async fn ready(instance: &mut Instance) {
    let deadline = Instant::now() + GIVE_UP;
    while instance.is_ready_now().await.is_none() {
        assert!(
            instance.is_running(),
            "the instance exited before it was ready:\n{}",
            instance.log_tail(5)
        );
        assert!(
            Instant::now() < deadline,
            "gave up waiting for an instance to be ready after {GIVE_UP:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The version `/health/live` reports ("" from a release before 0.2.0, which did not).
async fn release_of(instance: &Instance) -> String {
    let (status, body) = http::get(instance.port, "/health/live")
        .await
        .expect("/health/live");
    assert_eq!(status, 200, "{body}");
    let live: serde_json::Value = serde_json::from_str(&body).expect("a JSON body");
    live["version"].as_str().unwrap_or_default().to_owned()
}

/// Waits until [`PROGRESS`] more requests are acknowledged than now.
async fn progress(load: &Load, what: &str) {
    let from = load.tally.acknowledged.lock().expect("acknowledged").len();
    eventually(what, GIVE_UP, || async {
        let now = load.tally.acknowledged.lock().expect("acknowledged").len();
        (now >= from + PROGRESS).then_some(())
    })
    .await;
}

/// Where the instances write their logs: removed when the test passes, kept when it fails.
fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-upgrade"));
    std::fs::create_dir_all(&dir).expect("a directory for the instances' logs");
    dir
}

/// `/health/ready` of every instance in rotation, asked every 100 ms in the background: each
/// answer other than 200, with the port and when.
struct Readiness {
    not_ready: Arc<std::sync::Mutex<Vec<(u16, u16, Instant)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Readiness {
    fn sample(rotation: Arc<Rotation>) -> Self {
        let not_ready = Arc::new(std::sync::Mutex::new(vec![]));
        let record = not_ready.clone();
        let task = tokio::spawn(async move {
            loop {
                for port in rotation.ports() {
                    let asked = Instant::now();
                    let status = http::get(port, "/health/ready")
                        .await
                        .map_or(0, |(status, _)| status);
                    // Taken out of the rotation meanwhile: not a request it was sent.
                    if status != 200 && rotation.ports().contains(&port) {
                        record
                            .lock()
                            .expect("readiness")
                            .push((port, status, asked));
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        Self { not_ready, task }
    }

    /// Stops sampling; every answer other than 200: (port, status, when).
    fn stop(self) -> Vec<(u16, u16, Instant)> {
        self.task.abort();
        self.not_ready.lock().expect("readiness").clone()
    }
}
