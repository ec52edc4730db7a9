//! The service under test as operators run it: real `order-service` processes (the binary cargo
//! built with the suite: its path is the suite's `env!("CARGO_BIN_EXE_order-service")`), each
//! given a `DATABASE_URL` and an `AMQP_URL` (either may list several hosts). [`command`] is what
//! every suite's process starts from; an [`Instance`] is stopped with SIGTERM at the end, and
//! killed when dropped, pass or fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use order_service::config::AmqpConfig;

use crate::{free_port, http};

/// `bin serve` with nothing of the caller's environment but `PATH`: the database and broker URLs,
/// HTTP on `http_port` of the loopback, and `config`'s topology names and consumer batching. The
/// caller adds what its test needs (log level, pool size, timers) and spawns it.
pub fn command(
    bin: impl AsRef<Path>,
    database_url: &str,
    amqp_url: &str,
    http_port: u16,
    config: &AmqpConfig,
) -> std::process::Command {
    let mut command = std::process::Command::new(bin.as_ref());
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", database_url)
        .env("AMQP_URL", amqp_url)
        .env("HTTP_ADDR", format!("127.0.0.1:{http_port}"))
        .envs(topology_env(config))
        .envs(batch_env(config));
    command
}

pub struct Instance {
    pub port: u16,
    log: PathBuf,
    child: Option<Child>,
}

impl Instance {
    /// Starts instance `slot` of the binary `bin` with its log in `dir`, the topology's names
    /// from `config`.
    pub fn start(
        bin: impl AsRef<Path>,
        slot: usize,
        database_url: &str,
        amqp_url: &str,
        config: &AmqpConfig,
        dir: &Path,
    ) -> Self {
        Self::start_with(bin, slot, database_url, amqp_url, config, dir, &[])
    }

    /// [`Instance::start`] with more settings (`env`), which win over the kit's.
    pub fn start_with(
        bin: impl AsRef<Path>,
        slot: usize,
        database_url: &str,
        amqp_url: &str,
        config: &AmqpConfig,
        dir: &Path,
        env: &[(&str, &str)],
    ) -> Self {
        let port = free_port();
        let log = dir.join(format!("instance-{slot}.log"));
        let file = std::fs::File::create(&log).expect("the instance's log");
        let child = Command::from(command(bin, database_url, amqp_url, port, config))
            .env("LOG_FORMAT", "json")
            // Warnings, and the line naming the node each session connected to.
            .env("RUST_LOG", "warn,order_service::amqp::connection=info")
            .env("DB_MAX_CONNECTIONS", "8")
            .env("OUTBOX_POLL_MS", "250")
            .env("SHUTDOWN_GRACE_SECS", "5")
            .envs(env.iter().copied())
            .stdout(Stdio::from(file.try_clone().expect("log")))
            .stderr(Stdio::from(file))
            .kill_on_drop(true)
            .spawn()
            .expect("start order-service");
        Self {
            port,
            log,
            child: Some(child),
        }
    }

    /// Whether the process still runs (it never exited or restarted).
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// The last `lines` lines of the instance's log: what to show when it failed.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// `Some` if `/health/ready` answers 200 now: a condition for `eventually`.
    pub async fn is_ready_now(&self) -> Option<()> {
        matches!(http::get(self.port, "/health/ready").await, Ok((200, _))).then_some(())
    }

    /// The sum of every series of a counter in `/metrics` whose line starts with `series`
    /// (a name, or a name with the start of its labels).
    pub async fn counter(&self, series: &str) -> f64 {
        let Ok((200, text)) = http::get(self.port, "/metrics").await else {
            return f64::NAN;
        };
        text.lines()
            .filter(|line| line.starts_with(series))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// SIGTERM, then waits for the graceful stop (bounded by its grace period); kills after.
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            if let Some(pid) = child.id() {
                let _ = std::process::Command::new("kill")
                    .args(["-TERM", &pid.to_string()])
                    .status();
            }
            if tokio::time::timeout(Duration::from_secs(15), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }

    /// The lines of the log that name a node: which node each session connected to.
    pub fn connections(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|line| line["message"] == "connected to the broker")
            .map(|line| {
                format!(
                    "{} -> {}",
                    line["connection"].as_str().unwrap_or("?"),
                    line["node"].as_str().unwrap_or("?")
                )
            })
            .collect()
    }
}

/// The environment that gives a service process `config`'s exchange and queue names
/// (docs/operations/configuration.md), for the suites that start the binary.
fn topology_env(config: &AmqpConfig) -> [(&'static str, String); 6] {
    [
        ("AMQP_INBOUND_EXCHANGE", config.inbound_exchange.clone()),
        ("AMQP_INBOX_QUEUE", config.inbox_queue.clone()),
        (
            "AMQP_DEAD_LETTER_EXCHANGE",
            config.dead_letter_exchange.clone(),
        ),
        ("AMQP_DEAD_LETTER_QUEUE", config.dead_letter_queue.clone()),
        ("AMQP_OUTBOUND_EXCHANGE", config.outbound_exchange.clone()),
        ("AMQP_EVENT_STREAM", config.event_stream.queue.clone()),
    ]
}

/// The environment that gives a service process `config`'s consumer batching.
fn batch_env(config: &AmqpConfig) -> [(&'static str, String); 3] {
    [
        ("AMQP_BATCH_SIZE", config.batch_size.to_string()),
        ("AMQP_BATCH_WAIT_MS", config.batch_wait_ms.to_string()),
        (
            "AMQP_BATCH_LOCK_WAIT_MS",
            config.batch_lock_wait_ms.to_string(),
        ),
    ]
}
