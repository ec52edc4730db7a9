//! Issue 15: a three-node RabbitMQ cluster survives under load (docs/operations/scaling.md).
//!
//! The test starts a private three-node cluster of its own (`rabbit.rs`, each node in `node.rs`),
//! two real service instances over one database with the three nodes as their `AMQP_URL` list (the
//! test kit's `service::Instance`), and a steady load through both doors (the kit's `load`, its
//! publisher in `load/publisher.rs`). Meanwhile it kills each node in turn with `kill -9`,
//! restarting it and waiting for it to rejoin before the next, so a majority always stands. After
//! quiescence (the kit's `load/settled.rs`): every order in its expected state, one ledger row per
//! transfer, contiguous history, every outbox event published at least once, no queue holding
//! anything but the capture and the event stream, both instances ready, and the event stream
//! replaying every event from `first` in per-order version order (`stream.rs`). It prints its figures (run with `--nocapture`,
//! `figures.rs`): messages in flight at each kill, time to recover, reconnects per instance.
//!
//! Needs root (or the rights to run RabbitMQ's scripts) and RabbitMQ installed under
//! `/usr/lib/rabbitmq`, as on the project's machines; the shared broker is not touched.
//! `cargo test --test cluster -- --nocapture`.

mod figures;
mod node;
mod rabbit;
mod stream;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lapin::options::{ConfirmSelectOptions, QueueBindOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use order_service::amqp::{Topology, connect};
use order_service::config::DEFAULT_LOCK_TIMEOUT;
use tokio::task::JoinSet;
use uuid::Uuid;

use figures::{Kill, Timing};
use order_service_testkit::load::{self, Load, settled as check};
use order_service_testkit::service::Instance;
use order_service_testkit::{TestDb, amqp_config, eventually};
use rabbit::{NODE_START, RabbitCluster};

const INSTANCES: usize = 2;
const REST_CLIENTS: usize = 2;
/// Orders the load has completed before the first node dies.
const WARM: i64 = 100;

/// Bound on any one step that has no bound of its own (an AMQP call, a task to finish): a
/// step that hangs fails the test, naming itself, instead of hanging it.
const STEP: Duration = Duration::from_secs(120);

/// `step`, or a panic naming `what` if it takes longer than [`STEP`].
pub async fn within<T>(what: &str, step: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, step)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {STEP:?}"))
}

