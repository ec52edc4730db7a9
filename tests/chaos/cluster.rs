//! The system under test: a Postgres of the checker's own (a private server, or a
//! pg_auto_failover formation of three nodes; either way restarting or failing it over disturbs
//! no other test), 2–3 real `order-service` processes sharing one inbox, each reaching RabbitMQ
//! through a proxy the checker can cut, and a subscriber capturing every outbound event.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use lapin::Channel;
use lapin::options::{BasicConsumeOptions, ConfirmSelectOptions};
use lapin::types::FieldTable;
use order_service::amqp::{Topology, connect};
use order_service::config::AmqpConfig;
use tokio::process::{Child, Command};

use order_service_testkit::formation::Formation;
use order_service_testkit::private_postgres::PrivatePostgres;
use order_service_testkit::proxy::Proxy;
use order_service_testkit::{
    AMQP_URL, amqp_config, declare_subscriber, eventually, free_port, http, log_tail, service,
};

/// A message the relay published, as the subscriber received it.
#[derive(Debug, Clone)]
pub struct Captured {
    pub message_id: String,
    pub routing_key: String,
    pub body: serde_json::Value,
}

/// Which Postgres a run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// One private server, which the `postgres` fault crash-restarts.
    Server,
    /// A pg_auto_failover formation, whose primary the `failover`, `switchover` and `freeze`
    /// faults take away; the instances are given the formation's host list.
    Formation,
}

/// The Postgres the instances write to.
pub enum Database {
    /// Shared with the fault injector, which crash-restarts it without holding the cluster.
    Server(Arc<PrivatePostgres>),
    Formation(Formation),
}

impl Database {
    async fn start(setup: Setup) -> Self {
        match setup {
            Setup::Server => Self::Server(Arc::new(PrivatePostgres::start_with(&[(
                "max_connections",
                "200",
            )]))),
            Setup::Formation => Self::Formation(Formation::start().await),
        }
    }

    /// The URL the instances and the checker are given: the formation's host list with
    /// `target_session_attrs=read-write` (its URI names no user: the operator adds theirs).
    fn url(&self) -> String {
        match self {
            Self::Server(pg) => format!("postgres://postgres@127.0.0.1:{}/order_service", pg.port),
            Self::Formation(formation) => {
                formation
                    .url()
                    .replacen("postgres://", "postgres://postgres@", 1)
            }
        }
    }

    fn dir(&self) -> &std::path::Path {
        match self {
            Self::Server(pg) => pg.dir(),
            Self::Formation(formation) => formation.dir(),
        }
    }
}

pub struct Cluster {
    pub database: Database,
    /// What the instances are given: [`Database::url`], read once.
    pub database_url: String,
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
    pub async fn start(setup: Setup, instances: usize) -> Self {
        let database = Database::start(setup).await;
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
            database_url: database.url(),
            database,
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
            let log = cluster.database.dir().join(format!("instance-{slot}.log"));
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
        let database_url = self.database_url.clone();
        let timeout = self.payment_timeout_secs.unwrap_or(0).to_string();
        let instance = &mut self.instances[slot];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&instance.log)
            .expect("instance log");
        let amqp_url = format!("amqp://guest:guest@127.0.0.1:{}/%2f", instance.amqp.port);
        let command = service::command(
            &self.service_bin,
            &database_url,
            &amqp_url,
            instance.http_port,
            &self.config,
        );
        let child = Command::from(command)
            .env("LOG_FORMAT", "json")
            // The pool's choice of host is logged: a failing schedule's kept logs show which
            // node each instance wrote to, and when.
            .env("RUST_LOG", "warn,order_service::store::failover=info")
            .env("DB_MAX_CONNECTIONS", "8")
            .env("SHUTDOWN_GRACE_SECS", "5")
            .env("OUTBOX_POLL_MS", "250")
            .env("ORDER_PAYMENT_TIMEOUT_SECS", timeout)
            .env("ORDER_EXPIRY_SWEEP_SECS", "1")
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
        // A formation is torn down when it is dropped, with the cluster.
        if let Database::Server(pg) = &self.database {
            pg.kill();
        }
        let _ = &self._connection;
    }

    /// Copies every log of the run (the instances', and for a formation the monitor's, each
    /// keeper's and each Postgres's) out of the database's directory, which is removed with
    /// the database, to a directory under the build's temporary directory that is kept: a
    /// failing schedule's evidence. Returns that directory.
    pub fn keep_logs(&self) -> PathBuf {
        let kept = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("chaos-logs-{}", uuid::Uuid::new_v4().simple()));
        copy_logs(self.database.dir(), self.database.dir(), &kept);
        kept
    }

    /// The tail of every instance's log, for a failure report.
    pub fn logs(&self) -> String {
        self.instances
            .iter()
            .enumerate()
            .map(|(slot, i)| format!("--- instance {slot} ---\n{}", log_tail(&i.log, 15)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Copies the logs under `dir` (files named `*.log`, and every file of a `log` directory, as
/// Postgres's collector writes them) to the same relative paths under `kept`. Data files are
/// left: they are large and not evidence a reader can use.
fn copy_logs(root: &std::path::Path, dir: &std::path::Path, kept: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let in_log_dir = dir.file_name().is_some_and(|name| name == "log");
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_logs(root, &path, kept);
        } else if in_log_dir || path.extension().is_some_and(|ext| ext == "log") {
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let target = kept.join(relative);
            if let Some(parent) = target.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            let _ = std::fs::copy(&path, target);
        }
    }
}

async fn subscribe(
    connection: &lapin::Connection,
    topology: &Topology,
    captured: Arc<Mutex<Vec<Captured>>>,
) {
    let channel = connection.create_channel().await.expect("channel");
    let queue = format!("{}.capture", topology.inbox);
    declare_subscriber(&channel, &queue, &topology.outbound_exchange).await;
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

#[cfg(test)]
mod tests {
    use super::copy_logs;

    #[test]
    fn kept_logs_are_the_log_files_and_log_directories_not_the_data() {
        let root = std::env::temp_dir().join(format!("chaos-copy-{}", uuid::Uuid::new_v4()));
        let kept = root.with_extension("kept");
        let write = |path: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
            std::fs::write(path, "line").expect("a file");
        };
        write("instance-0.log");
        write("node0.log");
        write("node0/log/postgresql-2026-11-27_225307.log");
        write("node0/log/postgresql.csv");
        write("node0/base/1/1259");
        write("node0/postgresql.conf");

        copy_logs(&root, &root, &kept);

        let exists = |path: &str| kept.join(path).is_file();
        assert!(exists("instance-0.log") && exists("node0.log"));
        assert!(exists("node0/log/postgresql-2026-11-27_225307.log"));
        assert!(
            exists("node0/log/postgresql.csv"),
            "every file of a log directory"
        );
        assert!(!exists("node0/base/1/1259") && !exists("node0/postgresql.conf"));
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&kept);
    }
}
