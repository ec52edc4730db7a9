//! What the numbers were measured on: cores, CPU model, memory, load, the Postgres and RabbitMQ
//! versions and the git revision of the code under test.

use std::fs;
use std::process::Command;

use serde::Serialize;
use sqlx::PgPool;

use crate::resources::parse_kib;

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub cpu: String,
    pub memory_mib: u64,
    pub kernel: String,
    pub postgres: String,
    pub postgres_settings: String,
    pub rabbitmq: String,
    pub git_revision: String,
    /// 1-, 5- and 15-minute load averages when the run started and when it ended.
    pub load_at_start: String,
    pub load_at_end: String,
}

impl Machine {
    pub async fn describe(admin: &PgPool) -> Self {
        let postgres = sqlx::query_scalar::<_, String>("SHOW server_version")
            .fetch_one(admin)
            .await
            .unwrap_or_else(|e| format!("unknown ({e})"));
        let settings = sqlx::query_as::<_, (String, String)>(
            "SELECT name, current_setting(name) FROM pg_settings \
             WHERE name IN ('shared_buffers', 'synchronous_commit', 'fsync', 'max_connections') \
             ORDER BY name",
        )
        .fetch_all(admin)
        .await
        .map(|rows| {
            rows.iter()
                .map(|(name, value)| format!("{name}={value}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
        Self {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: cpu_model(),
            memory_mib: fs::read_to_string("/proc/meminfo")
                .ok()
                .and_then(|text| parse_kib(&text, "MemTotal:"))
                .map_or(0, |kib| kib / 1024),
            kernel: command_output("uname", &["-r"]).unwrap_or_default(),
            postgres,
            postgres_settings: settings,
            rabbitmq: rabbitmq_version(),
            git_revision: git_revision(),
            load_at_start: load_average(),
            load_at_end: String::new(),
        }
    }
}

pub fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn cpu_model() -> String {
    fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("model name"))
                .map(|rest| rest.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// lapin does not expose the broker's server properties, so ask the broker's own CLI.
fn rabbitmq_version() -> String {
    command_output("rabbitmqctl", &["-q", "version"])
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "unknown (rabbitmqctl unavailable)".into())
}

/// `git rev-parse --short HEAD`, marked `-dirty` when the work tree has uncommitted changes.
fn git_revision() -> String {
    let Some(revision) = command_output("git", &["rev-parse", "--short", "HEAD"]) else {
        return "unknown".into();
    };
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    if dirty {
        format!("{revision}-dirty")
    } else {
        revision
    }
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