/// How long the orders may take to settle after the load before the test shows which are late.
const SLOW: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_three_node_cluster_loses_each_node_in_turn_under_load_and_nothing_is_lost_or_doubled() {
    let started = Instant::now();
    let mut cluster = RabbitCluster::start(3).await;
    let cluster_up = started.elapsed();
    let db = TestDb::create_with_pool(DEFAULT_LOCK_TIMEOUT, 4).await;
    let config = amqp_config(&format!("cluster-{}", Uuid::new_v4().simple()));
    let topology = Topology::from_config(&config);
    let capture = format!("{}.capture", topology.inbox);

    // The topology, and the subscriber's queue (quorum: it outlives any one node), before the
    // load.
    let checker = within(
        "connect",
        connect(&cluster.nodes[0].amqp_url(), "cluster checker"),
    )
    .await
    .expect("the first node");
    let channel = within("channel", checker.create_channel())
        .await
        .expect("channel");
    within(
        "confirms",
        channel.confirm_select(ConfirmSelectOptions::default()),
    )
    .await
    .expect("confirms");
    within("declare", topology.declare(&channel))
        .await
        .expect("the topology");
    let mut quorum = FieldTable::default();
    quorum.insert(
        "x-queue-type".into(),
        AMQPValue::LongString("quorum".into()),
    );
    let durable = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    within(
        "declare",
        channel.queue_declare(capture.as_str().into(), durable, quorum),
    )
    .await
    .expect("the subscriber's queue");
    let bind = channel.queue_bind(
        capture.as_str().into(),
        topology.outbound_exchange.as_str().into(),
        "#".into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    );
    within("bind", bind)
        .await
        .expect("bind the subscriber's queue");
    let _ = within("close", checker.close(200, "declared".into())).await;

    let list = cluster.amqp_list();
    let mut instances: Vec<Instance> = (0..INSTANCES)
        .map(|slot| {
            Instance::start(
                env!("CARGO_BIN_EXE_order-service"),
                slot,
                &db.url,
                &list,
                &config,
                cluster.dir(),
            )
        })
        .collect();
    for instance in &instances {
        eventually("an instance to be ready", NODE_START, || {
            instance.is_ready_now()
        })
        .await;
    }

    let ports: Vec<u16> = instances.iter().map(|i| i.port).collect();
    let load = Arc::new(Load::new(&topology.inbound_exchange));
    let mut clients = JoinSet::new();
    for client in 0..REST_CLIENTS {
        let (load, ports) = (load.clone(), ports.clone());
        clients.spawn(
            async move { load::rest_client(&load, load::Rotation::of(ports), client).await },
        );
    }
    // Published through the first node, moving on only when it is gone.
    let nodes: Vec<String> = cluster.nodes.iter().map(|n| n.amqp_url()).collect();
    let publisher = {
        let (load, nodes) = (load.clone(), nodes.clone());
        tokio::spawn(async move { load::publish(&load, nodes).await })
    };
    eventually("the load to be under way", NODE_START, || async {
        let paid: i64 = sqlx::query_scalar("SELECT count(*) FROM orders WHERE status = 'PAID'")
            .fetch_one(&db.pool)
            .await
            .ok()?;
        (paid >= WARM).then_some(())
    })
    .await;

    let mut kills = vec![];
    for slot in 0..cluster.nodes.len() {
        let survivor = (slot + 1) % cluster.nodes.len();
        cluster.await_not_quorum_critical(slot).await;
        let inbox = cluster
            .queues(survivor)
            .await
            .into_iter()
            .find(|(name, _, _)| *name == topology.inbox)
            .map(|(_, ready, unacked)| (ready, unacked))
            .unwrap_or_default();
        let outbox_backlog: i64 = sqlx::query_scalar("SELECT count(*) FROM outbox_waiting")
            .fetch_one(&db.pool)
            .await
            .expect("outbox backlog");
        let requests_in_flight = load.tally.requests_in_flight.load(Ordering::Relaxed);

        let killed = Instant::now();
        cluster.kill(slot).await;
        let probe = within("the probe", load.probe(&nodes[survivor])).await;
        eventually("the probe to be applied", NODE_START, || async {
            let found: Option<i64> = sqlx::query_scalar("SELECT version FROM orders WHERE id = $1")
                .bind(probe)
                .fetch_optional(&db.pool)
                .await
                .ok()?;
            found.map(|_| ())
        })
        .await;
        let probe_applied = killed.elapsed();
        for instance in &instances {
            eventually("an instance to be ready again", NODE_START, || {
                instance.is_ready_now()
            })
            .await;
        }
        let recovered = killed.elapsed();
        let restarted = Instant::now();
        cluster.restart(slot).await;
        kills.push(Kill {
            node: cluster.nodes[slot].name.clone(),
            inbox,
            outbox_backlog,
            requests_in_flight,
            recovered,
            probe_applied,
            rejoined: restarted.elapsed(),
        });
    }

    load.stop.cancel();
    while let Some(done) = within("the REST clients", clients.join_next()).await {
        done.expect("a REST client");
    }
    load.drain.cancel();
    within("the publisher", publisher)
        .await
        .expect("the publisher");
    let loaded = started.elapsed();

    let refusals = load.refusals.lock().expect("refusals").clone();
    assert!(refusals.is_empty(), "requests refused: {refusals:?}");
    let expected = load.expected.lock().expect("expected").clone();
    let quiet = Instant::now();
    if let Err(stuck) = check::wait_for_orders(&db.pool, &expected, SLOW).await {
        eprintln!(
            "cluster test: still waiting after {SLOW:?}: {stuck}\n{}",
            cluster
                .ctl(
                    0,
                    &[
                        "list_queues",
                        "name",
                        "messages_ready",
                        "messages_unacknowledged",
                        "leader",
                        "online"
                    ]
                )
                .await
        );
        if let Err(stuck) =
            check::wait_for_orders(&db.pool, &expected, check::QUIESCENCE - SLOW).await
        {
            panic!("{stuck}\nqueues: {:?}", cluster.queues(0).await);
        }
    }
    let orders_settled = quiet.elapsed();
    check::wait_for_outbox(&db.pool).await;
    let queues = cluster
        .wait_for_empty_queues(&[&capture, &config.event_stream.queue])
        .await;
    for instance in &instances {
        eventually("an instance to be ready at the end", NODE_START, || {
            instance.is_ready_now()
        })
        .await;
    }
    let stored = check::database(&db.pool, &expected).await;
    let checker = within("connect", connect(&nodes[0], "cluster checker"))
        .await
        .expect("a node");
    let channel = within("channel", checker.create_channel())
        .await
        .expect("channel");
    let delivered = within(
        "taking the published events",
        check::published(&db.pool, &channel, &capture),
    )
    .await;
    // The stream kept every event through the node losses, and serves them from `first`.
    let channel = within("channel", checker.create_channel())
        .await
        .expect("channel");
    let replayed = within(
        "replaying the event stream",
        stream::replay_everything(&db.pool, &channel, &config.event_stream.queue),
    )
    .await;
    let _ = within("close", checker.close(200, "checked".into())).await;

    assert_eq!(load.tally.server_errors.load(Ordering::Relaxed), 0, "500s");

    let timing = Timing {
        cluster_up,
        load_and_kills: loaded - cluster_up,
        orders_settled,
        total: started.elapsed(),
    };
    figures::print(
        &timing,
        &kills,
        &load.tally,
        &stored,
        &delivered,
        &instances,
    )
    .await;
    println!("cluster test: every queue empty: {queues:?}");
    println!(
        "cluster test: the event stream replayed from first: {} deliveries, {} of them events \
         published again",
        replayed.deliveries, replayed.republished
    );

    for instance in &mut instances {
        instance.stop().await;
    }
    drop(cluster);
}
