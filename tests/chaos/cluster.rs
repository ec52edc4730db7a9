//! The system under test: a private Postgres cluster (so restarting it disturbs no other test),
//! 2–3 real `order-service` processes sharing one inbox, each reaching RabbitMQ through a proxy
//! the checker can cut, and a subscriber capturing every outbound event.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use lapin::Channel;
use lapin::options::{
    BasicConsumeOptions, ConfirmSelectOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::FieldTable;
use order_service::amqp::{Topology, connect};
use order_service::config::AmqpConfig;
use tokio::process::{Child, Command};

use crate::common::http;
use crate::common::proxy::Proxy;
use crate::common::{AMQP_URL, amqp_config, batch_env, eventually, free_port, topology_env};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A message the relay published, as the subscriber received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub message_id: String,
    pub routing_key: String,
    pub body: serde_json::Value,
}

pub struct Cluster {
    pub pg: PrivatePostgres,
    pub config: AmqpConfig,
    pub topology: Topology,
    pub channel: Channel,
    pub captured: Arc<Mutex<Vec<Captured>>>,
    pub instances: Vec<Instance>,
    /// `ORDER_PAYMENT_TIMEOUT_SECS` the instances run with; `None`: orders never expire.
    payment_timeout_secs: Option<u64>,
    service_bin: PathBuf,
    _connection: lapin::Connection,
}

pub struct Instance {
    pub http_port: u16,
    pub amqp: Proxy,
    child: Option<Child>,
    log: PathBuf,
}

