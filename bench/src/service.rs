//! The real service binary as a child process: its own database and AMQP names through the
//! environment, HTTP on a free port, JSON logs at `warn` into a file of the run. Killed when
//! dropped, so an error anywhere in the bench never leaves it running.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

use order_service::config::AmqpConfig;

use crate::client::Http;
use crate::resources;
use crate::scratch::Db;

/// How to start one service process.
pub struct Spec<'a> {
    pub bin: &'a Path,
    pub db: &'a Db,
    pub amqp: &'a AmqpConfig,
    pub amqp_url: &'a str,
    /// Settings a curve varies; they win over `env`.
    pub overrides: Overrides,
    /// Extra environment (`--service-env`).
    pub env: &'a [(String, String)],
    pub log: PathBuf,
}

/// What a point of a curve sets; `None` leaves the service's default (or `--service-env`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Overrides {
    /// `AMQP_PREFETCH` (default `config::DEFAULT_AMQP_PREFETCH`).
    pub prefetch: Option<u16>,
    /// `AMQP_BATCH_SIZE`: deliveries the consumer applies per transaction.
    pub batch_size: Option<usize>,
}

impl Overrides {
    fn env(self) -> Vec<(&'static str, String)> {
        let prefetch = self.prefetch.map(|p| ("AMQP_PREFETCH", p.to_string()));
        let batch = self.batch_size.map(|b| ("AMQP_BATCH_SIZE", b.to_string()));
        prefetch.into_iter().chain(batch).collect()
    }
}

pub struct Service {
    child: Child,
    pub pid: u32,
    port: u16,
    pub http: Http,
    log: PathBuf,
}

impl Service {
    /// Spawns the service and waits until `/health/ready` answers 200 (Postgres migrated,
    /// consumer and relay connected); returns it with the moment it became ready.
    pub async fn start(spec: Spec<'_>) -> anyhow::Result<(Self, Instant)> {
        let port = free_port()?;
        let log = std::fs::File::create(&spec.log)
            .with_context(|| format!("cannot create {}", spec.log.display()))?;
        let amqp = spec.amqp;
        let mut command = Command::new(spec.bin);
        command
            .arg("serve")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("DATABASE_URL", &spec.db.url)
            .env("AMQP_URL", spec.amqp_url)
            .env("HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("LOG_FORMAT", "json")
            .env("RUST_LOG", "warn")
            .env("SHUTDOWN_GRACE_SECS", "10")
            .env("AMQP_INBOUND_EXCHANGE", &amqp.inbound_exchange)
            .env("AMQP_INBOX_QUEUE", &amqp.inbox_queue)
            .env("AMQP_DEAD_LETTER_EXCHANGE", &amqp.dead_letter_exchange)
            .env("AMQP_DEAD_LETTER_QUEUE", &amqp.dead_letter_queue)
            .env("AMQP_OUTBOUND_EXCHANGE", &amqp.outbound_exchange)
            .env("AMQP_EVENT_STREAM", &amqp.event_stream.queue)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        command.envs(spec.env.iter().map(|(k, v)| (k, v)));
        command.envs(spec.overrides.env());
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {}", spec.bin.display()))?;
        let pid = child.id().context("the service exited at once")?;
        let mut service = Self {
            child,
            pid,
            port,
            http: Http::new(port, 4),
            log: spec.log,
        };
        let ready = service.wait_ready().await?;
        Ok((service, ready))
    }

    async fn wait_ready(&mut self) -> anyhow::Result<Instant> {
        let started = Instant::now();
        loop {
            if let Ok(answer) = self.http.get("/health/ready").await
                && answer.status.is_success()
            {
                return Ok(Instant::now());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "the service exited ({status}) before it was ready; its log: {}",
                    self.log.display()
                );
            }
            if started.elapsed() > Duration::from_secs(60) {
                bail!(
                    "the service was not ready within 60 s; its log: {}",
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub fn http_port(&self) -> u16 {
        self.port
    }

    pub fn cpu(&self) -> Duration {
        resources::process_cpu(self.pid).unwrap_or_default()
    }

    pub fn peak_rss_kib(&self) -> u64 {
        resources::peak_rss_kib(self.pid).unwrap_or(0)
    }

    /// Deliveries the consumer has settled so far, by outcome (`applied`, `already_applied`,
    /// `retried`, `dead_lettered`, …), from `amqp_messages_total` on `/metrics`.
    pub async fn settled(&self) -> anyhow::Result<BTreeMap<String, u64>> {
        let answer = self.http.get("/metrics").await?;
        Ok(parse_settled(&String::from_utf8_lossy(&answer.body)))
    }

    /// SIGTERM, then waits for a graceful exit (killed after 15 s).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status();
        match tokio::time::timeout(Duration::from_secs(15), self.child.wait()).await {
            Ok(status) => {
                status?;
            }
            Err(_) => {
                self.child.kill().await?;
                bail!("the service ignored SIGTERM for 15 s and was killed");
            }
        }
        Ok(())
    }
}

fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

/// Sums `amqp_messages_total{type=…,outcome=…} n` lines of a Prometheus text page by outcome.
pub fn parse_settled(page: &str) -> BTreeMap<String, u64> {
    let mut by_outcome = BTreeMap::new();
    for line in page.lines() {
        let Some(labels) = line.strip_prefix("amqp_messages_total{") else {
            continue;
        };
        let Some((labels, value)) = labels.rsplit_once("} ") else {
            continue;
        };
        let outcome = labels
            .split(',')
            .find_map(|l| l.strip_prefix("outcome=\""))
            .map(|o| o.trim_end_matches('"').to_owned())
            .unwrap_or_default();
        let value = value.trim().parse::<f64>().unwrap_or(0.0) as u64;
        *by_outcome.entry(outcome).or_insert(0) += value;
    }
    by_outcome
}

pub fn total(settled: &BTreeMap<String, u64>) -> u64 {
    settled.values().sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_settings_a_point_sets_are_passed_on() {
        assert!(Overrides::default().env().is_empty());
        let env = Overrides {
            prefetch: None,
            batch_size: Some(16),
        }
        .env();
        assert_eq!(env, vec![("AMQP_BATCH_SIZE", "16".to_owned())]);
    }

    #[test]
    fn settled_deliveries_are_summed_by_outcome_across_types() {
        let page = "# TYPE amqp_messages_total counter\n\
            amqp_messages_total{type=\"order.placed\",outcome=\"applied\"} 10\n\
            amqp_messages_total{type=\"payment.succeeded\",outcome=\"applied\"} 7\n\
            amqp_messages_total{type=\"payment.succeeded\",outcome=\"already_applied\"} 3\n\
            amqp_message_duration_seconds_count{type=\"order.placed\"} 10\n";
        let settled = parse_settled(page);
        assert_eq!(settled["applied"], 17);
        assert_eq!(settled["already_applied"], 3);
        assert_eq!(total(&settled), 20);
    }
}