impl Cluster {
    pub async fn start(instances: usize) -> Self {
        let pg = PrivatePostgres::start().await;
        let prefix = format!("chaos-{}", uuid::Uuid::new_v4().simple());
        let config = amqp_config(&prefix);
        let topology = Topology::from_config(&config);
        let connection = connect(AMQP_URL, "chaos checker").await.expect("broker");
        let channel = connection.create_channel().await.expect("channel");
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirms");
        topology.declare(&channel).await.expect("topology");
        let captured = Arc::new(Mutex::new(vec![]));
        subscribe(&connection, &topology, captured.clone()).await;

        let service_bin = std::env::var_os("CHAOS_SERVICE_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_order-service")));
        let mut cluster = Self {
            pg,
            config,
            topology,
            channel,
            captured,
            instances: vec![],
            payment_timeout_secs: None,
            service_bin,
            _connection: connection,
        };
        for slot in 0..instances {
            let amqp = Proxy::start(SocketAddr::from(([127, 0, 0, 1], 5672))).await;
            let http_port = free_port();
            let log = cluster.pg.dir.join(format!("instance-{slot}.log"));
            cluster.instances.push(Instance {
                http_port,
                amqp,
                child: None,
                log,
            });
            cluster.launch(slot).await;
        }
        for slot in 0..instances {
            cluster.wait_ready(slot).await;
        }
        cluster
    }

    fn database_url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/order_service",
            self.pg.port
        )
    }

    /// Restarts every instance with a payment timeout of `secs` and a sweep every second, and
    /// waits until all are ready.
    pub async fn expire_unpaid_after(&mut self, secs: u64) {
        self.payment_timeout_secs = Some(secs);
        for slot in 0..self.instances.len() {
            self.kill(slot).await;
            self.launch(slot).await;
        }
        for slot in 0..self.instances.len() {
            self.wait_ready(slot).await;
        }
    }

    /// Starts (or restarts) the process of `slot` with the same configuration.
    pub async fn launch(&mut self, slot: usize) {
        let database_url = self.database_url();
        let timeout = self.payment_timeout_secs.unwrap_or(0).to_string();
        let instance = &mut self.instances[slot];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&instance.log)
            .expect("instance log");
        let child = Command::new(&self.service_bin)
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", database_url)
            .env(
                "AMQP_URL",
                format!("amqp://guest:guest@127.0.0.1:{}/%2f", instance.amqp.port),
            )
            .env("HTTP_ADDR", format!("127.0.0.1:{}", instance.http_port))
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "warn")
            .env("DB_MAX_CONNECTIONS", "8")
            .env("SHUTDOWN_GRACE_SECS", "5")
            .env("OUTBOX_POLL_MS", "250")
            .env("ORDER_PAYMENT_TIMEOUT_SECS", timeout)
            .env("ORDER_EXPIRY_SWEEP_SECS", "1")
            .envs(topology_env(&self.config))
            .envs(batch_env(&self.config))
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("start order-service");
        instance.child = Some(child);
    }

    pub async fn wait_ready(&self, slot: usize) {
        let port = self.instances[slot].http_port;
        eventually(
            &format!("instance {slot} to be ready"),
            Duration::from_secs(60),
            || async move {
                matches!(http::get(port, "/health/ready").await, Ok((200, _))).then_some(())
            },
        )
        .await;
    }

    /// `kill -9`: no shutdown, no acks, transactions cut wherever they were.
    pub async fn kill(&mut self, slot: usize) {
        if let Some(mut child) = self.instances[slot].child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    pub async fn stop(&mut self) {
        for slot in 0..self.instances.len() {
            if let Some(child) = self.instances[slot].child.as_mut() {
                if let Some(pid) = child.id() {
                    let _ = std::process::Command::new("kill")
                        .arg("-TERM")
                        .arg(pid.to_string())
                        .status();
                }
                let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
            }
            self.kill(slot).await;
        }
        let _ = self
            .channel
            .queue_delete(
                format!("{}.capture", self.topology.inbox).as_str().into(),
                Default::default(),
            )
            .await;
        let _ = self.topology.delete(&self.channel).await;
        self.pg.stop();
        let _ = &self._connection;
    }

    /// The tail of every instance's log, for a failure report.
    pub fn logs(&self) -> String {
        self.instances
            .iter()
            .enumerate()
            .map(|(slot, i)| {
                let text = std::fs::read_to_string(&i.log).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(15).collect();
                format!(
                    "--- instance {slot} ---\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn subscribe(
    connection: &lapin::Connection,
    topology: &Topology,
    captured: Arc<Mutex<Vec<Captured>>>,
) {
    let channel = connection.create_channel().await.expect("channel");
    let queue = format!("{}.capture", topology.inbox);
    channel
        .queue_declare(
            queue.as_str().into(),
            QueueDeclareOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("capture queue");
    channel
        .queue_bind(
            queue.as_str().into(),
            topology.outbound_exchange.as_str().into(),
            "#".into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("bind capture queue");
    let mut consumer = channel
        .basic_consume(
            queue.as_str().into(),
            "chaos-capture".into(),
            BasicConsumeOptions {
                no_ack: true,
                ..BasicConsumeOptions::default()
            },
            FieldTable::default(),
        )
        .await
        .expect("consume capture queue");
    tokio::spawn(async move {
        let _channel = channel;
        while let Some(Ok(delivery)) = consumer.next().await {
            let body = serde_json::from_slice(&delivery.data).unwrap_or(serde_json::Value::Null);
            let message_id = delivery
                .properties
                .message_id()
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            if let Ok(mut captured) = captured.lock() {
                captured.push(Captured {
                    message_id,
                    routing_key: delivery.routing_key.to_string(),
                    body,
                });
            }
        }
    });
}

/// A Postgres cluster of the checker's own, in a temporary directory, run as `postgres`.
pub struct PrivatePostgres {
    pub port: u16,
    pub dir: PathBuf,
}

impl PrivatePostgres {
    async fn start() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "order-service-chaos-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("chaos dir");
        run("chown", &["postgres", dir.to_str().expect("utf-8 path")]);
        let data = dir.join("data");
        as_postgres(
            &format!("{PG_BIN}/initdb"),
            &[
                "-D",
                data.to_str().expect("path"),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
        );
        let pg = Self {
            port: free_port(),
            dir,
        };
        pg.pg_ctl(&["start"]);
        pg
    }

    fn options(&self) -> String {
        format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
            self.port,
            self.dir.display()
        )
    }

    fn pg_ctl(&self, action: &[&str]) {
        let data = self.dir.join("data");
        let log = self.dir.join("postgres.log");
        let options = self.options();
        let mut args = vec![
            "-D",
            data.to_str().expect("path"),
            "-l",
            log.to_str().expect("path"),
            "-w",
            "-o",
            &options,
        ];
        args.extend_from_slice(action);
        as_postgres(&format!("{PG_BIN}/pg_ctl"), &args);
    }

    /// A crash restart: every connection and in-flight transaction is cut.
    pub fn restart(&self) {
        self.pg_ctl(&["-m", "immediate", "restart"]);
    }

    fn stop(&self) {
        self.pg_ctl(&["-m", "immediate", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Cluster {
    /// A failed run must not leave a Postgres cluster behind (instances die with their handles).
    fn drop(&mut self) {
        let data = self.pg.dir.join("data");
        if data.exists() {
            let _ = std::process::Command::new("runuser")
                .args(["-u", "postgres", "--", &format!("{PG_BIN}/pg_ctl"), "-D"])
                .arg(&data)
                .args(["-m", "immediate", "stop"])
                .output();
            let _ = std::fs::remove_dir_all(&self.pg.dir);
        }
    }
}

fn as_postgres(program: &str, args: &[&str]) {
    let mut all = vec!["-u", "postgres", "--", program];
    all.extend_from_slice(args);
    run("runuser", &all);
}

fn run(program: &str, args: &[&str]) {
    let output = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
